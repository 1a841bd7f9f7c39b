//! The `gemini` provider kind over the real binary (SPEC §19), against the fake Gemini
//! server speaking `streamGenerateContent?alt=sse`: a streamed answer with thoughts and
//! usage (cached tokens), two function calls whose thought signatures go back with them
//! (results as `functionResponse` parts), `models/list`, errors (HTTP and mid-stream), a
//! retried 429, a stalled stream, malformed JSON.

use crate::common;

use std::time::{Duration, Instant};

use common::{Conn, Served, TestDaemon, streamed_text};
use serde_json::json;
use zeroclaw_testkit::frames::updates_typed;
use zeroclaw_testkit::{FakeGemini, GeminiReply};

/// The fake server and the runtime serving it.
type Gemini = Served<FakeGemini>;

fn start(gemini: &Gemini, timeout_secs: u64) -> TestDaemon {
    let config = format!(
        r#"[providers.gemini]
kind = "gemini"
base_url = "{}"
api_key = "AIza-test-key"
model = "gemini-fake-flash"
timeout_secs = {timeout_secs}

[agents.default]
provider = "gemini"
system_prompt = "Be helpful."
tools = ["bash", "read_file"]
autonomy = "full"
thinking_budget = 1024
"#,
        gemini.server.base_url()
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
fn a_streamed_answer_with_thoughts_and_cached_usage() {
    let gemini = Gemini::start();
    gemini
        .server
        .push(GeminiReply::thinking("Considering it.", "Here you go."));
    let daemon = start(&gemini, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "hello");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert_eq!(streamed_text(&msgs), "Here you go.");
    let thought: String = updates_typed(&msgs, "agent_thought_chunk")
        .iter()
        .map(|u| u["text"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(thought, "Considering it.");
    let rec = &gemini.server.recorded()[0];
    assert_eq!(
        rec.path,
        "/v1beta/models/gemini-fake-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(rec.header("x-goog-api-key"), Some("AIza-test-key"));
    assert_eq!(
        rec.body["systemInstruction"],
        json!({"parts": [{"text": "Be helpful."}]})
    );
    assert_eq!(
        rec.body["generationConfig"],
        json!({"maxOutputTokens": 8192,
               "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": true}})
    );
    assert_eq!(
        rec.body["contents"],
        json!([{"role": "user", "parts": [{"text": "hello"}]}])
    );
    let usage = updates_typed(&msgs, "usage");
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0]["inputTokens"], 40);
    assert_eq!(usage[0]["outputTokens"], 10, "candidates + thoughts");
    assert_eq!(usage[0]["cacheReadTokens"], 32);
}

#[test]
fn two_function_calls_go_back_with_their_thought_signatures() {
    let gemini = Gemini::start();
    gemini.server.push(GeminiReply::calls(&[
        (
            "bash",
            json!({"command": "echo from-gemini"}),
            Some("SIG-A"),
        ),
        ("read_file", json!({"path": "nope.txt"}), None),
    ]));
    gemini.server.push(GeminiReply::text("Finished."));
    let daemon = start(&gemini, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "go");
    assert_eq!(resp["result"]["content"], "Finished.", "{resp}");
    assert_eq!(updates_typed(&msgs, "tool_call").len(), 2, "{msgs:?}");
    assert_eq!(updates_typed(&msgs, "tool_result").len(), 2);
    let reqs = gemini.server.generate_requests();
    assert_eq!(reqs.len(), 2);
    let contents = reqs[1]["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3, "{contents:?}");
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "bash", "args": {"command": "echo from-gemini"}},
             "thoughtSignature": "SIG-A"},
            {"functionCall": {"name": "read_file", "args": {"path": "nope.txt"}}}]})
    );
    let parts = contents[2]["parts"].as_array().unwrap();
    assert_eq!(contents[2]["role"], "user");
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0]["functionResponse"]["name"], "bash");
    assert!(
        parts[0]["functionResponse"]["response"]["result"]
            .as_str()
            .is_some_and(|s| s.contains("from-gemini")),
        "{parts:?}"
    );
    assert_eq!(parts[1]["functionResponse"]["name"], "read_file");
    // The signature is not persisted.
    let transcript = serde_json::to_string(&c.messages(&sid)).unwrap();
    assert!(!transcript.contains("SIG-A"), "{transcript}");
}

