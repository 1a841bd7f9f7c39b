//! The `[notify.NAME]` channels (SPEC §24.3): `webhook` posts the notice's JSON (signed
//! `X-Zeroclaw-Signature: sha256=HEX` with the channel's `secret`), `ntfy` posts its text
//! to an ntfy topic with `Title`, `Click` and `Priority` headers, `command` runs a command
//! with the JSON on stdin for at most the channel's `timeout_secs`.

use std::process::Stdio;
use std::time::Duration;

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::io::AsyncWriteExt;
use zeroclaw_config::notify::{NotifyChannel, NotifyKind};

/// `sha256=HEX` of the HMAC-SHA256 of `body` under `secret`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    // HMAC takes a key of any length: this cannot fail.
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC accepts any key length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// A header value from free text: control characters dropped, non-ASCII text as an RFC
/// 2047 encoded word (ntfy decodes it).
fn header_text(text: &str) -> String {
    let clean: String = text.chars().filter(|c| !c.is_control()).collect();
    if clean.is_ascii() {
        clean
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(clean.as_bytes());
        format!("=?UTF-8?B?{b64}?=")
    }
}

/// Delivers `json` (the notice's JSON, `title`, `text` and `click` its parts) to `channel`.
pub async fn deliver(
    http: &reqwest::Client,
    channel: &NotifyChannel,
    json: &[u8],
    title: &str,
    text: &str,
    click: &str,
) -> Result<(), String> {
    match channel.kind {
        NotifyKind::Webhook => {
            let mut req = http
                .post(&channel.url)
                .header("Content-Type", "application/json")
                .body(json.to_vec());
            if !channel.secret.is_empty() {
                req = req.header("X-Zeroclaw-Signature", signature(&channel.secret, json));
            }
            answered(req.send().await)
        }
        NotifyKind::Ntfy => {
            let mut req = http
                .post(&channel.url)
                .header("Title", header_text(title))
                .header("Priority", channel.priority.to_string())
                .body(text.to_owned());
            if click.starts_with("http://") || click.starts_with("https://") {
                req = req.header("Click", header_text(click));
            }
            answered(req.send().await)
        }
        NotifyKind::Command => run_command(channel, json).await,
    }
}

fn answered(sent: Result<reqwest::Response, reqwest::Error>) -> Result<(), String> {
    match sent {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) => Err(format!("answered {}", r.status())),
        Err(e) => Err(format!("cannot reach it: {e}")),
    }
}

async fn run_command(channel: &NotifyChannel, json: &[u8]) -> Result<(), String> {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&channel.command)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the command: {e}"))?;
    let limit = Duration::from_secs(channel.timeout_secs.max(1));
    let run = async {
        if let Some(mut stdin) = child.stdin.take() {
            // A command that does not read its input still runs.
            let _ = stdin.write_all(json).await;
        }
        child.wait().await
    };
    match tokio::time::timeout(limit, run).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("the command ended with {status}")),
        Ok(Err(e)) => Err(format!("the command: {e}")),
        // Dropping the child kills it.
        Err(_) => Err(format!("the command ran longer than {}s", limit.as_secs())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_hmac_sha256_hex() {
        // RFC 4231 test case 2.
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn header_text_is_ascii() {
        assert_eq!(header_text("Approval\nneeded"), "Approvalneeded");
        assert_eq!(header_text("é"), "=?UTF-8?B?w6k=?=");
    }

    #[tokio::test]
    async fn a_command_gets_the_json_and_is_bounded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("got.json");
        let ch = NotifyChannel {
            kind: NotifyKind::Command,
            command: format!("cat > '{}'", out.display()),
            ..NotifyChannel::default()
        };
        run_command(&ch, br#"{"event":"x"}"#).await.expect("ran");
        assert_eq!(std::fs::read(&out).expect("written"), br#"{"event":"x"}"#);
        let slow = NotifyChannel {
            kind: NotifyKind::Command,
            command: "sleep 30".into(),
            timeout_secs: 1,
            ..NotifyChannel::default()
        };
        let started = std::time::Instant::now();
        assert!(run_command(&slow, b"{}").await.is_err());
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
