//! Reading what a daemon sent: the `session/update` params among a list of frames, their
//! types, the streamed text, transcript rows. Shared by the clients over the real binary
//! ([`crate::daemon`]) and the in-process harness of `zeroclaw-daemon`'s tests.

use serde_json::Value;

/// The `session/update` params among `msgs`.
pub fn updates(msgs: &[Value]) -> Vec<Value> {
    msgs.iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| m["params"].clone())
        .collect()
}

/// The `session/update` params among `frames`, of type `kind`.
pub fn updates_of<'a>(frames: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> {
    frames
        .iter()
        .filter(move |m| m["method"] == "session/update" && m["params"]["type"] == kind)
        .map(|m| &m["params"])
}

/// The `session/update` params among `frames`, of type `kind`, as a list.
pub fn updates_typed(frames: &[Value], kind: &str) -> Vec<Value> {
    updates_of(frames, kind).cloned().collect()
}

/// The update types, in order.
pub fn update_types(msgs: &[Value]) -> Vec<String> {
    updates(msgs)
        .iter()
        .map(|u| u["type"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The concatenated `agent_message_chunk` texts.
pub fn streamed_text(msgs: &[Value]) -> String {
    updates(msgs)
        .iter()
        .filter(|u| u["type"] == "agent_message_chunk")
        .map(|u| u["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// `(role, content)` of transcript rows.
pub fn roles(rows: &[Value]) -> Vec<(String, String)> {
    rows.iter()
        .map(|r| {
            (
                r["role"].as_str().unwrap_or("?").to_string(),
                r["content"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect()
}
