//! What a confined child does between fork and exec (SPEC §17.2 "Read only means read
//! only"), prepared in the parent so that the child only makes system calls:
//!
//! 1. `no_new_privs`;
//! 2. the whole capability bounding set dropped (every capability up to the kernel's
//!    `cap_last_cap`, when the daemon holds `CAP_SETPCAP`; a daemon without it has no
//!    capability to lose, and `no_new_privs` keeps exec from granting any), the ambient set
//!    cleared, then the effective, permitted and inheritable sets emptied (`capset`): a
//!    root program holds no capability, so it cannot kill, `chown` or read past the file
//!    modes as root could;
//! 3. the Landlock ruleset ([`super::landlock`]);
//! 4. in `read_only`, a seccomp filter that answers `EPERM` to every system call that
//!    changes a file's mode, owner or extended attributes (Landlock has no right for
//!    these), to `io_uring` (which could do the same), and to every call of a foreign
//!    architecture (a 32-bit or x32 program cannot use other numbers).
//!
//! Nothing here allocates or locks in the child, as a forked child of a threaded process
//! must not.

use std::io;
use std::os::fd::RawFd;

/// The capability sets' header and data (`_LINUX_CAPABILITY_VERSION_3`: two data words).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAP_VERSION_3: u32 = 0x2008_0522;
const CAP_SETPCAP: u32 = 8;
const PR_CAP_AMBIENT: libc::c_int = 47;
const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;

/// What the child applies besides the ruleset, prepared in the parent.
#[derive(Clone)]
pub struct Hardening {
    /// The highest capability number of the kernel.
    last_cap: u32,
    /// Whether to empty the bounding set (the daemon holds `CAP_SETPCAP`).
    drop_bounding: bool,
    /// The seccomp program of `read_only` ([`metadata_filter`]).
    filter: Option<Box<[libc::sock_filter]>>,
}

impl std::fmt::Debug for Hardening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hardening")
            .field("last_cap", &self.last_cap)
            .field("drop_bounding", &self.drop_bounding)
            .field("filter_len", &self.filter.as_ref().map(|p| p.len()))
            .finish()
    }
}

impl Hardening {
    /// Reads what the parent knows (the kernel's last capability, its own capabilities) and
    /// builds the seccomp program when `read_only`.
    pub fn prepare(read_only: bool) -> Result<Hardening, String> {
        let last_cap = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .unwrap_or(63)
            .min(63);
        let filter = if read_only {
            Some(metadata_filter()?.into_boxed_slice())
        } else {
            None
        };
        Ok(Hardening {
            last_cap,
            drop_bounding: holds_setpcap(),
            filter,
        })
    }

    /// In the child, before exec: everything of this file's list, in order.
    ///
    /// # Safety
    /// Only between fork and exec (it changes the calling process for good); `ruleset` is a
    /// Landlock ruleset descriptor open in the child.
    #[allow(unsafe_code)]
    pub unsafe fn apply(&self, ruleset: RawFd) -> io::Result<()> {
        let zero: libc::c_ulong = 0;
        // SAFETY (all below): system calls on plain integers and on memory this process
        // owns for the duration of each call.
        unsafe {
            if libc::prctl(
                libc::PR_SET_NO_NEW_PRIVS,
                1 as libc::c_ulong,
                zero,
                zero,
                zero,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            if self.drop_bounding {
                for cap in 0..=self.last_cap {
                    if libc::prctl(
                        libc::PR_CAPBSET_DROP,
                        libc::c_ulong::from(cap),
                        zero,
                        zero,
                        zero,
                    ) != 0
                    {
                        let e = io::Error::last_os_error();
                        // Past the kernel's last capability (when its number was guessed).
                        if e.raw_os_error() != Some(libc::EINVAL) {
                            return Err(e);
                        }
                    }
                }
            }
            if libc::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, zero, zero, zero) != 0 {
                let e = io::Error::last_os_error();
                // A kernel without ambient capabilities has none to clear.
                if e.raw_os_error() != Some(libc::EINVAL) {
                    return Err(e);
                }
            }
            let mut header = CapHeader {
                version: CAP_VERSION_3,
                pid: 0,
            };
            let data = [CapData::default(); 2];
            if libc::syscall(
                libc::SYS_capset,
                &mut header as *mut CapHeader,
                data.as_ptr(),
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0 as libc::c_uint) != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(filter) = &self.filter {
                let prog = libc::sock_fprog {
                    len: filter.len() as libc::c_ushort,
                    filter: filter.as_ptr() as *mut libc::sock_filter,
                };
                if libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                    &prog as *const libc::sock_fprog,
                    zero,
                    zero,
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }
}

/// Whether this process's effective set holds `CAP_SETPCAP` (needed to empty the bounding
/// set).
#[allow(unsafe_code)]
fn holds_setpcap() -> bool {
    let mut header = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget fills the two data words of version 3 that `data` has room for.
    let r = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut CapHeader,
            data.as_mut_ptr(),
        )
    };
    r == 0 && data[0].effective & (1 << CAP_SETPCAP) != 0
}

