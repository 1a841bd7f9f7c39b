//! Maps what the daemon reports to ACP `session/update` payloads (SPEC §15, second
//! table): streamed events of a turn, and transcript rows replayed by `session/load`.
//! Pure functions: no I/O here.

use agent_client_protocol_schema::v1::{
    Content, ContentBlock, ContentChunk, MessageId, SessionUpdate, TextContent, ToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use serde_json::Value;
use zeroclaw_client::UpdateKind;
use zeroclaw_client::protocol::Role;

/// Longest tool-call title shown to the editor (characters).
const TITLE_CHARS: usize = 120;

fn text_chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

/// ACP `kind` of a zeroclaw tool.
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "bash" => ToolKind::Execute,
        "read_file" => ToolKind::Read,
        "write_file" => ToolKind::Edit,
        _ => ToolKind::Other,
    }
}

/// A short human title for a call: the command for `bash`, the path for file tools.
pub fn tool_title(name: &str, raw_input: &Value) -> String {
    let arg = |key: &str| raw_input.get(key).and_then(Value::as_str);
    let title = match (name, arg("command"), arg("path")) {
        ("bash", Some(command), _) => command.to_string(),
        ("read_file", _, Some(path)) => format!("Read {path}"),
        ("write_file", _, Some(path)) => format!("Write {path}"),
        _ => name.to_string(),
    };
    let mut chars = title.chars();
    let mut short: String = chars.by_ref().take(TITLE_CHARS).collect();
    if chars.next().is_some() {
        short.push('…');
    }
    short
}

/// A tool's output is a failure when the tool reported an error, the user refused the
/// call or the turn was cancelled before it finished (the agent's result texts).
pub fn tool_failed(raw_output: &Value) -> bool {
    raw_output.as_str().is_some_and(|s| {
        s.starts_with("Error:")
            || s.starts_with("The user refused to run")
            || s.starts_with("Cancelled: the user cancelled the turn")
    })
}

fn output_text(raw_output: &Value) -> String {
    match raw_output {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub fn tool_call(id: &str, name: &str, raw_input: &Value) -> SessionUpdate {
    SessionUpdate::ToolCall(
        ToolCall::new(id.to_string(), tool_title(name, raw_input))
            .kind(tool_kind(name))
            .status(ToolCallStatus::Pending)
            .raw_input(raw_input.clone()),
    )
}

pub fn tool_result(id: &str, raw_output: &Value) -> SessionUpdate {
    let status = if tool_failed(raw_output) {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    let content = ToolCallContent::Content(Content::new(ContentBlock::Text(TextContent::new(
        output_text(raw_output),
    ))));
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        id.to_string(),
        ToolCallUpdateFields::new()
            .status(status)
            .content(vec![content])
            .raw_output(raw_output.clone()),
    ))
}

/// The chunk kind of an update that carries a message's text (`user`, `agent`,
/// `thought`); `None` for the others.
pub fn chunk_kind(update: &SessionUpdate) -> Option<&'static str> {
    match update {
        SessionUpdate::UserMessageChunk(_) => Some("user"),
        SessionUpdate::AgentMessageChunk(_) => Some("agent"),
        SessionUpdate::AgentThoughtChunk(_) => Some("thought"),
        _ => None,
    }
}

/// The update with `messageId` set, when it is a message chunk (SPEC §25).
pub fn with_message_id(update: SessionUpdate, id: String) -> SessionUpdate {
    let id = MessageId::new(id);
    match update {
        SessionUpdate::UserMessageChunk(c) => SessionUpdate::UserMessageChunk(c.message_id(id)),
        SessionUpdate::AgentMessageChunk(c) => SessionUpdate::AgentMessageChunk(c.message_id(id)),
        SessionUpdate::AgentThoughtChunk(c) => SessionUpdate::AgentThoughtChunk(c.message_id(id)),
        other => other,
    }
}

/// A running tool's output so far, as a `tool_call_update` whose content is all of it
/// (ACP replaces a tool call's content with each update's).
pub fn tool_output(id: &str, text: &str) -> SessionUpdate {
    let content = ToolCallContent::Content(Content::new(ContentBlock::Text(TextContent::new(
        text.to_owned(),
    ))));
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        id.to_string(),
        ToolCallUpdateFields::new()
            .status(ToolCallStatus::InProgress)
            .content(vec![content]),
    ))
}

