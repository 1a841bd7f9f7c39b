//! A running tool's output (`tool_output_chunk {toolCallId, stream, text}` from the
//! daemon) as throttled `tool_call_update`s (SPEC §25): the first chunk of a call goes at
//! once; later ones are gathered and go with the next chunk that arrives at least
//! [`THROTTLE`] after the last update sent. Each update carries the whole output so far
//! (ACP replaces a call's content), kept to its last [`KEEP_BYTES`]; the call's
//! `tool_call_update` with its result replaces it at the end.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use agent_client_protocol_schema::v1::SessionUpdate;
use serde_json::Value;

use super::updates;

/// Least time between two output updates of one tool call.
pub const THROTTLE: Duration = Duration::from_millis(100);
/// The most output kept per call (its tail).
const KEEP_BYTES: usize = 64 * 1024;

/// The output of the calls running in one session.
#[derive(Default)]
pub struct Outputs {
    calls: HashMap<String, Output>,
}

struct Output {
    text: String,
    sent_at: Instant,
}

impl Outputs {
    /// A chunk of `params` (a `tool_output_chunk` update as sent); the update to send now,
    /// if any. A chunk without `toolCallId` or `text` is dropped.
    pub fn chunk(&mut self, params: &Value) -> Option<SessionUpdate> {
        let id = params.get("toolCallId").and_then(Value::as_str)?;
        let text = params.get("text").and_then(Value::as_str)?;
        let now = Instant::now();
        match self.calls.get_mut(id) {
            None => {
                let output = Output {
                    text: text.to_owned(),
                    sent_at: now,
                };
                let update = updates::tool_output(id, &output.text);
                self.calls.insert(id.to_owned(), output);
                Some(update)
            }
            Some(output) => {
                output.text.push_str(text);
                if output.text.len() > KEEP_BYTES {
                    let mut cut = output.text.len() - KEEP_BYTES;
                    while !output.text.is_char_boundary(cut) {
                        cut += 1;
                    }
                    output.text.drain(..cut);
                }
                if now.duration_since(output.sent_at) < THROTTLE {
                    return None;
                }
                output.sent_at = now;
                Some(updates::tool_output(id, &output.text))
            }
        }
    }

    /// The call ended (its result is sent): its output is forgotten.
    pub fn done(&mut self, tool_call_id: &str) {
        self.calls.remove(tool_call_id);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn first_chunk_at_once_then_throttled_with_everything_so_far() {
        let mut outputs = Outputs::default();
        let chunk = |t: &str| json!({"toolCallId": "c1", "stream": "stdout", "text": t});
        let first = outputs.chunk(&chunk("a")).expect("first chunk sent");
        assert_eq!(
            serde_json::to_value(&first).unwrap()["content"][0]["content"]["text"],
            "a"
        );
        assert!(outputs.chunk(&chunk("b")).is_none(), "within the throttle");
        outputs.calls.get_mut("c1").unwrap().sent_at -= THROTTLE;
        let later = outputs.chunk(&chunk("c")).expect("after the throttle");
        let wire = serde_json::to_value(&later).unwrap();
        assert_eq!(wire["sessionUpdate"], "tool_call_update");
        assert_eq!(wire["status"], "in_progress");
        assert_eq!(wire["content"][0]["content"]["text"], "abc");
        assert!(outputs.chunk(&json!({"text": "x"})).is_none());
        outputs.done("c1");
        assert!(
            outputs.chunk(&chunk("d")).is_some(),
            "a new call starts again"
        );
    }
}
