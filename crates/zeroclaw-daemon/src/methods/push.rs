//! `push/subscribe`, `push/unsubscribe`, `push/key` (SPEC §24.3): a browser's Web Push
//! subscription, kept per principal in the store, and the VAPID public key it subscribes
//! with (made at first use). The notifications themselves are `zeroclaw-notify`'s.

use zeroclaw_notify::push::{decode_b64, endpoint_allowed};
use zeroclaw_protocol::push::{
    PushKeyResult, PushSubscribeParams, PushSubscribeResult, PushUnsubscribeParams,
    PushUnsubscribeResult,
};
use zeroclaw_protocol::system::NoParams;
use zeroclaw_rpc::ErrorObject;
use zeroclaw_store::PushSubscription;

use crate::auth::Principal;
use crate::state::Daemon;

/// The longest endpoint URL accepted.
const MAX_ENDPOINT: usize = 2048;

fn storage(e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::internal(format!("push subscriptions: {e}"))
}

/// `push/subscribe {endpoint, keys: {p256dh, auth}}`.
pub(crate) async fn subscribe(
    daemon: &Daemon,
    principal: &Principal,
    p: PushSubscribeParams,
) -> Result<PushSubscribeResult, ErrorObject> {
    // Test builds admit a push service on this machine (the e2e tests' fake one).
    let local = cfg!(feature = "test-hooks");
    if p.endpoint.len() > MAX_ENDPOINT || !endpoint_allowed(&p.endpoint, local) {
        return Err(ErrorObject::invalid_params(format!(
            "endpoint must be an https:// URL of a public host (not this machine or a private \
             network) of at most {MAX_ENDPOINT} bytes"
        )));
    }
    let Some(p256dh) = decode_b64(&p.keys.p256dh) else {
        return Err(ErrorObject::invalid_params("keys.p256dh is not base64url"));
    };
    let Some(auth) = decode_b64(&p.keys.auth) else {
        return Err(ErrorObject::invalid_params("keys.auth is not base64url"));
    };
    zeroclaw_notify::ece::check_keys(&p256dh, &auth)
        .map_err(|e| ErrorObject::invalid_params(e.to_string()))?;
    daemon
        .sessions
        .store
        .save_push_subscription(PushSubscription {
            endpoint: p.endpoint,
            principal: principal.id.clone(),
            p256dh: p.keys.p256dh,
            auth: p.keys.auth,
        })
        .await
        .map_err(storage)?;
    Ok(PushSubscribeResult { subscribed: true })
}

/// `push/unsubscribe {endpoint}`: the caller's own subscription only.
pub(crate) async fn unsubscribe(
    daemon: &Daemon,
    principal: &Principal,
    p: PushUnsubscribeParams,
) -> Result<PushUnsubscribeResult, ErrorObject> {
    let unsubscribed = daemon
        .sessions
        .store
        .remove_push_subscription(Some(&principal.id), &p.endpoint)
        .await
        .map_err(storage)?;
    Ok(PushUnsubscribeResult { unsubscribed })
}

/// `push/key`.
pub(crate) async fn key(daemon: &Daemon, _: NoParams) -> Result<PushKeyResult, ErrorObject> {
    let notifier = daemon
        .notifier
        .get()
        .ok_or_else(|| ErrorObject::internal("notifications are not running"))?;
    let vapid = notifier
        .vapid()
        .map_err(|e| ErrorObject::internal(format!("no VAPID key: {e}")))?;
    Ok(PushKeyResult {
        public_key: vapid.public_key().to_owned(),
    })
}
