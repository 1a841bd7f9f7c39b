//! `zeroclaw chat` on a pseudo-terminal, read the way a person reads it: what the terminal
//! shows ([`crate::screen::Screen`]), not the bytes. Used by the chat's own tests and by the
//! dashboard's, where a terminal and a browser share one session.

use std::path::Path;
use std::process::Command;

use rexpect::process::WaitStatus;
use rexpect::session::{PtySession, spawn_command};

use crate::screen::Screen;

/// A chat on a pty, and everything it wrote so far.
pub struct ChatWindow {
    p: PtySession,
    seen: String,
}

impl ChatWindow {
    /// `zeroclaw chat` on a pty, without colours, waiting up to 20 s per expect.
    pub fn open(config_dir: &Path, args: &[&str]) -> ChatWindow {
        Self::open_in(config_dir, None, args)
    }

    /// [`ChatWindow::open`] run from directory `dir` (the chat's project directory, SPEC
    /// §22) when given.
    pub fn open_in(config_dir: &Path, dir: Option<&Path>, args: &[&str]) -> ChatWindow {
        Self::spawn(Command::new(crate::daemon::BIN), config_dir, dir, args)
    }

    /// [`ChatWindow::open`] on a pty that echoes what is typed, as a person's terminal
    /// does (the pty of `open` has echo off): keys typed while the chat is not reading
    /// show unless the chat turns echo off.
    pub fn open_echoing(config_dir: &Path, args: &[&str]) -> ChatWindow {
        let mut sh = Command::new("/bin/sh");
        sh.arg("-c")
            .arg("stty echo && exec \"$0\" \"$@\"")
            .arg(crate::daemon::BIN);
        Self::spawn(sh, config_dir, None, args)
    }

    fn spawn(mut cmd: Command, config_dir: &Path, dir: Option<&Path>, args: &[&str]) -> ChatWindow {
        if let Some(dir) = dir {
            cmd.current_dir(dir);
        }
        cmd.arg("chat")
            .arg("--config-dir")
            .arg(config_dir)
            .args(args)
            .env_remove("ZEROCLAW_SOCKET")
            .env_remove("ZEROCLAW_CONFIG_DIR")
            .env_remove("ZEROCLAW_DATA_DIR")
            .env("NO_COLOR", "1")
            .env("TERM", "xterm")
            .env("RUST_LOG", "warn");
        let p = spawn_command(cmd, Some(20_000)).expect("spawn chat on a pty");
        ChatWindow {
            p,
            seen: String::new(),
        }
    }

    /// Waits for `needle` in the output (bytes, as written); everything read is kept.
    pub fn expect(&mut self, needle: &str) {
        let raw: String = needle.bytes().map(char::from).collect();
        match self.p.exp_string(&raw) {
            Ok(before) => {
                self.seen.push_str(&before);
                self.seen.push_str(&raw);
            }
            Err(e) => panic!(
                "expected {needle:?}; the screen shows:\n{}\n({e})",
                self.screen().join("\n")
            ),
        }
    }

    /// The lines on the screen now.
    pub fn screen(&self) -> Vec<String> {
        let bytes: Vec<u8> = self.seen.chars().map(|c| c as u8).collect();
        Screen::of(&String::from_utf8_lossy(&bytes)).lines()
    }

    pub fn send(&mut self, keys: &str) {
        self.p.send(keys).expect("send keys");
        self.p.flush().expect("flush keys");
    }

    /// Waits for the line editor's prompt.
    pub fn prompt(&mut self) {
        self.expect("> ");
    }

    /// Waits for the end of a turn: the token usage note comes last.
    pub fn turn_end(&mut self) {
        self.expect(" out · context ");
        self.expect("]");
    }

    /// Ctrl-D at the prompt: the chat ends with status 0.
    pub fn leave(mut self) {
        self.p.send_control('d').expect("Ctrl-D");
        self.exits();
    }

    /// The chat ends by itself with status 0.
    pub fn exits(mut self) {
        if let Err(e) = self.p.exp_eof() {
            panic!(
                "the chat did not end; the screen shows:\n{}\n({e})",
                self.screen().join("\n")
            );
        }
        match self.p.process_mut().wait().expect("wait") {
            WaitStatus::Exited(_, 0) => {}
            other => panic!("chat ended with {other:?}"),
        }
    }
}
