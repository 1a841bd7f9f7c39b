//! The state `zeroclaw acp` shares between its stdin loop and the tasks it spawns
//! ([`Bridge`]): the editor's side ([`Editor`]), the daemon link ([`Daemon`]), and what is
//! known of each session the editor opened ([`Session`], with its running [`Turn`]). Also
//! the one way to call the daemon, through the method table ([`Bridge::call`]), and to decode the editor's params
//! ([`decode`]). The router of a new link's events is handed in at start
//! ([`Bridge::router`]), so this file imports none of the method files.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;
use zeroclaw_client::protocol::Call;
use zeroclaw_client::{ClientError, ClientHandle, Events};
use zeroclaw_rpc::ErrorObject;

use super::daemon::{self, Daemon, Link};
use super::output::Outputs;
use super::stdio::Editor;

/// Starts routing the events of a new daemon link (generation, handle, queue).
pub type Router = fn(Arc<Bridge>, u64, ClientHandle, Events);

/// What `zeroclaw acp` knows about one session the editor opened (new or load).
#[derive(Default)]
pub struct Session {
    pub cwd: PathBuf,
    /// The running prompt, if any.
    pub turn: Option<Turn>,
    /// The last `tool_call` seen, for the `approval_request` that follows it.
    pub last_tool_call: Option<(String, String, Value)>,
    /// Open permission requests, by daemon `requestId` (the editor's turns and others').
    pub approvals: HashMap<String, Approval>,
    /// Questions (`elicitation/create`) forwarded to the editor and still open, by the
    /// daemon's question `requestId` (withdrawn when settled elsewhere, SPEC §22).
    pub questions: HashMap<String, Approval>,
    /// The title last told to the editor (`session_info_update`, SPEC §25).
    pub title: Option<String>,
    /// The message the last chunk belonged to: turn, chunk kind, number (message ids).
    pub message: Option<(String, &'static str, u32)>,
    /// Output of the tools running now.
    pub outputs: Outputs,
}

/// A `session/request_permission` the editor has open.
pub struct Approval {
    /// The task waiting for the editor's answer.
    pub task: AbortHandle,
    /// The JSON-RPC id of the request sent to the editor, once sent.
    pub editor_id: Option<String>,
}

/// The running prompt of a session.
pub struct Turn {
    pub serial: u64,
    /// The text this prompt sent, until its `user_message` is recognised (SPEC §18: the
    /// editor's own prompt is never sent back to it).
    pub prompt: Option<String>,
    /// The daemon turn that runs this prompt, once its `user_message` was seen.
    pub turn_id: Option<String>,
    /// The editor cancelled it: the answer is `cancelled` whatever the daemon says.
    pub cancelled: bool,
    /// Fired by the event router when this turn's `turn_complete` has been forwarded.
    pub done: Option<oneshot::Sender<()>>,
}

/// State shared by the stdin loop and the tasks it spawns.
pub struct Bridge {
    pub editor: Editor,
    pub daemon: Daemon,
    pub agent: String,
    /// The editor declared the elicitation capability.
    pub elicitation: AtomicBool,
    /// `initialize` has succeeded; every other request is refused until then.
    pub initialized: AtomicBool,
    pub sessions: Mutex<HashMap<String, Session>>,
    /// Routes a new link's events (set by the stdin loop).
    pub router: Router,
}

impl Bridge {
    pub fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The daemon link, connected (or started) on demand; a new link's events are routed.
    pub async fn link(self: &Arc<Self>) -> Result<Link, ErrorObject> {
        let (link, events) = self
            .daemon
            .link(self.elicitation.load(Ordering::Relaxed))
            .await?;
        if let Some(events) = events {
            (self.router)(
                Arc::clone(self),
                link.generation,
                link.client.clone(),
                events,
            );
        }
        Ok(link)
    }

    /// One daemon call of method `C` (not `session/prompt`) with its params type, its
    /// result decoded into its result type; errors translated for the editor.
    pub async fn call<C: Call>(
        self: &Arc<Self>,
        params: &C::Params,
    ) -> Result<C::Result, ErrorObject> {
        let link = self.link().await?;
        link.client
            .call_typed_within::<C>(params, daemon::CALL_TIMEOUT)
            .await
            .map_err(|e| self.failed(&link, e))
    }

    /// Like [`Bridge::call`], with the result as the daemon sent it (for answers read one
    /// field at a time, or only for their success).
    pub async fn send<C: Call>(self: &Arc<Self>, params: &C::Params) -> Result<Value, ErrorObject> {
        let link = self.link().await?;
        link.client
            .call_typed_value_within::<C>(params, daemon::CALL_TIMEOUT)
            .await
            .map_err(|e| self.failed(&link, e))
    }

    /// Translates a daemon failure, forgetting the link when it is gone.
    pub fn failed(&self, link: &Link, e: ClientError) -> ErrorObject {
        if daemon::is_closed(&e) {
            self.daemon.lost(link.generation);
        }
        daemon::daemon_error(e)
    }
}

/// Decodes request params (absent = `{}`) into an ACP schema type; -32602 otherwise.
pub fn decode<T: DeserializeOwned>(method: &str, params: Option<Value>) -> Result<T, ErrorObject> {
    serde_json::from_value(params.unwrap_or_else(|| json!({})))
        .map_err(|e| ErrorObject::invalid_params(format!("{method}: {e}")))
}
