//! The small closed vocabularies that appear inside params, results and updates: session
//! mode, autonomy, approval decisions, turn outcomes, transcript roles. Each spelling is
//! the exact wire name (snake_case).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! wire_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        pub enum $name { $($(#[$vm])* #[serde(rename = $s)] $var),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$var),+];

            /// The wire spelling.
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$var => $s),+ }
            }

            /// The value spelled `s` on the wire.
            pub fn parse(s: &str) -> Option<$name> {
                match s { $($s => Some(Self::$var),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_enum!(
    /// Session mode: ACP sessions keep checkpoints and survive restarts; chat sessions keep
    /// plain history. The same id may exist in both.
    Mode { Acp = "acp", Chat = "chat" }
);

wire_enum!(
    /// How freely an agent's tools run (`supervised`: `bash` and `write_file` ask first).
    Autonomy { Supervised = "supervised", Full = "full", ReadOnly = "read_only" }
);

wire_enum!(
    /// An answer to an `approval_request` (`session/approve` `decision`).
    Decision {
        AllowOnce = "allow_once",
        /// Allow this tool for the rest of the session.
        AllowAlways = "allow_always",
        Reject = "reject",
        /// Refuse the call as proposed; with `replacement` arguments the tool runs with those.
        RejectWithEdit = "reject_with_edit",
    }
);

wire_enum!(
    /// How a turn ended.
    Outcome { Completed = "completed", Cancelled = "cancelled", Failed = "failed" }
);

wire_enum!(
    /// Why an approval request was settled (`approval_resolved.reason`).
    ResolvedReason {
        Answered = "answered",
        /// Nobody answered within the approval timeout (120 s): rejected.
        Timeout = "timeout",
        /// The turn was cancelled or the session closed, killed or deleted.
        Cancelled = "cancelled",
    }
);

wire_enum!(
    /// Role of a transcript row (`session/messages`).
    Role {
        User = "user",
        Assistant = "assistant",
        ToolCall = "tool_call",
        ToolResult = "tool_result",
        /// Marks an unfinished turn; its content is exactly `[interrupted]`.
        Interruption = "interruption",
        /// A compaction's summary (SPEC §18); never sent to the provider from here.
        Compaction = "compaction",
    }
);

wire_enum!(
    /// State of an MCP tool server (`session/status` `mcpServers[].state`).
    McpState { Starting = "starting", Ready = "ready", Failed = "failed", Stopped = "stopped" }
);

wire_enum!(
    /// What the user did with an `elicitation/create` question.
    ElicitationAction { Accept = "accept", Decline = "decline", Cancel = "cancel" }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_match_serde() {
        for d in Decision::ALL {
            assert_eq!(serde_json::to_value(d).unwrap(), d.as_str());
            assert_eq!(Decision::parse(d.as_str()), Some(*d));
        }
        for a in Autonomy::ALL {
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
        }
        assert_eq!(Autonomy::parse("read_only"), Some(Autonomy::ReadOnly));
        assert_eq!(Outcome::parse("done"), None);
        assert!(serde_json::from_str::<Mode>("\"ACP\"").is_err());
    }
}
