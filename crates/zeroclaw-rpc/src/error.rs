//! JSON-RPC error objects and the error codes of the zeroclaw contract (SPEC §3.4).
//!
//! The codes themselves are the vocabulary's (`zeroclaw_protocol::ErrorCode`), re-exported
//! here; the constructors below pair each with its message and `data` shape.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The error codes of SPEC §3.4, as the vocabulary writes them.
pub use zeroclaw_protocol::error_code::{ErrorCode, code};

/// The `error` member of a JSON-RPC response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(code::PARSE_ERROR, message)
    }
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_REQUEST, message)
    }
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            code::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    }
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }
    /// Invalid params for one entry of a batch (`config/set-many`): `data {index, prop}`.
    pub fn invalid_entry(index: usize, prop: &str, message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message).with_data(json!({"index": index, "prop": prop}))
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(code::INTERNAL_ERROR, message)
    }
    pub fn session_not_found(message: impl Into<String>) -> Self {
        Self::new(code::SESSION_NOT_FOUND, message)
    }
    pub fn session_limit(limit: usize) -> Self {
        Self::new(
            code::SESSION_LIMIT,
            format!("session limit reached ({limit} live sessions)"),
        )
        .with_data(json!({"limit": limit}))
    }
    pub fn session_busy(message: impl Into<String>) -> Self {
        Self::new(code::SESSION_BUSY, message)
    }
    pub fn not_owner(session_id: &str) -> Self {
        Self::new(
            code::NOT_OWNER,
            format!("caller does not own session {session_id}"),
        )
    }
    pub fn not_initialized(message: impl Into<String>) -> Self {
        Self::new(code::NOT_INITIALIZED, message)
    }
    pub fn version_mismatch(supported: u64, requested: &Value) -> Self {
        Self::new(
            code::VERSION_MISMATCH,
            format!(
                "protocol version mismatch: server supports {supported}, client requested {requested}"
            ),
        )
        .with_data(json!({"supported": [supported], "requested": requested}))
    }
    /// Forbidden. `data` carries whichever of `index`, `resource`, `verb`, `prop` apply.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(code::FORBIDDEN, message)
    }
    /// Limit exceeded, with `data {limit, value}`.
    pub fn limit_exceeded(message: impl Into<String>, limit: u64, value: u64) -> Self {
        Self::new(code::LIMIT_EXCEEDED, message).with_data(json!({"limit": limit, "value": value}))
    }
}

impl std::fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}
