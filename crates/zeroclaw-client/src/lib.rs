//! A client for the zeroclaw daemon: connects to the local endpoint, sends requests with
//! its own `zc-out-N` ids, and surfaces what the daemon sends unasked (notifications such
//! as `session/update`, and requests such as `elicitation/create`) as [`ServerMessage`]s,
//! or typed as [`Event`]s. Used by the command-line tools and by the integration tests.
//!
//! Every method name, params, result and update is the protocol vocabulary's
//! ([`zeroclaw_protocol`], re-exported as [`protocol`]): the daemon and this client parse
//! the same types. Layers: [`connection`](Client) (the stream, ids, queues) →
//! session methods (`sessions.rs`) and question answering (`elicitation.rs`); errors and
//! events are leaves below them. This file only declares and re-exports.

mod connection;
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
