//! Long text cut to fit a frame (SPEC §17 "Nothing the daemon writes exceeds a frame"):
//! the `content` of a prompt's answer and of `turn_complete` carries at most
//! [`MAX_CONTENT`] bytes, cut at a character boundary, plus `truncated: true` when cut.
//! Streamed chunks and the durable transcript keep the whole text.

use serde_json::{Map, Value};
use zeroclaw_store::char_floor;

/// 1 MiB.
pub const MAX_CONTENT: usize = zeroclaw_store::MAX_MESSAGE_CONTENT;

/// Inserts `content` (cut to [`MAX_CONTENT`]) and, when cut, `truncated: true`.
pub fn put_content(fields: &mut Map<String, Value>, content: &str) {
    let end = char_floor(content, MAX_CONTENT);
    fields.insert("content".into(), Value::String(content[..end].to_owned()));
    if end < content.len() {
        fields.insert("truncated".into(), Value::Bool(true));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_a_character_boundary_and_says_so() {
        let mut short = Map::new();
        put_content(&mut short, "hi");
        assert_eq!(Value::Object(short), serde_json::json!({"content": "hi"}));

        let long = "é".repeat(MAX_CONTENT); // 2 MiB
        let mut cut = Map::new();
        put_content(&mut cut, &long);
        let text = cut["content"].as_str().unwrap();
        assert_eq!(text.len(), MAX_CONTENT);
        assert!(long.starts_with(text));
        assert_eq!(cut["truncated"], true);

        let odd = format!("x{}", "é".repeat(MAX_CONTENT / 2));
        let mut cut = Map::new();
        put_content(&mut cut, &odd);
        assert_eq!(cut["content"].as_str().unwrap().len(), MAX_CONTENT - 1);
    }
}
