//! A client for the zeroclaw daemon: connects to the local endpoint, sends requests with
//! its own `zc-out-N` ids, and surfaces what the daemon sends unasked (notifications such
//! as `session/update`, and requests such as `elicitation/create`) as [`ServerMessage`]s,
//! or typed as [`Event`]s. Used by the command-line tools and by the integration tests.
//!
//! Every method name, params, result and update is the protocol vocabulary's
//! ([`zeroclaw_protocol`], re-exported as [`protocol`]): the daemon and this client parse
//! the same types, and a method is called through the method table
//! ([`ClientHandle::call_typed`] with a [`protocol::call`] marker), so its params and result
//! are that method's. Layers, each importing only those below it: `sessions.rs` (the session
//! methods on [`ClientHandle`]) and `diff.rs` (`session/diff`) → `connection.rs` (the stream, ids and queues) →
//! `event.rs` (typed events) → `elicitation.rs` (questions), with `error.rs` beside them.
//! This file only declares and re-exports.

#![forbid(unsafe_code)]

mod connection;
mod diff;
mod elicitation;
mod error;
mod event;
mod sessions;

pub use connection::{Client, ClientHandle, Events};
pub use elicitation::{Choice, ChoiceSet, ElicitationAnswer, ElicitationRequest};
pub use error::ClientError;
pub use event::{Event, ServerMessage, parse_update};
pub use sessions::PROMPT_TIMEOUT;
pub use zeroclaw_protocol as protocol;
pub use zeroclaw_protocol::session::{
    SessionNewParams, SessionNewResult, SessionSummary, TurnResult,
};
pub use zeroclaw_protocol::stream::SubscribeResult;
pub use zeroclaw_protocol::{
    Decision, ELICITATION_CREATE, Method, Mode, Outcome, SESSION_UPDATE, SessionUpdate, UpdateKind,
};
pub use zeroclaw_rpc::ErrorObject;
