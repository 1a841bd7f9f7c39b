//! zeroclaw-schedules: schedules that run a prompt while nobody is at the keyboard
//! (SPEC §24.1). [`when`] parses `cron`, `every` and `at` and finds the next run time in
//! an IANA zone; [`service`] keeps the schedules in memory and in the store, says what
//! is due, catches up after downtime and lets one run of a schedule go at a time. The
//! daemon's timer runs what it hands out as ordinary turns; this crate knows nothing of
//! the wire.

#![forbid(unsafe_code)]

pub mod service;
pub mod when;

pub use jiff::Timestamp;
pub use service::{Fire, ScheduleError, Schedules, Target, Viewer};
pub use when::Invalid;
