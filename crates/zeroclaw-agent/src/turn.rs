//! The turn loop: prompt → provider (streaming) → tools → provider … → answer.
//!
//! [`run_turn`] owns one turn. It appends to the caller's context as it goes
//! and reports everything through the [`TurnHost`], in the order it happens:
//!
//! * `ContextAppended` each time a message is appended to the context (the
//!   user prompt first, then assistant messages and tool results): the step
//!   boundaries, carrying exactly what the provider will be sent;
//! * `MessageChunk` / `ThoughtChunk` as the provider streams;
//! * per tool call: `ToolCall`, then (supervised autonomy, `bash` /
//!   `write_file`) `TurnHost::approve`, then (`bash`) `ToolOutput` pieces while it runs,
//!   then `ToolResult`;
//! * `ProviderRetry` before each wait of a provider call that failed before streaming
//!   and is tried again ([`crate::provider::retry`], SPEC §19); the wait ends at once on
//!   cancel;
//! * `Usage` after every provider call that started streaming: the provider's numbers
//!   when it reported them, else an estimate ([`crate::usage`]);
//! * MCP tools (`SERVER__TOOL`, [`crate::mcp`]) are offered while their server is ready
//!   (re-read before every provider call) and run like built-in ones; supervised autonomy
//!   asks approval unless the tool is annotated read-only, read-only autonomy refuses them
//!   unless so annotated.
//!
//! * hooks (SPEC §21.1, [`crate::hooks`]), each run reported as `Hook`:
//!   `user_prompt_submit` before the prompt is appended (a deny fails the turn, context is
//!   added to the prompt); `pre_tool_use` after `ToolCall` (a deny is the call's error
//!   result and nothing runs, an allow skips the approval, `updatedInput` replaces the
//!   arguments); `post_tool_use` before `ToolResult` (context is added to the result);
//!   `stop` when the turn is about to end (not when cancelled): a `continue` on a completed
//!   turn appends its reason as a user message and goes on, at most
//!   [`MAX_STOP_CONTINUES`] times.
//!
//! * `bash` runs in the sandbox of SPEC §21.2 ([`crate::sandbox`]): planned when the call
//!   passes the autonomy check (`read_only` runs it confined, without asking, where it can
//!   be confined, and refuses it elsewhere), with a private temporary directory made on the
//!   turn's first confined call and removed when the turn ends.
//!
//! * plan mode (autonomy `plan`, SPEC §26, [`crate::tools::plan`]): the calls `read_only`
//!   runs run the same way, the others are refused as changing nothing (a hook's allow does
//!   not lift that); the system prompt gains plan mode's section and `propose_plan` is
//!   offered; a valid `propose_plan` call ends the turn after its round, with `Plan`
//!   reported after the round's results.
//!
//! Cancellation (the token) is raced against every wait: the provider
//! stream is dropped (closing the HTTP connection), a running `bash` is
//! killed with its process group, a pending approval or question is
//! abandoned. Partial assistant text is kept (in `content` and in the
//! context). Tool calls of the interrupted round that have no result get a
//! synthesized "cancelled" result, so the context never holds an unmatched
//! call; a `ToolResult` event is emitted for the call whose `ToolCall` was
//! already emitted, the others only appear as `ContextAppended`.
//!
//! `max_tool_iterations = N`: at most N tool rounds (provider responses that
//! asked for tools). After the N-th round's results no provider call is made;
//! the turn ends `Completed` with a note in `content` (the note is not added
//! to the context). With N = 0 requested calls are answered "not executed".

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::hooks::{HookEvent, HookReport, HookSet, Verdict};
use crate::mcp::McpSet;
use crate::message::{ChatMessage, ToolCallRequest};
use crate::provider::retry::{self, RetryDecision};
use crate::provider::{Provider, ProviderError, ProviderEvent, ProviderRequest, Usage};
use crate::sandbox::{self, Plan, SandboxSettings, Scratch};
use crate::step_text::StepText;
use crate::text::Text;
use crate::tools::live::{OutputStream, live_channel};
use crate::tools::{AskUser, ToolLimits, ToolName, bash, fs};
use crate::usage::{self, CallUsage, TurnUsage};

/// How much the agent may do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Autonomy {
    /// `bash` and `write_file` need the user's approval.
    #[default]
    Supervised,
    /// Everything runs without asking.
    Full,
    /// `write_file` is refused without asking; `bash` runs confined to writing nowhere
    /// (SPEC §21.2), and is refused where it cannot be confined.
    ReadOnly,
    /// Plan mode (SPEC §26, [`crate::tools::plan`]): what changes nothing runs as in
    /// `ReadOnly`, the rest is refused as changing something, and `propose_plan` ends the
    /// turn with a plan.
    Plan,
}

impl Autonomy {
    /// Nothing may be changed: `ReadOnly` and `Plan`.
    pub fn reads_only(self) -> bool {
        matches!(self, Autonomy::ReadOnly | Autonomy::Plan)
    }
}

/// Settings a session may change while a turn runs; read before every provider call and
/// every tool call (`None` = the [`AgentSpec`]'s own).
pub trait LiveSettings: Send + Sync {
    fn model(&self) -> Option<String>;
    fn autonomy(&self) -> Option<Autonomy>;
}

