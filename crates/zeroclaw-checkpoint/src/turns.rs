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
        let safe = !self.turn_id.is_empty()
            && self.turn_id.len() <= 64
            && self
                .turn_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        let key = if safe {
            self.turn_id.clone()
        } else {
            format!("h{}", &Digest::of(self.turn_id.as_bytes()).to_hex()[..32])
        };
        format!("{:010}-{key}.json", self.seq)
    }

    /// Writes (or replaces) the record in `dir`, durably.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let bytes = serde_json::to_vec(self)
            .map_err(|e| Error::Damaged(format!("cannot encode a turn record: {e}")))?;
        durable::write_atomic(&dir.join(self.file_name()), &bytes)
    }
}

/// Every record in `dir`, in turn order; leftover temporaries are removed. A record that
/// does not parse is skipped (its turn is then unknown, never wrongly restored).
pub fn load_all(dir: &Path) -> Result<Vec<TurnRecord>> {
    durable::sweep_temps(dir);
    let mut out = Vec::new();
    let read = std::fs::read_dir(dir).ctx(|| format!("list {}", dir.display()))?;
    for entry in read {
        let entry = entry.ctx(|| format!("list {}", dir.display()))?;
        let name = entry.file_name();
        if !name.to_string_lossy().ends_with(".json") {
            continue;
        }
        let parsed = std::fs::read(entry.path())
            .ok()
            .and_then(|b| serde_json::from_slice::<TurnRecord>(&b).ok())
            .filter(|r| r.file_name().as_str() == name.to_string_lossy());
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
