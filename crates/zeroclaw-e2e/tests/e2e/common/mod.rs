//! The shared test client, `zeroclaw-testkit`'s [`zeroclaw_testkit::daemon`] (with its
//! `screen` and `ws` helpers), under the name the tests use: `common::…`. The same file in
//! `crates/zeroclaw/tests` (where a test file says `mod common;`) and
//! `crates/zeroclaw-e2e/tests/e2e` (one binary: `main.rs` declares it once and each module
//! says `use crate::common;`), so a test moves between the two with that one line changed.

#![allow(unused_imports)]

pub use zeroclaw_testkit::daemon::*;
pub use zeroclaw_testkit::{screen, ws};
