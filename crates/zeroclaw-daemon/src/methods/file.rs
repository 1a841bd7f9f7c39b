//! `file/attach` and `file/upload/{begin,chunk,commit}` (SPEC §8). Both paths end in the
//! same commit step ([`zeroclaw_sessions::files::commit`]).

use std::sync::Arc;

use base64::Engine;
use zeroclaw_config::Config;
use zeroclaw_protocol::files::{
    AttachParams, AttachResult, FileInput, StoredFile, UploadBeginParams, UploadBeginResult,
    UploadChunkParams, UploadChunkResult, UploadCommitParams,
};
use zeroclaw_protocol::{Method, Unchecked};
use zeroclaw_rpc::ErrorObject;
use zeroclaw_sessions::files::commit::{self, Caller, Item};
use zeroclaw_sessions::files::path_read;
use zeroclaw_sessions::files::staging::CHUNK_BYTES;
use zeroclaw_sessions::files::staging::UploadTarget;
use zeroclaw_sessions::files::workspace::MAX_FILE_BYTES;
use zeroclaw_store::SessionKey;

use crate::auth::{self, Principal};
use crate::caller::ConnectionContext;
use crate::methods::mode;
use crate::state::Daemon;
use crate::transport::TransportKind;
use crate::wire_error;

/// Decoded bytes one `file/attach` request may carry in total.
pub(crate) const MAX_ATTACH_BYTES: usize = 20 * 1024 * 1024;

/// `file/attach {sessionId, mode?, files}`: inline or path files, stored in one commit.
pub(crate) async fn attach(
    daemon: &Arc<Daemon>,
    conn: &ConnectionContext,
    principal: &Principal,
    p: AttachParams,
) -> Result<AttachResult, ErrorObject> {
    let key = daemon.sessions.resolve_key(&p.session_id, mode(p.mode));
    bring_back(daemon, principal, &key).await?;
    let target = commit::target_of(&daemon.sessions, principal, &key).map_err(wire_error::files)?;
    let items = decode_inputs(conn, principal, p.files).await?;
    let files = store(daemon, conn, &target, items).await?;
    Ok(AttachResult { files })
}

/// `file/upload/begin {sessionId, mode?, sizeBytes, filename?, sha256?}`.
pub(crate) async fn upload_begin(
    daemon: &Daemon,
    conn: &ConnectionContext,
    principal: &Principal,
    p: UploadBeginParams,
) -> Result<UploadBeginResult, ErrorObject> {
    let key = daemon.sessions.resolve_key(&p.session_id, mode(p.mode));
    bring_back(daemon, principal, &key).await?;
    let target = commit::target_of(&daemon.sessions, principal, &key).map_err(wire_error::files)?;
    let upload_id = daemon
        .uploads
        .begin(
            conn.id,
            &principal.id,
            target,
            p.size_bytes,
            p.filename,
            p.sha256,
        )
        .map_err(wire_error::files)?;
    Ok(UploadBeginResult {
        upload_id,
        chunk_bytes: CHUNK_BYTES as u64,
        max_bytes: MAX_FILE_BYTES as u64,
    })
}

/// `file/upload/chunk {uploadId, offset, dataB64}`.
pub(crate) fn upload_chunk(
    daemon: &Daemon,
    conn: &ConnectionContext,
    p: UploadChunkParams,
) -> Result<UploadChunkResult, ErrorObject> {
    // A chunk of 1 MiB is about 1.4 MiB of base64; refuse far larger text unread.
    if p.data_b64.len() > CHUNK_BYTES / 3 * 4 + 8 {
        return Err(ErrorObject::invalid_params(format!(
            "chunk exceeds {CHUNK_BYTES} bytes"
        )));
    }
    let data = base64_decode(&p.data_b64, "data_b64")?;
    let received = daemon
        .uploads
        .chunk(conn.id, &p.upload_id, p.offset, &data)
        .map_err(wire_error::files)?;
    Ok(UploadChunkResult {
        upload_id: p.upload_id,
        received_bytes: received,
    })
}

/// `file/upload/commit {uploadId}`: the staged bytes go through the same commit step as
/// `file/attach`.
pub(crate) async fn upload_commit(
    daemon: &Arc<Daemon>,
    conn: &ConnectionContext,
    p: UploadCommitParams,
) -> Result<StoredFile, ErrorObject> {
    let finished = daemon
        .uploads
        .finish(conn.id, &p.upload_id)
        .map_err(wire_error::files)?;
    let item = Item {
        bytes: finished.bytes,
        sha256: Some(finished.sha256),
        filename: finished.filename,
        mime: None,
    };
    let mut files = store(daemon, conn, &finished.target, vec![item]).await?;
    files
        .pop()
        .ok_or_else(|| ErrorObject::internal("nothing was stored"))
}

