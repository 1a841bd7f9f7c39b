//! ACP updates that reach the editor while nothing of its own is happening (SPEC §25),
//! over both ways in (`zeroclaw acp` and the gateway's `/acp`), with raw frames: a running
//! `bash` tool's output as `tool_call_update`s before the call's completed update, and a
//! title set by another client as `session_info_update` without a turn (on a session
//! with no turn yet, and on one whose last turn has ended).

use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

use crate::acp_now::{Setup, WAYS};

/// The text of an output `tool_call_update` (`content[0].content.text`), if it is one.
fn output_text(frame: &Value) -> Option<&str> {
    let update = &frame["params"]["update"];
    if update["sessionUpdate"] != "tool_call_update" || update["status"] != "in_progress" {
        return None;
    }
    update["content"][0]["content"]["text"].as_str()
}

fn is_completed(frame: &Value) -> bool {
    let update = &frame["params"]["update"];
    update["sessionUpdate"] == "tool_call_update" && update["status"] == "completed"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_tool_shows_its_output_before_it_completes() {
    let setup = Setup::start(vec![]);
    for way in WAYS {
        setup.fake.push(Scripted::tool_call(
            "call_out",
            "bash",
            json!({"command": "for i in 1 2 3 4 5; do echo tick$i; sleep 0.3; done"}),
        ));
        setup.fake.push(Scripted::text("ticked"));
        let mut editor = setup.editor(way).await;
        let (sid, _) = editor.new_session(&setup.workdir("output")).await;
        let prompt = editor
            .start(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": "tick"}]}),
            )
            .await;
        let asked = editor
            .wait_for("the permission request", |f| {
                f["method"] == "session/request_permission"
            })
            .await;
        editor
            .send(json!({"jsonrpc": "2.0", "id": asked["id"],
                "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}))
            .await;
        let done = editor.answer(prompt).await;
        assert_eq!(done["result"]["stopReason"], "end_turn", "{way:?}: {done}");

        // The frames in the order they came: output updates, then the completed one.
        let frames: Vec<Value> = editor.backlog.iter().cloned().collect();
        let outputs: Vec<(usize, &str)> = frames
            .iter()
            .enumerate()
            .filter_map(|(i, f)| output_text(f).map(|t| (i, t)))
            .collect();
        let completed = frames
            .iter()
            .position(is_completed)
            .unwrap_or_else(|| panic!("{way:?}: no completed update in {frames:?}"));
        let (first_at, first) = *outputs
            .first()
            .unwrap_or_else(|| panic!("{way:?}: no output update in {frames:?}"));
        assert!(first_at < completed, "{way:?}: output after completion");
        // Sent while the command ran: the first update has the first line, not the last.
        assert!(first.contains("tick1"), "{way:?}: {first:?}");
        assert!(!first.contains("tick5"), "{way:?}: {first:?}");
        assert!(
            outputs.len() >= 2 && outputs.iter().all(|&(i, _)| i < completed),
            "{way:?}: {outputs:?}"
        );
        // Each carries the whole output so far; the last before completion has it all.
        let (_, last) = outputs[outputs.len() - 1];
        assert!(last.starts_with("tick1"), "{way:?}: {last:?}");
        assert!(
            frames[completed]["params"]["update"]["rawOutput"]
                .to_string()
                .contains("tick5"),
            "{way:?}: {}",
            frames[completed]
        );
        editor.close().await;
    }
}

/// Waits for the editor's `session_info_update` with `title`.
async fn title_told(editor: &mut crate::acp_now::Editor, title: &str) -> Value {
    let want = title.to_owned();
    let frame = editor
        .wait_for(&format!("the title {title:?}"), move |f| {
            f["params"]["update"]["sessionUpdate"] == "session_info_update"
                && f["params"]["update"]["title"] == want.as_str()
        })
        .await;
    frame["params"]["update"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_title_set_elsewhere_reaches_the_editor_without_a_turn() {
    let setup = Setup::start(vec![]);
    for way in WAYS {
        setup.fake.push(Scripted::text("one turn"));
        let mut editor = setup.editor(way).await;
        let (sid, _) = editor.new_session(&setup.workdir("told")).await;
        let mut owner = setup.owner(way).await;

        // No turn yet.
        owner
            .result(
                "session/set_title",
                json!({"sessionId": sid, "title": "Before any turn"}),
            )
            .await;
        let info = title_told(&mut editor, "Before any turn").await;
        assert!(info["updatedAt"].is_string(), "{way:?}: {info}");

        // After a turn ended: told again at once, no turn started for it.
        editor.prompt(&sid, "hello").await;
        editor.backlog.clear();
        owner
            .result(
                "session/set_title",
                json!({"sessionId": sid, "title": "After a turn"}),
            )
            .await;
        title_told(&mut editor, "After a turn").await;
        assert!(
            editor.updates("agent_message_chunk").is_empty(),
            "{way:?}: {:?}",
            editor.backlog
        );
        editor.close().await;
    }
}
