//! The turn loop end to end: echo and OpenAI (against FakeOpenAi over real
//! HTTP/SSE), tools, approvals, autonomy and limits. Failures and
//! cancellation are in failures.rs.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Rec, TestHost, openai, openai_config, spec};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use zeroclaw_agent::turn::{NO_ANSWER, REFUSED_BY_USER};
use zeroclaw_agent::{
    ApprovalAsk, ApprovalDecision, AskUser, Autonomy, ChatMessage, EchoProvider, OpenAiProvider,
    OutputStream, ToolCallRequest, ToolName, TurnEvent, TurnOutcome, run_turn,
};
use zeroclaw_testkit::{FakeOpenAi, FakeToolCall, Scripted};

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn echo_turn_streams_the_prompt_back() {
    let ws = tempfile::tempdir().unwrap();
    let s = spec(Arc::new(EchoProvider::new()), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let mut ctx = vec![];
    let prompt = "hello there,  general  kenobi\n!";
    let r = run_turn(&s, &mut ctx, prompt.into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    assert_eq!(r.content, prompt);
    assert_eq!(host.text(), prompt);
    assert_eq!(host.chunks().len(), 5);
    assert_eq!(
        ctx,
        vec![ChatMessage::user(prompt), ChatMessage::assistant(prompt)]
    );
    assert_eq!(r.appended, ctx.len());
    // The context events mirror the context.
    let appended: Vec<ChatMessage> = host
        .log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Event(TurnEvent::ContextAppended { message }) => Some(message.into_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(appended, ctx);
}

#[tokio::test]
async fn a_long_answer_is_cut_in_the_result_and_whole_in_the_context() {
    let ws = tempfile::tempdir().unwrap();
    let s = spec(Arc::new(EchoProvider::new()), ws.path(), Autonomy::Full);
    let prompt = "déjà vu déjà vu";
    for (max, shown, cut) in [
        // 'é' is bytes 1..3: a cut inside it goes back to its start.
        (2, "d", true),
        (3, "dé", true),
        (prompt.len() - 1, "déjà vu déjà v", true),
        (prompt.len(), prompt, false),
    ] {
        let mut host = TestHost::new();
        host.result_max = Some(max);
        let mut ctx = vec![];
        let r = run_turn(&s, &mut ctx, prompt.into(), &host, CancellationToken::new()).await;
        assert_eq!(r.outcome, TurnOutcome::Completed);
        assert_eq!(
            (r.content.as_str(), r.content_cut),
            (shown, cut),
            "max {max}"
        );
        assert_eq!(host.text(), prompt, "streamed whole");
        assert_eq!(
            ctx,
            vec![ChatMessage::user(prompt), ChatMessage::assistant(prompt)],
            "the context keeps the whole answer"
        );
    }
    // No limit set: the whole answer, not cut.
    let host = TestHost::new();
    let r = run_turn(
        &s,
        &mut vec![],
        prompt.into(),
        &host,
        CancellationToken::new(),
    )
    .await;
    assert_eq!((r.content.as_str(), r.content_cut), (prompt, false));
}

#[tokio::test]
async fn openai_text_chunks_concatenate_and_request_is_well_formed() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::chunks(
        ["Hel", "lo, ", "wor", "ld!"],
        Duration::ZERO,
    ));
    let ws = tempfile::tempdir().unwrap();
    let mut s = spec(openai(&fake), ws.path(), Autonomy::Supervised);
    s.model = "gpt-test".into();
    let host = TestHost::new();
    let mut ctx = vec![ChatMessage::user("earlier"), ChatMessage::assistant("ok")];
    let r = run_turn(&s, &mut ctx, "hi".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed, "{}", r.content);
    assert_eq!(r.content, "Hello, world!");
    assert_eq!(host.chunks(), vec!["Hel", "lo, ", "wor", "ld!"]);
    assert_eq!(ctx.len(), 4);
    assert_eq!(ctx[3], ChatMessage::assistant("Hello, world!"));

    let rec = fake.recorded();
    assert_eq!(rec.len(), 1);
    assert_eq!(rec[0].path, "/v1/chat/completions");
    assert_eq!(rec[0].header("authorization"), Some("Bearer sk-test"));
    let body = &rec[0].body;
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": "earlier"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "hi"},
        ])
    );
    // ask_user is not offered to a host that cannot ask.
    assert_eq!(tool_names(body), vec!["bash", "read_file", "write_file"]);
    // Usage is asked for and the provider's numbers are forwarded (SPEC §16).
    assert_eq!(body["stream_options"]["include_usage"], true);
    let usage: Vec<_> = host
        .log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Event(TurnEvent::Usage { usage }) => Some(usage),
            _ => None,
        })
        .collect();
    assert_eq!(
        usage,
        vec![zeroclaw_agent::CallUsage {
            input_tokens: 10,
            output_tokens: 5,
            estimated: false,
            ..Default::default()
        }]
    );
}

