//! `zeroclaw chat`: a line-oriented terminal client. Each line read from stdin is a prompt;
//! the reply streams to stdout as it arrives, with tool calls and their results; approvals
//! and ask-user questions are answered from stdin. Ctrl-C cancels the running turn, a
//! second one (or one at the prompt) exits. Works the same with stdin from a pipe.
//!
//! Conversation (replies, tools, questions) goes to stdout; the header, notes and errors go
//! to stderr. Colours only when stdout is a terminal.

use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use serde_json::Value;
use tokio::sync::mpsc;
use zeroclaw_client::{
    ClientError, ClientHandle, Decision, ElicitationAnswer, ElicitationRequest, ErrorObject, Event,
    Events, NewSession, ServerMessage, SessionInfo, SessionUpdateKind, TurnOutcome, TurnResult,
};

use super::rpc;

/// Exit status after Ctrl-C (128 + SIGINT).
const INTERRUPTED: i32 = 130;
/// Lines of a tool result shown.
const RESULT_LINES: usize = 4;
/// Characters of one shown line (tool arguments, result lines).
const LINE_CHARS: usize = 200;

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
            SessionUpdateKind::TurnComplete(_) | SessionUpdateKind::Unknown { .. } => {}
        }
    }

    /// Shows a question, or answers it at once when stdin is finished.
    async fn ask(&mut self, question: Question) {
        if self.input.closed {
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

/// Lines of stdin, read on a thread of their own (blocking reads never hold the runtime,
/// and a pending read does not keep the process alive at exit).
struct Input {
    rx: mpsc::UnboundedReceiver<String>,
    closed: bool,
}

impl Input {
    fn spawn() -> Input {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            let mut stdin = stdin.lock();
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match stdin.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf);
                        let line = line.trim_end_matches(['\n', '\r']).to_string();
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Input { rx, closed: false }
    }

    async fn next(&mut self) -> Option<String> {
        if self.closed {
            return None;
        }
        let line = self.rx.recv().await;
        self.closed = line.is_none();
        line
    }
}

/// SIGINT (Ctrl-C), kept registered for the whole session so none is missed between
/// waits.
struct Interrupts {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupts {
    fn new() -> Result<Interrupts, String> {
        #[cfg(unix)]
        {
            let signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
                .map_err(|e| format!("cannot watch Ctrl-C: {e}"))?;
            Ok(Interrupts { signal })
        }
        #[cfg(not(unix))]
        {
            Ok(Interrupts {})
        }
    }

    async fn recv(&mut self) {
        #[cfg(unix)]
        {
            if self.signal.recv().await.is_none() {
                std::future::pending::<()>().await;
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stream {
    None,
    Message,
    Thought,
}

/// The terminal: where the cursor is, and whether to colour.
struct Ui {
    color: bool,
    interactive: bool,
    /// An unfinished line is on stdout.
    open_line: bool,
    stream: Stream,
}

const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const CYAN: &str = "\x1b[36m";
const YELLOW: &str = "\x1b[33m";
const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

impl Ui {
    fn new() -> Ui {
        Ui {
            color: std::io::stdout().is_terminal(),
            interactive: std::io::stdin().is_terminal(),
            open_line: false,
            stream: Stream::None,
        }
    }

    fn paint(&self, style: &str, text: &str) -> String {
        if self.color {
            format!("{style}{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    fn out(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
        self.open_line = !text.ends_with('\n');
    }

    /// Finishes an unfinished stdout line.
    fn end_line(&mut self) {
        if self.open_line {
            self.out("\n");
        }
        self.stream = Stream::None;
    }

    fn header(&mut self, info: &SessionInfo) {
        let mut line = format!("session {} · agent {}", info.session_id, info.agent_alias);
        if info.resumed {
            line.push_str(&format!(" · resumed ({} messages)", info.message_count));
        }
        eprintln!("{}", self.paint(DIM, &line));
        if self.interactive {
            eprintln!(
                "{}",
                self.paint(
                    DIM,
                    "type a prompt and press Enter · Ctrl-C cancels a turn · Ctrl-D exits"
                )
            );
        }
    }

    fn prompt_marker(&mut self) {
        if self.interactive {
            self.end_line();
            let marker = self.paint(BOLD, "> ");
            self.out(&marker);
        }
    }

    fn message(&mut self, text: &str) {
        if self.stream == Stream::Thought {
            self.end_line();
        }
        self.stream = Stream::Message;
        self.out(text);
    }

    fn thought(&mut self, text: &str) {
        if self.stream != Stream::Thought {
            self.end_line();
            let prefix = self.paint(DIM, "thinking: ");
            self.out(&prefix);
            self.stream = Stream::Thought;
        }
        let text = self.paint(DIM, text);
        self.out(&text);
    }

    fn tool_call(&mut self, name: &str, input: &Value) {
        self.end_line();
        let args = match input {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let line = format!("⚙ {name} {}", clip(&args, LINE_CHARS));
        let line = self.paint(CYAN, line.trim_end());
        self.out(&format!("{line}\n"));
    }

    fn tool_result(&mut self, _name: &str, output: &Value) {
        self.end_line();
        let text = match output {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        let lines: Vec<&str> = text.lines().collect();
        let mut shown = String::new();
        if lines.is_empty() {
            shown.push_str("  → (no output)\n");
        }
        for (i, line) in lines.iter().take(RESULT_LINES).enumerate() {
            let lead = if i == 0 { "  → " } else { "    " };
            shown.push_str(&format!("{lead}{}\n", clip(line, LINE_CHARS)));
        }
        if lines.len() > RESULT_LINES {
            shown.push_str(&format!(
                "    … ({} more lines)\n",
                lines.len() - RESULT_LINES
            ));
        }
        let shown = self.paint(DIM, shown.trim_end_matches('\n'));
        self.out(&format!("{shown}\n"));
    }

    fn ask_approval(&mut self, tool: &str, summary: &str) {
        self.end_line();
        let question = format!(
            "allow {tool} `{}`? [y]es/[n]o/[a]lways ",
            clip(summary, LINE_CHARS)
        );
        let question = self.paint(YELLOW, &question);
        self.out(&question);
    }

    fn ask_elicitation(&mut self, req: &ElicitationRequest) {
        self.end_line();
        let question = self.paint(YELLOW, &format!("? {}", req.message));
        let mut text = format!("{question}\n");
        let hint = match req.choices() {
            Some(set) => {
                for (i, choice) in set.options.iter().enumerate() {
                    text.push_str(&format!("  {}) {}\n", i + 1, choice.title));
                }
                if set.multiple {
                    "numbers, comma-separated (empty = no answer): "
                } else {
                    "number (empty = no answer): "
                }
            }
            None => "answer (empty = no answer): ",
        };
        text.push_str(&self.paint(YELLOW, hint));
        self.out(&text);
    }

    /// With stdin not a terminal the typed answer is not on the screen: show it.
    fn echo_answer(&mut self, line: &str) {
        if self.interactive {
            self.open_line = false;
        } else {
            self.out(&format!("{}\n", line.trim()));
        }
    }

    fn note(&mut self, text: &str) {
        self.end_line();
        eprintln!("{}", self.paint(DIM, &format!("[{text}]")));
    }

    fn error(&mut self, text: &str) {
        self.end_line();
        eprintln!("{}", self.paint(RED, &format!("error: {text}")));
    }

    /// Leaves the process at once (Ctrl-C).
    fn exit(&mut self, code: i32) -> ! {
        self.end_line();
        let _ = std::io::stdout().flush();
        std::process::exit(code)
    }
}

/// At most `max` characters, with an ellipsis when cut; newlines shown as `⏎`.
fn clip(text: &str, max: usize) -> String {
    let flat = text.replace('\n', "⏎");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn clips_long_and_multiline_text() {
        assert_eq!(clip("ls -la", 10), "ls -la");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("a\nb", 10), "a⏎b");
        assert_eq!(clip("ééé", 2), "éé…");
    }
}
