//! The `ollama` provider kind over the real binary (SPEC §19), against the fake Ollama
//! server speaking `/api/chat` NDJSON: a streamed answer with `num_ctx` from the agent's
//! `max_context_tokens` and usage, thinking as thoughts, tool calls (two in one response,
//! results sent back as `role:"tool"` messages), `models/list` from `/api/tags`, errors
//! (HTTP and mid-stream), a retried 503, a stalled stream, malformed JSON.

use crate::common;

use std::time::{Duration, Instant};

use common::{Conn, Served, TestDaemon, streamed_text};
use serde_json::json;
use zeroclaw_testkit::frames::updates_typed;
use zeroclaw_testkit::{FakeOllama, OllamaReply};

/// The fake server and the runtime serving it.
type Llama = Served<FakeOllama>;

fn start(llama: &Llama, timeout_secs: u64) -> TestDaemon {
    let config = format!(
        r#"[providers.ollama]
kind = "ollama"
base_url = "{}"
model = "llama3.2:latest"
timeout_secs = {timeout_secs}

[agents.default]
provider = "ollama"
system_prompt = "Be brief."
tools = ["bash", "read_file"]
autonomy = "full"
max_context_tokens = 65536
max_output_tokens = 2000
thinking_budget = 1024
"#,
        llama.server.base_url()
    );
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

fn new_session(c: &mut Conn) -> String {
    let r = c.new_session(json!({"agentAlias": "default"}));
    r["sessionId"].as_str().unwrap().to_string()
}

#[test]
fn a_streamed_answer_with_num_ctx_thinking_and_usage() {
    let llama = Llama::start();
    llama
        .server
        .push(OllamaReply::thinking("Short question.", "Hi there!"));
    let daemon = start(&llama, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "hello");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert_eq!(streamed_text(&msgs), "Hi there!");
    let thought: String = updates_typed(&msgs, "agent_thought_chunk")
        .iter()
        .map(|u| u["text"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(thought, "Short question.");
    let rec = &llama.server.recorded()[0];
    assert_eq!(
        (rec.method.as_str(), rec.path.as_str()),
        ("POST", "/api/chat")
    );
    let body = &rec.body;
    assert_eq!(body["model"], "llama3.2:latest");
    assert_eq!(body["stream"], true);
    assert_eq!(body["think"], true);
    assert_eq!(
        body["options"],
        json!({"num_ctx": 65536, "num_predict": 2000})
    );
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "Be brief."},
               {"role": "user", "content": "hello"}])
    );
    let usage = updates_typed(&msgs, "usage");
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0]["inputTokens"], 26);
    assert_eq!(usage[0]["outputTokens"], 9);
    assert_eq!(usage[0]["estimated"], false);
    // Thoughts are not kept in the transcript.
    let transcript = serde_json::to_string(&c.messages(&sid)).unwrap();
    assert!(!transcript.contains("Short question."), "{transcript}");
}

#[test]
fn two_tool_calls_in_one_response_and_their_results_sent_back() {
    let llama = Llama::start();
    llama.server.push(OllamaReply::tools(&[
        ("bash", json!({"command": "echo from-ollama"})),
        ("read_file", json!({"path": "nope.txt"})),
    ]));
    llama.server.push(OllamaReply::text("Done."));
    let daemon = start(&llama, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "go");
    assert_eq!(resp["result"]["content"], "Done.", "{resp}");
    let calls = updates_typed(&msgs, "tool_call");
    assert_eq!(calls.len(), 2, "{msgs:?}");
    assert_eq!(calls[0]["rawInput"], json!({"command": "echo from-ollama"}));
    let results = updates_typed(&msgs, "tool_result");
    assert_eq!(results.len(), 2);
    let reqs = llama.server.chat_requests();
    assert_eq!(reqs.len(), 2);
    let sent = reqs[1]["messages"].as_array().unwrap();
    assert_eq!(sent.len(), 5, "{sent:?}");
    assert_eq!(
        sent[2],
        json!({"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "bash", "arguments": {"command": "echo from-ollama"}}},
            {"function": {"name": "read_file", "arguments": {"path": "nope.txt"}}}]})
    );
    assert_eq!(sent[3]["role"], "tool");
    assert_eq!(sent[3]["tool_name"], "bash");
    assert!(
        sent[3]["content"]
            .as_str()
            .is_some_and(|s| s.contains("from-ollama")),
        "{sent:?}"
    );
    assert_eq!(sent[4]["role"], "tool");
    assert_eq!(sent[4]["tool_name"], "read_file");
}

