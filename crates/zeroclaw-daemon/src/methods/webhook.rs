//! `webhook/list` and `webhook/deliveries {name, limit?}` (SPEC §23.1): the configured
//! webhooks (never their secrets), and a webhook's recent deliveries from the record the
//! gateway's `POST /webhooks/NAME` keeps ([`crate::gateway::webhook`]).

use zeroclaw_protocol::system::NoParams;
use zeroclaw_protocol::webhook::{
    WebhookDeliveriesParams, WebhookDeliveriesResult, WebhookDelivery, WebhookEntry,
    WebhookListResult,
};
use zeroclaw_rpc::ErrorObject;

use crate::state::Daemon;

/// `limit` when not given, and its largest value.
const DEFAULT_LIMIT: u32 = 20;
const MAX_LIMIT: u32 = 200;

/// `webhook/list`.
pub(crate) fn list(daemon: &Daemon, _: NoParams) -> Result<WebhookListResult, ErrorObject> {
    let config = daemon.config.current();
    let webhooks = config
        .webhooks
        .iter()
        .map(|(name, w)| WebhookEntry {
            name: name.clone(),
            path: format!("/webhooks/{name}"),
            agent: w.agent.clone(),
            session: w.session.clone(),
            events: w.events.clone(),
            run_as: w.run_as.clone(),
            rate_per_minute: w.rate_per_minute,
            has_secret: zeroclaw_webhooks::secret_of(w).is_some(),
        })
        .collect();
    Ok(WebhookListResult { webhooks })
}

/// `webhook/deliveries {name, limit?}`.
pub(crate) async fn deliveries(
    daemon: &Daemon,
    p: WebhookDeliveriesParams,
) -> Result<WebhookDeliveriesResult, ErrorObject> {
    if !daemon.config.current().webhooks.contains_key(&p.name) {
        return Err(ErrorObject::invalid_params(format!(
            "name: no webhook named {:?}",
            p.name.chars().take(80).collect::<String>()
        )));
    }
    let limit = match p.limit {
        None => DEFAULT_LIMIT,
        Some(n) if (1..=MAX_LIMIT).contains(&n) => n,
        Some(n) => {
            return Err(ErrorObject::invalid_params(format!(
                "limit: {n} is not in 1..={MAX_LIMIT}"
            )));
        }
    };
    let rows = daemon
        .webhooks
        .deliveries(&p.name, limit)
        .await
        .map_err(|e| {
            ErrorObject::internal(format!("the delivery record could not be read: {e}"))
        })?;
    let deliveries = rows
        .into_iter()
        .map(|d| WebhookDelivery {
            time: d.received_at,
            id: d.delivery_id,
            status: d.status,
            session_id: d.session_id.map(Into::into),
            turn_id: d.turn_id.map(Into::into),
            error: d.error,
        })
        .collect();
    Ok(WebhookDeliveriesResult { deliveries })
}
