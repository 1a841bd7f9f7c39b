//! The hooks of one session (SPEC §21.1) and how one event runs them: in order (global
//! first, then the agent's), tool events only those whose matcher matches the whole tool
//! name; the first deny wins and ends the event; `updatedInput` is passed on to the later
//! hooks of `pre_tool_use`; additional context is gathered; a `stop` continue is taken from
//! the first hook that asks for one.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::{Map, Value};

use super::outcome::{self, Decision};
use super::process::{self, Ended};
use super::{HookEvent, HookReport};

/// One configured hook, ready to run.
#[derive(Debug, Clone)]
pub struct HookDef {
    pub command: String,
    /// Anchored at both ends; `None` = every tool.
    pub matcher: Option<Regex>,
    pub timeout: Duration,
}

/// The hooks of one session, and what every hook's input says about it.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    by_event: [Vec<HookDef>; 6],
    pub session_id: String,
    pub agent_alias: String,
    pub cwd: PathBuf,
    /// The running turn (`None` outside one: `session_start`, a `session/compact`).
    pub turn_id: Option<String>,
}

/// What the hooks of one event decided, folded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// The first deny's reason.
    pub deny: Option<String>,
    /// Some hook said `allow` (and none denied).
    pub allow: bool,
    /// The input as the last hook that rewrote it left it.
    pub updated_input: Option<Value>,
    /// Text for the model, one entry per hook that gave some.
    pub additional_context: Vec<String>,
    /// `stop`: the first `continue`'s reason.
    pub continue_with: Option<String>,
    /// One per hook run, in order.
    pub reports: Vec<HookReport>,
}

/// The event's own fields (`prompt`, `toolName`, …), beside those every input has.
pub type EventInput = Map<String, Value>;

fn index(event: HookEvent) -> usize {
    match event {
        HookEvent::SessionStart => 0,
        HookEvent::UserPromptSubmit => 1,
        HookEvent::PreToolUse => 2,
        HookEvent::PostToolUse => 3,
        HookEvent::PreCompact => 4,
        HookEvent::Stop => 5,
    }
}

impl HookSet {
    /// No hooks yet, for session `session_id` of agent `agent_alias` working in `cwd`.
    pub fn new(session_id: String, agent_alias: String, cwd: PathBuf) -> HookSet {
        HookSet {
            session_id,
            agent_alias,
            cwd,
            ..HookSet::default()
        }
    }

    /// Appends a hook to `event`'s list (call global hooks first).
    pub fn add(&mut self, event: HookEvent, def: HookDef) {
        self.by_event[index(event)].push(def);
    }

    /// Whether no hook at all is configured.
    pub fn is_empty(&self) -> bool {
        self.by_event.iter().all(Vec::is_empty)
    }

    /// Whether `event` has hooks that apply (to `tool`, for a tool event).
    pub fn has(&self, event: HookEvent, tool: Option<&str>) -> bool {
        self.applicable(event, tool).next().is_some()
    }

