//! Recording turn starts: incremental hashing, content stored once, `.gitignore`, limits,
//! symlinks recorded and never followed, deadlines.

use std::time::{Duration, Instant};

use super::{Fixture, opts};
use crate::{Limits, RecordOptions};

#[test]
fn only_files_whose_metadata_changed_are_hashed_again() {
    let f = Fixture::new();
    f.write("a.txt", "alpha");
    f.write("src/b.rs", "fn b() {}");
    f.write("src/c.rs", "fn c() {}");
    let first = f.record("t1");
    assert_eq!((first.entries, first.hashed), (4, 3), "{first:?}");
    assert_eq!(first.unrestorable, None);

    let unchanged = f.record("t2");
    assert_eq!(
        (unchanged.entries, unchanged.hashed),
        (4, 0),
        "{unchanged:?}"
    );
    assert_eq!(unchanged.stored_bytes, 0, "nothing new is stored");

    f.write("src/b.rs", "fn b() { changed }");
    let one = f.record("t3");
    assert_eq!(one.hashed, 1, "{one:?}");

    // Same size, new content: the mtime and ctime show it.
    std::thread::sleep(Duration::from_millis(20));
    f.write("a.txt", "ALPHA");
    let same_size = f.record("t4");
    assert_eq!(same_size.hashed, 1, "{same_size:?}");
    assert_eq!(same_size.stored_bytes, 5);
}

#[test]
fn files_changed_near_the_previous_walk_are_hashed_again() {
    let f = Fixture::new();
    f.write("a.txt", "alpha");
    let racy = RecordOptions::with_budget(1 << 30);
    let first = f.store.record("s1", "t1", &f.root, &racy).expect("record");
    assert_eq!(first.hashed, 1);
    // Written just before the first walk: its timestamps cannot prove it unchanged.
    let second = f.store.record("s1", "t2", &f.root, &racy).expect("record");
    assert_eq!(second.hashed, 1, "{second:?}");
}

#[test]
fn each_content_is_stored_once() {
    let f = Fixture::new();
    for i in 0..5 {
        f.write(&format!("copy{i}.txt"), "the same bytes in five files");
    }
    f.write("other.txt", "different");
    f.record("t1");
    let objects = std::fs::read_dir(f.base.join(crate::session::dir_name("s1")).join("objects"))
        .expect("objects")
        .count();
    // Two contents and one manifest.
    assert_eq!(objects, 3);
    let used = f.store.usage("s1").expect("usage");
    f.record("t2");
    f.record("t3");
    assert_eq!(
        f.store.usage("s1").expect("usage"),
        used,
        "an unchanged tree adds nothing (its manifest is the same object)"
    );
}

#[test]
fn gitignore_rules_and_git_directories_are_honoured() {
    let f = Fixture::new();
    f.write(".gitignore", "target/\n*.log\n!keep.log\n");
    f.write("sub/.gitignore", "local.txt\n");
    f.write("target/debug/big", "build output");
    f.write("x.log", "noise");
    f.write("keep.log", "kept");
    f.write("sub/local.txt", "ignored here");
    f.write("sub/tracked.txt", "tracked");
    f.write(".git/HEAD", "ref: refs/heads/main");
    f.write(".hidden", "hidden files are recorded");
    f.record("t1");
    let turns = f.store.turns("s1").expect("turns");
    assert_eq!(turns[0].unrestorable, None);
    // Prove what was recorded by deleting everything and restoring.
    for p in [
        ".gitignore",
        "keep.log",
        "sub/tracked.txt",
        ".hidden",
        "sub/.gitignore",
    ] {
        std::fs::remove_file(f.root.join(p)).expect("rm");
    }
    let done = f.restore("t1");
    let mut restored = done.restored.clone();
    restored.sort();
    assert_eq!(
        restored,
        vec![
            ".gitignore",
            ".hidden",
            "keep.log",
            "sub/.gitignore",
            "sub/tracked.txt"
        ]
    );
    // Ignored files and .git were neither recorded nor touched.
    assert_eq!(f.read("target/debug/big").as_deref(), Some("build output"));
    assert_eq!(f.read("x.log").as_deref(), Some("noise"));
    assert_eq!(f.read("sub/local.txt").as_deref(), Some("ignored here"));
    assert_eq!(f.read(".git/HEAD").as_deref(), Some("ref: refs/heads/main"));
}