#[tokio::test]
async fn usage_is_estimated_when_the_provider_reports_none() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_usage(false);
    fake.push(Scripted::tool_call(
        "c1",
        "read_file",
        json!({"path": "missing.txt"}),
    ));
    fake.push(Scripted::text("done and dusted"));
    let ws = tempfile::tempdir().unwrap();
    let provider = Arc::new(OpenAiProvider::new(openai_config(&fake)).unwrap());
    let spec = zeroclaw_agent::AgentSpec::new(provider, ws.path().to_path_buf());
    let host = TestHost::new();
    let mut ctx = Vec::new();
    let r = run_turn(
        &spec,
        &mut ctx,
        "hi".into(),
        &host,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    let usage: Vec<_> = host
        .log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Event(TurnEvent::Usage { usage }) => Some(usage),
            _ => None,
        })
        .collect();
    assert_eq!(usage.len(), 2, "one per provider call: {usage:?}");
    assert!(usage.iter().all(|u| u.estimated && u.input_tokens > 0));
    // "done and dusted" is 15 bytes: 4 tokens at 4 bytes per token.
    assert_eq!(usage[1].output_tokens, 4);
    assert!(usage[1].input_tokens > usage[0].input_tokens, "{usage:?}");
    assert_eq!(
        r.usage.input_tokens,
        usage[0].input_tokens + usage[1].input_tokens
    );
    assert_eq!(
        r.usage.output_tokens,
        usage[0].output_tokens + usage[1].output_tokens
    );
}

#[tokio::test]
async fn empty_model_uses_the_provider_default_and_env_key() {
    let fake = FakeOpenAi::start().await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    let mut cfg = openai_config(&fake);
    cfg.api_key = None;
    cfg.api_key_env = Some("ZEROCLAW_AGENT_TEST_KEY_UNSET_VAR".into());
    let s = spec(
        Arc::new(OpenAiProvider::new(cfg).unwrap()),
        ws.path(),
        Autonomy::Full,
    );
    let host = TestHost::new();
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    assert_eq!(r.content, "Hello from the fake model.");
    let rec = fake.recorded();
    assert_eq!(rec[0].body["model"], "fake-model");
    assert_eq!(rec[0].header("authorization"), None);
}

