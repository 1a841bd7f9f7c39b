//! `zeroclaw config get [PROP]` and `zeroclaw config set PROP JSON`: thin wrappers over the
//! `config/*` methods, so every rule (grants, validation, atomic writes) is the daemon's.

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::{Value, json};

use super::rpc;

#[derive(Subcommand)]
pub enum ConfigAction {
    /// Print one property (or the whole configuration) as JSON.
    Get { prop: Option<String> },
    /// Set one property; VALUE is JSON (`1001`, `"text"`, `["a","b"]`, `{"k":1}`). A bare
    /// word that is not JSON is taken as a string.
    Set { prop: String, value: String },
    /// Remove a key or a map entry.
    Delete { prop: String },
}

pub async fn run(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    action: ConfigAction,
) -> Result<(), String> {
    let (method, params) = match action {
        ConfigAction::Get { prop: Some(prop) } => ("config/get", json!({"prop": prop})),
        ConfigAction::Get { prop: None } => ("config/get", json!({})),
        ConfigAction::Set { prop, value } => {
            let value = serde_json::from_str(&value).unwrap_or(Value::String(value));
            ("config/set", json!({"prop": prop, "value": value}))
        }
        ConfigAction::Delete { prop } => ("config/delete", json!({"prop": prop})),
    };
    let params = params.to_string();
    rpc::call_and_print(config_dir, socket, method, Some(&params)).await
}
