//! `zeroclaw acp` (SPEC §15) driven as a subprocess by the client side of the ACP Rust SDK
//! (`agent-client-protocol`): a whole session against the real daemon and the fake OpenAI
//! server (tool calls allowed and rejected, cancel, list, load with replay, then `zeroclaw
//! chat` on the same session), bad input, the ephemeral daemon started on demand and a
//! daemon lost mid-turn. Plus a raw-frame benchmark of the added latency (ignored).
//! The flows of a whole session, questions and another client's prompt run twice: over
//! `zeroclaw acp`, and over the gateway's `/acp` WebSocket with the operator's dashboard
//! token (SPEC §25), through the SDK's line transport.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, CreateElicitationRequest,
    CreateElicitationResponse, ElicitationAcceptAction, ElicitationAction, ElicitationCapabilities,
    ElicitationContentValue, ElicitationFormCapabilities, ImageContent, InitializeRequest,
    ListSessionsRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, SetSessionModeRequest,
    StopReason, TextContent, ToolCallStatus, ToolKind,
};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, DynConnectTo, Lines};
use common::{BIN, Fake, TestDaemon};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use zeroclaw_testkit::Scripted;

/// What the test client saw and how it answers permission requests.
#[derive(Default)]
struct Seen {
    updates: Mutex<Vec<SessionNotification>>,
    permissions: Mutex<Vec<RequestPermissionRequest>>,
    /// Option ids to select, in order; "hold" keeps the request open until [`Seen::release`].
    answers: Mutex<VecDeque<&'static str>>,
    held: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
    /// Questions (`elicitation/create`) received; each is answered with `answer: "blue"`.
    questions: Mutex<Vec<CreateElicitationRequest>>,
}

impl Seen {
    fn with_answers(answers: &[&'static str]) -> Arc<Seen> {
        let seen = Seen::default();
        seen.answers.lock().unwrap().extend(answers);
        Arc::new(seen)
    }

    /// Updates of one session as `(sessionUpdate, detail)` pairs; consecutive message
    /// chunks are merged.
    fn summary(&self, session_id: &str) -> Vec<(String, String)> {
        let updates = self.updates.lock().unwrap();
        let mut out: Vec<(String, String)> = Vec::new();
        for note in updates.iter().filter(|n| &*n.session_id.0 == session_id) {
            let (kind, detail) = summarize(&serde_json::to_value(&note.update).unwrap());
            // Token usage follows every provider call; counted by `usage_updates`. Titles
            // (SPEC §25) are checked in acp_now.rs.
            if kind == "usage_update" || kind == "session_info_update" {
                continue;
            }
            match out.last_mut() {
                Some((k, d)) if *k == kind && kind.ends_with("_chunk") => d.push_str(&detail),
                _ => out.push((kind, detail)),
            }
        }
        out
    }

    /// How many `usage_update`s the session got.
    fn usage_updates(&self, session_id: &str) -> usize {
        let updates = self.updates.lock().unwrap();
        updates
            .iter()
            .filter(|n| &*n.session_id.0 == session_id)
            .filter(|n| summarize(&serde_json::to_value(&n.update).unwrap()).0 == "usage_update")
            .count()
    }

    fn clear(&self) {
        self.updates.lock().unwrap().clear();
    }

    /// Answers every held permission request `cancelled`, as an editor does after cancel.
    fn release(&self) {
        for answer in self.held.lock().unwrap().drain(..) {
            answer();
        }
    }
}

/// `(sessionUpdate, text | toolCallId[:status])` of one update on the wire.
fn summarize(update: &Value) -> (String, String) {
    let kind = update["sessionUpdate"].as_str().unwrap_or("").to_string();
    let detail = match kind.as_str() {
        "tool_call" => update["toolCallId"].as_str().unwrap_or("").to_string(),
        "tool_call_update" => update["toolCallId"].as_str().unwrap_or("").to_string(),
        _ => update["content"]["text"].as_str().unwrap_or("").to_string(),
    };
    (kind, detail)
}

fn agent(config_dir: &Path, extra: &[&str]) -> AcpAgent {
    let mut args = vec!["acp", "--config-dir", config_dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    AcpAgent::new(AcpAgentConfig::new(BIN).args(args).env("RUST_LOG", "warn"))
}

/// The way the test editor reaches zeroclaw's ACP agent.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Way {
    /// `zeroclaw acp` as a subprocess.
    Stdio,
    /// The gateway's `/acp`, as the operator (a dashboard session token).
    Gateway,
}

/// Where an editor of `way` connects for `daemon`.
struct Route {
    dir: std::path::PathBuf,
    /// The gateway's port and the bearer token, for [`Way::Gateway`].
    gateway: Option<(u16, String)>,
}

impl Route {
    fn new(daemon: &TestDaemon, way: Way) -> Route {
        let dir = daemon.config_dir().to_path_buf();
        if way == Way::Stdio {
            return Route { dir, gateway: None };
        }
        let mut conn = daemon.client();
        let url = conn.result("gateway/start", json!({}))["url"]
            .as_str()
            .unwrap()
            .to_string();
        let port: u16 = url
            .trim_end_matches('/')
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {url}"));
        let code = conn.result("dashboard/login", json!({}))["code"]
            .as_str()
            .unwrap()
            .to_string();
        let token = runtime().block_on(async {
            let mut ws = common::ws::connect(port).await;
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": 1, "authCode": code}});
            ws.send(WsMessage::Text(init.to_string().into()))
                .await
                .unwrap();
            loop {
                if let Some(Ok(WsMessage::Text(text))) = ws.next().await {
                    let answer: Value = serde_json::from_str(&text).unwrap();
                    break answer["result"]["authToken"]
                        .as_str()
                        .unwrap_or_else(|| panic!("{answer}"))
                        .to_string();
                }
            }
        });
        Route {
            dir,
            gateway: Some((port, token)),
        }
    }

