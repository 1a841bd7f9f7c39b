//! `zeroclaw schema`: prints the protocol's JSON Schema (every method's params and result,
//! every `session/update` kind, `elicitation/create`), generated from the vocabulary crate.
//! It needs no daemon. docs/PROTOCOL.md explains what the document describes.

/// Writes the document to stdout, pretty-printed, with a final newline.
pub fn print() -> Result<(), String> {
    let doc = zeroclaw_protocol::schema::document();
    let text = serde_json::to_string_pretty(&doc).map_err(|e| format!("schema: {e}"))?;
    println!("{text}");
    Ok(())
}
