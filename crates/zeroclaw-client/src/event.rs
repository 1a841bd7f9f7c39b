//! What the daemon sends unasked: each message as it arrived ([`ServerMessage`]) and typed
//! with the protocol vocabulary ([`Event`]): `session/update` notifications parse into
//! [`SessionUpdate`], `elicitation/create` requests into [`ElicitationRequest`]; anything
//! else (an update `type` this vocabulary does not know included) stays as it came.

use serde_json::Value;
use zeroclaw_protocol::{ELICITATION_CREATE, SESSION_UPDATE, SessionUpdate, UpdateType};

use crate::elicitation::ElicitationRequest;

/// Something the daemon sent without being asked.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerMessage {
    Notification {
        method: String,
        params: Value,
    },
    /// A request the client must answer with [`Client::respond`].
    Request {
        id: Value,
        method: String,
        params: Value,
    },
}

/// Something the daemon sent unasked, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A `session/update` notification.
    Update(SessionUpdate),
    /// An `elicitation/create` request (must be answered).
    Elicitation(ElicitationRequest),
    /// Anything else: other notifications, updates of a `type` this client does not know,
    /// malformed updates and unknown requests (a request must still be answered, e.g. with
    /// a -32601 error).
    Other(ServerMessage),
}

impl Event {
    pub fn from_message(message: ServerMessage) -> Event {
        let parsed = match &message {
            ServerMessage::Notification { method, params } if method == SESSION_UPDATE => {
                match parse_update(params) {
                    Ok(Some(update)) => Ok(Event::Update(update)),
                    Ok(None) => return Event::Other(message),
                    Err(why) => Err(why),
                }
            }
            ServerMessage::Request { id, method, params } if method == ELICITATION_CREATE => {
                ElicitationRequest::parse(id.clone(), params).map(Event::Elicitation)
            }
            _ => return Event::Other(message),
        };
        parsed.unwrap_or_else(|why| {
            tracing::warn!("daemon sent a malformed message: {why}");
            Event::Other(message)
        })
    }
}

/// Parses `session/update` params. `Ok(None)`: a `type` the vocabulary does not know
/// (a newer daemon's event); `Err`: a known type with missing or mistyped fields.
pub fn parse_update(params: &Value) -> Result<Option<SessionUpdate>, String> {
    let kind = params
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{SESSION_UPDATE} without a type"))?;
    if UpdateType::from_wire(kind).is_none() {
        return Ok(None);
    }
    serde_json::from_value(params.clone())
        .map(Some)
        .map_err(|e| format!("{SESSION_UPDATE} {kind}: {e}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use zeroclaw_protocol::{Decision, Outcome, ResolvedReason, UpdateKind};

    use super::*;

    fn update(params: Value) -> SessionUpdate {
        parse_update(&params).unwrap().expect("a known type")
    }

    #[test]
    fn updates_parse_into_the_vocabulary() {
        let u = update(json!({"sessionId": "s1", "type": "agent_message_chunk", "text": "Hi"}));
        assert_eq!(u.session_id, "s1");
        assert_eq!(u.kind, UpdateKind::AgentMessageChunk { text: "Hi".into() });
        assert_eq!((u.turn_id, u.event_seq, u.replay), (None, None, false));
        let u = update(json!({"sessionId": "s1", "type": "approval_resolved",
            "turnId": "t1", "eventSeq": 7, "replay": true,
            "requestId": "apr_0", "decision": "reject", "reason": "timeout"}));
        assert_eq!(
            (u.turn_id.as_deref(), u.event_seq, u.replay),
            (Some("t1"), Some(7), true)
        );
        assert_eq!(
            u.kind,
            UpdateKind::ApprovalResolved {
                request_id: "apr_0".into(),
                decision: Decision::Reject,
                reason: ResolvedReason::Timeout,
                decided_by: None,
            }
        );
        let done = update(
            json!({"sessionId": "s1", "type": "turn_complete", "turnId": "t3",
            "eventSeq": 9, "outcome": "failed", "content": "boom"}),
        );
        assert!(matches!(
            done.kind,
            UpdateKind::TurnComplete { outcome: Outcome::Failed, ref content, .. } if content == "boom"
        ));
        let gap = update(
            json!({"sessionId": "s1", "type": "replay_gap", "turnId": "t2", "firstEventSeq": 40}),
        );
        assert_eq!(gap.turn_id.as_deref(), Some("t2"));
        assert_eq!(
            gap.kind,
            UpdateKind::ReplayGap {
                first_event_seq: 40
            }
        );
        let usage = update(json!({"sessionId": "s1", "type": "usage", "inputTokens": 3,
            "outputTokens": 4, "sessionTotalTokens": 7, "contextTokens": 10,
            "contextWindow": 32000, "estimated": false}));
        assert!(matches!(
            usage.kind,
            UpdateKind::Usage {
                context_tokens: 10,
                context_window: 32000,
                ..
            }
        ));
    }

    #[test]
    fn unknown_and_malformed_updates() {
        assert_eq!(
            parse_update(&json!({"sessionId": "s1", "type": "not_yet_known"})),
            Ok(None)
        );
        assert!(parse_update(&json!({"type": "agent_message_chunk", "text": "x"})).is_err());
        assert!(parse_update(&json!({"sessionId": "s1", "type": "agent_message_chunk"})).is_err());
        assert!(parse_update(&json!({"sessionId": "s1"})).is_err());
        assert!(
            parse_update(&json!({"sessionId": "s1", "type": "turn_complete",
            "outcome": "done", "content": ""}))
            .is_err()
        );
    }

    #[test]
    fn messages_become_events() {
        let note = ServerMessage::Notification {
            method: SESSION_UPDATE.into(),
            params: json!({"sessionId": "s1", "type": "agent_message_chunk", "text": "x"}),
        };
        assert!(matches!(Event::from_message(note), Event::Update(_)));
        let ask = ServerMessage::Request {
            id: json!(4),
            method: ELICITATION_CREATE.into(),
            params: json!({"sessionId": "s1", "mode": "form", "message": "Q?",
                           "requestedSchema": {}}),
        };
        let Event::Elicitation(req) = Event::from_message(ask) else {
            panic!("not an elicitation");
        };
        assert_eq!((req.id, req.message.as_str()), (json!(4), "Q?"));
        for other in [
            ServerMessage::Notification {
                method: SESSION_UPDATE.into(),
                params: json!({"type": "tool_call"}),
            },
            ServerMessage::Notification {
                method: SESSION_UPDATE.into(),
                params: json!({"sessionId": "s1", "type": "not_yet_known"}),
            },
            ServerMessage::Notification {
                method: "x/y".into(),
                params: json!({}),
            },
        ] {
            assert_eq!(Event::from_message(other.clone()), Event::Other(other));
        }
    }
}
