//! Plan mode in the turn loop (SPEC §26): a hook's `allow` does not let a writing tool run
//! in plan mode; `propose_plan` is offered and the system prompt gains plan mode's section
//! only in plan mode; a valid call ends the turn after its round (the round's other calls
//! still answered), the `Plan` event after the round's results.

mod common;

use std::time::Duration;

use common::{Rec, TestHost, openai, spec};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use zeroclaw_agent::hooks::{HookDef, HookEvent, HookSet};
use zeroclaw_agent::{Autonomy, TurnEvent, TurnOutcome, run_turn};
use zeroclaw_testkit::{FakeOpenAi, FakeToolCall, Scripted};

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn system(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[tokio::test]
async fn a_hooks_allow_does_not_lift_plan_mode_and_propose_plan_ends_the_round() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new("c1", "write_file", json!({"path": "f", "content": "x"})),
        FakeToolCall::new("c2", "propose_plan", json!({"plan": "1. write f"})),
        FakeToolCall::new("c3", "read_file", json!({"path": "missing.txt"})),
    ]));
    // Never asked for: the turn ends after the round.
    fake.push(Scripted::text("not reached"));
    let ws = tempfile::tempdir().unwrap();
    let mut s = spec(openai(&fake), ws.path(), Autonomy::Plan);
    let mut hooks = HookSet::new("s".into(), "a".into(), ws.path().to_path_buf());
    hooks.add(
        HookEvent::PreToolUse,
        HookDef {
            command: r#"echo '{"decision": "allow"}'"#.into(),
            matcher: None,
            timeout: Duration::from_secs(10),
        },
    );
    s.hooks = Some(std::sync::Arc::new(hooks));
    let host = TestHost::new();
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    assert_eq!(r.provider_calls, 1);
    assert!(!host.log().iter().any(|r| matches!(r, Rec::Approval(_))));
    // The hook ran and allowed the write (the control): plan mode refused it anyway.
    let allowed = host.log().iter().any(|r| {
        matches!(r, Rec::Event(TurnEvent::Hook { report })
            if report.event == HookEvent::PreToolUse && report.outcome == "allow")
    });
    assert!(allowed, "{:?}", host.tool_log());
    let results = host.tool_results();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[0].starts_with("Refused: plan mode changes nothing"),
        "{results:?}"
    );
    assert!(results[1].starts_with("Plan proposed."), "{results:?}");
    assert!(results[2].contains("does not exist"), "{results:?}");
    assert!(!ws.path().join("f").exists());
    // The plan comes after the last result of its round.
    let log = host.log();
    let plan_at = log
        .iter()
        .position(|r| matches!(r, Rec::Event(TurnEvent::Plan { plan }) if plan == "1. write f"))
        .expect("a Plan event");
    let last_result = log
        .iter()
        .rposition(|r| matches!(r, Rec::Event(TurnEvent::ToolResult { .. })))
        .expect("results");
    assert!(plan_at > last_result);
    let req = &fake.requests()[0];
    assert!(tool_names(req).contains(&"propose_plan".to_owned()));
    assert!(system(req).starts_with("You are a test.") && system(req).contains("## Plan mode"));
}

#[tokio::test]
async fn outside_plan_mode_there_is_no_propose_plan_and_no_plan_prompt() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_call(
        "c1",
        "propose_plan",
        json!({"plan": "p"}),
    ));
    fake.push(Scripted::text("ok"));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::ReadOnly);
    let host = TestHost::new();
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    assert_eq!(r.provider_calls, 2, "an unknown tool does not end the turn");
    assert!(
        host.tool_results()[0].contains("not available"),
        "{:?}",
        host.tool_results()
    );
    assert!(
        !host
            .log()
            .iter()
            .any(|r| matches!(r, Rec::Event(TurnEvent::Plan { .. })))
    );
    let req = &fake.requests()[0];
    assert!(!tool_names(req).contains(&"propose_plan".to_owned()));
    assert!(!system(req).contains("## Plan mode"));
}
