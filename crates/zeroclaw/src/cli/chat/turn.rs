//! One turn of `zeroclaw chat`: sends the prompt, shows what streams back (a spinner until
//! the first of it), asks the questions the turn raises (approvals, ask-user) and answers
//! them from input, and Ctrl-C cancels (a second one exits). A turn someone else started
//! (another window, an editor) is watched the same way until its `turn_complete`
//! ([`Turn::watch`]); an approval answered elsewhere is withdrawn here.
//!
//! Every turn starts with its prompt (`user_message`, SPEC §18): one sent by another client
//! is shown (`> text · sender`); this window's own prompt, already on the screen as typed,
//! is recognised (same sender, same text, while it waits for its answer) and not shown
//! again.

use std::collections::VecDeque;
use std::time::Duration;

use zeroclaw_client::{
    ClientError, ClientHandle, Decision, ElicitationAnswer, ElicitationRequest, ErrorObject, Event,
    Events, Method, Outcome, ServerMessage, UpdateKind,
};

use super::input::{INTERRUPTED, Input, Interrupts, Read};
use super::ui::{Ui, message};

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
        }
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
                read = self.input.next(&prompt, false), if self.asking.is_some() => {
                    self.answer(read).await;
                }
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
            UpdateKind::ApprovalResolved { request_id, .. } => self.withdraw(&request_id),
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
    /// asked here.
    fn withdraw(&mut self, request_id: &str) {
        let settled = |q: &Question| matches!(q, Question::Approval { request_id: id, .. } if id == request_id);
        self.questions.retain(|q| !settled(q));
        if self.asking.as_ref().is_some_and(settled) {
            self.asking = None;
            self.ui.end_line();
            self.ui.note("approval settled elsewhere");
        }
    }

    /// Shows a question, or answers it at once when stdin is finished.
    async fn ask(&mut self, question: Question) {
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
        }
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
        match question {
            Question::Approval {
                request_id,
                tool,
                summary,
            } => {
                let decision = match line.trim().to_ascii_lowercase().as_str() {
                    "y" | "yes" => Decision::AllowOnce,
                    "a" | "always" => Decision::AllowAlways,
                    "" | "n" | "no" => Decision::Reject,
                    _ => {
                        self.ui.note("answer y, n or a");
                        self.ui.ask_approval(&tool, &summary);
                        self.asking = Some(Question::Approval {
                            request_id,
                            tool,
                            summary,
                        });
                        return;
                    }
                };
                self.approve(request_id, decision);
            }
            Question::Elicitation(req) => match req.answer_from_input(&line) {
                Ok(answer) => {
                    if answer == ElicitationAnswer::Decline {
                        self.ui.note("declined");
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
                request_id, tool, ..
            } => {
                self.ui.note(&format!("no input left: rejecting {tool}"));
                self.approve(request_id, Decision::Reject);
            }
            Question::Elicitation(req) => {
                self.ui.note("no input left: declining the question");
                let _ = self
                    .handle
                    .answer_elicitation(&req, &ElicitationAnswer::Decline)
                    .await;
            }
        }
    }

    fn approve(&self, request_id: String, decision: Decision) {
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
                self.ui.end_line();
                self.ui.error(&format!("turn failed: {}", result.content));
            }
        }
    }
}