/// Everything a turn needs to know about the agent.
#[derive(Clone)]
pub struct AgentSpec {
    pub provider: Arc<dyn Provider>,
    /// Empty = the provider's own model.
    pub model: String,
    pub system_prompt: String,
    /// Tools offered to the model (`ask_user` only if the host can ask).
    pub tools: Vec<ToolName>,
    pub autonomy: Autonomy,
    pub max_tool_iterations: u32,
    /// `read_file` / `write_file` are confined here: a session's directory (SPEC §22).
    pub workspace: PathBuf,
    /// Where `bash` runs.
    pub cwd: PathBuf,
    pub limits: ToolLimits,
    /// The session's MCP servers, whose ready tools are offered too.
    pub mcp: Option<Arc<McpSet>>,
    /// The session's own model and autonomy, when it changed them.
    pub live: Option<Arc<dyn LiveSettings>>,
    /// The session's hooks (SPEC §21.1), when it has any.
    pub hooks: Option<Arc<HookSet>>,
    /// What confines `bash` (SPEC §21.2).
    pub sandbox: SandboxSettings,
    /// The session's skills (SPEC §26); the `skill` tool is offered when there are any.
    pub skills: Arc<Vec<crate::tools::skill::Skill>>,
    /// The session's background processes (SPEC §26); with `bash` offered, `bash_output`
    /// and `bash_kill` are too. `None`: `background: true` is refused.
    pub background: Option<Arc<crate::tools::background::Shells>>,
}

impl AgentSpec {
    /// All tools, supervised, 20 tool rounds, cwd = workspace, default limits.
    pub fn new(provider: Arc<dyn Provider>, workspace: PathBuf) -> Self {
        AgentSpec {
            provider,
            model: String::new(),
            system_prompt: String::new(),
            tools: ToolName::ALL.to_vec(),
            autonomy: Autonomy::Supervised,
            max_tool_iterations: 20,
            cwd: workspace.clone(),
            workspace,
            limits: ToolLimits::default(),
            mcp: None,
            live: None,
            hooks: None,
            sandbox: SandboxSettings::default(),
            skills: Arc::default(),
            background: None,
        }
    }
}

impl std::fmt::Debug for AgentSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSpec")
            .field("provider", &self.provider.kind())
            .field("model", &self.model)
            .field("tools", &self.tools)
            .field("autonomy", &self.autonomy)
            .field("max_tool_iterations", &self.max_tool_iterations)
            .field("workspace", &self.workspace)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

/// What a turn reports to its host, in order (see the module doc). `'a` is the context's:
/// an appended message is lent, not copied ([`TurnEvent::into_owned`] keeps one).
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent<'a> {
    MessageChunk {
        text: String,
        /// The call's whole text so far, this chunk included (shared, not copied: a host
        /// that records progress reads it rather than accumulating its own copy).
        so_far: StepText,
    },
    ThoughtChunk {
        text: String,
    },
    ToolCall {
        tool_call_id: String,
        name: String,
        /// The parsed arguments (a JSON string value when they were not JSON).
        raw_input: Value,
    },
    ToolResult {
        tool_call_id: String,
        name: String,
        raw_output: String,
    },
    /// A piece of a running tool's output (`bash`, throttled: [`crate::tools::live`]).
    ToolOutput {
        tool_call_id: String,
        stream: OutputStream,
        text: String,
    },
    /// A message was appended to the provider context: the context's own, lent for the
    /// call (a host that keeps it copies what it needs; a long answer is not copied for a
    /// host that needs only part of it).
    ContextAppended {
        message: Cow<'a, ChatMessage>,
    },
    /// After every provider call that started streaming.
    Usage {
        usage: CallUsage,
    },
    /// A provider call failed before streaming and will be tried again after `delay`
    /// (SPEC §19); `attempt` is the retry's number, from 1.
    ProviderRetry {
        attempt: u32,
        delay: std::time::Duration,
        reason: String,
    },
    /// A hook ran (SPEC §21.1).
    Hook {
        report: HookReport,
    },
    /// A `propose_plan` call's plan (SPEC §26), after the round's tool results; the turn
    /// then ends.
    Plan {
        plan: String,
    },
}

impl TurnEvent<'_> {
    /// The event with nothing lent: a message appended to the context copied.
    pub fn into_owned(self) -> TurnEvent<'static> {
        match self {
            TurnEvent::MessageChunk { text, so_far } => TurnEvent::MessageChunk { text, so_far },
            TurnEvent::ThoughtChunk { text } => TurnEvent::ThoughtChunk { text },
            TurnEvent::ToolCall {
                tool_call_id,
                name,
                raw_input,
            } => TurnEvent::ToolCall {
                tool_call_id,
                name,
                raw_input,
            },
            TurnEvent::ToolResult {
                tool_call_id,
                name,
                raw_output,
            } => TurnEvent::ToolResult {
                tool_call_id,
                name,
                raw_output,
            },
            TurnEvent::ToolOutput {
                tool_call_id,
                stream,
                text,
            } => TurnEvent::ToolOutput {
                tool_call_id,
                stream,
                text,
            },
            TurnEvent::ContextAppended { message } => TurnEvent::ContextAppended {
                message: Cow::Owned(message.into_owned()),
            },
            TurnEvent::Usage { usage } => TurnEvent::Usage { usage },
            TurnEvent::ProviderRetry {
                attempt,
                delay,
                reason,
            } => TurnEvent::ProviderRetry {
                attempt,
                delay,
                reason,
            },
            TurnEvent::Hook { report } => TurnEvent::Hook { report },
            TurnEvent::Plan { plan } => TurnEvent::Plan { plan },
        }
    }
}

