//! One session's checkpoint directory ([`SessionStore`]), as loaded in memory:
//!
//! ```text
//! <base>/s-<first 32 hex digits of sha256(session id)>/
//!   objects/<sha256>           contents and manifests, each stored once
//!   turns/<seq>-<turn>.json    one record per turn start (see turns.rs)
//!   restore.json               the journal of a restore in progress (see journal.rs)
//! ```
//!
//! It keeps, in turn order, each turn record's sequence number and manifest (the records
//! themselves stay on disk, so a long session's memory is ~48 bytes a turn), the latest
//! record that has a manifest, and the size of every object, so the budget is checked
//! without walking the directory. A leaf above [`objects`](crate::objects),
//! [`durable`](crate::durable),
//! [`turns`](crate::turns) and [`manifest`](crate::manifest).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::digest::Digest;
use crate::durable;
use crate::error::{Error, IoContext, Result};
use crate::manifest::Manifest;
use crate::objects::Objects;
use crate::turns::{self, TurnRecord};

/// The directory name of `session_id`'s checkpoints (any id maps to a safe name).
pub fn dir_name(session_id: &str) -> String {
    format!("s-{}", &Digest::of(session_id.as_bytes()).to_hex()[..32])
}

/// What memory keeps of one turn record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnIndex {
    pub seq: u64,
    pub manifest: Option<Digest>,
}

pub struct SessionStore {
    pub dir: PathBuf,
    pub objects: Objects,
    pub turns_dir: PathBuf,
    /// Every turn record, in turn order.
    pub index: Vec<TurnIndex>,
    /// The latest record that has a manifest (a recording starts from it).
    latest: Option<TurnRecord>,
    /// Every object on disk and its size.
    pub sizes: HashMap<Digest, u64>,
}

impl SessionStore {
    /// Loads (creating with `create`) the store in `dir`; `None` when it does not exist
    /// and `create` is false.
    pub fn load(dir: PathBuf, create: bool) -> Result<Option<SessionStore>> {
        let objects_dir = dir.join("objects");
        let turns_dir = dir.join("turns");
        if !dir.exists() {
            if !create {
                return Ok(None);
            }
            make_private_dir(&dir)?;
            if let Some(parent) = dir.parent() {
                durable::sync_dir(parent)?;
            }
        }
        let mut made = false;
        for d in [&objects_dir, &turns_dir] {
            if !d.exists() {
                make_private_dir(d)?;
                made = true;
            }
        }
        if made {
            durable::sync_dir(&dir)?;
        }
        let objects = Objects::new(objects_dir);
        let sizes = objects.sizes()?;
        let mut index = Vec::new();
        let mut latest = None;
        for record in turns::load_all(&turns_dir)? {
            // A record whose manifest name is damaged is left out like an unreadable one.
            let Ok(manifest) = record.manifest_digest() else {
                tracing::warn!(turn = %record.turn_id, "turn record with a bad manifest name skipped");
                continue;
            };
            index.push(TurnIndex {
                seq: record.seq,
                manifest,
            });
            if manifest.is_some() {
                latest = Some(record);
            }
        }
        Ok(Some(SessionStore {
            dir,
            objects,
            turns_dir,
            index,
            latest,
            sizes,
        }))
    }

    pub fn total_bytes(&self) -> u64 {
        self.sizes.values().sum()
    }

    pub fn next_seq(&self) -> u64 {
        self.index.last().map_or(1, |r| r.seq + 1)
    }

    /// The latest record of `turn_id` (read from disk).
    pub fn find(&self, turn_id: &str) -> Result<Option<TurnRecord>> {
        turns::load_latest_of(&self.turns_dir, turn_id)
    }

    /// The latest record that has a manifest.
    pub fn latest_with_manifest(&self) -> Option<&TurnRecord> {
        self.latest.as_ref()
    }

    /// Every record, in turn order (read from disk).
    pub fn records(&self) -> Result<Vec<TurnRecord>> {
        turns::load_all(&self.turns_dir)
    }

    /// Reads and parses manifest `d`.
    pub fn read_manifest(&self, d: Digest) -> Result<Manifest> {
        let bytes = self.objects.read(d)?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| Error::Damaged(format!("manifest {} is not text", d.to_hex())))?;
        Manifest::parse(text)
    }

    /// Writes `record` and adds (or replaces) it in memory.
    pub fn put_record(&mut self, record: TurnRecord) -> Result<()> {
        record.write(&self.turns_dir)?;
        let entry = TurnIndex {
            seq: record.seq,
            manifest: record.manifest_digest()?,
        };
        // In turn order; a new turn's record goes last.
        match self.index.binary_search_by_key(&entry.seq, |r| r.seq) {
            Ok(i) => self.index[i] = entry,
            Err(i) => self.index.insert(i, entry),
        }
        let latest_seq = self.latest.as_ref().map(|r| r.seq);
        if entry.manifest.is_some() {
            if latest_seq.is_none_or(|seq| seq <= entry.seq) {
                self.latest = Some(record);
            }
        } else if latest_seq == Some(entry.seq) {
            // The latest with a manifest lost it (evicted): the one before takes its place.
            let before = self.index.iter().rev().find(|r| r.manifest.is_some());
            self.latest = match before {
                Some(r) => turns::load_seqs(&self.turns_dir, &[r.seq])?.pop(),
                None => None,
            };
        }
        Ok(())
    }

    pub fn journal_path(&self) -> PathBuf {
        self.dir.join("restore.json")
    }
}

/// Creates a directory readable by the daemon's user only.
pub fn make_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .ctx(|| format!("create {}", dir.display()))
}
