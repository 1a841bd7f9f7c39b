//! JSON's escaping of a text's bytes, byte by byte, so that a spilled text can be escaped
//! a piece at a time and its escaped length counted as it is written.

/// JSON's escaping of a string's bytes, as `serde_json` writes it: `"` and `\` and the
/// control characters escaped, everything else (UTF-8 included) as is. Byte by byte, so a
/// text may be escaped in pieces cut anywhere.
pub fn escape_into(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x08 => b'b',
            0x0c => b'f',
            0x00..=0x1f => b'u',
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.push(b'\\');
        out.push(short);
        if short == b'u' {
            let hex = [
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 15)],
            ];
            out.extend_from_slice(&hex);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// The length of [`escape_into`]'s output for `bytes`.
pub fn escaped_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .map(|&b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0x00..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_serde_json_for_every_ascii_byte_and_beyond() {
        let mut all: String = (0u8..128).map(char::from).collect();
        all.push_str("é€😀\u{2028}");
        let mut out = Vec::new();
        escape_into(all.as_bytes(), &mut out);
        let expected = serde_json::to_vec(&all).expect("json");
        assert_eq!(out, expected[1..expected.len() - 1]);
        assert_eq!(escaped_len(all.as_bytes()), out.len());
    }
}
