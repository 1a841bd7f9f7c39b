//! The crate's tests, through [`Checkpoints`] on temporary directories: recording
//! ([`recording`]), restoring ([`restoring`]), crash recovery ([`crash`]) and the budget
//! ([`budget`]). Shared helpers here.

mod budget;
mod crash;
mod own_rewind;
mod recording;
mod restoring;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::{Checkpoints, RecordOptions};

/// A store and a working directory, both temporary.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub base: PathBuf,
    pub root: PathBuf,
    pub store: Checkpoints,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().join("data/checkpoints");
        let root = dir.path().join("work");
        std::fs::create_dir_all(&root).expect("root");
        let store = Checkpoints::open(&base).expect("open");
        Fixture {
            _dir: dir,
            base,
            root,
            store,
        }
    }

    /// A path next to the working directory (outside it).
    pub fn outside(&self, name: &str) -> PathBuf {
        self.root.parent().expect("parent").join(name)
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(rel)).ok()
    }

    pub fn record(&self, turn: &str) -> crate::Recorded {
        self.store
            .record("s1", turn, &self.root, &opts())
            .expect("record")
    }

    pub fn restore(&self, turn: &str) -> crate::Restored {
        self.store.restore("s1", turn, &self.root).expect("restore")
    }

    /// The turn ids `s1` has records of, in turn order.
    pub fn turn_ids(&self) -> Vec<String> {
        let turns = self.store.turns("s1").expect("turns");
        turns.into_iter().map(|t| t.turn_id).collect()
    }

    /// Every path under the root (not following symlinks) with what it holds.
    pub fn snapshot(&self) -> BTreeMap<String, String> {
        snapshot(&self.root)
    }
}

/// Options for tests: a large budget, and files settled as soon as they are recorded (the
/// tests do not wait two seconds between turns).
pub fn opts() -> RecordOptions {
    RecordOptions {
        racy_ns: 0,
        ..RecordOptions::with_budget(1 << 30)
    }
}

pub fn snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read_dir")
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let rel = path
            .strip_prefix(root)
            .expect("under root")
            .to_string_lossy()
            .into_owned();
        let meta = std::fs::symlink_metadata(&path).expect("lstat");
        let mode = meta.permissions().mode() & 0o777;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).expect("readlink");
            out.insert(rel, format!("-> {}", target.display()));
        } else if meta.is_dir() {
            out.insert(rel, format!("dir {mode:o}"));
            walk(root, &path, out);
        } else {
            let content = std::fs::read(&path).expect("read");
            out.insert(
                rel,
                format!("{mode:o} {}", String::from_utf8_lossy(&content)),
            );
        }
    }
}
