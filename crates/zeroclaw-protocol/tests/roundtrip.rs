//! Every example of SPEC §4–§8 and §14–§17, written out as JSON with the SPEC's exact wire
//! names: each parses into its vocabulary type, serializes back to the same JSON value, and
//! validates against the published schema.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use zeroclaw_protocol::config::*;
use zeroclaw_protocol::files::*;
use zeroclaw_protocol::history::*;
use zeroclaw_protocol::schema::document;
use zeroclaw_protocol::session::*;
use zeroclaw_protocol::stream::*;
use zeroclaw_protocol::system::*;
use zeroclaw_protocol::update::{ElicitationParams, ElicitationResult};
use zeroclaw_protocol::validate::validate;
use zeroclaw_protocol::{Decision, Method, Mode, SessionUpdate, UpdateKind, decode};

/// Parses `wire` as `T`, serializes it back and compares.
fn round_trip<T: DeserializeOwned + Serialize>(wire: Value) -> T {
    let typed: T = serde_json::from_value(wire.clone())
        .unwrap_or_else(|e| panic!("{wire} does not parse: {e}"));
    let back = serde_json::to_value(&typed).expect("serialize");
    assert_eq!(back, wire, "round trip changed the value");
    typed
}

/// Checks `wire` against `#/methods/<method>/<part>` of the schema document.
fn schema_ok(method: &str, part: &str, wire: &Value) {
    let doc = document();
    let schema = json!({"$ref": format!("#/methods/{}/{part}", method.replace('/', "~1"))});
    if let Err(e) = validate(&doc, &schema, wire) {
        panic!("{method} {part} {wire} fails the schema: {e}");
    }
}

fn params<T: DeserializeOwned + Serialize>(method: &str, wire: Value) -> T {
    assert!(Method::from_name(method).is_some(), "{method}");
    schema_ok(method, "params", &wire);
    round_trip(wire)
}

fn result<T: DeserializeOwned + Serialize>(method: &str, wire: Value) -> T {
    schema_ok(method, "result", &wire);
    round_trip(wire)
}

fn update(wire: Value) -> SessionUpdate {
    let doc = document();
    let schema = json!({"$ref": "#/notifications/session~1update/params"});
    if let Err(e) = validate(&doc, &schema, &wire) {
        panic!("update {wire} fails the schema: {e}");
    }
    round_trip(wire)
}

