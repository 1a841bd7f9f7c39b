//! `config/get`, `config/set`, `config/set-many`, `config/delete` (SPEC §6).
//!
//! Writes hand the store a closure that resolves the caller's principal and checks its
//! grant; the store runs it *after* taking the config write lock, so a grant revoked while
//! the call waited for the lock rejects it. Every write answers `restartRequired` (a bool):
//! true when a written property is read only at start (`wss.*`, `limits.*`).
//!
//! The config crate knows no sessions or tokens: the writer handed to it carries the
//! daemon's answer to "does this user name own sessions or pairing tokens?" (SPEC §17.1
//! "Identities cannot be taken"), from the session owners read before the lock (persisted
//! rows, killed ones included), the live sessions and the token file at the moment of the
//! check.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Value, json};
use zeroclaw_config::policy::{self, Credential, Principal};
use zeroclaw_config::{Config, PropPath, Writer};
use zeroclaw_protocol::config::{
    ConfigDeleteParams, ConfigDeleteResult, ConfigEntry, ConfigGetParams, ConfigGetResult,
    ConfigSetManyParams, ConfigSetManyResult, ConfigSetParams, ConfigSetResult,
};
use zeroclaw_protocol::{Method, Unchecked};
use zeroclaw_rpc::ErrorObject;

use crate::auth;
use crate::caller::ConnectionContext;
use crate::state::Daemon;
use crate::wire_error::{self, Wire};

/// `config/get {prop?}`: one property, or the whole configuration.
pub(crate) fn get(daemon: &Daemon, p: ConfigGetParams) -> Result<ConfigGetResult, ErrorObject> {
    let value = daemon
        .config
        .get(p.prop.as_deref())
        .map_err(wire_error::config)?;
    Ok(match p.prop {
        Some(prop) => ConfigGetResult::Prop { prop, value },
        None => ConfigGetResult::Whole { config: value },
    })
}

/// `config/set {prop, value}`.
pub(crate) async fn set(
    daemon: &Arc<Daemon>,
    conn: &ConnectionContext,
    p: ConfigSetParams,
) -> Result<ConfigSetResult, ErrorObject> {
    let writer = writer(daemon, conn, Method::ConfigSet).await?;
    let prop = daemon.config.set(&p.prop, p.value, writer).await?;
    let restart_required = restart_required([&prop]);
    Ok(ConfigSetResult {
        prop,
        set: true,
        restart_required,
    })
}

/// `config/delete {prop}`.
pub(crate) async fn delete(
    daemon: &Arc<Daemon>,
    conn: &ConnectionContext,
    p: ConfigDeleteParams,
) -> Result<ConfigDeleteResult, ErrorObject> {
    let writer = writer(daemon, conn, Method::ConfigDelete).await?;
    let prop = daemon.config.delete(&p.prop, writer).await?;
    let restart_required = restart_required([&prop]);
    Ok(ConfigDeleteResult {
        prop,
        deleted: true,
        restart_required,
    })
}

/// `config/set-many {sets: [{prop, value}]}`: all or nothing.
pub(crate) async fn set_many(
    daemon: &Arc<Daemon>,
    conn: &ConnectionContext,
    p: ConfigSetManyParams,
) -> Result<ConfigSetManyResult, ErrorObject> {
    let sets = p
        .sets
        .into_iter()
        .enumerate()
        .map(entry)
        .collect::<Result<Vec<_>, _>>()?;
    let writer = writer(daemon, conn, Method::ConfigSetMany).await?;
    let props = daemon.config.set_many(sets, writer).await?;
    let restart_required = restart_required(&props);
    Ok(ConfigSetManyResult {
        props,
        set: true,
        restart_required,
    })
}

/// Whether any of the written (canonical) props takes effect only after a restart.
fn restart_required<S: AsRef<str>>(props: impl IntoIterator<Item = S>) -> bool {
    props
        .into_iter()
        .any(|p| PropPath::parse(p.as_ref()).is_ok_and(|path| Config::needs_restart(&path)))
}

/// One `{prop, value}` entry of `config/set-many`.
fn entry((index, raw): (usize, Unchecked<ConfigEntry>)) -> Result<(String, Value), ErrorObject> {
    let Value::Object(mut obj) = raw.into_value() else {
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
/// the config current at that moment, holding the grant `method` needs, with the daemon's
/// knowledge of which user names are in use.
async fn writer(
    daemon: &Arc<Daemon>,
    conn: &ConnectionContext,
    method: Method,
) -> Result<impl FnOnce(&Config) -> Result<Writer, Wire> + use<>, ErrorObject> {
    let cred: Credential = auth::credential(daemon.bearers(), &conn.presented())?;
    let uid = daemon.uid;
    let name_in_use = names_in_use(daemon).await?;
    Ok(move |config: &Config| {
        let principal = policy::resolve(config, &cred, uid).map_err(auth::AuthError::from)?;
        auth::authorize(&principal, method)?;
        Ok(Writer::new(principal, name_in_use))
    })
}

/// Whether a user name owns sessions (persisted, killed, or live) or pairing tokens. The
/// persisted owners are read now; live sessions and tokens are looked at when asked.
async fn names_in_use(
    daemon: &Arc<Daemon>,
) -> Result<impl Fn(&str) -> bool + Send + Sync + use<>, ErrorObject> {
    let persisted: HashSet<String> = daemon
        .sessions
        .store
        .owners()
        .await
        .map_err(|e| ErrorObject::internal(format!("cannot read session owners: {e}")))?
        .into_iter()
        .collect();
    let daemon = Arc::clone(daemon);
    Ok(move |name: &str| {
        let owner = format!("user:{name}");
        persisted.contains(&owner)
            || !daemon
                .sessions
                .visible(&Principal::holding_nothing(owner))
                .is_empty()
            || daemon.tokens.has_user(name)
    })
}