#[test]
fn a_file_over_the_limit_is_recorded_without_its_content() {
    let f = Fixture::new();
    f.write("small.txt", "ok");
    f.write("big.bin", "0123456789ABCDEF");
    let small_files = RecordOptions {
        limits: Limits {
            max_file_bytes: 8,
            ..Limits::default()
        },
        ..opts()
    };
    let done = f
        .store
        .record("s1", "t1", &f.root, &small_files)
        .expect("record");
    assert_eq!(done.unrestorable, None, "the turn itself is restorable");
    assert_eq!(done.not_stored.len(), 1);
    assert_eq!(done.not_stored[0].0, "big.bin");
    f.write("big.bin", "changed");
    f.write("small.txt", "changed");
    let back = f.restore("t1");
    assert_eq!(back.restored, vec!["small.txt"]);
    assert_eq!(back.unrestorable.len(), 1);
    assert_eq!(back.unrestorable[0].0, "big.bin");
    assert!(back.unrestorable[0].1.contains("10 MiB"), "{back:?}");
    assert_eq!(f.read("small.txt").as_deref(), Some("ok"));
    assert_eq!(f.read("big.bin").as_deref(), Some("changed"));
}

#[test]
fn a_tree_over_the_limits_is_recorded_unrestorable() {
    let f = Fixture::new();
    for i in 0..6 {
        f.write(&format!("f{i}"), "12345");
    }
    let few_files = RecordOptions {
        limits: Limits {
            max_tree_files: 5,
            ..Limits::default()
        },
        ..opts()
    };
    let done = f
        .store
        .record("s1", "t1", &f.root, &few_files)
        .expect("record");
    let reason = done.unrestorable.expect("unrestorable");
    assert!(reason.contains("over 5 files"), "{reason}");

    let few_bytes = RecordOptions {
        limits: Limits {
            max_tree_bytes: 29,
            ..Limits::default()
        },
        ..opts()
    };
    let done = f
        .store
        .record("s1", "t2", &f.root, &few_bytes)
        .expect("record");
    assert!(done.unrestorable.is_some(), "{done:?}");

    // Exactly at the limits is fine.
    let at_limits = RecordOptions {
        limits: Limits {
            max_tree_files: 6,
            max_tree_bytes: 30,
            ..Limits::default()
        },
        ..opts()
    };
    let done = f
        .store
        .record("s1", "t3", &f.root, &at_limits)
        .expect("record");
    assert_eq!(done.unrestorable, None);

    f.write("f0", "changed");
    let back = f.restore("t1");
    assert!(back.restored.is_empty());
    assert_eq!(back.unrestorable.len(), 1);
    assert!(back.unrestorable[0].1.contains("over 5 files"), "{back:?}");
    assert_eq!(
        f.read("f0").as_deref(),
        Some("changed"),
        "nothing was touched"
    );
}

#[test]
fn symlinks_are_recorded_as_links_and_never_followed() {
    let f = Fixture::new();
    let outside = f.outside("secret");
    std::fs::create_dir_all(&outside).expect("outside");
    std::fs::write(outside.join("key"), "outside content").expect("write");
    std::os::unix::fs::symlink(&outside, f.root.join("dirlink")).expect("symlink");
    std::os::unix::fs::symlink(outside.join("key"), f.root.join("filelink")).expect("symlink");
    let done = f.record("t1");
    // Two links, no content read through them.
    assert_eq!(
        (done.entries, done.hashed, done.stored_bytes),
        (2, 0, 0),
        "{done:?}"
    );
    // Replaced by a regular file, the link comes back as a link.
    std::fs::remove_file(f.root.join("filelink")).expect("rm");
    std::fs::write(f.root.join("filelink"), "now a file").expect("write");
    let back = f.restore("t1");
    assert_eq!(back.restored, vec!["filelink"]);
    let target = std::fs::read_link(f.root.join("filelink")).expect("a link again");
    assert_eq!(target, outside.join("key"));
    assert_eq!(
        std::fs::read_to_string(outside.join("key")).expect("read"),
        "outside content"
    );
}

#[test]
fn a_missed_deadline_records_the_turn_unrestorable() {
    let f = Fixture::new();
    for i in 0..300 {
        f.write(&format!("d/f{i}"), "x");
    }
    let late = RecordOptions {
        deadline: Some(Instant::now()),
        ..opts()
    };
    let done = f.store.record("s1", "t1", &f.root, &late).expect("record");
    let reason = done.unrestorable.expect("unrestorable");
    assert!(reason.contains("in time"), "{reason}");
    let turns = f.store.turns("s1").expect("turns");
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].unrestorable.as_deref(), Some(reason.as_str()));
    assert_eq!(
        f.store.usage("s1").expect("usage"),
        0,
        "nothing left behind"
    );
}

#[test]
fn a_zero_budget_turns_checkpoints_off() {
    let f = Fixture::new();
    f.write("a", "b");
    let off = RecordOptions::with_budget(0);
    let done = f.store.record("s1", "t1", &f.root, &off).expect("record");
    assert!(done.unrestorable.expect("off").contains("off"));
    assert_eq!(f.store.usage("s1").expect("usage"), 0);
}

