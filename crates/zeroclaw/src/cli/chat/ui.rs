//! Output of `zeroclaw chat`: streamed text, tool calls and results, notes and questions,
//! with colours only on a terminal.

use std::io::{IsTerminal, Write};

use serde_json::Value;
use zeroclaw_client::{ElicitationRequest, SessionInfo};

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

/// The terminal: where the cursor is, and whether to colour.
pub struct Ui {
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
    pub fn new() -> Ui {
        Ui {
            color: std::io::stdout().is_terminal(),
            interactive: std::io::stdin().is_terminal(),
            open_line: false,
            stream: Stream::None,
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
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
        self.open_line = !text.ends_with('\n');
    }

    /// Finishes an unfinished stdout line.
    pub fn end_line(&mut self) {
        if self.open_line {
            self.out("\n");
        }
        self.stream = Stream::None;
    }

    pub fn header(&mut self, info: &SessionInfo) {
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

    pub fn prompt_marker(&mut self) {
        if self.interactive {
            self.end_line();
            let marker = self.paint(BOLD, "> ");
            self.out(&marker);
        }
    }

    pub fn message(&mut self, text: &str) {
        if self.stream == Stream::Thought {
            self.end_line();
        }
        self.stream = Stream::Message;
        self.out(text);
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

    pub fn tool_call(&mut self, name: &str, input: &Value) {
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

    pub fn tool_result(&mut self, _name: &str, output: &Value) {
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

    pub fn ask_approval(&mut self, tool: &str, summary: &str) {
        self.end_line();
        let question = format!(
            "allow {tool} `{}`? [y]es/[n]o/[a]lways ",
            clip(summary, LINE_CHARS)
        );
        let question = self.paint(YELLOW, &question);
        self.out(&question);
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
        text.push_str(&self.paint(YELLOW, hint));
        self.out(&text);
    }

    /// With stdin not a terminal the typed answer is not on the screen: show it.
    pub fn echo_answer(&mut self, line: &str) {
        if self.interactive {
            self.open_line = false;
        } else {
            self.out(&format!("{}\n", line.trim()));
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
        self.end_line();
        let _ = std::io::stdout().flush();
        std::process::exit(code)
    }
}

/// At most `max` characters, with an ellipsis when cut; newlines shown as `⏎`.
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
