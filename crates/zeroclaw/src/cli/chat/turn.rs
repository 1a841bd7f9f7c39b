//! One turn of `zeroclaw chat`: sends the prompt, shows what streams back (a spinner until
//! the first of it), asks the questions the turn raises (approvals, ask-user) and answers
//! them from input, and Ctrl-C cancels (a second one exits). A turn someone else started
//! (another window, an editor) is watched the same way until its `turn_complete`
//! ([`Turn::watch`]); an approval or an ask-user question answered elsewhere is withdrawn
//! here.
//!
//! Every turn starts with its prompt (`user_message`, SPEC §18): one sent by another client
//! is shown (`> text · sender`); this window's own prompt, already on the screen as typed,
//! is recognised (same sender, same text, while it waits for its answer) and not shown
//! again.

use std::collections::VecDeque;
use std::time::Duration;

use zeroclaw_client::protocol::{DecidedBy, ResolvedReason};
use zeroclaw_client::{
    ClientError, ClientHandle, Decision, ElicitationAnswer, ElicitationRequest, ErrorObject, Event,
    Events, Method, Outcome, ServerMessage, UpdateKind,
};

use super::approve::{self, ApprovePolicy};
use super::input::{INTERRUPTED, Input, Interrupts, Read};
use super::keys::{Key, Keys};
use super::quiet::Quiet;
use super::ui::{Ui, message};

/// The next key of an approval answered by one key (never, without one).
async fn next_key(keys: &mut Option<Keys>) -> Key {
    match keys {
        Some(keys) => keys.next().await,
        None => std::future::pending().await,
    }
}

/// The decision an answer line names (`y`, `yes`, `a`, `always`, `n`, `no`, empty).
fn approval_word(line: &str) -> Option<Decision> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(Decision::AllowOnce),
        "a" | "always" => Some(Decision::AllowAlways),
        "" | "n" | "no" => Some(Decision::Reject),
        _ => None,
    }
}

/// An approval answered on a line that held a prompt being typed: (that prompt, the
/// answer), the answer being the key typed last (`draft` + `y`); the whole line is the
/// prompt when it does not end with one (the answer is then asked again). `None` when
/// the line is an answer by itself.
fn split_draft(line: &str) -> Option<(String, String)> {
    if approval_word(line).is_some() {
        return None;
    }
    let last = line.chars().last()?;
    if matches!(last.to_ascii_lowercase(), 'y' | 'n' | 'a') {
        let draft = &line[..line.len() - last.len_utf8()];
        return Some((draft.to_string(), last.to_string()));
    }
    Some((line.to_string(), "?".to_string()))
}

/// How often the spinner turns.
const SPIN_EVERY: Duration = Duration::from_millis(100);

/// A question waiting for a line of input.
pub enum Question {
    Approval {
        request_id: String,
        tool: String,
        summary: String,
    },
    Elicitation(ElicitationRequest),
    /// A turn paused by a budget (SPEC §24.2), answered `r` (raise) or `s` (stop).
    Budget {
        request_id: String,
        budget: String,
        used: f64,
        limit: f64,
    },
}

/// What `r` alone raises a budget by: as much again as the limit (at least 1).
fn default_raise(limit: f64) -> f64 {
    limit.max(1.0)
}

