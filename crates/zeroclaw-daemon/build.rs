//! Embeds the dashboard (SPEC §20): walks `dashboard/` and writes `$OUT_DIR/assets.rs`, a
//! table of `(path, content)` sorted by path, each content an `include_bytes!` of the file,
//! so the files live in the binary's read-only data and are never copied at startup.
//! Paths are relative to `dashboard/` with `/` separators (`index.html`,
//! `assets/app.js`). Names starting with `.` and names that are not UTF-8 are skipped.
//! Cargo reruns this when anything under `dashboard/` changes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => panic!("cannot read {}: {e}", dir.display()),
    };
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            println!(
                "cargo::warning=skipping a non-UTF-8 name in {}",
                dir.display()
            );
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        // Follows symlinks: the file's content is what gets embedded.
        let meta = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        if meta.is_dir() {
            println!("cargo::rerun-if-changed={}", path.display());
            walk(root, &path, out);
        } else if meta.is_file() {
            println!("cargo::rerun-if-changed={}", path.display());
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.push((rel, path));
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.join("dashboard");
    println!("cargo::rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    if root.is_dir() {
        walk(&root, &root, &mut files);
    }
    files.sort();
    let mut code = String::from("&[\n");
    for (rel, path) in &files {
        let _ = writeln!(
            code,
            "    ({rel:?}, include_bytes!({:?}) as &[u8]),",
            path.display().to_string()
        );
    }
    code.push_str("]\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("assets.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
