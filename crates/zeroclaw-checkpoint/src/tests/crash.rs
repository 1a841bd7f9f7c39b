//! Crashes: a restore stopped midway is completed by the next open, never left half; a
//! recording's leftovers are never taken for content.

use super::{Fixture, opts};
use crate::Checkpoints;
use crate::restore::CRASH_AFTER;

#[test]
fn a_restore_interrupted_midway_is_completed_on_the_next_open() {
    let f = Fixture::new();
    for i in 0..6 {
        f.write(&format!("f{i}.txt"), &format!("version one of {i}"));
    }
    let before = f.snapshot();
    f.record("t1");
    for i in 0..6 {
        f.write(&format!("f{i}.txt"), &format!("version two of {i}, longer"));
    }
    f.write("created.txt", "since");

    // The restore "crashes" after two changes: it returns without finishing.
    CRASH_AFTER.with(|c| c.set(Some(2)));
    let crashed = f.store.restore("s1", "t1", &f.root);
    CRASH_AFTER.with(|c| c.set(None));
    assert!(crashed.is_err(), "the simulated crash stops it");
    let half = f.snapshot();
    assert_ne!(half, before, "half done");
    let journal = f
        .base
        .join(crate::session::dir_name("s1"))
        .join("restore.json");
    assert!(
        journal.exists(),
        "the journal stays until the restore is whole"
    );

    // The daemon starts again: opening the store completes the restore.
    drop(Checkpoints::open(&f.base).expect("reopen"));
    assert_eq!(f.snapshot(), before, "the whole restore, not half");
    assert!(!journal.exists());
}

#[test]
fn temporaries_of_an_interrupted_restore_are_removed_even_when_ignored() {
    let f = Fixture::new();
    f.write(".gitignore", ".*\n!.gitignore\n");
    f.write("a.txt", "one");
    f.record("t1");
    f.write("a.txt", "two, longer");
    CRASH_AFTER.with(|c| c.set(Some(0)));
    let crashed = f.store.restore("s1", "t1", &f.root);
    CRASH_AFTER.with(|c| c.set(None));
    assert!(crashed.is_err());
    // Leave a temporary as a crash between its write and its rename would.
    let temp = crate::tree::temp_for(b"a.txt");
    let temp = f.root.join(String::from_utf8(temp).expect("ascii"));
    std::fs::write(&temp, "half written").expect("temp");
    drop(Checkpoints::open(&f.base).expect("reopen"));
    assert!(!temp.exists(), "the temporary is gone");
    assert_eq!(f.read("a.txt").as_deref(), Some("one"));
}

#[test]
fn a_recording_interrupted_before_its_record_leaves_nothing_referenced() {
    let f = Fixture::new();
    f.write("a.txt", "one");
    f.record("t1");
    let objects = f.base.join(crate::session::dir_name("s1")).join("objects");
    // A crash after content was written but before the turn's record: a staged temporary
    // and an object nothing refers to.
    std::fs::write(objects.join(".tmp-1-1"), "staged").expect("temp");
    let orphan = crate::digest::Digest::of(b"orphan");
    std::fs::write(objects.join(orphan.to_hex()), "orphan").expect("orphan");
    let reopened = Checkpoints::open(&f.base).expect("reopen");
    f.write("a.txt", "two!");
    // Loading the session sweeps the temporary; a tight budget removes the orphan first.
    let tight = crate::RecordOptions {
        budget_bytes: 1,
        ..opts()
    };
    reopened
        .record("s1", "t2", &f.root, &tight)
        .expect("record");
    assert!(!objects.join(".tmp-1-1").exists());
    assert!(!objects.join(orphan.to_hex()).exists());
}
