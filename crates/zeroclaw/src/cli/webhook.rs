//! `zeroclaw webhook add|list|rm|deliveries|test` (SPEC §23.1): `add` and `rm` write
//! `[webhooks.NAME]` through the daemon's config methods (one atomic `config/set-many`, so
//! every rule — admin-only, a secret required — is the daemon's); `list` and `deliveries`
//! print `webhook/list` and `webhook/deliveries`; `test` signs a payload file with the
//! webhook's secret (`X-Zeroclaw-Signature`) and posts it to the local gateway.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use clap::Subcommand;
use serde_json::json;
use zeroclaw_client::protocol::Unchecked;
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::config::{ConfigDeleteParams, ConfigEntry, ConfigSetManyParams};
use zeroclaw_client::protocol::system::NoParams;
use zeroclaw_client::protocol::webhook::WebhookDeliveriesParams;
use zeroclaw_ipc::Dirs;

use super::error::CliError;
use super::rpc;

#[derive(Subcommand)]
pub enum WebhookAction {
    /// Add (or replace) webhook NAME: deliveries to POST /webhooks/NAME start a turn.
    Add {
        /// The webhook's name (its path is /webhooks/NAME).
        name: String,
        /// The agent whose session each delivery prompts.
        #[arg(long, default_value = "default")]
        agent: String,
        /// The environment variable (of the daemon) holding the signing secret.
        #[arg(long, value_name = "VAR", required_unless_present = "secret")]
        secret_env: Option<String>,
        /// The signing secret itself (stored in the config; prefer --secret-env).
        #[arg(long, conflicts_with = "secret_env")]
        secret: Option<String>,
        /// The user the turn runs as (default: the daemon's owner).
        #[arg(long, value_name = "USER")]
        run_as: Option<String>,
        /// The prompt template ({{event}}, {{delivery}}, {{json /pointer}}, {{payload}}).
        #[arg(long)]
        prompt: Option<String>,
        /// `new`, `per_key` (with --key) or a session id.
        #[arg(long)]
        session: Option<String>,
        /// A JSON pointer into the payload naming the session, for `--session per_key`.
        #[arg(long)]
        key: Option<String>,
        /// Events taken, comma-separated (default: every event).
        #[arg(long, value_delimiter = ',')]
        events: Vec<String>,
        /// Deliveries taken per minute (default 60).
        #[arg(long, value_name = "N")]
        rate_per_minute: Option<u32>,
    },
    /// List the configured webhooks.
    List,
    /// Remove webhook NAME.
    Rm {
        /// The webhook's name.
        name: String,
    },
    /// A webhook's recent deliveries, newest first.
    Deliveries {
        /// The webhook's name.
        name: String,
        /// Show at most this many (default 20, at most 200).
        #[arg(long, value_name = "N")]
        limit: Option<u32>,
    },
    /// Sign a payload file with the webhook's secret and post it to the local gateway.
    Test {
        /// The webhook's name.
        name: String,
        /// The JSON payload to send.
        #[arg(long, value_name = "FILE")]
        payload: PathBuf,
        /// The event it names (X-Zeroclaw-Event).
        #[arg(long, default_value = "test")]
        event: String,
    },
}

