//! `zeroclaw upload --session ID FILE…`: sends files to a session's workspace with the
//! chunked upload methods, showing a progress bar, and prints each stored file with its
//! marker (what to paste into a prompt), or each entry as JSON with `--json`. A chunk whose reply is lost is sent again: the
//! daemon acknowledges an identical chunk at an accepted offset without change.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;
use sha2::{Digest, Sha256};
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::files::{UploadBeginParams, UploadChunkParams, UploadCommitParams};
use zeroclaw_client::{ClientError, ClientHandle};

use super::error::CliError;
use super::rpc;

const CHUNK_TIMEOUT: Duration = Duration::from_secs(30);
const CHUNK_TRIES: u32 = 3;

pub async fn run(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    session: String,
    files: Vec<PathBuf>,
    json: bool,
) -> Result<(), CliError> {
    let handle = rpc::handle(config_dir, socket).await?;
    for path in files {
        let entry = upload_one(&handle, &session, &path).await?;
        if json {
            rpc::print_json(&entry);
        } else {
            println!("{}", describe(&path, &entry));
        }
    }
    Ok(())
}

/// `report.pdf: 2500000 bytes → /w/uploads/…`, then the marker on a line of its own.
fn describe(path: &std::path::Path, entry: &Value) -> String {
    let mut line = format!(
        "{}: {} bytes → {}",
        path.display(),
        entry["size_bytes"],
        entry["workspace_path"].as_str().unwrap_or("?")
    );
    if entry["deduplicated"] == Value::Bool(true) {
        line.push_str(" (already there)");
    }
    line.push_str(&format!(
        "\n  marker: {}",
        entry["marker"].as_str().unwrap_or("?")
    ));
    line
}

async fn upload_one(
    client: &ClientHandle,
    session: &str,
    path: &PathBuf,
) -> Result<Value, CliError> {
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let filename = path
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string);
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let begin = UploadBeginParams {
        session_id: session.to_owned().into(),
        mode: None,
        size_bytes: bytes.len() as u64,
        filename: filename.clone(),
        sha256: Some(sha256),
    };
    let begin = client
        .call_typed::<call::FileUploadBegin>(&begin)
        .await
        .map_err(CliError::from_client)?;
    let upload_id = begin.upload_id;
    let chunk = usize::try_from(begin.chunk_bytes.max(1)).unwrap_or(usize::MAX);

    let bar = ProgressBar::new(bytes.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(filename.clone().unwrap_or_default());
    let mut offset = 0usize;
    while offset < bytes.len() {
        let end = (offset + chunk).min(bytes.len());
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes[offset..end]);
        let params = UploadChunkParams {
            upload_id: upload_id.clone(),
            offset: offset as u64,
            data_b64: data,
        };
        let received = send_chunk(client, &params).await?;
        offset = usize::try_from(received).map_err(|e| e.to_string())?;
        bar.set_position(offset as u64);
    }
    let entry = client
        .call_typed_value::<call::FileUploadCommit>(&UploadCommitParams { upload_id })
        .await
        .map_err(CliError::from_client);
    bar.finish_and_clear();
    entry
}

/// One chunk, retried when its reply does not come back in time.
async fn send_chunk(client: &ClientHandle, params: &UploadChunkParams) -> Result<u64, CliError> {
    let mut tries = 0;
    loop {
        tries += 1;
        match client
            .call_typed_within::<call::FileUploadChunk>(params, CHUNK_TIMEOUT)
            .await
        {
            Ok(r) => return Ok(r.received_bytes),
            Err(ClientError::Timeout) if tries < CHUNK_TRIES => {
                eprintln!("no reply to a chunk in {CHUNK_TIMEOUT:?}; sending it again");
            }
            Err(e) => return Err(CliError::from_client(e)),
        }
    }
}
