//! The built-in tools: names, JSON schemas offered to the model, limits.
//!
//! `bash` ([`bash`]), `read_file` / `write_file` ([`fs`], confined to the
//! workspace) run here; `ask_user` is executed by the turn loop through the
//! host (it needs the client), so only its schema and arguments live here.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::provider::ToolSchema;

pub mod background;
pub mod bash;
pub mod fs;
pub mod live;
pub mod plan;
pub mod skill;

/// A built-in tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolName {
    Bash,
    ReadFile,
    WriteFile,
    AskUser,
    /// Reads a skill (SPEC §26); offered only when the session has skills, so not in
    /// [`ToolName::ALL`] (an agent's `tools` cannot name it).
    Skill,
    /// Reads a background process's new output (SPEC §26); offered with `bash` when the
    /// session keeps background processes, so not in [`ToolName::ALL`].
    BashOutput,
    /// Stops a background process (SPEC §26); offered with [`ToolName::BashOutput`].
    BashKill,
    /// Ends a plan-mode turn with a plan (SPEC §26); offered only in autonomy `plan`, so
    /// not in [`ToolName::ALL`].
    ProposePlan,
}

/// What the model is told about `bash` (the shell differs on Windows).
#[cfg(not(windows))]
const BASH_DESCRIPTION: &str = "Run a shell command with `bash -c` in the session's working directory. \
     Returns stdout and stderr combined (capped at 64 KiB) and the exit code \
     when it is not 0. Commands are killed after the timeout (120 s).";
#[cfg(windows)]
const BASH_DESCRIPTION: &str = "Run a Windows shell command (PowerShell where installed, else `cmd /C`) \
     in the session's working directory. Returns stdout and stderr combined (capped at 64 KiB) \
     and the exit code when it is not 0. Commands are killed after the timeout (120 s).";

impl ToolName {
    pub const ALL: [ToolName; 4] = [
        ToolName::Bash,
        ToolName::ReadFile,
        ToolName::WriteFile,
        ToolName::AskUser,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Bash => "bash",
            ToolName::ReadFile => "read_file",
            ToolName::WriteFile => "write_file",
            ToolName::AskUser => "ask_user",
            ToolName::Skill => "skill",
            ToolName::BashOutput => "bash_output",
            ToolName::BashKill => "bash_kill",
            ToolName::ProposePlan => "propose_plan",
        }
    }

    /// Tools that change the machine: need approval when supervised and are
    /// refused in read-only autonomy.
    pub fn is_mutating(self) -> bool {
        matches!(self, ToolName::Bash | ToolName::WriteFile)
    }

    pub fn schema(self) -> ToolSchema {
        let (description, parameters) = match self {
            ToolName::Bash => (
                BASH_DESCRIPTION,
                json!({
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "description": "The command line to run."},
                        "background": {"type": "boolean", "description":
                            "Start it in the background and return at once with its `shellId` \
                             (a dev server, a watcher); read its output with `bash_output`, stop \
                             it with `bash_kill`. At most 8 run at a time; all are killed when \
                             the session ends."}
                    },
                    "required": ["command"],
                }),
            ),
            ToolName::ReadFile => (
                "Read a UTF-8 text file inside the workspace. Relative paths are resolved \
                 from the workspace directory; paths outside it are refused.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "File path, relative to the workspace."}
                    },
                    "required": ["path"],
                }),
            ),
            ToolName::WriteFile => (
                "Create or overwrite a file inside the workspace (parent directories are \
                 created). Relative paths are resolved from the workspace directory; paths \
                 outside it are refused.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "File path, relative to the workspace."},
                        "content": {"type": "string", "description": "The complete new content of the file."}
                    },
                    "required": ["path", "content"],
                }),
            ),
            ToolName::AskUser => (
                "Ask the user a question and wait for the answer. Offer `choices` when the \
                 answer is one (or, with `multiple`, several) of a fixed set.",
                json!({
                    "type": "object",
                    "properties": {
                        "question": {"type": "string", "description": "The question to show the user."},
                        "choices": {"type": "array", "items": {"type": "string"},
                                    "description": "Optional answers to pick from."},
                        "multiple": {"type": "boolean",
                                     "description": "Whether several choices may be picked."}
                    },
                    "required": ["question"],
                }),
            ),
            ToolName::BashOutput => (
                "Read what a background process (started with `bash` and `background: true`) \
                 printed since the last read, stdout and stderr together, and whether it still \
                 runs (its exit code once it ended). Only its newest 64 KiB are kept.",
                json!({
                    "type": "object",
                    "properties": {
                        "shellId": {"type": "string", "description": "The process's shellId."}
                    },
                    "required": ["shellId"],
                }),
            ),
            ToolName::BashKill => (
                "Stop a background process and everything it started (SIGTERM, then SIGKILL).",
                json!({
                    "type": "object",
                    "properties": {
                        "shellId": {"type": "string", "description": "The process's shellId."}
                    },
                    "required": ["shellId"],
                }),
            ),
            ToolName::Skill => (
                "Read a skill listed under Skills in the system prompt: returns its \
                 instructions and the list of its other files, or with `file` one of \
                 those files. Changes nothing.",
                json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "The skill's name."},
                        "file": {"type": "string", "description": "One of the skill's other files, as listed (a path relative to the skill's directory)."}
                    },
                    "required": ["name"],
                }),
            ),
            ToolName::ProposePlan => (
                "Propose your plan (markdown: the steps, the files to change, how to check \
                 the result) and end your turn; the user decides whether to implement it.",
                json!({
                    "type": "object",
                    "properties": {
                        "plan": {"type": "string", "description": "The plan, in markdown."}
                    },
                    "required": ["plan"],
                }),
            ),
        };
        ToolSchema {
            name: self.as_str().to_string(),
            description: description.to_string(),
            parameters,
        }
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ToolName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ToolName::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| format!("unknown tool `{s}`"))
    }
}

