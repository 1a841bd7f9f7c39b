//! Output of `zeroclaw chat`: streamed text (markdown rendered on a terminal), a spinner
//! until the reply starts, tool calls and results, prompts sent by other clients (SPEC §18),
//! notes and questions. Colours only on a terminal and without `NO_COLOR`; piped output is
//! the raw text. Also how a client error reads to people ([`message`]).

use std::io::{IsTerminal, Write};

use serde_json::Value;
use zeroclaw_client::protocol::update::PromptAttachment;
use zeroclaw_client::{ClientError, ElicitationRequest, SessionNewResult};

use super::history_rows::{error_row, rewind_row};
use super::live_output::LiveOutput;
use super::markdown::Markdown;
use super::tool_line;

/// Lines of a tool result shown.
const RESULT_LINES: usize = 4;
/// Characters of one shown line (tool arguments, result lines).
const LINE_CHARS: usize = 200;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    None,
    Message,
    Thought,
}

/// Frames of the spinner.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The terminal: where the cursor is, and whether to colour.
pub struct Ui {
    color: bool,
    /// Stdout is a terminal: markdown is rendered and a spinner shown.
    rich: bool,
    /// Input comes from the line editor: the last line of a question is its prompt.
    interactive: bool,
    /// An unfinished line is on stdout.
    open_line: bool,
    stream: Stream,
    /// The prompt the line editor shows next.
    prompt: String,
    /// The spinner's next frame, while it turns.
    spinner: Option<usize>,
    markdown: Markdown,
    /// A running tool's last lines and clock (SPEC §22), on a terminal only.
    live: LiveOutput,
}

const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const CYAN: &str = "\x1b[36m";
const YELLOW: &str = "\x1b[33m";
const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

impl Ui {
    /// `interactive`: input comes from the line editor.
    pub fn new(interactive: bool) -> Ui {
        let rich = std::io::stdout().is_terminal();
        let color = rich && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Ui {
            color,
            rich,
            interactive,
            open_line: false,
            stream: Stream::None,
            prompt: String::new(),
            spinner: None,
            markdown: Markdown::new(color),
            live: LiveOutput::default(),
        }
    }

    /// Whether input comes from a terminal (questions go to the line editor).
    pub fn interactive(&self) -> bool {
        self.interactive
    }

    /// The prompt for the line editor, taken once.
    pub fn take_prompt(&mut self) -> String {
        std::mem::take(&mut self.prompt)
    }

    /// Shows `head` and then `tail` as the line input is typed on: printed on a pipe,
    /// given to the line editor on a terminal.
    fn ask(&mut self, head: &str, tail: &str) {
        self.out(head);
        if self.interactive {
            self.prompt = tail.to_string();
        } else {
            let tail = self.paint(YELLOW, tail);
            self.out(&tail);
        }
    }

    /// Starts the spinner (on a terminal) until the first output.
    pub fn start_spinner(&mut self) {
        if self.rich {
            self.spinner = Some(0);
            self.spin();
        }
    }

    pub fn spinning(&self) -> bool {
        self.spinner.is_some()
    }

    /// Draws the next frame.
    pub fn spin(&mut self) {
        let Some(frame) = self.spinner else {
            return;
        };
        let text = format!("\r{} thinking…", SPINNER[frame % SPINNER.len()]);
        let text = self.paint(DIM, &text);
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
        self.spinner = Some(frame + 1);
    }

    fn stop_spinner(&mut self) {
        if self.spinner.take().is_some() {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(b"\r\x1b[K");
            let _ = stdout.flush();
        }
    }

