//! The text a provider call has streamed so far ([`StepText`]), shared between the turn
//! that accumulates it and whoever records it while it streams (the daemon's checkpoint
//! writer), so a long answer is held once rather than once per reader (SPEC §17).
//!
//! The turn appends every text delta; when the call ends the turn takes the whole text
//! (the buffer is then empty), and the step's final text goes on in its
//! `ContextAppended` message. A reader therefore sees either a growing text or an empty
//! one, never an older text after a newer one. The lock is only held to append, to take,
//! and for a reader's short synchronous look ([`StepText::with`]); never across an await.

use std::sync::{Arc, Mutex, MutexGuard};

/// The streamed text of one provider call, shared by reference.
#[derive(Clone, Default)]
pub struct StepText(Arc<Mutex<String>>);

impl StepText {
    fn lock(&self) -> MutexGuard<'_, String> {
        // A panic while appending leaves a valid (if shorter) string.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends a streamed delta (the turn does; a test of a reader may too).
    pub fn push_str(&self, text: &str) {
        self.lock().push_str(text);
    }

    /// The whole text, leaving the buffer empty (the call ended).
    pub(crate) fn take(&self) -> String {
        std::mem::take(&mut *self.lock())
    }

    /// Runs `f` on the text so far, holding the lock meanwhile: keep `f` short and
    /// synchronous (the turn waits for it to append the next delta).
    pub fn with<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        f(&self.lock())
    }

    /// Bytes streamed so far (0 once the call ended and the turn took the text).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether both are the same call's text (not merely equal texts).
    pub fn same_as(&self, other: &StepText) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for StepText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StepText({} bytes)", self.len())
    }
}

impl PartialEq for StepText {
    fn eq(&self, other: &StepText) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || *self.lock() == *other.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_share_the_text_until_it_is_taken() {
        let text = StepText::default();
        let reader = text.clone();
        text.push_str("hello ");
        text.push_str("world");
        assert_eq!(reader.with(str::to_owned), "hello world");
        assert_eq!(text.take(), "hello world");
        assert!(reader.is_empty(), "a reader sees the taken text as empty");
        assert_eq!(reader, text);
        assert!(reader.same_as(&text));
        assert!(!reader.same_as(&StepText::default()));
    }
}
