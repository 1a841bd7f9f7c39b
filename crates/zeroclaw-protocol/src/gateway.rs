//! Params and results of the gateway methods (SPEC §20): `gateway/start`, which starts the
//! gateway on the loopback address, and `dashboard/login`, which hands out a one-time code
//! for the web dashboard; plus the `gateway` member of `status`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where the gateway serves (`status.gateway`, the result of `gateway/start`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GatewayInfo {
    /// The dashboard's address: `http://127.0.0.1:PORT/` (`https://` with TLS).
    pub url: String,
}

/// `dashboard/login` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DashboardLoginResult {
    /// The page to open: `http://127.0.0.1:PORT/#code=CODE`.
    pub url: String,
    /// The one-time code, for `initialize {authCode}`.
    pub code: String,
    /// When the code stops working (Unix milliseconds).
    pub expires_at: i64,
}
