//! Approvals `zeroclaw chat` decides without asking (SPEC §22 "Failures stay in history"):
//! `--approve=all|none|read_only`, and the rejection of an approval it cannot ask (piped
//! input that has ended), said on stderr with the tool and the option that decides it.
//! Also the line an approval settled elsewhere leaves ("allowed once by operator from the
//! dashboard", SPEC §22 "Approvals reach every face"), and the one an ask-user question
//! answered in another window leaves.

use clap::ValueEnum;
use zeroclaw_client::protocol::{DecidedBy, Decision};

/// Tools that change nothing: what `--approve=read_only` allows.
const READ_ONLY_TOOLS: &[&str] = &["read_file"];

/// How `--approve` decides every approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApprovePolicy {
    /// Allow every tool call.
    #[value(name = "all")]
    All,
    /// Reject every tool call.
    #[value(name = "none")]
    None,
    /// Allow tools that change nothing, reject the others.
    #[value(name = "read_only")]
    ReadOnly,
}

impl ApprovePolicy {
    /// The decision for a call of `tool`.
    pub fn decide(self, tool: &str) -> Decision {
        let allowed = match self {
            ApprovePolicy::All => true,
            ApprovePolicy::None => false,
            ApprovePolicy::ReadOnly => READ_ONLY_TOOLS.contains(&tool),
        };
        if allowed {
            Decision::AllowOnce
        } else {
            Decision::Reject
        }
    }

    fn word(self) -> &'static str {
        match self {
            ApprovePolicy::All => "all",
            ApprovePolicy::None => "none",
            ApprovePolicy::ReadOnly => "read_only",
        }
    }

    /// The stderr line for a call it decided.
    pub fn line(self, tool: &str, summary: &str, decision: Decision) -> String {
        format!(
            "zeroclaw: {} {tool} `{summary}` (--approve={})",
            if decision == Decision::Reject {
                "rejected"
            } else {
                "allowed"
            },
            self.word()
        )
    }
}

/// The stderr line for an approval rejected because nobody can be asked.
pub fn cannot_ask_line(tool: &str, summary: &str) -> String {
    format!(
        "zeroclaw: rejected {tool} `{summary}`: no input left to ask; --approve=all|read_only|none decides approvals without asking"
    )
}

/// "allowed once by operator from the dashboard": how an approval was settled.
pub fn settled_line(decision: Decision, by: Option<&DecidedBy>, timed_out: bool) -> String {
    let what = match decision {
        Decision::AllowOnce => "allowed once",
        Decision::AllowAlways => "always allowed",
        Decision::Reject => "rejected",
        Decision::RejectWithEdit => "rejected with an edit",
        Decision::Raise => "budget raised",
        Decision::Stop => "stopped",
    };
    match by {
        Some(by) => format!("{what} by {} from {}", by.principal, face(&by.client)),
        None if timed_out => format!("{what}: nobody answered in time"),
        None => format!("{what}: the turn ended"),
    }
}

/// The answer a line gives a budget request (SPEC §24.2): `r`/`raise` raises by
/// `default_by`, `r N` by N, `s`/`stop` (or an empty line) stops. `Some(None)` = stop;
/// `None` = not an answer.
pub fn budget_word(line: &str, default_by: f64) -> Option<Option<f64>> {
    let line = line.trim().to_ascii_lowercase();
    let mut words = line.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (None, ..) | (Some("s" | "stop"), None, _) => Some(None),
        (Some("r" | "raise"), None, _) => Some(Some(default_by)),
        (Some("r" | "raise"), Some(n), None) => match n.parse::<f64>() {
            Ok(n) if n.is_finite() && n > 0.0 => Some(Some(n)),
            _ => None,
        },
        _ => None,
    }
}

/// "answered by operator from the dashboard": how an ask-user question asked in every
/// window was settled elsewhere (SPEC §22).
pub fn question_settled_line(by: Option<&DecidedBy>, timed_out: bool) -> String {
    match by {
        Some(by) => format!("answered by {} from {}", by.principal, face(&by.client)),
        None if timed_out => "nobody answered in time".to_string(),
        None => "the turn ended".to_string(),
    }
}

/// `the dashboard`, `another chat`, `an editor (acp)`, or the client's own name.
fn face(client: &str) -> String {
    match client {
        "chat" => "a chat".to_string(),
        "dashboard" => "the dashboard".to_string(),
        "acp" => "an editor (acp)".to_string(),
        "rpc" => "an rpc client".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_allows_only_tools_that_change_nothing() {
        assert_eq!(
            ApprovePolicy::ReadOnly.decide("read_file"),
            Decision::AllowOnce
        );
        assert_eq!(ApprovePolicy::ReadOnly.decide("bash"), Decision::Reject);
        assert_eq!(
            ApprovePolicy::ReadOnly.decide("fs__write"),
            Decision::Reject
        );
        assert_eq!(ApprovePolicy::All.decide("bash"), Decision::AllowOnce);
        assert_eq!(ApprovePolicy::None.decide("read_file"), Decision::Reject);
    }

    #[test]
    fn budget_answers() {
        assert_eq!(budget_word("r", 100.0), Some(Some(100.0)));
        assert_eq!(budget_word(" R 2500 ", 100.0), Some(Some(2500.0)));
        assert_eq!(budget_word("s", 100.0), Some(None));
        assert_eq!(budget_word("", 100.0), Some(None));
        assert_eq!(budget_word("r -3", 100.0), None);
        assert_eq!(budget_word("maybe", 100.0), None);
    }

    #[test]
    fn settled_lines_say_what_and_who() {
        let by = DecidedBy {
            principal: "operator".into(),
            client: "dashboard".into(),
        };
        assert_eq!(
            settled_line(Decision::AllowOnce, Some(&by), false),
            "allowed once by operator from the dashboard"
        );
        assert_eq!(
            settled_line(Decision::Reject, None, true),
            "rejected: nobody answered in time"
        );
    }
}
