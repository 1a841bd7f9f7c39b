//! zeroclaw-webhooks: what the daemon decides about a webhook delivery before any turn
//! starts (SPEC §23.1) — its signature ([`verify`]), its event and rate ([`rate`]), which
//! session it goes to, its prompt ([`template`]) and whether its delivery id was seen in
//! the last 24 h (the idempotency record, kept by the store) — and the record of what
//! became of it.
//!
//! It knows nothing of HTTP or of the wire: the gateway hands it a name, a header lookup
//! and a body, and starts the [`Accepted`] turn through the daemon's one request path.

#![forbid(unsafe_code)]

pub mod rate;
pub mod template;
pub mod verify;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sha2::{Digest, Sha256};
use zeroclaw_config::Config;
use zeroclaw_config::webhooks::{WEBHOOK_SESSION_NEW, WEBHOOK_SESSION_PER_KEY, Webhook};
use zeroclaw_store::{Claim, Delivery, Store};

pub use zeroclaw_store::Delivery as DeliveryRecord;

/// The largest body a delivery may have (else 413).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Delivery ids longer than this are refused (400).
const MAX_DELIVERY_ID: usize = 256;
/// Checked under this when the name is unknown, so both cost the same.
const STAND_IN_SECRET: &str = "zeroclaw: no such webhook";

/// A delivery's verdict that is not a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub status: u16,
    pub message: String,
    /// Seconds, for 429.
    pub retry_after: Option<u64>,
}

impl Refused {
    fn new(status: u16, message: impl Into<String>) -> Refused {
        Refused {
            status,
            message: message.into(),
            retry_after: None,
        }
    }
}

/// A delivery to start: the turn's session, id, prompt and who it runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub webhook: String,
    pub delivery_id: String,
    pub agent: String,
    pub session_id: String,
    pub turn_id: String,
    pub prompt: String,
    /// Empty: the agent's workspace.
    pub cwd: String,
    /// `None`: the agent's.
    pub autonomy: Option<String>,
    /// `None`: the daemon's owner.
    pub run_as: Option<String>,
}

/// What a delivery came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// 202: start this turn.
    Accepted(Accepted),
    /// 200: seen in the last 24 h; the first delivery's session and turn.
    Seen {
        session_id: Option<String>,
        turn_id: Option<String>,
    },
    Refused(Refused),
}

/// The daemon's webhooks: their rates and the delivery record.
pub struct Webhooks {
    store: Store,
    rates: rate::Rates,
}

/// The current Unix time in seconds.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The secret of `hook`: `secret`, else the variable `secret_env` names (`None`: unset).
pub fn secret_of(hook: &Webhook) -> Option<String> {
    if !hook.secret.is_empty() {
        return Some(hook.secret.clone());
    }
    std::env::var(&hook.secret_env)
        .ok()
        .filter(|s| !s.is_empty())
}

