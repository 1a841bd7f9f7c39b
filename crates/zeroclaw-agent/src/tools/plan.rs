//! Plan mode (SPEC §26): what the agent is told in autonomy `plan` ([`PROMPT`]), the
//! refusal of a tool that would change something ([`refusal`]), and the `propose_plan`
//! tool's arguments ([`parse`]). The turn loop ([`crate::turn`]) decides which calls run:
//! the tools that change nothing (files read, skills, read-only MCP tools, `bash` confined
//! by the read-only sandbox of SPEC §21.2) run, every other one is refused without asking,
//! and a `propose_plan` call ends the turn.

use serde_json::Value;

/// The most bytes of a proposed plan.
pub const MAX_PLAN: usize = 64 * 1024;

/// Added to the system prompt while the session is in plan mode.
pub const PROMPT: &str = "## Plan mode\n\n\
You are in plan mode: investigate, then propose. Tools that change nothing run (reading \
files, skills, read-only tools, and `bash` confined so that it writes nowhere); every \
other tool is refused. Do not try to change anything. When you know what to do, call \
`propose_plan` with the plan in markdown (the steps, the files to change, how to check \
the result); that ends your turn, and the user decides whether to implement it.";

/// The result of a call refused in plan mode; `why` adds the sandbox's reason, if any.
pub fn refusal(tool: &str, why: Option<&str>) -> String {
    let mut text = format!(
        "Refused: plan mode changes nothing; `{tool}` was not run. Investigate with the \
         tools that only read, then propose the change with `propose_plan`."
    );
    if let Some(why) = why {
        text.push_str(" (");
        text.push_str(why);
        text.push(')');
    }
    text
}

/// What a successful `propose_plan` call answers the model.
pub const PROPOSED: &str =
    "Plan proposed. Your turn ends here; the user decides whether to implement it.";

/// The plan of a `propose_plan` call: a non-empty string `plan` of at most [`MAX_PLAN`]
/// bytes.
pub fn parse(args: &Value) -> Result<String, String> {
    match args.get("plan") {
        Some(Value::String(p)) if p.trim().is_empty() => {
            Err("Error: `plan` of propose_plan is empty.".to_owned())
        }
        Some(Value::String(p)) if p.len() > MAX_PLAN => Err(format!(
            "Error: `plan` of propose_plan is {} bytes; at most {MAX_PLAN}.",
            p.len()
        )),
        Some(Value::String(p)) => Ok(p.clone()),
        Some(_) => Err("Error: `plan` of propose_plan must be a string.".to_owned()),
        None => Err("Error: propose_plan needs a string argument `plan`.".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plan_argument_checked() {
        assert_eq!(parse(&json!({"plan": "1. do"})), Ok("1. do".to_owned()));
        assert!(parse(&json!({})).unwrap_err().contains("`plan`"));
        assert!(parse(&json!({"plan": "  "})).unwrap_err().contains("empty"));
        assert!(parse(&json!({"plan": 3})).unwrap_err().contains("string"));
        let big = "x".repeat(MAX_PLAN + 1);
        assert!(
            parse(&json!({ "plan": big }))
                .unwrap_err()
                .contains("at most")
        );
    }

    #[test]
    fn refusal_names_plan_mode_and_tool() {
        let r = refusal("write_file", None);
        assert!(r.starts_with("Refused: plan mode changes nothing") && r.contains("`write_file`"));
        assert!(refusal("bash", Some("no sandbox")).ends_with("(no sandbox)"));
    }
}