#[test]
fn handshake_and_daemon_methods() {
    let p: InitializeParams = params(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "t", "version": "1"},
               "clientCapabilities": {"elicitation": {}}, "authToken": "tok"}),
    );
    assert!(p.client_capabilities.is_some_and(|c| c.elicitation()));
    let _: InitializeParams = params("initialize", json!({}));
    let r: InitializeResult = result(
        "initialize",
        json!({"protocolVersion": 1, "serverVersion": "0.1.0", "protocol_version": 1,
               "server_version": "0.1.0", "serverPid": 42,
               "principal": {"id": "operator", "admin": true},
               "capabilities": ["initialize", "status"],
               "limits": {"maxFrameBytes": 8388608, "maxUploadBytes": 10485760,
                          "uploadChunkBytes": 1048576}}),
    );
    let built = InitializeResult::new("0.1.0", 42, r.principal.clone(), r.capabilities.clone());
    assert_eq!(built, r);
    let _: StatusResult = result(
        "status",
        json!({"protocolVersion": 1, "serverVersion": "0.1.0", "serverPid": 7,
               "uptimeSecs": 3, "endpoint": "/d/daemon.sock", "configDir": "/c",
               "dataDir": "/c/data", "connections": 2, "activeSessions": 1,
               "sessionIds": ["s1"],
               "sessionCounts": {"live": 1, "running": 0, "waiting": 1, "idle": 0},
               "gateway": null}),
    );
    // A non-admin principal is not shown the host fields.
    let _: StatusResult = result(
        "status",
        json!({"protocolVersion": 1, "serverVersion": "0.1.0", "uptimeSecs": 3,
               "connections": 2, "activeSessions": 0, "sessionIds": [],
               "sessionCounts": {"live": 0, "running": 0, "waiting": 0, "idle": 0},
               "gateway": {"url": "http://127.0.0.1:9781/"}}),
    );
    // SPEC §20: the dashboard's login.
    let p: InitializeParams = params(
        "initialize",
        json!({"protocolVersion": 1, "authCode": "zcl_00"}),
    );
    assert_eq!(p.auth_code.as_deref(), Some("zcl_00"));
    let r: InitializeResult = result(
        "initialize",
        json!({"protocolVersion": 1, "serverVersion": "0.1.0", "protocol_version": 1,
               "server_version": "0.1.0", "serverPid": 42,
               "principal": {"id": "operator", "admin": true},
               "capabilities": ["initialize"],
               "limits": {"maxFrameBytes": 8388608, "maxUploadBytes": 10485760,
                          "uploadChunkBytes": 1048576},
               "authToken": "zcs_11"}),
    );
    assert_eq!(r.auth_token.as_deref(), Some("zcs_11"));
    let _: NoParams = params("gateway/start", json!({}));
    let _: zeroclaw_protocol::gateway::GatewayInfo =
        result("gateway/start", json!({"url": "http://127.0.0.1:9781/"}));
    let _: zeroclaw_protocol::gateway::DashboardLoginResult = result(
        "dashboard/login",
        json!({"url": "http://127.0.0.1:9781/#code=zcl_00", "code": "zcl_00",
               "expiresAt": 1764860400000_i64}),
    );
    let _: ShutdownResult = result("daemon/shutdown", json!({"shuttingDown": true}));
    let _: ModelsListParams = params("models/list", json!({"agentAlias": "default"}));
    let sub: zeroclaw_protocol::push::PushSubscribeParams = params(
        "push/subscribe",
        json!({"endpoint": "https://push.example/x", "keys": {"p256dh": "BCVx", "auth": "BTBZ"}}),
    );
    assert_eq!(sub.keys.auth, "BTBZ");
    let _: zeroclaw_protocol::push::PushSubscribeResult =
        result("push/subscribe", json!({"subscribed": true}));
    let _: zeroclaw_protocol::push::PushUnsubscribeParams = params(
        "push/unsubscribe",
        json!({"endpoint": "https://push.example/x"}),
    );
    let _: zeroclaw_protocol::push::PushUnsubscribeResult =
        result("push/unsubscribe", json!({"unsubscribed": false}));
    let _: zeroclaw_protocol::push::PushKeyResult =
        result("push/key", json!({"publicKey": "BP4z"}));
    let _: zeroclaw_protocol::skills::SkillsListParams =
        params("skills/list", json!({"cwd": "/repo"}));
    let _: zeroclaw_protocol::skills::SkillsListResult = result(
        "skills/list",
        json!({"skills": [{"name": "pdf", "description": "Fill PDF forms",
                           "path": "/repo/.claude/skills/pdf", "source": ".claude"}]}),
    );
    let _: ModelsListResult = result(
        "models/list",
        json!({"models": [{"provider": "echo", "model": "echo", "current": true},
                          {"provider": "local", "model": "llama3.2", "current": true,
                           "error": "connection refused"}]}),
    );
}

#[test]
fn configuration() {
    let _: ConfigGetParams = params("config/get", json!({"prop": "agents.default.model"}));
    let r: ConfigGetResult = result("config/get", json!({"prop": "a.b", "value": 3}));
    assert!(matches!(r, ConfigGetResult::Prop { .. }));
    let r: ConfigGetResult = result("config/get", json!({"config": {"agents": {}}}));
    assert!(matches!(r, ConfigGetResult::Whole { .. }));
    let _: ConfigSetParams = params(
        "config/set",
        json!({"prop": "permission_profiles.operator", "value": {"admin": false}}),
    );
    let _: ConfigSetResult = result(
        "config/set",
        json!({"prop": "users.example.uid", "set": true, "restartRequired": false}),
    );
    let _: ConfigSetManyParams = params(
        "config/set-many",
        json!({"sets": [{"prop": "a", "value": 1}, {"prop": "b", "value": "x"}]}),
    );
    let _: ConfigSetManyResult = result(
        "config/set-many",
        json!({"props": ["a", "b"], "set": true, "restartRequired": true}),
    );
    let _: ConfigDeleteParams = params("config/delete", json!({"prop": "users.example"}));
    let _: ConfigDeleteResult = result(
        "config/delete",
        json!({"prop": "users.example", "deleted": true, "restartRequired": false}),
    );
    // Unknown fields are refused for config params, as the daemon does.
    assert!(decode::<ConfigSetParams>(Some(json!({"prop": "a", "value": 1, "x": 0}))).is_err());
}

