//! Paths as text: a path's bytes with `%`, space and control bytes percent-encoded, and
//! every byte over 0x7f too, so that any file name (not only UTF-8 ones) fits on one line of
//! a manifest or in a JSON string and reads back to the same bytes. A leaf.

/// Encodes `bytes` (never fails).
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b == b'%' || b <= b' ' || b >= 0x7f {
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        } else {
            out.push(b as char);
        }
    }
    out
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Decodes what [`encode`] wrote; `None` for text it cannot have written.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hi = hex_value(*bytes.get(i + 1)?)?;
            let lo = hex_value(*bytes.get(i + 2)?)?;
            out.push(hi << 4 | lo);
            i += 3;
        } else if b <= b' ' || b >= 0x7f {
            return None;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Some(out)
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

/// A path's bytes for a report: UTF-8 as is, anything else lossily.
pub fn display(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_any_bytes() {
        let all: Vec<u8> = (1..=255u8).collect();
        for sample in [
            &b"plain/path.rs"[..],
            b"with space",
            b"100%",
            &all,
            "caf\u{e9}".as_bytes(),
        ] {
            let text = encode(sample);
            assert!(!text.contains(' ') && !text.contains('\n'), "{text}");
            assert_eq!(decode(&text).as_deref(), Some(sample));
        }
    }

    #[test]
    fn refuses_what_it_never_writes() {
        assert_eq!(decode("a b"), None);
        assert_eq!(decode("%4"), None);
        assert_eq!(decode("%zz"), None);
    }
}
