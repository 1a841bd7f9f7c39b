//! Method handlers, one file per method group. Handlers receive typed params and the
//! caller's principal; they never touch a socket.

pub mod initialize;
pub mod status;
