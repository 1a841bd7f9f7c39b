//! Method handlers, one file per method group and one function per
//! [`Method`](zeroclaw_protocol::Method), called only by [`crate::dispatch`] once the
//! caller is authenticated and authorized. A handler takes its method's params type (the
//! [`Call`](zeroclaw_protocol::Call) table's, decoded once by the dispatcher), calls a
//! service (sessions, files, config, pairing) with the caller's principal, its credential
//! or its [`ClientLink`](zeroclaw_sessions::session::link::ClientLink), and returns the method's result
//! type; it never touches a socket nor imports the connection loop.

pub(crate) mod config;
pub(crate) mod config_schema;
pub(crate) mod configure;
pub(crate) mod diff;
pub(crate) mod file;
pub(crate) mod gateway;
pub(crate) mod history;
pub(crate) mod initialize;
pub(crate) mod models;
pub(crate) mod push;
pub(crate) mod schedule;
pub(crate) mod session;
pub(crate) mod skills;
pub(crate) mod status;
pub(crate) mod usage;
pub(crate) mod webhook;

/// The wire's session mode as the store names it.
pub(crate) fn mode(m: Option<zeroclaw_protocol::Mode>) -> Option<zeroclaw_store::Mode> {
    m.map(zeroclaw_sessions::session::wire::store_mode)
}
