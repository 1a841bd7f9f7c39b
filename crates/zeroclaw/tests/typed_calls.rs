//! The clients call the daemon through the method table (issue 45, item 4). The client's
//! methods that send a method of the vocabulary all take its `call::` marker and params
//! type, so a mismatch there is a compile error; what is left to check are its two untyped
//! sends, by wire name and as raw bytes: no source file of the command line, the chat or
//! the ACP bridge uses them, except `zeroclaw rpc` (`cli/rpc.rs`), the one raw path.

use std::path::{Path, PathBuf};

/// The client's sends that take a wire name or raw bytes.
const RAW_CALLS: [&str; 2] = [".call_name(", ".send_raw("];

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(file, line)` of each raw call in the sources of these crates' `src/`.
fn raw_calls(crate_dirs: &[PathBuf]) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for dir in crate_dirs {
        sources(&dir.join("src"), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("source file");
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if RAW_CALLS.iter().any(|call| code.contains(call)) {
                found.push((file.display().to_string(), code.to_string()));
            }
        }
    }
    found
}

#[test]
fn only_zeroclaw_rpc_calls_by_wire_name() {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let crates = here.parent().expect("crates dir").to_path_buf();
    let found = raw_calls(&[here.clone(), crates.join("zeroclaw-acp")]);
    // The control: the scan does read the sources, since `zeroclaw rpc`'s own call is seen.
    let (allowed, others): (Vec<_>, Vec<_>) = found
        .into_iter()
        .partition(|(file, _)| file.ends_with("cli/rpc.rs"));
    assert_eq!(
        allowed.len(),
        1,
        "zeroclaw rpc should make exactly one raw call: {allowed:?}"
    );
    assert!(
        others.is_empty(),
        "stringly daemon calls outside `zeroclaw rpc` (use call_typed::<call::X>): {others:#?}"
    );
}
