//! One session's checkpoint directory ([`SessionStore`]), as loaded in memory:
//!
//! ```text
//! <base>/s-<first 32 hex digits of sha256(session id)>/
//!   objects/<sha256>           contents and manifests, each stored once
//!   turns/<seq>-<turn>.json    one record per turn start (see turns.rs)
//!   restore.json               the journal of a restore in progress (see journal.rs)
//! ```
//!
//! It keeps the turn records in order and the size of every object, so the budget is
//! checked without walking the directory. A leaf above [`objects`](crate::objects),
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

pub struct SessionStore {
    pub dir: PathBuf,
    pub objects: Objects,
    pub turns_dir: PathBuf,
    /// In turn order.
    pub records: Vec<TurnRecord>,
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
        let records = turns::load_all(&turns_dir)?;
        Ok(Some(SessionStore {
            dir,
            objects,
            turns_dir,
            records,
            sizes,
        }))
    }

    pub fn total_bytes(&self) -> u64 {
        self.sizes.values().sum()
    }

    pub fn next_seq(&self) -> u64 {
        self.records.last().map_or(1, |r| r.seq + 1)
    }

    /// The latest record of `turn_id`.
    pub fn find(&self, turn_id: &str) -> Option<&TurnRecord> {
        self.records.iter().rev().find(|r| r.turn_id == turn_id)
    }

    /// The latest record that has a manifest.
    pub fn latest_with_manifest(&self) -> Option<&TurnRecord> {
        self.records.iter().rev().find(|r| r.manifest.is_some())
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
        // Records are kept in turn order; a new turn's record goes last.
        match self.records.binary_search_by_key(&record.seq, |r| r.seq) {
            Ok(i) => self.records[i] = record,
            Err(i) => self.records.insert(i, record),
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