/// Stores `items` for `target` through the files service's commit step, which re-checks
/// the caller (its credential, and the `files:create` grant of `file/attach`) under the
/// configuration and pairing file it holds.
pub(crate) async fn store(
    daemon: &Daemon,
    conn: &ConnectionContext,
    target: &UploadTarget,
    items: Vec<Item>,
) -> Result<Vec<StoredFile>, ErrorObject> {
    let presented = conn.presented();
    let check = |config: &Config| {
        let principal = daemon.principal_under(config, &presented)?;
        auth::authorize(&principal, Method::FileAttach)?;
        Ok(principal)
    };
    let caller = Caller {
        by_token: presented.is_token(),
        check: &check,
    };
    commit::commit(daemon.file_stores(), caller, target, items)
        .await
        .map_err(wire_error::commit)
}

/// A persisted session that is not live is brought back, as a prompt would (SPEC §17).
async fn bring_back(
    daemon: &Daemon,
    principal: &Principal,
    key: &SessionKey,
) -> Result<(), ErrorObject> {
    daemon
        .sessions
        .live_or_rehydrate(principal, &daemon.config.current(), key)
        .await
        .map(drop)
        .map_err(wire_error::session)
}

fn base64_decode(text: &str, field: &str) -> Result<Vec<u8>, ErrorObject> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| ErrorObject::invalid_params(format!("{field} is not valid base64: {e}")))
}

/// Decodes `file/attach` entries (also the `attachments` of `session/prompt`): each file at
/// most 10 MiB, all together at most 20 MiB.
pub(crate) async fn decode_inputs(
    conn: &ConnectionContext,
    principal: &Principal,
    files: Vec<Unchecked<FileInput>>,
) -> Result<Vec<Item>, ErrorObject> {
    if files.is_empty() {
        return Err(ErrorObject::invalid_params(
            "files must hold at least one file",
        ));
    }
    let mut total = 0usize;
    let mut items = Vec::with_capacity(files.len());
    for (index, raw) in files.into_iter().enumerate() {
        let input: FileInput = raw
            .check()
            .map_err(|e| ErrorObject::invalid_params(format!("file {index}: {}", e.0)))?;
        let local_name = input.path.as_deref().and_then(|p| {
            std::path::Path::new(p)
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_string)
        });
        let bytes = match (input.data_b64, input.path) {
            (Some(data), None) => base64_decode(&data, &format!("file {index} dataB64"))?,
            (None, Some(path)) => read_local(conn, principal, index, &path).await?,
            _ => {
                return Err(ErrorObject::invalid_params(format!(
                    "file {index}: give exactly one of dataB64 or path"
                )));
            }
        };
        if bytes.len() > MAX_FILE_BYTES {
            return Err(ErrorObject::invalid_params(format!(
                "file {index} is {} bytes; at most {MAX_FILE_BYTES} are allowed",
                bytes.len()
            )));
        }
        total += bytes.len();
        if total > MAX_ATTACH_BYTES {
            return Err(ErrorObject::invalid_params(format!(
                "files exceed {MAX_ATTACH_BYTES} bytes in one request; use file/upload"
            )));
        }
        // In path mode the file's own name stands in for a missing filename.
        let filename = input.filename.or(local_name);
        items.push(Item {
            bytes,
            sha256: None,
            filename,
            mime: input.mime_type,
        });
    }
    Ok(items)
}

/// Path mode: the daemon reads a local file (safely: see [`path_read`]). Refused over
/// WebSocket, and for non-admin principals (the daemon may read files their own uid cannot).
async fn read_local(
    conn: &ConnectionContext,
    principal: &Principal,
    index: usize,
    path: &str,
) -> Result<Vec<u8>, ErrorObject> {
    if conn.peer.kind == TransportKind::WebSocket {
        return Err(ErrorObject::invalid_params(format!(
            "file {index}: path attachments are not accepted over WebSocket; send dataB64"
        )));
    }
    if !principal.admin {
        return Err(ErrorObject::forbidden(format!(
            "file {index}: principal {} may not attach by path; send dataB64",
            principal.id
        )));
    }
    path_read::read_path(path.into(), MAX_FILE_BYTES)
        .await
        .map_err(|e| ErrorObject::invalid_params(format!("file {index}: {e}")))
}
