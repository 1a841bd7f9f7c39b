//! Which paths a rewind may put back ([`decide`], SPEC §17.2 "A rewind undoes only its own
//! session"): a path is the session's to restore only if the rewound turns changed it —
//! its entry differs between a turn's start checkpoint and that turn's end checkpoint — no
//! one changed it between two of those turns, and what is there now is still what the
//! last of them left. Every other difference between the tree now and the first rewound
//! turn's start is someone else's: left alone and listed as a conflict with the reason,
//! unless the caller forces it.
//!
//! Regular files are compared by content (the metadata first: an unchanged `(size, mtime,
//! ctime, inode)` is the same content; otherwise the file is read and hashed), symlinks by
//! target, directories by being there; permission bits alone are not a change. A leaf
//! above the walk, the tree, the session store and the manifest.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::digest::Digest;
use crate::error::Result;
use crate::escape;
use crate::limits::MAX_RESTORE_WALK;
use crate::manifest::{Content, Entry, Kind, Manifest};
use crate::session::SessionStore;
use crate::tree::Tree;
use crate::walk::{self, Found, FoundKind, WalkSpec};

/// The id under which a turn's end is recorded.
pub fn end_id(turn_id: &str) -> String {
    format!("{turn_id}{END_SUFFIX}")
}

/// What [`end_id`] appends (a turn id never holds `@`).
pub const END_SUFFIX: &str = "@end";

/// The id under which a rewind's own restore is recorded as a turn (its start before the
/// restore, its [`end_id`] after), so that a later rewind counts what it put back as the
/// session's doing.
pub fn rewind_id(now_ns: i64) -> String {
    format!("{REWIND_PREFIX}{now_ns}")
}

const REWIND_PREFIX: &str = "@rewind-";

/// Whether a record's id is a turn's start (not a turn's end, not a rewind's restore).
pub fn is_turn_start(id: &str) -> bool {
    !id.ends_with(END_SUFFIX) && !id.starts_with(REWIND_PREFIX)
}

/// What a rewind may restore and what it must leave.
#[derive(Debug, Default)]
pub struct Decision {
    /// Paths to put back as the first rewound turn's start recorded them.
    pub restore: BTreeSet<Vec<u8>>,
    /// Paths left alone: (path, why).
    pub conflicts: Vec<(String, String)>,
}

/// One rewound turn's start and end manifests (`None`: not recorded or unrestorable).
struct TurnPair {
    turn_id: String,
    start: Option<Manifest>,
    end: Option<Manifest>,
}

fn manifest_of(store: &SessionStore, turn_id: &str) -> Result<Option<Manifest>> {
    let Some(record) = store.find(turn_id)? else {
        return Ok(None);
    };
    match record.manifest_digest()? {
        Some(d) => Ok(Some(store.read_manifest(d)?)),
        None => Ok(None),
    }
}

/// Whether two recorded entries hold the same thing (permission bits aside).
fn same_entry(a: Option<&Entry>, b: Option<&Entry>) -> bool {
    match (a.map(|e| &e.kind), b.map(|e| &e.kind)) {
        (None, None) => true,
        (Some(Kind::Dir { .. }), Some(Kind::Dir { .. })) => true,
        (Some(Kind::Symlink { target: x }), Some(Kind::Symlink { target: y })) => x == y,
        (
            Some(Kind::File {
                stat: s1,
                content: c1,
                ..
            }),
            Some(Kind::File {
                stat: s2,
                content: c2,
                ..
            }),
        ) => match (c1, c2) {
            (Content::Stored(x), Content::Stored(y)) => x == y,
            _ => s1 == s2,
        },
        _ => false,
    }
}

/// Whether what the walk found at a path now is what `entry` recorded.
fn same_now(tree: &mut Tree, entry: Option<&Entry>, now: Option<&Found>) -> bool {
    let (entry, now) = match (entry, now) {
        (None, None) => return true,
        (Some(e), Some(n)) => (e, n),
        _ => return false,
    };
    match (&entry.kind, now.kind) {
        (Kind::Dir { .. }, FoundKind::Dir) => true,
        (Kind::Symlink { target }, FoundKind::Symlink) => {
            tree.read_link(&now.path).is_ok_and(|t| *t == **target)
        }
        (Kind::File { stat, content, .. }, FoundKind::File) => match content {
            _ if *stat == now.stat => true,
            Content::Stored(d) => {
                stat.size == now.stat.size
                    && tree
                        .read_file(&now.path)
                        .is_ok_and(|b| Digest::of(&b) == *d)
            }
            Content::NotStored(_) => false,
        },
        _ => false,
    }
}

