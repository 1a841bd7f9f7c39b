//! `zeroclaw chat`: a line-oriented terminal client. Each line read from stdin is a prompt;
//! the reply streams to stdout as it arrives, with tool calls and their results; approvals
//! and ask-user questions are answered from stdin. Ctrl-C cancels the running turn, a
//! second one (or one at the prompt) exits. Works the same with stdin from a pipe.
//!
//! Conversation (replies, tools, questions) goes to stdout; the header, notes and errors go
//! to stderr. Colours only when stdout is a terminal.

use std::collections::VecDeque;
use std::path::PathBuf;

use zeroclaw_client::{
    ClientError, ClientHandle, Decision, ElicitationAnswer, ElicitationRequest, ErrorObject, Event,
    Events, NewSession, ServerMessage, SessionUpdateKind, TurnOutcome, TurnResult,
};

use super::rpc;

mod input;
mod ui;

use input::{Input, Interrupts};
use ui::Ui;

/// Exit status after Ctrl-C (128 + SIGINT).
const INTERRUPTED: i32 = 130;

pub async fn run(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    agent: String,
    session: Option<String>,
) -> Result<(), String> {
    let mut interrupts = Interrupts::new()?;
    let client = rpc::connect(config_dir, socket, true).await?;
    let (handle, mut events) = client.split();
    let mut params = NewSession::agent(agent);
    params.session_id = session;
    let info = handle
        .new_session(&params)
        .await
        .map_err(|e| format!("session/new failed: {}", message(&e)))?;
    let mut ui = Ui::new();
    ui.header(&info);
    let mut input = Input::spawn();
    let session_id = info.session_id;
    loop {
        ui.prompt_marker();
        // Input first: at the end of piped input the chat ends cleanly even when the
        // daemon hung up at the same time.
        let line = loop {
            tokio::select! {
                biased;
                _ = interrupts.recv() => ui.exit(INTERRUPTED),
                line = input.next() => break line,
                event = events.next() => match event {
                    Some(event) => idle_event(&handle, &session_id, event).await,
                    None => return Err("the daemon closed the connection".to_string()),
                },
            }
        };
        let Some(line) = line else {
            ui.end_line();
            return Ok(());
        };
        if line.trim().is_empty() {
            continue;
        }
        let mut turn = Turn {
            handle: &handle,
            session_id: &session_id,
            ui: &mut ui,
            input: &mut input,
            questions: VecDeque::new(),
            asking: None,
            streamed: false,
            cancelling: false,
        };
        match turn.run(&mut events, &mut interrupts, line.trim()).await {
            Ok(()) => {}
            Err(ClientError::Rpc(e)) => ui.error(&format!("{} (code {})", e.message, e.code)),
            Err(e) => {
                ui.end_line();
                return Err(e.to_string());
            }
        }
    }
}

/// The message of a client error without the JSON around it.
fn message(e: &ClientError) -> String {
    match e {
        ClientError::Rpc(e) => format!("{} (code {})", e.message, e.code),
        other => other.to_string(),
    }
}

/// Something the daemon sent while no turn runs: questions can no longer be answered in
/// context, so they are cancelled; stray updates are dropped.
async fn idle_event(handle: &ClientHandle, session_id: &str, event: Event) {
    match event {
        Event::Elicitation(req) => {
            let _ = handle
                .answer_elicitation(&req, &ElicitationAnswer::Cancel)
                .await;
        }
        Event::Other(ServerMessage::Request { id, method, .. }) => {
            let _ = handle
                .respond(id, Err(ErrorObject::method_not_found(&method)))
                .await;
        }
        Event::Update(u) if u.session_id == session_id => {
            tracing::debug!("update outside a turn: {:?}", u.kind);
        }
        _ => {}
    }
}

/// A question waiting for a line of input.
enum Question {
    Approval {
        request_id: String,
        tool: String,
        summary: String,
    },
    Elicitation(ElicitationRequest),
}

