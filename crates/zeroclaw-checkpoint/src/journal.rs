//! The restore journal ([`Journal`]): `restore.json` in the session's directory names the
//! turn, the root and the manifest a restore is putting back. It is written (durably)
//! before the restore changes anything and removed only once every change is durable, so
//! a crash midway leaves it in place and the next open of the store completes the restore
//! (SPEC §18: the whole restore or none of it, never half). A restore only ever makes the
//! tree match the manifest, so running it again is safe. A leaf above
//! [`durable`](crate::durable).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::durable;
use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Journal {
    pub turn_id: String,
    /// The root, [`escape`](crate::escape)d.
    pub root: String,
    /// The manifest being restored (64 hex digits).
    pub manifest: String,
    /// The only paths the restore touches ([`escape`](crate::escape)d), for a rewind that
    /// restores its own session's changes alone; `None`: the whole tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<String>>,
}

impl Journal {
    pub fn write(&self, path: &Path) -> Result<()> {
        let bytes = serde_json::to_vec(self)
            .map_err(|e| Error::Damaged(format!("cannot encode a restore journal: {e}")))?;
        durable::write_atomic(path, &bytes)
    }

    /// The journal at `path`, if there is one.
    pub fn read(path: &Path) -> Result<Option<Journal>> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| Error::Damaged(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(crate::error::io_error(
                format!("read {}", path.display()),
                e,
            )),
        }
    }

    /// Removes the journal at `path`, durably: the restore is done.
    pub fn clear(path: &Path) -> Result<()> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(crate::error::io_error(
                    format!("remove {}", path.display()),
                    e,
                ));
            }
            _ => {}
        }
        durable::sync_dir(path.parent().unwrap_or(Path::new(".")))
    }
}
