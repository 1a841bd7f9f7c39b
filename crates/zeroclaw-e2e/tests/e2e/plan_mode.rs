//! Plan mode (SPEC §26) through the real binary, the fake model calling the tools.
//!
//! - In autonomy `plan` the tools that change nothing run (`read_file` returns the file)
//!   and every writing one is refused without asking: `write_file` with plan mode's
//!   refusal, `bash` confined to writing nowhere (or refused where it cannot be confined);
//!   the disk holds none of their files. The model is told it is in plan mode and offered
//!   `propose_plan`; its call ends the turn (no further provider call) with a `plan` update
//!   and a `plan` transcript row after the turn's rows, and a client subscribing later gets
//!   the update replayed. An MCP tool annotated read-only runs, another is refused.
//! - Accepting: `session/configure {autonomy: "supervised"}` plus "Implement the plan."
//!   runs the writes (approved), with neither the plan-mode prompt nor `propose_plan`.
//! - ACP offers `plan` as a session mode; switching to it puts the session in plan mode
//!   and the plan reaches the editor as agent text.
//! - The chat: `/plan` enters plan mode, the plan is shown, `/implement` switches back
//!   and sends "Implement the plan." (a pseudo-terminal).
//! - The dashboard: the plan card's Implement button (headless Chromium, ignored unless
//!   run by `scripts/browser-test.sh`).

use crate::common;

use std::path::{Path, PathBuf};

use common::{Conn, Fake, TestDaemon, session_config, update_types, updates};
use serde_json::{Value, json};
use zeroclaw_testkit::{FakeToolCall, Scripted};

const PLAN: &str = "## Plan\n\n1. Write `new.txt` with the greeting\n2. Check it with `cat`";

fn start(fake: &Fake) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), "");
    TestDaemon::start_env(&[], &[], move |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    })
}

/// A session of `default` (supervised) put in `autonomy`: (id, its workspace = cwd).
fn session(c: &mut Conn, autonomy: &str) -> (String, PathBuf) {
    let r = c.new_session(json!({"agentAlias": "default"}));
    let sid = r["sessionId"].as_str().expect("sessionId").to_owned();
    let set = c.result(
        "session/configure",
        json!({"sessionId": sid, "autonomy": autonomy}),
    );
    assert_eq!(set["autonomy"], autonomy, "{set}");
    let dir = PathBuf::from(r["workspaceDir"].as_str().expect("workspaceDir"));
    (sid, dir)
}

