//! What the sessions tell the notifier ([`Offer`]: a session, its owner, whether the owner
//! watches it, and what happened) and which of it calls for a person ([`Triggers`], SPEC
//! §24.3): an approval or ask-user question waiting, a turn failed, an unattended turn
//! (`promptedBy` `schedule:` or `webhook:`) ended. A new kind of waiting request is one
//! arm of [`Offer::from_update`].

use std::collections::HashMap;

use zeroclaw_protocol::SessionId;
use zeroclaw_protocol::UpdateKind;
use zeroclaw_protocol::types::Outcome;

/// The `promptedBy` prefixes of unattended turns.
pub const UNATTENDED: &[&str] = &["schedule:", "webhook:"];
/// Sessions whose running turn is remembered as unattended, at most.
const MAX_TRACKED: usize = 4096;

/// What happened in a session, as much as a notice needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// A turn started, prompted by this principal label or trigger.
    Prompted { by: String },
    /// A request waits for a person: `event` names its kind (`approval_request`,
    /// `ask_user`, `budget_request`).
    Waiting {
        event: &'static str,
        request_id: String,
        text: String,
    },
    /// The turn ended.
    Ended { failed: bool, text: String },
}

/// One thing a session reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub session_id: SessionId,
    pub owner: String,
    /// One of the owner's faces is subscribed to the session and was active lately.
    pub watched: bool,
    pub seen: Seen,
}

impl Offer {
    /// The offer an update makes, if any.
    pub fn from_update(
        session_id: &SessionId,
        owner: &str,
        watched: bool,
        update: &UpdateKind,
    ) -> Option<Offer> {
        let seen = match update {
            UpdateKind::UserMessage { prompted_by, .. } => Seen::Prompted {
                by: prompted_by.clone(),
            },
            UpdateKind::ApprovalRequest {
                request_id,
                tool_name,
                arguments_summary,
                ..
            } => Seen::Waiting {
                event: "approval_request",
                request_id: request_id.clone(),
                text: format!("{tool_name}: {}", clip(arguments_summary, 400)),
            },
            UpdateKind::BudgetRequest {
                request_id,
                budget,
                used,
                limit,
                ..
            } => Seen::Waiting {
                event: "budget_request",
                request_id: request_id.clone(),
                text: format!("{budget}: {used} used of {limit}"),
            },
            UpdateKind::TurnComplete {
                outcome, content, ..
            } => Seen::Ended {
                failed: *outcome == Outcome::Failed,
                text: clip(content, 400),
            },
            _ => return None,
        };
        Some(Offer {
            session_id: session_id.clone(),
            owner: owner.to_owned(),
            watched,
            seen,
        })
    }

    /// Whether a session's updates of this type may make an offer (the sessions ask
    /// before working out `watched`).
    pub fn notable(update: &UpdateKind) -> bool {
        matches!(
            update,
            UpdateKind::UserMessage { .. }
                | UpdateKind::ApprovalRequest { .. }
                | UpdateKind::BudgetRequest { .. }
                | UpdateKind::TurnComplete { .. }
        )
    }
}

/// A notice to send: what [`Triggers`] made of an offer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// `approval_request`, `ask_user`, `budget_request`, `turn_failed`, `turn_ended`.
    pub event: &'static str,
    pub session_id: SessionId,
    pub owner: String,
    pub title: String,
    pub text: String,
    /// The waiting request, for the dashboard to open at its card.
    pub request_id: Option<String>,
}

/// At most `max` characters of `text`, with `…` when cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// Turns offers into notices: remembers which sessions run an unattended turn.
#[derive(Default)]
pub struct Triggers {
    unattended: HashMap<SessionId, String>,
}

impl Triggers {
    /// The notice `offer` calls for, if any (whether the owner watches is decided later).
    pub fn notice(&mut self, offer: &Offer) -> Option<Notice> {
        let make = |event, title: String, text: String, request_id| Notice {
            event,
            session_id: offer.session_id.clone(),
            owner: offer.owner.clone(),
            title,
            text,
            request_id,
        };
        match &offer.seen {
            Seen::Prompted { by } => {
                if UNATTENDED.iter().any(|p| by.starts_with(p)) {
                    if self.unattended.len() >= MAX_TRACKED {
                        self.unattended.clear();
                    }
                    self.unattended.insert(offer.session_id.clone(), by.clone());
                } else {
                    self.unattended.remove(&offer.session_id);
                }
                None
            }
            Seen::Waiting {
                event,
                request_id,
                text,
            } => {
                let title = match *event {
                    "approval_request" => "Approval needed",
                    "ask_user" => "A question for you",
                    "budget_request" => "Budget reached",
                    _ => "Waiting for you",
                };
                Some(make(
                    *event,
                    title.to_owned(),
                    text.clone(),
                    Some(request_id.clone()),
                ))
            }
            Seen::Ended { failed, text } => {
                let by = self.unattended.remove(&offer.session_id);
                if *failed {
                    let title = match &by {
                        Some(by) => format!("Turn failed ({by})"),
                        None => "Turn failed".to_owned(),
                    };
                    Some(make("turn_failed", title, text.clone(), None))
                } else {
                    by.map(|by| make("turn_ended", format!("Finished: {by}"), text.clone(), None))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(seen: Seen) -> Offer {
        Offer {
            session_id: "s1".into(),
            owner: "operator".into(),
            watched: false,
            seen,
        }
    }

    #[test]
    fn only_unattended_ends_and_failures_notify() {
        let mut t = Triggers::default();
        let ended = |failed| {
            offer(Seen::Ended {
                failed,
                text: "done".into(),
            })
        };
        assert_eq!(t.notice(&ended(false)), None);
        t.notice(&offer(Seen::Prompted {
            by: "schedule:nightly".into(),
        }));
        let n = t.notice(&ended(false)).expect("unattended end");
        assert_eq!(n.event, "turn_ended");
        assert!(n.title.contains("schedule:nightly"));
        assert_eq!(t.notice(&ended(false)), None, "remembered once");
        t.notice(&offer(Seen::Prompted {
            by: "operator".into(),
        }));
        assert_eq!(t.notice(&ended(true)).map(|n| n.event), Some("turn_failed"));
    }

    #[test]
    fn a_budget_request_waits_for_a_person() {
        let update = UpdateKind::BudgetRequest {
            request_id: "bud_1".into(),
            budget: "turn_tokens".into(),
            used: 1200.0,
            limit: 1000.0,
            timeout_secs: 120,
        };
        assert!(Offer::notable(&update));
        let offer = Offer::from_update(&"s1".into(), "alice", false, &update).expect("an offer");
        let n = Triggers::default().notice(&offer).expect("a notice");
        assert_eq!(n.event, "budget_request");
        assert_eq!(n.title, "Budget reached");
        assert_eq!(n.request_id.as_deref(), Some("bud_1"));
        assert_eq!(n.text, "turn_tokens: 1200 used of 1000");
    }

    #[test]
    fn clip_counts_characters() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hé", 2), "hé");
    }
}
