//! The sandbox where the system has no Landlock (macOS, Windows, other Unix systems): there
//! is no kernel ABI, so nothing is ever prepared or confined (SPEC §21.2: `read_only`
//! refuses `bash`, the other autonomy levels run it unconfined).

use std::path::Path;

use super::rules::Rules;

/// No Landlock here.
pub fn kernel_abi() -> Option<u32> {
    None
}

/// Never built on this system.
#[derive(Debug)]
pub enum Prepared {}

impl Prepared {
    pub fn build(_rules: &Rules, _tmp: &Path, _abi: u32) -> Result<Prepared, String> {
        Err("this system has no Landlock".to_owned())
    }

    pub fn confine(&self, _cmd: &mut tokio::process::Command) {
        match *self {}
    }
}
