//! `zeroclaw schema` against the real daemon: the printed document validates every frame
//! of a real session — each result against its method's result schema, each params we send
//! against its params schema, each `session/update` and `elicitation/create` against theirs.
//! (Checked with the vocabulary crate's small validator, not a full JSON Schema crate.)

use crate::common;

use std::collections::HashMap;
use std::process::Command;

use common::{BIN, Conn, Fake, TestDaemon, session_config};
use serde_json::{Value, json};
use zeroclaw_protocol::Method;
use zeroclaw_protocol::validate::validate;
use zeroclaw_testkit::{FakeToolCall, Scripted};

fn pointer(path: &str) -> Value {
    json!({"$ref": format!("#{}", path.replace("session/update", "session~1update")
        .replace("elicitation/create", "elicitation~1create"))})
}

fn method_ref(method: &str, part: &str) -> Value {
    json!({"$ref": format!("#/methods/{}/{part}", method.replace('/', "~1"))})
}

/// A connection that checks every frame it sends and reads against the schema.
struct Checked {
    conn: Conn,
    doc: Value,
    /// Our pending requests: id → method.
    pending: HashMap<String, String>,
    /// Frames checked, by kind (`result:<method>`, `update:<type>`, …).
    seen: Vec<String>,
}

impl Checked {
    fn new(conn: Conn, doc: &Value) -> Checked {
        Checked {
            conn,
            doc: doc.clone(),
            pending: HashMap::new(),
            seen: Vec::new(),
        }
    }

    fn check(&self, schema: &Value, value: &Value, what: &str) {
        if let Err(e) = validate(&self.doc, schema, value) {
            panic!("{what} {value} does not match the schema: {e}");
        }
    }

    fn send(&mut self, method: &str, params: Value) -> Value {
        self.check(&method_ref(method, "params"), &params, method);
        let id = self.conn.send_call(method, params);
        self.pending.insert(id.to_string(), method.to_owned());
        id
    }

    /// Reads one frame, checks it, and returns it.
    fn recv(&mut self) -> Value {
        let msg = self.conn.recv();
        match msg.get("method").and_then(Value::as_str) {
            Some("session/update") => {
                self.check(
                    &pointer("/notifications/session/update/params"),
                    &msg["params"],
                    "update",
                );
                self.seen.push(format!(
                    "update:{}",
                    msg["params"]["type"].as_str().unwrap_or("?")
                ));
            }
            Some("elicitation/create") => {
                self.check(
                    &pointer("/requests/elicitation/create/params"),
                    &msg["params"],
                    "elicitation",
                );
                self.seen.push("request:elicitation/create".into());
            }
            Some(other) => panic!("unexpected method {other}: {msg}"),
            None => {
                let method = self
                    .pending
                    .remove(&msg["id"].to_string())
                    .unwrap_or_else(|| panic!("answer to nothing we sent: {msg}"));
                if let Some(result) = msg.get("result") {
                    self.check(&method_ref(&method, "result"), result, &method);
                    self.seen.push(format!("result:{method}"));
                }
            }
        }
        msg
    }

    /// Calls and returns the result; every frame read meanwhile is checked.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        loop {
            let msg = self.recv();
            if msg.get("method").is_none() && msg["id"] == id {
                return msg
                    .get("result")
                    .cloned()
                    .unwrap_or_else(|| panic!("{method} failed: {msg}"));
            }
        }
    }

    /// Answers a daemon request (checking the answer against its schema).
    fn answer(&mut self, request: &Value, result: Value) {
        self.check(
            &pointer("/requests/elicitation/create/result"),
            &result,
            "answer",
        );
        let line = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        self.conn.send(&line.to_string());
    }
}

/// The document `zeroclaw schema` prints.
fn printed() -> Value {
    let out = Command::new(BIN)
        .arg("schema")
        .output()
        .expect("run zeroclaw schema");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("schema is JSON")
}

/// The printed document is the method table's: every method, with the params and result
/// types the daemon decodes and encodes (each a definition of the document), its grant and
/// where it is served.
#[test]
fn every_method_of_the_table_has_its_params_and_result_in_the_printed_schema() {
    let doc = printed();
    let methods = doc["methods"].as_object().expect("methods");
    assert_eq!(methods.len(), Method::ALL.len());
    for m in Method::ALL {
        let entry = &methods[m.name()];
        let (params, result) = m.type_names();
        for (part, name) in [("params", params), ("result", result)] {
            assert_eq!(
                entry[part],
                json!({"$ref": format!("#/$defs/{name}")}),
                "{m} {part}"
            );
            let def = doc["$defs"][name].as_object();
            assert!(def.is_some_and(|d| !d.is_empty()), "{m} {part}: {name}");
        }
        assert_eq!(entry["requires"], m.requirement().to_string(), "{m}");
        assert_eq!(entry["localOnly"], m.local_only(), "{m}");
    }
}

