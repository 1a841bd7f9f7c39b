//! Whether a request's `Host` names this gateway (SPEC §17.2 "Host names the listener"):
//! a page served from another name — a DNS name rebound to 127.0.0.1 — must not reach the
//! dashboard, `POST /rpc` or the WebSocket. Accepted: `localhost`, a loopback address, or
//! the listener's own bound address, each with the listener's port (or no port when the
//! port is the scheme's default), and any name of `gateway.hostnames` (any port: a proxy
//! may stand in front). Anything else, a missing `Host` or more than one, is answered 421.

use std::net::{IpAddr, SocketAddr};

use super::http::{RequestHead, Response};

/// What the `Host` check of one listener knows.
#[derive(Debug, Clone)]
pub(crate) struct HostNames {
    /// The listener's address (its port, and its IP when not a wildcard).
    pub listener: SocketAddr,
    /// Served over TLS (the default port is 443, else 80).
    pub tls: bool,
    /// `gateway.hostnames`, without a trailing dot or an IPv6 literal's brackets.
    pub names: Vec<String>,
}

impl HostNames {
    pub fn new(listener: SocketAddr, tls: bool, names: &[String]) -> HostNames {
        let names = names
            .iter()
            .map(|n| {
                let n = n.trim();
                let n = n
                    .strip_prefix('[')
                    .and_then(|n| n.strip_suffix(']'))
                    .unwrap_or(n);
                normalize(n).to_owned()
            })
            .collect();
        HostNames {
            listener,
            tls,
            names,
        }
    }

    /// `Err(421)` unless the request's one `Host` names this gateway.
    pub fn check(&self, head: &RequestHead) -> Result<(), Response> {
        let mut hosts = head
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("host"));
        let host = match (hosts.next(), hosts.next()) {
            (Some((_, value)), None) => std::str::from_utf8(value).ok().map(str::trim),
            _ => None,
        };
        match host {
            Some(host) if self.accepts(host) => Ok(()),
            _ => Err(Response::text(
                421,
                "this gateway does not answer for that Host (add the name to gateway.hostnames)",
            )
            .closing()),
        }
    }

    /// Whether `host` (`name`, `name:port`, `[v6]` or `[v6]:port`) names this gateway.
    pub fn accepts(&self, host: &str) -> bool {
        let Some((name, port)) = split(host) else {
            return false;
        };
        let name = normalize(name);
        if self.names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            return true;
        }
        let default = if self.tls { 443 } else { 80 };
        if port.unwrap_or(default) != self.listener.port() {
            return false;
        }
        if name.eq_ignore_ascii_case("localhost") {
            return true;
        }
        match name.parse::<IpAddr>() {
            Ok(ip) => {
                let ip = ip.to_canonical();
                ip.is_loopback()
                    || (!self.listener.ip().is_unspecified()
                        && ip == self.listener.ip().to_canonical())
            }
            Err(_) => false,
        }
    }
}

/// `host` without a trailing dot.
fn normalize(host: &str) -> &str {
    host.strip_suffix('.').unwrap_or(host)
}

/// The name (brackets removed from an IPv6 literal) and the port, if one is given; `None`
/// for what is not a host.
fn split(host: &str) -> Option<(&str, Option<u16>)> {
    if host.is_empty() {
        return None;
    }
    if let Some(rest) = host.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        return match after {
            "" => Some((v6, None)),
            _ => Some((v6, Some(after.strip_prefix(':')?.parse().ok()?))),
        };
    }
    match host.split_once(':') {
        None => Some((host, None)),
        Some((name, port)) => Some((name, Some(port.parse().ok()?))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(listener: &str, tls: bool, extra: &[&str]) -> HostNames {
        let extra: Vec<String> = extra.iter().map(|s| (*s).to_owned()).collect();
        HostNames::new(listener.parse().expect("addr"), tls, &extra)
    }

    #[test]
    fn loopback_names_with_the_port() {
        let h = names("127.0.0.1:9781", false, &[]);
        for ok in [
            "localhost:9781",
            "LOCALHOST:9781",
            "127.0.0.1:9781",
            "127.0.0.1.:9781",
            "[::1]:9781",
        ] {
            assert!(h.accepts(ok), "{ok}");
        }
        for bad in [
            "localhost:9782",
            "127.0.0.1",
            "evil.example:9781",
            "evil.example",
            "localhost.evil.example:9781",
            "192.0.2.1:9781",
            "",
            ":9781",
            "[::1",
            "localhost:x",
        ] {
            assert!(!h.accepts(bad), "{bad}");
        }
    }

    #[test]
    fn the_bound_address_and_configured_names() {
        let h = names(
            "192.0.2.7:443",
            true,
            &["Zeroclaw.Example.org.", "[2001:db8::1]", "198.51.100.1"],
        );
        assert!(h.accepts("[2001:db8::1]:9000"));
        assert!(h.accepts("198.51.100.1"));
        assert!(h.accepts("192.0.2.7"), "default port of https");
        assert!(h.accepts("192.0.2.7:443"));
        assert!(!h.accepts("192.0.2.8:443"));
        assert!(h.accepts("zeroclaw.example.org"));
        assert!(h.accepts("zeroclaw.example.org:8443"));
        assert!(!h.accepts("example.org"));
        let any = names("0.0.0.0:9781", true, &[]);
        assert!(!any.accepts("0.0.0.0:9781"), "a wildcard names nothing");
        assert!(any.accepts("127.0.0.1:9781"));
    }
}
