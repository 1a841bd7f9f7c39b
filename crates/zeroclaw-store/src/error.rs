//! The store's one error type. Every fallible call returns [`StoreError`]; the daemon maps
//! it to a JSON-RPC code in one place, its `wire_error.rs` (storage failures are -32603,
//! `Killed` and `NotFound` are -32000, …).

use crate::types::{CheckpointStatus, Mode, UnknownValue};

/// Result alias used across the crate.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An SQLite call failed (I/O error, disk full, constraint violation, …).
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),

    /// Preparing the database file failed.
    #[error("cannot open database {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },

    /// A stored JSON value could not be encoded or decoded.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),

    /// The database was written by a newer build.
    #[error("database schema version {found} is newer than this build supports ({supported})")]
    SchemaTooNew { found: i64, supported: i64 },

    /// No session row with that mode and id.
    #[error("no {mode} session {session_id:?}")]
    NotFound { mode: Mode, session_id: String },

    /// The session row is tombstoned: it is readable but never resumed or written again.
    #[error("{mode} session {session_id:?} was killed and cannot be resumed")]
    Killed { mode: Mode, session_id: String },

    /// The operation needs a session of another mode (checkpoints exist only for ACP).
    #[error("{mode} session {session_id:?}: operation needs a {expected} session")]
    WrongMode {
        mode: Mode,
        session_id: String,
        expected: Mode,
    },

    /// Recovery refused a row owned by another interaction surface.
    #[error(
        "session {session_id:?} belongs to interaction surface {surface:?}, not {expected:?}; left untouched"
    )]
    UnsupportedSurface {
        session_id: String,
        surface: String,
        expected: String,
    },

    /// `begin_turn` with a turn id the session already used.
    #[error("turn {turn_id:?} already exists in session {session_id:?}")]
    TurnExists { session_id: String, turn_id: String },

    /// `begin_turn` while an earlier turn's checkpoint is still open: call `recover` first.
    #[error("turn {turn_id:?} of session {session_id:?} is still open; recover it first")]
    TurnStillOpen { session_id: String, turn_id: String },

    /// `session/fork` into an id some row already has.
    #[error("a {mode} session {session_id:?} already exists")]
    SessionExists { mode: Mode, session_id: String },

    /// The turn was rewound: it is no longer part of the session's history.
    #[error("turn {turn_id:?} of session {session_id:?} was rewound")]
    TurnRewound { session_id: String, turn_id: String },

    /// No checkpoint for that turn.
    #[error("no turn {turn_id:?} in session {session_id:?}")]
    TurnNotFound { session_id: String, turn_id: String },

    /// Progress or finish for a turn whose checkpoint is already closed.
    #[error("turn {turn_id:?} of session {session_id:?} is {status}, not open")]
    TurnNotOpen {
        session_id: String,
        turn_id: String,
        status: CheckpointStatus,
    },

    /// `finish_turn` only closes a turn as completed, cancelled or failed.
    #[error("a turn cannot be finished with status {0}")]
    InvalidFinishStatus(CheckpointStatus),

    /// A snapshot boundary outside the transcript.
    #[error("snapshot boundary {covers_seq} is outside the transcript (last seq {last_seq})")]
    InvalidBoundary { covers_seq: i64, last_seq: i64 },

    /// A row read back from the database does not have the expected shape.
    #[error("corrupt row: {0}")]
    Corrupt(String),

    /// A large text could not be written into its row (incremental blob I/O); the
    /// transaction was rolled back.
    #[error("cannot write a large text into its row: {0}")]
    LargeText(#[from] std::io::Error),

    /// Failure injected with `Store::set_fail_writes(true)`; the transaction was rolled back.
    #[error("injected write failure (transaction rolled back)")]
    InjectedFailure,

    /// The store's thread has stopped (it panicked or the process is shutting down).
    #[error("the store thread has stopped")]
    Closed,
}

impl From<UnknownValue> for StoreError {
    fn from(e: UnknownValue) -> Self {
        StoreError::Corrupt(e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_stored_spelling_reads_as_corrupt() {
        let e = StoreError::from("sideways".parse::<Mode>().unwrap_err());
        assert!(
            matches!(&e, StoreError::Corrupt(why) if why == "unknown Mode \"sideways\""),
            "{e}"
        );
        assert_eq!("acp".parse::<Mode>(), Ok(Mode::Acp));
    }
}