pub struct Turn<'a> {
    pub handle: &'a ClientHandle,
    pub session_id: &'a str,
    /// This connection's principal label (`operator`, `user:<name>`).
    pub me: &'a str,
    /// The prompt this window sent, until its `user_message` is seen.
    pub own: Option<String>,
    pub ui: &'a mut Ui,
    pub input: &'a mut Input,
    /// Questions not yet shown, in arrival order.
    pub questions: VecDeque<Question>,
    /// The question shown, waiting for its answer.
    pub asking: Option<Question>,
    /// Whether any reply text was streamed.
    pub streamed: bool,
    pub cancelling: bool,
    /// Watching a turn this window did not prompt: it ends with its `turn_complete`.
    pub watching: bool,
    /// The `turn_complete` of the watched turn.
    pub completed: Option<Ending>,
    /// Token usage of this turn so far (SPEC §16 `usage` updates).
    pub usage: TurnUsage,
    /// `--approve`: approvals decided without asking (SPEC §22).
    pub policy: Option<ApprovePolicy>,
    /// Approvals this window answered (their `approval_resolved` is not news here).
    pub answered: Vec<String>,
    /// The turn failed (the chat's exit status with piped input, SPEC §22).
    pub failed: bool,
    /// The approval shown is answered with one key (a terminal whose editor is idle).
    pub keys: Option<Keys>,
    /// The question shown is answered on a line the editor was reading already, which
    /// may hold a prompt being typed (kept for the next prompt).
    pub on_reading_line: bool,
}

/// How a turn ended: the `session/prompt` answer, or a watched turn's `turn_complete`.
pub struct Ending {
    pub outcome: Outcome,
    /// Completed: the final text. Cancelled: the partial text. Failed: the error message.
    pub content: String,
}

/// What the `usage` updates of one turn add up to.
#[derive(Default)]
pub struct TurnUsage {
    calls: u32,
    input: u64,
    output: u64,
    context: u64,
    window: u64,
    estimated: bool,
}

impl TurnUsage {
    /// Adds one provider call: tokens in and out, the context after it, its window.
    fn add(&mut self, input: u64, output: u64, context: u64, window: u64, estimated: bool) {
        self.calls += 1;
        self.input += input;
        self.output += output;
        self.context = context;
        self.window = window;
        self.estimated |= estimated;
    }

    /// One line: tokens in/out, context used / window (`~` when estimated).
    pub fn line(&self) -> Option<String> {
        if self.calls == 0 {
            return None;
        }
        let about = if self.estimated { "~" } else { "" };
        Some(format!(
            "{about}{} in · {about}{} out · context {about}{}/{}",
            self.input, self.output, self.context, self.window
        ))
    }
}

