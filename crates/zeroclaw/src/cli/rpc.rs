//! Connecting to the daemon, and `zeroclaw rpc`: connect, initialize, call one method,
//! print its result as JSON.

use std::path::PathBuf;

use serde_json::Value;
use zeroclaw_client::protocol::Call;
use zeroclaw_client::{Client, ClientError, ClientHandle};
use zeroclaw_ipc::Dirs;

use super::error::CliError;

/// The endpoint a command-line client talks to: `--socket`, else the resolved one.
pub fn endpoint(config_dir: Option<PathBuf>, socket: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(socket) = socket {
        return Ok(socket);
    }
    let dirs = Dirs::resolve(config_dir.as_deref()).map_err(|e| e.to_string())?;
    zeroclaw_ipc::endpoint_path(&dirs).map_err(|e| e.to_string())
}

/// Whether a failed connect means that no daemon serves the endpoint.
fn nobody_listens(e: &ClientError) -> bool {
    matches!(e, ClientError::Io(io) if matches!(
        io.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
    ))
}

/// Connects and initializes a client.
pub async fn connect(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    elicitation: bool,
) -> Result<Client, CliError> {
    connect_as(config_dir, socket, elicitation)
        .await
        .map(|(client, _)| client)
}

/// Connects and initializes a client; also returns the principal label the daemon gave it
/// (`operator`, `user:<name>`; empty if the answer had none).
pub async fn connect_as(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    elicitation: bool,
) -> Result<(Client, String), CliError> {
    connect_named(config_dir, socket, elicitation, "zeroclaw-cli").await
}

/// [`connect_as`] with the client name `initialize` gives (`chat` for the chat, which the
/// daemon reports in `approval_resolved.decidedBy`, SPEC §22).
pub async fn connect_named(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    elicitation: bool,
    name: &str,
) -> Result<(Client, String), CliError> {
    let path = endpoint(config_dir.clone(), socket)?;
    let client = Client::connect(&path).await.map_err(|e| {
        if nobody_listens(&e) {
            CliError::not_running(&path, config_dir.as_deref())
        } else {
            CliError::failed(format!("cannot connect to {}: {e}", path.display()))
        }
    })?;
    let init = client
        .initialize(name, elicitation)
        .await
        .map_err(CliError::from_client)?;
    let principal = init["principal"]["id"].as_str().unwrap_or("").to_string();
    Ok((client, principal))
}

/// A connection for one-shot calls: events the calls cause are discarded.
pub async fn handle(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
) -> Result<ClientHandle, CliError> {
    let (handle, events) = connect(config_dir, socket, false).await?.split();
    drop(events);
    Ok(handle)
}

/// Connects, calls method `C` with its params type and returns its result as the daemon
/// sent it (to print whole with `--json`, or read for people).
pub async fn call<C: Call>(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    params: &C::Params,
) -> Result<Value, CliError> {
    let handle = handle(config_dir, socket).await?;
    handle
        .call_typed_value::<C>(params)
        .await
        .map_err(CliError::from_client)
}

/// Prints a result as indented JSON (`--json`, `zeroclaw rpc`).
pub fn print_json(value: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
    );
}

/// `zeroclaw rpc METHOD [PARAMS]`: the raw result; an error names its code too.
pub async fn call_and_print(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    method: &str,
    params: Option<&str>,
) -> Result<(), CliError> {
    let params: Value = match params {
        Some(text) => {
            serde_json::from_str(text).map_err(|e| format!("params are not valid JSON: {e}"))?
        }
        None => Value::Object(Default::default()),
    };
    let handle = handle(config_dir, socket).await?;
    match handle.call_name(method, params).await {
        Ok(result) => {
            print_json(&result);
            Ok(())
        }
        Err(ClientError::Rpc(error)) => Err(CliError::failed(format!(
            "{} (code {})",
            super::error::describe_rpc(&error),
            error.code
        ))),
        Err(e) => Err(CliError::from_client(e)),
    }
}