struct Turn<'a> {
    handle: &'a ClientHandle,
    session_id: &'a str,
    ui: &'a mut Ui,
    input: &'a mut Input,
    /// Questions not yet shown, in arrival order.
    questions: VecDeque<Question>,
    /// The question shown, waiting for its answer.
    asking: Option<Question>,
    /// Whether any reply text was streamed.
    streamed: bool,
    cancelling: bool,
}

impl Turn<'_> {
    async fn run(
        &mut self,
        events: &mut Events,
        interrupts: &mut Interrupts,
        prompt: &str,
    ) -> Result<(), ClientError> {
        let prompt_call = self.handle.prompt(self.session_id, prompt);
        tokio::pin!(prompt_call);
        let mut events_open = true;
        let result = loop {
            tokio::select! {
                biased;
                _ = interrupts.recv() => self.interrupt(),
                event = events.next(), if events_open => match event {
                    Some(event) => self.event(event).await,
                    None => events_open = false,
                },
                line = self.input.next(), if self.asking.is_some() => {
                    self.answer(line).await;
                }
                result = &mut prompt_call => break result,
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
            SessionUpdateKind::AgentMessageChunk { text } => {
                self.streamed |= !text.is_empty();
                self.ui.message(&text);
            }
            SessionUpdateKind::AgentThoughtChunk { text } => self.ui.thought(&text),
            SessionUpdateKind::ToolCall {
                name, raw_input, ..
            } => self.ui.tool_call(&name, &raw_input),
            SessionUpdateKind::ToolResult {
                name, raw_output, ..
            } => self.ui.tool_result(&name, &raw_output),
            SessionUpdateKind::ApprovalRequest {
                request_id,
                tool_name,
                arguments_summary,
                ..
            } => self.questions.push_back(Question::Approval {
                request_id,
                tool: tool_name,
                summary: arguments_summary,
            }),
            SessionUpdateKind::HistoryTrimmed {
                dropped_messages, ..
            } => self.ui.note(&format!(
                "context trimmed: {dropped_messages} older messages dropped"
            )),
            // The answer to session/prompt carries the same; it ends the turn.
            SessionUpdateKind::TurnComplete(_)
            | SessionUpdateKind::ApprovalResolved { .. }
            | SessionUpdateKind::ReplayGap { .. }
            | SessionUpdateKind::Unknown { .. } => {}
        }
    }

    /// Shows a question, or answers it at once when stdin is finished.
    async fn ask(&mut self, question: Question) {
        if self.input.is_closed() {
            self.answer_closed(question).await;
            return;
        }
        match &question {
            Question::Approval { tool, summary, .. } => self.ui.ask_approval(tool, summary),
            Question::Elicitation(req) => self.ui.ask_elicitation(req),
        }
        self.asking = Some(question);
    }

    /// Answers the question shown with a line of input (`None` = stdin ended).
    async fn answer(&mut self, line: Option<String>) {
        let Some(question) = self.asking.take() else {
            return;
        };
        let Some(line) = line else {
            self.ui.end_line();
            self.answer_closed(question).await;
            return;
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
                eprintln!("zeroclaw: session/approve failed: {}", message(&e));
            }
        });
    }

    fn finish(&mut self, result: &TurnResult) {
        match &result.outcome {
            TurnOutcome::Completed => {
                if !self.streamed && !result.content.is_empty() {
                    self.ui.message(&result.content);
                }
                self.ui.end_line();
            }
            TurnOutcome::Cancelled => {
                self.ui.end_line();
                self.ui.note("turn cancelled");
            }
            TurnOutcome::Failed => {
                self.ui.end_line();
                self.ui.error(&format!("turn failed: {}", result.content));
            }
            TurnOutcome::Other(outcome) => {
                self.ui.end_line();
                self.ui.note(&format!("turn ended: {outcome}"));
            }
        }
    }
}
