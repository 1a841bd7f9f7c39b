//! `LocalConnection` and `PeerInfo`: one accepted (or dialled) local stream, split into
//! owned read and write halves so the same frame loop serves Unix sockets and Windows pipes
//! (SPEC §11), plus who is on the other end for the audit log (SPEC §4).

use std::fmt;
use std::io;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

/// Who is at the other end of a local connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// Peer process id, when the OS reports it.
    pub pid: Option<u32>,
    /// Peer user id, when the OS reports it (always `None` on Windows).
    pub uid: Option<u32>,
    /// Audit label: `unix:pid=<pid>,uid=<uid>`, `unix:uid=<uid>` (no pid reported),
    /// `unix:unknown`, `unix:server` (client side), or on Windows `pipe:<client pid>`
    /// (`pipe:local` when the pid is unknown).
    pub label: String,
}

impl PeerInfo {
    /// Peer info of a Unix-socket peer from its credentials, labelled for the audit log.
    pub fn from_unix_creds(pid: Option<u32>, uid: Option<u32>) -> PeerInfo {
        let label = match (pid, uid) {
            (Some(pid), Some(uid)) => format!("unix:pid={pid},uid={uid}"),
            (None, Some(uid)) => format!("unix:uid={uid}"),
            _ => "unix:unknown".to_string(),
        };
        PeerInfo { pid, uid, label }
    }

    /// A Unix-socket peer whose credentials could not be read.
    pub fn unix_unknown() -> PeerInfo {
        PeerInfo::from_unix_creds(None, None)
    }

    /// A Windows named-pipe peer (remote clients are rejected, so it is local).
    pub fn pipe_local() -> PeerInfo {
        PeerInfo::pipe_client(None)
    }

    /// A Windows named-pipe peer with the client's process id, when known.
    pub fn pipe_client(pid: Option<u32>) -> PeerInfo {
        let label = match pid {
            Some(pid) => format!("pipe:{pid}"),
            None => "pipe:local".to_string(),
        };
        PeerInfo {
            pid,
            uid: None,
            label,
        }
    }
}

impl fmt::Display for PeerInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// One local stream split into independently owned halves.
pub struct LocalConnection {
    /// Bytes from the peer.
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    /// Bytes to the peer.
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    /// Who the peer is.
    pub peer: PeerInfo,
    /// A second way to the peer that never waits, where the transport has one (an
    /// accepted Unix socket): see [`WriteNow`].
    pub write_now: Option<Arc<dyn WriteNow>>,
}

/// A non-blocking write on a connection's socket, usable while its write half is owned
/// elsewhere. Whoever holds one must keep it from interleaving with the write half's
/// writes; the socket only promises that each call's bytes go out in one piece, in order.
pub trait WriteNow: Send + Sync {
    /// Writes what fits now: how many bytes of `bytes` went out, or `WouldBlock`.
    fn write_now(&self, bytes: &[u8]) -> io::Result<usize>;
}

impl fmt::Debug for LocalConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalConnection")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(
            PeerInfo::from_unix_creds(Some(12), Some(1000)).label,
            "unix:pid=12,uid=1000"
        );
        assert_eq!(PeerInfo::from_unix_creds(None, Some(7)).label, "unix:uid=7");
        assert_eq!(PeerInfo::unix_unknown().label, "unix:unknown");
        assert_eq!(PeerInfo::pipe_local().to_string(), "pipe:local");
        assert_eq!(PeerInfo::pipe_client(Some(4242)).label, "pipe:4242");
        assert_eq!(PeerInfo::pipe_client(Some(4242)).pid, Some(4242));
    }
}
