//! The typed session layer against a scripted peer over an in-memory pipe: a prompt stays
//! pending while the application reads updates, approves, and answers an elicitation
//! request whose id (`zc-out-0`) equals the client's own outbound id in flight.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use zeroclaw_client::{
    Client, ClientError, Decision, ElicitationAnswer, Event, Outcome, SessionNewParams, UpdateKind,
};

/// The daemon's side of the pipe.
struct Peer {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
}

impl Peer {
    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("peer waited too long")
            .expect("read")
            .expect("client closed");
        serde_json::from_str(&line).expect("client sent JSON")
    }

    async fn send(&mut self, msg: Value) {
        let mut line = msg.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.expect("write");
    }

    async fn update(&mut self, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": "session/update", "params": params}))
            .await;
    }

    async fn reply(&mut self, request: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
            .await;
    }
}

fn pair() -> (Client, Peer) {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let client = Client::over(ar, aw);
    let peer = Peer {
        lines: BufReader::new(br).lines(),
        writer: bw,
    };
    (client, peer)
}

#[tokio::test]
async fn prompt_runs_while_the_app_approves_and_answers_questions() {
    let (client, mut peer) = pair();
    let (handle, mut events) = client.split();

    let daemon = tokio::spawn(async move {
        let new = peer.recv().await;
        assert_eq!(new["method"], "session/new");
        assert_eq!(
            new["params"],
            json!({"agentAlias": "default", "sessionId": "s1"})
        );
        peer.reply(
            &new,
            json!({"sessionId": "s1", "agentAlias": "default", "mode": "acp",
                   "messageCount": 0, "workspaceDir": "/w", "resumed": false}),
        )
        .await;

        let prompt = peer.recv().await;
        assert_eq!(prompt["method"], "session/prompt");
        assert_eq!(prompt["params"], json!({"sessionId": "s1", "prompt": "hi"}));
        // Our outbound numbering starts at zc-out-0 too: the same id in both directions.
        assert_eq!(prompt["id"], "zc-out-1");
        peer.update(json!({"sessionId": "s1", "type": "agent_message_chunk", "text": "Hel"}))
            .await;
        peer.update(
            json!({"sessionId": "s1", "type": "tool_call", "toolCallId": "tc_1",
                           "name": "bash", "rawInput": {"command": "ls"}}),
        )
        .await;
        peer.update(
            json!({"sessionId": "s1", "type": "approval_request", "requestId": "ap-1",
                           "toolName": "bash", "argumentsSummary": "ls", "timeoutSecs": 120}),
        )
        .await;
        let approve = peer.recv().await;
        assert_eq!(approve["method"], "session/approve");
        assert_eq!(
            approve["params"],
            json!({"sessionId": "s1", "requestId": "ap-1", "decision": "allow_always"})
        );
        peer.reply(
            &approve,
            json!({"sessionId": "s1", "requestId": "ap-1", "acknowledged": true}),
        )
        .await;
        peer.update(
            json!({"sessionId": "s1", "type": "tool_result", "toolCallId": "tc_1",
                           "name": "bash", "rawOutput": "a.txt"}),
        )
        .await;

        peer.send(json!({"jsonrpc": "2.0", "id": "zc-out-0", "method": "elicitation/create",
            "params": {"sessionId": "s1", "mode": "form", "message": "Colour?",
                "requestedSchema": {"type": "object", "properties": {"choice": {
                    "oneOf": [{"const": "red", "title": "Red"}, {"const": "blue", "title": "Blue"}]}}}}}))
            .await;
        let answer = peer.recv().await;
        assert_eq!(answer["id"], "zc-out-0");
        assert_eq!(
            answer["result"],
            json!({"action": "accept", "content": {"choice": "blue"}})
        );
        assert!(answer.get("method").is_none());

        peer.update(json!({"sessionId": "s1", "type": "agent_message_chunk", "text": "lo"}))
            .await;
        let done =
            json!({"sessionId": "s1", "turnId": "t1", "outcome": "completed", "content": "Hello"});
        let mut complete = done.clone();
        complete["type"] = json!("turn_complete");
        complete["eventSeq"] = json!(5);
        peer.update(complete).await;
        peer.reply(&prompt, done).await;

        // A later turn that the app cancels (the two requests may arrive in either order).
        let (a, b) = (peer.recv().await, peer.recv().await);
        let (prompt, cancel) = if a["method"] == "session/prompt" {
            (a, b)
        } else {
            (b, a)
        };
        assert_eq!(prompt["method"], "session/prompt");
        assert_eq!(cancel["method"], "session/cancel");
        assert_eq!(cancel["params"], json!({"sessionId": "s1"}));
        peer.reply(&cancel, json!({"sessionId": "s1", "cancelled": true}))
            .await;
        peer.reply(
            &prompt,
            json!({"sessionId": "s1", "turnId": "t2", "outcome": "cancelled",
                   "content": ""}),
        )
        .await;

        // And one the daemon refuses.
        let prompt = peer.recv().await;
        peer.send(json!({"jsonrpc": "2.0", "id": prompt["id"],
                         "error": {"code": -32002, "message": "session s1 is busy"}}))
            .await;
        peer
    });

    let info = handle
        .new_session(&SessionNewParams::agent("default").with_id("s1"))
        .await
        .unwrap();
    assert_eq!(info.session_id, "s1");
    assert_eq!(info.workspace_dir, "/w");

    let turn = {
        let handle = handle.clone();
        tokio::spawn(async move { handle.prompt("s1", "hi").await })
    };
    let mut text = String::new();
    let mut seen = Vec::new();
    let mut complete = None;
    while complete.is_none() {
        match events
            .next_within(Duration::from_secs(10))
            .await
            .expect("event")
        {
            Event::Update(u) => {
                assert_eq!(u.session_id, "s1");
                match u.kind {
                    UpdateKind::AgentMessageChunk { text: t } => text.push_str(&t),
                    UpdateKind::ApprovalRequest { request_id, .. } => {
                        handle
                            .approve("s1", &request_id, Decision::AllowAlways)
                            .await
                            .unwrap();
                        seen.push("approved");
                    }
                    UpdateKind::ToolCall { name, .. } => {
                        seen.push(if name == "bash" { "tool_call" } else { "?" })
                    }
                    UpdateKind::ToolResult { raw_output, .. } => {
                        assert_eq!(raw_output, "a.txt");
                        seen.push("tool_result");
                    }
                    UpdateKind::TurnComplete {
                        outcome, content, ..
                    } => complete = Some((outcome, content)),
                    other => panic!("unexpected update {other:?}"),
                }
            }
            Event::Elicitation(req) => {
                assert_eq!(req.message, "Colour?");
                let answer = req.answer_from_input("2").unwrap();
                handle.answer_elicitation(&req, &answer).await.unwrap();
                seen.push("answered");
            }
            Event::Other(other) => panic!("unexpected message {other:?}"),
        }
    }
    assert_eq!(seen, ["tool_call", "approved", "tool_result", "answered"]);
    assert_eq!(text, "Hello");
    let result = turn.await.unwrap().unwrap();
    assert_eq!(
        complete,
        Some((Outcome::Completed, "Hello".to_string())),
        "turn_complete carries the answer's outcome and content"
    );
    assert_eq!(result.outcome, Outcome::Completed);
    assert_eq!(result.content, "Hello");
    assert_eq!(result.turn_id, "t1");

    let turn = {
        let handle = handle.clone();
        tokio::spawn(async move { handle.prompt("s1", "long").await })
    };
    handle.cancel("s1").await.unwrap();
    let result = turn.await.unwrap().unwrap();
    assert_eq!(result.outcome, Outcome::Cancelled);

    match handle.prompt("s1", "again").await {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, -32002),
        other => panic!("expected -32002, got {other:?}"),
    }
    drop(daemon.await.unwrap());
    // The peer is gone: the queue ends and calls fail as closed.
    assert!(events.next_within(Duration::from_secs(5)).await.is_none());
    assert!(matches!(
        handle.cancel("s1").await,
        Err(ClientError::Closed)
    ));
}