#[tokio::test]
async fn tool_call_is_assembled_run_and_sent_back() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::ToolCalls {
        text: vec!["Let me ".into(), "check.".into()],
        calls: vec![FakeToolCall {
            fragments: 6,
            ..FakeToolCall::new("call_1", "bash", json!({"command": "echo hi there"}))
        }],
    });
    fake.push(Scripted::text("It printed hi there."));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let mut ctx = vec![];
    let r = run_turn(
        &s,
        &mut ctx,
        "run it".into(),
        &host,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.outcome, TurnOutcome::Completed, "{}", r.content);
    assert_eq!(r.content, "It printed hi there.");
    assert_eq!(r.provider_calls, 2);
    assert_eq!(r.tool_rounds, 1);
    assert_eq!(
        host.tool_log(),
        vec![
            Rec::Event(TurnEvent::ToolCall {
                tool_call_id: "call_1".into(),
                name: "bash".into(),
                raw_input: json!({"command": "echo hi there"}),
            }),
            // What bash printed, passed on while it ran (SPEC §22).
            Rec::Event(TurnEvent::ToolOutput {
                tool_call_id: "call_1".into(),
                stream: OutputStream::Stdout,
                text: "hi there\n".into(),
            }),
            Rec::Event(TurnEvent::ToolResult {
                tool_call_id: "call_1".into(),
                name: "bash".into(),
                raw_output: "hi there\n".into(),
            }),
        ]
    );
    assert_eq!(host.text(), "Let me check.It printed hi there.");

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1]["messages"].as_array().unwrap();
    assert_eq!(
        msgs[2..],
        [
            json!({"role": "assistant", "content": "Let me check.", "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "bash", "arguments": "{\"command\":\"echo hi there\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "call_1", "content": "hi there\n"}),
        ]
    );
    assert_eq!(
        ctx,
        vec![
            ChatMessage::user("run it"),
            ChatMessage::Assistant {
                content: "Let me check.".into(),
                tool_calls: vec![ToolCallRequest {
                    id: "call_1".into(),
                    name: "bash".into(),
                    arguments: "{\"command\":\"echo hi there\"}".into(),
                }],
            },
            ChatMessage::tool_result("call_1", "bash", "hi there\n"),
            ChatMessage::assistant("It printed hi there."),
        ]
    );
}

#[tokio::test]
async fn several_calls_in_one_response_run_in_order() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new(
            "a",
            "write_file",
            json!({"path": "d/f.txt", "content": "data"}),
        ),
        FakeToolCall::new("b", "read_file", json!({"path": "d/f.txt"})),
    ]));
    fake.push(Scripted::text("ok"));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let r = run_turn(
        &s,
        &mut vec![],
        "go".into(),
        &host,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    assert_eq!(
        host.tool_results(),
        vec!["Wrote 4 bytes to d/f.txt".to_string(), "data".to_string()]
    );
    let msgs = fake.requests()[1]["messages"].clone();
    assert_eq!(msgs[3]["tool_call_id"], "a");
    assert_eq!(msgs[4]["tool_call_id"], "b");
}

#[tokio::test]
async fn supervised_order_is_call_then_approval_then_result() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_call(
        "c1",
        "write_file",
        json!({"path": "out.txt", "content": "hello"}),
    ));
    fake.push(Scripted::tool_call(
        "c2",
        "read_file",
        json!({"path": "out.txt"}),
    ));
    fake.push(Scripted::text("done"));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Supervised);
    let host = TestHost::with_decisions(vec![ApprovalDecision::AllowAlways]);
    let r = run_turn(
        &s,
        &mut vec![],
        "write".into(),
        &host,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.outcome, TurnOutcome::Completed, "{}", r.content);
    assert_eq!(
        host.tool_log(),
        vec![
            Rec::Event(TurnEvent::ToolCall {
                tool_call_id: "c1".into(),
                name: "write_file".into(),
                raw_input: json!({"path": "out.txt", "content": "hello"}),
            }),
            Rec::Approval(ApprovalAsk {
                tool_call_id: "c1".into(),
                tool_name: "write_file".into(),
                arguments_summary: "write out.txt (5 bytes)".into(),
                raw_input: json!({"path": "out.txt", "content": "hello"}),
            }),
            Rec::Event(TurnEvent::ToolResult {
                tool_call_id: "c1".into(),
                name: "write_file".into(),
                raw_output: "Wrote 5 bytes to out.txt".into(),
            }),
            // read_file never needs approval.
            Rec::Event(TurnEvent::ToolCall {
                tool_call_id: "c2".into(),
                name: "read_file".into(),
                raw_input: json!({"path": "out.txt"}),
            }),
            Rec::Event(TurnEvent::ToolResult {
                tool_call_id: "c2".into(),
                name: "read_file".into(),
                raw_output: "hello".into(),
            }),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("out.txt")).unwrap(),
        "hello"
    );
}

