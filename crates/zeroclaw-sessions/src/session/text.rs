//! Long text cut to fit a frame (SPEC §17 "Nothing the daemon writes exceeds a frame"):
//! the `content` of a prompt's answer and of `turn_complete` carries at most
//! [`MAX_CONTENT`] bytes, cut at a character boundary, plus `truncated: true` when cut.
//! Streamed chunks and the durable transcript keep the whole text.

use zeroclaw_store::char_floor;

/// 1 MiB.
pub const MAX_CONTENT: usize = zeroclaw_store::MAX_MESSAGE_CONTENT;

/// `content` cut to [`MAX_CONTENT`], and whether it was cut.
pub fn cut(content: &str) -> (String, bool) {
    let end = char_floor(content, MAX_CONTENT);
    (content[..end].to_owned(), end < content.len())
}

/// [`cut`] of a text the caller is done with: kept as it is when it fits, cut in place
/// otherwise, never copied (a turn's long answer is not held once more for the wire).
pub fn cut_owned(mut content: String) -> (String, bool) {
    let end = char_floor(&content, MAX_CONTENT);
    let truncated = end < content.len();
    if truncated {
        content.truncate(end);
        content.shrink_to_fit();
    }
    (content, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_a_character_boundary_and_says_so() {
        assert_eq!(cut("hi"), ("hi".to_owned(), false));

        let long = "é".repeat(MAX_CONTENT); // 2 MiB
        let (text, truncated) = cut(&long);
        assert_eq!(text.len(), MAX_CONTENT);
        assert!(long.starts_with(&text));
        assert!(truncated);

        let odd = format!("x{}", "é".repeat(MAX_CONTENT / 2));
        assert_eq!(cut(&odd).0.len(), MAX_CONTENT - 1);

        for text in ["hi".to_owned(), long, odd] {
            assert_eq!(cut_owned(text.clone()), cut(&text));
        }
        let fits = "x".repeat(1000);
        let at = fits.as_ptr();
        assert_eq!(
            cut_owned(fits).0.as_ptr(),
            at,
            "a text that fits is not copied"
        );
    }
}
