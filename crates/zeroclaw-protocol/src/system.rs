//! Params and results of the daemon-wide methods: `initialize` (SPEC §4), `status` and
//! `daemon/shutdown` (§5), `models/list` (§16).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::gateway::GatewayInfo;
use crate::unchecked::Unchecked;

/// The only protocol version this vocabulary speaks.
pub const PROTOCOL_VERSION: u64 = 1;
/// Largest frame (one line, `\n` included).
pub const MAX_FRAME_BYTES: u64 = 8 * 1024 * 1024;
/// Largest file that may be attached or uploaded.
pub const MAX_UPLOAD_BYTES: u64 = 10 * 1024 * 1024;
/// Largest decoded chunk of a chunked upload.
pub const UPLOAD_CHUNK_BYTES: u64 = 1024 * 1024;

/// `initialize` params (the whole object may be omitted). `clientInfo` and
/// `clientCapabilities` are taken as sent: only `clientCapabilities.elicitation` is read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Default 1. Any other value is answered with -32011; kept as JSON so the error can
    /// echo exactly what was requested.
    #[serde(
        default,
        alias = "protocol_version",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<u64>")]
    pub protocol_version: Option<Value>,
    #[serde(
        default,
        alias = "client_info",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Unchecked<ClientInfo>>,
    #[serde(
        default,
        alias = "client_capabilities",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_capabilities: Option<Unchecked<ClientCapabilities>>,
    /// A pairing token or a dashboard session token (over WebSocket, this or `authCode`
    /// is required).
    #[serde(default, alias = "auth_token", skip_serializing_if = "Option::is_none")]
    pub auth_token: Option<String>,
    /// A one-time code from `dashboard/login` (SPEC §20), exchanged for a session token
    /// answered as `authToken`. WebSocket only.
    #[serde(default, alias = "auth_code", skip_serializing_if = "Option::is_none")]
    pub auth_code: Option<String>,
}

/// Who the client is (logged, not checked).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// What the client can do. `elicitation: {}` means it answers `elicitation/create`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Value>,
}

impl ClientCapabilities {
    /// Whether the client declared the elicitation capability (present and not null).
    pub fn elicitation(&self) -> bool {
        self.elicitation.as_ref().is_some_and(|e| !e.is_null())
    }
}

impl Unchecked<ClientCapabilities> {
    /// Whether the capabilities as sent declare elicitation (an `elicitation` member, not
    /// null; whatever else was sent, of whatever shape, is ignored).
    pub fn elicitation(&self) -> bool {
        self.as_value()
            .get("elicitation")
            .is_some_and(|e| !e.is_null())
    }
}

/// `initialize` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub protocol_version: u64,
    pub server_version: String,
    /// The same as `protocolVersion`, for clients written against older daemons.
    #[serde(rename = "protocol_version")]
    pub protocol_version_snake: u64,
    /// The same as `serverVersion`, for clients written against older daemons.
    #[serde(rename = "server_version")]
    pub server_version_snake: String,
    pub server_pid: u32,
    pub principal: PrincipalInfo,
    /// Every client → daemon method this connection may call, `initialize` included.
    pub capabilities: Vec<String>,
    pub limits: Limits,
    /// The dashboard session token `authCode` was exchanged for (SPEC §20): present it as
    /// `authToken` (or `Authorization: Bearer`) from now on. Only when `authCode` was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_token: Option<String>,
}

impl InitializeResult {
    /// A result with both spellings of the version fields filled in.
    pub fn new(
        server_version: &str,
        server_pid: u32,
        principal: PrincipalInfo,
        capabilities: Vec<String>,
    ) -> InitializeResult {
        InitializeResult {
            protocol_version: PROTOCOL_VERSION,
            server_version: server_version.to_owned(),
            protocol_version_snake: PROTOCOL_VERSION,
            server_version_snake: server_version.to_owned(),
            server_pid,
            principal,
            capabilities,
            limits: Limits::default(),
            auth_token: None,
        }
    }
}

/// The caller as the daemon resolved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PrincipalInfo {
    /// `operator` or `user:<name>`.
    pub id: String,
    pub admin: bool,
}

/// Sizes a client must respect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub max_frame_bytes: u64,
    pub max_upload_bytes: u64,
    pub upload_chunk_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: MAX_FRAME_BYTES,
            max_upload_bytes: MAX_UPLOAD_BYTES,
            upload_chunk_bytes: UPLOAD_CHUNK_BYTES,
        }
    }
}

/// Params of methods that take none (`status`, `daemon/shutdown`): an empty object, or
/// omitted. Unknown fields are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoParams {}

/// `status` result. The host fields are left out for non-admin principals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusResult {
    pub protocol_version: u64,
    pub server_version: String,
    /// Admin only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_pid: Option<u32>,
    pub uptime_secs: u64,
    /// The plain socket path or pipe name. Admin only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Admin only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_dir: Option<String>,
    /// Admin only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<String>,
    /// Every open connection, initialized or not.
    pub connections: u64,
    /// Live sessions the caller may see.
    pub active_sessions: u64,
    /// Ids of the live sessions the caller may see (each once).
    pub session_ids: Vec<String>,
    /// Those live sessions counted by what they do now (SPEC §22).
    #[serde(default)]
    pub session_counts: SessionCounts,
    /// The gateway (SPEC §20), or null when none runs.
    #[serde(default)]
    pub gateway: Option<GatewayInfo>,
}

/// The live sessions a caller may see, counted (`status.sessionCounts`, SPEC §22):
/// `live = running + waiting + idle`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCounts {
    pub live: u64,
    /// A turn runs or waits to run, and nobody is asked anything.
    pub running: u64,
    /// A turn waits for a person: an approval or an `ask_user` question.
    pub waiting: u64,
    /// No turn runs or waits (such a session rests after `session_idle_secs` once no
    /// client is attached).
    pub idle: u64,
}

/// `daemon/shutdown` result; the daemon then stops gracefully.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownResult {
    pub shutting_down: bool,
}

/// `models/list` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelsListParams {
    /// Only this agent's provider (default: every configured provider).
    #[serde(
        default,
        alias = "agent_alias",
        skip_serializing_if = "Option::is_none"
    )]
    pub agent_alias: Option<String>,
}

/// `models/list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelsListResult {
    pub models: Vec<ModelEntry>,
}

/// One model a provider offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelEntry {
    /// The provider's name in the config (`providers.<name>`).
    pub provider: String,
    pub model: String,
    /// The model the agent (or provider) is configured with.
    pub current: bool,
    /// Set when the provider's list could not be had: this entry is the configured model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
