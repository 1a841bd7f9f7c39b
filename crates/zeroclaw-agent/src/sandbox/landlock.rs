//! Landlock on Linux (SPEC §21.2, §17.2): the kernel's ABI version, and a ruleset built in
//! the daemon before the fork, so that the child only has to apply it.
//!
//! The ruleset handles reading (files, directories, executing) and the write rights of the
//! kernel's ABI (writing, truncating, making, removing and renaming files and directories;
//! device ioctls and connecting to Unix sockets are not writes and stay allowed) and, with
//! `network: false` where the ABI has network rules (4 and later), TCP bind and connect.
//! Reading is granted beneath `/` but the denied paths, writing beneath each writable place
//! but the denied paths ([`super::complement`]); `/dev/null`, `/dev/zero`, `/dev/full` and
//! `/dev/tty` may be written. Where the ABI has scopes (6 and later) the program cannot
//! signal, nor connect to an abstract Unix socket of, any process outside its sandbox.
//!
//! Between fork and exec the child runs [`Prepared::confine`]'s hook ([`super::child`]):
//! `no_new_privs`, no capabilities, `landlock_restrict_self` on the prepared descriptor and
//! in `read_only` the metadata filter; no allocation and no lock, as a forked child of a
//! threaded process must. If any step fails the spawn fails: the program never runs
//! unconfined.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

use super::child::Hardening;
use super::complement;
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
    hardening: Hardening,
}

impl Prepared {
    /// Builds the ruleset of `rules` plus `tmp` (the private temporary directory) for ABI
    /// `abi`. Walks the ancestors of the denied paths and opens each place (a writable place
    /// that does not exist is skipped and logged); blocking but short.
    pub fn build(rules: &Rules, tmp: &Path, abi: u32) -> Result<Prepared, String> {
        let abi_level = ABI::from(i32::try_from(abi).unwrap_or(i32::MAX));
        let read: BitFlags<AccessFs> = AccessFs::from_read(abi_level);
        let write: BitFlags<AccessFs> =
            AccessFs::from_write(abi_level) & !(AccessFs::IoctlDev | AccessFs::ResolveUnix);
        let file_rights = AccessFs::from_file(abi_level);
        let fail = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(read | write)
            .map_err(|e| fail("cannot handle the file rights", &e))?;
        if abi >= 6 {
            ruleset = ruleset
                .scope(Scope::Signal | Scope::AbstractUnixSocket)
                .map_err(|e| fail("cannot scope signals and abstract sockets", &e))?;
        } else {
            tracing::warn!(
                abi,
                "sandbox: Landlock ABI {abi} has no scopes (6 or later needed): a confined \
                 program may signal processes of the daemon's user"
            );
        }
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
        let denied = complement::real_paths(&rules.denied);
        // Each place is opened without following a final symlink: one swapped in for an
        // entry since the walk (in a directory others may write, such as /tmp) is skipped,
        // never followed to where it points. One that vanished is skipped too.
        let mut add = |path: &Path, rights: BitFlags<AccessFs>| -> Result<(), String> {
            let opened = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(path);
            let file = match opened {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(format!("{}: {e}", path.display())),
            };
            let meta = file
                .metadata()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if meta.file_type().is_symlink() {
                return Ok(());
            }
            let rights = if meta.is_dir() {
                rights
            } else {
                rights & file_rights
            };
            created
                .as_mut()
                .add_rule(PathBeneath::new(file, rights))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(())
        };
        // Reading: everywhere but the denied paths.
        let mut places = Vec::new();
        complement::grants(Path::new("/"), &denied, &mut places)?;
        for place in &places {
            add(place, read)?;
        }
        // Writing: the private directory, each writable place, but the denied paths.
        let real_tmp = std::fs::canonicalize(tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let mut places = Vec::new();
        complement::grants(&real_tmp, &denied, &mut places)?;
        for place in &rules.writable {
            match std::fs::canonicalize(place) {
                Ok(real) => complement::grants(&real, &denied, &mut places)?,
                Err(e) => tracing::info!("sandbox: {} is skipped: {e}", place.display()),
            }
        }
        for dev in DEVICES {
            let dev = PathBuf::from(dev);
            if std::fs::metadata(&dev).is_ok() {
                places.push(dev);
            }
        }
        for place in &places {
            add(place, write)?;
        }
        let fd: Option<OwnedFd> = created.into();
        let fd = fd.ok_or_else(|| "the kernel gave no ruleset".to_owned())?;
        let hardening = Hardening::prepare(rules.read_only)?;
        Ok(Prepared { fd, hardening })
    }

    /// Makes `cmd` apply the ruleset (and the rest of [`Hardening`]) in its child, just
    /// before exec.
    #[allow(unsafe_code)]
    pub fn confine(&self, cmd: &mut tokio::process::Command) {
        let fd = self.fd.as_raw_fd();
        let hardening = self.hardening.clone();
        // SAFETY: the hook runs in the forked child before exec. It makes system calls on
        // plain integers and on memory prepared before the fork (the descriptor stays open in
        // the parent until the spawn has returned) and builds its error from errno: nothing
        // allocates or locks.
        unsafe {
            cmd.pre_exec(move || hardening.apply(fd));
        }
    }
}
