//! The small closed vocabularies that appear inside params, results and updates: session
//! mode, autonomy, approval decisions, turn outcomes, transcript roles. Each spelling is
//! the exact wire name (snake_case). They are read as serde reads a unit-only enum
//! ([`crate::word`]); `autonomy` and `decision` refuse an unknown word in the daemon's own
//! sentence (issue 26), the others with serde's.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::word::{self, Word};

macro_rules! wire_enum {
    (
        $(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident = $s:literal),+ $(,)? }
        $(unknown($word:ident) => $sentence:expr)?
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
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

        impl Word for $name {
            const NAME: &'static str = stringify!($name);
            const WORDS: &'static [&'static str] = &[$($s),+];

            fn parse(s: &str) -> Option<$name> {
                $name::parse(s)
            }

            $(
                fn unknown<E: serde::de::Error>($word: &str) -> E {
                    crate::refusal::refuse($sentence)
                }
            )?
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                word::deserialize(d)
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
    Autonomy { Supervised = "supervised", Full = "full", ReadOnly = "read_only", Plan = "plan" }
    unknown(a) => format!("unknown autonomy {a:?}: expected supervised, full, read_only or plan")
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
        /// Answers a `budget_request` (SPEC §24.2): the budget grows by `raiseBy`.
        Raise = "raise",
        /// Answers a `budget_request`: the turn ends `cancelled`, reason `budget`.
        Stop = "stop",
    }
    unknown(d) => format!(
        "decision {d:?}: expected allow_once, allow_always, reject, reject_with_edit, raise \
         or stop"
    )
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

/// Who settled an approval (`approval_resolved.decidedBy`, SPEC §22): the principal and
/// the face it answered from (`chat`, `dashboard`, `acp`, `rpc`, or the name the client
/// gave in `initialize` `clientInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DecidedBy {
    pub principal: String,
    pub client: String,
}

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
        /// A rewind's note (SPEC §22), JSON `{toTurnId, rewoundTurns, restoredFiles,
        /// restoreFiles}`; never sent to the provider.
        Rewind = "rewind",
        /// A failed turn's error (SPEC §22): content is JSON `{"message", "retries"}`;
        /// never sent to the provider.
        Error = "error",
        /// A plan-mode turn's proposed plan (SPEC §26), markdown; never sent to the
        /// provider from here.
        Plan = "plan",
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

    #[test]
    fn autonomy_and_decision_refuse_an_unknown_word_in_their_own_sentence() {
        let e = crate::decode_text::<Autonomy>(r#""wild""#).expect_err("unknown");
        assert_eq!(
            e.0,
            r#"unknown autonomy "wild": expected supervised, full, read_only or plan"#
        );
        let e = crate::decode_text::<Decision>(r#""may\"be""#).expect_err("unknown");
        assert_eq!(
            e.0,
            r#"decision "may\"be": expected allow_once, allow_always, reject, reject_with_edit, raise or stop"#
        );
        // Read by plain serde, the same sentence, placed.
        let e = serde_json::from_str::<Autonomy>(r#""wild""#).expect_err("unknown");
        assert_eq!(
            e.to_string(),
            r#"unknown autonomy "wild": expected supervised, full, read_only or plan at line 1 column 6"#
        );
        assert_eq!(
            serde_json::from_str::<Autonomy>(r#""read_only""#).ok(),
            Some(Autonomy::ReadOnly)
        );
    }

    /// What serde's derive makes of `Mode` and `Autonomy`: every other outcome is its.
    #[derive(Debug, PartialEq, serde::Deserialize)]
    enum DerivedMode {
        #[serde(rename = "acp")]
        Acp,
        #[serde(rename = "chat")]
        Chat,
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    enum DerivedAutonomy {
        #[serde(rename = "supervised")]
        Supervised,
        #[serde(rename = "full")]
        Full,
        #[serde(rename = "read_only")]
        ReadOnly,
        #[serde(rename = "plan")]
        Plan,
    }

    #[test]
    fn every_other_outcome_is_serdes_derive() {
        fn same<
            T: for<'de> Deserialize<'de> + std::fmt::Debug,
            U: for<'de> Deserialize<'de> + std::fmt::Debug,
        >(
            text: &str,
        ) {
            let ours = serde_json::from_str::<T>(text).map_err(|e| e.to_string());
            let derived = serde_json::from_str::<U>(text).map_err(|e| e.to_string());
            assert_eq!(
                format!("{ours:?}"),
                format!("{derived:?}").replace("Derived", ""),
                "{text}"
            );
            let value: serde_json::Value = match serde_json::from_str(text) {
                Ok(v) => v,
                Err(_) => return,
            };
            let ours = serde_json::from_value::<T>(value.clone()).map_err(|e| e.to_string());
            let derived = serde_json::from_value::<U>(value).map_err(|e| e.to_string());
            assert_eq!(
                format!("{ours:?}"),
                format!("{derived:?}").replace("Derived", ""),
                "{text}"
            );
        }
        for text in [
            r#""acp""#,
            r#""nope""#,
            "5",
            "null",
            "[]",
            r#"["acp"]"#,
            r#"{"chat":null}"#,
            r#"{"chat":1}"#,
            r#"{"x":null}"#,
            "{}",
            r#""ACP""#,
            "true",
        ] {
            same::<Mode, DerivedMode>(text);
        }
        for text in [
            "5",
            "null",
            r#"{"full":null}"#,
            r#"{"full":[]}"#,
            r#"["full"]"#,
            "1.5",
        ] {
            same::<Autonomy, DerivedAutonomy>(text);
        }
    }
}
