//! The daemon side of the bridge: one connection to the daemon, opened on first use and
//! again after it was lost. For `zeroclaw acp` it is the daemon's endpoint; when nothing
//! serves it, `zeroclaw daemon --ephemeral` (this same executable) is started for the same
//! config dir and its socket waited for; that daemon exits by itself once its last client
//! is gone. For the gateway's `/acp` (SPEC §25) the daemon hands in a [`Connect`] that
//! opens an in-process connection, authenticated at `initialize` with the editor's token
//! like any WebSocket client, so the principal rules are the daemon's own.

use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol_schema::v1::ErrorCode as AcpCode;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::system::{ClientCapabilities, ClientInfo, InitializeParams};
use zeroclaw_client::{Client, ClientError, ClientHandle, Events};
use zeroclaw_rpc::{ErrorObject, code};

/// The two halves of a byte stream to the daemon, speaking NDJSON.
pub type Halves = (
    Pin<Box<dyn AsyncRead + Send>>,
    Pin<Box<dyn AsyncWrite + Send>>,
);
/// Opens a connection to the daemon from inside it (the gateway's `/acp`).
pub type Connect = Arc<dyn Fn() -> Result<Halves, String> + Send + Sync>;

/// How the bridge reaches the daemon.
enum Connector {
    /// The local endpoint, starting a daemon when none serves it (`zeroclaw acp`).
    Endpoint,
    /// A connection the daemon opens for us; it needs the editor's token.
    InProcess(Connect),
}

/// How long a started daemon may take to serve its socket.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long one connection attempt (connect + `initialize`) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections tried when a fresh one closes before answering `initialize`.
const CONNECT_ATTEMPTS: u32 = 5;
/// Ordinary daemon calls (everything but `session/prompt`).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// One connection to the daemon; `generation` tells a lost link from its successor.
#[derive(Clone)]
pub struct Link {
    pub generation: u64,
    pub client: ClientHandle,
}

/// Where the daemon is and how to start one.
pub struct Daemon {
    connector: Connector,
    /// The token sent as `authToken` at the daemon's `initialize` (`/acp` only).
    token: Mutex<Option<String>>,
    endpoint: PathBuf,
    config_dir: Option<PathBuf>,
    /// `--socket`, passed on to a started daemon as `ZEROCLAW_SOCKET`.
    socket: Option<PathBuf>,
    current: Mutex<Option<Link>>,
    /// Serializes connection attempts so two requests never start two daemons. Every
    /// await under it is bounded (connect, initialize and the start wait have timeouts).
    gate: tokio::sync::Mutex<u64>,
}

impl Daemon {
    pub fn new(endpoint: PathBuf, config_dir: Option<PathBuf>, socket: Option<PathBuf>) -> Self {
        Daemon {
            connector: Connector::Endpoint,
            token: Mutex::new(None),
            endpoint,
            config_dir,
            socket,
            current: Mutex::new(None),
            gate: tokio::sync::Mutex::new(0),
        }
    }

    /// A daemon reached through `connect`, authenticated with `token` (SPEC §25).
    pub fn in_process(connect: Connect, token: Option<String>) -> Self {
        Daemon {
            connector: Connector::InProcess(connect),
            token: Mutex::new(token),
            endpoint: PathBuf::from("(in-process)"),
            config_dir: None,
            socket: None,
            current: Mutex::new(None),
            gate: tokio::sync::Mutex::new(0),
        }
    }

    /// Whether the editor must give a token (ACP `authenticate`) before anything else.
    pub fn needs_token(&self) -> bool {
        matches!(self.connector, Connector::InProcess(_))
    }

    /// Whether a link to the daemon is up (the editor is authenticated).
    pub fn is_linked(&self) -> bool {
        self.current().is_some()
    }

    /// Sets the token of the next connection (ACP `authenticate`).
    pub fn set_token(&self, token: Option<String>) {
        *self.token.lock().unwrap_or_else(|p| p.into_inner()) = token;
    }

