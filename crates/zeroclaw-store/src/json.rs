//! JSON text at its exact size ([`to_json_exact`]): what the store writes for a large
//! payload (a checkpoint's streamed text, a context snapshot) is measured by a first pass
//! into a counter and then written once into a buffer of that size, so an 8 MiB text costs
//! 8 MiB of JSON, not the up to 16 MiB a buffer grown by doubling reserves (SPEC §17).

use serde::Serialize;

/// Counts the bytes written to it and keeps none.
pub(crate) struct Count(pub(crate) usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A value the store writes as JSON: measured first (its row is made that long), then
/// written straight into the row. [`SerdeJson`] is any `Serialize` value; a caller whose
/// value holds texts it keeps out of memory encodes it its own way.
pub trait EncodeJson {
    /// The length of what [`EncodeJson::write_json`] writes.
    fn json_len(&self) -> std::io::Result<usize>;
    /// Writes the compact JSON to `out`.
    fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()>;
}

/// A `Serialize` value, encoded by `serde_json`.
pub struct SerdeJson<T>(pub T);

impl<T: Serialize> EncodeJson for SerdeJson<T> {
    fn json_len(&self) -> std::io::Result<usize> {
        let mut count = Count(0);
        serde_json::to_writer(&mut count, &self.0)?;
        Ok(count.0)
    }

    fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        Ok(serde_json::to_writer(out, &self.0)?)
    }
}

/// The compact JSON of `value` in a `String` whose capacity is its length.
pub fn to_json_exact<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value)?;
    let mut out = Vec::with_capacity(count.0);
    serde_json::to_writer(&mut out, value)?;
    // serde_json writes UTF-8 only; the check is a scan, not a copy.
    String::from_utf8(out)
        .map_err(|e| serde_json::Error::io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_as_to_string_without_spare_capacity() {
        let v = serde_json::json!({"text": "a \"quoted\"\nline é", "n": [1, 2, 3]});
        let s = to_json_exact(&v).expect("encodes");
        assert_eq!(s, serde_json::to_string(&v).expect("encodes"));
        assert_eq!(s.capacity(), s.len());
    }

    #[test]
    fn borrowed_text_encodes_as_progress_text() {
        use crate::Progress;
        use crate::turns::EncodedProgress;
        let text = "a \"long\" text\n";
        let owned = Progress::Text {
            segment: 3,
            text: text.to_owned(),
        };
        let encoded = EncodedProgress::text(3, text).expect("encodes");
        assert_eq!(encoded.payload, to_json_exact(&owned).expect("encodes"));
        assert_eq!(encoded.event_key, owned.event_key());
        assert_eq!(encoded.kind, owned.kind());
    }
}
