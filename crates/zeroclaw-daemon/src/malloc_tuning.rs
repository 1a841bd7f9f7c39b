//! How the C allocator holds memory (SPEC §17 "Memory is bounded by the input"): how it
//! hands large blocks back, and how many arenas it keeps.
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
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
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

/// glibc malloc arenas the process may use (`M_ARENA_MAX`), unless `MALLOC_ARENA_MAX`
/// says otherwise. By default glibc gives each thread that meets contention an arena of
/// its own (up to 8 per core), and a streamed turn's task moves between the runtime's
/// workers: each arena then keeps its own freed blocks, and a long turn's peak RSS was
/// 2.5–4 MiB higher than with one arena (docs/BENCHMARKS.md, item 3). Small blocks still
/// come from each thread's cache without the arena lock.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
pub const MALLOC_ARENAS: i32 = 1;

/// Limits glibc's malloc arenas to [`MALLOC_ARENAS`]; to be called first thing in `main`,
/// before any thread is started (an arena a thread already has is kept). Nothing on other
/// C libraries, or when `MALLOC_ARENA_MAX` is set (glibc applied it already).
#[allow(unsafe_code)]
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            // SAFETY: mallopt only sets a malloc parameter; no pointer is passed.
            unsafe {
                libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS);
            }
        }
    }
}
