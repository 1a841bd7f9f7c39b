//! The shared test client, `zeroclaw-testkit`'s [`zeroclaw_testkit::daemon`] (with its
//! `screen` and `ws` helpers), under the name the tests use: `common::…`. The same file in
//! `crates/zeroclaw/tests` (where a test file says `mod common;`) and
//! `crates/zeroclaw-e2e/tests/e2e` (one binary: `main.rs` declares it once and each module
//! says `use crate::common;`), so a test moves between the two with that one line changed.

#![allow(unused_imports)]

pub use zeroclaw_testkit::daemon::*;
pub use zeroclaw_testkit::{screen, ws};

/// A daemon whose agent `alias` on the fake provider runs `bash` and `write_file` without
/// asking (at most 5 tool rounds), and a session of it started in `cwd`.
pub mod tool_agent {
    use std::path::Path;

    use super::{Conn, Fake, TestDaemon, session_config};
    use serde_json::json;

    pub fn start(fake: &Fake, alias: &str) -> TestDaemon {
        let agent = format!(
            "[agents.{alias}]\nprovider = \"fake\"\ntools = [\"bash\", \"write_file\"]\n\
             autonomy = \"full\"\nmax_tool_iterations = 5\n"
        );
        let config = session_config(&fake.server.base_url(), &agent);
        TestDaemon::start_env(&[], &[], |dir| {
            std::fs::write(dir.join("config.toml"), config).expect("config");
        })
    }

    pub fn new_session(c: &mut Conn, alias: &str, cwd: &Path) -> String {
        let r = c.new_session(json!({"agentAlias": alias, "cwd": cwd}));
        r["sessionId"].as_str().expect("sessionId").to_owned()
    }
}
