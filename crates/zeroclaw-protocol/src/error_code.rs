//! The error codes of the contract (SPEC §3.4), written once: [`ErrorCode`] names each,
//! and [`code`] gives the same numbers as `i64` constants, for building an error and for
//! matching one received. No other file writes a code as a number.

/// One row of the SPEC §3.4 table: JSON-RPC's own codes, then zeroclaw's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i64)]
pub enum ErrorCode {
    /// The line is not JSON.
    ParseError = -32700,
    /// Not a valid request (also: frame too large, already initialized).
    InvalidRequest = -32600,
    MethodNotFound = -32601,
    /// Invalid params (also: a value out of range, an unknown upload); `data {index, prop}`
    /// for an entry of a batch.
    InvalidParams = -32602,
    InternalError = -32603,
    /// Session not found, or no active turn to cancel.
    SessionNotFound = -32000,
    /// Session limit reached; `data {limit}`.
    SessionLimit = -32001,
    /// Session busy (its prompt queue is full).
    SessionBusy = -32002,
    /// The caller does not own the session.
    NotOwner = -32003,
    /// Not initialized, or authentication failed.
    NotInitialized = -32010,
    /// Protocol version mismatch; `data {supported, requested}`.
    VersionMismatch = -32011,
    /// Forbidden; `data {index?, resource?, verb?, prop?}`.
    Forbidden = -32012,
    /// Limit exceeded; `data {limit, value}`.
    LimitExceeded = -32013,
}

impl ErrorCode {
    /// Every code, in the order of the SPEC §3.4 table.
    pub const ALL: [ErrorCode; 13] = [
        ErrorCode::ParseError,
        ErrorCode::InvalidRequest,
        ErrorCode::MethodNotFound,
        ErrorCode::InvalidParams,
        ErrorCode::InternalError,
        ErrorCode::SessionNotFound,
        ErrorCode::SessionLimit,
        ErrorCode::SessionBusy,
        ErrorCode::NotOwner,
        ErrorCode::NotInitialized,
        ErrorCode::VersionMismatch,
        ErrorCode::Forbidden,
        ErrorCode::LimitExceeded,
    ];

    /// The number on the wire.
    pub const fn code(self) -> i64 {
        self as i64
    }

    /// The code named by a number received, if the contract has it.
    pub fn from_code(code: i64) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.code() == code)
    }
}

/// The codes as `i64` constants (usable as `match` patterns on a received `code`).
pub mod code {
    use super::ErrorCode;

    pub const PARSE_ERROR: i64 = ErrorCode::ParseError.code();
    pub const INVALID_REQUEST: i64 = ErrorCode::InvalidRequest.code();
    pub const METHOD_NOT_FOUND: i64 = ErrorCode::MethodNotFound.code();
    pub const INVALID_PARAMS: i64 = ErrorCode::InvalidParams.code();
    pub const INTERNAL_ERROR: i64 = ErrorCode::InternalError.code();
    pub const SESSION_NOT_FOUND: i64 = ErrorCode::SessionNotFound.code();
    pub const SESSION_LIMIT: i64 = ErrorCode::SessionLimit.code();
    pub const SESSION_BUSY: i64 = ErrorCode::SessionBusy.code();
    pub const NOT_OWNER: i64 = ErrorCode::NotOwner.code();
    pub const NOT_INITIALIZED: i64 = ErrorCode::NotInitialized.code();
    pub const VERSION_MISMATCH: i64 = ErrorCode::VersionMismatch.code();
    pub const FORBIDDEN: i64 = ErrorCode::Forbidden.code();
    pub const LIMIT_EXCEEDED: i64 = ErrorCode::LimitExceeded.code();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_numbers_are_the_contracts() {
        // SPEC §3.4, written out: a renumbered variant fails here.
        let table = [
            -32700, -32600, -32601, -32602, -32603, -32000, -32001, -32002, -32003, -32010, -32011,
            -32012, -32013,
        ];
        let ours: Vec<i64> = ErrorCode::ALL.iter().map(|c| c.code()).collect();
        assert_eq!(ours, table);
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_code(c.code()), Some(c));
        }
        assert_eq!(ErrorCode::from_code(-32004), None);
        assert_eq!(code::FORBIDDEN, -32012);
    }
}
