//! `zeroclaw schema`: prints the protocol's JSON Schema (every method's params and result,
//! every `session/update` kind, `elicitation/create`), generated from the vocabulary crate.
//! It needs no daemon. docs/PROTOCOL.md explains what the document describes.

use std::io::Write;

/// Writes the document to stdout, pretty-printed, with a final newline. A reader that
/// stops early (`zeroclaw schema | head`) is not an error.
pub fn print() -> Result<(), String> {
    let doc = zeroclaw_protocol::schema::document();
    let mut text = serde_json::to_string_pretty(&doc).map_err(|e| format!("schema: {e}"))?;
    text.push('\n');
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("schema: {e}")),
        _ => Ok(()),
    }
}