#[test]
fn deleting_a_session_removes_its_checkpoints() {
    let f = Fixture::new();
    f.write("a", "b");
    f.record("t1");
    f.store
        .record("s2", "t1", &f.root, &opts())
        .expect("another session");
    let dir = f.base.join(crate::session::dir_name("s1"));
    assert!(dir.exists());
    f.store.delete_session("s1").expect("delete");
    assert!(!dir.exists());
    assert!(matches!(
        f.store.restore("s1", "t1", &f.root),
        Err(crate::Error::Deleted)
    ));
    // The other session keeps its own.
    assert!(f.store.restore("s2", "t1", &f.root).is_ok());
}

#[test]
fn a_deleted_sessions_id_is_free_again_once_the_refusal_is_over() {
    let mut f = Fixture::new();
    f.write("a", "old");
    f.record("t1");
    f.store.delete_session("s1").expect("delete");
    assert!(
        matches!(
            f.store.record("s1", "t2", &f.root, &opts()),
            Err(crate::Error::Deleted)
        ),
        "a turn start racing the deletion writes nothing"
    );
    assert!(!f.base.join(crate::session::dir_name("s1")).exists());

    f.store.deleted_refused_for = std::time::Duration::ZERO;
    f.write("a", "new");
    f.record("t1");
    f.write("a", "changed");
    let restored = f.restore("t1");
    assert_eq!(restored.unrestorable, Vec::<(String, String)>::new());
    assert_eq!(
        f.read("a").as_deref(),
        Some("new"),
        "the new session's own checkpoint"
    );
}

/// A client closing the session (unload) while its turns start (record) on other
/// threads: no record is lost or out of order, and every one restores.
#[test]
fn unloading_while_turns_are_recorded_loses_no_record() {
    let f = Fixture::new();
    for i in 0..200 {
        f.write(&format!("d/f{i}.txt"), "same");
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..20 {
                f.write("d/f0.txt", &format!("v{i}"));
                f.record(&format!("t{i}"));
            }
        });
        s.spawn(|| {
            for _ in 0..500 {
                f.store.unload("s1");
                std::thread::yield_now();
            }
        });
    });
    let expected: Vec<String> = (0..20).map(|i| format!("t{i}")).collect();
    assert_eq!(f.turn_ids(), expected);
    for i in [0, 7, 19] {
        f.store.unload("s1");
        assert!(f.restore(&format!("t{i}")).unrestorable.is_empty());
        assert_eq!(f.read("d/f0.txt"), Some(format!("v{i}")));
    }
}

#[test]
fn an_unloaded_session_leaves_memory_and_loads_again_from_disk() {
    let f = Fixture::new();
    f.write("a", "one");
    f.record("t1");
    f.write("a", "two");
    f.record("t2");
    f.store
        .record("s2", "t1", &f.root, &opts())
        .expect("another session");
    assert_eq!(f.store.sessions_held(), 2);

    f.store.unload("s1");
    assert_eq!(f.store.sessions_held(), 1, "only s2 is held");
    f.store.unload("never-seen");
    assert_eq!(f.store.sessions_held(), 1);

    // Loaded again: its records, its sequence and its contents are all there.
    f.write("a", "three");
    f.record("t3");
    assert_eq!(f.turn_ids(), ["t1", "t2", "t3"]);
    f.store.unload("s1");
    f.restore("t1");
    assert_eq!(f.read("a").as_deref(), Some("one"));

    // A deleted session is held while it refuses, until its live session stopped.
    f.store.delete_session("s2").expect("delete");
    assert_eq!(
        f.store.sessions_held(),
        2,
        "s1 (restored) and s2 (refusing)"
    );
    f.store.unload("s1");
    assert_eq!(f.store.sessions_held(), 1);
    f.store.unload("s2");
    assert_eq!(f.store.sessions_held(), 0);
    f.store
        .record("s2", "t1", &f.root, &opts())
        .expect("a new session s2 records");
}

#[test]
fn the_store_inside_the_tree_is_not_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    std::fs::write(root.join("a.txt"), "a").expect("write");
    let store = crate::Checkpoints::open(&root.join(".zeroclaw/checkpoints")).expect("open");
    let first = store.record("s1", "t1", &root, &opts()).expect("record");
    let second = store.record("s1", "t2", &root, &opts()).expect("record");
    // a.txt and .zeroclaw (the store's parent directory), never the store's own files.
    assert_eq!(first.entries, 2, "{first:?}");
    assert_eq!(second.entries, 2, "{second:?}");
    assert_eq!(second.hashed, 0);
}