    /// A new ACP connection: a `zeroclaw acp` process, or an `/acp` WebSocket.
    async fn connect(&self) -> DynConnectTo<agent_client_protocol::Client> {
        let Some((port, token)) = &self.gateway else {
            return DynConnectTo::new(agent(&self.dir, &[]));
        };
        let mut request = format!("ws://127.0.0.1:{port}/acp")
            .into_client_request()
            .unwrap();
        request
            .headers_mut()
            .insert("Authorization", format!("Bearer {token}").parse().unwrap());
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", *port))
            .await
            .unwrap();
        let (ws, _) = tokio_tungstenite::client_async(request, tcp)
            .await
            .expect("the /acp upgrade");
        let (tx, rx) = ws.split();
        let outgoing = tx
            .sink_map_err(std::io::Error::other)
            .with(|line: String| async move { Ok(WsMessage::Text(line.into())) });
        let incoming = rx.filter_map(|message| async move {
            match message {
                Ok(WsMessage::Text(text)) => Some(Ok(text.to_string())),
                Ok(_) => None,
                Err(e) => Some(Err(std::io::Error::other(e))),
            }
        });
        DynConnectTo::new(Lines::new(Box::pin(outgoing), Box::pin(incoming)))
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The model calls the fake received (its `GET /models`, asked when a session's model
/// options are offered, has no body).
fn completions(fake: &zeroclaw_testkit::FakeOpenAi) -> Vec<Value> {
    fake.requests()
        .into_iter()
        .filter(|r| !r.is_null())
        .collect()
}

/// Polls `cond` every 10 ms until it holds; false after `limit`.
async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cond()
}

/// Runs `body` with an initialized ACP connection to a fresh `zeroclaw acp` process.
macro_rules! with_acp {
    ($agent:expr, $seen:expr, |$cx:ident| $body:block) => {
        with_acp!(
            $agent,
            $seen,
            InitializeRequest::new(ProtocolVersion::V1),
            |$cx| $body
        )
    };
    ($agent:expr, $seen:expr, $init:expr, |$cx:ident| $body:block) => {{
        let seen: Arc<Seen> = Arc::clone(&$seen);
        let seen2 = Arc::clone(&seen);
        let seen3 = Arc::clone(&seen);
        agent_client_protocol::Client
            .v1()
            .name("zeroclaw-acp-test")
            .on_receive_notification(
                async move |note: SessionNotification, _cx| {
                    seen.updates.lock().unwrap().push(note);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |req: RequestPermissionRequest, responder, _cx| {
                    seen2.permissions.lock().unwrap().push(req);
                    let answer = seen2.answers.lock().unwrap().pop_front();
                    match answer {
                        Some("hold") => {
                            seen2.held.lock().unwrap().push(Box::new(move || {
                                let _ = responder.respond(RequestPermissionResponse::new(
                                    RequestPermissionOutcome::Cancelled,
                                ));
                            }));
                            Ok(())
                        }
                        Some(option) => responder.respond(RequestPermissionResponse::new(
                            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                                option,
                            )),
                        )),
                        None => responder.respond(RequestPermissionResponse::new(
                            RequestPermissionOutcome::Cancelled,
                        )),
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: CreateElicitationRequest, responder, _cx| {
                    seen3.questions.lock().unwrap().push(req);
                    let content = BTreeMap::from([(
                        "answer".to_string(),
                        ElicitationContentValue::String("blue".into()),
                    )]);
                    responder.respond(CreateElicitationResponse::new(ElicitationAction::Accept(
                        ElicitationAcceptAction::new().content(content),
                    )))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with($agent, async |$cx: ConnectionTo<Agent>| {
                let init = $cx.send_request($init).block_task().await?;
                assert_eq!(init.protocol_version, ProtocolVersion::V1);
                $body
            })
            .await
    }};
}

fn text(t: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(t))]
}

fn error_code(e: &agent_client_protocol::Error) -> i32 {
    e.code.value()
}

#[test]
fn a_whole_session_through_zeroclaw_acp() {
    a_whole_session_through_zeroclaw_acp_over(Way::Stdio);
}

#[test]
fn a_whole_session_through_zeroclaw_acp_over_acp_on_the_gateway() {
    a_whole_session_through_zeroclaw_acp_over(Way::Gateway);
}

fn a_whole_session_through_zeroclaw_acp_over(way: Way) {
    let fake = Fake::start();
    for reply in [
        Scripted::tool_call("call_1", "bash", json!({"command": "echo acp-allowed"})),
        Scripted::text("first done"),
        Scripted::tool_call("call_2", "bash", json!({"command": "echo acp-refused"})),
        Scripted::text("second done"),
        Scripted::tool_call("call_3", "bash", json!({"command": "echo acp-held"})),
        Scripted::text("after cancel"),
    ] {
        fake.push(reply);
    }
    let config = common::session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let dir = daemon.config_dir().to_path_buf();
    let route = Route::new(&daemon, way);
    let cwd = dir.clone();
    let seen = Seen::with_answers(&["allow_once", "reject_once", "hold"]);
    let rt = runtime();
    let session_id = rt
        .block_on(async {
            with_acp!(route.connect().await, seen, |cx| {
                let new = cx
                    .send_request(NewSessionRequest::new(cwd.clone()))
                    .block_task()
                    .await?;
                let sid = new.session_id.clone();
                let modes = new.modes.expect("modes");
                assert_eq!(&*modes.current_mode_id.0, "supervised");
                // supervised, full, read_only and plan (SPEC §26).
                assert_eq!(modes.available_modes.len(), 4);
                assert!(modes.available_modes.iter().any(|m| &*m.id.0 == "plan"));

                // Allowed tool call.
                let done = cx
                    .send_request(PromptRequest::new(sid.clone(), text("run the first")))
                    .block_task()
                    .await?;
                assert_eq!(done.stop_reason, StopReason::EndTurn);
                let s = seen.summary(&sid.0);
                assert_eq!(
                    s,
                    vec![
                        ("tool_call".into(), "call_1".into()),
                        // Its output while it runs (SPEC §25), then its result.
                        ("tool_call_update".into(), "call_1".into()),
                        ("tool_call_update".into(), "call_1".into()),
                        ("agent_message_chunk".into(), "first done".into()),
                    ]
                );
                // One `usage_update` per provider call (two calls: the tool call, the text).
                assert_eq!(seen.usage_updates(&sid.0), 2);
                let updates = seen.updates.lock().unwrap().clone();
                let call = updates
                    .iter()
                    .find_map(|n| match &n.update {
                        SessionUpdate::ToolCall(call) => Some(call.clone()),
                        _ => None,
                    })
                    .expect("a tool call");
                assert_eq!(call.kind, ToolKind::Execute);
                assert_eq!(call.status, ToolCallStatus::Pending);
                assert_eq!(call.title, "echo acp-allowed");
                assert_eq!(call.raw_input, Some(json!({"command": "echo acp-allowed"})));
                // The output update while it ran, then the one with the result.
                let results: Vec<Value> = updates
                    .iter()
                    .map(|n| serde_json::to_value(&n.update).unwrap())
                    .filter(|u| u["sessionUpdate"] == "tool_call_update")
                    .collect();
                assert_eq!(results[0]["status"], "in_progress", "{results:?}");
                let result = results.last().expect("a tool call update");
                assert_eq!(result["status"], "completed");
                assert!(
                    result["content"][0]["content"]["text"]
                        .as_str()
                        .unwrap()
                        .contains("acp-allowed")
                );
                {
                    let asked = seen.permissions.lock().unwrap();
                    assert_eq!(asked.len(), 1);
                    assert_eq!(&*asked[0].tool_call.tool_call_id.0, "call_1");
                    let ids: Vec<String> = asked[0]
                        .options
                        .iter()
                        .map(|o| o.option_id.0.to_string())
                        .collect();
                    assert_eq!(ids, ["allow_once", "allow_always", "reject_once"]);
                }
                seen.clear();

                // Rejected tool call: the tool does not run, the update says failed.
                let done = cx
                    .send_request(PromptRequest::new(sid.clone(), text("run the second")))
                    .block_task()
                    .await?;
                assert_eq!(done.stop_reason, StopReason::EndTurn);
                let updates = seen.updates.lock().unwrap().clone();
                let result = updates
                    .iter()
                    .map(|n| serde_json::to_value(&n.update).unwrap())
                    .find(|u| u["sessionUpdate"] == "tool_call_update")
                    .expect("tool_call_update");
                assert_eq!(result["status"], "failed");
                assert!(!result.to_string().contains("acp-refused\\n"));
                assert_eq!(seen.summary(&sid.0).last().unwrap().1, "second done");
                seen.clear();

                // Cancel while the permission request is open.
                let pending = cx
                    .send_request(PromptRequest::new(sid.clone(), text("run the third")))
                    .block_task();
                assert!(
                    eventually(Duration::from_secs(10), || !seen
                        .held
                        .lock()
                        .unwrap()
                        .is_empty())
                    .await,
                    "no permission request to hold"
                );
                cx.send_notification(CancelNotification::new(sid.clone()))?;
                let done = tokio::time::timeout(Duration::from_secs(10), pending)
                    .await
                    .expect("the cancelled prompt answered")?;
                assert_eq!(done.stop_reason, StopReason::Cancelled);
                seen.release();
                seen.clear();

                // The session goes on after a cancel.
                let done = cx
                    .send_request(PromptRequest::new(sid.clone(), text("still there?")))
                    .block_task()
                    .await?;
                assert_eq!(done.stop_reason, StopReason::EndTurn);
                assert_eq!(
                    seen.summary(&sid.0),
                    vec![("agent_message_chunk".into(), "after cancel".into())]
                );

                // session/list: the session, titled by its first prompt.
                let list = cx
                    .send_request(ListSessionsRequest::new())
                    .block_task()
                    .await?;
                let entry = list
                    .sessions
                    .iter()
                    .find(|s| s.session_id == sid)
                    .expect("listed");
                assert_eq!(entry.title.as_deref(), Some("run the first"));
                assert!(
                    entry
                        .updated_at
                        .as_deref()
                        .is_some_and(|t| t.ends_with('Z'))
                );
                assert_eq!(entry.cwd, cwd);
                Ok(sid.0.to_string())
            })
        })
        .unwrap_or_else(|e| panic!("acp session failed: {e:?}\n{}", daemon.log()));
    // The held approval was withdrawn: the echo never ran.
    assert!(
        !seen
            .summary(&session_id)
            .iter()
            .any(|(_, d)| d.contains("acp-held"))
    );

    // A second `zeroclaw acp` loads the session: the replay equals the transcript.
    let mut conn = daemon.client();
    let rows = conn.result("session/messages", json!({"sessionId": session_id}))["messages"]
        .as_array()
        .unwrap()
        .clone();
    let expected: Vec<(String, String)> = rows
        .iter()
        .map(|row| {
            let content = row["content"].as_str().unwrap().to_string();
            match row["role"].as_str().unwrap() {
                "user" => ("user_message_chunk".to_string(), content),
                "assistant" | "interruption" => ("agent_message_chunk".to_string(), content),
                "tool_call" | "tool_result" => {
                    let parsed: Value = serde_json::from_str(&content).unwrap();
                    let kind = if row["role"] == "tool_call" {
                        "tool_call"
                    } else {
                        "tool_call_update"
                    };
                    (
                        kind.to_string(),
                        parsed["toolCallId"].as_str().unwrap().to_string(),
                    )
                }
                other => panic!("unexpected role {other}"),
            }
        })
        .collect();
    assert!(expected.len() >= 10, "{expected:?}");
    let replay = Arc::new(Seen::default());
    let sid = session_id.clone();
    rt.block_on(async {
        with_acp!(route.connect().await, replay, |cx| {
            let loaded = cx
                .send_request(LoadSessionRequest::new(sid.clone(), dir.clone()))
                .block_task()
                .await;
            loaded?;
            let unknown = cx
                .send_request(LoadSessionRequest::new("no-such-session", dir.clone()))
                .block_task()
                .await
                .expect_err("unknown session");
            assert_eq!(error_code(&unknown), -32002);
            Ok(())
        })
    })
    .unwrap();
    // Rows are replayed one update each (no merging of neighbours here); the title
    // follows them (SPEC §25, checked in acp_now.rs).
    let replayed: Vec<(String, String)> = replay
        .updates
        .lock()
        .unwrap()
        .iter()
        .map(|n| summarize(&serde_json::to_value(&n.update).unwrap()))
        .filter(|(kind, _)| kind != "session_info_update")
        .collect();
    assert_eq!(replayed, expected);

    // It is an ordinary daemon session: `zeroclaw chat --session ID` resumes it.
    fake.push(Scripted::text("chat reply"));
    let out = Command::new(BIN)
        .args([
            "chat",
            "--config-dir",
            dir.to_str().unwrap(),
            "--session",
            &session_id,
        ])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(b"from chat\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("chat reply"), "{stdout}");
}

#[test]
fn bad_input_gets_acp_errors_and_the_agent_keeps_serving() {
    let fake = Fake::start();
    fake.push(Scripted::slow(
        Duration::from_millis(800),
        Scripted::text("slow one"),
    ));
    let config = common::session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let dir = daemon.config_dir().to_path_buf();
    let seen = Arc::new(Seen::default());
    runtime()
        .block_on(async {
            with_acp!(agent(&dir, &[]), seen, |cx| {
                let unknown = cx
                    .send_request(PromptRequest::new("nope", text("hi")))
                    .block_task()
                    .await
                    .expect_err("unknown session");
                assert_eq!(error_code(&unknown), -32002, "{unknown:?}");
                let sid = cx
                    .send_request(NewSessionRequest::new(dir.clone()))
                    .block_task()
                    .await?
                    .session_id;
                let image = vec![ContentBlock::Image(ImageContent::new("AA==", "image/png"))];
                let bad = cx
                    .send_request(PromptRequest::new(sid.clone(), image))
                    .block_task()
                    .await
                    .expect_err("image block");
                assert_eq!(error_code(&bad), -32602, "{bad:?}");
                let bad_mode = cx
                    .send_request(SetSessionModeRequest::new(sid.clone(), "reckless"))
                    .block_task()
                    .await
                    .expect_err("unknown mode");
                assert_eq!(error_code(&bad_mode), -32602);
                // set_mode maps to session/configure (SPEC §16): it works on a daemon that
                // has it, and is a clear -32601 on one that does not yet.
                match cx
                    .send_request(SetSessionModeRequest::new(sid.clone(), "full"))
                    .block_task()
                    .await
                {
                    Ok(_) => {}
                    Err(e) => {
                        assert_eq!(error_code(&e), -32601, "{e:?}");
                        assert!(e.message.contains("session/configure"), "{e:?}");
                    }
                }

                // A prompt while one runs.
                let first = cx
                    .send_request(PromptRequest::new(sid.clone(), text("slow please")))
                    .block_task();
                let second = cx
                    .send_request(PromptRequest::new(sid.clone(), text("me too")))
                    .block_task()
                    .await
                    .expect_err("busy");
                assert_eq!(error_code(&second), -32600, "{second:?}");
                assert_eq!(first.await?.stop_reason, StopReason::EndTurn);
                assert_eq!(seen.summary(&sid.0).last().unwrap().1, "slow one");

                // A failed turn: a JSON-RPC error carrying the provider's message.
                fake.push(Scripted::http_error(400, "the provider exploded"));
                let failed = cx
                    .send_request(PromptRequest::new(sid.clone(), text("fail please")))
                    .block_task()
                    .await
                    .expect_err("failed turn");
                assert_eq!(error_code(&failed), -32603, "{failed:?}");
                assert!(
                    failed.message.contains("the provider exploded"),
                    "{failed:?}"
                );
                Ok(())
            })
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", daemon.log()));

    // Frames no SDK would send: each gets its JSON-RPC error, and the agent goes on.
    let mut child = Command::new(BIN)
        .args(["acp", "--config-dir", dir.to_str().unwrap()])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |line: &str| -> Value {
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{answer:?}: {e}"))
    };
    assert_eq!(ask("not json")["error"]["code"], -32700);
    // Before `initialize`, every request is refused (SPEC §17.1): ACP requires it first.
    let early = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"session/new","params":{{"cwd":{:?},"mcpServers":[]}}}}"#,
        dir.to_str().unwrap()
    );
    let refused = ask(&early);
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(
        ask(r#"{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}"#)["error"]["code"],
        -32600
    );
    let init =
        ask(r#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}"#);
    assert_eq!(
        init["result"]["agentCapabilities"]["loadSession"], true,
        "{init}"
    );
    assert_eq!(init["result"]["authMethods"], json!([]));
    assert_eq!(
        ask(r#"{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":7}}"#)["error"]["code"],
        -32602
    );
    assert_eq!(
        ask(
            r#"{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"x","prompt":[{"type":"hologram"}]}}"#
        )["error"]["code"],
        -32602
    );
    assert_eq!(
        ask(r#"{"jsonrpc":"2.0","id":7,"method":"nope/nope","params":{}}"#)["error"]["code"],
        -32601
    );
    let created = ask(&early.replace("\"id\":1", "\"id\":8"));
    assert!(created["result"]["sessionId"].is_string(), "{created}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// The agent's `ask_user` question reaches an editor that declared elicitation, and its
/// answer goes back to the model.
#[test]
fn questions_are_forwarded_to_an_editor_that_declared_elicitation() {
    questions_are_forwarded_to_an_editor_that_declared_elicitation_over(Way::Stdio);
}

#[test]
fn questions_are_forwarded_to_an_editor_that_declared_elicitation_over_acp_on_the_gateway() {
    questions_are_forwarded_to_an_editor_that_declared_elicitation_over(Way::Gateway);
}

fn questions_are_forwarded_to_an_editor_that_declared_elicitation_over(way: Way) {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "call_q",
        "ask_user",
        json!({"question": "Favourite colour?"}),
    ));
    fake.push(Scripted::text("noted"));
    let config = common::session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let dir = daemon.config_dir().to_path_buf();
    let route = Route::new(&daemon, way);
    let seen = Arc::new(Seen::default());
    let caps = ClientCapabilities::new()
        .elicitation(ElicitationCapabilities::new().form(ElicitationFormCapabilities::new()));
    runtime()
        .block_on(async {
            with_acp!(
                route.connect().await,
                seen,
                InitializeRequest::new(ProtocolVersion::V1).client_capabilities(caps),
                |cx| {
                    let sid = cx
                        .send_request(NewSessionRequest::new(dir.clone()))
                        .block_task()
                        .await?
                        .session_id;
                    let done = cx
                        .send_request(PromptRequest::new(sid.clone(), text("ask me")))
                        .block_task()
                        .await?;
                    assert_eq!(done.stop_reason, StopReason::EndTurn);
                    Ok(())
                }
            )
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", daemon.log()));
    let questions = seen.questions.lock().unwrap();
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0].message, "Favourite colour?");
    let sent = completions(&fake.server)[1]["messages"].to_string();
    assert!(sent.contains("blue"), "{sent}");
}

/// With nothing serving the endpoint, `zeroclaw acp` starts an ephemeral daemon for its
/// config dir, which exits once `zeroclaw acp` is gone.
/// SPEC §18: a prompt another client sends in a session the editor opened reaches the
/// editor as a `user_message_chunk` before that turn's answer; the editor's own prompts
/// never come back to it.
#[test]
fn another_clients_prompt_reaches_the_editor_but_its_own_never_comes_back() {
    another_clients_prompt_reaches_the_editor_but_its_own_never_comes_back_over(Way::Stdio);
}

#[test]
fn another_clients_prompt_reaches_the_editor_but_its_own_never_comes_back_over_acp_on_the_gateway()
{
    another_clients_prompt_reaches_the_editor_but_its_own_never_comes_back_over(Way::Gateway);
}

fn another_clients_prompt_reaches_the_editor_but_its_own_never_comes_back_over(way: Way) {
    let daemon = TestDaemon::start();
    let dir = daemon.config_dir().to_path_buf();
    let route = Route::new(&daemon, way);
    let socket = daemon.socket.clone();
    let seen = Arc::new(Seen::default());
    runtime()
        .block_on(async {
            with_acp!(route.connect().await, seen, |cx| {
                let new = cx
                    .send_request(NewSessionRequest::new(dir.clone()))
                    .block_task()
                    .await?;
                let sid = new.session_id.clone();
                let done = cx
                    .send_request(PromptRequest::new(sid.clone(), text("mine first")))
                    .block_task()
                    .await?;
                assert_eq!(done.stop_reason, StopReason::EndTurn);

                // Another client prompts the same session (the echo agent repeats it).
                let other_sid = sid.0.to_string();
                let answer = tokio::task::spawn_blocking(move || {
                    let mut other = common::Conn::open(&socket);
                    other.call("initialize", json!({"protocolVersion": 1}));
                    other.prompt(&other_sid, "from elsewhere").1
                })
                .await
                .unwrap();
                assert_eq!(answer["result"]["outcome"], "completed", "{answer}");
                let shown = eventually(Duration::from_secs(20), || {
                    seen.summary(&sid.0)
                        .contains(&("agent_message_chunk".into(), "from elsewhere".into()))
                })
                .await;
                assert!(shown, "{:?}", seen.summary(&sid.0));

                let done = cx
                    .send_request(PromptRequest::new(sid.clone(), text("mine again")))
                    .block_task()
                    .await?;
                assert_eq!(done.stop_reason, StopReason::EndTurn);
                // (Neighbouring chunks are merged: the last two answers read as one.)
                assert_eq!(
                    seen.summary(&sid.0),
                    vec![
                        ("agent_message_chunk".into(), "mine first".into()),
                        ("user_message_chunk".into(), "from elsewhere".into()),
                        (
                            "agent_message_chunk".into(),
                            "from elsewheremine again".into()
                        ),
                    ]
                );
                Ok(())
            })
        })
        .unwrap_or_else(|e| panic!("acp session failed: {e:?}\n{}", daemon.log()));
}

#[test]
fn starts_an_ephemeral_daemon_when_none_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[providers.echo]\nkind = \"echo\"\n[agents.default]\nprovider = \"echo\"\n",
    )
    .unwrap();
    let socket = dir.path().join("data").join("daemon.sock");
    assert!(!socket.exists());
    let seen = Arc::new(Seen::default());
    let cwd = dir.path().to_path_buf();
    runtime()
        .block_on(async {
            with_acp!(agent(dir.path(), &[]), seen, |cx| {
                let sid = cx
                    .send_request(NewSessionRequest::new(cwd.clone()))
                    .block_task()
                    .await?
                    .session_id;
                assert!(socket.exists(), "no daemon socket");
                let done = cx
                    .send_request(PromptRequest::new(
                        sid.clone(),
                        text("hello from the editor"),
                    ))
                    .block_task()
                    .await?;
                assert_eq!(done.stop_reason, StopReason::EndTurn);
                assert_eq!(
                    seen.summary(&sid.0),
                    vec![("agent_message_chunk".into(), "hello from the editor".into())]
                );
                Ok(())
            })
        })
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while socket.exists() {
        assert!(
            Instant::now() < deadline,
            "the ephemeral daemon did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The daemon dies mid-turn: the prompt ends with an error, and the next request starts a
/// new ephemeral daemon and works.
#[test]
fn a_daemon_lost_mid_turn_fails_the_prompt_and_the_next_request_reconnects() {
    let fake = Fake::start();
    fake.push(Scripted::slow(
        Duration::from_secs(30),
        Scripted::text("never"),
    ));
    fake.push(Scripted::text("back again"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        common::session_config(&fake.server.base_url(), ""),
    )
    .unwrap();
    let socket = dir.path().join("data").join("daemon.sock");
    let seen = Arc::new(Seen::default());
    let cwd = dir.path().to_path_buf();
    let fake = &fake;
    runtime()
        .block_on(async {
            with_acp!(agent(dir.path(), &[]), seen, |cx| {
                let sid = cx
                    .send_request(NewSessionRequest::new(cwd.clone()))
                    .block_task()
                    .await?
                    .session_id;
                let pending = cx
                    .send_request(PromptRequest::new(sid.clone(), text("take your time")))
                    .block_task();
                assert!(
                    eventually(Duration::from_secs(10), || !completions(&fake.server)
                        .is_empty())
                    .await
                );
                let mut conn = common::Conn::open(&socket);
                conn.result("initialize", json!({"protocolVersion": 1}));
                let pid = conn.result("status", json!({}))["serverPid"]
                    .as_i64()
                    .unwrap();
                // SAFETY: killing the daemon this test started (through zeroclaw acp).
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                let failed = tokio::time::timeout(Duration::from_secs(10), pending)
                    .await
                    .expect("the prompt answered")
                    .expect_err("the daemon went away");
                assert_eq!(error_code(&failed), -32603, "{failed:?}");
                // The next request reconnects (a new ephemeral daemon), and the session
                // is still there (durable).
                let done = cx
                    .send_request(PromptRequest::new(sid.clone(), text("again")))
                    .block_task()
                    .await?;
                assert_eq!(done.stop_reason, StopReason::EndTurn);
                assert_eq!(seen.summary(&sid.0).last().unwrap().1, "back again");
                Ok(())
            })
        })
        .unwrap();
}

/// Time from writing a prompt to reading its first `agent_message_chunk`, over `rounds`
/// prompts on one NDJSON stream (raw frames on both paths, so only the hop differs).
fn first_chunk_latencies(
    mut write: impl FnMut(&str),
    mut read: impl FnMut() -> Value,
    session_id: &str,
    prompt_frame: impl Fn(u64, &str) -> String,
    rounds: u64,
) -> Vec<Duration> {
    let mut out = Vec::new();
    for i in 0..rounds {
        let id = 1000 + i;
        let start = Instant::now();
        write(&prompt_frame(id, session_id));
        let mut first = None;
        loop {
            let msg = read();
            let chunk = msg["method"] == "session/update"
                && (msg["params"]["type"] == "agent_message_chunk"
                    || msg["params"]["update"]["sessionUpdate"] == "agent_message_chunk");
            if chunk && first.is_none() {
                first = Some(start.elapsed());
            }
            if msg["id"] == json!(id) {
                break;
            }
        }
        out.push(first.expect("no chunk"));
    }
    out
}

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// `cargo test -p zeroclaw --test acp -- --ignored --nocapture`: p50 of prompt → first
/// `agent_message_chunk` directly on the daemon's socket (the prompting client is the
/// session's subscriber), through `zeroclaw acp`, and through the gateway's `/acp` (SPEC
/// §25; loopback, no TLS), echo agent. The three take turns, one prompt each, so a busy
/// machine weighs on all of them alike.
#[test]
#[ignore = "benchmark, not a check: run with --ignored --nocapture (figures in docs/BENCHMARKS.md)"]
fn bench_first_chunk_latency() {
    const ROUNDS: u64 = 200;
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            "[providers.echo]\nkind = \"echo\"\n[agents.default]\nprovider = \"echo\"\n",
        )
        .unwrap();
    });
    let dir = daemon.config_dir().to_path_buf();
    // Empty cwds: the turn-start file checkpoint (SPEC §18) of the config dir, whose
    // SQLite files change every turn, would otherwise be most of what is measured.
    let cwd = tempfile::tempdir().unwrap();
    let daemon_prompt = |id: u64, sid: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": sid, "prompt": "ping"}})
        .to_string()
    };
    let acp_prompt = |id: u64, sid: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "ping"}]}})
        .to_string()
    };
    let acp_new = json!({"jsonrpc":"2.0","id":2,"method":"session/new",
        "params":{"cwd": cwd.path(), "mcpServers": []}})
    .to_string();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;

