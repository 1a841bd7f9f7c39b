//! Link options of the `zeroclaw` binary, both there to keep a daemon's resident memory
//! small (docs/BENCHMARKS.md, idle RSS). On x86-64 Linux with glibc:
//!
//! - packed relative relocations (`DT_RELR`): a position-independent executable carries
//!   one relocation per pointer in its data, which the loader reads in full at every start;
//!   packed, the table shrinks from about 600 KiB to under 10 KiB (needs glibc 2.36+);
//! - in release builds, the function order of `link-order.txt`: the functions a daemon
//!   runs while starting, serving its usual calls and streaming a provider's turns, laid
//!   out side by side, so the pages of code it keeps mapped are few (the kernel maps 64 KiB
//!   around each page first touched). `scripts/link-order.py` regenerates the list; names
//!   it holds that no longer exist are skipped by the linker (rustc's default on this
//!   target, LLD).
//!
//! `ZEROCLAW_PLAIN_LINK=1` links without either.

fn main() {
    println!("cargo:rerun-if-env-changed=ZEROCLAW_PLAIN_LINK");
    println!("cargo:rerun-if-changed=link-order.txt");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if !linux_gnu
        || var("CARGO_CFG_TARGET_ARCH") != "x86_64"
        || !var("ZEROCLAW_PLAIN_LINK").is_empty()
    {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("link-order.txt");
    if var("PROFILE") == "release" && order.is_file() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
