//! `config/get`, `config/set`, `config/set-many`, `config/delete` (SPEC §6).
//!
//! Writes hand the store a closure that resolves the caller's principal and checks its
//! grant; the store runs it *after* taking the config write lock, so a grant revoked while
//! the call waited for the lock rejects it. Every write answers `restartRequired` (a bool):
//! true when a written property is read only at start (`wss.*`, `limits.*`).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use zeroclaw_config::policy::{self, Credential, Principal};
use zeroclaw_config::{Config, PropPath};
use zeroclaw_rpc::ErrorObject;

use crate::auth;
use crate::connection::ConnectionContext;
use crate::params;
use crate::state::Daemon;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GetParams {
    #[serde(default)]
    prop: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetParams {
    prop: String,
    value: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteParams {
    prop: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetManyParams {
    sets: Vec<Value>,
}

pub async fn call(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    method: &'static str,
    params: Option<Value>,
) -> Result<Value, ErrorObject> {
    let store = &daemon.config;
    match method {
        "config/get" => {
            let p: GetParams = params::decode(params)?;
            let value = store.get(p.prop.as_deref())?;
            Ok(match p.prop {
                Some(prop) => json!({"prop": prop, "value": value}),
                None => json!({"config": value}),
            })
        }
        "config/set" => {
            let p: SetParams = params::decode(params)?;
            let prop = store
                .set(&p.prop, p.value, writer(daemon, conn, method)?)
                .await?;
            let restart = restart_required([&prop]);
            Ok(json!({"prop": prop, "set": true, "restartRequired": restart}))
        }
        "config/delete" => {
            let p: DeleteParams = params::decode(params)?;
            let prop = store.delete(&p.prop, writer(daemon, conn, method)?).await?;
            let restart = restart_required([&prop]);
            Ok(json!({"prop": prop, "deleted": true, "restartRequired": restart}))
        }
        "config/set-many" => {
            let p: SetManyParams = params::decode(params)?;
            let sets = p
                .sets
                .into_iter()
                .enumerate()
                .map(entry)
                .collect::<Result<Vec<_>, _>>()?;
            let props = store.set_many(sets, writer(daemon, conn, method)?).await?;
            let restart = restart_required(&props);
            Ok(json!({"props": props, "set": true, "restartRequired": restart}))
        }
        _ => Err(ErrorObject::method_not_found(method)),
    }
}

/// Whether any of the written (canonical) props takes effect only after a restart.
fn restart_required<S: AsRef<str>>(props: impl IntoIterator<Item = S>) -> bool {
    props
        .into_iter()
        .any(|p| PropPath::parse(p.as_ref()).is_ok_and(|path| Config::needs_restart(&path)))
}

/// One `{prop, value}` entry of `config/set-many`.
fn entry((index, raw): (usize, Value)) -> Result<(String, Value), ErrorObject> {
    let Value::Object(mut obj) = raw else {
        return Err(ErrorObject::invalid_params(format!(
            "config entry {index}: expected {{prop, value}}"
        ))
        .with_data(json!({"index": index})));
    };
    let prop = match obj.remove("prop") {
        Some(Value::String(prop)) => prop,
        _ => {
            return Err(ErrorObject::invalid_params(format!(
                "config entry {index}: prop must be a string"
            ))
            .with_data(json!({"index": index})));
        }
    };
    let Some(value) = obj.remove("value") else {
        return Err(ErrorObject::invalid_entry(
            index,
            &prop,
            format!("config entry {index} ({prop}): value is missing"),
        ));
    };
    if let Some(extra) = obj.keys().next() {
        return Err(ErrorObject::invalid_entry(
            index,
            &prop,
            format!("config entry {index} ({prop}): unknown field {extra}"),
        ));
    }
    Ok((prop, value))
}

/// The authorization step a write runs under the config lock: the caller's principal from
/// the config current at that moment, holding the grant `method` needs.
fn writer(
    daemon: &Arc<Daemon>,
    conn: &ConnectionContext,
    method: &'static str,
) -> Result<impl FnOnce(&Config) -> Result<Principal, ErrorObject> + use<>, ErrorObject> {
    let cred: Credential = auth::credential_of(daemon, conn)?;
    let uid = daemon.uid;
    Ok(move |config: &Config| {
        let principal = policy::resolve(config, &cred, uid)?;
        principal.check_method(method)?;
        Ok(principal)
    })
}