#[tokio::test]
async fn rejected_call_tells_the_model_and_does_not_run() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": "touch should_not_exist"}),
    ));
    fake.push(Scripted::text("understood"));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Supervised);
    let host = TestHost::with_decisions(vec![ApprovalDecision::Reject]);
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    assert_eq!(r.content, "understood");
    assert_eq!(host.tool_results(), vec![REFUSED_BY_USER.to_string()]);
    assert!(!ws.path().join("should_not_exist").exists());
    let msgs = fake.requests()[1]["messages"].clone();
    assert_eq!(
        msgs[3],
        json!({"role": "tool", "tool_call_id": "c1", "content": REFUSED_BY_USER})
    );
    let approvals: Vec<_> = host
        .log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Approval(a) => Some(a.arguments_summary),
            _ => None,
        })
        .collect();
    assert_eq!(approvals, vec!["touch should_not_exist".to_string()]);
}

#[tokio::test]
async fn reject_with_edit_runs_the_replacement() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": "echo original"}),
    ));
    fake.push(Scripted::text("ok"));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Supervised);
    let host = TestHost::with_decisions(vec![ApprovalDecision::RejectWithEdit(Some(
        json!({"command": "echo edited"}),
    ))]);
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    let out = &host.tool_results()[0];
    assert!(out.ends_with("edited\n"), "{out}");
    assert!(out.contains("replaced the arguments"), "{out}");
}

/// read_only (SPEC §21.2): `write_file` is refused; `bash` runs without asking, confined
/// to writing nowhere, where Landlock is (else it is refused too).
#[tokio::test]
async fn read_only_refuses_without_asking() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new("c1", "bash", json!({"command": "touch nope"})),
        FakeToolCall::new("c2", "write_file", json!({"path": "f", "content": "x"})),
        FakeToolCall::new("c3", "read_file", json!({"path": "missing.txt"})),
    ]));
    fake.push(Scripted::text("fine"));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::ReadOnly);
    let host = TestHost::new();
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    assert!(!host.log().iter().any(|r| matches!(r, Rec::Approval(_))));
    let results = host.tool_results();
    if zeroclaw_agent::sandbox::landlock_abi().is_some() {
        assert!(results[0].contains("Permission denied"), "{}", results[0]);
    } else {
        assert!(results[0].starts_with("Refused:") && results[0].contains("read_only"));
    }
    assert!(results[1].starts_with("Refused:") && results[1].contains("write_file"));
    assert!(results[2].contains("does not exist"));
    assert!(!ws.path().join("nope").exists());
    assert!(!ws.path().join("f").exists());
}

#[tokio::test]
async fn unknown_and_malformed_calls_get_error_results_and_the_loop_goes_on() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new("c1", "rm_rf", json!({})),
        FakeToolCall {
            arguments: "{not json".into(),
            ..FakeToolCall::new("c2", "read_file", json!({}))
        },
        // Offered only when the host can ask.
        FakeToolCall::new("c3", "ask_user", json!({"question": "?"})),
    ]));
    fake.push(Scripted::text("sorry"));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    assert_eq!(r.content, "sorry");
    let results = host.tool_results();
    assert!(
        results[0].contains("`rm_rf` is not available"),
        "{results:?}"
    );
    assert!(results[1].contains("not valid JSON"), "{results:?}");
    assert!(
        results[2].contains("`ask_user` is not available"),
        "{results:?}"
    );
    match &host.tool_log()[2] {
        Rec::Event(TurnEvent::ToolCall { raw_input, .. }) => {
            assert_eq!(raw_input, &json!("{not json"))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn ask_user_goes_through_the_host() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_call(
        "q1",
        "ask_user",
        json!({"question": "Which color?", "choices": ["red", "blue"], "multiple": false}),
    ));
    fake.push(Scripted::tool_call(
        "q2",
        "ask_user",
        json!({"question": "Anything else?"}),
    ));
    fake.push(Scripted::text("thanks"));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Supervised);
    let mut host = TestHost::new();
    host.can_ask = true;
    *host.answers.lock().unwrap() = vec![Some("blue".to_string()), None].into();
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    assert_eq!(
        tool_names(&fake.requests()[0]),
        vec!["bash", "read_file", "write_file", "ask_user"]
    );
    let asks: Vec<_> = host
        .log()
        .into_iter()
        .filter_map(|r| match r {
            Rec::Ask(a) => Some(a),
            _ => None,
        })
        .collect();
    assert_eq!(
        asks,
        vec![
            AskUser {
                question: "Which color?".into(),
                choices: Some(vec!["red".into(), "blue".into()]),
                multiple: false,
            },
            AskUser {
                question: "Anything else?".into(),
                choices: None,
                multiple: false,
            },
        ]
    );
    assert_eq!(
        host.tool_results(),
        vec!["blue".to_string(), NO_ANSWER.to_string()]
    );
    assert!(NO_ANSWER.contains("no answer"));
    // ask_user never needs approval.
    assert!(!host.log().iter().any(|r| matches!(r, Rec::Approval(_))));
    let msgs = fake.requests()[2]["messages"].clone();
    assert_eq!(msgs[5]["content"], NO_ANSWER);
}

