//! Background processes where they are not built (not Unix): every start is refused with
//! a tool error.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::ended::Ended;
use crate::sandbox::Prepared;

/// Never made.
pub enum Spawned {}

impl Spawned {
    pub fn pid(&self) -> u32 {
        match *self {}
    }
}

pub fn spawn(
    _command: &str,
    _cwd: &Path,
    _sandbox: Option<(&Prepared, &Path)>,
    _env_allow: &[String],
) -> std::io::Result<Spawned> {
    Err(std::io::Error::other(
        "background processes are not supported on this platform",
    ))
}

pub async fn run(s: Spawned, _stop: &CancellationToken, _push: impl FnMut(&[u8])) -> Ended {
    match s {}
}
