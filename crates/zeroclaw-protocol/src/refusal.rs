//! Refusals in the vocabulary's own words, and decoding that keeps them whole.
//!
//! A vocabulary type may reject a value with a sentence of its own rather than serde's
//! generic text: an unknown `autonomy` or `decision` is refused exactly as the daemon
//! refused it before params were typed (issue 26). [`refuse`] makes that sentence an
//! ordinary serde custom error, so every deserializer reports it (serde_json adds its
//! ` at line L column C`), and notes it on the decoding thread. [`decoding`] runs one
//! decode and tells such a refusal from serde's own errors by that note: a refusal becomes
//! the -32602 text alone, anything else `invalid params: ` and serde's text. The note is
//! never part of any message, so nothing of this mechanism reaches the wire.

use std::cell::Cell;

thread_local! {
    /// The sentence of the last refusal on this thread, until [`decoding`] takes it.
    static NOTED: Cell<Option<String>> = const { Cell::new(None) };
}

/// A serde error carrying `sentence`, noted as a refusal in the vocabulary's words.
pub(crate) fn refuse<E: serde::de::Error>(sentence: String) -> E {
    let error = E::custom(&sentence);
    NOTED.with(|noted| noted.set(Some(sentence)));
    error
}

/// Runs `decode` (one serde_json decode on this thread); a failure becomes the text a
/// -32602 error carries: a refusal's sentence as is, else `invalid params: ` and serde's
/// message.
pub(crate) fn decoding<T>(decode: impl FnOnce() -> serde_json::Result<T>) -> Result<T, String> {
    NOTED.with(|noted| noted.set(None));
    let result = decode();
    let noted = NOTED.with(Cell::take);
    result.map_err(|e| match noted {
        // The note alone is not enough: the error must be that very sentence (a refusal
        // an untagged or buffered field recovered from must not rename a later error).
        Some(sentence) if unplaced(&e) == sentence => sentence,
        _ => format!("invalid params: {e}"),
    })
}

/// serde_json's message without the ` at line L column C` it appends to a placed error.
fn unplaced(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if e.line() == 0 {
        return text;
    }
    let place = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&place) {
        Some(bare) => bare.to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// Refuses every string but `ok`, in its own words.
    #[derive(Debug)]
    struct Picky;

    impl<'de> Deserialize<'de> for Picky {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let s = String::deserialize(d)?;
            if s == "ok" {
                Ok(Picky)
            } else {
                Err(refuse(format!("no {s:?} here")))
            }
        }
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct P {
        a: Picky,
        b: u8,
    }

    #[test]
    fn a_refusal_comes_out_alone_and_other_errors_keep_serdes_text() {
        let text = r#"{"a":"nope","b":1}"#;
        let e = decoding(|| serde_json::from_str::<P>(text)).expect_err("refused");
        assert_eq!(e, r#"no "nope" here"#);
        // Any other deserializer shows the sentence as a plain custom error.
        let plain = serde_json::from_str::<P>(text).expect_err("refused");
        assert_eq!(plain.to_string(), r#"no "nope" here at line 1 column 11"#);
        let value = serde_json::json!({"a": "nope", "b": 1});
        let e = decoding(|| serde_json::from_value::<P>(value)).expect_err("refused");
        assert_eq!(e, r#"no "nope" here"#);
        let e = decoding(|| serde_json::from_str::<P>(r#"{"a":"ok","b":-1}"#)).expect_err("b");
        assert_eq!(
            e,
            "invalid params: invalid value: integer `-1`, expected u8 at line 1 column 16"
        );
        let e = decoding(|| serde_json::from_str::<P>(r#"{"a":5}"#)).expect_err("type");
        assert!(e.starts_with("invalid params: invalid type"), "{}", e);
    }

    #[test]
    fn a_stale_note_names_no_other_error() {
        let _ = serde_json::from_str::<P>(r#"{"a":"x","b":1}"#);
        let e = decoding(|| serde_json::from_str::<P>(r#"{"a":"ok"}"#)).expect_err("missing");
        assert_eq!(e, "invalid params: missing field `b` at line 1 column 10");
        // A refusal recovered from (here by an untagged enum) leaves its note behind.
        #[derive(Debug, Deserialize)]
        #[serde(untagged)]
        #[allow(dead_code)]
        enum Either {
            Picky(Picky),
            Text(String),
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Q {
            e: Either,
            b: u8,
        }
        let e = decoding(|| serde_json::from_str::<Q>(r#"{"e":"x","b":"y"}"#)).expect_err("b");
        assert!(e.starts_with("invalid params: invalid type"), "{}", e);
    }
}