    fn applicable<'a>(
        &'a self,
        event: HookEvent,
        tool: Option<&'a str>,
    ) -> impl Iterator<Item = &'a HookDef> + 'a {
        self.by_event[index(event)].iter().filter(move |h| {
            !event.is_tool_event()
                || match (&h.matcher, tool) {
                    (None, _) => true,
                    (Some(m), Some(t)) => m.is_match(t),
                    (Some(_), None) => false,
                }
        })
    }

    /// Runs the hooks of `event` in order with `fields` (plus `event`, `sessionId`,
    /// `agentAlias`, `cwd`, `turnId`) on their stdin. `tool`: the tool's name for a tool
    /// event. Cancel-safe: dropping the future kills the running hook's process group.
    pub async fn run(&self, event: HookEvent, tool: Option<&str>, fields: EventInput) -> Verdict {
        let mut input = fields;
        input.insert("event".into(), Value::from(event.as_str()));
        input.insert("sessionId".into(), Value::from(self.session_id.as_str()));
        input.insert("agentAlias".into(), Value::from(self.agent_alias.as_str()));
        input.insert(
            "cwd".into(),
            Value::from(self.cwd.to_string_lossy().into_owned()),
        );
        input.insert(
            "turnId".into(),
            self.turn_id.as_deref().map_or(Value::Null, Value::from),
        );
        let mut verdict = Verdict::default();
        for hook in self.applicable(event, tool) {
            let bytes = serde_json::to_vec(&input).unwrap_or_default();
            let started = Instant::now();
            let cwd = if self.cwd.is_dir() {
                self.cwd.clone()
            } else {
                std::env::temp_dir()
            };
            let ended = process::run(&hook.command, &cwd, &bytes, hook.timeout).await;
            let duration_ms = started.elapsed().as_millis() as u64;
            let said = match ended {
                Ended::Exited {
                    code,
                    stdout,
                    stderr,
                } => outcome::of_exit(code, &stdout, &stderr),
                Ended::TimedOut => outcome::HookOutcome {
                    decision: Decision::Failed(format!(
                        "timed out after {} s; its process group was killed",
                        hook.timeout.as_secs_f64()
                    )),
                    ..Default::default()
                },
                Ended::SpawnFailed(e) => outcome::HookOutcome {
                    decision: Decision::Failed(format!("could not start: {e}")),
                    ..Default::default()
                },
            };
            let (name, message) = match &said.decision {
                Decision::None => ("ok", None),
                Decision::Deny(r) => ("deny", Some(r.clone())),
                Decision::Allow => ("allow", None),
                Decision::Continue(r) => ("continue", Some(r.clone())),
                Decision::Failed(m) => ("error", Some(m.clone())),
            };
            if let Decision::Failed(m) = &said.decision {
                tracing::warn!(event = event.as_str(), command = %hook.command, "hook failed: {m}");
            }
            verdict.reports.push(HookReport {
                event,
                command: hook.command.clone(),
                outcome: name,
                duration_ms,
                message,
            });
            if matches!(said.decision, Decision::Failed(_)) {
                continue;
            }
            if let Some(ctx) = said.additional_context {
                verdict.additional_context.push(ctx);
            }
            if event == HookEvent::PreToolUse
                && let Some(updated) = said.updated_input
            {
                input.insert("toolInput".into(), updated.clone());
                verdict.updated_input = Some(updated);
            }
            match said.decision {
                Decision::Deny(reason) => {
                    verdict.deny = Some(reason);
                    verdict.allow = false;
                    return verdict;
                }
                Decision::Allow => verdict.allow = true,
                Decision::Continue(reason) if verdict.continue_with.is_none() => {
                    verdict.continue_with = Some(reason);
                }
                _ => {}
            }
        }
        verdict
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn def(command: &str, matcher: Option<&str>, secs: u64) -> HookDef {
        HookDef {
            command: command.into(),
            matcher: matcher.map(|m| Regex::new(&format!("^(?:{m})$")).unwrap()),
            timeout: Duration::from_secs(secs),
        }
    }

    fn set(cwd: &std::path::Path) -> HookSet {
        HookSet {
            session_id: "s1".into(),
            agent_alias: "default".into(),
            cwd: cwd.to_path_buf(),
            ..HookSet::default()
        }
    }

    #[tokio::test]
    async fn hooks_run_in_order_and_the_first_deny_wins() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = set(dir.path());
        s.add(HookEvent::PreToolUse, def("echo a >> order", None, 5));
        s.add(
            HookEvent::PreToolUse,
            def("echo no >&2; exit 2", Some("bash"), 5),
        );
        s.add(HookEvent::PreToolUse, def("echo c >> order", None, 5));
        let v = s.run(HookEvent::PreToolUse, Some("bash"), Map::new()).await;
        assert_eq!(v.deny.as_deref(), Some("no"));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("order")).unwrap(),
            "a\n"
        );
        assert_eq!(v.reports.len(), 2);
        // The matcher skips the deny for another tool.
        let v = s
            .run(HookEvent::PreToolUse, Some("read_file"), Map::new())
            .await;
        assert_eq!(v.deny, None);
        assert_eq!(v.reports.len(), 2);
    }

    #[tokio::test]
    async fn the_input_is_json_on_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = set(dir.path());
        s.add(HookEvent::Stop, def("cat > input.json", None, 5));
        let mut fields = Map::new();
        fields.insert("outcome".into(), Value::from("completed"));
        s.run(HookEvent::Stop, None, fields).await;
        let got: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("input.json")).unwrap()).unwrap();
        assert_eq!(got["event"], "stop");
        assert_eq!(got["sessionId"], "s1");
        assert_eq!(got["agentAlias"], "default");
        assert_eq!(got["turnId"], Value::Null);
        assert_eq!(got["outcome"], "completed");
    }

    #[tokio::test]
    async fn a_hook_that_hangs_is_killed_with_its_children_and_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = set(dir.path());
        s.add(
            HookEvent::Stop,
            def("(sleep 3; touch child_survived) & sleep 30", None, 1),
        );
        let t = Instant::now();
        let v = s.run(HookEvent::Stop, None, Map::new()).await;
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert_eq!(v.reports[0].outcome, "error");
        assert!(
            v.reports[0]
                .message
                .as_deref()
                .unwrap()
                .contains("timed out")
        );
        tokio::time::sleep(Duration::from_millis(3500)).await;
        assert!(!dir.path().join("child_survived").exists());
    }

    #[tokio::test]
    async fn ten_megabytes_of_output_are_read_and_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = set(dir.path());
        s.add(
            HookEvent::Stop,
            def(
                "head -c 10000000 /dev/zero | tr '\\0' x; head -c 10000000 /dev/zero >&2",
                None,
                20,
            ),
        );
        let t = Instant::now();
        let v = s.run(HookEvent::Stop, None, Map::new()).await;
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert_eq!(v.reports[0].outcome, "ok", "{:?}", v.reports[0]);
    }
}
