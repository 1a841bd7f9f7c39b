//! `webhook/list` and `webhook/deliveries {name, limit?}` (SPEC §23.1): the configured
//! webhooks, and what became of each webhook's recent deliveries.

use crate::{SessionId, TurnId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One configured webhook (its secret is never shown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookEntry {
    pub name: String,
    /// The gateway path deliveries are posted to: `/webhooks/NAME`.
    pub path: String,
    pub agent: String,
    /// `new`, `per_key` or a session id.
    pub session: String,
    /// Empty: every event.
    pub events: Vec<String>,
    /// Empty: the daemon's owner.
    pub run_as: String,
    pub rate_per_minute: u32,
    /// Whether its secret is set (a `secret_env` naming an unset variable is not).
    pub has_secret: bool,
}

/// `webhook/list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookListResult {
    pub webhooks: Vec<WebhookEntry>,
}

/// `webhook/deliveries` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookDeliveriesParams {
    pub name: String,
    /// Default 20, at most 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// One delivery, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDelivery {
    /// Milliseconds since the Unix epoch.
    pub time: i64,
    pub id: String,
    /// `accepted` (its turn runs), `completed`, `cancelled` or `failed`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `webhook/deliveries` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookDeliveriesResult {
    pub deliveries: Vec<WebhookDelivery>,
}