    // Directly on the socket.
    let mut conn = daemon.client();
    let sid = conn.result(
        "session/new",
        json!({"agentAlias": "default", "cwd": cwd.path()}),
    )["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let conn = std::cell::RefCell::new(conn);
    let mut direct_write = |line: &str| conn.borrow_mut().send(line);
    let mut direct_read = || conn.borrow_mut().recv();

    // Through `zeroclaw acp`.
    let mut child = Command::new(BIN)
        .args(["acp", "--config-dir", dir.to_str().unwrap()])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = std::cell::RefCell::new(child.stdin.take().unwrap());
    let stdout = std::cell::RefCell::new(BufReader::new(child.stdout.take().unwrap()));
    let mut stdio_write = |line: &str| {
        stdin
            .borrow_mut()
            .write_all(format!("{line}\n").as_bytes())
            .unwrap()
    };
    let mut stdio_read = || {
        let mut line = String::new();
        stdout.borrow_mut().read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()
    };
    stdio_write(init);
    stdio_read();
    stdio_write(&acp_new);
    let stdio_sid = stdio_read()["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();

    // Through the gateway's `/acp`, as the operator with a dashboard token.
    let route = Route::new(&daemon, Way::Gateway);
    let (port, token) = route.gateway.clone().unwrap();
    let rt = runtime();
    let ws = rt.block_on(async {
        let mut request = format!("ws://127.0.0.1:{port}/acp")
            .into_client_request()
            .unwrap();
        request
            .headers_mut()
            .insert("Authorization", format!("Bearer {token}").parse().unwrap());
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        tcp.set_nodelay(true).unwrap();
        tokio_tungstenite::client_async(request, tcp)
            .await
            .unwrap()
            .0
    });
    let ws = std::cell::RefCell::new(ws);
    let mut ws_write = |line: &str| {
        rt.block_on(
            ws.borrow_mut()
                .send(WsMessage::Text(line.to_string().into())),
        )
        .unwrap()
    };
    let mut ws_read = || {
        loop {
            if let Some(Ok(WsMessage::Text(text))) = rt.block_on(ws.borrow_mut().next()) {
                break serde_json::from_str::<Value>(&text).unwrap();
            }
        }
    };
    ws_write(init);
    ws_read();
    ws_write(&acp_new);
    let ws_sid = ws_read()["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();

    let (mut direct, mut stdio, mut gateway) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        direct.extend(first_chunk_latencies(
            &mut direct_write,
            &mut direct_read,
            &sid,
            daemon_prompt,
            1,
        ));
        stdio.extend(first_chunk_latencies(
            &mut stdio_write,
            &mut stdio_read,
            &stdio_sid,
            acp_prompt,
            1,
        ));
        gateway.extend(first_chunk_latencies(
            &mut ws_write,
            &mut ws_read,
            &ws_sid,
            acp_prompt,
            1,
        ));
    }
    drop(stdin);
    let _ = child.wait();
    let (d, a, g) = (p50(direct), p50(stdio), p50(gateway));
    println!(
        "prompt → first agent_message_chunk, p50 over {ROUNDS}: direct {d:?}, through zeroclaw acp {a:?} (added {:?}), through /acp {g:?} (added {:?})",
        a.saturating_sub(d),
        g.saturating_sub(d)
    );
}
