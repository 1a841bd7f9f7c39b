//! `zeroclaw rpc` and `zeroclaw status`: connect, initialize, call one method, print.

use std::path::PathBuf;

use serde_json::Value;
use zeroclaw_client::{Client, ClientError};
use zeroclaw_ipc::Dirs;

/// The endpoint a command-line client talks to: `--socket`, else the resolved one.
pub fn endpoint(config_dir: Option<PathBuf>, socket: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(socket) = socket {
        return Ok(socket);
    }
    let dirs = Dirs::resolve(config_dir.as_deref()).map_err(|e| e.to_string())?;
    zeroclaw_ipc::endpoint_path(&dirs).map_err(|e| e.to_string())
}

/// Connects and initializes a client.
pub async fn connect(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    elicitation: bool,
) -> Result<Client, String> {
    let path = endpoint(config_dir, socket)?;
    let client = Client::connect(&path).await.map_err(|e| {
        format!(
            "cannot connect to {}: {e} (is `zeroclaw daemon` running?)",
            path.display()
        )
    })?;
    client
        .initialize("zeroclaw-cli", elicitation)
        .await
        .map_err(describe)?;
    Ok(client)
}

pub fn describe(e: ClientError) -> String {
    match e {
        ClientError::Rpc(error) => serde_json::json!(error).to_string(),
        other => other.to_string(),
    }
}

pub async fn call_and_print(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    method: &str,
    params: Option<&str>,
) -> Result<(), String> {
    let params: Value = match params {
        Some(text) => {
            serde_json::from_str(text).map_err(|e| format!("params are not valid JSON: {e}"))?
        }
        None => Value::Object(Default::default()),
    };
    // This command prints only the result: events the call causes are discarded.
    let (client, events) = connect(config_dir, socket, false).await?.split();
    drop(events);
    let result = client.call(method, params).await.map_err(describe)?;
    let text = serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?;
    println!("{text}");
    Ok(())
}
