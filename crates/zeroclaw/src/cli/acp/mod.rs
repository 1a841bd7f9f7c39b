//! `zeroclaw acp` (SPEC §15): an Agent Client Protocol agent on stdin/stdout that drives
//! daemon sessions for an editor. This file owns the shared state ([`Bridge`]) and the
//! stdin loop that dispatches the editor's frames; the other files own the stdio framing
//! ([`stdio`]), the daemon connection ([`daemon`]), the session methods ([`sessions`]),
//! prompts and cancels ([`turns`]), what the daemon sends unasked ([`events`]) and the
//! mapping of updates ([`updates`]) and prompts ([`prompt`]).

mod daemon;
mod events;
mod prompt;
mod sessions;
mod stdio;
mod turns;
mod updates;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::BufReader;
use zeroclaw_rpc::{ErrorObject, Frame, FrameReader, Inbound, MAX_FRAME_BYTES};

use daemon::{Daemon, Link};
use stdio::Editor;

/// Command-line options of `zeroclaw acp`.
pub struct Options {
    pub config_dir: Option<PathBuf>,
    pub socket: Option<PathBuf>,
    pub agent: String,
}

/// What `zeroclaw acp` knows about one session the editor opened (new or load).
#[derive(Default)]
pub struct Session {
    pub cwd: PathBuf,
    /// The running prompt, if any.
    pub turn: Option<turns::Turn>,
    /// The last `tool_call` seen, for the `approval_request` that follows it.
    pub last_tool_call: Option<(String, String, Value)>,
}

/// State shared by the stdin loop and the tasks it spawns.
pub struct Bridge {
    pub editor: Editor,
    pub daemon: Daemon,
    pub agent: String,
    /// The editor declared the elicitation capability.
    pub elicitation: AtomicBool,
    pub sessions: Mutex<HashMap<String, Session>>,
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
            tokio::spawn(events::route(
                Arc::clone(self),
                link.generation,
                link.client.clone(),
                events,
            ));
        }
        Ok(link)
    }

    /// One daemon call (not `session/prompt`), errors translated for the editor.
    pub async fn call(self: &Arc<Self>, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let link = self.link().await?;
        link.client
            .call_within(method, params, daemon::CALL_TIMEOUT)
            .await
            .map_err(|e| self.failed(&link, e))
    }

    /// Translates a daemon failure, forgetting the link when it is gone.
    pub fn failed(&self, link: &Link, e: zeroclaw_client::ClientError) -> ErrorObject {
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

/// Runs the agent until the editor closes stdin.
pub async fn run(options: Options) -> Result<(), String> {
    let endpoint = super::rpc::endpoint(options.config_dir.clone(), options.socket.clone())?;
    let bridge = Arc::new(Bridge {
        editor: Editor::start(std::io::BufWriter::new(std::io::stdout())),
        daemon: Daemon::new(endpoint, options.config_dir, options.socket),
        agent: options.agent,
        elicitation: AtomicBool::new(false),
        sessions: Mutex::new(HashMap::new()),
    });
    let mut frames = FrameReader::with_limit(BufReader::new(tokio::io::stdin()), MAX_FRAME_BYTES);
    loop {
        let frame = match frames.next_frame().await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("reading stdin failed: {e}");
                break;
            }
        };
        let line = match frame {
            Frame::Line(line) => line,
            Frame::Oversize => {
                let error =
                    ErrorObject::invalid_request(format!("frame exceeds {MAX_FRAME_BYTES} bytes"));
                bridge.editor.respond(&Value::Null, Err(error)).await;
                continue;
            }
        };
        match zeroclaw_rpc::classify(&line) {
            Inbound::Request(req) => match req.id {
                Some(id) => dispatch(&bridge, id.value(), &req.method, req.params).await,
                None => notification(&bridge, &req.method, req.params).await,
            },
            Inbound::Response(response) => {
                if !bridge.editor.resolve(response) {
                    tracing::warn!("the editor answered a request we did not send");
                }
            }
            Inbound::Reject { id, error } => bridge.editor.respond(&id.value(), Err(error)).await,
            Inbound::DropInvalidResponse(why) => {
                tracing::warn!("the editor sent an invalid response: {why}")
            }
        }
    }
    bridge.editor.close();
    bridge.editor.flushed().await;
    Ok(())
}

/// A request of the editor. Prompts run in their own task (so cancels and permission
/// answers keep flowing); the other methods are short and answered in order.
async fn dispatch(bridge: &Arc<Bridge>, id: Value, method: &str, params: Option<Value>) {
    let outcome = match method {
        "initialize" => sessions::initialize(bridge, params).await,
        "session/new" => sessions::new_session(bridge, params).await,
        "session/load" => sessions::load(bridge, params).await,
        "session/list" => sessions::list(bridge, params).await,
        "session/set_mode" => sessions::set_mode(bridge, params).await,
        "session/prompt" => return turns::prompt(bridge, id, params).await,
        other => Err(ErrorObject::method_not_found(other)),
    };
    bridge.editor.respond(&id, outcome).await;
}

/// A notification of the editor: only `session/cancel` means something here.
async fn notification(bridge: &Arc<Bridge>, method: &str, params: Option<Value>) {
    match method {
        "session/cancel" => turns::cancel(bridge, params).await,
        other => tracing::debug!("ignoring notification {other}"),
    }
}
