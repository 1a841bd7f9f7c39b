//! What an accepted gateway connection carries on its way (its address, its slot, when it
//! was accepted), what all connections of one listener share, and the write bound every
//! response keeps.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::Instant;

use super::host::HostNames;
use crate::registry::Admission;

/// Time to send a response.
pub(crate) const WRITE_WITHIN: Duration = Duration::from_secs(10);

/// An accepted TCP peer on its way to being served.
pub(crate) struct Peer {
    pub addr: SocketAddr,
    /// Its slot in the unauthenticated pool (then, once authenticated, in the total).
    pub admission: Admission,
    pub accepted_at: Instant,
}

/// What every connection of one listener shares.
pub(crate) struct Settings {
    /// `wss.allowed_origins`, besides the page's own origin.
    pub allowed_origins: Vec<String>,
    /// Served over TLS (the page's origin is `https://…`).
    pub tls: bool,
    /// The `Host` names it answers.
    pub hosts: HostNames,
}
