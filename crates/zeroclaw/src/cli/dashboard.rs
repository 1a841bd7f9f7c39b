//! `zeroclaw dashboard` (SPEC §20): over the local socket, starts the gateway
//! (`gateway/start`) and asks for a login code (`dashboard/login`), prints the login URL,
//! and opens it with the desktop's opener when there is one: `xdg-open` on Linux and the
//! BSDs (only with a `DISPLAY` or `WAYLAND_DISPLAY`), `open` on macOS, `start` on Windows.
//! `--no-open` or `ZEROCLAW_NO_BROWSER=1` only prints.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use zeroclaw_client::Method;

use super::error::CliError;
use super::rpc;

pub async fn run(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    no_open: bool,
    json: bool,
) -> Result<(), CliError> {
    let handle = rpc::handle(config_dir, socket).await?;
    handle
        .call(Method::GatewayStart, json!({}))
        .await
        .map_err(CliError::from_client)?;
    let login = handle
        .call(Method::DashboardLogin, json!({}))
        .await
        .map_err(CliError::from_client)?;
    let url = login["url"].as_str().unwrap_or_default().to_owned();
    if json {
        rpc::print_json(&login);
    } else {
        println!("The dashboard's login link (valid for one use, within 60 s):");
        println!("{url}");
    }
    if no_open || std::env::var("ZEROCLAW_NO_BROWSER").is_ok_and(|v| !v.is_empty() && v != "0") {
        return Ok(());
    }
    match open(&url) {
        Some(Ok(())) => {}
        Some(Err(e)) => eprintln!("could not open a browser ({e}); open the link above"),
        None if !json => eprintln!("no desktop to open a browser on: open the link above"),
        None => {}
    }
    Ok(())
}

/// Starts the desktop's opener on `url`; `None` when there is none to start.
fn open(url: &str) -> Option<std::io::Result<()>> {
    let mut command = opener(url)?;
    let spawned = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    Some(spawned.map(drop))
}

#[cfg(target_os = "macos")]
fn opener(url: &str) -> Option<Command> {
    let mut c = Command::new("open");
    c.arg(url);
    Some(c)
}

#[cfg(windows)]
fn opener(url: &str) -> Option<Command> {
    let mut c = Command::new("cmd");
    // `start`'s first quoted argument is a window title.
    c.args(["/C", "start", ""]).arg(url);
    Some(c)
}

#[cfg(not(any(target_os = "macos", windows)))]
fn opener(url: &str) -> Option<Command> {
    let desktop = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
    if !desktop {
        return None;
    }
    let mut c = Command::new("xdg-open");
    c.arg(url);
    Some(c)
}

/// The `gateway` line of `zeroclaw status`.
pub fn describe_gateway(status: &Value) -> String {
    match status["gateway"]["url"].as_str() {
        Some(url) => url.to_owned(),
        None => "not running (`zeroclaw dashboard` starts it)".to_owned(),
    }
}