/// The event a delivery names: GitHub's header, zeroclaw's, else the payload's `type`
/// (Standard Webhooks puts it there).
fn event_of<'a>(header: &impl Fn(&str) -> Option<&'a str>, payload: &Value) -> String {
    header("x-github-event")
        .or_else(|| header("x-zeroclaw-event"))
        .map(str::to_owned)
        .or_else(|| {
            payload
                .get("type")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// The session a delivery of `hook` goes to.
fn session_for(name: &str, hook: &Webhook, payload: &Value) -> Result<String, Refused> {
    match hook.session.as_str() {
        WEBHOOK_SESSION_NEW => Ok(format!("webhook-{name}-{}", uuid::Uuid::new_v4().simple())),
        WEBHOOK_SESSION_PER_KEY => {
            let value = match payload.pointer(&hook.key) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => {
                    return Err(Refused::new(
                        422,
                        format!(
                            "the payload has no value at {} (webhooks.{name}.key)",
                            hook.key
                        ),
                    ));
                }
                Some(other) => other.to_string(),
            };
            let digest = Sha256::digest(value.as_bytes());
            Ok(format!("webhook-{name}-{}", hex::encode(&digest[..8])))
        }
        fixed => Ok(fixed.to_owned()),
    }
}

impl Webhooks {
    pub fn new(store: Store) -> Webhooks {
        Webhooks {
            store,
            rates: rate::Rates::default(),
        }
    }

    /// Decides delivery `body` to webhook `name` under `config`; `header` gives a request
    /// header by its lowercase name. A delivery it accepts is recorded (its delivery id
    /// claimed) before this returns.
    pub async fn accept<'a>(
        &self,
        config: &Config,
        name: &str,
        header: impl Fn(&str) -> Option<&'a str>,
        body: &[u8],
    ) -> Verdict {
        let hook = config.webhooks.get(name);
        let secret = hook.and_then(secret_of);
        if hook.is_some() && secret.is_none() {
            tracing::warn!(
                webhook = name,
                "its secret_env names an unset variable: deliveries are refused"
            );
        }
        let checked = verify::verify(
            secret.as_deref().unwrap_or(STAND_IN_SECRET),
            &header,
            body,
            unix_now(),
        );
        let (Some(hook), Some(_), Ok(())) = (hook, &secret, checked) else {
            let why = match checked {
                Err(verify::BadSignature::Stale) if hook.is_some() => verify::BadSignature::Stale,
                Err(verify::BadSignature::Absent) => verify::BadSignature::Absent,
                _ => verify::BadSignature::Mismatch,
            };
            return Verdict::Refused(Refused::new(401, format!("webhook refused: {why}")));
        };
        let payload = template::payload_of(header("content-type"), body);
        let event = event_of(&header, &payload);
        if !hook.events.is_empty() && !hook.events.contains(&event) {
            return Verdict::Refused(Refused::new(
                422,
                format!(
                    "event {event:?} is not one webhooks.{name}.events takes ({})",
                    hook.events.join(", ")
                ),
            ));
        }
        if let Err(wait) = self.rates.take(name, hook.rate_per_minute, Instant::now()) {
            let secs = wait.max(Duration::from_secs(1)).as_secs_f64().ceil() as u64;
            return Verdict::Refused(Refused {
                status: 429,
                message: format!(
                    "webhook {name} takes at most {} deliveries a minute: try again in {secs} s",
                    hook.rate_per_minute
                ),
                retry_after: Some(secs),
            });
        }
        let given = header("x-github-delivery")
            .or_else(|| header("webhook-id"))
            .or_else(|| header("idempotency-key"));
        if given.is_some_and(|id| id.is_empty() || id.len() > MAX_DELIVERY_ID) {
            return Verdict::Refused(Refused::new(
                400,
                format!("the delivery id must be 1-{MAX_DELIVERY_ID} bytes"),
            ));
        }
        let delivery_id = given.map_or_else(
            || format!("local-{}", uuid::Uuid::new_v4().simple()),
            str::to_owned,
        );
        let session_id = match session_for(name, hook, &payload) {
            Ok(id) => id,
            Err(refused) => return Verdict::Refused(refused),
        };
        let turn_id = format!("turn_{}", uuid::Uuid::new_v4().simple());
        let record = Delivery {
            webhook: name.to_owned(),
            delivery_id: delivery_id.clone(),
            received_at: 0,
            status: "accepted".to_owned(),
            session_id: Some(session_id.clone()),
            turn_id: Some(turn_id.clone()),
            error: None,
        };
        match self.store.claim_delivery(record).await {
            Ok(Claim::New) => {}
            Ok(Claim::Seen(first)) => {
                return Verdict::Seen {
                    session_id: first.session_id,
                    turn_id: first.turn_id,
                };
            }
            Err(e) => {
                return Verdict::Refused(Refused::new(
                    503,
                    format!("the delivery could not be recorded: {e}"),
                ));
            }
        }
        let prompt = template::render(
            &hook.prompt,
            &template::Delivered {
                webhook: name,
                event: &event,
                delivery: &delivery_id,
                payload: &payload,
            },
        );
        Verdict::Accepted(Accepted {
            webhook: name.to_owned(),
            delivery_id,
            agent: hook.agent.clone(),
            session_id,
            turn_id,
            prompt,
            cwd: hook.cwd.clone(),
            autonomy: hook.autonomy.and_then(|a| {
                serde_json::to_value(a)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
            }),
            run_as: Some(hook.run_as.clone()).filter(|u| !u.is_empty()),
        })
    }

    /// Records what became of an accepted delivery (`completed`, `failed`, `cancelled`).
    pub async fn finish(&self, accepted: &Accepted, status: &str, error: Option<String>) {
        let _ = self
            .store
            .finish_delivery(&accepted.webhook, &accepted.delivery_id, status, error)
            .await;
    }

    /// The last `limit` deliveries of webhook `name`, newest first.
    pub async fn deliveries(
        &self,
        name: &str,
        limit: u32,
    ) -> Result<Vec<Delivery>, zeroclaw_store::StoreError> {
        self.store.deliveries(name, limit).await
    }
}