    pub fn paint(&self, style: &str, text: &str) -> String {
        if self.color {
            format!("{style}{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    pub fn out(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.stop_spinner();
        let erase = self.live.erase();
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(erase.as_bytes());
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
        self.open_line = !text.ends_with('\n');
    }

    /// Finishes an unfinished stdout line (and the markdown being streamed).
    pub fn end_line(&mut self) {
        self.stop_spinner();
        let erase = self.live.erase();
        if !erase.is_empty() {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(erase.as_bytes());
            let _ = stdout.flush();
        }
        if self.stream == Stream::Message {
            let rest = self.markdown.finish();
            self.out(&rest);
        }
        if self.open_line {
            self.out("\n");
        }
        self.stream = Stream::None;
    }

    pub fn header(&mut self, info: &SessionNewResult) {
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
                    "type a prompt and press Enter · /help lists commands · Ctrl-C cancels a turn · Ctrl-D exits"
                )
            );
        }
    }

    /// A question asked while the line editor already reads a line under `reading` (an
    /// idle window watching another face's turn, SPEC §22): the question stays on its own
    /// line and the answer is typed on the editor's line below it, where what was typed
    /// before is kept.
    pub fn ask_on_reading_line(&mut self, reading: &str) {
        let question = self.take_prompt();
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(format!("{question}\r\n{reading}").as_bytes());
        let _ = stdout.flush();
        self.open_line = false;
    }

    /// A line of the banner (SPEC §22), dim on stderr under the header.
    pub fn banner(&mut self, line: &str) {
        eprintln!("{}", self.paint(DIM, line));
    }

    /// Earlier messages of a resumed session.
    pub fn history(&mut self, rows: &[Value], total: u64) {
        self.end_line();
        let shown = rows.len() as u64;
        let head = if total > shown {
            format!("── last {shown} of {total} messages ──")
        } else {
            format!("── {shown} earlier messages ──")
        };
        let head = self.paint(DIM, &head);
        self.out(&format!("{head}\n"));
        for row in rows {
            let text = row["content"].as_str().unwrap_or("");
            match row["role"].as_str().unwrap_or("?") {
                "user" => {
                    let line = self.paint(BOLD, &format!("> {}", text.trim_end()));
                    self.out(&format!("{line}\n"));
                }
                "assistant" => {
                    self.message(text);
                    self.end_line();
                }
                "rewind" => {
                    let line = self.paint(DIM, &format!("[{}]", rewind_row(text)));
                    self.out(&format!("{line}\n"));
                }
                // A plan-mode turn's proposed plan (SPEC §26).
                "plan" => self.plan(text),
                // A failed turn's error row (SPEC §22): its message and the retries made.
                "error" => {
                    let line = format!("[error] {}", clip(&error_row(text), LINE_CHARS));
                    let line = self.paint(RED, &line);
                    self.out(&format!("{line}\n"));
                }
                other => {
                    let line = self.paint(DIM, &format!("[{other}] {}", clip(text, LINE_CHARS)));
                    self.out(&format!("{line}\n"));
                }
            }
        }
        let rule = self.paint(DIM, "──");
        self.out(&format!("{rule}\n"));
    }

    /// A turn from elsewhere starts while the line editor shows its prompt: the prompt's
    /// line is cleared (on a terminal) so the turn is shown from the start of a line.
    pub fn leave_prompt(&mut self) {
        if self.interactive && self.rich {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(b"\r\x1b[K");
            let _ = stdout.flush();
        }
        self.open_line = false;
    }

    /// Shows `prompt` again for the line the editor is still reading (a watched turn
    /// cleared it); the editor redraws the line as it is typed on.
    pub fn prompt_again(&mut self, prompt: &str) {
        if self.interactive && self.rich {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(prompt.as_bytes());
            let _ = stdout.flush();
        }
    }

    /// A prompt another client sent (SPEC §18 `user_message`): `> text`, dimmed, with its
    /// sender after it and the files it carried below.
    pub fn user_message(
        &mut self,
        text: &str,
        attachments: &[PromptAttachment],
        by: &str,
        truncated: bool,
    ) {
        self.end_line();
        let mut shown = String::new();
        let text = text.trim_end();
        for (i, line) in text.split('\n').enumerate() {
            shown.push_str(if i == 0 { "> " } else { "  " });
            shown.push_str(line);
            shown.push('\n');
        }
        if truncated {
            shown.push_str("  …\n");
        }
        // The sender goes on the last line of the text.
        shown.pop();
        shown.push_str(&format!(" · {by}\n"));
        for file in attachments {
            shown.push_str(&format!("  + {}\n", clip(&file.filename, LINE_CHARS)));
        }
        let shown = self.paint(DIM, shown.trim_end_matches('\n'));
        self.out(&format!("{shown}\n"));
    }

    /// The prompt for the next line (shown by the line editor).
    pub fn prompt_marker(&mut self) {
        self.end_line();
        if self.interactive {
            self.prompt = "> ".to_string();
        }
    }

    pub fn message(&mut self, text: &str) {
        if self.stream == Stream::Thought {
            self.end_line();
        }
        self.stream = Stream::Message;
        if self.rich {
            let rendered = self.markdown.push(text);
            self.out(&rendered);
        } else {
            self.out(text);
        }
    }

    /// A proposed plan (SPEC §26): under a heading, rendered like an answer, with how to
    /// accept it.
    pub fn plan(&mut self, plan: &str) {
        self.end_line();
        let head = self.paint(BOLD, "── proposed plan ──");
        self.out(&format!("{head}\n"));
        self.message(plan);
        self.end_line();
        let foot = self.paint(
            DIM,
            "── /implement carries it out; or keep talking in plan mode ──",
        );
        self.out(&format!("{foot}\n"));
    }

    pub fn thought(&mut self, text: &str) {
        if self.stream != Stream::Thought {
            self.end_line();
            let prefix = self.paint(DIM, "thinking: ");
            self.out(&prefix);
            self.stream = Stream::Thought;
        }
        let text = self.paint(DIM, text);
        self.out(&text);
    }

    pub fn tool_call(&mut self, call_id: &str, name: &str, input: &Value) {
        self.end_line();
        let line = format!("⚙ {}", tool_line::describe(name, input));
        let line = self.paint(CYAN, line.trim_end());
        self.out(&format!("{line}\n"));
        if self.rich {
            self.live.start(call_id);
        }
    }

    /// A piece of the running tool's output: its last lines and clock, redrawn in place.
    /// `draw`: false while a question is asked (its line must stay as it is).
    pub fn tool_output(&mut self, call_id: &str, text: &str, draw: bool) {
        if self.live.chunk(call_id, text) && draw {
            self.redraw_live();
        }
    }

    /// Whether a running tool's clock is shown (it is redrawn on the spinner's ticks).
    pub fn live_running(&self) -> bool {
        self.live.is_running()
    }

    /// Draws the running tool's block again (new lines, or the clock moved on).
    pub fn redraw_live(&mut self) {
        if !self.live.is_running() || self.open_line {
            return;
        }
        let color = self.color;
        let mut text = self.live.erase();
        text.push_str(&self.live.draw(|s| {
            if color {
                format!("{DIM}{s}{RESET}")
            } else {
                s.to_owned()
            }
        }));
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }

    pub fn tool_result(&mut self, _name: &str, output: &Value) {
        self.live.finish();
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

    /// Asks to allow a call, showing what it will do whole (a long command wrapped, never
    /// cut: SPEC §22).
    pub fn ask_approval(&mut self, tool: &str, summary: &str) {
        self.end_line();
        let shown = summary.trim_end();
        if !shown.contains('\n') && shown.chars().count() <= LINE_CHARS / 2 {
            let question = format!("allow {tool} `{shown}`? [y]es/[n]o/[a]lways ");
            self.ask("", &question);
            return;
        }
        let head = format!(
            "allow {tool}?\n{}",
            tool_line::wrap(shown, LINE_CHARS / 2, "  │ ")
        );
        self.ask(&head, "[y]es/[n]o/[a]lways ");
    }

    /// A turn paused by a budget (SPEC §24.2): `r` raises it by `raise_by` (or `r N` by
    /// N), `s` stops the turn.
    pub fn ask_budget(&mut self, budget: &str, used: f64, limit: f64, raise_by: f64) {
        self.end_line();
        let question = format!(
            "budget {budget}: {used} used of {limit}; [r]aise by {raise_by} (r N: by N)/[s]top "
        );
        self.ask("", &question);
    }

    pub fn ask_elicitation(&mut self, req: &ElicitationRequest) {
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
        self.ask(&text, hint);
    }

    /// With stdin not a terminal the typed answer is not on the screen: show it.
    pub fn echo_answer(&mut self, line: &str) {
        if self.interactive {
            self.open_line = false;
        } else {
            self.out(&format!("{}\n", line.trim()));
        }
    }

    /// Plain lines on stdout (command output such as `/help`).
    pub fn print(&mut self, text: &str) {
        self.end_line();
        self.out(text);
        if !text.ends_with('\n') {
            self.out("\n");
        }
    }

    pub fn note(&mut self, text: &str) {
        self.end_line();
        eprintln!("{}", self.paint(DIM, &format!("[{text}]")));
    }

    pub fn error(&mut self, text: &str) {
        self.end_line();
        eprintln!("{}", self.paint(RED, &format!("error: {text}")));
    }

    /// Leaves the process at once (Ctrl-C).
    pub fn exit(&mut self, code: i32) -> ! {
        super::quiet::restore();
        self.end_line();
        let _ = std::io::stdout().flush();
        std::process::exit(code)
    }
}

/// At most `max` characters, with an ellipsis when cut; newlines shown as `⏎`.
/// The message of a client error without the JSON around it.
pub fn message(e: &ClientError) -> String {
    match e {
        ClientError::Rpc(e) => format!("{} (code {})", e.message, e.code),
        other => other.to_string(),
    }
}

pub fn clip(text: &str, max: usize) -> String {
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
