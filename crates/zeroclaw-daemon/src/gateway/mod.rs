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
//!   [`rest`]: the REST routes and event streams under `/api/v1/` (SPEC §23.2), which
//!   listen on a caller context's notifications through its [`tap`];
//!   [`host`]: which `Host` names the gateway answers; [`webhook`]: `POST /webhooks/NAME`
//!   (SPEC §23.1).
//!
//! Whether it runs (`gateway/start`, with the login store: [`crate::gateway_control`]) and
//! the failed-login counts ([`crate::login_rate`]) sit below the
//! daemon's state and the handlers, outside this module: nothing below the gateway
//! reaches up into it.

pub(crate) mod acp;
pub(crate) mod assets;
pub(crate) mod conn;
pub(crate) mod host;
pub(crate) mod http;
pub mod listener;
pub(crate) mod peer;
pub(crate) mod post;
pub(crate) mod rest;
pub(crate) mod tap;
pub(crate) mod tls;
pub(crate) mod upgrade;
pub(crate) mod webhook;
