//! The text of a `status` answer (SPEC §5), written without building its value:
//! `status` is the call clients poll, so what cannot change while the daemon runs (its
//! version, pid and paths) is encoded to JSON once, and each call only adds the counts,
//! the session ids and the gateway. The text equals what the typed
//! [`StatusResult`](zeroclaw_protocol::system::StatusResult) serializes to (tested below).

use zeroclaw_protocol::system::{PROTOCOL_VERSION, SessionCounts};
#[cfg(test)]
use zeroclaw_protocol::{gateway::GatewayInfo, system::StatusResult};

/// The parts of a `status` answer that change from call to call.
pub struct Live<'a> {
    pub uptime_secs: u64,
    pub connections: u64,
    pub active_sessions: u64,
    pub session_ids: &'a [&'a str],
    pub session_counts: SessionCounts,
    pub gateway: Option<String>,
}

/// The parts of a `status` answer that never change while the daemon runs, as JSON text
/// in `StatusResult`'s field order: for an admin (with the host fields) and for anyone
/// else, what comes before `uptimeSecs`' value and what comes between it and
/// `connections`' value.
pub struct FixedText {
    admin: [String; 2],
    other: [String; 2],
}

impl FixedText {
    /// The fixed text of a daemon with process id `pid` serving `endpoint` from these
    /// directories.
    pub fn new(pid: u32, endpoint: &str, config_dir: &str, data_dir: &str) -> FixedText {
        let text = |s: &str| serde_json::Value::from(s).to_string();
        let head = |pid: String| {
            format!(
                "{{\"protocolVersion\":{PROTOCOL_VERSION},\"serverVersion\":{}{pid},\"uptimeSecs\":",
                text(env!("CARGO_PKG_VERSION"))
            )
        };
        FixedText {
            admin: [
                head(format!(",\"serverPid\":{pid}")),
                format!(
                    ",\"endpoint\":{},\"configDir\":{},\"dataDir\":{},\"connections\":",
                    text(endpoint),
                    text(config_dir),
                    text(data_dir)
                ),
            ],
            other: [head(String::new()), ",\"connections\":".to_owned()],
        }
    }

    /// Appends the whole answer for `admin` or not, with `live`'s parts, to `buf`.
    pub fn write(&self, admin: bool, live: &Live<'_>, buf: &mut Vec<u8>) {
        let [head, mid] = if admin { &self.admin } else { &self.other };
        buf.extend_from_slice(head.as_bytes());
        write_json(buf, &live.uptime_secs);
        buf.extend_from_slice(mid.as_bytes());
        write_json(buf, &live.connections);
        buf.extend_from_slice(b",\"activeSessions\":");
        write_json(buf, &live.active_sessions);
        buf.extend_from_slice(b",\"sessionIds\":[");
        for (i, id) in live.session_ids.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            write_json(buf, id);
        }
        let counts = &live.session_counts;
        buf.extend_from_slice(b"],\"sessionCounts\":{\"live\":");
        write_json(buf, &counts.live);
        buf.extend_from_slice(b",\"running\":");
        write_json(buf, &counts.running);
        buf.extend_from_slice(b",\"waiting\":");
        write_json(buf, &counts.waiting);
        buf.extend_from_slice(b",\"idle\":");
        write_json(buf, &counts.idle);
        buf.extend_from_slice(b"},\"gateway\":");
        match &live.gateway {
            Some(url) => {
                buf.extend_from_slice(b"{\"url\":");
                write_json(buf, &format!("{url}/"));
                buf.push(b'}');
            }
            None => buf.extend_from_slice(b"null"),
        }
        buf.push(b'}');
    }
}

/// `value` as JSON (a number or a string here).
fn write_json<T: serde::Serialize + ?Sized>(buf: &mut Vec<u8>, value: &T) {
    // Writing these into a Vec cannot fail.
    let _ = serde_json::to_writer(buf, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text [`FixedText::write`] makes is exactly what the typed result serializes to.
    #[test]
    fn written_status_equals_the_serialized_result() {
        let fixed = FixedText::new(42, "/run/z\"q.sock", "/home/é/cfg", "C:\\data");
        for admin in [true, false] {
            for (ids, gateway) in [
                (vec![], None),
                (vec!["a", "b\"\n"], Some("http://127.0.0.1:1".to_owned())),
            ] {
                let live = Live {
                    uptime_secs: 7,
                    connections: 3,
                    active_sessions: 5,
                    session_ids: &ids,
                    session_counts: SessionCounts {
                        live: 5,
                        running: 2,
                        waiting: 1,
                        idle: 2,
                    },
                    gateway: gateway.clone(),
                };
                let mut written = Vec::new();
                fixed.write(admin, &live, &mut written);
                let host = |s: &str| admin.then(|| s.to_owned());
                let typed = StatusResult {
                    protocol_version: PROTOCOL_VERSION,
                    server_version: env!("CARGO_PKG_VERSION").to_owned(),
                    server_pid: admin.then_some(42),
                    uptime_secs: 7,
                    endpoint: host("/run/z\"q.sock"),
                    config_dir: host("/home/é/cfg"),
                    data_dir: host("C:\\data"),
                    connections: 3,
                    active_sessions: 5,
                    session_ids: ids.iter().map(|s| s.to_string()).collect(),
                    session_counts: live.session_counts,
                    gateway: gateway.map(|url| GatewayInfo {
                        url: format!("{url}/"),
                    }),
                };
                let expected = serde_json::to_string(&typed).expect("serializes");
                assert_eq!(String::from_utf8(written).expect("utf-8"), expected);
            }
        }
    }
}