/// Decides, for a rewind of `turns` (oldest first; `turns[0]` is the turn rewound to,
/// whose start `first` recorded), which paths of `root` go back. `Ok(Err(why))` when the
/// tree cannot be compared at all.
pub fn decide(
    store: &SessionStore,
    skip: Option<&Path>,
    root: &Path,
    first: &Manifest,
    turns: &[String],
    force: bool,
) -> Result<std::result::Result<Decision, String>> {
    let mut pairs = Vec::new();
    for t in turns {
        // Turns without a start checkpoint (a rewind's, a compaction's) changed no file.
        if store.find(t)?.is_none() {
            continue;
        }
        pairs.push(TurnPair {
            turn_id: t.clone(),
            start: manifest_of(store, t)?,
            end: manifest_of(store, &end_id(t))?,
        });
    }
    // Changed by the rewound turns; changed by others between them; turns not known.
    let mut changed: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut between: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut unknown: Option<String> = None;
    for (i, pair) in pairs.iter().enumerate() {
        let (Some(start), Some(end)) = (&pair.start, &pair.end) else {
            unknown.get_or_insert_with(|| pair.turn_id.clone());
            continue;
        };
        differing(start, end, &mut changed);
        if let Some(next) = pairs.get(i + 1).and_then(|p| p.start.as_ref()) {
            differing(end, next, &mut between);
        }
    }
    let last_end = pairs.last().and_then(|p| p.end.as_ref());

    let spec = WalkSpec {
        root,
        skip,
        max_files: MAX_RESTORE_WALK,
        max_bytes: None,
        deadline: None,
    };
    let found = match walk::walk(&spec)? {
        Ok(found) => found,
        Err(stop) => return Ok(Err(stop.describe())),
    };
    let now: BTreeMap<&[u8], &Found> = found.iter().map(|f| (f.path.as_slice(), f)).collect();
    let mut tree = match Tree::open(root) {
        Ok(t) => t,
        Err(e) => return Ok(Err(format!("cannot open {}: {e}", root.display()))),
    };
    let paths: BTreeSet<&[u8]> = first
        .entries
        .iter()
        .map(|e| &*e.path)
        .chain(now.keys().copied())
        .collect();
    let mut out = Decision::default();
    for p in paths {
        let then = first.get(p);
        let here = now.get(p).copied();
        if same_now(&mut tree, then, here) {
            continue;
        }
        let is_dir = here.is_some_and(|f| f.kind == FoundKind::Dir)
            || matches!(then.map(|e| &e.kind), Some(Kind::Dir { .. }));
        let why = if force {
            None
        } else if let Some(t) = &unknown {
            Some(format!(
                "turn {t} has no checkpoint of its end: its changes cannot be told from others'"
            ))
        } else if !changed.contains(p) {
            Some(match (then, here) {
                (None, _) => "created by someone else, not by the rewound turns".to_owned(),
                (_, None) => "deleted by someone else, not by the rewound turns".to_owned(),
                _ => "changed by someone else, not by the rewound turns".to_owned(),
            })
        } else if between.contains(p) {
            Some("also changed by someone else between the rewound turns".to_owned())
        } else if !same_now(&mut tree, last_end.and_then(|m| m.get(p)), here) {
            Some("changed by someone else since the rewound turns ended".to_owned())
        } else {
            None
        };
        match why {
            None => {
                out.restore.insert(p.to_vec());
            }
            // A directory is not listed: the files in it are.
            Some(_) if is_dir => {}
            Some(why) => out.conflicts.push((escape::display(p), why)),
        }
    }
    Ok(Ok(out))
}

/// Adds to `into` every path whose entry differs between `a` and `b`.
fn differing(a: &Manifest, b: &Manifest, into: &mut BTreeSet<Vec<u8>>) {
    let paths: BTreeSet<&[u8]> = a
        .entries
        .iter()
        .chain(b.entries.iter())
        .map(|e| &*e.path)
        .collect();
    for p in paths {
        if !same_entry(a.get(p), b.get(p)) {
            into.insert(p.to_vec());
        }
    }
}
