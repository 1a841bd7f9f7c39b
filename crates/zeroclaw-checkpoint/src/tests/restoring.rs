//! Restoring a turn start: modified, deleted and created files; files changed outside the
//! session; planted symlinks never written through; idempotence; ignored files untouched.

use std::os::unix::fs::{PermissionsExt, symlink};

use super::Fixture;

#[test]
fn modified_deleted_and_created_files_are_put_back() {
    let f = Fixture::new();
    f.write("keep.txt", "unchanged");
    f.write("edit.txt", "original");
    f.write("gone/deep.txt", "deleted later");
    std::fs::set_permissions(
        f.root.join("edit.txt"),
        std::fs::Permissions::from_mode(0o640),
    )
    .expect("chmod");
    std::fs::create_dir(f.root.join("empty")).expect("mkdir");
    let before = f.snapshot();
    f.record("t1");

    f.write("edit.txt", "changed by a tool");
    std::fs::set_permissions(
        f.root.join("edit.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    std::fs::remove_dir_all(f.root.join("gone")).expect("rm");
    std::fs::remove_dir(f.root.join("empty")).expect("rmdir");
    f.write("new/created.txt", "created since");
    f.write("created.txt", "created since");
    f.record("t2");

    let back = f.restore("t1");
    assert_eq!(
        back.restored,
        vec![
            "created.txt",
            "edit.txt",
            "gone/deep.txt",
            "new/created.txt"
        ]
    );
    assert!(back.unrestorable.is_empty(), "{back:?}");
    assert_eq!(f.snapshot(), before);
    // The mtime comes back too.
    let recorded = std::fs::metadata(f.root.join("keep.txt")).expect("stat");
    assert!(recorded.modified().is_ok());

    // Rewinding twice to the same turn changes nothing more.
    let again = f.restore("t1");
    assert_eq!(again, crate::Restored::default());
    assert_eq!(f.snapshot(), before);

    // And forward again to t2.
    let forward = f.restore("t2");
    assert!(
        forward.restored.contains(&"edit.txt".to_owned()),
        "{forward:?}"
    );
    assert_eq!(f.read("new/created.txt").as_deref(), Some("created since"));
}

#[test]
fn a_file_changed_outside_the_session_is_restored_and_listed() {
    let f = Fixture::new();
    f.write("notes.md", "v1");
    f.record("t1");
    f.record("t2");
    // Edited by hand after the turn, not by any tool.
    f.write("notes.md", "edited by hand, longer");
    let back = f.restore("t2");
    assert_eq!(back.restored, vec!["notes.md"]);
    assert_eq!(f.read("notes.md").as_deref(), Some("v1"));
}

#[test]
fn a_planted_symlink_is_replaced_never_written_through() {
    let f = Fixture::new();
    let outside = f.outside("victim");
    std::fs::create_dir_all(&outside).expect("outside");
    std::fs::write(outside.join("passwd"), "outside, must not change").expect("write");
    f.write("config.toml", "mine");
    f.write("dir/inner.txt", "inner");
    let before = f.snapshot();
    f.record("t1");

    // The file becomes a link to a file outside the tree...
    std::fs::remove_file(f.root.join("config.toml")).expect("rm");
    symlink(outside.join("passwd"), f.root.join("config.toml")).expect("symlink");
    // ...and the directory a link to a directory outside it.
    std::fs::remove_dir_all(f.root.join("dir")).expect("rm");
    symlink(&outside, f.root.join("dir")).expect("symlink");
    std::fs::write(outside.join("inner.txt"), "outside inner").expect("write");

    let back = f.restore("t1");
    assert!(back.unrestorable.is_empty(), "{back:?}");
    assert_eq!(
        f.snapshot(),
        before,
        "the links are gone, the files are back"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("passwd")).expect("read"),
        "outside, must not change"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("inner.txt")).expect("read"),
        "outside inner"
    );
    let names: Vec<_> = std::fs::read_dir(&outside)
        .expect("list")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "nothing was created outside: {names:?}");
}