#[test]
fn models_list_reads_the_tags() {
    let llama = Llama::start();
    let daemon = start(&llama, 10);
    let mut c = daemon.client();
    let r = c.result("models/list", json!({"agentAlias": "default"}));
    assert_eq!(
        r["models"],
        json!([
            {"provider": "ollama", "model": "llama3.2:latest", "current": true},
            {"provider": "ollama", "model": "qwen3:8b", "current": false},
        ])
    );
    assert_eq!(llama.server.recorded()[0].path, "/api/tags");
}

#[test]
fn errors_fail_the_turn_with_ollamas_message_and_a_503_is_retried() {
    let llama = Llama::start();
    llama.server.push(OllamaReply::HttpError {
        status: 404,
        message: "model \"nope\" not found, try pulling it first".into(),
        retry_after: None,
    });
    llama.server.push(OllamaReply::StreamError {
        text: vec!["Half ".into()],
        message: "an error was encountered while running the model".into(),
    });
    llama.server.push(OllamaReply::HttpError {
        status: 503,
        message: "server busy, please try again.  maximum pending requests exceeded".into(),
        retry_after: Some("0".into()),
    });
    llama.server.push(OllamaReply::text("back"));
    llama.server.push(OllamaReply::Raw(vec![
        "{\"message\": {\"content\": ".into(),
    ]));
    let daemon = start(&llama, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (_, resp) = c.prompt(&sid, "one");
    assert_eq!(
        resp["result"]["content"],
        "provider returned HTTP 404: model \"nope\" not found, try pulling it first"
    );
    let (msgs, resp) = c.prompt(&sid, "two");
    assert_eq!(
        resp["result"]["content"],
        "provider error: an error was encountered while running the model"
    );
    assert_eq!(streamed_text(&msgs), "Half ");
    let (msgs, resp) = c.prompt(&sid, "three");
    assert_eq!(resp["result"]["content"], "back", "{resp}");
    assert_eq!(updates_typed(&msgs, "provider_retry").len(), 1);
    let (_, resp) = c.prompt(&sid, "four");
    assert_eq!(resp["result"]["outcome"], "failed");
    assert!(
        resp["result"]["content"]
            .as_str()
            .is_some_and(|s| s.contains("malformed event JSON")),
        "{resp}"
    );
}

#[test]
fn a_stalled_stream_fails_after_the_timeout() {
    let llama = Llama::start();
    llama.server.push(OllamaReply::Stall {
        text: vec!["Once ".into()],
    });
    let daemon = start(&llama, 2);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let t = Instant::now();
    let (_, resp) = c.prompt(&sid, "story");
    let elapsed = t.elapsed();
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    assert!(
        resp["result"]["content"]
            .as_str()
            .is_some_and(|s| s.contains("no data for 2 s")),
        "{resp}"
    );
    assert!(elapsed < Duration::from_secs(6), "{elapsed:?}");
}

#[test]
fn an_oversize_line_fails_the_turn() {
    let llama = Llama::start();
    let huge =
        json!({"message": {"role": "assistant", "content": "x".repeat(8 * 1024 * 1024 + 10)},
                      "done": false})
        .to_string();
    llama.server.push(OllamaReply::Raw(vec![huge]));
    let daemon = start(&llama, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "big");
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    assert!(
        resp["result"]["content"]
            .as_str()
            .is_some_and(|s| s.contains("exceeds 8388608 bytes")),
        "{resp}"
    );
    assert!(streamed_text(&msgs).is_empty());
}
