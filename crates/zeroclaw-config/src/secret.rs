//! Secrets hidden from readers (SPEC §6, §17.1 "Secrets are masked wherever they are
//! read"): the credentials part of a URL, and known secret strings inside free text (an
//! error message that may quote a key).

/// What a secret reads as.
pub const MASK: &str = "***";

/// `text` with the `user:password@` part of every URL in it replaced by `***@`
/// (`http://u:pw@host/v1` → `http://***@host/v1`). Text without credentials is returned
/// unchanged.
pub fn redact_url_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let start = at + 3;
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        // The authority runs to the first `/`, `?`, `#` or whitespace (or quote, in a
        // message that quotes the URL).
        let end = rest
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>') || c.is_whitespace()
            })
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        match authority.rfind('@') {
            Some(userinfo_end) => {
                out.push_str(MASK);
                out.push_str(&authority[userinfo_end..]);
            }
            None => out.push_str(authority),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `text` with every occurrence of each non-empty secret replaced by [`MASK`], and URL
/// credentials removed (see [`redact_url_credentials`]).
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut out = redact_url_credentials(text);
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        if out.contains(secret) {
            out = out.replace(secret, MASK);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_credentials_are_masked_and_the_rest_kept() {
        assert_eq!(
            redact_url_credentials("http://user:pw@host:8080/v1"),
            "http://***@host:8080/v1"
        );
        assert_eq!(
            redact_url_credentials("https://tok@h/x?y=1"),
            "https://***@h/x?y=1"
        );
        // `@` after the authority is a path or query, not credentials
        assert_eq!(
            redact_url_credentials("http://host/v1?mail=a@b"),
            "http://host/v1?mail=a@b"
        );
        assert_eq!(
            redact_url_credentials("cannot reach http://a:b@h/models: refused (see https://c:d@e)"),
            "cannot reach http://***@h/models: refused (see https://***@e)"
        );
        // a password holding `@`: everything up to the last `@` of the authority goes
        assert_eq!(
            redact_url_credentials("http://u:p@ss@host/"),
            "http://***@host/"
        );
        for plain in [
            "",
            "no url",
            "http://127.0.0.1:11434/v1",
            "x://",
            "ünï://ü@ñ",
        ] {
            let expect = if plain.contains('@') {
                "ünï://***@ñ"
            } else {
                plain
            };
            assert_eq!(redact_url_credentials(plain), expect);
        }
    }

    #[test]
    fn known_secrets_are_masked() {
        assert_eq!(
            redact(
                "Incorrect API key provided: sk-abc (http://u:p@h)",
                &["sk-abc", ""]
            ),
            "Incorrect API key provided: *** (http://***@h)"
        );
    }
}