#[tokio::test]
async fn max_tool_iterations_stops_after_n_rounds() {
    let fake = FakeOpenAi::start().await.unwrap();
    for i in 0..4 {
        fake.push(Scripted::tool_call(
            &format!("c{i}"),
            "bash",
            json!({"command": format!("echo {i}")}),
        ));
    }
    let ws = tempfile::tempdir().unwrap();
    let mut s = spec(openai(&fake), ws.path(), Autonomy::Full);
    s.max_tool_iterations = 2;
    let host = TestHost::new();
    let mut ctx = vec![];
    let r = run_turn(&s, &mut ctx, "loop".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    assert!(r.content.contains("max_tool_iterations"), "{}", r.content);
    assert_eq!(r.provider_calls, 2);
    assert_eq!(r.tool_rounds, 2);
    assert_eq!(fake.request_count(), 2);
    assert_eq!(fake.pending(), 2);
    assert_eq!(
        host.tool_results(),
        vec!["0\n".to_string(), "1\n".to_string()]
    );
    // The context ends on the last round's result (no unmatched call).
    assert_eq!(ctx.len(), 5);
    assert_eq!(ctx[4], ChatMessage::tool_result("c1", "bash", "1\n"));
    assert_eq!(zeroclaw_agent::provider_safe(&ctx), ctx);
}

#[tokio::test]
async fn max_tool_iterations_zero_runs_nothing() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_call(
        "c0",
        "bash",
        json!({"command": "touch x"}),
    ));
    let ws = tempfile::tempdir().unwrap();
    let mut s = spec(openai(&fake), ws.path(), Autonomy::Full);
    s.max_tool_iterations = 0;
    let host = TestHost::new();
    let mut ctx = vec![];
    let r = run_turn(&s, &mut ctx, "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    assert!(r.content.contains("max_tool_iterations"));
    assert_eq!(fake.request_count(), 1);
    assert!(!ws.path().join("x").exists());
    assert_eq!(zeroclaw_agent::provider_safe(&ctx), ctx);
    assert!(matches!(ctx.last(), Some(ChatMessage::Tool { .. })));
}

#[tokio::test]
async fn workspace_escapes_are_refused_through_the_turn() {
    let fake = FakeOpenAi::start().await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(root.path().join("x"), "secret").unwrap();
    std::os::unix::fs::symlink("/tmp", ws.join("tmplink")).unwrap();
    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new("a", "read_file", json!({"path": "../x"})),
        FakeToolCall::new("b", "read_file", json!({"path": "/etc/passwd"})),
        FakeToolCall::new(
            "c",
            "write_file",
            json!({"path": "tmplink/zeroclaw-escape.txt", "content": "x"}),
        ),
    ]));
    fake.push(Scripted::text("ok"));
    let s = spec(openai(&fake), &ws, Autonomy::Full);
    let host = TestHost::new();
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Completed);
    let results = host.tool_results();
    assert_eq!(results.len(), 3);
    for res in &results {
        assert!(res.starts_with("Refused:"), "{res}");
        assert!(!res.contains("secret"));
    }
    assert!(results[2].contains("symlink"));
}

