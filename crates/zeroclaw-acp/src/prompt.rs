//! An ACP prompt (a list of content blocks) as a daemon `session/prompt`, and the daemon's
//! answer as an ACP stop reason. Text blocks are joined; embedded `resource` blocks become
//! attachments (documents); a `resource_link` to a local file is attached by path; a link
//! elsewhere is named in the text.

use agent_client_protocol_schema::v1::{ContentBlock, EmbeddedResourceResource, StopReason};
use base64::Engine;
use zeroclaw_client::Outcome;
use zeroclaw_client::protocol::files::FileInput;
use zeroclaw_client::protocol::session::{Prompt, SessionPromptParams, TurnResult};
use zeroclaw_rpc::ErrorObject;

/// What the daemon is sent.
#[derive(Debug, Default, PartialEq)]
pub struct DaemonPrompt {
    pub text: String,
    /// `session/prompt` `attachments` entries (`file/attach` input objects).
    pub attachments: Vec<FileInput>,
}

impl DaemonPrompt {
    /// The `session/prompt` params (`attachments` only when there are some).
    pub fn params(&self, session_id: &str) -> SessionPromptParams {
        SessionPromptParams {
            session_id: session_id.into(),
            prompt: Prompt::Text(self.text.clone()),
            mode: None,
            attachments: (!self.attachments.is_empty())
                .then(|| self.attachments.iter().cloned().map(Into::into).collect()),
        }
    }
}

/// The file name a URI ends with (`file:///a/b.txt` → `b.txt`).
fn file_name(uri: &str) -> Option<String> {
    let name = uri.rsplit('/').next()?.split(['?', '#']).next()?;
    (!name.is_empty()).then(|| percent_decode(name))
}

/// Decodes `%XX` escapes; anything malformed is kept as written.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The local path of a `file://` URI (`file:///p` or `file://localhost/p`).
fn local_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    rest.starts_with('/').then(|| percent_decode(rest))
}

/// Translates the blocks; unsupported or unusable blocks are -32602.
pub fn translate(blocks: &[ContentBlock]) -> Result<DaemonPrompt, ErrorObject> {
    let mut texts: Vec<String> = Vec::new();
    let mut attachments = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        match block {
            ContentBlock::Text(t) => texts.push(t.text.clone()),
            ContentBlock::Resource(r) => {
                let (uri, mime, data) = match &r.resource {
                    EmbeddedResourceResource::TextResourceContents(t) => (
                        &t.uri,
                        t.mime_type.clone(),
                        base64::engine::general_purpose::STANDARD.encode(t.text.as_bytes()),
                    ),
                    EmbeddedResourceResource::BlobResourceContents(b) => {
                        (&b.uri, b.mime_type.clone(), b.blob.clone())
                    }
                    _ => return Err(unsupported(i, "this kind of embedded resource")),
                };
                attachments.push(FileInput {
                    data_b64: Some(data),
                    filename: file_name(uri),
                    mime_type: mime,
                    ..Default::default()
                });
            }
            ContentBlock::ResourceLink(link) => match local_path(&link.uri) {
                Some(path) => attachments.push(FileInput {
                    path: Some(path),
                    filename: Some(link.name.clone()),
                    mime_type: link.mime_type.clone(),
                    ..Default::default()
                }),
                None => texts.push(format!("[{}]({})", link.name, link.uri)),
            },
            ContentBlock::Image(_) => return Err(unsupported(i, "image content")),
            ContentBlock::Audio(_) => return Err(unsupported(i, "audio content")),
            _ => return Err(unsupported(i, "this content block type")),
        }
    }
    let text = texts.join("\n");
    if text.trim().is_empty() && attachments.is_empty() {
        return Err(ErrorObject::invalid_params("the prompt is empty"));
    }
    Ok(DaemonPrompt { text, attachments })
}

fn unsupported(index: usize, what: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "prompt block {index}: {what} is not supported (promptCapabilities)"
    ))
}

