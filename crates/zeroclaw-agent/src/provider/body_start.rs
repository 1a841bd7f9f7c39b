//! The start of a streamed answer, kept until its first event is decoded, so that a body
//! ending without any event can say what came instead: a JSON error answered with status
//! 200 (some gateways do), a completion that was not streamed, a proxy's text.

use serde_json::Value;

use super::ProviderError;
use super::http::error_message;

/// Bytes of the start of a body kept.
const KEPT: usize = 4096;

/// Bytes of it quoted in an error.
const QUOTED: usize = 200;

#[derive(Debug, Default)]
pub struct BodyStart {
    bytes: Vec<u8>,
    event_seen: bool,
}

impl BodyStart {
    /// Notes a piece of the body (nothing once an event was decoded).
    pub fn piece(&mut self, piece: &[u8]) {
        if !self.event_seen && self.bytes.len() < KEPT {
            let room = KEPT - self.bytes.len();
            self.bytes
                .extend_from_slice(&piece[..piece.len().min(room)]);
        }
    }

    /// An event was decoded: the body is a stream.
    pub fn event(&mut self) {
        if !self.event_seen {
            self.event_seen = true;
            self.bytes = Vec::new();
        }
    }

    /// The error of a body that ended before its answer was complete: what the body was,
    /// when it held no event at all.
    pub fn ended_early(&self) -> ProviderError {
        let text = String::from_utf8_lossy(&self.bytes);
        let text = text.trim();
        if self.event_seen || text.is_empty() {
            return ProviderError::Stream("stream ended unexpectedly".into());
        }
        let json: Option<Value> = serde_json::from_str(text).ok();
        if json.as_ref().is_some_and(|v| v.get("error").is_some()) {
            return ProviderError::Api(error_message(text));
        }
        let mut quoted: String = text.chars().take(QUOTED).collect();
        if quoted.len() < text.len() {
            quoted.push('…');
        }
        let what = if json.is_some() {
            "one JSON document (a stream was asked for)"
        } else {
            "no event"
        };
        ProviderError::Stream(format!("the answer held {what}: {quoted}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(pieces: &[&str]) -> ProviderError {
        let mut start = BodyStart::default();
        for p in pieces {
            start.piece(p.as_bytes());
        }
        start.ended_early()
    }

    #[test]
    fn what_a_body_without_events_was() {
        assert_eq!(
            ended(&[r#"{"error":{"message":"quota "#, r#"exceeded"}}"#]),
            ProviderError::Api("quota exceeded".into())
        );
        assert_eq!(
            ended(&[r#"{"choices":[{"message":{"content":"hi"}}]}"#]),
            ProviderError::Stream(
                r#"the answer held one JSON document (a stream was asked for): {"choices":[{"message":{"content":"hi"}}]}"#
                    .into()
            )
        );
        assert_eq!(
            ended(&["Service restarting\n"]),
            ProviderError::Stream("the answer held no event: Service restarting".into())
        );
        assert_eq!(
            ended(&[]),
            ProviderError::Stream("stream ended unexpectedly".into())
        );
        let long = "x".repeat(KEPT * 2);
        let ProviderError::Stream(m) = ended(&[&long]) else {
            panic!("a stream error")
        };
        assert!(m.ends_with('…') && m.len() < 300, "{m}");
    }

    #[test]
    fn after_an_event_the_end_is_only_early() {
        let mut start = BodyStart::default();
        start.piece(b"data: {}\n\n");
        start.event();
        start.piece(br#"{"error":{"message":"x"}}"#);
        assert_eq!(
            start.ended_early(),
            ProviderError::Stream("stream ended unexpectedly".into())
        );
    }
}