#[tokio::test]
async fn bash_runs_in_cwd_with_small_timeout_and_cap() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new("a", "bash", json!({"command": "pwd"})),
        FakeToolCall::new("b", "bash", json!({"command": "sleep 20"})),
        FakeToolCall::new("c", "bash", json!({"command": "yes | head -c 100000"})),
    ]));
    fake.push(Scripted::text("ok"));
    let ws = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut s = spec(openai(&fake), ws.path(), Autonomy::Full);
    s.cwd = cwd.path().to_path_buf();
    s.limits.bash_timeout = Duration::from_millis(300);
    s.limits.bash_output_cap = 64 * 1024;
    let host = TestHost::new();
    let t = Instant::now();
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(r.outcome, TurnOutcome::Completed);
    let results = host.tool_results();
    assert_eq!(
        results[0],
        format!("{}\n", cwd.path().canonicalize().unwrap().display())
    );
    assert!(results[1].contains("timed out"), "{}", results[1]);
    assert!(
        results[2].contains("[output truncated: 34464 more bytes not shown; limit 65536 bytes]"),
        "{}",
        &results[2][results[2].len() - 100..]
    );
}

#[tokio::test]
async fn echo_provider_with_tools_offered_still_just_echoes() {
    let ws = tempfile::tempdir().unwrap();
    let s = spec(
        Arc::new(EchoProvider::with_delay(Duration::from_millis(1))),
        ws.path(),
        Autonomy::Supervised,
    );
    let mut ctx = vec![];
    let host = TestHost::new();
    for p in ["one", "two words"] {
        let r = run_turn(&s, &mut ctx, p.into(), &host, CancellationToken::new()).await;
        assert_eq!(r.content, p);
    }
    assert_eq!(ctx.len(), 4);
    assert_eq!(s.tools, ToolName::ALL.to_vec());
}

/// A provider that keeps every request it is sent (so the context lent to a call is still
/// shared when the call ends) and answers "ok".
struct Hoarder(std::sync::Mutex<Vec<zeroclaw_agent::ProviderRequest>>);

#[async_trait::async_trait]
impl zeroclaw_agent::Provider for Hoarder {
    async fn stream(
        &self,
        req: zeroclaw_agent::ProviderRequest,
    ) -> Result<zeroclaw_agent::ProviderStream, zeroclaw_agent::ProviderError> {
        self.0.lock().unwrap().push(req);
        let events = [
            Ok(zeroclaw_agent::ProviderEvent::TextDelta("ok".into())),
            Ok(zeroclaw_agent::ProviderEvent::Done),
        ];
        Ok(Box::pin(futures_util::stream::iter(events)))
    }

    fn kind(&self) -> &'static str {
        "hoarder"
    }
}

#[tokio::test]
async fn the_context_lent_to_a_call_comes_back_even_from_a_provider_that_keeps_it() {
    let ws = tempfile::tempdir().unwrap();
    let hoarder = Arc::new(Hoarder(Default::default()));
    let s = spec(hoarder.clone(), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let mut ctx = vec![ChatMessage::user("before"), ChatMessage::assistant("b")];
    for prompt in ["one", "two"] {
        let r = run_turn(&s, &mut ctx, prompt.into(), &host, CancellationToken::new()).await;
        assert_eq!(r.outcome, TurnOutcome::Completed);
    }
    assert_eq!(
        ctx,
        [
            ChatMessage::user("before"),
            ChatMessage::assistant("b"),
            ChatMessage::user("one"),
            ChatMessage::assistant("ok"),
            ChatMessage::user("two"),
            ChatMessage::assistant("ok"),
        ]
    );
    // Each call saw the context as it was when it was made.
    let seen: Vec<usize> = hoarder
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.messages.len())
        .collect();
    assert_eq!(seen, [3, 5]);
}