/// Limits of the built-in tools (defaults follow the contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimits {
    /// `bash` is killed (with its process group) after this long.
    pub bash_timeout: Duration,
    /// `bash` output kept, in bytes; the rest is counted and dropped.
    pub bash_output_cap: usize,
    /// `read_file` content returned, in bytes.
    pub read_file_cap: usize,
    /// After `bash` exits, how long to keep reading output still held open by
    /// background processes it started.
    pub bash_drain_grace: Duration,
}

impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            bash_timeout: Duration::from_secs(120),
            bash_output_cap: 64 * 1024,
            read_file_cap: 256 * 1024,
            bash_drain_grace: Duration::from_millis(500),
        }
    }
}

/// Arguments of `ask_user`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskUser {
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<String>>,
    #[serde(default)]
    pub multiple: bool,
}

impl AskUser {
    pub fn from_args(args: &Value) -> Result<AskUser, String> {
        serde_json::from_value(args.clone())
            .map_err(|e| format!("invalid ask_user arguments: {e}"))
            .and_then(|a: AskUser| {
                if a.question.trim().is_empty() {
                    Err("invalid ask_user arguments: `question` is empty".to_string())
                } else {
                    Ok(a)
                }
            })
    }
}

/// Reads a required string argument.
pub(crate) fn str_arg<'a>(args: &'a Value, key: &str, tool: &str) -> Result<&'a str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("Error: {tool} needs a string argument `{key}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in ToolName::ALL {
            assert_eq!(t.as_str().parse::<ToolName>().unwrap(), t);
            assert_eq!(t.schema().name, t.as_str());
            assert_eq!(
                serde_json::to_value(t).unwrap(),
                Value::String(t.as_str().into())
            );
        }
        assert!("rm".parse::<ToolName>().is_err());
    }

    #[test]
    fn ask_user_args() {
        let a = AskUser::from_args(&json!({"question": "Which?", "choices": ["a", "b"]})).unwrap();
        assert_eq!(a.choices, Some(vec!["a".into(), "b".into()]));
        assert!(!a.multiple);
        assert!(AskUser::from_args(&json!({"choices": []})).is_err());
        assert!(AskUser::from_args(&json!({"question": " "})).is_err());
    }
}