impl<'a> Turn<'a> {
    pub fn new(
        handle: &'a ClientHandle,
        session_id: &'a str,
        me: &'a str,
        ui: &'a mut Ui,
        input: &'a mut Input,
    ) -> Turn<'a> {
        Turn {
            handle,
            session_id,
            me,
            own: None,
            ui,
            input,
            questions: VecDeque::new(),
            asking: None,
            streamed: false,
            cancelling: false,
            watching: false,
            completed: None,
            usage: TurnUsage::default(),
            policy: None,
            answered: Vec::new(),
            failed: false,
            keys: None,
            on_reading_line: false,
        }
    }

    /// Decides approvals by `--approve` instead of asking.
    pub fn with_policy(mut self, policy: Option<ApprovePolicy>) -> Self {
        self.policy = policy;
        self
    }

    pub async fn run(
        &mut self,
        events: &mut Events,
        interrupts: &mut Interrupts,
        prompt: &str,
    ) -> Result<(), ClientError> {
        let (handle, session_id) = (self.handle, self.session_id);
        self.own = Some(prompt.to_string());
        let prompt_call = async move {
            let result = handle.prompt(session_id, prompt).await?;
            Ok(Ending {
                outcome: result.outcome,
                content: result.content,
            })
        };
        self.drive(events, interrupts, None, prompt_call).await
    }

    /// Runs a session command that the daemon queues as a turn of its own
    /// (`session/compact`): its events are shown as they come, until `call` answers.
    pub async fn command(
        &mut self,
        events: &mut Events,
        interrupts: &mut Interrupts,
        call: impl std::future::Future<Output = Result<Ending, ClientError>>,
    ) -> Result<(), ClientError> {
        self.drive(events, interrupts, None, call).await
    }

    /// Watches a turn started elsewhere until its `turn_complete`; `first` is the event
    /// that showed it (already received).
    pub async fn watch(
        &mut self,
        events: &mut Events,
        interrupts: &mut Interrupts,
        first: Option<Event>,
    ) -> Result<(), ClientError> {
        self.watching = true;
        self.drive(events, interrupts, first, std::future::pending())
            .await
    }

    /// Shows the turn's events until `prompt_call` answers (or, watching, until the turn's
    /// `turn_complete`). `first` was received before: it is shown once the spinner runs,
    /// so the spinner never draws over it.
    async fn drive(
        &mut self,
        events: &mut Events,
        interrupts: &mut Interrupts,
        first: Option<Event>,
        prompt_call: impl std::future::Future<Output = Result<Ending, ClientError>>,
    ) -> Result<(), ClientError> {
        tokio::pin!(prompt_call);
        // Keys typed while the turn streams wait for the next prompt, unechoed.
        let _quiet = (!self.input.is_reading()).then(Quiet::start);
        let mut events_open = true;
        let mut spin = tokio::time::interval(SPIN_EVERY);
        self.ui.start_spinner();
        if let Some(event) = first {
            self.event(event).await;
        }
        let result = loop {
            if let Some(done) = self.completed.take() {
                break Ok(done);
            }
            let prompt = self.ui.take_prompt();
            tokio::select! {
                biased;
                _ = interrupts.recv() => self.interrupt(),
                event = events.next(), if events_open => match event {
                    Some(event) => self.event(event).await,
                    None => events_open = false,
                },
                read = self.input.next(&prompt, false), if self.asking.is_some() && self.keys.is_none() => {
                    self.answer(read).await;
                }
                key = next_key(&mut self.keys), if self.keys.is_some() => self.answer_key(key).await,
                result = &mut prompt_call => break result,
                _ = spin.tick(), if self.ui.spinning() || self.ui.live_running() => {
                    // A running tool's clock, unless a question's line is being typed.
                    if self.ui.spinning() {
                        self.ui.spin();
                    } else if self.asking.is_none() {
                        self.ui.redraw_live();
                    }
                }
            }
            while self.asking.is_none() {
                let Some(question) = self.questions.pop_front() else {
                    break;
                };
                self.ask(question).await;
            }
        };
        self.keys = None;
        // The reader queues every message before it resolves the answer (or the close)
        // that follows it, so what the turn sent is all queued by now; the select above
        // may still have missed the last of it (it raced the reader thread).
        while let Some(message) = events.try_recv() {
            self.event(Event::from_message(message)).await;
        }
        // Questions of a finished turn can no longer matter.
        if self.asking.is_some() || !self.questions.is_empty() {
            self.ui.end_line();
        }
        for question in self
            .asking
            .take()
            .into_iter()
            .chain(self.questions.drain(..))
        {
            if let Question::Elicitation(req) = question {
                let _ = self
                    .handle
                    .answer_elicitation(&req, &ElicitationAnswer::Cancel)
                    .await;
            }
        }
        let result = result?;
        self.finish(&result);
        Ok(())
    }

    fn interrupt(&mut self) {
        // The terminal reads lines again while the note is shown.
        let keyed = self.keys.take().is_some();
        if self.cancelling {
            self.ui.exit(INTERRUPTED);
        }
        self.cancelling = true;
        self.ui.note("cancelling the turn (Ctrl-C again to exit)");
        let handle = self.handle.clone();
        let session_id = self.session_id.to_string();
        tokio::spawn(async move {
            if let Err(e) = handle.cancel(&session_id).await {
                eprintln!("zeroclaw: cancel failed: {}", message(&e));
            }
        });
        // The question stays open until the turn ends: asked again under the note.
        if keyed && let Some(question) = self.asking.take() {
            self.show(&question);
            self.asking = Some(question);
        }
    }

    async fn event(&mut self, event: Event) {
        let update = match event {
            Event::Update(update) => update,
            Event::Elicitation(req) => {
                self.questions.push_back(Question::Elicitation(req));
                return;
            }
            Event::Other(ServerMessage::Request { id, method, .. }) => {
                let _ = self
                    .handle
                    .respond(id, Err(ErrorObject::method_not_found(&method)))
                    .await;
                return;
            }
            Event::Other(_) => return,
        };
        if update.session_id != self.session_id {
            return;
        }
        match update.kind {
            UpdateKind::UserMessage {
                text,
                attachments,
                prompted_by,
                truncated,
            } => {
                if !self.is_own(&text, truncated, &prompted_by) {
                    self.ui
                        .user_message(&text, &attachments, &prompted_by, truncated);
                    self.ui.start_spinner();
                }
            }
            UpdateKind::AgentMessageChunk { text } => {
                self.streamed |= !text.is_empty();
                self.ui.message(&text);
            }
            UpdateKind::AgentThoughtChunk { text } => self.ui.thought(&text),
            UpdateKind::Plan { plan } => self.ui.plan(&plan),
            UpdateKind::ToolCall {
                tool_call_id,
                name,
                raw_input,
                ..
            } => self.ui.tool_call(&tool_call_id, &name, &raw_input),
            UpdateKind::ToolResult {
                name, raw_output, ..
            } => self.ui.tool_result(&name, &raw_output),
            UpdateKind::ApprovalRequest {
                request_id,
                tool_name,
                arguments_summary,
                ..
            } => self.questions.push_back(Question::Approval {
                request_id,
                tool: tool_name,
                summary: arguments_summary,
            }),
            UpdateKind::BudgetRequest {
                request_id,
                budget,
                used,
                limit,
                ..
            } => self.questions.push_back(Question::Budget {
                request_id,
                budget,
                used,
                limit,
            }),
            UpdateKind::BudgetResolved {
                request_id,
                decision,
                reason,
                decided_by,
                ..
            } => self.withdraw(&request_id, decision, reason, decided_by),
            UpdateKind::HistoryTrimmed {
                dropped_messages, ..
            } => self.ui.note(&format!(
                "context trimmed: {dropped_messages} older messages dropped"
            )),
            UpdateKind::ContextCompacted {
                summarized_messages,
                tokens_before,
                tokens_after,
                ..
            } => self.ui.note(&format!(
                "context compacted: {summarized_messages} older messages summarized \
                 ({tokens_before} → {tokens_after} tokens)"
            )),
            // The answer to session/prompt carries the same; it ends the turn.
            UpdateKind::TurnComplete {
                outcome, content, ..
            } => {
                // A prompted turn ends with its answer, which carries the same.
                if self.watching {
                    self.completed = Some(Ending { outcome, content });
                } else {
                    // Another client's turn that ran before this window's own.
                    self.ui.end_line();
                }
            }
            UpdateKind::ApprovalResolved {
                request_id,
                decision,
                reason,
                decided_by,
            } => self.withdraw(&request_id, decision, reason, decided_by),
            // An ask-user question answered in another window (or timed out, or its turn
            // ended): dropped here (SPEC §22).
            UpdateKind::AskUserResolved {
                request_id,
                reason,
                decided_by,
            } => self.withdraw_question(&request_id, reason, decided_by),
            UpdateKind::SessionRewound {
                to_turn_id,
                rewound_turns,
                ..
            } => self.ui.note(&format!(
                "session rewound to before {to_turn_id}: {} turn(s) taken back",
                rewound_turns.len()
            )),
            UpdateKind::ToolOutputChunk {
                tool_call_id, text, ..
            } => self
                .ui
                .tool_output(&tool_call_id, &text, self.asking.is_none()),
            // A title set (SPEC §25): the chat shows none.
            UpdateKind::SessionInfo { .. } => {}
            UpdateKind::ReplayGap { .. } => self
                .ui
                .note("some of this turn's earlier output is no longer available"),
            UpdateKind::Hook {
                event,
                command,
                outcome,
                message,
                ..
            } => {
                if outcome != "ok" {
                    self.ui.note(&format!(
                        "hook {event} `{command}`: {outcome}{}",
                        message.map(|m| format!(": {m}")).unwrap_or_default()
                    ));
                }
            }
            UpdateKind::ProviderRetry {
                attempt,
                delay_secs,
                reason,
            } => self.ui.note(&format!(
                "provider: {reason}; retry {attempt} in {delay_secs:.1} s"
            )),
            UpdateKind::Usage {
                input_tokens,
                output_tokens,
                context_tokens,
                context_window,
                estimated,
                ..
            } => self.usage.add(
                input_tokens,
                output_tokens,
                context_tokens,
                context_window,
                estimated,
            ),
        }
    }

    /// Whether a `user_message` is this window's own prompt (then it is already on the
    /// screen): sent by this principal, with the text this window sent and is waiting on.
    fn is_own(&mut self, text: &str, truncated: bool, by: &str) -> bool {
        let mine = by == self.me
            && self
                .own
                .as_deref()
                .is_some_and(|own| own == text || (truncated && own.starts_with(text)));
        if mine {
            self.own = None;
        }
        mine
    }

    /// An approval settled elsewhere (another window, a timeout, a cancel) is no longer
    /// asked here; what was decided and by whom is said ("allowed once by operator from
    /// the dashboard", SPEC §22).
    fn withdraw(
        &mut self,
        request_id: &str,
        decision: Decision,
        reason: ResolvedReason,
        by: Option<DecidedBy>,
    ) {
        if let Some(i) = self.answered.iter().position(|id| id == request_id) {
            self.answered.remove(i);
            return;
        }
        let settled = |q: &Question| matches!(q, Question::Approval { request_id: id, .. } | Question::Budget { request_id: id, .. } if id == request_id);
        let queued = self.questions.iter().any(settled);
        self.questions.retain(|q| !settled(q));
        let shown = match self.asking.take() {
            Some(q) if settled(&q) => {
                self.keys = None;
                Some(q)
            }
            other => {
                self.asking = other;
                None
            }
        };
        let what = match shown.as_ref() {
            Some(Question::Approval { tool, summary, .. }) => {
                format!("{tool} `{}`", super::ui::clip(summary, 60))
            }
            Some(Question::Budget { budget, .. }) => format!("budget {budget}"),
            _ if queued => "an approval".to_string(),
            _ => return,
        };
        let timed_out = reason == ResolvedReason::Timeout;
        self.ui.end_line();
        self.ui.note(&format!(
            "{what}: {}",
            approve::settled_line(decision, by.as_ref(), timed_out)
        ));
        if let Some(question) = self.asking.take() {
            self.show(&question);
            self.asking = Some(question);
        }
    }

    /// Drops the ask-user question `request_id` settled elsewhere, shown or queued (not
    /// one this window answered), with a line saying who answered; the next question, if
    /// any, is shown.
    fn withdraw_question(
        &mut self,
        request_id: &str,
        reason: ResolvedReason,
        by: Option<DecidedBy>,
    ) {
        if let Some(i) = self.answered.iter().position(|id| id == request_id) {
            self.answered.remove(i);
            return;
        }
        let settled = |q: &Question| matches!(q, Question::Elicitation(req) if req.request_id.as_deref() == Some(request_id));
        let queued = self.questions.iter().any(settled);
        self.questions.retain(|q| !settled(q));
        let shown = match self.asking.take() {
            Some(q) if settled(&q) => Some(q),
            other => {
                self.asking = other;
                None
            }
        };
        let what = match shown.as_ref() {
            Some(Question::Elicitation(req)) => {
                format!("question `{}`", super::ui::clip(&req.message, 60))
            }
            _ if queued => "a question".to_string(),
            _ => return,
        };
        let timed_out = reason == ResolvedReason::Timeout;
        self.ui.end_line();
        self.ui.note(&format!(
            "{what}: {}",
            approve::question_settled_line(by.as_ref(), timed_out)
        ));
        if let Some(question) = self.asking.take() {
            self.show(&question);
            self.asking = Some(question);
        }
    }

    /// Shows a question, or answers it at once: by `--approve`, or when stdin is finished.
    async fn ask(&mut self, question: Question) {
        if let (
            Some(policy),
            Question::Approval {
                request_id,
                tool,
                summary,
            },
        ) = (self.policy, &question)
        {
            let decision = policy.decide(tool);
            self.ui.end_line();
            eprintln!("{}", policy.line(tool, summary, decision));
            self.approve(request_id.clone(), decision);
            return;
        }
        if self.input.is_closed() {
            self.answer_closed(question).await;
            return;
        }
        self.show(&question);
        self.asking = Some(question);
    }

    fn show(&mut self, question: &Question) {
        match question {
            Question::Approval { tool, summary, .. } => self.ui.ask_approval(tool, summary),
            Question::Elicitation(req) => self.ui.ask_elicitation(req),
            Question::Budget {
                budget,
                used,
                limit,
                ..
            } => self
                .ui
                .ask_budget(budget, *used, *limit, default_raise(*limit)),
        }
        if !self.ui.interactive() {
            return;
        }
        self.on_reading_line = false;
        if let Some(reading) = self.input.reading_prompt() {
            let reading = reading.to_string();
            self.ui.ask_on_reading_line(&reading);
            self.on_reading_line = true;
        } else if matches!(question, Question::Approval { .. })
            && self.input.is_editor()
            && let Some(keys) = Keys::start()
        {
            // One key answers: the question is written here, not given to the editor.
            self.keys = Some(keys);
            let question = self.ui.take_prompt();
            self.ui.out(&question);
        }
    }

    /// A key typed at an approval asked on a terminal: `y`, `n`, `a` or Enter answers.
    async fn answer_key(&mut self, key: Key) {
        let read = match key {
            Key::Answer(word) => {
                self.ui.out(&format!("{word}\n"));
                Read::Line(word.to_string())
            }
            Key::End => {
                self.ui.out("\n");
                Read::End
            }
            Key::Other => return,
        };
        self.keys = None;
        self.answer(read).await;
    }

    /// Answers the question shown with a line of input.
    async fn answer(&mut self, read: Read) {
        let Some(question) = self.asking.take() else {
            return;
        };
        let line = match read {
            Read::Line(line) => line,
            Read::End => {
                self.ui.end_line();
                self.answer_closed(question).await;
                return;
            }
            Read::Interrupt => {
                // Ctrl-C in the line editor: as at any other time during a turn; the
                // question stays open until the turn ends.
                self.interrupt();
                self.show(&question);
                self.asking = Some(question);
                return;
            }
        };
        self.ui.echo_answer(&line);
        let mut line = line;
        if std::mem::take(&mut self.on_reading_line)
            && matches!(question, Question::Approval { .. })
            && let Some((draft, answer)) = split_draft(&line)
        {
            // The prompt being typed when the question came stays for the next prompt.
            self.input.prefill(&draft);
            line = answer;
        }
        match question {
            Question::Approval {
                request_id,
                tool,
                summary,
            } => {
                let Some(decision) = approval_word(&line) else {
                    self.ui.note("answer y, n or a");
                    let question = Question::Approval {
                        request_id,
                        tool,
                        summary,
                    };
                    self.show(&question);
                    self.asking = Some(question);
                    return;
                };
                self.approve(request_id, decision);
            }
            Question::Budget {
                request_id,
                budget,
                used,
                limit,
            } => match approve::budget_word(&line, default_raise(limit)) {
                Some(raise_by) => self.answer_budget(request_id, raise_by),
                None => {
                    self.ui.note("answer r, r N or s");
                    let question = Question::Budget {
                        request_id,
                        budget,
                        used,
                        limit,
                    };
                    self.show(&question);
                    self.asking = Some(question);
                }
            },
            Question::Elicitation(req) => match req.answer_from_input(&line) {
                Ok(answer) => {
                    if answer == ElicitationAnswer::Decline {
                        self.ui.note("declined");
                    }
                    // Its `ask_user_resolved` is not news here.
                    if let Some(id) = &req.request_id {
                        self.answered.push(id.clone());
                    }
                    if let Err(e) = self.handle.answer_elicitation(&req, &answer).await {
                        self.ui.error(&message(&e));
                    }
                }
                Err(why) => {
                    self.ui.note(&why);
                    self.ui.ask_elicitation(&req);
                    self.asking = Some(Question::Elicitation(req));
                }
            },
        }
    }

    /// No more input: approvals are rejected, questions declined.
    async fn answer_closed(&mut self, question: Question) {
        match question {
            Question::Approval {
                request_id,
                tool,
                summary,
            } => {
                self.ui.end_line();
                eprintln!("{}", approve::cannot_ask_line(&tool, &summary));
                self.approve(request_id, Decision::Reject);
            }
            Question::Budget {
                request_id, budget, ..
            } => {
                self.ui
                    .note(&format!("no input left: stopping at budget {budget}"));
                self.answer_budget(request_id, None);
            }
            Question::Elicitation(req) => {
                self.ui.note("no input left: declining the question");
                if let Some(id) = &req.request_id {
                    self.answered.push(id.clone());
                }
                let _ = self
                    .handle
                    .answer_elicitation(&req, &ElicitationAnswer::Decline)
                    .await;
            }
        }
    }

    /// Answers a budget request: raise by `raise_by`, or stop (`None`).
    fn answer_budget(&mut self, request_id: String, raise_by: Option<f64>) {
        self.answered.push(request_id.clone());
        let handle = self.handle.clone();
        let session_id = self.session_id.to_string();
        tokio::spawn(async move {
            if let Err(e) = handle
                .answer_budget(&session_id, &request_id, raise_by)
                .await
            {
                eprintln!(
                    "zeroclaw: {} failed: {}",
                    Method::SessionApprove,
                    message(&e)
                );
            }
        });
    }

    fn approve(&mut self, request_id: String, decision: Decision) {
        self.answered.push(request_id.clone());
        let handle = self.handle.clone();
        let session_id = self.session_id.to_string();
        tokio::spawn(async move {
            if let Err(e) = handle.approve(&session_id, &request_id, decision).await {
                eprintln!(
                    "zeroclaw: {} failed: {}",
                    Method::SessionApprove,
                    message(&e)
                );
            }
        });
    }

    fn finish(&mut self, result: &Ending) {
        self.show_outcome(result);
        if let Some(line) = self.usage.line() {
            self.ui.note(&line);
        }
    }

    fn show_outcome(&mut self, result: &Ending) {
        match result.outcome {
            Outcome::Completed => {
                if !self.streamed && !result.content.is_empty() {
                    self.ui.message(&result.content);
                }
                self.ui.end_line();
            }
            Outcome::Cancelled => {
                self.ui.end_line();
                self.ui.note("turn cancelled");
            }
            Outcome::Failed => {
                self.failed = true;
                self.ui.end_line();
                self.ui.error(&format!("turn failed: {}", result.content));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Decision, approval_word, split_draft};

    #[test]
    fn a_prompt_being_typed_is_kept_apart_from_the_answer() {
        assert_eq!(split_draft("y"), None);
        assert_eq!(split_draft("no"), None);
        assert_eq!(
            split_draft("git statusy"),
            Some(("git status".into(), "y".into()))
        );
        assert_eq!(split_draft("half"), Some(("half".into(), "?".into())));
        assert_eq!(approval_word("?"), None);
        assert_eq!(approval_word(" A "), Some(Decision::AllowAlways));
    }
}