#[tokio::test]
async fn the_old_api_still_works_on_client() {
    let (mut client, mut peer) = pair();
    let daemon = tokio::spawn(async move {
        let init = peer.recv().await;
        assert_eq!(
            init["params"]["clientCapabilities"],
            json!({"elicitation": {}})
        );
        peer.reply(
            &init,
            json!({"protocolVersion": 1, "serverVersion": "0.1.0", "protocol_version": 1,
                   "server_version": "0.1.0", "serverPid": 7,
                   "principal": {"id": "operator", "admin": true},
                   "capabilities": ["initialize", "status"],
                   "limits": {"maxFrameBytes": 8388608, "maxUploadBytes": 10485760,
                              "uploadChunkBytes": 1048576}}),
        )
        .await;
        peer.update(json!({"sessionId": "s", "type": "agent_message_chunk", "text": "x"}))
            .await;
        peer.send(
            json!({"jsonrpc": "2.0", "id": 5, "method": "elicitation/create",
                         "params": {"sessionId": "s", "mode": "form", "message": "?",
                                    "requestedSchema": {"type": "object"}}}),
        )
        .await;
        let answer = peer.recv().await;
        assert_eq!(
            answer,
            json!({"jsonrpc": "2.0", "id": 5, "result": {"action": "decline"}})
        );
        peer
    });
    let init = client.initialize("test", true).await.unwrap();
    assert_eq!(init["protocolVersion"], 1);
    let init: zeroclaw_client::protocol::system::InitializeResult =
        serde_json::from_value(init).unwrap();
    assert_eq!(init.server_pid, 7);
    let first = client
        .next_event_within(Duration::from_secs(5))
        .await
        .unwrap();
    assert!(matches!(Event::from_message(first), Event::Update(_)));
    let Some(Event::Elicitation(req)) = client.events().next().await else {
        panic!("expected an elicitation");
    };
    client
        .answer_elicitation(&req, &ElicitationAnswer::Decline)
        .await
        .unwrap();
    drop(daemon.await.unwrap());
}

