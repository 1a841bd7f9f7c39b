//! Stored and configured values as the wire vocabulary spells them: a session's mode, a
//! transcript row, an autonomy (`session/list`, `session/messages`, `session/status`,
//! `session/new`, `session/configure`). A leaf: it imports only the store's, the
//! configuration's and the protocol's types.

use zeroclaw_protocol::session::MessageRow;

/// The store's session mode as the wire names it.
pub fn mode(mode: zeroclaw_store::Mode) -> zeroclaw_protocol::Mode {
    match mode {
        zeroclaw_store::Mode::Acp => zeroclaw_protocol::Mode::Acp,
        zeroclaw_store::Mode::Chat => zeroclaw_protocol::Mode::Chat,
    }
}

/// The wire's session mode as the store names it.
pub fn store_mode(mode: zeroclaw_protocol::Mode) -> zeroclaw_store::Mode {
    match mode {
        zeroclaw_protocol::Mode::Acp => zeroclaw_store::Mode::Acp,
        zeroclaw_protocol::Mode::Chat => zeroclaw_store::Mode::Chat,
    }
}

/// The store's transcript role as the wire names it.
pub fn role(role: zeroclaw_store::Role) -> zeroclaw_protocol::Role {
    match role {
        zeroclaw_store::Role::User => zeroclaw_protocol::Role::User,
        zeroclaw_store::Role::Assistant => zeroclaw_protocol::Role::Assistant,
        zeroclaw_store::Role::ToolCall => zeroclaw_protocol::Role::ToolCall,
        zeroclaw_store::Role::ToolResult => zeroclaw_protocol::Role::ToolResult,
        zeroclaw_store::Role::Interruption => zeroclaw_protocol::Role::Interruption,
        zeroclaw_store::Role::Compaction => zeroclaw_protocol::Role::Compaction,
        zeroclaw_store::Role::Rewind => zeroclaw_protocol::Role::Rewind,
        zeroclaw_store::Role::Error => zeroclaw_protocol::Role::Error,
        zeroclaw_store::Role::Plan => zeroclaw_protocol::Role::Plan,
    }
}

/// One stored transcript row as `session/messages` sends it.
pub fn message(row: zeroclaw_store::MessageRow) -> MessageRow {
    MessageRow {
        seq: row.seq,
        role: role(row.role),
        content: row.content,
        turn_id: row.turn_id.map(Into::into),
        created_at: row.created_at,
        truncated: row.truncated,
        rewound: row.rewound,
    }
}

/// A configured autonomy as the wire names it.
pub fn autonomy(a: zeroclaw_config::Autonomy) -> zeroclaw_protocol::Autonomy {
    match a {
        zeroclaw_config::Autonomy::Supervised => zeroclaw_protocol::Autonomy::Supervised,
        zeroclaw_config::Autonomy::Full => zeroclaw_protocol::Autonomy::Full,
        zeroclaw_config::Autonomy::ReadOnly => zeroclaw_protocol::Autonomy::ReadOnly,
        zeroclaw_config::Autonomy::Plan => zeroclaw_protocol::Autonomy::Plan,
    }
}

/// A saved (or requested) autonomy spelled as on the wire.
pub fn parse_autonomy(s: &str) -> Option<zeroclaw_config::Autonomy> {
    zeroclaw_protocol::Autonomy::parse(s).map(configured_autonomy)
}

/// A wire autonomy as the configuration names it.
pub fn configured_autonomy(a: zeroclaw_protocol::Autonomy) -> zeroclaw_config::Autonomy {
    match a {
        zeroclaw_protocol::Autonomy::Supervised => zeroclaw_config::Autonomy::Supervised,
        zeroclaw_protocol::Autonomy::Full => zeroclaw_config::Autonomy::Full,
        zeroclaw_protocol::Autonomy::ReadOnly => zeroclaw_config::Autonomy::ReadOnly,
        zeroclaw_protocol::Autonomy::Plan => zeroclaw_config::Autonomy::Plan,
    }
}

/// A stored count (SQLite integers are signed) as a wire count.
pub fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stored_spelling_is_the_wire_spelling() {
        for m in zeroclaw_store::Mode::ALL {
            assert_eq!(mode(*m).as_str(), m.as_str());
            assert_eq!(store_mode(mode(*m)), *m);
        }
        for a in zeroclaw_protocol::Autonomy::ALL {
            let configured = parse_autonomy(a.as_str()).unwrap();
            assert_eq!(autonomy(configured), *a);
        }
        assert_eq!(parse_autonomy("reckless"), None);
        assert_eq!(count(-1), 0);
        assert_eq!(count(7), 7);
    }

    /// The store's and the protocol's transcript roles are one vocabulary in two crates:
    /// each side's every name is the other's, spelled alike, and [`role`] maps them so.
    /// A role added on either side alone fails here.
    #[test]
    fn the_stored_and_the_wire_roles_are_one_vocabulary() {
        for r in zeroclaw_store::Role::ALL {
            assert_eq!(role(*r).as_str(), r.as_str());
        }
        for r in zeroclaw_protocol::Role::ALL {
            let stored: zeroclaw_store::Role = r
                .as_str()
                .parse()
                .unwrap_or_else(|_| panic!("the store has no role {r}"));
            assert_eq!(role(stored), *r);
        }
        assert_eq!(
            zeroclaw_store::Role::ALL.len(),
            zeroclaw_protocol::Role::ALL.len()
        );
    }

    /// A turn's progress: the wire's outcomes are the stored checkpoint states a turn can
    /// end in, spelled alike; every other state is named here as not an outcome, so a state
    /// or an outcome added on one side alone fails here.
    #[test]
    fn the_wire_outcomes_are_the_final_checkpoint_states() {
        use zeroclaw_store::CheckpointStatus;
        const NOT_OUTCOMES: [CheckpointStatus; 2] =
            [CheckpointStatus::Open, CheckpointStatus::Interrupted];
        for status in CheckpointStatus::ALL {
            let outcome = zeroclaw_protocol::Outcome::parse(status.as_str());
            assert_eq!(
                outcome.is_none(),
                NOT_OUTCOMES.contains(status),
                "checkpoint state {status}"
            );
        }
        for outcome in zeroclaw_protocol::Outcome::ALL {
            let status: CheckpointStatus = outcome
                .as_str()
                .parse()
                .unwrap_or_else(|_| panic!("no checkpoint state {outcome}"));
            assert!(!NOT_OUTCOMES.contains(&status));
        }
        // The stored steps of a running turn become rows of the shared roles.
        let call = zeroclaw_store::ToolCall {
            tool_call_id: "c".into(),
            name: "n".into(),
            raw_input: serde_json::Value::Null,
        };
        let row = zeroclaw_store::Progress::ToolCall(call).to_row().unwrap();
        assert_eq!(row.role.as_str(), "tool_call");
    }
}
