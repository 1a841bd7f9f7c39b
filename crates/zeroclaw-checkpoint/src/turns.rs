//! The record of one turn start ([`TurnRecord`]): which manifest holds the tree as it was,
//! or why the turn cannot be restored. One small JSON file per turn,
//! `turns/<seq>-<turn>.json`, written atomically after everything it refers to is durable.
//! A leaf above [`durable`](crate::durable) and [`digest`](crate::digest).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::durable;
use crate::error::{Error, IoContext, Result};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnRecord {
    pub turn_id: String,
    /// Order of the turn starts of the session (1, 2, …).
    pub seq: u64,
    /// When the walk started (ns since the epoch): files changed since cannot have been
    /// read whole, so the next turn start hashes them again.
    pub started_ns: i64,
    /// The recorded root, canonical and [`escape`](crate::escape)d.
    pub root: String,
    /// The manifest object (64 hex digits); `None` when the turn cannot be restored.
    pub manifest: Option<String>,
    /// Why the turn cannot be restored (`manifest` is `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unrestorable: Option<String>,
}

impl TurnRecord {
    pub fn manifest_digest(&self) -> Result<Option<Digest>> {
        match &self.manifest {
            None => Ok(None),
            Some(hex) => Digest::from_hex(hex)
                .map(Some)
                .ok_or_else(|| Error::Damaged(format!("turn {}: bad manifest name", self.turn_id))),
        }
    }

    /// Its file name: the sequence number first, so names sort in turn order.
    pub fn file_name(&self) -> String {
        format!("{:010}-{}.json", self.seq, key(&self.turn_id))
    }

    /// Writes (or replaces) the record in `dir`, durably.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let bytes = serde_json::to_vec(self)
            .map_err(|e| Error::Damaged(format!("cannot encode a turn record: {e}")))?;
        durable::write_atomic(&dir.join(self.file_name()), &bytes)
    }
}

/// The part of a record's file name that stands for its turn id: the id itself when it is
/// short and plain, else a hash of it.
fn key(turn_id: &str) -> String {
    let plain = !turn_id.is_empty()
        && turn_id.len() <= 64
        && turn_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        turn_id.to_owned()
    } else {
        format!("h{}", &Digest::of(turn_id.as_bytes()).to_hex()[..32])
    }
}

/// Every record in `dir`, in turn order; leftover temporaries are removed. A record that
/// does not parse is skipped (its turn is then unknown, never wrongly restored).
pub fn load_all(dir: &Path) -> Result<Vec<TurnRecord>> {
    durable::sweep_temps(dir);
    load_where(dir, |_| true)
}

/// The latest record of `turn_id` in `dir`, if any.
pub fn load_latest_of(dir: &Path, turn_id: &str) -> Result<Option<TurnRecord>> {
    let suffix = format!("-{}.json", key(turn_id));
    let found = load_where(dir, |name| name.ends_with(&suffix))?;
    Ok(found.into_iter().rev().find(|r| r.turn_id == turn_id))
}

/// The records of the turn starts `seqs` in `dir`, in turn order (those that exist).
pub fn load_seqs(dir: &Path, seqs: &[u64]) -> Result<Vec<TurnRecord>> {
    let wanted: std::collections::HashSet<String> =
        seqs.iter().map(|seq| format!("{seq:010}-")).collect();
    load_where(dir, |name| {
        name.get(..11).is_some_and(|p| wanted.contains(p))
    })
}

/// The records in `dir` whose file name `pick` accepts, in turn order.
fn load_where(dir: &Path, pick: impl Fn(&str) -> bool) -> Result<Vec<TurnRecord>> {
    let mut out = Vec::new();
    let read = std::fs::read_dir(dir).ctx(|| format!("list {}", dir.display()))?;
    for entry in read {
        let entry = entry.ctx(|| format!("list {}", dir.display()))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.ends_with(".json") || !pick(&name) {
            continue;
        }
        let parsed = std::fs::read(entry.path())
            .ok()
            .and_then(|b| serde_json::from_slice::<TurnRecord>(&b).ok())
            .filter(|r| r.file_name() == name);
        match parsed {
            Some(r) => out.push(r),
            None => {
                tracing::warn!(file = %entry.path().display(), "unreadable turn record skipped")
            }
        }
    }
    out.sort_by_key(|r| r.seq);
    Ok(out)
}
