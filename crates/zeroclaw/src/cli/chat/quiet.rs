//! Keys typed while a turn streams are not echoed into the streamed text (issue 46): while
//! the chat shows a turn and the line editor is not reading, the terminal's echo is off.
//! What is typed meanwhile stays in the terminal's input and is read, and shown, by the
//! editor at the next prompt. The terminal is put back when the turn ends, and before the
//! process exits ([`restore`]).

#[cfg(unix)]
use std::sync::Mutex;

#[cfg(unix)]
use nix::sys::termios::{self, LocalFlags, SetArg, Termios};

/// The terminal settings to put back, while echo is off.
#[cfg(unix)]
static SAVED: Mutex<Option<Termios>> = Mutex::new(None);

/// Echo off until dropped (nothing when stdin is not a terminal or echo is off already).
pub struct Quiet {
    active: bool,
}

impl Quiet {
    pub fn start() -> Quiet {
        Quiet { active: echo_off() }
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        if self.active {
            restore();
        }
    }
}

#[cfg(unix)]
fn echo_off() -> bool {
    use std::io::IsTerminal;
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return false;
    }
    let mut saved = SAVED.lock().unwrap_or_else(|p| p.into_inner());
    if saved.is_some() {
        return false;
    }
    let Ok(now) = termios::tcgetattr(&stdin) else {
        return false;
    };
    if !now.local_flags.contains(LocalFlags::ECHO) {
        return false;
    }
    let mut quiet = now.clone();
    quiet.local_flags.remove(LocalFlags::ECHO);
    if termios::tcsetattr(&stdin, SetArg::TCSANOW, &quiet).is_err() {
        return false;
    }
    *saved = Some(now);
    true
}

#[cfg(not(unix))]
fn echo_off() -> bool {
    false
}

/// Puts the terminal's settings back if echo was turned off (also before an exit).
pub fn restore() {
    #[cfg(unix)]
    {
        let mut saved = SAVED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(settings) = saved.take() {
            let _ = termios::tcsetattr(std::io::stdin(), SetArg::TCSANOW, &settings);
        }
    }
}
