//! Requests in flight per connection (SPEC §3.3): with 64 requests running, the daemon
//! stops reading that connection — a 65th request is only answered once one finishes —
//! while other connections are served as usual.

use crate::common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::{Fake, TestDaemon, session_config};
use serde_json::json;
use zeroclaw_testkit::Scripted;

#[test]
fn the_sixty_fifth_request_waits_for_a_free_slot() {
    let fake = Fake::start();
    let hold = Duration::from_millis(1500);
    for _ in 0..64 {
        fake.push(Scripted::slow(hold, Scripted::text("done")));
    }
    let config = session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap()
    });
    let mut c = daemon.client();
    let ids: Vec<String> = (0..64)
        .map(|_| {
            c.result("session/new", json!({"agentAlias": "default"}))["sessionId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    // 64 slow prompts fill every slot of this connection, then one cheap request follows.
    let mut batch = String::new();
    for (i, sid) in ids.iter().enumerate() {
        batch.push_str(&json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "session/prompt", "params": {"sessionId": sid, "prompt": "x"}}).to_string());
        batch.push('\n');
    }
    batch.push_str(&json!({"jsonrpc": "2.0", "id": "late", "method": "status"}).to_string());
    batch.push('\n');
    let sent = Instant::now();
    c.stream.write_all(batch.as_bytes()).unwrap();
    assert!(
        fake.wait_requests(64, Duration::from_secs(10)),
        "all 64 turns started"
    );

    // Meanwhile another connection is served at once.
    let mut other = daemon.client();
    let t = Instant::now();
    other.result("status", json!({}));
    assert!(t.elapsed() < hold / 2, "other connections are not held up");

    // The status request on the full connection is answered only after a prompt finished.
    let mut late_at = None;
    let mut prompts_done = 0;
    while late_at.is_none() || prompts_done < 64 {
        let msg = c.recv();
        if msg.get("method").is_some() {
            continue;
        }
        if msg["id"] == "late" {
            assert!(
                prompts_done >= 1,
                "status answered before any slot freed: {msg}"
            );
            late_at = Some(sent.elapsed());
        } else {
            assert_eq!(msg["result"]["outcome"], "completed", "{msg}");
            prompts_done += 1;
        }
    }
    assert!(
        late_at.unwrap() >= hold,
        "answered after {:?}",
        late_at.unwrap()
    );
}
