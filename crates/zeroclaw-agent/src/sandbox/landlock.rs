//! Landlock on Linux (SPEC §21.2): the kernel's ABI version, and a ruleset built in the
//! daemon before the fork, so that the child only has to apply it.
//!
//! The ruleset handles the write rights of the kernel's ABI (writing, truncating, making,
//! removing and renaming files and directories; device ioctls and connecting to Unix
//! sockets are not writes and stay allowed) and, with `network: false` where the ABI has
//! network rules (4 and later), TCP bind and connect. Reading and executing are not
//! handled, so they stay allowed everywhere. Beneath each writable place every handled
//! right is granted; `/dev/null`, `/dev/zero`, `/dev/full` and `/dev/tty` may be written.
//!
//! Between fork and exec the child runs [`Prepared::confine`]'s hook: two raw system calls
//! (`prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self` on the prepared descriptor), no
//! allocation and no lock, as a forked child of a threaded process must. If either fails
//! the spawn fails: the program never runs unconfined.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use landlock::{
    ABI, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr,
};

use super::rules::Rules;

/// Devices a confined program may always write.
const DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// The kernel's Landlock ABI version, `None` when Landlock is missing or disabled.
#[allow(unsafe_code)]
pub fn kernel_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: no attribute struct, size 0, the version flag.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).ok().filter(|v| *v > 0)
}

/// A ruleset ready to apply in a child: its descriptor (close-on-exec, so the program
/// never holds it).
#[derive(Debug)]
pub struct Prepared {
    fd: OwnedFd,
}

impl Prepared {
    /// Builds the ruleset of `rules` plus `tmp` (the private temporary directory) for ABI
    /// `abi`. Opens each path (a writable place that does not exist is skipped and logged);
    /// blocking but short.
    pub fn build(rules: &Rules, tmp: &Path, abi: u32) -> Result<Prepared, String> {
        let abi_level = ABI::from(i32::try_from(abi).unwrap_or(i32::MAX));
        let handled: BitFlags<AccessFs> =
            AccessFs::from_write(abi_level) & !(AccessFs::IoctlDev | AccessFs::ResolveUnix);
        let file_rights = handled & AccessFs::from_file(abi_level);
        let fail = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(handled)
            .map_err(|e| fail("cannot handle the write rights", &e))?;
        if !rules.network {
            if abi >= 4 {
                ruleset = ruleset
                    .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                    .map_err(|e| fail("cannot handle the network rights", &e))?;
            } else {
                tracing::warn!(
                    abi,
                    "sandbox_network = false: Landlock ABI {abi} has no network rules (4 or later needed)"
                );
            }
        }
        let mut created = ruleset
            .create()
            .map_err(|e| fail("cannot create the ruleset", &e))?;
        let mut allow = |path: &Path, required: bool| -> Result<(), String> {
            let meta = match std::fs::metadata(path) {
                Ok(m) => m,
                Err(e) if !required => {
                    tracing::info!("sandbox: {} is skipped: {e}", path.display());
                    return Ok(());
                }
                Err(e) => return Err(format!("{}: {e}", path.display())),
            };
            let rights = if meta.is_dir() { handled } else { file_rights };
            let fd = PathFd::new(path).map_err(|e| format!("{}: {e}", path.display()))?;
            created
                .as_mut()
                .add_rule(PathBeneath::new(fd, rights))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(())
        };
        allow(tmp, true)?;
        for place in &rules.writable {
            allow(place, false)?;
        }
        for dev in DEVICES {
            allow(Path::new(dev), false)?;
        }
        let fd: Option<OwnedFd> = created.into();
        let fd = fd.ok_or_else(|| "the kernel gave no ruleset".to_owned())?;
        Ok(Prepared { fd })
    }

    /// Makes `cmd` apply the ruleset in its child, just before exec.
    #[allow(unsafe_code)]
    pub fn confine(&self, cmd: &mut tokio::process::Command) {
        let fd = self.fd.as_raw_fd();
        // SAFETY: the hook runs in the forked child before exec. It makes two system calls
        // on plain integers (the descriptor stays open in the parent until the spawn has
        // returned) and builds its error from errno: nothing allocates or locks.
        unsafe {
            cmd.pre_exec(move || {
                let one: libc::c_ulong = 1;
                let zero: libc::c_ulong = 0;
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, one, zero, zero, zero) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0 as libc::c_uint) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}