/// The ACP update for a streamed daemon event; `None` for events ACP has no update for
/// (approvals and questions travel as requests; `turn_complete` answers the prompt).
pub fn from_event(kind: &UpdateKind) -> Option<SessionUpdate> {
    match kind {
        // Another client's prompt (the editor's own is never forwarded): the text with its
        // attachments' markers, as the transcript holds it and `session/load` replays it.
        UpdateKind::UserMessage {
            text, attachments, ..
        } => {
            let mut shown = text.clone();
            for file in attachments {
                shown.push('\n');
                shown.push_str(&file.marker);
            }
            Some(SessionUpdate::UserMessageChunk(text_chunk(&shown)))
        }
        UpdateKind::AgentMessageChunk { text } => {
            Some(SessionUpdate::AgentMessageChunk(text_chunk(text)))
        }
        UpdateKind::AgentThoughtChunk { text } => {
            Some(SessionUpdate::AgentThoughtChunk(text_chunk(text)))
        }
        // A proposed plan (SPEC §26): markdown the editor shows as the agent's text; ACP's
        // own `plan` update is a list of entries with statuses, not a document.
        UpdateKind::Plan { plan } => Some(SessionUpdate::AgentMessageChunk(text_chunk(
            &plan_text(plan),
        ))),
        UpdateKind::ToolCall {
            tool_call_id,
            name,
            raw_input,
            ..
        } => Some(tool_call(tool_call_id, name, raw_input)),
        UpdateKind::ToolResult {
            tool_call_id,
            raw_output,
            ..
        } => Some(tool_result(tool_call_id, raw_output)),
        // SPEC §16 `usage {contextTokens, contextWindow, …}` → ACP `usage_update {used, size}`.
        UpdateKind::Usage {
            context_tokens,
            context_window,
            ..
        } => Some(SessionUpdate::UsageUpdate(UsageUpdate::new(
            *context_tokens,
            *context_window,
        ))),
        _ => None,
    }
}

/// A proposed plan as the editor is shown it: a heading, then the plan.
fn plan_text(plan: &str) -> String {
    format!("\n\n**Proposed plan** (switch the mode to supervised to implement it)\n\n{plan}")
}