#[test]
fn models_list_strips_the_models_prefix() {
    let gemini = Gemini::start();
    let daemon = start(&gemini, 10);
    let mut c = daemon.client();
    let r = c.result("models/list", json!({"agentAlias": "default"}));
    assert_eq!(
        r["models"],
        json!([
            {"provider": "gemini", "model": "gemini-fake-flash", "current": true},
            {"provider": "gemini", "model": "gemini-fake-pro", "current": false},
        ])
    );
    let rec = &gemini.server.recorded()[0];
    assert_eq!(
        (rec.method.as_str(), rec.path.as_str()),
        ("GET", "/v1beta/models")
    );
    assert_eq!(rec.header("x-goog-api-key"), Some("AIza-test-key"));
}

#[test]
fn errors_fail_the_turn_with_the_message_and_a_429_is_retried() {
    let gemini = Gemini::start();
    gemini.server.push(GeminiReply::HttpError {
        code: 429,
        message: "Resource has been exhausted (e.g. check quota).".into(),
        status: "RESOURCE_EXHAUSTED".into(),
        retry_after: Some("0".into()),
    });
    gemini.server.push(GeminiReply::text("after the wait"));
    gemini.server.push(GeminiReply::HttpError {
        code: 400,
        message: "API key not valid. Please pass a valid API key.".into(),
        status: "INVALID_ARGUMENT".into(),
        retry_after: None,
    });
    gemini.server.push(GeminiReply::StreamError {
        text: vec!["Some ".into()],
        message: "An internal error has occurred.".into(),
    });
    gemini
        .server
        .push(GeminiReply::Raw(vec!["{\"candidates\": [".into()]));
    let daemon = start(&gemini, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "one");
    assert_eq!(resp["result"]["content"], "after the wait", "{resp}");
    let r = updates_typed(&msgs, "provider_retry");
    assert_eq!(r.len(), 1);
    assert_eq!(
        r[0]["reason"],
        "HTTP 429: Resource has been exhausted (e.g. check quota)."
    );
    let (_, resp) = c.prompt(&sid, "two");
    assert_eq!(
        resp["result"]["content"],
        "provider returned HTTP 400: API key not valid. Please pass a valid API key."
    );
    let (msgs, resp) = c.prompt(&sid, "three");
    assert_eq!(
        resp["result"]["content"],
        "provider error: An internal error has occurred."
    );
    assert_eq!(streamed_text(&msgs), "Some ");
    let (_, resp) = c.prompt(&sid, "four");
    assert!(
        resp["result"]["content"]
            .as_str()
            .is_some_and(|s| s.contains("malformed event JSON")),
        "{resp}"
    );
}

#[test]
fn a_stalled_stream_fails_after_the_timeout() {
    let gemini = Gemini::start();
    gemini.server.push(GeminiReply::Stall {
        text: vec!["Hmm ".into()],
    });
    let daemon = start(&gemini, 2);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let t = Instant::now();
    let (_, resp) = c.prompt(&sid, "x");
    assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
    assert!(
        resp["result"]["content"]
            .as_str()
            .is_some_and(|s| s.contains("no data for 2 s")),
        "{resp}"
    );
}

#[test]
fn an_oversize_event_fails_the_turn() {
    let gemini = Gemini::start();
    let huge = json!({"candidates": [{"content": {"role": "model",
        "parts": [{"text": "x".repeat(8 * 1024 * 1024 + 10)}]}}]})
    .to_string();
    gemini.server.push(GeminiReply::Raw(vec![huge]));
    let daemon = start(&gemini, 10);
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
