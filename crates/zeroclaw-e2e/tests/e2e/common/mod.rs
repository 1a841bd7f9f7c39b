//! The shared test client, `zeroclaw-testkit`'s [`zeroclaw_testkit::daemon`] (with its
//! `screen` and `ws` helpers), under the name the tests use: `mod common;` then `common::…`.
//! The same file in `crates/zeroclaw/tests` and `crates/zeroclaw-e2e/tests`, so a test file
//! moves between the two with `git mv` alone.

#![allow(unused_imports)]

pub use zeroclaw_testkit::daemon::*;
pub use zeroclaw_testkit::{screen, ws};