#[test]
fn rewind_fork_and_titles() {
    let _: RewindParams = params(
        "session/rewind",
        json!({"sessionId": "s1", "mode": "acp", "turnId": "t2", "restoreFiles": false}),
    );
    let _: RewindParams = params(
        "session/rewind",
        json!({"sessionId": "s1", "turnId": "t2", "force": true}),
    );
    let _: RewindResult = result(
        "session/rewind",
        json!({"sessionId": "s1", "rewoundTurns": ["t2", "t3"], "prompt": "p2",
               "restoredFiles": ["a.txt"],
               "unrestorable": [{"path": "big.bin", "reason": "over 10 MiB"}],
               "conflicts": [{"path": "b.txt",
                              "reason": "changed by someone else, not by the rewound turns"}]}),
    );
    let _: ForkParams = params("session/fork", json!({"sessionId": "s1", "turnId": "t1"}));
    let _: ForkResult = result(
        "session/fork",
        json!({"sessionId": "s2", "forkedFrom": {"sessionId": "s1", "turnId": "t1"},
               "messageCount": 2}),
    );
    let _: SetTitleParams = params(
        "session/set_title",
        json!({"sessionId": "s1", "title": "Fix the build"}),
    );
    let _: SetTitleResult = result(
        "session/set_title",
        json!({"sessionId": "s1", "title": "Fix the build"}),
    );
    let _: MessagesParams = params(
        "session/messages",
        json!({"sessionId": "s1", "includeRewound": true}),
    );
    let _: MessagesResult = result(
        "session/messages",
        json!({"sessionId": "s1", "messages": [{"seq": 3, "role": "user", "content": "p2",
               "turnId": "t2", "createdAt": 1, "rewound": true}], "total": 6}),
    );
    let u = update(
        json!({"sessionId": "s1", "type": "session_rewound", "turnId": "t9",
                          "eventSeq": 1, "toTurnId": "t2", "rewoundTurns": ["t2"],
                          "restoredFiles": []}),
    );
    assert!(matches!(u.kind, UpdateKind::SessionRewound { .. }));
}