// Paused clock: every task here is in process, so a timer only fires once all of them wait.
#[tokio::test(start_paused = true)]
async fn many_updates_are_never_dropped() {
    let (client, mut peer) = pair();
    let (_handle, mut events) = client.split();
    const N: usize = 10_000;
    // More updates than the event queue holds: the reader waits for room (backpressure)
    // instead of dropping any, while the application reads them.
    let daemon = tokio::spawn(async move {
        for i in 0..N {
            peer.update(
                json!({"sessionId": "s", "type": "agent_message_chunk", "text": i.to_string()}),
            )
            .await;
        }
        peer
    });
    // Not a guess at how long the producer needs: with the clock paused this sleep ends only
    // once every task waits, i.e. the producer is blocked on the full queue.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for i in 0..N {
        let Some(Event::Update(u)) = events.next_within(Duration::from_secs(5)).await else {
            panic!("update {i} missing");
        };
        assert_eq!(
            u.kind,
            UpdateKind::AgentMessageChunk {
                text: i.to_string()
            }
        );
    }
    let _peer = daemon.await.unwrap();
}

#[tokio::test]
async fn call_typed_sends_the_tables_name_and_params_and_decodes_the_result() {
    use zeroclaw_client::protocol::call;
    use zeroclaw_client::protocol::session::{ListParams, ListResult};

    let (client, mut peer) = pair();
    let (handle, _events) = client.split();
    let daemon = tokio::spawn(async move {
        let list = peer.recv().await;
        assert_eq!(list["method"], "session/list");
        assert_eq!(list["params"], json!({"limit": 2, "search": "x"}));
        peer.reply(&list, json!({"sessions": [], "nextCursor": "c2"}))
            .await;
        peer
    });
    let params = ListParams {
        mode: None,
        limit: Some(2),
        cursor: None,
        search: Some("x".into()),
        cwd: None,
    };
    let page: ListResult = handle
        .call_typed::<call::SessionList>(&params)
        .await
        .expect("session/list");
    assert_eq!(page.next_cursor.as_deref(), Some("c2"));
    assert!(page.sessions.is_empty());
    drop(daemon.await.expect("peer"));
}
