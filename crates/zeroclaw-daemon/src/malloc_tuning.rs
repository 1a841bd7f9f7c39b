//! How the C allocator hands large blocks back (SPEC §17 "Memory is bounded by the input").
//!
//! glibc's malloc serves blocks above its mmap threshold (128 KiB at first) with their own
//! mappings, returned to the kernel when freed. But each time such a block is freed the
//! threshold rises to its size (up to 32 MiB), so after one large prompt later blocks of
//! a few MiB come from the heap arenas instead; freed there they stay mapped (an arena
//! only gives back its top), and the next large texts are placed beside them rather than
//! into them. A daemon that handles an 8 MiB prompt then peaked at about 40 MiB of
//! resident memory above its live heap. Fixing the threshold at [`MMAP_THRESHOLD`] keeps
//! every large text in a mapping of its own, so resident memory follows what is live.
//! Blocks below it (frames, chunks, lines) are unaffected.

/// Blocks at least this large get a mapping of their own.
pub const MMAP_THRESHOLD: usize = 1024 * 1024;

/// Fixes glibc's mmap threshold at [`MMAP_THRESHOLD`] (which also turns off its dynamic
/// rise). A no-op on other C libraries.
#[allow(unsafe_code)]
pub fn fix_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets an allocator parameter; M_MMAP_THRESHOLD takes any
        // value up to 32 MiB on 64-bit glibc, and 1 MiB is below that.
        let ok = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) };
        if ok != 1 {
            tracing::debug!("cannot set the allocator's mmap threshold");
        }
    }
}