    /// Whether a token was given (the upgrade's bearer, or `authenticate`).
    pub fn has_token(&self) -> bool {
        self.token().is_some()
    }

    fn token(&self) -> Option<String> {
        self.token.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn current(&self) -> Option<Link> {
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The live link, connecting (and starting a daemon) when there is none. A new
    /// connection comes with its event queue, for the caller to route.
    pub async fn link(&self, elicitation: bool) -> Result<(Link, Option<Events>), ErrorObject> {
        if let Some(link) = self.current() {
            return Ok((link, None));
        }
        let mut generation = self.gate.lock().await;
        if let Some(link) = self.current() {
            return Ok((link, None));
        }
        let token = self.token();
        if self.needs_token() && token.is_none() {
            return Err(auth_required(
                "call authenticate with a pairing or dashboard token first",
            ));
        }
        let mut attempt = 1;
        let (client, events) = loop {
            let client = match &self.connector {
                Connector::Endpoint => self.connect_or_start().await?,
                Connector::InProcess(connect) => {
                    let (reader, writer) = connect().map_err(ErrorObject::internal)?;
                    Client::over(reader, writer)
                }
            };
            let (client, events) = client.split();
            let init = tokio::time::timeout(
                CONNECT_TIMEOUT,
                initialize(&client, elicitation, token.clone()),
            )
            .await
            .map_err(|_| ErrorObject::internal("the daemon did not answer initialize in time"))?;
            match init {
                Ok(_) => break (client, events),
                // A daemon that just died can still accept on its listener for a moment:
                // the connection then closes at once. Try again (a new daemon is started
                // once the endpoint refuses).
                Err(e) if is_closed(&e) && attempt < CONNECT_ATTEMPTS && !self.needs_token() => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(ClientError::Rpc(e)) if self.needs_token() => {
                    return Err(auth_required(&e.message));
                }
                Err(e) => return Err(daemon_error(e)),
            }
        };
        *generation += 1;
        let link = Link {
            generation: *generation,
            client,
        };
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(link.clone());
        Ok((link, Some(events)))
    }

    /// Forgets a link that was found closed (the next [`Daemon::link`] reconnects).
    pub fn lost(&self, generation: u64) {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if current.as_ref().is_some_and(|l| l.generation == generation) {
            tracing::warn!("lost the connection to the daemon");
            *current = None;
        }
    }

    async fn connect(&self) -> std::io::Result<Client> {
        match tokio::time::timeout(CONNECT_TIMEOUT, Client::connect(&self.endpoint)).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(ClientError::Io(e))) => Err(e),
            Ok(Err(other)) => Err(std::io::Error::other(other.to_string())),
            Err(_) => Err(std::io::Error::from(std::io::ErrorKind::TimedOut)),
        }
    }

