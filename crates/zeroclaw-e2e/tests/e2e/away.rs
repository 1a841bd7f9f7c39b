//! Work while away, end to end across §23 and §24 (SPEC §24.3): a webhook delivery and a
//! schedule each start a turn nobody watches, and when it ends the owner is told through a
//! notification channel, naming what started it.

use std::time::Duration;

use crate::common;
use crate::notifications::hmac_sha256;
use crate::schedules::in_ms;
use crate::webhooks::deliver;

use common::ws::{WSS_SECTION, listening_port};
use common::{Fake, TestDaemon, session_config};
use serde_json::{Value, json};
use zeroclaw_testkit::{FakePush, Scripted, Served};

const WAIT: Duration = Duration::from_secs(20);

/// The notices `hooks` got at `/hook`, once `n` came.
fn notices(hooks: &Served<FakePush>, n: usize) -> Vec<Value> {
    hooks
        .server
        .wait_requests("/hook", n, WAIT)
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("a JSON notice"))
        .collect()
}

#[test]
fn unattended_turns_tell_their_owner_when_they_end() {
    let fake = Fake::start();
    let hooks = Served::<FakePush>::start();
    let extra = format!(
        "{WSS_SECTION}\n[webhooks.ci]\nagent = \"default\"\nsecret = \"ci-secret\"\n\
         prompt = \"CI says {{{{json /status}}}}\"\n\n\
         [notify.hook]\nkind = \"webhook\"\nurl = \"{}\"\nevents = [\"turn_ended\"]\n",
        hooks.server.url("/hook"),
    );
    let config = session_config(&fake.server.base_url(), &extra);
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    });
    let port = listening_port(&daemon);

    // A signed delivery: its turn runs and ends with nobody subscribed.
    fake.push(Scripted::text("the build is green"));
    let body = json!({"status": "green"}).to_string();
    let signature = format!("sha256={}", hmac_sha256(b"ci-secret", body.as_bytes()));
    let reply = deliver(
        port,
        "/webhooks/ci",
        &[
            ("Content-Type", "application/json".to_owned()),
            ("Idempotency-Key", "build-1".to_owned()),
            ("X-Zeroclaw-Signature", signature),
        ],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 202, "{:?}", reply.json());
    let accepted = reply.json();
    let got = notices(&hooks, 1);
    assert_eq!(got[0]["event"], "turn_ended", "{got:?}");
    assert_eq!(got[0]["sessionId"], accepted["sessionId"], "{got:?}");
    assert_eq!(got[0]["title"], "Finished: webhook:ci", "{got:?}");
    assert!(
        got[0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("the build is green")),
        "{got:?}"
    );

    // A schedule due in a moment: its run ends the same way.
    fake.push(Scripted::text("notes summarised"));
    let mut c = daemon.client();
    let created = c.result(
        "schedule/create",
        json!({"name": "notes", "agentAlias": "default", "prompt": "summarise",
               "at": in_ms(1_000), "tz": "UTC"}),
    );
    assert!(created["scheduleId"].is_string(), "{created}");
    let got = notices(&hooks, 2);
    assert_eq!(got[1]["event"], "turn_ended", "{got:?}");
    assert_eq!(got[1]["title"], "Finished: schedule:notes", "{got:?}");

    // An interactive turn that ends tells nobody: `turn_ended` is for unattended turns
    // (the two above are the positive controls).
    fake.push(Scripted::text("hello"));
    let sid = c.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_owned();
    let (_, done) = c.prompt(&sid, "hi");
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    // A third unattended turn after it, so that "nothing for the interactive one" is read
    // after a notice that came later, not after a sleep.
    fake.push(Scripted::text("second build"));
    let body = json!({"status": "red"}).to_string();
    let signature = format!("sha256={}", hmac_sha256(b"ci-secret", body.as_bytes()));
    let reply = deliver(
        port,
        "/webhooks/ci",
        &[
            ("Idempotency-Key", "build-2".to_owned()),
            ("X-Zeroclaw-Signature", signature),
        ],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 202);
    let got = notices(&hooks, 3);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got.iter().all(|n| n["sessionId"] != sid.as_str()),
        "the interactive turn told someone: {got:?}"
    );
    assert_eq!(got[2]["title"], "Finished: webhook:ci", "{got:?}");
}
