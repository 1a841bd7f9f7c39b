//! The gateway (SPEC §10, §20): one TCP port serving the web dashboard's files, `/healthz`,
//! JSON-RPC over WebSocket (`/rpc` and `/`) and over `POST /rpc`, with the security headers
//! on every response, `Host` and Origin checks, and failed logins rate-limited per
//! credential prefix and connection.
//!
//! - [`listener`]: binding (`[wss]`, TLS via [`tls`]) and the accept loop;
//! - [`conn`]: one connection's HTTP/1.1 loop and its routes, over [`http`] (request heads,
//!   bodies, responses) and [`peer`] (what an accepted connection carries);
//! - [`acp`]: ACP over the WebSocket upgrade of `/acp` (SPEC §25);
//! - [`assets`]: the embedded files; [`upgrade`]: the WebSocket upgrade; [`post`]: `POST /rpc`;
//!   [`host`]: which `Host` names the gateway answers;
//! - [`control`]: whether it runs (`gateway/start`), with the login store
//!   (`zeroclaw_sessions::logins`: `dashboard/login` codes and session tokens) and
//!   [`rate`] (failed logins).

pub(crate) mod acp;
pub(crate) mod assets;
pub(crate) mod conn;
pub mod control;
pub(crate) mod host;
pub(crate) mod http;
pub mod listener;
pub(crate) mod peer;
pub(crate) mod post;
pub mod rate;
pub(crate) mod tls;
pub(crate) mod upgrade;
