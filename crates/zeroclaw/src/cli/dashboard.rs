//! `zeroclaw dashboard` (SPEC §20): over the local socket, starts the gateway
//! (`gateway/start`) and asks for a login code (`dashboard/login`), prints the login URL,
//! and opens it with the desktop's opener when there is one: `xdg-open` on Linux and the
//! BSDs (only with a `DISPLAY` or `WAYLAND_DISPLAY`), `open` on macOS, `start` on Windows.
//! `--no-open` or `ZEROCLAW_NO_BROWSER=1` only prints.
//!
//! The opener never sees the URL (SPEC §17.2): a command line is readable by every user
//! (`/proc/*/cmdline`), and the URL carries the code. It is given the path of a private
//! page that leads the browser on ([`super::login_page`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::system::NoParams;
use zeroclaw_ipc::Dirs;

use super::error::CliError;
use super::{login_page, rpc};

pub async fn run(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    no_open: bool,
    json: bool,
) -> Result<(), CliError> {
    let handle = rpc::handle(config_dir.clone(), socket).await?;
    handle
        .call_typed_value::<call::GatewayStart>(&NoParams {})
        .await
        .map_err(CliError::from_client)?;
    let login = handle
        .call_typed_value::<call::DashboardLogin>(&NoParams {})
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
    if !has_opener() {
        if !json {
            eprintln!("no desktop to open a browser on: open the link above");
        }
        return Ok(());
    }
    let data_dir = Dirs::resolve(config_dir.as_deref())
        .ok()
        .map(|dirs| dirs.data_dir);
    let page = match login_page::write(data_dir.as_deref(), &url) {
        Ok(page) => page,
        Err(e) => {
            eprintln!("could not write the login page ({e}); open the link above");
            return Ok(());
        }
    };
    match open(&page) {
        Some(Ok(())) => {}
        Some(Err(e)) => eprintln!("could not open a browser ({e}); open the link above"),
        None => {}
    }
    Ok(())
}

/// Whether there is a desktop opener to start.
fn has_opener() -> bool {
    opener(Path::new("")).is_some()
}

/// Starts the desktop's opener on the page at `page`; `None` when there is none to start.
fn open(page: &Path) -> Option<std::io::Result<()>> {
    let mut command = opener(page)?;
    let spawned = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    Some(spawned.map(drop))
}

#[cfg(target_os = "macos")]
fn opener(page: &Path) -> Option<Command> {
    let mut c = Command::new("open");
    c.arg(page);
    Some(c)
}

#[cfg(windows)]
fn opener(page: &Path) -> Option<Command> {
    let mut c = Command::new("cmd");
    // `start`'s first quoted argument is a window title.
    c.args(["/C", "start", ""]).arg(page);
    Some(c)
}

#[cfg(not(any(target_os = "macos", windows)))]
fn opener(page: &Path) -> Option<Command> {
    let desktop = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
    if !desktop {
        return None;
    }
    let mut c = Command::new("xdg-open");
    c.arg(page);
    Some(c)
}

/// The `gateway` line of `zeroclaw status`.
pub fn describe_gateway(status: &Value) -> String {
    match status["gateway"]["url"].as_str() {
        Some(url) => url.to_owned(),
        None => "not running (`zeroclaw dashboard` starts it)".to_owned(),
    }
}
