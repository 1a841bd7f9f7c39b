//! How a prompt's turn announces it (SPEC §18 "The prompt is an event"): the
//! `user_message` that is the first event of every prompted turn, sent to every subscriber
//! and replayed like any event.
//!
//! The queued prompt holds its text once: [`Prompted`] keeps only where the sender's text
//! ends in it (the attachments' markers follow), the attachments and the sender, and the
//! event is built from the prompt when the turn starts. The text it carries is cut like
//! any long text (SPEC §17, [`text::cut`]), so the event always fits a frame.
//!
//! A leaf of the sessions service: it imports only [`text`].

use zeroclaw_protocol::TurnId;
use zeroclaw_protocol::UpdateKind;
use zeroclaw_protocol::update::PromptAttachment;

use super::text;

/// A prompt as `session/prompt` received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// What the model is sent: the sender's text, then one marker line per attachment.
    pub text: String,
    /// Bytes of `text` that the sender wrote.
    pub text_len: usize,
    pub attachments: Vec<PromptAttachment>,
    /// Who the `user_message` names as the sender when it is not the principal: an
    /// unattended turn's source (`webhook:NAME`, SPEC §23.1; `schedule:NAME`, §24.1).
    pub by: Option<String>,
    /// The turn's id when its sender chose it in advance (a webhook answers it before the
    /// turn starts, SPEC §23.1); else the worker makes one.
    pub turn_id: Option<TurnId>,
}

/// What a prompt's `user_message` shows besides the prompt itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompted {
    /// Bytes of the prompt that the sender wrote (the attachments' markers follow them).
    pub text_len: usize,
    pub attachments: Vec<PromptAttachment>,
    /// The sender's principal label (`operator`, `user:<name>`).
    pub by: String,
}

impl Prompted {
    /// A prompt of `text_len` bytes sent by `by` with `attachments`.
    pub fn new(text_len: usize, attachments: Vec<PromptAttachment>, by: &str) -> Prompted {
        Prompted {
            text_len,
            attachments,
            by: by.to_owned(),
        }
    }

    /// The `user_message` of the turn that runs `prompt`.
    pub fn user_message(&self, prompt: &str) -> UpdateKind {
        // `text_len` ends the sender's text, a character boundary; should it not be one,
        // the whole prompt is shown rather than nothing.
        let typed = prompt.get(..self.text_len).unwrap_or(prompt);
        let (text, truncated) = text::cut(typed);
        UpdateKind::UserMessage {
            text,
            attachments: self.attachments.clone(),
            prompted_by: self.by.clone(),
            truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_senders_text_without_the_markers() {
        let file = PromptAttachment {
            filename: "notes.md".into(),
            marker: "[Document: notes.md] /w/uploads/ab.md".into(),
        };
        let prompt = format!("read this\n{}", file.marker);
        let seen = Prompted::new("read this".len(), vec![file.clone()], "user:bob");
        assert_eq!(
            seen.user_message(&prompt),
            UpdateKind::UserMessage {
                text: "read this".into(),
                attachments: vec![file],
                prompted_by: "user:bob".into(),
                truncated: false,
            }
        );
    }

    #[test]
    fn long_text_is_cut_and_marked() {
        let prompt = "é".repeat(text::MAX_CONTENT);
        let seen = Prompted::new(prompt.len(), Vec::new(), "operator");
        let UpdateKind::UserMessage {
            text, truncated, ..
        } = seen.user_message(&prompt)
        else {
            panic!("not a user_message");
        };
        assert!(truncated);
        assert_eq!(text.len(), text::MAX_CONTENT);
        // A length that is not a boundary shows the whole prompt, never panics.
        let odd = Prompted::new(1, Vec::new(), "operator").user_message("é");
        assert!(matches!(odd, UpdateKind::UserMessage { ref text, .. } if text == "é"));
    }
}