/// The architecture the filter is for, and its metadata-changing system calls.
#[cfg(target_arch = "x86_64")]
mod arch {
    /// `AUDIT_ARCH_X86_64`.
    pub const AUDIT_ARCH: u32 = 0xc000_003e;
    /// x32 system calls carry this bit: refused whole.
    pub const X32_BIT: Option<u32> = Some(0x4000_0000);
    /// chmod, fchmod, chown, fchown, lchown, setxattr, lsetxattr, fsetxattr, removexattr,
    /// lremovexattr, fremovexattr, fchownat, fchmodat.
    pub const OWN: &[u32] = &[90, 91, 92, 93, 94, 188, 189, 190, 197, 198, 199, 260, 268];
}

#[cfg(target_arch = "aarch64")]
mod arch {
    /// `AUDIT_ARCH_AARCH64`.
    pub const AUDIT_ARCH: u32 = 0xc000_00b7;
    pub const X32_BIT: Option<u32> = None;
    /// setxattr, lsetxattr, fsetxattr, removexattr, lremovexattr, fremovexattr, fchmod,
    /// fchmodat, fchownat, fchown (the generic table has no chmod, chown or lchown).
    pub const OWN: &[u32] = &[5, 6, 7, 14, 15, 16, 52, 53, 54, 55];
}

/// Numbered alike on every architecture (added after the tables were unified):
/// io_uring_setup, io_uring_enter, io_uring_register, fchmodat2, setxattrat, removexattrat.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const COMMON: &[u32] = &[425, 426, 427, 452, 463, 466];

const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;
/// Offsets in `struct seccomp_data`.
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The seccomp program of `read_only`: `EPERM` for a foreign architecture, for x32 calls,
/// for each metadata-changing call and `io_uring`; everything else allowed.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn metadata_filter() -> Result<Vec<libc::sock_filter>, String> {
    let denied: Vec<u32> = arch::OWN.iter().chain(COMMON).copied().collect();
    let n = denied.len();
    // Jumps are relative to the next instruction; the deny is last, after the allow.
    let to_deny = |remaining: usize| u8::try_from(remaining + 1).map_err(|e| e.to_string());
    let mut prog = vec![
        stmt(BPF_LD_W_ABS, ARCH_OFFSET),
        jump(BPF_JEQ_K, arch::AUDIT_ARCH, 1, 0),
        stmt(BPF_RET_K, RET_EPERM),
        stmt(BPF_LD_W_ABS, NR_OFFSET),
    ];
    if let Some(bit) = arch::X32_BIT {
        prog.push(jump(BPF_JGE_K, bit, to_deny(n)?, 0));
    }
    for (i, nr) in denied.iter().enumerate() {
        prog.push(jump(BPF_JEQ_K, *nr, to_deny(n - 1 - i)?, 0));
    }
    prog.push(stmt(BPF_RET_K, RET_ALLOW));
    prog.push(stmt(BPF_RET_K, RET_EPERM));
    Ok(prog)
}

/// No filter for this architecture: `read_only` fails closed.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn metadata_filter() -> Result<Vec<libc::sock_filter>, String> {
    Err("no metadata filter for this architecture".to_owned())
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::*;

    /// Runs the program over one `seccomp_data` (nr, arch) as the kernel would.
    fn run(prog: &[libc::sock_filter], nr: u32, arch: u32) -> u32 {
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let ins = prog[pc];
            pc += 1;
            match ins.code {
                BPF_LD_W_ABS => acc = if ins.k == NR_OFFSET { nr } else { arch },
                BPF_JEQ_K => pc += usize::from(if acc == ins.k { ins.jt } else { ins.jf }),
                BPF_JGE_K => pc += usize::from(if acc >= ins.k { ins.jt } else { ins.jf }),
                BPF_RET_K => return ins.k,
                other => panic!("unexpected instruction {other}"),
            }
        }
    }

    #[test]
    fn the_filter_refuses_metadata_calls_only() {
        let prog = metadata_filter().unwrap();
        for nr in arch::OWN.iter().chain(COMMON) {
            assert_eq!(run(&prog, *nr, arch::AUDIT_ARCH), RET_EPERM, "{nr}");
        }
        for nr in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_openat,
            libc::SYS_execve,
            libc::SYS_kill,
        ] {
            assert_eq!(run(&prog, nr as u32, arch::AUDIT_ARCH), RET_ALLOW, "{nr}");
        }
        assert_eq!(
            run(&prog, libc::SYS_fchmodat as u32, arch::AUDIT_ARCH),
            RET_EPERM
        );
        assert_eq!(run(&prog, libc::SYS_read as u32, 0x4000_0003), RET_EPERM);
        if let Some(bit) = arch::X32_BIT {
            assert_eq!(run(&prog, bit | 1, arch::AUDIT_ARCH), RET_EPERM);
        }
    }
}