    async fn connect_or_start(&self) -> Result<Client, ErrorObject> {
        match self.connect().await {
            Ok(client) => return Ok(client),
            Err(e) => tracing::info!(
                "no daemon at {} ({e}); starting an ephemeral one",
                self.endpoint.display()
            ),
        }
        let mut child = self.spawn_daemon()?;
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(client) = self.connect().await {
                // Reap the daemon whenever it exits (it outlives us by about a second).
                tokio::spawn(async move {
                    let _ = child.wait().await;
                });
                return Ok(client);
            }
            if let Ok(Some(status)) = child.try_wait() {
                // Another daemon may have won the race for the endpoint: try it once more.
                if let Ok(client) = self.connect().await {
                    return Ok(client);
                }
                return Err(ErrorObject::internal(format!(
                    "the daemon started for {} exited with {status}",
                    self.endpoint.display()
                )));
            }
            if Instant::now() > deadline {
                let _ = child.start_kill();
                return Err(ErrorObject::internal(format!(
                    "the started daemon did not serve {} within {}s",
                    self.endpoint.display(),
                    START_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn spawn_daemon(&self) -> Result<tokio::process::Child, ErrorObject> {
        let exe = std::env::current_exe()
            .map_err(|e| ErrorObject::internal(format!("cannot find this executable: {e}")))?;
        let mut cmd = tokio::process::Command::new(exe);
        cmd.arg("daemon").arg("--ephemeral");
        if let Some(dir) = &self.config_dir {
            cmd.arg("--config-dir").arg(dir);
        }
        if let Some(socket) = &self.socket {
            cmd.env("ZEROCLAW_SOCKET", socket);
        }
        // stdout belongs to the editor: the daemon never writes there.
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        // Its own process group: a signal to the editor's agent process group does not
        // take the daemon (shared by other clients) down with it; it exits on its own
        // once its last client is gone.
        #[cfg(unix)]
        cmd.process_group(0);
        cmd.spawn()
            .map_err(|e| ErrorObject::internal(format!("cannot start the daemon: {e}")))
    }
}

/// The daemon's `initialize` for the bridge, with the editor's token when it has one.
async fn initialize(
    client: &ClientHandle,
    elicitation: bool,
    auth_token: Option<String>,
) -> Result<Value, ClientError> {
    let params = InitializeParams {
        protocol_version: Some(Value::from(
            zeroclaw_client::protocol::system::PROTOCOL_VERSION,
        )),
        client_info: Some(
            ClientInfo {
                name: Some("zeroclaw-acp".to_owned()),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            }
            .into(),
        ),
        client_capabilities: elicitation.then(|| {
            ClientCapabilities {
                elicitation: Some(Value::Object(Default::default())),
            }
            .into()
        }),
        auth_token,
        auth_code: None,
    };
    client
        .call_typed_value_within::<call::Initialize>(&params, CONNECT_TIMEOUT)
        .await
}

/// ACP's "authentication required" (-32000), with why.
pub fn auth_required(why: &str) -> ErrorObject {
    ErrorObject::new(
        acp_code(AcpCode::AuthRequired),
        format!("authentication required: {why}"),
    )
}

/// An ACP error code (the ACP schema's, not the daemon's) as it goes on the wire.
pub fn acp_code(c: AcpCode) -> i64 {
    i64::from(i32::from(c))
}

/// ACP's "resource not found" for a session the editor named.
pub fn session_not_found(session_id: &str) -> ErrorObject {
    ErrorObject::new(
        acp_code(AcpCode::ResourceNotFound),
        format!("session {session_id} not found"),
    )
}

/// A daemon failure as an error for the editor. The daemon's own codes that mean
/// something else in ACP are translated (ACP: -32000 = authentication required, -32002 =
/// resource not found).
pub fn daemon_error(e: ClientError) -> ErrorObject {
    match e {
        ClientError::Rpc(e) => {
            let acp_code = match e.code {
                code::SESSION_NOT_FOUND => acp_code(AcpCode::ResourceNotFound),
                code::SESSION_BUSY => code::INVALID_REQUEST,
                code::NOT_OWNER | code::FORBIDDEN => code::INVALID_PARAMS,
                code::PARSE_ERROR
                | code::INVALID_REQUEST
                | code::METHOD_NOT_FOUND
                | code::INVALID_PARAMS => e.code,
                _ => code::INTERNAL_ERROR,
            };
            let mut out = ErrorObject::new(acp_code, e.message);
            out.data = e.data;
            out
        }
        ClientError::Closed => ErrorObject::internal("the daemon closed the connection"),
        ClientError::Timeout => ErrorObject::internal("the daemon did not answer in time"),
        ClientError::Io(e) => ErrorObject::internal(format!("daemon connection: {e}")),
        ClientError::Unexpected(why) => ErrorObject::internal(why),
    }
}

/// True when the error means the connection is gone (the next call should reconnect).
pub fn is_closed(e: &ClientError) -> bool {
    matches!(e, ClientError::Closed | ClientError::Io(_))
}