fn results(msgs: &[Value]) -> Vec<(String, String)> {
    updates(msgs)
        .iter()
        .filter(|u| u["type"] == "tool_result")
        .map(|u| {
            (
                u["name"].as_str().unwrap_or_default().to_owned(),
                u["rawOutput"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The names of the tools a provider request offered.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The system prompt of a provider request.
fn system_of(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .filter(|_| request["messages"][0]["role"] == "system")
        .unwrap_or("")
        .to_owned()
}

/// Runs a prompt, allowing every approval asked; the updates and the answer.
fn prompt_allowing(c: &mut Conn, sid: &str, text: &str) -> (Vec<Value>, Value) {
    let id = c.send_call("session/prompt", json!({"sessionId": sid, "prompt": text}));
    let mut seen = Vec::new();
    loop {
        let msg = c.recv();
        if msg.get("id") == Some(&id) && msg.get("method").is_none() {
            return (seen, msg);
        }
        if msg["params"]["type"] == "approval_request" {
            let request_id = msg["params"]["requestId"].clone();
            c.send_call(
                "session/approve",
                json!({"sessionId": sid, "requestId": request_id, "decision": "allow_once"}),
            );
        }
        seen.push(msg);
    }
}

/// The plan-mode turn of these tests: the model reads `notes.txt`, tries `write_file`
/// and a writing `bash`, then proposes [`PLAN`].
fn push_plan_turn(fake: &Fake, marker: &Path) {
    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new("r1", "read_file", json!({"path": "notes.txt"})),
        FakeToolCall::new(
            "w1",
            "write_file",
            json!({"path": "new.txt", "content": "hello"}),
        ),
        FakeToolCall::new(
            "b1",
            "bash",
            json!({"command": format!("echo hi > bashed.txt; echo hi > {}", marker.display())}),
        ),
    ]));
    fake.push(Scripted::tool_call(
        "p1",
        "propose_plan",
        json!({ "plan": PLAN }),
    ));
}

#[test]
fn plan_mode_reads_refuses_writes_and_ends_with_a_plan_then_implement_writes() {
    let fake = Fake::start();
    let daemon = start(&fake);
    let mut c = daemon.client();
    let (sid, dir) = session(&mut c, "plan");
    std::fs::write(dir.join("notes.txt"), "the notes say hello").expect("notes");
    let outside = tempfile::tempdir().expect("tempdir");
    let marker = outside.path().join("marker.txt");

    push_plan_turn(&fake, &marker);
    let (msgs, answer) = c.prompt(&sid, "plan the greeting");
    assert_eq!(answer["result"]["outcome"], "completed", "{answer}");
    let types = update_types(&msgs);
    assert!(
        !types.iter().any(|t| t == "approval_request"),
        "nothing asks in plan mode: {types:?}"
    );

    // Reads run; writes are refused or confined; nothing is on disk.
    let res = results(&msgs);
    assert_eq!(res.len(), 4, "{res:?}");
    assert_eq!(res[0].0, "read_file");
    assert!(res[0].1.contains("the notes say hello"), "{res:?}");
    assert_eq!(res[1].0, "write_file");
    assert!(
        res[1].1.starts_with("Refused: plan mode changes nothing")
            && res[1].1.contains("write_file"),
        "{res:?}"
    );
    assert_eq!(res[2].0, "bash");
    eprintln!("plan-mode bash result: {}", res[2].1);
    assert!(!dir.join("new.txt").exists(), "write_file wrote");
    assert!(!dir.join("bashed.txt").exists(), "bash wrote in the cwd");
    assert!(!marker.exists(), "bash wrote outside");
    assert_eq!(res[3].0, "propose_plan");

    // The plan: its update, then the turn's end; no provider call after it.
    let plans: Vec<Value> = updates(&msgs)
        .into_iter()
        .filter(|u| u["type"] == "plan")
        .collect();
    assert_eq!(plans.len(), 1, "{types:?}");
    assert_eq!(plans[0]["plan"], PLAN);
    let at = |kind: &str| types.iter().position(|t| t == kind).expect(kind);
    assert!(at("plan") < at("turn_complete"), "{types:?}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "propose_plan ends the turn");
    assert!(
        system_of(&requests[0]).contains("## Plan mode"),
        "{}",
        requests[0]
    );
    assert!(offered(&requests[0]).contains(&"propose_plan".to_owned()));

    // The transcript's `plan` row, after the turn's tool rows.
    let rows = c.messages(&sid);
    let roles: Vec<&str> = rows.iter().filter_map(|r| r["role"].as_str()).collect();
    assert_eq!(roles.last(), Some(&"plan"), "{roles:?}");
    assert_eq!(rows[rows.len() - 1]["content"], PLAN);

    // A client that comes later gets the plan replayed.
    let turn = answer["result"]["turnId"].clone();
    let mut later = daemon.client();
    let sub = later.send_call(
        "session/subscribe",
        json!({"sessionId": sid, "turnId": turn, "afterEventSeq": 0}),
    );
    let mut replayed = Vec::new();
    loop {
        let msg = later.recv();
        if msg.get("id") == Some(&sub) {
            continue;
        }
        let done = msg["params"]["type"] == "turn_complete";
        replayed.push(msg);
        if done {
            break;
        }
    }
    let again: Vec<Value> = updates(&replayed)
        .into_iter()
        .filter(|u| u["type"] == "plan")
        .collect();
    assert_eq!(again.len(), 1, "{replayed:?}");
    assert_eq!(
        (again[0]["plan"].as_str(), &again[0]["replay"]),
        (Some(PLAN), &json!(true))
    );

    // Accepting: supervised again, then "Implement the plan." writes (approved).
    let set = c.result(
        "session/configure",
        json!({"sessionId": sid, "autonomy": "supervised"}),
    );
    assert_eq!(set["autonomy"], "supervised");
    fake.push(Scripted::tool_call(
        "w2",
        "write_file",
        json!({"path": "new.txt", "content": "hello"}),
    ));
    fake.push(Scripted::text("done"));
    let (msgs, answer) = prompt_allowing(&mut c, &sid, "Implement the plan.");
    assert_eq!(answer["result"]["outcome"], "completed", "{answer}");
    assert!(update_types(&msgs).contains(&"approval_request".to_owned()));
    assert_eq!(
        std::fs::read_to_string(dir.join("new.txt")).expect("new.txt written"),
        "hello"
    );
    let requests = fake.requests();
    let implement = &requests[2];
    assert!(
        !system_of(implement).contains("## Plan mode"),
        "{implement}"
    );
    assert!(!offered(implement).contains(&"propose_plan".to_owned()));
    // The plan is in the context the model gets (the propose_plan call).
    assert!(
        implement
            .to_string()
            .contains("Write `new.txt` with the greeting")
    );
}

#[test]
fn plan_is_in_the_vocabulary_and_propose_plan_checks_its_argument() {
    let fake = Fake::start();
    let daemon = start(&fake);
    let mut c = daemon.client();
    let (sid, _) = session(&mut c, "plan");
    let status = c.result("session/status", json!({"sessionId": sid}));
    assert_eq!(status["autonomy"], "plan", "{status}");
    let bad = c.error(
        "session/configure",
        json!({"sessionId": sid, "autonomy": "planning"}),
    );
    assert_eq!(common::code(&bad), -32602);
    assert!(
        bad["message"].as_str().unwrap_or("").contains("plan"),
        "{bad}"
    );

    // An empty plan is the model's error, and the turn goes on to its answer.
    fake.push(Scripted::tool_call(
        "p0",
        "propose_plan",
        json!({"plan": " "}),
    ));
    fake.push(Scripted::text("I will look again"));
    let (msgs, answer) = c.prompt(&sid, "plan");
    assert_eq!(answer["result"]["outcome"], "completed", "{answer}");
    let res = results(&msgs);
    assert!(
        res[0].1.contains("`plan`") && res[0].1.contains("empty"),
        "{res:?}"
    );
    assert!(!update_types(&msgs).contains(&"plan".to_owned()));
    assert_eq!(
        fake.requests().len(),
        2,
        "the turn went on after the bad call"
    );

    // Outside plan mode the model is not offered propose_plan.
    c.result(
        "session/configure",
        json!({"sessionId": sid, "autonomy": "supervised"}),
    );
    fake.push(Scripted::text("hi"));
    c.prompt(&sid, "hello");
    let last = fake.requests().pop().expect("request");
    assert!(
        !offered(&last).contains(&"propose_plan".to_owned()),
        "{last}"
    );
}

/// ACP (SPEC §25, §26): `plan` is a session mode; switching to it puts the session in plan
/// mode, a write is refused and the plan reaches the editor as agent text; switching back
/// to `supervised` leaves it. Both ways in (`zeroclaw acp`, the gateway's `/acp`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_offers_plan_as_a_session_mode() {
    use crate::acp_now::{Setup, WAYS};
    let setup = Setup::start(vec![]);
    for way in WAYS {
        let mut editor = setup.editor(way).await;
        let cwd = setup.workdir(&format!("plan-{way:?}"));
        let (sid, created) = editor.new_session(&cwd).await;
        let modes: Vec<&str> = created["modes"]["availableModes"]
            .as_array()
            .map(|m| m.iter().filter_map(|m| m["id"].as_str()).collect())
            .unwrap_or_default();
        assert!(modes.contains(&"plan"), "{way:?}: {created}");
        let plan_option = created["configOptions"][0]["options"].to_string();
        assert!(plan_option.contains("\"plan\""), "{way:?}: {plan_option}");

        editor
            .result(
                "session/set_mode",
                json!({"sessionId": sid, "modeId": "plan"}),
            )
            .await;
        let mut owner = setup.owner(way).await;
        let status = owner
            .result("session/status", json!({"sessionId": sid}))
            .await;
        assert_eq!(status["autonomy"], "plan", "{way:?}: {status}");

        setup.fake.push(Scripted::tool_calls(vec![FakeToolCall::new(
            "w1",
            "write_file",
            json!({"path": "acp.txt", "content": "x"}),
        )]));
        setup.fake.push(Scripted::tool_call(
            "p1",
            "propose_plan",
            json!({ "plan": PLAN }),
        ));
        let done = editor.prompt(&sid, "plan it").await;
        assert_eq!(done["stopReason"], "end_turn", "{way:?}: {done}");
        let text: String = editor
            .updates("agent_message_chunk")
            .iter()
            .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
            .collect();
        assert!(text.contains(PLAN), "{way:?}: {text:?}");
        let refused = editor
            .updates("tool_call_update")
            .iter()
            .any(|u| u.to_string().contains("plan mode changes nothing"));
        assert!(refused, "{way:?}: {:?}", editor.backlog);
        assert!(!cwd.join("acp.txt").exists(), "{way:?}");

        editor
            .result(
                "session/set_mode",
                json!({"sessionId": sid, "modeId": "supervised"}),
            )
            .await;
        let status = owner
            .result("session/status", json!({"sessionId": sid}))
            .await;
        assert_eq!(status["autonomy"], "supervised", "{way:?}: {status}");
        editor.close().await;
    }
}

/// The chat on a pseudo-terminal (SPEC §26): `/plan PROMPT` puts the session in plan mode
/// and sends the prompt; the write is refused and the plan is shown under its heading;
/// `/implement` makes the session supervised and sends "Implement the plan.", whose write
/// is approved with one key and lands on disk.
#[test]
fn chat_plan_then_implement_on_a_terminal() {
    use zeroclaw_testkit::chat_window::ChatWindow;
    let fake = Fake::start();
    let daemon = start(&fake);
    // The chat's session works in the directory it is started from (SPEC §22).
    let project = tempfile::tempdir().expect("tempdir");
    let dir = project.path().to_path_buf();

    fake.push(Scripted::tool_call(
        "w1",
        "write_file",
        json!({"path": "new.txt", "content": "hello"}),
    ));
    fake.push(Scripted::tool_call(
        "p1",
        "propose_plan",
        json!({ "plan": PLAN }),
    ));
    let mut w = ChatWindow::open_in(daemon.config_dir(), Some(&dir), &["--session", "planner"]);
    w.prompt();
    w.send("/plan plan the greeting\r");
    w.expect("autonomy plan");
    w.expect("── proposed plan ──");
    w.expect("/implement carries it out");
    w.turn_end();
    w.prompt();
    assert!(!dir.join("new.txt").exists(), "plan mode wrote");
    let screen = w.screen().join("\n");
    assert!(
        screen.contains("Write new.txt with the greeting")
            || screen.contains("Write `new.txt` with the greeting"),
        "{screen}"
    );
    assert!(screen.contains("plan mode changes nothing"), "{screen}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "propose_plan ended the turn");
    assert!(system_of(&requests[0]).contains("## Plan mode"));

    fake.push(Scripted::tool_call(
        "w2",
        "write_file",
        json!({"path": "new.txt", "content": "hello"}),
    ));
    fake.push(Scripted::text("implemented"));
    w.send("/implement\r");
    w.expect("autonomy supervised");
    w.expect("allow write_file ");
    w.send("y");
    w.expect("implemented");
    w.turn_end();
    w.prompt();
    assert_eq!(
        std::fs::read_to_string(dir.join("new.txt")).expect("new.txt"),
        "hello"
    );
    let last = fake.requests().pop().expect("request");
    let messages = last["messages"].as_array().cloned().unwrap_or_default();
    let prompts: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(prompts.last(), Some(&"Implement the plan."), "{last}");
    eprintln!("the chat after /implement:\n{}", w.screen().join("\n"));
    w.leave();
}

/// The dashboard (SPEC §26) in headless Chromium: a plan-mode turn's plan shows as a card
/// with an Implement button; clicking it makes the session supervised and sends
/// "Implement the plan.", whose write is approved on the page and lands on disk; after a
/// reload the card comes back from the `plan` row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn the_dashboards_implement_button_accepts_the_plan() {
    use crate::browser::{Browser, screenshot_dir};
    use crate::dashboard_daily::{Daily, WAIT, config, login, no_page_problems, open_session};
    use zeroclaw_testkit::FakeOpenAi;

    let fake = FakeOpenAi::start().await.expect("fake openai");
    let d = Daily::start(config(Some(&fake.base_url())));
    let r = d.admin().new_session(json!({"agentAlias": "tools"}));
    let sid = r["sessionId"].as_str().expect("sid").to_owned();
    let dir = PathBuf::from(r["workspaceDir"].as_str().expect("workspaceDir"));
    d.admin().result(
        "session/configure",
        json!({"sessionId": sid, "autonomy": "plan"}),
    );
    let browser = Browser::launch().await;
    let desk = browser.page(1440, 900).await;
    login(&desk, &d.login_url()).await;
    open_session(&desk, &sid).await;
    desk.wait_for(
        "document.querySelector('select[aria-label=Autonomy]').value === 'plan'",
        WAIT,
    )
    .await;

    // The plan-mode turn runs while the page is open: the card comes from the update.
    fake.push(Scripted::tool_call(
        "w1",
        "write_file",
        json!({"path": "new.txt", "content": "hello"}),
    ));
    fake.push(Scripted::tool_call(
        "p1",
        "propose_plan",
        json!({ "plan": PLAN }),
    ));
    let (_, done) = d.admin().prompt(&sid, "plan the greeting");
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    assert!(!dir.join("new.txt").exists());
    desk.wait_for(
        "document.querySelector('.block.plan button.implement') && document.querySelector('.block.plan .md li')",
        WAIT,
    )
    .await;
    let card = desk.text(".block.plan").await;
    assert!(
        card.contains("Proposed plan") && card.contains("Write new.txt with the greeting"),
        "{card}"
    );
    desk.screenshot(&screenshot_dir().join("plan-card-desktop.png"))
        .await;

    fake.push(Scripted::tool_call(
        "w2",
        "write_file",
        json!({"path": "new.txt", "content": "hello"}),
    ));
    fake.push(Scripted::text("implemented"));
    desk.click(".block.plan button.implement").await;
    desk.wait_for(
        "document.querySelector('.block.approval .actions button')",
        WAIT,
    )
    .await;
    desk.click(".block.approval button[data-decision='allow_once']")
        .await;
    desk.wait_for(
        "[...document.querySelectorAll('.block.assistant:not(.streaming)')].some(e => e.textContent.includes('implemented'))",
        WAIT,
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(dir.join("new.txt")).expect("new.txt"),
        "hello"
    );
    let status = d
        .admin()
        .result("session/status", json!({"sessionId": sid}));
    assert_eq!(status["autonomy"], "supervised", "{status}");
    assert_eq!(
        desk.eval("document.querySelector('select[aria-label=Autonomy]').value")
            .await,
        json!("supervised")
    );
    let last = fake.requests().pop().expect("request");
    let prompts: Vec<String> = last["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == "user")
                .filter_map(|m| m["content"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        prompts.last().map(String::as_str),
        Some("Implement the plan."),
        "{last}"
    );
    assert!(desk.text(".block.plan").await.contains("Implementing"));

    // Reloaded, the card comes from the transcript's `plan` row.
    // The old page is marked, so the wait below cannot be answered by it while the
    // reload is still on its way.
    desk.eval("window.beforeReload = true; location.reload()")
        .await;
    desk.wait_for(
        "!window.beforeReload && document.querySelector('.block.plan .md li')",
        WAIT,
    )
    .await;
    let card = desk.text(".block.plan").await;
    assert!(card.contains("Check it with cat"), "{card}");
    desk.screenshot(&screenshot_dir().join("plan-implemented-desktop.png"))
        .await;
    no_page_problems(&desk).await;
}

/// MCP tools in plan mode (SPEC §26): a tool annotated read-only runs, one that is not is
/// refused with plan mode's refusal, neither asks.
#[test]
fn plan_mode_runs_read_only_mcp_tools_and_refuses_the_others() {
    let fake = Fake::start();
    let (daemon, _pidfile) = crate::mcp::start(&fake, 0.0);
    let mut c = daemon.client();
    let sid = crate::mcp::new_session(&mut c);
    crate::mcp::wait_server(&mut c, &sid, "ready");
    c.result(
        "session/configure",
        json!({"sessionId": sid, "autonomy": "plan"}),
    );
    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new("c1", "kv__lookup", json!({"key": "gamma"})),
        FakeToolCall::new("c2", "kv__store", json!({"value": "delta"})),
    ]));
    fake.push(Scripted::text("looked"));
    let (msgs, answer) = c.prompt(&sid, "look it up");
    assert_eq!(answer["result"]["outcome"], "completed", "{answer}");
    assert!(!update_types(&msgs).contains(&"approval_request".to_owned()));
    let res = results(&msgs);
    assert_eq!(res[0], ("kv__lookup".to_owned(), "found:gamma".to_owned()));
    assert_eq!(res[1].0, "kv__store");
    assert!(
        res[1].1.starts_with("Refused: plan mode changes nothing")
            && res[1].1.contains("kv__store"),
        "{res:?}"
    );
}
