//! zeroclaw's protocol vocabulary: every name and shape that crosses the wire, written
//! once, for the daemon and its clients alike.
//!
//! - [`Method`]: every client → daemon method with its grant, its params and result types
//!   (one [`Call`] marker per method in [`call`]), where it is served and how it runs;
//!   [`SESSION_UPDATE`] and [`ELICITATION_CREATE`] name the daemon → client ones.
//! - Typed params (camelCase with snake_case aliases; [`decode`] settles objects that carry
//!   both spellings, camelCase winning) and results (exact wire names), one module per
//!   method group: [`system`], [`config`], [`session`], [`stream`], [`files`],
//!   [`history`], [`compact`], [`gateway`]; [`Unchecked`] marks a field kept as sent and checked later.
//! - [`SessionUpdate`] / [`UpdateKind`]: the `session/update` events.
//! - [`ErrorCode`] / [`code`]: the error codes of SPEC §3.4.
//! - [`schema::document`]: the JSON Schema of all of it (`zeroclaw schema`), and
//!   [`validate`], a small checker for that schema.
//!
//! This crate knows nothing about sessions, sockets or policy: it is words, not behaviour.

#![forbid(unsafe_code)]

pub mod compact;
pub mod config;
pub mod config_schema;
mod decode;
pub mod diff;
pub mod error_code;
pub mod files;
pub mod gateway;
pub mod history;
pub mod ids;
pub mod method;
pub mod push;
mod refusal;
pub mod rest;
pub mod schedule;
pub mod schema;
pub mod session;
pub mod skills;
pub mod stream;
pub mod system;
pub mod types;
mod unchecked;
pub mod update;
pub mod usage;
pub mod validate;
pub mod webhook;
mod word;

pub use decode::{ParamsError, camel_case, decode, decode_text, decode_value, normalize_keys};
pub use error_code::{ErrorCode, code};
pub use ids::{SessionId, TurnId};
pub use method::{Call, ELICITATION_CREATE, Method, Requirement, Runs, SESSION_UPDATE, call};
pub use types::{
    Autonomy, DecidedBy, Decision, ElicitationAction, McpState, Mode, Outcome, ResolvedReason, Role,
};
pub use unchecked::Unchecked;
pub use update::{SessionUpdate, UpdateKind, UpdateType};