/// An approval question for a tool call (supervised autonomy).
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalAsk {
    pub tool_call_id: String,
    pub tool_name: String,
    /// Short human-readable form (the command for `bash`, path and size for
    /// `write_file`).
    pub arguments_summary: String,
    pub raw_input: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalDecision {
    AllowOnce,
    AllowAlways,
    Reject,
    /// The user refused the call as proposed; with replacement arguments the
    /// tool runs with those instead (and the model is told), without them
    /// this is a plain reject.
    RejectWithEdit(Option<Value>),
}

/// The daemon's side of a turn. The host owns approval memory
/// (`allow_always`), the approval timeout and request ids.
#[async_trait]
pub trait TurnHost: Send + Sync {
    async fn emit(&self, event: TurnEvent<'_>);
    async fn approve(&self, ask: ApprovalAsk) -> ApprovalDecision;
    /// `None` = no answer (declined, cancelled, timed out, failed).
    async fn ask_user(&self, ask: AskUser) -> Option<String>;
    /// Whether `ask_user` may be offered to the model.
    fn can_ask_user(&self) -> bool;

    /// The most bytes of the answer the host wants in [`TurnResult::content`]: a longer
    /// answer is cut there at a character boundary, so the result is not another copy of
    /// a long text the context holds already. No limit unless the host sets one.
    fn result_text_max(&self) -> usize {
        usize::MAX
    }

    /// Called before every provider call of the turn after its first, with the context
    /// and where this turn's messages start in it. The host may replace
    /// `context[..turn_start]` (what came before this turn) by a compacted version (SPEC
    /// §18 auto-compaction); it returns where this turn's messages start afterwards.
    async fn before_call(&self, context: &mut Vec<ChatMessage>, turn_start: usize) -> usize {
        let _ = context;
        turn_start
    }

    /// Called before every provider call of the turn, the first included (SPEC §24.2
    /// budgets): `false` ends the turn `cancelled` without the call. The host may wait
    /// here for a person.
    async fn budget_allows(&self) -> bool {
        true
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    Completed,
    Cancelled,
    Failed,
}

impl TurnOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnOutcome::Completed => "completed",
            TurnOutcome::Cancelled => "cancelled",
            TurnOutcome::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    pub outcome: TurnOutcome,
    /// Completed: the final assistant text (plus a note when the tool round
    /// limit stopped the turn). Cancelled: the partial text of the last step.
    /// Failed: the error message. An answer longer than the host's
    /// [`TurnHost::result_text_max`] is cut to it here (the context has it whole).
    pub content: String,
    /// `content` is the beginning of a longer answer.
    pub content_cut: bool,
    /// How many messages this turn appended to the context: they are its last
    /// `appended` entries (not copied here: a turn's text can be large).
    pub appended: usize,
    /// Provider responses requested during the turn.
    pub provider_calls: u32,
    /// Tool rounds run.
    pub tool_rounds: u32,
    /// Tokens of every provider call of the turn.
    pub usage: TurnUsage,
}

/// Longest visible text of one turn, in bytes (SPEC §17): a provider streaming more
/// fails the turn.
pub const MAX_TURN_TEXT: usize = 32 * 1024 * 1024;

/// Result text given to the model when the user refused a call.
pub const REFUSED_BY_USER: &str = "The user refused to run this tool call.";
/// Result text given to the model when `ask_user` got no answer.
pub const NO_ANSWER: &str = "(no answer: the user did not answer the question)";
/// Result text for calls interrupted by a cancelled turn.
pub const CANCELLED_RESULT: &str =
    "Cancelled: the user cancelled the turn before this tool call finished.";
/// How many times `stop` hooks may continue one turn (SPEC §21.1).
pub const MAX_STOP_CONTINUES: u32 = 3;

struct Turn<'a> {
    spec: &'a AgentSpec,
    context: &'a mut Vec<ChatMessage>,
    host: &'a dyn TurnHost,
    cancel: CancellationToken,
    offered: Vec<ToolName>,
    seen_ids: HashSet<String>,
    /// Bytes of visible text streamed so far in this turn (all steps).
    visible: usize,
    usage: TurnUsage,
    /// Where this turn's messages start in `context` (moves when the host compacts what
    /// came before).
    start: usize,
    /// The private temporary directory of confined `bash` calls, made on first use.
    scratch: tokio::sync::OnceCell<Scratch>,
    /// The text last returned by `steps` was cut to the host's `result_text_max`.
    shown_cut: bool,
    /// The plan of a `propose_plan` call of this round: sent after the round's results,
    /// and the turn ends.
    proposed: Option<String>,
}

#[derive(Default)]
struct Step {
    text: Text,
    calls: Vec<ToolCallRequest>,
    error: Option<ProviderError>,
    cancelled: bool,
    /// The provider accepted the request (a stream was opened).
    started: bool,
    /// The last usage the provider reported.
    usage: Option<Usage>,
}

enum CallOutcome {
    Done(String),
    Cancelled,
}

/// Runs one turn: appends `prompt` and everything that follows to `context`.
pub async fn run_turn(
    spec: &AgentSpec,
    context: &mut Vec<ChatMessage>,
    prompt: String,
    host: &dyn TurnHost,
    cancel: CancellationToken,
) -> TurnResult {
    let start = context.len();
    let mut offered: Vec<ToolName> = Vec::new();
    for t in &spec.tools {
        if !offered.contains(t) && (*t != ToolName::AskUser || host.can_ask_user()) {
            offered.push(*t);
        }
    }
    if !spec.skills.is_empty() {
        offered.push(ToolName::Skill);
    }
    if spec.background.is_some() && offered.contains(&ToolName::Bash) {
        offered.extend([ToolName::BashOutput, ToolName::BashKill]);
    }
    let autonomy = spec.live.as_ref().and_then(|l| l.autonomy());
    if autonomy.unwrap_or(spec.autonomy) == Autonomy::Plan {
        offered.push(ToolName::ProposePlan);
    }
    let mut turn = Turn {
        spec,
        context,
        host,
        cancel,
        offered,
        seen_ids: HashSet::new(),
        visible: 0,
        usage: TurnUsage::default(),
        start,
        scratch: tokio::sync::OnceCell::new(),
        shown_cut: false,
        proposed: None,
    };
    let (outcome, content, provider_calls, tool_rounds) = turn.run(prompt).await;
    TurnResult {
        outcome,
        content,
        content_cut: turn.shown_cut,
        appended: turn.context.len() - turn.start,
        provider_calls,
        tool_rounds,
        usage: turn.usage,
    }
}

impl Turn<'_> {
    fn model(&self) -> String {
        self.spec
            .live
            .as_ref()
            .and_then(|l| l.model())
            .unwrap_or_else(|| self.spec.model.clone())
    }

    fn autonomy(&self) -> Autonomy {
        self.spec
            .live
            .as_ref()
            .and_then(|l| l.autonomy())
            .unwrap_or(self.spec.autonomy)
    }

    async fn append(&mut self, message: ChatMessage) {
        self.context.push(message);
        if let Some(message) = self.context.last() {
            let message = Cow::Borrowed(message);
            self.host.emit(TurnEvent::ContextAppended { message }).await;
        }
    }

    /// Runs the hooks of `event` (none configured: an empty verdict at once), reports each
    /// run, and gives up when the turn is cancelled (the running hook is killed). The
    /// hooks' input `fields` is only built when a hook will run (it may copy the prompt).
    async fn hooks(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        fields: impl FnOnce() -> serde_json::Map<String, Value> + Send,
    ) -> Option<Verdict> {
        let set = self.spec.hooks.as_ref()?;
        if !set.has(event, tool) {
            return None;
        }
        let fields = fields();
        let verdict = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return None,
            v = set.run(event, tool, fields) => v,
        };
        for report in &verdict.reports {
            self.host
                .emit(TurnEvent::Hook {
                    report: report.clone(),
                })
                .await;
        }
        Some(verdict)
    }

    async fn run(&mut self, prompt: String) -> (TurnOutcome, String, u32, u32) {
        let mut prompt = prompt;
        if let Some(v) = self
            .hooks(HookEvent::UserPromptSubmit, None, || {
                fields([("prompt", Value::from(prompt.as_str()))])
            })
            .await
        {
            if let Some(reason) = v.deny {
                return (
                    TurnOutcome::Failed,
                    format!("The prompt was refused by a hook: {reason}"),
                    0,
                    0,
                );
            }
            for ctx in v.additional_context {
                prompt.push_str("\n\n");
                prompt.push_str(&ctx);
            }
        }
        self.append(ChatMessage::user(prompt)).await;
        let (mut calls, mut rounds) = (0u32, 0u32);
        let mut continues = 0u32;
        loop {
            let (outcome, content, c, r) = self.steps(calls > 0).await;
            calls += c;
            rounds += r;
            if outcome == TurnOutcome::Cancelled || self.cancel.is_cancelled() {
                return (outcome, content, calls, rounds);
            }
            let verdict = self
                .hooks(HookEvent::Stop, None, || {
                    fields([("outcome", Value::from(outcome.as_str()))])
                })
                .await;
            match verdict.and_then(|v| v.continue_with) {
                Some(reason)
                    if outcome == TurnOutcome::Completed && continues < MAX_STOP_CONTINUES =>
                {
                    continues += 1;
                    let reason = if reason.is_empty() {
                        "Continue.".to_owned()
                    } else {
                        reason
                    };
                    self.append(ChatMessage::user(reason)).await;
                }
                _ => return (outcome, content, calls, rounds),
            }
        }
    }

    /// Provider calls and tool rounds until the model answers without tools, the round
    /// limit is reached, or the turn fails or is cancelled. `called`: a provider call of
    /// this turn was made already.
    async fn steps(&mut self, called: bool) -> (TurnOutcome, String, u32, u32) {
        let builtin: Vec<_> = self.offered.iter().map(|t| t.schema()).collect();
        let max = self.spec.max_tool_iterations;
        let mut rounds = 0u32;
        let mut calls_made = 0u32;
        self.shown_cut = false;
        loop {
            if calls_made > 0 || called {
                self.start = self.host.before_call(self.context, self.start).await;
            }
            if !self.host.budget_allows().await {
                return (TurnOutcome::Cancelled, String::new(), calls_made, rounds);
            }
            let mut tools = builtin.clone();
            if let Some(mcp) = &self.spec.mcp {
                tools.extend(mcp.tools().into_iter().map(|t| t.schema));
            }
            // The context is lent to the call, not copied, and is back before anything
            // else looks at it; the input estimate is taken from it, which is what the
            // request was built from until the step's messages are appended below.
            let lent = Arc::new(std::mem::take(&mut *self.context));
            let req = ProviderRequest {
                model: self.model(),
                system_prompt: self.system_prompt(),
                messages: Arc::clone(&lent),
                tools,
            };
            calls_made += 1;
            let tools = req.tools.clone();
            let step = self.stream_step(req, &lent).await;
            *self.context = take_back(lent);
            if step.started {
                let (system, context) = (&self.spec.system_prompt, &*self.context);
                let input = || usage::estimate_input_of(system, context, &tools);
                let call = usage::of_call(step.usage, input, step.text.len(), &step.calls);
                self.usage.add(call);
                self.host.emit(TurnEvent::Usage { usage: call }).await;
            }
            if step.cancelled || step.error.is_some() {
                let shown = self.shown(&step.text);
                if !step.text.is_empty() {
                    self.append(ChatMessage::assistant(step.text)).await;
                }
                return match step.error {
                    Some(e) if !step.cancelled => {
                        self.shown_cut = false;
                        (TurnOutcome::Failed, e.to_string(), calls_made, rounds)
                    }
                    _ => (TurnOutcome::Cancelled, shown, calls_made, rounds),
                };
            }
            if step.calls.is_empty() {
                let shown = self.shown(&step.text);
                self.append(ChatMessage::assistant(step.text)).await;
                return (TurnOutcome::Completed, shown, calls_made, rounds);
            }
            let calls = self.unique_ids(step.calls);
            self.append(ChatMessage::Assistant {
                content: step.text.clone(),
                tool_calls: calls.clone(),
            })
            .await;
            if rounds >= max {
                for c in &calls {
                    self.append(ChatMessage::tool_result(
                        &c.id,
                        &c.name,
                        "Not executed: the tool round limit of this turn was reached.",
                    ))
                    .await;
                }
                let shown = with_limit_note(&self.shown(&step.text), max);
                return (TurnOutcome::Completed, shown, calls_made, rounds);
            }
            rounds += 1;
            for (i, call) in calls.iter().enumerate() {
                let outcome = if self.cancel.is_cancelled() {
                    None
                } else {
                    Some(self.run_call(call).await)
                };
                match outcome {
                    Some(CallOutcome::Done(out)) => {
                        self.host
                            .emit(TurnEvent::ToolResult {
                                tool_call_id: call.id.clone(),
                                name: call.name.clone(),
                                raw_output: out.clone(),
                            })
                            .await;
                        self.append(ChatMessage::tool_result(&call.id, &call.name, out))
                            .await;
                    }
                    started => {
                        // This call's ToolCall event was emitted (unless the
                        // token fired before it started): close it visibly.
                        if started.is_some() {
                            self.host
                                .emit(TurnEvent::ToolResult {
                                    tool_call_id: call.id.clone(),
                                    name: call.name.clone(),
                                    raw_output: CANCELLED_RESULT.to_string(),
                                })
                                .await;
                        }
                        for c in &calls[i..] {
                            self.append(ChatMessage::tool_result(&c.id, &c.name, CANCELLED_RESULT))
                                .await;
                        }
                        let shown = self.shown(&step.text);
                        return (TurnOutcome::Cancelled, shown, calls_made, rounds);
                    }
                }
            }
            if let Some(plan) = self.proposed.take() {
                self.host.emit(TurnEvent::Plan { plan }).await;
                let shown = self.shown(&step.text);
                return (TurnOutcome::Completed, shown, calls_made, rounds);
            }
            if rounds >= max {
                let shown = with_limit_note(&self.shown(&step.text), max);
                return (TurnOutcome::Completed, shown, calls_made, rounds);
            }
        }
    }

    /// The agent's system prompt, with plan mode's instructions while in it (SPEC §26).
    fn system_prompt(&self) -> String {
        if self.autonomy() != Autonomy::Plan {
            return self.spec.system_prompt.clone();
        }
        if self.spec.system_prompt.is_empty() {
            return crate::tools::plan::PROMPT.to_owned();
        }
        format!(
            "{}\n\n{}",
            self.spec.system_prompt,
            crate::tools::plan::PROMPT
        )
    }

    /// What the result shows of a step's `text`: all of it, or its beginning when it is
    /// longer than the host wants (`shown_cut` says which).
    fn shown(&mut self, text: &Text) -> String {
        let (shown, cut) = text.head(self.host.result_text_max());
        self.shown_cut = cut;
        shown.into_owned()
    }

    /// Gives every call of the turn a distinct, non-empty id.
    fn unique_ids(&mut self, calls: Vec<ToolCallRequest>) -> Vec<ToolCallRequest> {
        calls
            .into_iter()
            .map(|mut c| {
                if c.id.is_empty() || self.seen_ids.contains(&c.id) {
                    let mut n = self.seen_ids.len();
                    while self.seen_ids.contains(&format!("call_zc_{n}")) {
                        n += 1;
                    }
                    c.id = format!("call_zc_{n}");
                }
                self.seen_ids.insert(c.id.clone());
                c
            })
            .collect()
    }

    /// One provider call. The text streams into a [`StepText`] shared with the host's
    /// chunk events and is taken from it, whole, when the call ends.
    async fn stream_step(&mut self, req: ProviderRequest, lent: &Arc<Vec<ChatMessage>>) -> Step {
        let so_far = StepText::default();
        let mut step = self.stream_into(req, lent, &so_far).await;
        step.text = so_far.take();
        step
    }

    /// The call's stream, read to its end; `lent` is the context the request was built
    /// from (the turn's own is empty until the call ends).
    async fn stream_into(
        &mut self,
        req: ProviderRequest,
        lent: &Arc<Vec<ChatMessage>>,
        so_far: &StepText,
    ) -> Step {
        let mut step = Step::default();
        let mut retries = 0u32;
        // The first attempt takes `req`; a retry sends the same request again, rebuilt
        // around the lent context (unchanged while no byte was streamed).
        let (model, tools) = (req.model.clone(), req.tools.clone());
        let mut first = Some(req);
        let mut stream = loop {
            let attempt = first.take().unwrap_or_else(|| ProviderRequest {
                model: model.clone(),
                system_prompt: self.system_prompt(),
                messages: Arc::clone(lent),
                tools: tools.clone(),
            });
            let started = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    step.cancelled = true;
                    return step;
                }
                r = self.spec.provider.stream(attempt) => r,
            };
            let error = match started {
                Ok(s) => break s,
                Err(e) => e,
            };
            // SPEC §19: failures before the first streamed byte may be retried.
            let RetryDecision::Retry { delay, reason } = retry::decide(&error, retries) else {
                step.error = Some(error);
                return step;
            };
            retries += 1;
            tracing::info!(attempt = retries, ?delay, %reason, "provider call retried");
            self.host
                .emit(TurnEvent::ProviderRetry {
                    attempt: retries,
                    delay,
                    reason,
                })
                .await;
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    step.cancelled = true;
                    return step;
                }
                _ = tokio::time::sleep(delay) => {}
            }
        };
        step.started = true;
        loop {
            let item = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    step.cancelled = true;
                    return step;
                }
                it = stream.next() => it,
            };
            match item {
                None | Some(Ok(ProviderEvent::Done)) => return step,
                Some(Ok(ProviderEvent::TextDelta(text))) => {
                    self.visible += text.len();
                    if self.visible > MAX_TURN_TEXT {
                        step.error = Some(ProviderError::Stream(format!(
                            "the turn's visible text exceeds {MAX_TURN_TEXT} bytes"
                        )));
                        return step;
                    }
                    so_far.push_str(&text);
                    self.host
                        .emit(TurnEvent::MessageChunk {
                            text,
                            so_far: so_far.clone(),
                        })
                        .await;
                }
                Some(Ok(ProviderEvent::ThoughtDelta(text))) => {
                    self.host.emit(TurnEvent::ThoughtChunk { text }).await;
                }
                Some(Ok(ProviderEvent::ToolCall(call))) => step.calls.push(call),
                Some(Ok(ProviderEvent::Usage(usage))) => step.usage = Some(usage),
                Some(Err(e)) => {
                    step.error = Some(e);
                    return step;
                }
            }
        }
    }

    /// One tool call, with its `pre_tool_use` and `post_tool_use` hooks (SPEC §21.1).
    async fn run_call(&mut self, call: &ToolCallRequest) -> CallOutcome {
        let parsed: Result<Value, String> = if call.arguments.trim().is_empty() {
            Ok(Value::Object(Default::default()))
        } else {
            serde_json::from_str(&call.arguments).map_err(|e| e.to_string())
        };
        let raw_input = match &parsed {
            Ok(v) => v.clone(),
            Err(_) => Value::String(call.arguments.clone()),
        };
        self.host
            .emit(TurnEvent::ToolCall {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                raw_input: raw_input.clone(),
            })
            .await;
        let mut parsed = parsed;
        let mut input = raw_input.clone();
        let mut allowed = false;
        if let Some(v) = self
            .hooks(HookEvent::PreToolUse, Some(&call.name), || {
                fields([
                    ("toolName", Value::from(call.name.as_str())),
                    ("toolInput", raw_input.clone()),
                ])
            })
            .await
        {
            if let Some(reason) = v.deny {
                return CallOutcome::Done(format!("Error: denied by a hook: {reason}"));
            }
            if let Some(updated) = v.updated_input {
                parsed = Ok(updated.clone());
                input = updated;
            }
            allowed = v.allow;
        }
        if self.cancel.is_cancelled() {
            return CallOutcome::Cancelled;
        }
        let out = self
            .dispatch_call(call, parsed, input.clone(), allowed)
            .await;
        let CallOutcome::Done(mut text) = out else {
            return out;
        };
        if let Some(v) = self
            .hooks(HookEvent::PostToolUse, Some(&call.name), || {
                fields([
                    ("toolName", Value::from(call.name.as_str())),
                    ("toolInput", input),
                    ("toolOutput", Value::from(text.as_str())),
                    ("isError", Value::from(is_error(&text))),
                ])
            })
            .await
        {
            for ctx in v.additional_context {
                text.push_str("\n\n");
                text.push_str(&ctx);
            }
        }
        if self.cancel.is_cancelled() {
            return CallOutcome::Cancelled;
        }
        CallOutcome::Done(text)
    }

    /// A call to a built-in or MCP tool, approval included unless a hook `allowed` it.
    async fn dispatch_call(
        &mut self,
        call: &ToolCallRequest,
        parsed: Result<Value, String>,
        raw_input: Value,
        allowed: bool,
    ) -> CallOutcome {
        let builtin = self
            .offered
            .iter()
            .copied()
            .find(|t| t.as_str() == call.name);
        if builtin.is_none()
            && let Some(mcp) = self.spec.mcp.clone()
            && mcp.owns(&call.name)
        {
            return self
                .run_mcp_call(&mcp, call, parsed, raw_input, allowed)
                .await;
        }
        let Some(tool) = builtin else {
            let names: Vec<&str> = self.offered.iter().map(|t| t.as_str()).collect();
            return CallOutcome::Done(format!(
                "Error: the tool `{}` is not available. Available tools: {}.",
                call.name,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ));
        };
        let mut args = match parsed {
            Ok(v) if v.is_object() => v,
            Ok(_) => {
                return CallOutcome::Done(format!(
                    "Error: the arguments of `{}` must be a JSON object.",
                    call.name
                ));
            }
            Err(e) => {
                return CallOutcome::Done(format!(
                    "Error: the arguments of `{}` are not valid JSON: {e}",
                    call.name
                ));
            }
        };
        let mut note = None;
        let autonomy = self.autonomy();
        // How `bash` runs is settled with the autonomy it passed under (SPEC §21.2).
        let plan = (tool == ToolName::Bash)
            .then(|| sandbox::plan(&self.spec.sandbox, autonomy.reads_only(), &self.spec.cwd));
        if tool == ToolName::ProposePlan {
            return CallOutcome::Done(match crate::tools::plan::parse(&args) {
                Ok(plan) => {
                    self.proposed = Some(plan);
                    crate::tools::plan::PROPOSED.to_owned()
                }
                Err(e) => e,
            });
        }
        if tool.is_mutating() {
            match autonomy {
                Autonomy::Plan if matches!(plan, Some(Plan::Confine(_))) => {}
                Autonomy::Plan => {
                    let why = match &plan {
                        Some(Plan::Refuse(why)) => Some(why.as_str()),
                        _ => None,
                    };
                    return CallOutcome::Done(crate::tools::plan::refusal(tool.as_str(), why));
                }
                Autonomy::ReadOnly if matches!(plan, Some(Plan::Confine(_))) => {}
                Autonomy::ReadOnly => {
                    if let Some(Plan::Refuse(why)) = plan {
                        return CallOutcome::Done(why);
                    }
                    return CallOutcome::Done(format!(
                        "Refused: the agent runs in read_only autonomy; `{tool}` is not allowed."
                    ));
                }
                Autonomy::Full => {}
                Autonomy::Supervised if allowed => {}
                Autonomy::Supervised => {
                    let ask = ApprovalAsk {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        arguments_summary: summarize(tool, &args),
                        raw_input,
                    };
                    let decision = tokio::select! {
                        biased;
                        _ = self.cancel.cancelled() => return CallOutcome::Cancelled,
                        d = self.host.approve(ask) => d,
                    };
                    match decision {
                        ApprovalDecision::AllowOnce | ApprovalDecision::AllowAlways => {}
                        ApprovalDecision::Reject | ApprovalDecision::RejectWithEdit(None) => {
                            return CallOutcome::Done(REFUSED_BY_USER.to_string());
                        }
                        ApprovalDecision::RejectWithEdit(Some(replacement)) => {
                            if !replacement.is_object() {
                                return CallOutcome::Done(REFUSED_BY_USER.to_string());
                            }
                            note = Some(format!(
                                "The user replaced the arguments with {replacement} before running it.\n"
                            ));
                            args = replacement;
                        }
                    }
                }
            }
        }
        let cancel = self.cancel.clone();
        let out = tokio::select! {
            biased;
            _ = cancel.cancelled() => return CallOutcome::Cancelled,
            out = self.execute(&call.id, tool, &args, plan) => out,
        };
        CallOutcome::Done(match note {
            Some(n) => n + &out,
            None => out,
        })
    }

    /// A call of an MCP tool: arguments checked, approval by autonomy and annotation, then
    /// the server's answer (or the reason there is none) as the result.
    async fn run_mcp_call(
        &mut self,
        mcp: &McpSet,
        call: &ToolCallRequest,
        parsed: Result<Value, String>,
        raw_input: Value,
        allowed: bool,
    ) -> CallOutcome {
        let args = match parsed {
            Ok(v) if v.is_object() => v,
            Ok(_) => {
                return CallOutcome::Done(format!(
                    "Error: the arguments of `{}` must be a JSON object.",
                    call.name
                ));
            }
            Err(e) => {
                return CallOutcome::Done(format!(
                    "Error: the arguments of `{}` are not valid JSON: {e}",
                    call.name
                ));
            }
        };
        // A tool of a server that is not ready is not looked up here: the call itself
        // explains why it cannot run.
        let read_only = mcp.tool(&call.name).is_none_or(|t| t.read_only);
        if !read_only {
            match self.autonomy() {
                Autonomy::Plan => {
                    return CallOutcome::Done(crate::tools::plan::refusal(&call.name, None));
                }
                Autonomy::ReadOnly => {
                    return CallOutcome::Done(format!(
                        "Refused: the agent runs in read_only autonomy; `{}` is not annotated read-only.",
                        call.name
                    ));
                }
                Autonomy::Full => {}
                Autonomy::Supervised if allowed => {}
                Autonomy::Supervised => {
                    let ask = ApprovalAsk {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        arguments_summary: clip(&args.to_string()),
                        raw_input,
                    };
                    let decision = tokio::select! {
                        biased;
                        _ = self.cancel.cancelled() => return CallOutcome::Cancelled,
                        d = self.host.approve(ask) => d,
                    };
                    match decision {
                        ApprovalDecision::AllowOnce | ApprovalDecision::AllowAlways => {}
                        _ => return CallOutcome::Done(REFUSED_BY_USER.to_string()),
                    }
                }
            }
        }
        let cancel = self.cancel.clone();
        tokio::select! {
            biased;
            _ = cancel.cancelled() => CallOutcome::Cancelled,
            out = mcp.call(&call.name, args) => CallOutcome::Done(out.unwrap_or_else(|e| e)),
        }
    }

    /// The private temporary directory of this turn's confined calls.
    async fn scratch(&self) -> std::io::Result<&Scratch> {
        self.scratch.get_or_try_init(Scratch::make_async).await
    }

    async fn execute(
        &self,
        call_id: &str,
        tool: ToolName,
        args: &Value,
        plan: Option<Plan>,
    ) -> String {
        let spec = self.spec;
        match tool {
            ToolName::Bash => {
                let Some(cmd) = args.get("command").and_then(Value::as_str) else {
                    return "Error: bash needs a string argument `command`".to_string();
                };
                let rules = match plan {
                    Some(Plan::Refuse(why)) => return why,
                    Some(Plan::Confine(rules)) => Some(rules),
                    Some(Plan::Unconfined) | None => None,
                };
                if args.get("background").and_then(Value::as_bool) == Some(true) {
                    return match &spec.background {
                        // It gets a temporary directory of its own, living as long as it.
                        Some(shells) => {
                            shells
                                .start(cmd, &spec.cwd, rules.as_ref(), &spec.sandbox.env)
                                .await
                        }
                        None => "Error: background processes are not available here; run \
                                 the command without `background`."
                            .to_string(),
                    };
                }
                let tmp = match &rules {
                    Some(_) => match self.scratch().await {
                        Ok(tmp) => Some(tmp.path()),
                        Err(e) => {
                            return format!(
                                "Error: the sandbox could not be set up (its temporary \
                                 directory: {e}); the command was not run."
                            );
                        }
                    },
                    None => None,
                };
                let sandbox = rules.as_ref().zip(tmp);
                let (tx, mut rx) = live_channel();
                let run = async move {
                    let out = bash::run_bash_live(
                        cmd,
                        &spec.cwd,
                        &spec.limits,
                        sandbox,
                        &spec.sandbox.env,
                        Some(&tx),
                    )
                    .await;
                    drop(tx);
                    out
                };
                // The command's output is passed on while it runs; the tool never waits
                // for this loop (its channel is bounded and written without waiting).
                let forward = async {
                    while let Some(chunk) = rx.recv().await {
                        self.host
                            .emit(TurnEvent::ToolOutput {
                                tool_call_id: call_id.to_owned(),
                                stream: chunk.stream,
                                text: chunk.text,
                            })
                            .await;
                    }
                };
                let (out, ()) = tokio::join!(run, forward);
                out
            }
            ToolName::ReadFile => fs::read_file(&spec.workspace, args, &spec.limits).await,
            ToolName::WriteFile => fs::write_file(&spec.workspace, args).await,
            ToolName::AskUser => match AskUser::from_args(args) {
                Ok(ask) => match self.host.ask_user(ask).await {
                    Some(answer) => answer,
                    None => NO_ANSWER.to_string(),
                },
                Err(e) => format!("Error: {e}"),
            },
            ToolName::Skill => crate::tools::skill::run(&spec.skills, args).await,
            ToolName::BashOutput | ToolName::BashKill => match &spec.background {
                Some(shells) if tool == ToolName::BashOutput => shells.read(args),
                Some(shells) => shells.kill(args),
                None => "Error: background processes are not available here.".to_string(),
            },
            // Answered by `dispatch_call`, which ends the turn after it.
            ToolName::ProposePlan => crate::tools::plan::PROPOSED.to_owned(),
        }
    }
}

