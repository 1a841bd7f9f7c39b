//! The one bound on what a provider response holds (SPEC §17.2 "One bound per turn on
//! what is held"): its text, thinking, signatures and tool-call JSON (names and ids
//! included) all count against [`MAX_HELD`] bytes, whichever provider streams them; past
//! it the stream fails and so does the turn.
//!
//! Every parser counts a piece when it receives it, before it keeps or forwards it, so a
//! server cannot make the daemon hold more than the bound plus one event. Text counts
//! whether the turn keeps it in memory or spills it to a file: the bound is on what one
//! response may make the turn carry, not on where it is carried. What a provider keeps
//! from one response for the next calls of the turn (Anthropic's thinking blocks,
//! Gemini's thought signatures) is bounded by [`MAX_HELD`] too, in all.

use super::ProviderError;

/// Bytes of text, thinking, signatures and tool-call JSON one response may hold.
pub const MAX_HELD: usize = 32 * 1024 * 1024;

/// What one response has made the turn hold so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    bytes: usize,
}

impl Held {
    /// Counts `n` more bytes; past [`MAX_HELD`] the error that fails the stream.
    pub fn add(&mut self, n: usize) -> Result<(), ProviderError> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > MAX_HELD {
            return Err(too_much());
        }
        Ok(())
    }

    /// Bytes counted so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// The error of a response past the bound.
pub fn too_much() -> ProviderError {
    ProviderError::Stream(format!(
        "the response holds more than {MAX_HELD} bytes of text, thinking, signatures and \
         tool-call JSON"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_inclusive_and_sticky() {
        let mut h = Held::default();
        assert!(h.add(MAX_HELD - 1).is_ok());
        assert!(h.add(1).is_ok());
        assert_eq!(h.bytes(), MAX_HELD);
        assert_eq!(h.add(1), Err(too_much()));
        // Counting goes on past the bound without overflowing.
        assert!(h.add(usize::MAX).is_err());
        assert!(h.add(0).is_err());
    }
}
