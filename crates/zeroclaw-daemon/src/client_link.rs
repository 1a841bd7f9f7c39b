//! A connection as the sessions see it: [`ClientLink`] for the per-connection
//! [`ConnectionContext`] (queue an update, ask `elicitation/create`, open or not, can it
//! answer elicitation). Sessions hold the trait object, never the connection's own type.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use zeroclaw_rpc::PeerError;
use zeroclaw_rpc::message::request_line;
use zeroclaw_sessions::session::LiveId;
use zeroclaw_sessions::session::link::{AskError, ClientLink};

use crate::caller::ConnectionContext;

#[async_trait]
impl ClientLink for ConnectionContext {
    fn id(&self) -> u64 {
        self.id
    }

    fn push(&self, line: bytes::Bytes) -> bool {
        self.out.push_now(line).is_ok()
    }

    fn is_open(&self) -> bool {
        !self.out.is_closed()
    }

    fn can_elicit(&self) -> bool {
        self.handshake.get().is_some_and(|h| h.elicitation)
    }

    fn active_within(&self, window: Duration) -> bool {
        // A webhook's or a schedule's own context is nobody at a screen: its turn is the
        // unattended one its owner is to be told about (SPEC §24.3).
        self.unattended.is_none()
            && !self.out.is_closed()
            && ConnectionContext::active_within(self, window)
    }

    fn client_name(&self) -> String {
        ConnectionContext::client_name(self).to_owned()
    }

    async fn ask(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, AskError> {
        let ticket = self.pending.register().ok_or(AskError::Gone)?;
        let line = request_line(
            Some(&Value::String(ticket.id.clone())),
            method,
            Some(&params),
        );
        if self.out.send(line).await.is_err() {
            return Err(AskError::Gone);
        }
        let answer = tokio::select! {
            answer = ticket.wait(timeout) => answer,
            () = self.out.closed() => Err(PeerError::Closed),
        };
        answer.map_err(|e| match e {
            PeerError::Closed => AskError::Gone,
            other => AskError::NoAnswer(other.to_string()),
        })
    }

    fn record_prompt(&self, session: &LiveId, seq: u64) {
        self.prompted(session, seq);
    }

    fn last_prompt(&self, session: &LiveId) -> u64 {
        ConnectionContext::last_prompt(self, session)
    }
}