#[test]
fn session_lifecycle() {
    let p: SessionNewParams = params(
        "session/new",
        json!({"agentAlias": "default", "sessionId": "s1", "cwd": "/w", "mode": "chat",
               "mcpServers": [{"name": "fs", "command": "mcp-fs", "args": ["-v"],
                               "env": [{"name": "K", "value": "V"}]}]}),
    );
    assert_eq!(p.mode, Some(Mode::Chat));
    let _: SessionNewResult = result(
        "session/new",
        json!({"sessionId": "s1", "agentAlias": "default", "mode": "acp", "messageCount": 0,
               "workspaceDir": "/c/agents/default/workspace", "resumed": false}),
    );
    let _: SessionPromptParams = params(
        "session/prompt",
        json!({"sessionId": "s1", "prompt": "hello",
               "attachments": [{"dataB64": "aGk=", "filename": "a.txt", "mimeType": "text/plain"}]}),
    );
    let _: SessionPromptParams = params(
        "session/prompt",
        json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    let _: TurnResult = result(
        "session/prompt",
        json!({"sessionId": "s1", "turnId": "t1", "outcome": "completed", "content": "hello"}),
    );
    let _: TurnResult = result(
        "session/prompt",
        json!({"sessionId": "s1", "turnId": "t1", "outcome": "failed", "content": "x",
               "truncated": true, "usage": {"inputTokens": 10, "outputTokens": 2}}),
    );
    let _: SessionRef = params("session/cancel", json!({"sessionId": "s1"}));
    let _: CancelResult = result(
        "session/cancel",
        json!({"sessionId": "s1", "cancelled": true}),
    );
    let p: ApproveParams = params(
        "session/approve",
        json!({"sessionId": "s1", "requestId": "r1", "decision": "reject_with_edit",
               "replacement": {"command": "ls"}}),
    );
    assert_eq!(p.decision, Decision::RejectWithEdit);
    let _: ApproveResult = result(
        "session/approve",
        json!({"sessionId": "s1", "requestId": "r1", "acknowledged": true}),
    );
    let _: CloseResult = result("session/close", json!({"sessionId": "s1", "closed": true}));
    let _: KillResult = result("session/kill", json!({"sessionId": "s1", "killed": true}));
    let _: SessionRef = params("session/delete", json!({"sessionId": "s1", "mode": "acp"}));
    let _: DeleteResult = result(
        "session/delete",
        json!({"sessionId": "s1", "deleted": true}),
    );
    let _: ListParams = params(
        "session/list",
        json!({"mode": "acp", "limit": 500, "cursor": "c"}),
    );
    let _: ListResult = result(
        "session/list",
        json!({"sessions": [{"sessionId": "s1", "mode": "acp", "agentAlias": "default",
                             "createdAt": 1700000000000i64, "lastActivity": 1700000000001i64,
                             "messageCount": 2, "live": true, "interactionSurface": "rpc",
                             "activeTurnId": "t2", "subscribers": 1,
                             "title": "Fix the build",
                             "forkedFrom": {"sessionId": "s0", "turnId": "t9"},
                             "cwd": "/home/u/proj"}],
               "nextCursor": null}),
    );
    let _: ListParams = params("session/list", json!({"search": "build"}));
    let _: MessagesParams = params(
        "session/messages",
        json!({"sessionId": "s1", "limit": 10, "beforeSeq": 5}),
    );
    let _: MessagesResult = result(
        "session/messages",
        json!({"sessionId": "s1", "total": 3, "messages": [
            {"seq": 1, "role": "user", "content": "hi", "turnId": "t1", "createdAt": 1},
            {"seq": 2, "role": "assistant", "content": "x", "turnId": "t1", "createdAt": 2,
             "truncated": true},
            {"seq": 3, "role": "interruption", "content": "[interrupted]", "turnId": null,
             "createdAt": 3}]}),
    );
}

#[test]
fn streams_and_settings() {
    let _: SubscribeParams = params(
        "session/subscribe",
        json!({"sessionId": "s1", "turnId": "t1", "afterEventSeq": 4}),
    );
    let _: SubscribeResult = result(
        "session/subscribe",
        json!({"sessionId": "s1", "subscribed": true, "activeTurnId": null,
               "lastTranscriptSeq": 12, "pendingApprovals": ["r1"]}),
    );
    let _: UnsubscribeResult = result(
        "session/unsubscribe",
        json!({"sessionId": "s1", "subscribed": false}),
    );
    let _: ConfigureParams = params(
        "session/configure",
        json!({"sessionId": "s1", "autonomy": "read_only", "model": "m2"}),
    );
    let _: ConfigureResult = result(
        "session/configure",
        json!({"sessionId": "s1", "autonomy": "full", "model": "m2"}),
    );
    let _: SessionStatusResult = result(
        "session/status",
        json!({"sessionId": "s1", "mode": "chat", "agentAlias": "default", "autonomy": "supervised",
               "model": "m", "activeTurnId": "t3", "queuedPrompts": 0, "subscribers": 2,
               "usage": {"sessionTotalTokens": 120, "contextTokens": 80,
                         "contextWindow": 32000},
               "mcpServers": [{"name": "fs", "state": "ready", "tools": ["fs__read"]},
                              {"name": "bad", "state": "failed", "tools": [],
                               "error": "exited", "pid": 4242}],
               "replayBytes": 2048, "sandbox": "landlock v7", "cwd": "/home/u/proj",
               "provider": "openai",
               "instructions": [{"path": "/repo/AGENTS.md", "bytes": 120}],
               "shells": [{"shellId": "sh1", "command": "npm run dev", "startedAt": 1_765_000_000_000_i64,
                           "pid": 4321, "running": false, "exitCode": 0}]}),
    );
    assert!(
        decode::<ConfigureParams>(Some(json!({"sessionId": "s", "autonomy": "wild"}))).is_err()
    );
}

#[test]
fn files() {
    let _: AttachParams = params(
        "file/attach",
        json!({"sessionId": "s1", "files": [{"dataB64": "aGk="}, {"path": "/tmp/a.png",
               "mimeType": "image/png"}]}),
    );
    let entry = json!({"ref_id": "sha256:ab", "marker": "[Document: a.txt] /w/uploads/ab.txt",
                       "workspace_path": "/w/uploads/ab.txt", "size_bytes": 2,
                       "deduplicated": false});
    let _: AttachResult = result("file/attach", json!({"files": [entry.clone()]}));
    let _: UploadBeginParams = params(
        "file/upload/begin",
        json!({"sessionId": "s1", "sizeBytes": 2, "filename": "a.txt", "sha256": "ab"}),
    );
    let _: UploadBeginResult = result(
        "file/upload/begin",
        json!({"upload_id": "u1", "chunk_bytes": 1048576, "max_bytes": 10485760}),
    );
    let _: UploadChunkParams = params(
        "file/upload/chunk",
        json!({"uploadId": "u1", "offset": 0, "dataB64": "aGk="}),
    );
    let _: UploadChunkResult = result(
        "file/upload/chunk",
        json!({"upload_id": "u1", "received_bytes": 2}),
    );
    let _: UploadCommitParams = params("file/upload/commit", json!({"uploadId": "u1"}));
    let _: StoredFile = result("file/upload/commit", entry);
}

#[test]
fn updates_of_every_kind() {
    // The examples of SPEC §7.2, without the envelope's `turnId` and `eventSeq`.
    update(json!({"sessionId":"…","type":"agent_message_chunk","text":"Hello"}));
    update(
        json!({"sessionId":"…","type":"tool_call","toolCallId":"tc_1","name":"bash",
                  "rawInput":{"command":"ls"}}),
    );
    update(
        json!({"sessionId":"…","type":"tool_result","toolCallId":"tc_1","name":"bash",
                  "rawOutput":"…"}),
    );
    let env = |kind: Value| {
        let mut v = json!({"sessionId": "s1", "turnId": "t1", "eventSeq": 3});
        v.as_object_mut()
            .unwrap()
            .extend(kind.as_object().unwrap().clone());
        v
    };
    let kinds = [
        json!({"type": "agent_thought_chunk", "text": "hmm"}),
        json!({"type": "approval_request", "requestId": "r1", "toolName": "bash",
               "argumentsSummary": "ls", "timeoutSecs": 120}),
        json!({"type": "approval_resolved", "requestId": "r1", "decision": "allow_once",
               "reason": "answered"}),
        json!({"type": "history_trimmed", "droppedMessages": 4, "keptMessages": 2,
               "checkpointSeq": 9, "reason": "max_context_tokens"}),
        json!({"type": "usage", "inputTokens": 10, "outputTokens": 2,
               "sessionTotalTokens": 12, "contextTokens": 12, "contextWindow": 32000,
               "estimated": true}),
        json!({"type": "turn_complete", "outcome": "completed", "content": "hello",
               "usage": {"inputTokens": 10, "outputTokens": 2}}),
    ];
    for kind in kinds {
        update(env(kind));
    }
    // A replayed event, and the gap marker that starts a replay missing old events.
    let u = update(
        json!({"replay": true, "sessionId": "s1", "turnId": "t1", "eventSeq": 1,
                          "type": "agent_message_chunk", "text": "a"}),
    );
    assert!(u.replay);
    let gap = update(
        json!({"sessionId": "s1", "type": "replay_gap", "turnId": "t1",
                            "firstEventSeq": 7}),
    );
    assert_eq!(gap.kind, UpdateKind::ReplayGap { first_event_seq: 7 });
    assert_eq!(gap.turn_id.as_deref(), Some("t1"));
    // An unknown type or a missing field is refused by both the type and the schema.
    let doc = document();
    let schema = json!({"$ref": "#/notifications/session~1update/params"});
    for bad in [
        json!({"sessionId": "s1", "type": "nope"}),
        json!({"sessionId": "s1", "type": "agent_message_chunk"}),
        json!({"type": "agent_message_chunk", "text": "x"}),
    ] {
        assert!(
            serde_json::from_value::<SessionUpdate>(bad.clone()).is_err(),
            "{bad}"
        );
        assert!(validate(&doc, &schema, &bad).is_err(), "{bad}");
    }
}

#[test]
fn elicitation() {
    let doc = document();
    let ask = json!({"sessionId": "s1", "mode": "form", "message": "Which?",
                     "requestedSchema": {"type": "object",
                                         "properties": {"answer": {"type": "string"}},
                                         "required": ["answer"]}});
    validate(
        &doc,
        &json!({"$ref": "#/requests/elicitation~1create/params"}),
        &ask,
    )
    .expect("ask");
    let _: ElicitationParams = round_trip(ask);
    let answer = json!({"action": "accept", "content": {"answer": "x"}});
    validate(
        &doc,
        &json!({"$ref": "#/requests/elicitation~1create/result"}),
        &answer,
    )
    .expect("answer");
    let _: ElicitationResult = round_trip(answer);
    let _: ElicitationResult = round_trip(json!({"action": "decline"}));
}

#[test]
fn both_spellings_are_accepted_and_camel_case_wins() {
    let snake: UploadBeginParams = decode(Some(
        json!({"session_id": "s", "size_bytes": 3, "filename": "f"}),
    ))
    .expect("snake");
    let camel: UploadBeginParams = decode(Some(
        json!({"sessionId": "s", "sizeBytes": 3, "filename": "f"}),
    ))
    .expect("camel");
    assert_eq!(snake, camel);
    // Plain serde accepts either spelling alone too (aliases).
    let direct: SubscribeParams =
        serde_json::from_value(json!({"session_id": "s", "after_event_seq": 2})).expect("alias");
    assert_eq!(direct.after_event_seq, Some(2));
    let both: MessagesParams = decode(Some(
        json!({"sessionId": "camel", "session_id": "snake", "before_seq": 4}),
    ))
    .expect("both");
    assert_eq!(both.session_id, "camel");
    assert_eq!(both.before_seq, Some(4));
    // Keys inside values keep their own names.
    let set: ConfigSetParams = decode(Some(
        json!({"prop": "permission_profiles.p", "value": {"config_write_paths": ["*"]}}),
    ))
    .expect("nested");
    assert_eq!(set.value, json!({"config_write_paths": ["*"]}));
    let init: InitializeParams =
        decode(Some(json!({"protocol_version": 2, "auth_token": "t"}))).expect("init");
    assert_eq!(init.protocol_version, Some(json!(2)));
    assert!(
        decode::<SessionRef>(Some(json!([1]))).is_err(),
        "positional params"
    );
    assert!(decode::<SessionRef>(None).is_err(), "missing sessionId");
}

#[test]
fn session_new_params_built_in_code_match_the_wire() {
    let built = SessionNewParams::agent("default")
        .with_id("s1")
        .with_cwd("/w")
        .with_mode(Mode::Chat);
    let wire = json!({"agentAlias": "default", "sessionId": "s1", "cwd": "/w", "mode": "chat"});
    assert_eq!(serde_json::to_value(&built).unwrap(), wire);
    assert_eq!(params::<SessionNewParams>("session/new", wire), built);
    assert_eq!(
        serde_json::to_value(SessionNewParams::agent("a")).unwrap(),
        json!({"agentAlias": "a"})
    );
}
