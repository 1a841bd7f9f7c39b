//! zeroclaw's JSON-RPC 2.0 wire protocol, reusable by any client: the message model and
//! envelope rules ([`message`]), capped NDJSON framing ([`codec`]), error codes
//! ([`error`]) and bookkeeping for our own outbound requests ([`peer`]).

#![forbid(unsafe_code)]

pub mod codec;
pub mod error;
mod id;
pub mod message;
pub mod peer;
pub mod scan;

pub use codec::{Frame, FrameReader, MAX_FRAME_BYTES};
pub use error::{ErrorCode, ErrorObject, code};
pub use message::{Id, Inbound, Request, Response, classify, classify_value};
pub use peer::{PeerError, Pending};
