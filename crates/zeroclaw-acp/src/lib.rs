//! zeroclaw-acp: the bridge behind `zeroclaw acp` (SPEC §15, §25), an Agent Client Protocol
//! agent that drives daemon sessions for an editor: on stdin/stdout for `zeroclaw acp`, and
//! over the gateway's `/acp` WebSocket, where the daemon runs the same bridge ([`Agent`])
//! with an in-process connection. This file owns the dispatch of the editor's frames (by
//! the ACP schema's method names) and the stdin loop; the other files own the shared
//! state ([`bridge`]), the stdio framing ([`stdio`]), the daemon connection ([`daemon`]),
//! the session methods ([`sessions`]), prompts and cancels ([`turns`]), what the daemon
//! sends unasked ([`events`]) and the mapping of updates ([`updates`]) and prompts
//! ([`prompt`]), the session life cycle beyond `load` ([`lifecycle`]), the config
//! options ([`options`]), titles ([`info`]) and running tools' output ([`output`]). Layers: this loop → method files and the
//! event router → bridge → daemon link and stdio.

#![forbid(unsafe_code)]

mod bridge;
mod budget;
mod daemon;
mod events;
mod info;
mod lifecycle;
mod opening;
mod options;
mod output;
mod prompt;
mod questions;
mod sessions;
mod stdio;
mod turns;
mod updates;

pub use daemon::{Connect, Halves};
pub use stdio::Outbox;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::AGENT_METHOD_NAMES;
use serde_json::Value;
use tokio::io::BufReader;
use zeroclaw_rpc::{ErrorObject, Frame, FrameReader, Inbound, MAX_FRAME_BYTES};

use bridge::Bridge;
use daemon::Daemon;
use stdio::Editor;

/// Command-line options of `zeroclaw acp`.
pub struct Options {
    /// The daemon's endpoint (resolved by the caller from the two below).
    pub endpoint: PathBuf,
    pub config_dir: Option<PathBuf>,
    pub socket: Option<PathBuf>,
    pub agent: String,
}

/// Runs the agent until the editor closes stdin.
pub async fn run(options: Options) -> Result<(), String> {
    let editor = Editor::start(std::io::BufWriter::new(std::io::stdout()));
    let daemon = Daemon::new(options.endpoint, options.config_dir, options.socket);
    let agent = Agent::new(editor, daemon, options.agent);
    let mut frames = FrameReader::with_limit(BufReader::new(tokio::io::stdin()), MAX_FRAME_BYTES);
    loop {
        match frames.next_frame().await {
            Ok(Some(Frame::Line(line))) => agent.handle(&line).await,
            Ok(Some(Frame::Oversize)) => agent.oversize().await,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("reading stdin failed: {e}");
                break;
            }
        }
    }
    agent.finish().await;
    Ok(())
}

/// One editor's bridge, whatever carries its frames: fed the editor's messages one by
/// one, it answers through its editor side (stdout, or an [`Outbox`]).
pub struct Agent {
    bridge: Arc<Bridge>,
}

impl Agent {
    fn new(editor: Editor, daemon: Daemon, agent: String) -> Agent {
        Agent {
            bridge: Arc::new(Bridge {
                editor,
                daemon,
                agent,
                elicitation: AtomicBool::new(false),
                initialized: AtomicBool::new(false),
                sessions: Mutex::new(HashMap::new()),
                router: events::spawn_route,
            }),
        }
    }

    /// The bridge for one `/acp` WebSocket (SPEC §25): its daemon connections come from
    /// `connect`, authenticated with `token` (the upgrade's bearer) or, when that is
    /// `None`, with the token of the editor's ACP `authenticate`. Frames for the editor
    /// are read from the [`Outbox`].
    pub fn in_process(connect: Connect, token: Option<String>, agent: String) -> (Agent, Outbox) {
        let (editor, outbox) = Editor::queue();
        let agent = Agent::new(editor, Daemon::in_process(connect, token), agent);
        (agent, outbox)
    }

    /// Whether the editor is authenticated (a daemon connection is up).
    pub fn is_authenticated(&self) -> bool {
        self.bridge.daemon.is_linked()
    }

    /// One message of the editor (a JSON-RPC request, notification or response).
    pub async fn handle(&self, line: &[u8]) {
        let bridge = &self.bridge;
        match zeroclaw_rpc::classify(line) {
            Inbound::Request(req) => {
                let params = req.params_value();
                match req.id {
                    Some(id) => dispatch(bridge, id.value(), &req.method, params).await,
                    None => notification(bridge, &req.method, params).await,
                }
            }
            Inbound::Response(response) => {
                if !bridge.editor.resolve(response) {
                    // A late answer to a withdrawn request (SPEC §25), or a stray one.
                    tracing::debug!("ignoring an answer to no open request");
                }
            }
            Inbound::Reject { id, error } => bridge.editor.respond(&id.value(), Err(error)).await,
            Inbound::DropInvalidResponse(why) => {
                tracing::warn!("the editor sent an invalid response: {why}")
            }
        }
    }

    /// A message of the editor over [`MAX_FRAME_BYTES`].
    pub async fn oversize(&self) {
        let error = ErrorObject::invalid_request(format!("frame exceeds {MAX_FRAME_BYTES} bytes"));
        self.bridge.editor.respond(&Value::Null, Err(error)).await;
    }

    /// The editor is gone: requests waiting on it fail; frames queued are written first.
    pub async fn finish(&self) {
        self.bridge.editor.close();
        self.bridge.editor.flushed().await;
    }
}

/// A request of the editor. Prompts run in their own task (so cancels and permission
/// answers keep flowing); the other methods are short and answered in order.
async fn dispatch(bridge: &Arc<Bridge>, id: Value, method: &str, params: Option<Value>) {
    let names = &AGENT_METHOD_NAMES;
    let outcome = if method == names.initialize {
        let answer = sessions::initialize(bridge, params).await;
        if answer.is_ok() {
            bridge.initialized.store(true, Ordering::Release);
        }
        answer
    } else if !bridge.initialized.load(Ordering::Acquire) {
        // ACP requires `initialize` first (SPEC §17.1).
        Err(ErrorObject::invalid_request(
            "not initialized: the first request must be initialize",
        ))
    } else if method == names.session_new {
        sessions::new_session(bridge, params).await
    } else if method == names.session_load {
        sessions::load(bridge, params).await
    } else if method == names.session_list {
        sessions::list(bridge, params).await
    } else if method == names.session_set_mode {
        sessions::set_mode(bridge, params).await
    } else if method == names.authenticate {
        lifecycle::authenticate(bridge, params).await
    } else if method == names.session_resume {
        lifecycle::resume(bridge, params).await
    } else if method == names.session_close {
        lifecycle::close(bridge, params).await
    } else if method == names.session_set_config_option {
        options::set(bridge, params).await
    } else if method == names.session_prompt {
        return turns::prompt(bridge, id, params).await;
    } else {
        Err(ErrorObject::method_not_found(method))
    };
    bridge.editor.respond(&id, outcome).await;
}

/// A notification of the editor: only `session/cancel` means something here.
async fn notification(bridge: &Arc<Bridge>, method: &str, params: Option<Value>) {
    if !bridge.initialized.load(Ordering::Acquire) {
        tracing::debug!("ignoring notification {method} before initialize");
    } else if method == AGENT_METHOD_NAMES.session_cancel {
        turns::cancel(bridge, params).await
    } else {
        tracing::debug!("ignoring notification {method}")
    }
}
