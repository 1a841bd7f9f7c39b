//! The caller of an unattended turn — a webhook delivery's (SPEC §23.1) or a schedule's run
//! (§24.1): a context that is no connection, counted in the connection limits under a key
//! of its own, acting for a principal ([`Unattended`]) whose grants the policy decides at
//! each call. Its calls go through the one request path as `POST /rpc`'s do (no handshake,
//! no ordering ticket: it makes one call at a time); what the daemon would send it
//! unasked (its session's updates) goes nowhere, since nobody reads it.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use zeroclaw_rpc::{ErrorObject, Id, Request};

use crate::caller::{ConnectionContext, Handshake, Unattended};
use crate::lineage::Lineage;
use crate::outbound::{self, Outbound};
use crate::request::{self, Call, Front};
use crate::server::next_connection_id;
use crate::state::Daemon;
use crate::transport::{BoxFuture, FrameSink, PeerIdentity, TransportKind};

/// Who an unattended caller is, as the limits, the audit log and `decidedBy` see it.
pub(crate) struct Opening<'a> {
    /// Its key in the connection limits (`webhook:NAME`, `schedule:OWNER`).
    pub limits_key: &'a str,
    /// Its audit label.
    pub label: String,
    /// The transport its calls are judged as (local-only methods need `Local`).
    pub kind: TransportKind,
    /// The face it is (`decidedBy.client`).
    pub client: String,
    /// Its outbound queue counts in this principal's share, if any.
    pub queue_of: Option<&'a str>,
}

/// An open unattended caller; [`UnattendedCaller::close`] gives its slot back.
pub(crate) struct UnattendedCaller {
    daemon: Arc<Daemon>,
    ctx: Arc<ConnectionContext>,
    writer: JoinHandle<()>,
    next_id: AtomicU64,
}

impl UnattendedCaller {
    /// Takes a slot in the connection limits (refused like a connection when none is left)
    /// and makes the context.
    pub(crate) fn open(
        daemon: &Arc<Daemon>,
        opening: Opening<'_>,
        acting: Unattended,
    ) -> Result<UnattendedCaller, ErrorObject> {
        let limits = daemon.config.current().limits.clone();
        let admission = daemon.connections.admit(
            Some(opening.limits_key),
            limits.connections_per_principal as usize,
            limits.connections_total as usize,
        )?;
        let peer = PeerIdentity {
            label: opening.label,
            uid: None,
            kind: opening.kind,
            ip: None,
            lineage: Lineage::Outside,
        };
        let (out, rx) = Outbound::new(daemon.stall_timeout);
        if let Some(principal) = opening.queue_of {
            out.count_in(daemon.connections.principal_queue(principal));
        }
        let writer = tokio::spawn(outbound::run_writer(Nowhere, rx, out.clone()));
        let ctx =
            ConnectionContext::new(next_connection_id(), peer, out, admission).acting_for(acting);
        let _ = ctx.handshake.set(Handshake {
            auth_token: None,
            elicitation: false,
            client: opening.client,
        });
        Ok(UnattendedCaller {
            daemon: Arc::clone(daemon),
            ctx: Arc::new(ctx),
            writer,
            next_id: AtomicU64::new(1),
        })
    }

    /// One call through the one request path: its result, or its error (the message
    /// prefixed with the method).
    pub(crate) async fn call(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let raw = serde_json::value::to_raw_value(&params)
            .map_err(|e| ErrorObject::internal(format!("{method}: params: {e}")))?;
        let request = Request {
            id: Some(Id::from_value(&json!(n))),
            method: method.to_owned(),
            params: Some(raw),
        };
        let mut answer = None;
        let deliver = |line| {
            answer = Some(line);
            std::future::ready(())
        };
        let call = Call::new(request);
        request::answer(&self.daemon, &self.ctx, Front::Post, call, None, deliver).await;
        let line = answer.ok_or_else(|| ErrorObject::internal(format!("{method}: no answer")))?;
        let mut reply: Value = serde_json::from_slice(&line)
            .map_err(|e| ErrorObject::internal(format!("{method}: answer: {e}")))?;
        if let Some(error) = reply.get("error") {
            let code = error["code"].as_i64().unwrap_or(-32603);
            let message = error["message"].as_str().unwrap_or_default();
            return Err(ErrorObject::new(code, format!("{method}: {message}")));
        }
        Ok(reply["result"].take())
    }

    /// The caller is done: it stops counting in the limits at once.
    pub(crate) fn close(self) {
        self.ctx.out.close();
        self.ctx.pending.close();
        self.ctx
            .admission
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .release();
        self.writer.abort();
    }
}

/// A sink that drops what it is given: an unattended turn has no client to show it to.
struct Nowhere;

impl FrameSink for Nowhere {
    fn send_lines<'a>(&'a mut self, _: &'a [Bytes]) -> BoxFuture<'a, io::Result<()>> {
        Box::pin(async { Ok(()) })
    }

    fn shutdown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
