//! The text a provider call has streamed so far ([`StepText`]), shared between the turn
//! that accumulates it and whoever records it while it streams (the daemon's checkpoint
//! writer), so a long answer is held once rather than once per reader (SPEC §17).
//!
//! At most its last [`HOLD_AT`] bytes are held in memory: before the held part would grow
//! past that, it is appended to a spill file (see [`crate::text`]), so a call streaming
//! 32 MiB holds at most 64 KiB of it, whatever its length (issue 27, item 3). When the
//! call ends the turn takes the whole text as a [`Text`] (a long one stays in its file)
//! and the buffer is empty; the step's final text goes on in its `ContextAppended`
//! message. A reader therefore sees either a growing text or an empty one, never an older
//! text after a newer one. The lock is only held to append, to take, and for a reader's
//! short synchronous look at one piece ([`StepText::with_piece`]); never across an await.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::text::{SpillWriter, Text};

/// The most the held part holds: a delta that would take it past this spills it first
/// (and a longer delta goes to the file itself), so its buffer stays within twice this.
pub const HOLD_AT: usize = 64 * 1024;

#[derive(Default)]
struct Buffer {
    /// The text's beginning, written to a file (empty until the text grows long).
    spilled: SpillWriter,
    /// The rest, in memory.
    held: String,
    /// A spill failed (a full disk): the rest is held, whatever its length.
    hold_all: bool,
}

impl Buffer {
    fn len(&self) -> usize {
        self.spilled.len() + self.held.len()
    }

    fn spill_held(&mut self) {
        if self.held.is_empty() {
            return;
        }
        // Taken for the write and put back (emptied when written): its buffer is kept.
        let mut held = std::mem::take(&mut self.held);
        if self.spill(&held) {
            held.clear();
        }
        self.held = held;
    }

    /// Appends `text` to the file; false (and everything held from now on) if it failed.
    fn spill(&mut self, text: &str) -> bool {
        if self.hold_all {
            return false;
        }
        match self.spilled.write(text) {
            Ok(()) => true,
            Err(e) => {
                // No directory named (outside the daemon): held, and nothing to report.
                if e.kind() != std::io::ErrorKind::Unsupported {
                    tracing::warn!("a long answer could not be spilled, held in memory: {e}");
                }
                self.hold_all = true;
                false
            }
        }
    }
}

/// The streamed text of one provider call, shared by reference.
#[derive(Clone, Default)]
pub struct StepText(Arc<Mutex<Buffer>>);

impl StepText {
    fn lock(&self) -> MutexGuard<'_, Buffer> {
        // A panic while appending leaves a valid (if shorter) text.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends a streamed delta (the turn does; a test of a reader may too).
    pub fn push_str(&self, text: &str) {
        let mut b = self.lock();
        if b.held.len() + text.len() > HOLD_AT {
            b.spill_held();
            if text.len() > HOLD_AT && b.held.is_empty() && b.spill(text) {
                return;
            }
        }
        b.held.push_str(text);
    }

    /// The whole text, leaving the buffer empty (the call ended). A text of at least
    /// [`crate::text::SPILL_AT`] bytes comes back spilled.
    pub(crate) fn take(&self) -> Text {
        let mut b = std::mem::take(&mut *self.lock());
        if b.spilled.is_empty() {
            return Text::spilled_if_long(b.held);
        }
        b.spill_held();
        if !b.held.is_empty() {
            // The rest could not be spilled: the text is held whole.
            let mut whole = b.spilled.piece(0, b.spilled.len());
            whole.push_str(&b.held);
            return Text::Held(whole);
        }
        b.spilled.finish().map_or_else(Text::default, Text::Spilled)
    }

    /// Runs `f` on the text from byte `from` (a character boundary), at most `max` bytes
    /// of it (cut back to a character boundary, at least one character); `None` when
    /// nothing follows `from`. The lock is held meanwhile: keep `f` short and synchronous
    /// (the turn waits for it to append the next delta).
    pub fn with_piece<R>(&self, from: usize, max: usize, f: impl FnOnce(&str) -> R) -> Option<R> {
        let b = self.lock();
        let spilled = b.spilled.len();
        if from < spilled {
            let piece = b.spilled.piece(from, max.min(spilled - from));
            return (!piece.is_empty()).then(|| f(&piece));
        }
        let rest = b.held.get(from - spilled..)?;
        if rest.is_empty() {
            return None;
        }
        let mut end = rest.floor_char_boundary(max.min(rest.len()));
        if end == 0 {
            end = rest.ceil_char_boundary(1);
        }
        Some(f(&rest[..end]))
    }

    /// The whole text so far, read into one string (tests, and readers that need all).
    pub fn to_text_string(&self) -> String {
        let b = self.lock();
        let mut whole = b.spilled.piece(0, b.spilled.len());
        whole.push_str(&b.held);
        whole
    }

    /// Bytes streamed so far (0 once the call ended and the turn took the text).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Bytes of it held in memory.
    pub fn held_len(&self) -> usize {
        self.lock().held.len()
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
        self.same_as(other) || self.to_text_string() == other.to_text_string()
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
        assert_eq!(reader.to_text_string(), "hello world");
        assert_eq!(
            reader.with_piece(6, 3, str::to_owned).as_deref(),
            Some("wor")
        );
        assert_eq!(reader.with_piece(11, 3, str::to_owned), None);
        assert_eq!(text.take(), Text::from("hello world"));
        assert!(reader.is_empty(), "a reader sees the taken text as empty");
        assert_eq!(reader, text);
        assert!(reader.same_as(&text));
        assert!(!reader.same_as(&StepText::default()));
    }

    #[test]
    fn a_long_text_is_held_only_in_its_last_piece_and_taken_spilled() {
        crate::text::set_spill_dir_for_tests();
        let text = StepText::default();
        let delta = "añ€😀 ".repeat(100);
        let mut whole = String::new();
        while whole.len() < 3 * HOLD_AT + 1000 {
            text.push_str(&delta);
            whole.push_str(&delta);
            assert!(text.held_len() <= HOLD_AT, "at most one piece is held");
        }
        // A delta longer than what is held goes to the file as it is.
        let long = "z".repeat(HOLD_AT + 1);
        text.push_str(&long);
        whole.push_str(&long);
        assert!(text.held_len() <= HOLD_AT);
        assert_eq!(text.len(), whole.len());
        // Pieces across the spilled part and the held one read back the text.
        let mut back = String::new();
        while let Some(piece) = text.with_piece(back.len(), 100_000, str::to_owned) {
            assert!(piece.len() <= 100_000);
            back.push_str(&piece);
        }
        assert!(back == whole, "pieces rebuild the text");
        let taken = text.take();
        assert!(taken.as_held().is_none(), "a long text is taken spilled");
        assert!(taken.load() == whole);
        assert_eq!(taken.char_count(), whole.chars().count());
        assert!(text.is_empty());
    }
}