#[test]
fn the_printed_schema_validates_every_frame_of_a_real_session() {
    let doc = printed();
    assert_eq!(doc["methods"].as_object().map(|m| m.len()), Some(47));

    let fake = Fake::start();
    // Turn 1 on the fake provider: a bash call that needs approval, then an ask_user
    // question, then the answer text.
    fake.push(Scripted::ToolCalls {
        text: vec!["let me look".into()],
        calls: vec![FakeToolCall::new(
            "tc_1",
            "bash",
            json!({"command": "echo hi"}),
        )],
    });
    fake.push(Scripted::ToolCalls {
        text: vec![],
        calls: vec![FakeToolCall::new(
            "tc_2",
            "ask_user",
            json!({"question": "Which?", "choices": ["a", "b"]}),
        )],
    });
    fake.push(Scripted::text("all done"));
    let config = session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    });
    let mut c = Checked::new(daemon.connect(), &doc);
    let init = c.call(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "schema-test", "version": "1"},
               "clientCapabilities": {"elicitation": {}}}),
    );
    let served: Vec<String> = serde_json::from_value(init["capabilities"].clone()).expect("caps");

    c.call("status", json!({}));
    c.call("config/get", json!({}));
    c.call("config/get", json!({"prop": "agents.echo.provider"}));
    c.call(
        "config/set",
        json!({"prop": "agents.echo.system_prompt", "value": "brief"}),
    );
    c.call(
        "config/set-many",
        json!({"sets": [{"prop": "agents.echo.max_tool_iterations", "value": 4}]}),
    );

    // An echo turn.
    let echo = c.call("session/new", json!({"agentAlias": "echo"}));
    let echo_id = echo["sessionId"].as_str().expect("id").to_owned();
    let turn = c.call(
        "session/prompt",
        json!({"sessionId": echo_id, "prompt": "hello there"}),
    );
    assert_eq!(turn["outcome"], "completed");
    // Two more turns, then a compaction of the first (SPEC §18).
    for prompt in ["second", "third"] {
        c.call(
            "session/prompt",
            json!({"sessionId": echo_id, "prompt": prompt}),
        );
    }
    let compacted = c.call(
        "session/compact",
        json!({"sessionId": echo_id, "instructions": "short"}),
    );
    assert_eq!(compacted["summarizedMessages"], 2);

    // A turn with an approval and a question.
    let sid = c.call("session/new", json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .expect("id")
        .to_owned();
    let prompt = c.send("session/prompt", json!({"sessionId": sid, "prompt": "go"}));
    let turn_id = loop {
        let msg = c.recv();
        let params = &msg["params"];
        if params["type"] == "approval_request" {
            let request = params["requestId"].clone();
            c.send(
                "session/approve",
                json!({"sessionId": sid, "requestId": request, "decision": "allow_once"}),
            );
        } else if msg["method"] == "elicitation/create" {
            c.answer(
                &msg,
                json!({"action": "accept", "content": {"choice": "a"}}),
            );
        } else if msg.get("method").is_none() && msg["id"] == prompt {
            assert_eq!(msg["result"]["outcome"], "completed", "{msg}");
            break msg["result"]["turnId"].clone();
        }
    };
    // Reattach: the last turn is replayed with `replay: true`.
    let sub = c.call(
        "session/subscribe",
        json!({"sessionId": sid, "turnId": turn_id, "afterEventSeq": 0}),
    );
    assert_eq!(sub["subscribed"], true);
    c.call("session/unsubscribe", json!({"sessionId": sid}));
    c.call("session/list", json!({}));
    c.call("session/messages", json!({"sessionId": sid, "limit": 50}));

    // Files: inline attach and a chunked upload.
    c.call(
        "file/attach",
        json!({"sessionId": sid, "files": [{"dataB64": "aGVsbG8=", "filename": "a.txt"}]}),
    );
    let begin = c.call(
        "file/upload/begin",
        json!({"sessionId": sid, "sizeBytes": 5, "filename": "b.txt"}),
    );
    let upload = begin["upload_id"].clone();
    c.call(
        "file/upload/chunk",
        json!({"uploadId": upload, "offset": 0, "dataB64": "d29ybGQ="}),
    );
    c.call("file/upload/commit", json!({"uploadId": upload}));

    // Methods served only by newer daemons are checked when this one offers them.
    for (method, params) in [
        ("session/status", json!({"sessionId": sid})),
        (
            "session/configure",
            json!({"sessionId": sid, "autonomy": "full"}),
        ),
        ("models/list", json!({})),
        (
            "session/set_title",
            json!({"sessionId": sid, "title": "schema test"}),
        ),
        ("session/fork", json!({"sessionId": sid})),
        (
            "session/messages",
            json!({"sessionId": sid, "includeRewound": true}),
        ),
        (
            "session/rewind",
            json!({"sessionId": sid, "turnId": turn_id, "restoreFiles": false}),
        ),
    ] {
        if served.iter().any(|m| m == method) {
            c.call(method, params);
        }
    }
    c.call("session/close", json!({"sessionId": echo_id}));
    c.call("session/kill", json!({"sessionId": echo_id}));
    c.call("session/delete", json!({"sessionId": sid}));
    c.call("daemon/shutdown", json!({}));

    let seen = |what: &str| c.seen.iter().filter(|s| s.as_str() == what).count();
    for kind in [
        "update:agent_message_chunk",
        "update:tool_call",
        "update:approval_request",
        "update:approval_resolved",
        "update:tool_result",
        "update:turn_complete",
        "update:context_compacted",
        "result:session/compact",
        "request:elicitation/create",
        "result:session/subscribe",
        "result:file/upload/commit",
        "result:daemon/shutdown",
    ] {
        assert!(seen(kind) > 0, "no {kind} was checked: {:?}", c.seen);
    }
    // The replay after subscribing was checked too.
    assert!(
        c.seen.iter().filter(|s| s.starts_with("update:")).count() > 20,
        "{:?}",
        c.seen
    );
    assert!(
        c.seen.len() > 40,
        "only {} frames checked: {:?}",
        c.seen.len(),
        c.seen
    );
}