/// The updates that replay one transcript row (`session/messages` entry).
pub fn from_row(row: &Value) -> Option<SessionUpdate> {
    let content = row.get("content").and_then(Value::as_str).unwrap_or("");
    let parsed = || serde_json::from_str::<Value>(content).unwrap_or(Value::Null);
    let id = |v: &Value| {
        v.get("toolCallId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match Role::parse(row.get("role").and_then(Value::as_str)?)? {
        Role::User => Some(SessionUpdate::UserMessageChunk(text_chunk(content))),
        // A compaction's summary (SPEC §18) replays as agent text, like the marker.
        Role::Assistant | Role::Interruption | Role::Compaction => {
            Some(SessionUpdate::AgentMessageChunk(text_chunk(content)))
        }
        // A failed turn's error (SPEC §22) replays as agent text naming it.
        Role::Error => {
            let message = parsed()
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| content.to_owned(), str::to_owned);
            Some(SessionUpdate::AgentMessageChunk(text_chunk(&format!(
                "[error] {message}"
            ))))
        }
        Role::ToolCall => {
            let call = parsed();
            let name = call.get("name").and_then(Value::as_str).unwrap_or("");
            let input = call.get("rawInput").cloned().unwrap_or(Value::Null);
            Some(tool_call(&id(&call), name, &input))
        }
        // A rewind's note (SPEC §22): the editor's history is not rewritten by it.
        Role::Rewind => None,
        // A proposed plan (SPEC §26) replays as it streamed: agent text.
        Role::Plan => Some(SessionUpdate::AgentMessageChunk(text_chunk(&plan_text(
            content,
        )))),
        Role::ToolResult => {
            let result = parsed();
            let output = result.get("rawOutput").cloned().unwrap_or(Value::Null);
            Some(tool_result(&id(&result), &output))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wire(update: SessionUpdate) -> Value {
        serde_json::to_value(update).unwrap()
    }

    #[test]
    fn chunks_and_tools_have_the_acp_shape() {
        let chunk = from_event(&UpdateKind::AgentMessageChunk { text: "Hi".into() });
        assert_eq!(
            wire(chunk.unwrap()),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}})
        );
        let thought = from_event(&UpdateKind::AgentThoughtChunk { text: "hm".into() });
        assert_eq!(
            wire(thought.unwrap())["sessionUpdate"],
            "agent_thought_chunk"
        );
        let call = wire(tool_call("tc_1", "bash", &json!({"command": "ls -l"})));
        // The schema crate leaves out `status: pending` and `kind: other`: they are the
        // defaults a reader assumes when absent.
        assert_eq!(
            call,
            json!({"sessionUpdate": "tool_call", "toolCallId": "tc_1", "title": "ls -l",
                   "kind": "execute", "rawInput": {"command": "ls -l"}})
        );
        let SessionUpdate::ToolCall(typed) = tool_call("tc_1", "bash", &json!({})) else {
            panic!("not a tool call");
        };
        assert_eq!(typed.status, ToolCallStatus::Pending);
        for (name, kind) in [("read_file", "read"), ("write_file", "edit")] {
            assert_eq!(wire(tool_call("t", name, &json!({})))["kind"], kind);
        }
        assert_eq!(tool_kind("x__y"), ToolKind::Other);
        let done = wire(tool_result("tc_1", &json!("a\nb")));
        assert_eq!(
            done,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "tc_1", "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "a\nb"}}],
                   "rawOutput": "a\nb"})
        );
        let refused = wire(tool_result(
            "t",
            &json!("The user refused to run this tool call."),
        ));
        assert_eq!(refused["status"], "failed");
        assert_eq!(
            wire(tool_result("t", &json!("Error: no such file")))["status"],
            "failed"
        );
    }

    #[test]
    fn another_clients_prompt_is_a_user_message_chunk() {
        let prompt = UpdateKind::UserMessage {
            text: "look at this".into(),
            attachments: vec![zeroclaw_client::protocol::update::PromptAttachment {
                filename: "a.txt".into(),
                marker: "[Document: a.txt] /w/uploads/1.txt".into(),
            }],
            prompted_by: "user:bob".into(),
            truncated: false,
        };
        assert_eq!(
            wire(from_event(&prompt).unwrap()),
            json!({"sessionUpdate": "user_message_chunk",
                   "content": {"type": "text", "text": "look at this\n[Document: a.txt] /w/uploads/1.txt"}})
        );
    }

    #[test]
    fn usage_and_unmapped_events() {
        let usage = UpdateKind::Usage {
            input_tokens: 3,
            output_tokens: 4,
            session_total_tokens: 7,
            context_tokens: 10,
            context_window: 32000,
            estimated: false,
            cache_read_tokens: None,
            cache_write_tokens: None,
            cost_usd: None,
        };
        assert_eq!(
            wire(from_event(&usage).unwrap()),
            json!({"sessionUpdate": "usage_update", "used": 10, "size": 32000})
        );
        let trimmed = UpdateKind::HistoryTrimmed {
            dropped_messages: 4,
            kept_messages: 6,
            checkpoint_seq: 17,
            reason: "max_context_tokens".into(),
        };
        assert!(from_event(&trimmed).is_none());
        let gap = UpdateKind::ReplayGap { first_event_seq: 3 };
        assert!(from_event(&gap).is_none());
    }

    #[test]
    fn transcript_rows_replay() {
        let user = from_row(&json!({"seq": 1, "role": "user", "content": "hello"})).unwrap();
        assert_eq!(wire(user)["sessionUpdate"], "user_message_chunk");
        let call = json!({"role": "tool_call",
            "content": "{\"toolCallId\":\"c1\",\"name\":\"bash\",\"rawInput\":{\"command\":\"pwd\"}}"});
        assert_eq!(
            from_row(&call).unwrap(),
            tool_call("c1", "bash", &json!({"command": "pwd"}))
        );
        let result = json!({"role": "tool_result",
            "content": "{\"toolCallId\":\"c1\",\"name\":\"bash\",\"rawOutput\":\"/w\"}"});
        assert_eq!(from_row(&result).unwrap(), tool_result("c1", &json!("/w")));
        // A failed turn's error row (SPEC §22) replays as text naming it, not as JSON.
        let error = json!({"role": "error", "content": "{\"message\":\"HTTP 500\",\"retries\":1}"});
        assert_eq!(
            from_row(&error).unwrap(),
            SessionUpdate::AgentMessageChunk(text_chunk("[error] HTTP 500"))
        );
        assert!(from_row(&json!({"role": "mystery", "content": ""})).is_none());
        assert!(from_row(&json!([])).is_none());
    }

    #[test]
    fn long_titles_are_cut() {
        let title = tool_title("bash", &json!({"command": "x".repeat(500)}));
        assert_eq!(title.chars().count(), TITLE_CHARS + 1);
    }
}