/// A hook input's event fields.
fn fields<const N: usize>(pairs: [(&str, Value); N]) -> serde_json::Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Whether a tool result reports a failure (`isError` of `post_tool_use`).
fn is_error(text: &str) -> bool {
    text.starts_with("Error")
        || text.starts_with("Refused")
        || text == REFUSED_BY_USER
        || text.contains("\n[exit code: ")
}

/// The context lent to a provider call, back once the call has ended. A provider that
/// still holds its request then (none of ours does) costs a copy here.
fn take_back(lent: Arc<Vec<ChatMessage>>) -> Vec<ChatMessage> {
    Arc::try_unwrap(lent).unwrap_or_else(|shared| (*shared).clone())
}

fn with_limit_note(text: &str, max: u32) -> String {
    let note = format!(
        "[stopped: reached the limit of {max} tool round{} for this turn (max_tool_iterations)]",
        if max == 1 { "" } else { "s" }
    );
    if text.is_empty() {
        note
    } else {
        format!("{text}\n\n{note}")
    }
}

/// At most 500 characters of `s` for an approval prompt.
fn clip(s: &str) -> String {
    const MAX: usize = 500;
    if s.chars().count() > MAX {
        let mut t: String = s.chars().take(MAX).collect();
        t.push('…');
        t
    } else {
        s.to_string()
    }
}

/// Human-readable summary of a call for an approval prompt.
pub fn summarize(tool: ToolName, args: &Value) -> String {
    match tool {
        // The command whole: a person approves what they can read (SPEC §22).
        ToolName::Bash => match args.get("command").and_then(Value::as_str) {
            Some(c) if args.get("background").and_then(Value::as_bool) == Some(true) => {
                format!("[background] {c}")
            }
            Some(c) => c.to_string(),
            None => clip(&args.to_string()),
        },
        ToolName::WriteFile => {
            let path = args.get("path").and_then(Value::as_str).unwrap_or("?");
            let len = args
                .get("content")
                .and_then(Value::as_str)
                .map_or(0, str::len);
            clip(&format!("write {path} ({len} bytes)"))
        }
        _ => clip(&args.to_string()),
    }
}