pub async fn run(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    action: WebhookAction,
    json: bool,
) -> Result<(), CliError> {
    let result = match action {
        WebhookAction::Add {
            name,
            agent,
            secret_env,
            secret,
            run_as,
            prompt,
            session,
            key,
            events,
            rate_per_minute,
        } => {
            let mut sets = vec![("agent", json!(agent))];
            let optional = [
                ("secret_env", secret_env),
                ("secret", secret),
                ("run_as", run_as),
                ("prompt", prompt),
                ("session", session),
                ("key", key),
            ];
            for (prop, value) in optional {
                if let Some(v) = value {
                    sets.push((prop, json!(v)));
                }
            }
            if !events.is_empty() {
                sets.push(("events", json!(events)));
            }
            if let Some(n) = rate_per_minute {
                sets.push(("rate_per_minute", json!(n)));
            }
            let sets = sets
                .into_iter()
                .map(|(prop, value)| {
                    Unchecked::from(ConfigEntry {
                        prop: format!("webhooks.{name}.{prop}"),
                        value,
                    })
                })
                .collect();
            let result = rpc::call::<call::ConfigSetMany>(
                config_dir.clone(),
                socket.clone(),
                &ConfigSetManyParams { sets },
            )
            .await?;
            if !json {
                println!("webhook {name} added: deliveries go to POST <gateway>/webhooks/{name}");
                return Ok(());
            }
            result
        }
        WebhookAction::List => {
            let result = rpc::call::<call::WebhookList>(config_dir, socket, &NoParams {}).await?;
            if !json {
                for w in result["webhooks"].as_array().into_iter().flatten() {
                    println!(
                        "{}\t{}\tagent {}\tsession {}\t{}",
                        w["name"].as_str().unwrap_or(""),
                        w["path"].as_str().unwrap_or(""),
                        w["agent"].as_str().unwrap_or(""),
                        w["session"].as_str().unwrap_or(""),
                        if w["hasSecret"] == true {
                            "secret set"
                        } else {
                            "NO SECRET"
                        },
                    );
                }
                return Ok(());
            }
            result
        }
        WebhookAction::Rm { name } => {
            let params = ConfigDeleteParams {
                prop: format!("webhooks.{name}"),
            };
            let result = rpc::call::<call::ConfigDelete>(config_dir, socket, &params).await?;
            if !json {
                println!("webhook {name} removed");
                return Ok(());
            }
            result
        }
        WebhookAction::Deliveries { name, limit } => {
            let params = WebhookDeliveriesParams { name, limit };
            let result = rpc::call::<call::WebhookDeliveries>(config_dir, socket, &params).await?;
            if !json {
                for d in result["deliveries"].as_array().into_iter().flatten() {
                    println!(
                        "{}\t{}\t{}\t{}\t{}{}",
                        d["time"],
                        d["id"].as_str().unwrap_or(""),
                        d["status"].as_str().unwrap_or(""),
                        d["sessionId"].as_str().unwrap_or("-"),
                        d["turnId"].as_str().unwrap_or("-"),
                        d["error"]
                            .as_str()
                            .map(|e| format!("\t{e}"))
                            .unwrap_or_default(),
                    );
                }
                return Ok(());
            }
            result
        }
        WebhookAction::Test {
            name,
            payload,
            event,
        } => {
            let body = std::fs::read(&payload)
                .map_err(|e| CliError::failed(format!("{}: {e}", payload.display())))?;
            let secret = secret_of(config_dir.clone(), &name)?;
            let gateway = rpc::call::<call::GatewayStart>(config_dir, socket, &NoParams {}).await?;
            let url = gateway["url"].as_str().unwrap_or("");
            let (status, text) = post(url, &name, &event, &secret, &body)?;
            println!("{status} {text}");
            if !(200..300).contains(&status) {
                return Err(CliError::failed(format!("the gateway answered {status}")));
            }
            return Ok(());
        }
    };
    rpc::print_json(&result);
    Ok(())
}

/// The secret of webhook `name`, read from the configuration file (the daemon never reads
/// a secret back) or from the variable its `secret_env` names, in this environment.
fn secret_of(config_dir: Option<PathBuf>, name: &str) -> Result<String, CliError> {
    let dirs = Dirs::resolve(config_dir.as_deref()).map_err(|e| e.to_string())?;
    let path = dirs.config_file();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| CliError::failed(format!("{}: {e}", path.display())))?;
    let config: zeroclaw_config::Config =
        toml::from_str(&text).map_err(|e| CliError::failed(format!("{}: {e}", path.display())))?;
    let hook = config
        .webhooks
        .get(name)
        .ok_or_else(|| CliError::failed(format!("no webhook named {name}")))?;
    zeroclaw_webhooks::secret_of(hook).ok_or_else(|| {
        CliError::failed(format!(
            "webhook {name}'s secret is not set here (secret_env {:?} is unset in this shell)",
            hook.secret_env
        ))
    })
}

/// Posts a signed delivery to `http://127.0.0.1:PORT/webhooks/NAME`: the status and body.
fn post(
    url: &str,
    name: &str,
    event: &str,
    secret: &str,
    body: &[u8],
) -> Result<(u16, String), CliError> {
    let authority = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .ok_or_else(|| {
            CliError::failed(format!(
                "the gateway at {url} uses TLS: post with curl and X-Zeroclaw-Signature instead"
            ))
        })?;
    let signature =
        zeroclaw_webhooks::verify::sign_hex(&zeroclaw_webhooks::verify::key_bytes(secret), body);
    let delivery = format!("test-{}", uuid::Uuid::new_v4().simple());
    let mut stream = TcpStream::connect(authority).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    let head = format!(
        "POST /webhooks/{name} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nX-Zeroclaw-Event: {event}\r\n\
         Idempotency-Key: {delivery}\r\nX-Zeroclaw-Signature: {signature}\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| e.to_string())?;
    let mut reply = Vec::new();
    stream
        .take(64 * 1024)
        .read_to_end(&mut reply)
        .map_err(|e| e.to_string())?;
    let reply = String::from_utf8_lossy(&reply);
    let status = reply
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| CliError::failed("the gateway's answer is not HTTP"))?;
    let text = reply
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.trim().to_owned())
        .unwrap_or_default();
    Ok((status, text))
}
