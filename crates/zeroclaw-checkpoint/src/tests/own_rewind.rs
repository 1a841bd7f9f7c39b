//! A rewind restores only its own session's changes (SPEC §17.2): what the rewound turns
//! changed and nobody changed since goes back; everything else is a conflict unless
//! forced; a crash midway is completed touching the same paths only.

use super::{Fixture, opts};

impl Fixture {
    fn end(&self, turn: &str) {
        self.store
            .record_end("s1", turn, &self.root, &opts())
            .expect("record end");
    }
}

#[test]
fn only_the_rewound_turns_changes_go_back_and_force_takes_the_rest() {
    let f = Fixture::new();
    f.write("mine.txt", "v0");
    f.write("shared.txt", "v0");
    f.write("theirs.txt", "v0");
    f.write("touched.txt", "v0");
    f.record("t1");
    // The turn: edits mine, creates new, edits touched.
    f.write("mine.txt", "session");
    f.write("new.txt", "session");
    f.write("touched.txt", "session");
    f.end("t1");
    // Someone else, after the turn: edits theirs, creates op.txt, edits touched again.
    f.write("theirs.txt", "operator");
    f.write("op.txt", "operator");
    f.write("touched.txt", "operator");
    let r = f
        .store
        .restore_own("s1", "t1", &f.root, false, &opts())
        .expect("rewind");
    assert_eq!(r.restored, vec!["mine.txt", "new.txt"], "{r:?}");
    let conflicts: Vec<&str> = r.conflicts.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        conflicts,
        vec!["op.txt", "theirs.txt", "touched.txt"],
        "{r:?}"
    );
    assert_eq!(f.read("mine.txt").as_deref(), Some("v0"));
    assert_eq!(f.read("new.txt"), None);
    assert_eq!(f.read("theirs.txt").as_deref(), Some("operator"));
    assert_eq!(f.read("op.txt").as_deref(), Some("operator"));
    assert_eq!(f.read("touched.txt").as_deref(), Some("operator"));
    assert_eq!(f.read("shared.txt").as_deref(), Some("v0"));

    let r = f
        .store
        .restore_own("s1", "t1", &f.root, true, &opts())
        .expect("forced");
    assert_eq!(
        r.restored,
        vec!["op.txt", "theirs.txt", "touched.txt"],
        "{r:?}"
    );
    assert!(r.conflicts.is_empty(), "{r:?}");
    assert_eq!(f.read("theirs.txt").as_deref(), Some("v0"));
    assert_eq!(f.read("op.txt"), None);
}

#[test]
fn a_change_between_rewound_turns_and_a_turn_without_an_end_are_conflicts() {
    let f = Fixture::new();
    f.write("a.txt", "v0");
    f.record("t1");
    f.write("a.txt", "t1");
    f.end("t1");
    f.write("a.txt", "operator"); // between the turns
    f.record("t2");
    f.write("a.txt", "t2");
    f.end("t2");
    let r = f
        .store
        .restore_own("s1", "t1", &f.root, false, &opts())
        .expect("rewind");
    assert_eq!(r.conflicts.len(), 1, "{r:?}");
    assert!(r.conflicts[0].1.contains("between"), "{r:?}");
    assert_eq!(f.read("a.txt").as_deref(), Some("t2"));

    f.record("t3"); // never ended (the daemon stopped)
    f.write("b.txt", "t3");
    let r = f
        .store
        .restore_own("s1", "t3", &f.root, false, &opts())
        .expect("rewind");
    assert!(r.restored.is_empty(), "{r:?}");
    assert!(
        r.conflicts[0].1.contains("no checkpoint of its end"),
        "{r:?}"
    );
    // The listing shows turn starts only.
    assert_eq!(f.turn_ids(), vec!["t1", "t2", "t3"]);
}

#[test]
fn an_interrupted_own_rewind_is_completed_on_the_same_paths_only() {
    let f = Fixture::new();
    f.write("a.txt", "v0");
    f.write("b.txt", "v0");
    f.record("t1");
    f.write("a.txt", "session");
    f.write("c.txt", "session");
    f.end("t1");
    f.write("b.txt", "operator");
    crate::restore::CRASH_AFTER.with(|c| c.set(Some(1)));
    let crashed = f.store.restore_own("s1", "t1", &f.root, false, &opts());
    crate::restore::CRASH_AFTER.with(|c| c.set(None));
    assert!(crashed.is_err(), "the simulated crash stops it");
    drop(crate::Checkpoints::open(&f.base).expect("reopen completes"));
    assert_eq!(f.read("a.txt").as_deref(), Some("v0"));
    assert_eq!(f.read("c.txt"), None);
    assert_eq!(
        f.read("b.txt").as_deref(),
        Some("operator"),
        "not the session's"
    );
}

#[test]
fn what_an_earlier_rewind_put_back_counts_as_the_sessions_own() {
    let f = Fixture::new();
    f.write("a.txt", "v0");
    f.record("t1");
    f.write("a.txt", "t1");
    f.end("t1");
    f.record("t2");
    f.write("a.txt", "t2");
    f.end("t2");
    let r = f
        .store
        .restore_own("s1", "t2", &f.root, false, &opts())
        .expect("rewind to t2");
    assert_eq!(r.restored, vec!["a.txt"], "{r:?}");
    assert_eq!(f.read("a.txt").as_deref(), Some("t1"));
    f.record("t3");
    f.write("b.txt", "t3");
    f.end("t3");
    let r = f
        .store
        .restore_own("s1", "t1", &f.root, false, &opts())
        .expect("rewind to t1");
    assert_eq!(r.restored, vec!["a.txt", "b.txt"], "{r:?}");
    assert!(r.conflicts.is_empty(), "{r:?}");
    assert_eq!(f.read("a.txt").as_deref(), Some("v0"));
    // Rewinds are not listed as turns.
    assert_eq!(f.turn_ids().len(), 3, "{:?}", f.turn_ids());
}
