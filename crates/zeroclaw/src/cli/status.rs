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
    rows.push(vec!["live sessions".into(), sessions(s)]);
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

/// The live sessions as counts (SPEC §22: `--json` keeps the ids): `3 (1 running, 1
/// waiting for a person, 1 idle)`.
fn sessions(s: &Value) -> String {
    let counts = &s["sessionCounts"];
    let count = |key: &str| counts[key].as_u64().unwrap_or(0);
    let live = counts["live"]
        .as_u64()
        .or_else(|| s["activeSessions"].as_u64())
        .unwrap_or(0);
    let mut parts = Vec::new();
    for (key, label) in [
        ("running", "running"),
        ("waiting", "waiting for a person"),
        ("idle", "idle"),
    ] {
        let n = count(key);
        if n > 0 {
            parts.push(format!("{n} {label}"));
        }
    }
    if parts.is_empty() {
        live.to_string()
    } else {
        format!("{live} ({})", parts.join(", "))
    }
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
            "endpoint": "/d/daemon.sock", "connections": 1, "activeSessions": 4,
            "sessionIds": ["a", "b", "c", "d"],
            "sessionCounts": {"live": 4, "running": 1, "waiting": 1, "idle": 2}
        }));
        assert!(
            text.starts_with("zeroclaw 0.1.0 is running (pid 42)\n"),
            "{text}"
        );
        assert!(text.contains("  uptime         3m 12s\n"), "{text}");
        assert!(
            text.contains("  live sessions  4 (1 running, 1 waiting for a person, 2 idle)\n"),
            "{text}"
        );
        assert!(!text.contains("a, b"), "no ids for people: {text}");
    }
}
