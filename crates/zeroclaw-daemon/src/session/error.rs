//! Errors of the sessions service.

use zeroclaw_rpc::ErrorObject;
use zeroclaw_store::StoreError;

/// The one place store failures become JSON-RPC errors.
pub fn store_error(e: StoreError) -> ErrorObject {
    match e {
        StoreError::NotFound { mode, session_id } => {
            ErrorObject::session_not_found(format!("session not found: {mode} {session_id}"))
        }
        StoreError::Killed { session_id, .. } => ErrorObject::session_not_found(format!(
            "session {session_id} was killed and cannot be resumed"
        )),
        StoreError::UnsupportedSurface {
            session_id,
            surface,
            ..
        } => ErrorObject::session_not_found(format!(
            "session {session_id} belongs to interaction surface {surface:?} and is not served here"
        )),
        other => {
            tracing::error!("storage failure: {other}");
            ErrorObject::internal(format!("storage failure: {other}"))
        }
    }
}
