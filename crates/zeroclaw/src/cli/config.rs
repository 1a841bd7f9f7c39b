//! `zeroclaw config get|set|set-many|delete`: thin wrappers over the `config/*` methods,
//! so every rule (grants, validation, atomic writes) is the daemon's. Prints what changed,
//! or the raw result with `--json`.

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::Value;
use zeroclaw_client::protocol::Unchecked;
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::config::{
    ConfigDeleteParams, ConfigEntry, ConfigGetParams, ConfigSetManyParams, ConfigSetParams,
};

use super::error::CliError;
use super::{human, rpc};

#[derive(Subcommand)]
pub enum ConfigAction {
    /// Print one property, or the whole configuration (as TOML).
    Get {
        /// Property path, e.g. `agents.default.model` (default: everything).
        prop: Option<String>,
    },
    /// Set one property.
    Set {
        /// Property path, e.g. `agents.default.model`.
        prop: String,
        /// JSON (`1001`, `"text"`, `["a","b"]`, `{"k":1}`); a bare word that is not JSON
        /// is taken as a string.
        value: String,
    },
    /// Set several properties in one atomic write (e.g. `wss.cert_path` and
    /// `wss.key_path`, which are only valid together).
    SetMany {
        /// `PROP=VALUE` pairs; each VALUE is JSON, else a string.
        #[arg(required = true, value_name = "PROP=VALUE")]
        pairs: Vec<String>,
    },
    /// Remove a key or a map entry.
    Delete {
        /// Property path to remove.
        prop: String,
    },
}

/// A value typed on the command line: JSON when it parses, else the text itself.
fn parse_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

fn parse_pair(pair: &str) -> Result<ConfigEntry, CliError> {
    let (prop, value) = pair
        .split_once('=')
        .ok_or_else(|| CliError::failed(format!("`{pair}` is not PROP=VALUE")))?;
    Ok(ConfigEntry {
        prop: prop.trim().to_string(),
        value: parse_value(value),
    })
}

pub async fn run(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    action: ConfigAction,
    json: bool,
) -> Result<(), CliError> {
    let result = match &action {
        ConfigAction::Get { prop } => {
            let params = ConfigGetParams { prop: prop.clone() };
            rpc::call::<call::ConfigGet>(config_dir, socket, &params).await?
        }
        ConfigAction::Set { prop, value } => {
            let params = ConfigSetParams {
                prop: prop.clone(),
                value: parse_value(value),
            };
            rpc::call::<call::ConfigSet>(config_dir, socket, &params).await?
        }
        ConfigAction::SetMany { pairs } => {
            let sets = pairs
                .iter()
                .map(|p| parse_pair(p).map(Unchecked::from))
                .collect::<Result<Vec<_>, _>>()?;
            let params = ConfigSetManyParams { sets };
            rpc::call::<call::ConfigSetMany>(config_dir, socket, &params).await?
        }
        ConfigAction::Delete { prop } => {
            let params = ConfigDeleteParams { prop: prop.clone() };
            rpc::call::<call::ConfigDelete>(config_dir, socket, &params).await?
        }
    };
    if json {
        rpc::print_json(&result);
        return Ok(());
    }
    print!("{}", describe(&action, &result));
    Ok(())
}

/// What a call did, for people; says so when the change waits for a restart.
fn describe(action: &ConfigAction, result: &Value) -> String {
    let mut text = match action {
        ConfigAction::Get { prop: Some(_) } => human::value(&result["value"]),
        ConfigAction::Get { prop: None } => human::value(&result["config"]),
        ConfigAction::Set { prop, .. } => format!("set {prop}"),
        ConfigAction::SetMany { .. } => {
            let props: Vec<&str> = result["props"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            format!("set {}", props.join(", "))
        }
        ConfigAction::Delete { prop } => format!("deleted {prop}"),
    };
    text.push('\n');
    if result["restartRequired"] == true {
        text.push_str(
            "restart the daemon for this to take effect (zeroclaw stop, then zeroclaw daemon)\n",
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{ConfigAction, ConfigEntry, describe, parse_pair, parse_value};

    #[test]
    fn a_change_that_waits_for_a_restart_says_so() {
        let set = ConfigAction::Set {
            prop: "wss.port".into(),
            value: "9000".into(),
        };
        assert_eq!(
            describe(&set, &json!({"prop": "wss.port", "set": true})),
            "set wss.port\n"
        );
        let text = describe(
            &set,
            &json!({"prop": "wss.port", "set": true, "restartRequired": true}),
        );
        assert!(
            text.starts_with("set wss.port\nrestart the daemon for this to take effect"),
            "{text}"
        );
    }

    #[test]
    fn values_are_json_else_strings() {
        assert_eq!(parse_value("1001"), json!(1001));
        assert_eq!(parse_value("\"x\""), json!("x"));
        assert_eq!(parse_value("/etc/cert.pem"), json!("/etc/cert.pem"));
        let entry = |prop: &str, value| ConfigEntry {
            prop: prop.into(),
            value,
        };
        assert_eq!(
            parse_pair(" wss.port =9000").unwrap(),
            entry("wss.port", json!(9000))
        );
        assert_eq!(parse_pair("a.b=x=y").unwrap(), entry("a.b", json!("x=y")));
        assert!(parse_pair("novalue").is_err());
    }
}
