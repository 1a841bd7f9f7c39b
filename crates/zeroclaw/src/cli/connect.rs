//! `zeroclaw connect`: copies stdin to the daemon's socket and the socket to stdout, so a
//! terminal or a script can speak NDJSON without socat. Exits when the daemon closes the
//! connection, or (after a short grace for the last answers) when stdin ends.

use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncWriteExt, copy};

/// How long answers may still arrive after stdin ended.
const AFTER_EOF: Duration = Duration::from_secs(2);

pub async fn run(socket: PathBuf) -> Result<(), String> {
    let conn = zeroclaw_ipc::connect(&socket)
        .await
        .map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
    let (mut reader, mut writer) = (conn.reader, conn.writer);
    let mut to_stdout = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let copied = copy(&mut reader, &mut stdout).await;
        let _ = stdout.flush().await;
        copied
    });
    let mut stdin = tokio::io::stdin();
    tokio::select! {
        _ = copy(&mut stdin, &mut writer) => {
            let _ = writer.shutdown().await;
            let _ = tokio::time::timeout(AFTER_EOF, &mut to_stdout).await;
        }
        _ = &mut to_stdout => {}
    }
    Ok(())
}
