//! Property paths (`users.example.uid`, `agents."my.agent".model`) and the write-path
//! patterns of `config_write_paths` (SPEC §4.1, §6).
//!
//! Syntax: segments separated by `.`. A bare segment is one or more of `A-Z a-z 0-9 _ -`;
//! any other key is written in double quotes, where `\"` and `\\` are the only escapes.
//! [`PropPath`]'s `Display` gives the canonical spelling (quotes only where needed), so two
//! spellings of one property compare and print the same.
//!
//! Patterns: `*` alone matches every property. A `*` segment matches exactly one segment,
//! except as the last segment, where it matches one or more: `users.*` covers
//! `users.example` and everything below it, but **not** `users` itself (replacing or
//! deleting the whole section is a wider power than editing entries). A pattern without `*`
//! matches only that exact property. A quoted `"*"` is a literal key named `*`.

use std::fmt;

/// A parsed property path: at least one segment, none empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PropPath {
    segments: Vec<String>,
}

/// Why a path or pattern did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathError(pub String);

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PathError {}

/// Whether `s` can be written as a bare (unquoted) segment.
pub fn is_bare(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// One token of the path syntax: the segment text and whether it was quoted.
fn tokenize(input: &str) -> Result<Vec<(String, bool)>, PathError> {
    if input.is_empty() {
        return Err(PathError("empty property path".into()));
    }
    let mut out = Vec::new();
    let mut chars = input.chars().peekable();
    loop {
        // One segment.
        let (seg, quoted) = if chars.peek() == Some(&'"') {
            chars.next();
            let mut seg = String::new();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '"' => {
                        closed = true;
                        break;
                    }
                    '\\' => match chars.next() {
                        Some(e @ ('"' | '\\')) => seg.push(e),
                        _ => {
                            return Err(PathError(format!(
                                "invalid escape in property path {input:?}"
                            )));
                        }
                    },
                    c => seg.push(c),
                }
            }
            if !closed {
                return Err(PathError(format!(
                    "unterminated quote in property path {input:?}"
                )));
            }
            (seg, true)
        } else {
            let mut seg = String::new();
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                seg.push(c);
                chars.next();
            }
            (seg, false)
        };
        if seg.is_empty() {
            return Err(PathError(format!(
                "empty segment in property path {input:?}"
            )));
        }
        if !quoted && seg != "*" && !is_bare(&seg) {
            return Err(PathError(format!(
                "segment {seg:?} of property path {input:?} must be quoted"
            )));
        }
        out.push((seg, quoted));
        match chars.next() {
            None => return Ok(out),
            Some('.') => {
                if chars.peek().is_none() {
                    return Err(PathError(format!(
                        "empty segment in property path {input:?}"
                    )));
                }
            }
            Some(c) => {
                return Err(PathError(format!(
                    "unexpected {c:?} after quoted segment in property path {input:?}"
                )));
            }
        }
    }
}

impl PropPath {
    /// Parses a property path. A bare `*` is refused (it is pattern syntax).
    pub fn parse(input: &str) -> Result<PropPath, PathError> {
        let toks = tokenize(input)?;
        if toks.iter().any(|(s, q)| !q && s == "*") {
            return Err(PathError(format!(
                "wildcard not allowed in property path {input:?}"
            )));
        }
        Ok(PropPath {
            segments: toks.into_iter().map(|(s, _)| s).collect(),
        })
    }

    /// Builds a path from raw segments. Returns `None` if empty or a segment is empty.
    pub fn from_segments<I, S>(segments: I) -> Option<PropPath>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let segments: Vec<String> = segments.into_iter().map(Into::into).collect();
        if segments.is_empty() || segments.iter().any(String::is_empty) {
            return None;
        }
        Some(PropPath { segments })
    }

    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    pub fn len(&self) -> usize {
        self.segments.len()
    }

    /// Always false: a path has at least one segment.
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// This path with one more segment.
    pub fn child(&self, segment: impl Into<String>) -> PropPath {
        let mut segments = self.segments.clone();
        segments.push(segment.into());
        PropPath { segments }
    }

    /// Whether `self` is `other` or lies below it.
    pub fn starts_with(&self, other: &PropPath) -> bool {
        self.segments.len() >= other.segments.len()
            && self.segments[..other.segments.len()] == other.segments[..]
    }

    /// Number of leading segments the two paths share.
    pub fn common_prefix_len(&self, other: &PropPath) -> usize {
        self.segments
            .iter()
            .zip(&other.segments)
            .take_while(|(a, b)| a == b)
            .count()
    }
}

fn write_segment(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    if is_bare(s) {
        f.write_str(s)
    } else {
        f.write_str("\"")?;
        for c in s.chars() {
            if c == '"' || c == '\\' {
                f.write_str("\\")?;
            }
            write!(f, "{c}")?;
        }
        f.write_str("\"")
    }
}

impl fmt::Display for PropPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.segments.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write_segment(f, s)?;
        }
        Ok(())
    }
}

impl std::str::FromStr for PropPath {
    type Err = PathError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PropPath::parse(s)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PatSeg {
    Lit(String),
    Any,
}

/// A `config_write_paths` entry. See the module doc for the matching rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritePattern {
    segs: Vec<PatSeg>,
    source: String,
}

