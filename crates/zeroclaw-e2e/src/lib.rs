//! End-to-end tests of the daemon's behaviour (tests only; this library is empty). They
//! are one test binary, `tests/e2e/main.rs`, with a module per area (`wire`, `sessions`,
//! `hooks`, …; a test is named `MODULE::NAME`). Each test starts the real `zeroclaw` binary
//! on a temporary config dir and speaks to it as a client would: raw NDJSON over its Unix
//! socket, WebSocket, or another uid through `zeroclaw connect` (as root). The client is
//! `zeroclaw-testkit`'s [`daemon`](../zeroclaw_testkit/daemon/index.html) module,
//! re-exported as `tests/e2e/common`.
//! Tests of the binary's own faces (the CLI's output, `zeroclaw chat`, `zeroclaw acp`) stay
//! in `crates/zeroclaw/tests`.
//!
//! # Which binary
//!
//! This crate cannot name the binary with `CARGO_BIN_EXE_zeroclaw` (cargo sets that only
//! for the tests of the package that owns the binary), and cargo has no stable way to make
//! one package's tests depend on another package's binary. So the tests look for it:
//! `ZEROCLAW_TEST_BIN` when set, else `zeroclaw` next to the test executable
//! (`target/<profile>/zeroclaw`, the parent of the `deps` dir), and panic, saying how to
//! build it, when it is missing — or when it is stale: older than a source it was built
//! from, as cargo's dep-info file beside it (`target/debug/zeroclaw.d`, written by `cargo
//! build -p zeroclaw`; when there is none, or it names a binary elsewhere, nothing is
//! judged) lists them. Then every test fails with the command below, rather than test an
//! old daemon. (The tests do not build it themselves: a `cargo
//! build` started by a test would contend with the cargo running it for `target/`, and
//! could relink the binary under tests already running it.)
//!
//! `cargo test --workspace` (the README's test command) builds it: the `zeroclaw` package
//! keeps integration tests of its own (`crates/zeroclaw/tests`), and cargo builds a
//! package's binaries before running its integration tests — all compiling ends before any
//! test runs, so the binary is there when these tests start. That binary has the daemon's
//! test hooks, which the storage-failure, sandbox and stall tests need: `zeroclaw`'s
//! dev-dependency on `zeroclaw-daemon` turns its `test-hooks` feature on whenever the
//! package's tests are built.
//!
//! A focused run must build the binary first: `cargo test -p zeroclaw-e2e` builds no
//! binary of another package (nor does `-p zeroclaw -p zeroclaw-e2e --test e2e`, which
//! selects no integration test of `zeroclaw`):
//!
//! ```sh
//! cargo build -p zeroclaw --features test-hooks
//! cargo test -p zeroclaw-e2e -- hooks::
//! ```
//!
//! (A plain `cargo build` leaves a `target/debug/zeroclaw` without the test hooks; the tests
//! that need them then fail.)

#![forbid(unsafe_code)]