/// The note the agent appends when a turn hit `max_tool_iterations`.
const ROUND_LIMIT_SUFFIX: &str = "(max_tool_iterations)]";

/// The stop reason for the daemon's `session/prompt` answer. `cancelled` is true when
/// the editor cancelled this turn (ACP: the answer is then `cancelled` whatever came
/// back). A failed turn is an error carrying the provider's message.
pub fn stop_reason(answer: &TurnResult, cancelled: bool) -> Result<StopReason, ErrorObject> {
    let content = answer.content.as_str();
    match answer.outcome {
        _ if cancelled => Ok(StopReason::Cancelled),
        Outcome::Cancelled => Ok(StopReason::Cancelled),
        Outcome::Failed => Err(ErrorObject::internal(if content.is_empty() {
            "the turn failed".to_string()
        } else {
            content.to_string()
        })),
        _ if content.trim_end().ends_with(ROUND_LIMIT_SUFFIX) => Ok(StopReason::MaxTurnRequests),
        _ => Ok(StopReason::EndTurn),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn blocks(v: Value) -> Vec<ContentBlock> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn text_resources_and_links() {
        let p = translate(&blocks(json!([
            {"type": "text", "text": "look at"},
            {"type": "resource", "resource": {"uri": "file:///w/a%20b.md", "text": "# hi", "mimeType": "text/markdown"}},
            {"type": "resource_link", "uri": "file:///etc/hosts", "name": "hosts"},
            {"type": "resource_link", "uri": "https://x.test/y", "name": "y"},
            {"type": "text", "text": "please"},
        ])))
        .unwrap();
        assert_eq!(p.text, "look at\n[y](https://x.test/y)\nplease");
        assert_eq!(
            serde_json::to_value(&p.attachments).unwrap(),
            json!([
                {"dataB64": "IyBoaQ==", "filename": "a b.md", "mimeType": "text/markdown"},
                {"path": "/etc/hosts", "filename": "hosts"},
            ])
        );
        let params = serde_json::to_value(p.params("s")).unwrap();
        assert_eq!(params["attachments"].as_array().unwrap().len(), 2);
        assert_eq!(params["prompt"], json!(p.text));
        let plain = translate(&blocks(json!([{"type": "text", "text": "x"}]))).unwrap();
        assert_eq!(
            serde_json::to_value(plain.params("s")).unwrap(),
            json!({"sessionId": "s", "prompt": "x"})
        );
    }

    #[test]
    fn unsupported_and_empty_prompts_are_invalid_params() {
        let image = blocks(json!([{"type": "image", "data": "AA==", "mimeType": "image/png"}]));
        assert_eq!(translate(&image).unwrap_err().code, -32602);
        assert_eq!(translate(&[]).unwrap_err().code, -32602);
        assert_eq!(
            translate(&blocks(json!([{"type": "text", "text": " "}])))
                .unwrap_err()
                .code,
            -32602
        );
    }

    #[test]
    fn stop_reasons() {
        let answer = |outcome: &str, content: &str| -> TurnResult {
            serde_json::from_value(json!({"sessionId": "s", "turnId": "t",
                "outcome": outcome, "content": content}))
            .unwrap()
        };
        assert_eq!(
            stop_reason(&answer("completed", "hi"), false).unwrap(),
            StopReason::EndTurn
        );
        assert_eq!(
            stop_reason(&answer("cancelled", ""), false).unwrap(),
            StopReason::Cancelled
        );
        assert_eq!(
            stop_reason(&answer("completed", "hi"), true).unwrap(),
            StopReason::Cancelled
        );
        let limit = "x\n\n[stopped: reached the limit of 5 tool rounds for this turn (max_tool_iterations)]";
        assert_eq!(
            stop_reason(&answer("completed", limit), false).unwrap(),
            StopReason::MaxTurnRequests
        );
        let failed = stop_reason(&answer("failed", "provider said 500: boom"), false).unwrap_err();
        assert_eq!(failed.message, "provider said 500: boom");
    }
}
