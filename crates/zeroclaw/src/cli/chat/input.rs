//! Input of `zeroclaw chat`: stdin lines read on a thread of their own, and Ctrl-C.

use std::io::BufRead;

use tokio::sync::mpsc;

/// Lines read ahead of the chat (the reading thread waits when they are not taken).
const LINES_AHEAD: usize = 64;

/// Lines of stdin, read on a thread of their own (blocking reads never hold the runtime,
/// and a pending read does not keep the process alive at exit).
pub struct Input {
    rx: mpsc::Receiver<String>,
    closed: bool,
}

impl Input {
    pub fn spawn() -> Input {
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
        Input { rx, closed: false }
    }

    /// Whether stdin has ended.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    pub async fn next(&mut self) -> Option<String> {
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
