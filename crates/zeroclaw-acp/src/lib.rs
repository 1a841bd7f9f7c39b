//! zeroclaw-acp: the bridge behind `zeroclaw acp` (SPEC §15), an Agent Client Protocol
//! agent on stdin/stdout that drives daemon sessions for an editor. This file owns the stdin loop that dispatches the
//! editor's frames (by the ACP schema's method names); the other files own the shared
//! state ([`bridge`]), the stdio framing ([`stdio`]), the daemon connection ([`daemon`]),
//! the session methods ([`sessions`]), prompts and cancels ([`turns`]), what the daemon
//! sends unasked ([`events`]) and the mapping of updates ([`updates`]) and prompts
//! ([`prompt`]). Layers: this loop → method files and the event router → bridge →
//! daemon link and stdio.

#![forbid(unsafe_code)]

mod bridge;
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
    let endpoint = options.endpoint;
    let bridge = Arc::new(Bridge {
        editor: Editor::start(std::io::BufWriter::new(std::io::stdout())),
        daemon: Daemon::new(endpoint, options.config_dir, options.socket),
        agent: options.agent,
        elicitation: AtomicBool::new(false),
        initialized: AtomicBool::new(false),
        sessions: Mutex::new(HashMap::new()),
        router: events::spawn_route,
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
            Inbound::Request(req) => {
                let params = req.params_value();
                match req.id {
                    Some(id) => dispatch(&bridge, id.value(), &req.method, params).await,
                    None => notification(&bridge, &req.method, params).await,
                }
            }
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