impl WritePattern {
    pub fn parse(input: &str) -> Result<WritePattern, PathError> {
        let segs = tokenize(input)?
            .into_iter()
            .map(|(s, quoted)| {
                if !quoted && s == "*" {
                    PatSeg::Any
                } else {
                    PatSeg::Lit(s)
                }
            })
            .collect();
        Ok(WritePattern {
            segs,
            source: input.to_string(),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    pub fn matches(&self, path: &PropPath) -> bool {
        if self.segs == [PatSeg::Any] {
            return true;
        }
        let p = path.segments();
        let last = self.segs.len() - 1;
        for (i, seg) in self.segs.iter().enumerate() {
            let trailing_any = i == last && *seg == PatSeg::Any;
            let Some(actual) = p.get(i) else { return false };
            match seg {
                PatSeg::Any => {
                    if trailing_any {
                        return true;
                    }
                }
                PatSeg::Lit(l) => {
                    if l != actual {
                        return false;
                    }
                }
            }
        }
        p.len() == self.segs.len()
    }
}

impl WritePattern {
    /// Whether every property this pattern matches is also matched by `wider` (a pattern
    /// always lies within itself). Used by the no-escalation rule (SPEC §4.1).
    pub fn within(&self, wider: &WritePattern) -> bool {
        if wider.segs == [PatSeg::Any] {
            return true;
        }
        if self.segs == [PatSeg::Any] {
            return false;
        }
        let trailing = |segs: &[PatSeg]| segs.last() == Some(&PatSeg::Any);
        let (m, n) = (self.segs.len(), wider.segs.len());
        // The lengths of the paths matched: exactly m, or m and more with a trailing `*`.
        let lengths_fit = match (trailing(&self.segs), trailing(&wider.segs)) {
            (true, true) | (false, true) => n <= m,
            (false, false) => n == m,
            (true, false) => false,
        };
        lengths_fit
            && wider
                .segs
                .iter()
                .zip(&self.segs)
                .all(|(w, s)| *w == PatSeg::Any || w == s)
    }
}

impl fmt::Display for WritePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PropPath {
        PropPath::parse(s).expect(s)
    }

    #[test]
    fn parses_bare_and_quoted() {
        assert_eq!(
            p("users.example.uid").segments(),
            ["users", "example", "uid"]
        );
        assert_eq!(
            p("agents.\"my.agent\".model").segments(),
            ["agents", "my.agent", "model"]
        );
        assert_eq!(p("a.\"x\\\"y\\\\z\"").segments(), ["a", "x\"y\\z"]);
        assert_eq!(p("\"users\".example").to_string(), "users.example");
        assert_eq!(
            p("agents.\"my.agent\".model").to_string(),
            "agents.\"my.agent\".model"
        );
        assert_eq!(p("a.\"x\\\"y\"").to_string(), "a.\"x\\\"y\"");
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            ".",
            "a.",
            ".a",
            "a..b",
            "a.\"b",
            "a.\"\"",
            "a.\"b\"c",
            "a.b c",
            "a.*",
            "a.b/c",
            "a.\"b\\n\"",
        ] {
            assert!(PropPath::parse(bad).is_err(), "{bad:?} should fail");
        }
        let e = PropPath::parse("agents.\"my.agent").unwrap_err();
        assert!(e.0.contains("unterminated quote"), "{e}");
        let e = PropPath::parse("a..b").unwrap_err();
        assert!(e.0.contains("empty segment"), "{e}");
    }

    #[test]
    fn pattern_matching() {
        let all = WritePattern::parse("*").unwrap();
        assert!(all.matches(&p("security.trust_daemon_uid")));
        assert!(all.matches(&p("users")));
        let users = WritePattern::parse("users.*").unwrap();
        assert!(users.matches(&p("users.example")));
        assert!(users.matches(&p("users.example.uid")));
        assert!(!users.matches(&p("users")));
        assert!(!users.matches(&p("permission_profiles.x.admin")));
        let exact = WritePattern::parse("agents.default.model").unwrap();
        assert!(exact.matches(&p("agents.default.model")));
        assert!(!exact.matches(&p("agents.default")));
        assert!(!exact.matches(&p("agents.default.model.x")));
        let mid = WritePattern::parse("agents.*.model").unwrap();
        assert!(mid.matches(&p("agents.x.model")));
        assert!(!mid.matches(&p("agents.x.provider")));
        assert!(!mid.matches(&p("agents.x")));
        let quoted = WritePattern::parse("agents.\"my.agent\".*").unwrap();
        assert!(quoted.matches(&p("agents.\"my.agent\".model")));
        assert!(!quoted.matches(&p("agents.my.model")));
        let lit_star = WritePattern::parse("users.\"*\"").unwrap();
        assert!(lit_star.matches(&p("users.\"*\"")));
        assert!(!lit_star.matches(&p("users.x")));
    }

    #[test]
    fn pattern_within() {
        let w = |a: &str, b: &str| {
            WritePattern::parse(a)
                .unwrap()
                .within(&WritePattern::parse(b).unwrap())
        };
        assert!(w("users.*", "users.*"));
        assert!(w("users.bob.*", "users.*"));
        assert!(w("users.bob.uid", "users.*"));
        assert!(w("users.*.uid", "users.*"));
        assert!(w("anything.at.all", "*"));
        assert!(w("*", "*"));
        assert!(w("agents.x.model", "agents.*.model"));
        assert!(!w("*", "users.*"));
        assert!(!w("users.*", "users.bob.*"));
        assert!(!w("users.*", "users.*.uid"));
        assert!(!w("users.*.uid", "users.bob.uid"));
        assert!(!w("users", "users.*"));
        assert!(!w("agents.*.model", "agents.x.*"));
        assert!(!w("permission_profiles.*", "users.*"));
        assert!(w("users.\"*\"", "users.*"));
        assert!(!w("users.*", "users.\"*\""));
    }

    proptest::proptest! {
        #[test]
        fn display_round_trips(segs in proptest::collection::vec(".{1,8}", 1..5)) {
            let path = PropPath::from_segments(segs.clone()).unwrap();
            let back = PropPath::parse(&path.to_string()).unwrap();
            proptest::prop_assert_eq!(back.segments(), &segs[..]);
        }
    }
}
