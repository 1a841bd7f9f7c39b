//! Input of `zeroclaw chat`: on a terminal, a line editor (rustyline: editing keys,
//! history kept in the data dir) asked for one line at a time; otherwise stdin lines read
//! ahead on a thread of their own. And Ctrl-C, with the exit status it leaves
//! ([`INTERRUPTED`]).
//!
//! Type-ahead is kept, as a shell keeps it: lines typed while a turn streams wait in the
//! terminal, and keys the editor read past the end of a line (a fast `zebra crossing⏎/quit⏎`
//! arrives in one read) stay in its buffer for the next line (rustyline's `buffer-redux`
//! feature); each is handled in order once the chat asks for a line again.

use std::io::BufRead;
use std::path::PathBuf;

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{Config, Editor};
use tokio::sync::mpsc;

/// Exit status after Ctrl-C (128 + SIGINT).
pub const INTERRUPTED: i32 = 130;
/// Lines read ahead of the chat (the reading thread waits when they are not taken).
const LINES_AHEAD: usize = 64;
/// Prompts kept in the history file.
const HISTORY_LINES: usize = 1000;

/// What reading a line gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    Line(String),
    /// Ctrl-D, or the end of piped input.
    End,
    /// Ctrl-C while the editor was reading.
    Interrupt,
}

/// Where lines come from.
pub struct Input {
    source: Source,
    closed: bool,
    /// Text the next line starts with (the editor only).
    prefill: String,
}

enum Source {
    /// Piped stdin, read ahead.
    Lines(mpsc::Receiver<String>),
    /// The line editor on its own thread: one request, one line.
    Editor {
        requests: std::sync::mpsc::Sender<Request>,
        replies: mpsc::Receiver<Read>,
        /// A request was sent and its reply not yet taken.
        waiting: bool,
        /// The prompt of that request.
        reading: String,
    },
}

struct Request {
    prompt: String,
    /// Whether the line goes into the history (prompts do, answers to questions do not).
    remember: bool,
    /// Text already in the line, to edit (a rewound prompt).
    initial: String,
}

impl Input {
    /// Stdin lines read ahead (stdin is not a terminal).
    pub fn lines() -> Input {
        let (tx, rx) = mpsc::channel(LINES_AHEAD);
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
                        if tx.blocking_send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Input {
            source: Source::Lines(rx),
            closed: false,
            prefill: String::new(),
        }
    }

    /// The line editor, with its history in `history` (loaded now, saved after each
    /// remembered line).
    pub fn editor(history: Option<PathBuf>) -> Result<Input, String> {
        let config = Config::builder()
            .max_history_size(HISTORY_LINES)
            .map_err(|e| e.to_string())?
            .auto_add_history(false)
            .build();
        let mut editor: Editor<(), FileHistory> = Editor::with_config(config)
            .map_err(|e| format!("cannot start the line editor: {e}"))?;
        if let Some(path) = &history
            && path.exists()
            && let Err(e) = editor.load_history(path)
        {
            tracing::warn!("cannot read the chat history {}: {e}", path.display());
        }
        let (req_tx, req_rx) = std::sync::mpsc::channel::<Request>();
        let (reply_tx, reply_rx) = mpsc::channel(1);
        std::thread::spawn(move || {
            while let Ok(request) = req_rx.recv() {
                let read = match editor
                    .readline_with_initial(&request.prompt, (request.initial.as_str(), ""))
                {
                    Ok(line) => {
                        if request.remember && !line.trim().is_empty() {
                            let _ = editor.add_history_entry(line.as_str());
                            if let Some(path) = &history
                                && let Err(e) = editor.save_history(path)
                            {
                                tracing::warn!("cannot save the chat history: {e}");
                            }
                        }
                        Read::Line(line)
                    }
                    Err(ReadlineError::Interrupted) => Read::Interrupt,
                    Err(_) => Read::End,
                };
                let end = read == Read::End;
                if reply_tx.blocking_send(read).is_err() || end {
                    return;
                }
            }
        });
        Ok(Input {
            source: Source::Editor {
                requests: req_tx,
                replies: reply_rx,
                waiting: false,
                reading: String::new(),
            },
            closed: false,
            prefill: String::new(),
        })
    }

    /// Whether input has ended.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Whether the line editor is reading a line already (its prompt is on the screen).
    pub fn is_reading(&self) -> bool {
        matches!(self.source, Source::Editor { waiting: true, .. })
    }

    /// The prompt of the line the editor is reading already (a question asked meanwhile
    /// is answered on that line).
    pub fn reading_prompt(&self) -> Option<&str> {
        match &self.source {
            Source::Editor {
                waiting: true,
                reading,
                ..
            } => Some(reading),
            _ => None,
        }
    }

    /// Whether lines come from the line editor (text can be put in the line to edit).
    pub fn is_editor(&self) -> bool {
        matches!(self.source, Source::Editor { .. })
    }

    /// Puts `text` in the next line the editor asks for, to be edited and sent.
    pub fn prefill(&mut self, text: &str) {
        self.prefill = text.to_string();
    }

    /// The next line. `prompt` is shown by the editor (piped input shows none); a
    /// `remember`ed line goes into the history. Cancel-safe: a read that was started and
    /// dropped is finished by the next call (whose prompt is then not used).
    pub async fn next(&mut self, prompt: &str, remember: bool) -> Read {
        if self.closed {
            return Read::End;
        }
        let read = match &mut self.source {
            Source::Lines(rx) => rx.recv().await.map_or(Read::End, Read::Line),
            Source::Editor {
                requests,
                replies,
                waiting,
                reading,
            } => {
                if !*waiting {
                    *reading = prompt.to_string();
                    let request = Request {
                        prompt: prompt.to_string(),
                        remember,
                        initial: std::mem::take(&mut self.prefill),
                    };
                    if requests.send(request).is_err() {
                        self.closed = true;
                        return Read::End;
                    }
                    *waiting = true;
                }
                let read = replies.recv().await.unwrap_or(Read::End);
                *waiting = false;
                read
            }
        };
        self.closed = read == Read::End;
        read
    }
}

/// SIGINT (Ctrl-C), kept registered for the whole session so none is missed between
/// waits.
pub struct Interrupts {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupts {
    pub fn new() -> Result<Interrupts, String> {
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

    pub async fn recv(&mut self) {
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
