//! Benchmarks of file checkpoints (SPEC §18; figures in docs/BENCHMARKS.md):
//!
//! - the first turn start of a 10,000-file tree (everything read, hashed and stored);
//! - a turn start of the same tree unchanged (target < 50 ms);
//! - a restore putting back 1,000 modified files (target < 1 s).
//!
//! `cargo run --release -p zeroclaw-checkpoint --example checkpoint_bench [DIR]` — the tree
//! and the store go to a temporary directory under DIR (default: the system's temporary
//! directory; use a directory on the disk the daemon's data dir lives on).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use zeroclaw_checkpoint::{Checkpoints, RecordOptions};

const FILES: usize = 10_000;
const PER_DIR: usize = 100;
const RESTORED: usize = 1_000;
const ROUNDS: usize = 7;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let parent = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(&parent)?;
    let root = dir.path().join("work");
    let store = Checkpoints::open(&dir.path().join("data/checkpoints"))?;
    let bytes = make_tree(&root)?;
    println!(
        "tree: {FILES} files in {} directories, {:.1} MiB, under {}",
        FILES / PER_DIR,
        bytes as f64 / (1024.0 * 1024.0),
        parent.display()
    );
    // Files written within 2 s of a walk are read again at the next one (their timestamps
    // cannot prove them unchanged): a real tree is older than that.
    std::thread::sleep(Duration::from_millis(2_100));
    let opts = RecordOptions::with_budget(512 * 1024 * 1024);

    let t = Instant::now();
    let first = store.record("bench", "t0", &root, &opts)?;
    println!(
        "first turn start: {:.1} ms ({} entries, {} hashed, {:.1} MiB stored)",
        ms(t.elapsed()),
        first.entries,
        first.hashed,
        first.stored_bytes as f64 / (1024.0 * 1024.0)
    );

    let mut unchanged = Vec::new();
    for i in 1..=ROUNDS {
        let t = Instant::now();
        let done = store.record("bench", &format!("t{i}"), &root, &opts)?;
        unchanged.push(t.elapsed());
        assert_eq!(done.hashed, 0, "an unchanged tree is not read again");
    }
    report("unchanged turn start", &mut unchanged, 50.0);

    let mut restores = Vec::new();
    for round in 0..ROUNDS {
        for i in 0..RESTORED {
            let path = file(&root, i * (FILES / RESTORED));
            std::fs::write(&path, format!("changed in round {round}, file {i}\n"))?;
        }
        // The turn's changes are on disk by the time its rewind comes (minutes later, not
        // microseconds): flush them so the restore is not timed waiting on their writeback.
        // SAFETY: sync(2) takes no arguments and cannot fail.
        unsafe { libc::sync() };
        let t = Instant::now();
        let back = store.restore("bench", "t0", &root)?;
        restores.push(t.elapsed());
        assert_eq!(back.restored.len(), RESTORED, "{:?}", back.unrestorable);
    }
    report("restore of 1,000 files", &mut restores, 1_000.0);
    Ok(())
}

fn file(root: &Path, i: usize) -> PathBuf {
    root.join(format!("d{:03}", i / PER_DIR))
        .join(format!("f{:03}.txt", i % PER_DIR))
}

/// 10,000 files of 100 B to 2 KiB, 100 per directory.
fn make_tree(root: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for i in 0..FILES {
        let path = file(root, i);
        if i % PER_DIR == 0 {
            std::fs::create_dir_all(path.parent().unwrap_or(root))?;
        }
        let line = format!("file {i}: some source text\n");
        let content = line.repeat(3 + (i * 7919) % 70);
        total += content.len() as u64;
        std::fs::write(path, content)?;
    }
    Ok(total)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn report(what: &str, samples: &mut [Duration], target_ms: f64) {
    samples.sort();
    let median = ms(samples[samples.len() / 2]);
    println!(
        "{what}: median {median:.1} ms, min {:.1} ms, max {:.1} ms over {} runs (target < {target_ms} ms: {})",
        ms(samples[0]),
        ms(samples[samples.len() - 1]),
        samples.len(),
        if median < target_ms { "PASS" } else { "FAIL" }
    );
}
