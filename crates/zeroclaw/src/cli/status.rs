//! `zeroclaw status` (the daemon's state, for people or as JSON) and `zeroclaw stop`
//! (`daemon/shutdown`, then wait until the socket is gone).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::system::NoParams;

use super::error::CliError;
use super::{human, rpc};

/// How often `stop` looks for the socket.
const POLL: Duration = Duration::from_millis(50);

pub async fn run(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    json: bool,
) -> Result<(), CliError> {
    let status = rpc::call::<call::Status>(config_dir, socket, &NoParams {}).await?;
    if json {
        rpc::print_json(&status);
    } else {
        print!("{}", describe(&status));
    }
    Ok(())
}

/// `status` as lines of `label  value`.
pub fn describe(s: &Value) -> String {
    let text = |key: &str| s[key].as_str().map(str::to_string);
    let num = |key: &str| s[key].as_u64();
    let mut head = format!(
        "zeroclaw {} is running",
        text("serverVersion").unwrap_or_else(|| "?".into())
    );
    if let Some(pid) = num("serverPid") {
        head.push_str(&format!(" (pid {pid})"));
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    if let Some(up) = num("uptimeSecs") {
        rows.push(vec!["uptime".into(), human::duration(up)]);
    }
    for (label, key) in [
        ("endpoint", "endpoint"),
        ("config dir", "configDir"),
        ("data dir", "dataDir"),
    ] {
        if let Some(v) = text(key) {
            rows.push(vec![label.into(), v]);
        }
    }
    if let Some(n) = num("connections") {
        rows.push(vec!["connections".into(), n.to_string()]);
    }
    let ids: Vec<&str> = s["sessionIds"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let active = num("activeSessions").unwrap_or(ids.len() as u64);
    let mut sessions = active.to_string();
    if !ids.is_empty() {
        sessions.push_str(&format!(" ({})", ids.join(", ")));
    }
    rows.push(vec!["live sessions".into(), sessions]);
    if s.get("gateway").is_some() {
        rows.push(vec![
            "gateway".into(),
            super::dashboard::describe_gateway(s),
        ]);
    }
    let table = human::table(&["", ""], &rows);
    // The table's header row is empty: drop it.
    let body: String = table.lines().skip(1).map(|l| format!("  {l}\n")).collect();
    format!("{head}\n{body}")
}

/// `zeroclaw stop`: asks the daemon to shut down and waits for its socket to go.
pub async fn stop(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    timeout: Duration,
    json: bool,
) -> Result<(), CliError> {
    let path = rpc::endpoint(config_dir.clone(), socket.clone())?;
    let result = rpc::call::<call::DaemonShutdown>(config_dir, socket, &NoParams {}).await?;
    let deadline = Instant::now() + timeout;
    while path.exists() {
        if Instant::now() >= deadline {
            return Err(CliError::failed(format!(
                "the daemon accepted the shutdown but {} is still there after {}s",
                path.display(),
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
    if json {
        rpc::print_json(&result);
    } else {
        println!("daemon stopped");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::describe;

    #[test]
    fn status_for_people() {
        let text = describe(&json!({
            "serverVersion": "0.1.0", "serverPid": 42, "uptimeSecs": 192,
            "endpoint": "/d/daemon.sock", "connections": 1, "activeSessions": 2,
            "sessionIds": ["a", "b"]
        }));
        assert!(
            text.starts_with("zeroclaw 0.1.0 is running (pid 42)\n"),
            "{text}"
        );
        assert!(text.contains("  uptime         3m 12s\n"), "{text}");
        assert!(text.contains("  live sessions  2 (a, b)\n"), "{text}");
    }
}
