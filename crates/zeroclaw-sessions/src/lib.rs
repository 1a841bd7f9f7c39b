//! The daemon's services: sessions ([`session`]), files in agent workspaces ([`files`]),
//! WebSocket pairing tokens ([`pairing`]) and dashboard logins ([`logins`]).
//!
//! They know nothing of the wire: this crate depends on the vocabulary
//! (`zeroclaw-protocol`), the store, the agent, the configuration and the checkpoints, and
//! not on `zeroclaw-rpc`, `zeroclaw-ipc` or the daemon (`scripts/check-layers.py` checks
//! its manifest). A caller is a principal, the answer to a credential check the daemon
//! makes, and a [`session::link::ClientLink`]; every failure is a service error type
//! ([`session::error::SessionError`], [`files::error::FilesError`],
//! [`pairing::PairingError`], [`logins::LoginError`]) that the daemon maps to JSON-RPC in
//! one place. Where a request's order matters to the connection that sent it, the caller
//! passes what to do once the request is queued (see `SessionManager::prompt`).
//!
//! Unsafe code is denied; one test makes a FIFO with `mkfifo`.

#![deny(unsafe_code)]

pub mod files;
pub mod logins;
pub mod pairing;
pub mod session;
