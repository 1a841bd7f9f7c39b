//! `push/subscribe`, `push/unsubscribe` and `push/key` (SPEC §24.3): a browser's Web Push
//! subscription kept per principal, and the daemon's VAPID public key the browser
//! subscribes with.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A subscription's keys, as `PushSubscription.toJSON()` gives them (base64url).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushKeys {
    /// The browser's P-256 public key (uncompressed point).
    pub p256dh: String,
    /// The browser's 16-byte auth secret.
    pub auth: String,
}

/// `push/subscribe` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushSubscribeParams {
    /// The push service's URL for this browser (`https://`).
    pub endpoint: String,
    pub keys: PushKeys,
    /// What browsers add to `toJSON()` (ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration_time: Option<serde_json::Value>,
}

/// `push/subscribe` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PushSubscribeResult {
    pub subscribed: bool,
}

/// `push/unsubscribe` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushUnsubscribeParams {
    pub endpoint: String,
}

/// `push/unsubscribe` result: whether the caller had that subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PushUnsubscribeResult {
    pub unsubscribed: bool,
}

/// `push/key` result: the VAPID public key (base64url, uncompressed point), the
/// `applicationServerKey` of `pushManager.subscribe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushKeyResult {
    pub public_key: String,
}
