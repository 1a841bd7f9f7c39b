//! What a finished hook said (SPEC §21.1): exit status 0 = go on, and stdout, when it is a
//! JSON object, may say more (`decision`, `reason`, `updatedInput`, `additionalContext`);
//! exit status 2 = deny with stderr as the reason; anything else is a failure, reported and
//! ignored.

use serde_json::Value;

/// The longest reason or message kept from a hook, in bytes.
pub const MAX_REASON: usize = 8 * 1024;

/// What one hook decided.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HookOutcome {
    pub decision: Decision,
    /// `updatedInput` (`pre_tool_use`): the tool runs with it.
    pub updated_input: Option<Value>,
    /// `additionalContext` (`user_prompt_submit`, `post_tool_use`): text for the model.
    pub additional_context: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Decision {
    /// Go on.
    #[default]
    None,
    Deny(String),
    Allow,
    /// `stop`: go on with the reason as the next instruction.
    Continue(String),
    /// The hook failed; what went wrong.
    Failed(String),
}

/// `s` cut to at most `max` bytes at a character boundary.
pub fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The outcome of a hook that exited with `code` (`None` = killed by a signal) after
/// printing `stdout` and `stderr`.
pub fn of_exit(code: Option<i32>, stdout: &[u8], stderr: &[u8]) -> HookOutcome {
    let failed = |m: String| HookOutcome {
        decision: Decision::Failed(m),
        ..HookOutcome::default()
    };
    match code {
        Some(0) => {}
        Some(2) => {
            let reason = String::from_utf8_lossy(stderr).trim().to_owned();
            let reason = if reason.is_empty() {
                "denied by a hook".to_owned()
            } else {
                cut(&reason, MAX_REASON)
            };
            return HookOutcome {
                decision: Decision::Deny(reason),
                ..HookOutcome::default()
            };
        }
        Some(n) => {
            let err = String::from_utf8_lossy(stderr);
            return failed(cut(&format!("exit status {n}: {}", err.trim()), MAX_REASON));
        }
        None => return failed("killed by a signal".to_owned()),
    }
    let text = String::from_utf8_lossy(stdout);
    let text = text.trim();
    if text.is_empty() {
        return HookOutcome::default();
    }
    let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(text) else {
        // Plain text on stdout is not a decision: go on.
        if text.starts_with('{') {
            return failed("stdout is not a valid JSON object".to_owned());
        }
        return HookOutcome::default();
    };
    let reason = || {
        obj.get("reason")
            .and_then(Value::as_str)
            .map(|r| cut(r, MAX_REASON))
            .unwrap_or_default()
    };
    let decision = match obj.get("decision").and_then(Value::as_str) {
        None => Decision::None,
        Some("deny" | "block") => Decision::Deny({
            let r = reason();
            if r.is_empty() {
                "denied by a hook".to_owned()
            } else {
                r
            }
        }),
        Some("allow" | "approve") => Decision::Allow,
        Some("continue") => Decision::Continue(reason()),
        Some(other) => return failed(format!("unknown decision {:?}", cut(other, 80))),
    };
    HookOutcome {
        decision,
        updated_input: obj.remove("updatedInput").filter(Value::is_object),
        additional_context: obj
            .get("additionalContext")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(|s| cut(s, MAX_REASON)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exit_status_and_stdout_decide() {
        assert_eq!(of_exit(Some(0), b"", b""), HookOutcome::default());
        assert_eq!(
            of_exit(Some(0), b"just text\n", b""),
            HookOutcome::default()
        );
        assert_eq!(
            of_exit(Some(2), b"", b"no rm -rf\n").decision,
            Decision::Deny("no rm -rf".into())
        );
        assert!(matches!(
            of_exit(Some(1), b"", b"boom").decision,
            Decision::Failed(m) if m.contains("exit status 1") && m.contains("boom")
        ));
        assert!(matches!(
            of_exit(None, b"", b"").decision,
            Decision::Failed(_)
        ));
        assert!(matches!(
            of_exit(Some(0), b"{nope", b"").decision,
            Decision::Failed(_)
        ));
        let o = of_exit(Some(0), br#"{"decision":"deny","reason":"too risky"}"#, b"");
        assert_eq!(o.decision, Decision::Deny("too risky".into()));
        let o = of_exit(Some(0), br#"{"updatedInput":{"command":"ls"}}"#, b"");
        assert_eq!(o.updated_input, Some(json!({"command": "ls"})));
        let o = of_exit(
            Some(0),
            br#"{"decision":"continue","reason":"fix the tests"}"#,
            b"",
        );
        assert_eq!(o.decision, Decision::Continue("fix the tests".into()));
        let o = of_exit(Some(0), br#"{"additionalContext":"ctx"}"#, b"");
        assert_eq!(o.additional_context.as_deref(), Some("ctx"));
    }
}
