//! Method handlers, one file per method group. Handlers receive typed params and the
//! caller's principal; they never touch a socket.

pub mod config;
pub mod configure;
pub mod file;
pub mod initialize;
pub mod models;
pub mod session;
pub mod status;