#[test]
fn a_symlinked_parent_is_not_followed_when_files_are_removed() {
    let f = Fixture::new();
    let outside = f.outside("elsewhere");
    std::fs::create_dir_all(&outside).expect("outside");
    std::fs::write(outside.join("precious"), "keep me").expect("write");
    f.write("a.txt", "a");
    f.record("t1");
    // A link into another directory, created after the checkpoint.
    symlink(&outside, f.root.join("link")).expect("symlink");
    let back = f.restore("t1");
    assert_eq!(back.restored, vec!["link"]);
    assert!(std::fs::symlink_metadata(f.root.join("link")).is_err());
    assert_eq!(
        std::fs::read_to_string(outside.join("precious")).expect("read"),
        "keep me"
    );
}

#[test]
fn files_ignored_at_the_turn_start_are_never_removed() {
    let f = Fixture::new();
    f.write(".gitignore", "secrets.env\n");
    f.write("secrets.env", "API_KEY=1");
    f.write("main.rs", "fn main() {}");
    f.record("t1");
    // The rule is dropped during the turn: secrets.env now looks like any file.
    f.write(".gitignore", "");
    f.write("new.rs", "created");
    let back = f.restore("t1");
    assert_eq!(back.restored, vec![".gitignore", "new.rs"]);
    assert_eq!(f.read("secrets.env").as_deref(), Some("API_KEY=1"));
    assert_eq!(f.read(".gitignore").as_deref(), Some("secrets.env\n"));
}

#[test]
fn a_directory_in_place_of_a_file_is_replaced() {
    let f = Fixture::new();
    f.write("thing", "a file");
    let before = f.snapshot();
    f.record("t1");
    std::fs::remove_file(f.root.join("thing")).expect("rm");
    f.write("thing/child.txt", "now a directory");
    let back = f.restore("t1");
    assert_eq!(back.restored, vec!["thing", "thing/child.txt"]);
    assert_eq!(f.snapshot(), before);
}

#[test]
fn unknown_turns_and_other_roots_are_refused() {
    let f = Fixture::new();
    f.write("a", "a");
    assert!(matches!(
        f.store.restore("s1", "t1", &f.root),
        Err(crate::Error::UnknownTurn(_))
    ));
    f.record("t1");
    assert!(matches!(
        f.store.restore("s1", "t9", &f.root),
        Err(crate::Error::UnknownTurn(_))
    ));
    let other = f.outside("other");
    std::fs::create_dir_all(&other).expect("other");
    std::fs::write(other.join("x"), "x").expect("write");
    let back = f.store.restore("s1", "t1", &other).expect("restore");
    assert!(back.restored.is_empty());
    assert!(
        back.unrestorable[0].1.contains("another directory"),
        "{back:?}"
    );
    assert_eq!(std::fs::read_to_string(other.join("x")).expect("read"), "x");
}

#[test]
fn non_utf8_names_round_trip() {
    use std::os::unix::ffi::OsStrExt;
    let f = Fixture::new();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9 %20 name");
    std::fs::write(f.root.join(name), "latin-1 name").expect("write");
    f.record("t1");
    std::fs::remove_file(f.root.join(name)).expect("rm");
    let back = f.restore("t1");
    assert_eq!(back.restored.len(), 1);
    assert_eq!(
        std::fs::read_to_string(f.root.join(name)).expect("back"),
        "latin-1 name"
    );
}

#[test]
fn a_planted_hard_link_is_replaced_never_written_through() {
    let f = Fixture::new();
    let outside = f.outside("linked.txt");
    std::fs::write(&outside, "outside, must not change").expect("write");
    f.write("x.txt", "mine");
    f.record("t1");
    std::fs::remove_file(f.root.join("x.txt")).expect("rm");
    std::fs::hard_link(&outside, f.root.join("x.txt")).expect("link");
    let back = f.restore("t1");
    assert_eq!(back.restored, vec!["x.txt"]);
    assert_eq!(f.read("x.txt").as_deref(), Some("mine"));
    assert_eq!(
        std::fs::read_to_string(&outside).expect("read"),
        "outside, must not change"
    );
}
