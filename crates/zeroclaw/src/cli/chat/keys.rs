//! One key answers an approval on a terminal (issue 46, SPEC §22): `y`, `n` or `a` without
//! Enter (Enter alone rejects, as an empty line did). While the question waits, the
//! terminal reads key by key without echo; its settings are put back when the reader is
//! dropped (answered, withdrawn, or the turn ended). A thread waits for the keys, looking
//! every 100 ms whether it should stop, and reads one byte at a time so nothing meant for
//! the line editor afterwards is taken.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;

/// How often the key thread looks whether it should stop.
#[cfg(unix)]
const STOP_CHECK_MS: u16 = 100;
/// Keys read ahead of the chat (a person types a few at most).
#[cfg(unix)]
const KEYS_AHEAD: usize = 8;

/// What a key means to an approval.
#[derive(Debug, PartialEq, Eq)]
pub enum Key {
    /// `y`, `n`, `a` (either case), or `""` for Enter.
    Answer(&'static str),
    /// Ctrl-D: no more input.
    End,
    /// Anything else: not an answer.
    Other,
}

impl Key {
    fn of(byte: u8) -> Key {
        match byte.to_ascii_lowercase() {
            b'y' => Key::Answer("y"),
            b'n' => Key::Answer("n"),
            b'a' => Key::Answer("a"),
            b'\r' | b'\n' => Key::Answer(""),
            0x04 => Key::End,
            _ => Key::Other,
        }
    }
}

/// Keys from the terminal, one at a time, until dropped.
pub struct Keys {
    stop: Arc<AtomicBool>,
    rx: mpsc::Receiver<u8>,
    #[cfg(unix)]
    saved: nix::sys::termios::Termios,
}

impl Keys {
    /// Starts reading keys; `None` when stdin is not a terminal or its mode cannot be set
    /// (the question is then answered with a line).
    #[cfg(unix)]
    pub fn start() -> Option<Keys> {
        use nix::sys::termios::{self, LocalFlags, SetArg, SpecialCharacterIndices};
        use std::io::IsTerminal;

        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return None;
        }
        let saved = termios::tcgetattr(&stdin).ok()?;
        let mut keys = saved.clone();
        keys.local_flags
            .remove(LocalFlags::ICANON | LocalFlags::ECHO);
        keys.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
        keys.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
        termios::tcsetattr(&stdin, SetArg::TCSANOW, &keys).ok()?;
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel(KEYS_AHEAD);
        let stopped = Arc::clone(&stop);
        std::thread::spawn(move || read_keys(&stopped, &tx));
        Some(Keys { stop, rx, saved })
    }

    #[cfg(not(unix))]
    pub fn start() -> Option<Keys> {
        None
    }

    /// The next key (`End` if the reader stopped).
    pub async fn next(&mut self) -> Key {
        match self.rx.recv().await {
            Some(byte) => Key::of(byte),
            None => Key::End,
        }
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        #[cfg(unix)]
        {
            let _ = nix::sys::termios::tcsetattr(
                std::io::stdin(),
                nix::sys::termios::SetArg::TCSANOW,
                &self.saved,
            );
        }
    }
}

/// The key thread: waits for stdin to be readable (looking at `stop` between waits) and
/// reads one byte at a time.
#[cfg(unix)]
fn read_keys(stop: &AtomicBool, tx: &mpsc::Sender<u8>) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

    let stdin = std::io::stdin();
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let mut fds = [PollFd::new(
            std::os::fd::AsFd::as_fd(&stdin),
            PollFlags::POLLIN,
        )];
        match poll(&mut fds, PollTimeout::from(STOP_CHECK_MS)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
        }
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let mut byte = [0u8; 1];
        match nix::unistd::read(&stdin, &mut byte) {
            Ok(1) => {
                if tx.blocking_send(byte[0]).is_err() {
                    return;
                }
            }
            Ok(_) => return,
            Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => continue,
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Key;

    #[test]
    fn keys_that_answer() {
        assert_eq!(Key::of(b'y'), Key::Answer("y"));
        assert_eq!(Key::of(b'N'), Key::Answer("n"));
        assert_eq!(Key::of(b'a'), Key::Answer("a"));
        assert_eq!(Key::of(b'\r'), Key::Answer(""));
        assert_eq!(Key::of(4), Key::End);
        assert_eq!(Key::of(b'q'), Key::Other);
    }
}
