//! One session's content-addressed store ([`Objects`]): `objects/<sha256 hex>` holds a
//! file's content (or a manifest's text) once, whatever number of turns refer to it.
//!
//! New objects are staged ([`Batch`]): each is written under a temporary name, then all of
//! them are made durable at once, renamed into place and the directory fsynced — so an
//! object's name never exists without its whole content, and a manifest written after
//! [`Batch::commit`] never refers to missing content. Reads check the content against its
//! name. A leaf above [`durable`](crate::durable).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::digest::Digest;
use crate::durable;
use crate::error::{Error, IoContext, Result};

pub struct Objects {
    dir: PathBuf,
}

/// Objects written but not yet in place.
#[derive(Default)]
pub struct Batch {
    staged: Vec<(PathBuf, Digest, u64)>,
    names: HashSet<Digest>,
    /// Bytes staged.
    pub bytes: u64,
}

impl Batch {
    /// The staged objects and their sizes.
    pub fn sizes(&self) -> Vec<(Digest, u64)> {
        self.staged.iter().map(|&(_, d, n)| (d, n)).collect()
    }
}

impl Objects {
    pub fn new(dir: PathBuf) -> Objects {
        Objects { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self, d: Digest) -> PathBuf {
        self.dir.join(d.to_hex())
    }

    pub fn has(&self, d: Digest) -> bool {
        std::fs::symlink_metadata(self.path(d)).is_ok_and(|m| m.is_file())
    }

    /// Stages `bytes` (whose digest is `d`) unless the store or the batch has it already.
    pub fn stage(&self, batch: &mut Batch, d: Digest, bytes: &[u8]) -> Result<()> {
        if batch.names.contains(&d) || self.has(d) {
            return Ok(());
        }
        let temp = self.dir.join(durable::temp_name());
        let mut f = durable::create_new(&temp)?;
        if let Err(e) = f.write_all(bytes) {
            let _ = std::fs::remove_file(&temp);
            return Err(crate::error::io_error(
                format!("write {}", temp.display()),
                e,
            ));
        }
        batch.staged.push((temp, d, bytes.len() as u64));
        batch.names.insert(d);
        batch.bytes += bytes.len() as u64;
        Ok(())
    }

    /// Makes the staged objects durable, then puts them in place.
    pub fn commit(&self, batch: Batch) -> Result<()> {
        if batch.staged.is_empty() {
            return Ok(());
        }
        let temps: Vec<PathBuf> = batch.staged.iter().map(|(t, ..)| t.clone()).collect();
        if let Err(e) = durable::sync_many(&temps, &self.dir) {
            self.discard(batch);
            return Err(e);
        }
        for (temp, d, _) in &batch.staged {
            let path = self.path(*d);
            std::fs::rename(temp, &path)
                .ctx(|| format!("rename {} to {}", temp.display(), path.display()))?;
        }
        durable::sync_dir(&self.dir)
    }

    /// Drops a batch that will not be committed.
    pub fn discard(&self, batch: Batch) {
        for (temp, ..) in batch.staged {
            let _ = std::fs::remove_file(temp);
        }
    }

    /// The content of `d`, checked against its digest.
    pub fn read(&self, d: Digest) -> Result<Vec<u8>> {
        let path = self.path(d);
        let bytes = std::fs::read(&path).ctx(|| format!("read {}", path.display()))?;
        if Digest::of(&bytes) != d {
            return Err(Error::Damaged(format!(
                "{} does not hash to its name",
                path.display()
            )));
        }
        Ok(bytes)
    }

    /// Every object in place and its size (leftover temporaries are removed).
    pub fn sizes(&self) -> Result<HashMap<Digest, u64>> {
        durable::sweep_temps(&self.dir);
        let mut out = HashMap::new();
        let read = std::fs::read_dir(&self.dir).ctx(|| format!("list {}", self.dir.display()))?;
        for entry in read {
            let entry = entry.ctx(|| format!("list {}", self.dir.display()))?;
            let name = entry.file_name();
            let Some(d) = name.to_str().and_then(Digest::from_hex) else {
                continue;
            };
            if let Ok(m) = entry.metadata() {
                out.insert(d, m.len());
            }
        }
        Ok(out)
    }

    /// Removes `d` (a missing object is not an error).
    pub fn remove(&self, d: Digest) -> Result<()> {
        let path = self.path(d);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(crate::error::io_error(
                format!("remove {}", path.display()),
                e,
            )),
            _ => Ok(()),
        }
    }
}
