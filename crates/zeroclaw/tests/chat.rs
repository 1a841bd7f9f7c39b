//! `zeroclaw chat` driven through a pipe: against a scripted daemon (tool calls,
//! approvals, questions, errors, Ctrl-C) and against the real one (the echo agent).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::{BIN, TestDaemon};

fn chat_command(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("chat")
        .args(args)
        .env_remove("ZEROCLAW_SOCKET")
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .env_remove("ZEROCLAW_DATA_DIR")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// A running `zeroclaw chat` whose output is collected on threads.
struct Chat {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: JoinHandle<String>,
    stderr: JoinHandle<String>,
    /// The stderr read so far.
    stderr_so_far: Arc<Mutex<String>>,
}

struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

fn collect(r: impl Read + Send + 'static) -> JoinHandle<String> {
    collect_into(r, Arc::default())
}

/// Like [`collect`], and `so_far` holds what was read until now.
fn collect_into(
    mut r: impl Read + Send + 'static,
    so_far: Arc<Mutex<String>>,
) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&chunk[..n]);
            *so_far.lock().unwrap_or_else(|p| p.into_inner()) =
                String::from_utf8_lossy(&bytes).into_owned();
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

impl Chat {
    fn start(args: &[&str]) -> Chat {
        let mut child = chat_command(args).spawn().expect("spawn chat");
        let stdin = child.stdin.take();
        let stdout = collect(child.stdout.take().unwrap());
        let stderr_so_far = Arc::default();
        let stderr = collect_into(child.stderr.take().unwrap(), Arc::clone(&stderr_so_far));
        Chat {
            child,
            stdin,
            stdout,
            stderr,
            stderr_so_far,
        }
    }

    /// Waits (up to 20 s) until the chat has written `text` to stderr.
    fn wait_stderr(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self
            .stderr_so_far
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(text)
        {
            assert!(Instant::now() < deadline, "no {text:?} on stderr");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Writes to stdin; a chat that already exited is not an error here (its exit status
    /// and output tell).
    fn write(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let _ = stdin.write_all(text.as_bytes());
        let _ = stdin.flush();
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    fn interrupt(&self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
    }

    /// Closes stdin and waits for the exit.
    fn finish(mut self) -> Finished {
        self.close_stdin();
        self.wait()
    }

    /// Waits for the exit with stdin still open.
    fn wait(mut self) -> Finished {
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "chat did not exit; stdout: {:?} stderr: {:?}",
                    self.stdout.join().unwrap(),
                    self.stderr.join().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        Finished {
            status,
            stdout: self.stdout.join().unwrap(),
            stderr: self.stderr.join().unwrap(),
        }
    }
}

/// Runs chat with `input` as all of stdin.
fn chat(args: &[&str], input: &str) -> Finished {
    let mut chat = Chat::start(args);
    chat.write(input);
    chat.finish()
}

// ---------------------------------------------------------------------------------------
// A scripted daemon: one connection, the test plays the daemon's side line by line.

struct Peer {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Peer {
    fn recv(&mut self) -> Value {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).expect("read from chat");
        assert!(n > 0, "chat closed the connection");
        serde_json::from_str(&line).expect("chat sent JSON")
    }

    /// The next message, which must be a request for `method`.
    fn expect(&mut self, method: &str) -> Value {
        let msg = self.recv();
        assert_eq!(msg["method"], method, "unexpected message {msg}");
        msg
    }

    fn send(&mut self, msg: Value) {
        let mut line = msg.to_string();
        line.push('\n');
        self.writer
            .write_all(line.as_bytes())
            .expect("write to chat");
    }

    fn reply(&mut self, request: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
    }

    fn update(&mut self, params: Value) {
        let mut params = params;
        params["sessionId"] = json!("s-1");
        self.send(json!({"jsonrpc": "2.0", "method": "session/update", "params": params}));
    }

    /// Closes the connection as a daemon going away would.
    fn hang_up(&mut self) {
        let _ = self.writer.shutdown(std::net::Shutdown::Both);
    }

    /// `initialize` (with the elicitation capability) and `session/new`.
    fn handshake(&mut self, agent: &str) {
        let init = self.expect("initialize");
        assert_eq!(
            init["params"]["clientCapabilities"],
            json!({"elicitation": {}})
        );
        self.reply(&init, json!({"protocolVersion": 1}));
        let new = self.expect("session/new");
        assert_eq!(new["params"]["agentAlias"], agent);
        self.reply(
            &new,
            json!({"sessionId": "s-1", "agentAlias": agent, "mode": "acp", "messageCount": 0,
                   "workspaceDir": "/tmp/w", "resumed": false}),
        );
        // The banner (SPEC §22) is read from `session/status`.
        let status = self.expect("session/status");
        self.reply(
            &status,
            json!({"sessionId": "s-1", "mode": "acp", "agentAlias": agent,
                   "autonomy": "supervised", "model": "m", "activeTurnId": null,
                   "queuedPrompts": 0, "subscribers": 0,
                   "usage": {"sessionTotalTokens": 0, "contextTokens": 0, "contextWindow": 0},
                   "mcpServers": [], "sandbox": "off", "cwd": "/tmp/w", "provider": "openai"}),
        );
    }

    /// Ends a turn: `turn_complete`, then the answer to `prompt`.
    fn complete(&mut self, prompt: &Value, outcome: &str, content: &str) {
        let result =
            json!({"sessionId": "s-1", "turnId": "t", "outcome": outcome, "content": content});
        let mut update = result.clone();
        update["type"] = json!("turn_complete");
        self.update(update);
        self.reply(prompt, result);
    }
}

struct Scripted {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    script: JoinHandle<()>,
}

impl Scripted {
    fn start(script: impl FnOnce(&mut Peer) + Send + 'static) -> Scripted {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("fake.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let script = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(20)))
                .unwrap();
            let mut peer = Peer {
                reader: BufReader::new(stream.try_clone().unwrap()),
                writer: stream,
            };
            script(&mut peer);
            // Like a real daemon, keep the connection until the chat leaves (unless the
            // script hung up).
            let mut rest = Vec::new();
            let _ = peer.reader.read_to_end(&mut rest);
        });
        Scripted {
            _dir: dir,
            socket,
            script,
        }
    }

    fn socket(&self) -> &str {
        self.socket.to_str().unwrap()
    }

    /// Waits for the script, re-raising its panic.
    fn join(self) {
        if let Err(panic) = self.script.join() {
            std::panic::resume_unwind(panic);
        }
    }
}

#[test]
fn streams_tools_approvals_and_questions() {
    let daemon = Scripted::start(|peer| {
        peer.handshake("coder");
        let prompt = peer.expect("session/prompt");
        assert_eq!(
            prompt["params"],
            json!({"sessionId": "s-1", "prompt": "list the files"})
        );
        peer.update(json!({"type": "agent_thought_chunk", "text": "let me look"}));
        peer.update(json!({"type": "agent_message_chunk", "text": "Look"}));
        peer.update(json!({"type": "agent_message_chunk", "text": "ing."}));
        peer.update(
            json!({"type": "tool_call", "toolCallId": "tc_1", "name": "bash",
                           "rawInput": {"command": "ls"}}),
        );
        peer.update(
            json!({"type": "approval_request", "requestId": "ap-1", "toolName": "bash",
                           "argumentsSummary": "ls", "timeoutSecs": 120}),
        );
        let approve = peer.expect("session/approve");
        assert_eq!(
            approve["params"],
            json!({"sessionId": "s-1", "requestId": "ap-1", "decision": "allow_once"})
        );
        peer.reply(&approve, json!({"acknowledged": true}));
        let output: String = (1..=9).map(|i| format!("file{i}.txt\n")).collect();
        peer.update(
            json!({"type": "tool_result", "toolCallId": "tc_1", "name": "bash",
                           "rawOutput": output}),
        );
        // The same id as the chat's own first request: directions are separate.
        peer.send(
            json!({"jsonrpc": "2.0", "id": "zc-out-0", "method": "elicitation/create",
            "params": {"sessionId": "s-1", "mode": "form", "message": "Which one?",
                "requestedSchema": {"type": "object", "properties": {"choice": {"type": "string",
                    "oneOf": [{"const": "file1.txt", "title": "the first"},
                              {"const": "file2.txt", "title": "the second"}]}}}}}),
        );
        let answer = peer.recv();
        assert_eq!(answer["id"], "zc-out-0");
        assert_eq!(
            answer["result"],
            json!({"action": "accept", "content": {"choice": "file2.txt"}})
        );
        peer.update(
            json!({"type": "tool_call", "toolCallId": "tc_2", "name": "write_file",
                           "rawInput": {"path": "x", "content": "y"}}),
        );
        peer.update(json!({"type": "approval_request", "requestId": "ap-2",
                           "toolName": "write_file", "argumentsSummary": "x (1 bytes)",
                           "timeoutSecs": 120}));
        let approve = peer.expect("session/approve");
        assert_eq!(approve["params"]["decision"], "reject");
        peer.reply(&approve, json!({"acknowledged": true}));
        peer.update(
            json!({"type": "tool_result", "toolCallId": "tc_2", "name": "write_file",
                           "rawOutput": "The user refused to run this tool call."}),
        );
        peer.send(
            json!({"jsonrpc": "2.0", "id": "zc-out-1", "method": "elicitation/create",
            "params": {"sessionId": "s-1", "mode": "form", "message": "Anything else?",
                "requestedSchema": {"type": "object",
                    "properties": {"answer": {"type": "string"}}}}}),
        );
        let answer = peer.recv();
        assert_eq!(
            answer["result"],
            json!({"action": "accept", "content": {"answer": "no thanks"}})
        );
        peer.update(json!({"type": "agent_message_chunk", "text": " Done."}));
        peer.complete(&prompt, "completed", "Looking. Done.");

        // The second prompt fails at the daemon; the chat goes on to the third.
        let prompt = peer.expect("session/prompt");
        peer.send(json!({"jsonrpc": "2.0", "id": prompt["id"],
                         "error": {"code": -32002, "message": "session s-1 is busy"}}));
        let prompt = peer.expect("session/prompt");
        assert_eq!(prompt["params"]["prompt"], "third");
        peer.update(json!({"type": "agent_message_chunk", "text": "partial"}));
        peer.complete(&prompt, "failed", "provider returned HTTP 500: boom");
        let prompt = peer.expect("session/prompt");
        peer.update(
            json!({"type": "tool_call", "toolCallId": "tc_3", "name": "bash",
                           "rawInput": {"command": "rm -rf /"}}),
        );
        // Input ended before this question: rejected without asking.
        peer.update(
            json!({"type": "approval_request", "requestId": "ap-3", "toolName": "bash",
                           "argumentsSummary": "rm -rf /", "timeoutSecs": 120}),
        );
        let approve = peer.expect("session/approve");
        assert_eq!(approve["params"]["decision"], "reject");
        peer.reply(&approve, json!({"acknowledged": true}));
        peer.complete(&prompt, "completed", "ok");
    });
    let out = chat(
        &["--socket", daemon.socket(), "--agent", "coder"],
        // The line after each question answers it; "maybe" is not an answer (asked again).
        "list the files\nmaybe\ny\n2\nn\nno thanks\nsecond\nthird\nfourth\n",
    );
    daemon.join();
    // The third turn failed: with piped input the chat says so with status 1 (SPEC §22).
    assert_eq!(out.status.code(), Some(1), "{out:?}", out = out.stderr);
    let stdout = &out.stdout;
    for expected in [
        "thinking: let me look\nLooking.\n⚙ bash: ls\nallow bash `ls`? [y]es/[n]o/[a]lways maybe\n",
        "allow bash `ls`? [y]es/[n]o/[a]lways y\n  → file1.txt\n    file2.txt\n",
        "    … (5 more lines)\n",
        "? Which one?\n  1) the first\n  2) the second\nnumber (empty = no answer): 2\n",
        "allow write_file `x (1 bytes)`? [y]es/[n]o/[a]lways n\n",
        "? Anything else?\nanswer (empty = no answer): no thanks\n Done.\n",
        "partial\n",
        "⚙ bash: rm -rf /\n",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in {stdout}"
        );
    }
    // The file tool's line names its path (SPEC §22), not the JSON sent.
    assert!(stdout.contains("⚙ write_file: x (1 bytes)\n"), "{stdout}");
    assert!(!stdout.contains("file5.txt"), "{stdout}");
    assert!(!stdout.contains("\x1b["), "colours on a pipe: {stdout:?}");
    let stderr = &out.stderr;
    assert!(stderr.contains("session s-1 · agent coder"), "{stderr}");
    assert!(stderr.contains("answer y, n or a"), "{stderr}");
    assert!(
        stderr.contains("error: session s-1 is busy (code -32002)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: turn failed: provider returned HTTP 500: boom"),
        "{stderr}"
    );
    assert!(
        stderr.contains("rejected bash `rm -rf /`: no input left to ask; --approve="),
        "{stderr}"
    );
}

#[test]
fn empty_answer_declines_and_always_is_sent() {
    let daemon = Scripted::start(|peer| {
        peer.handshake("default");
        let prompt = peer.expect("session/prompt");
        peer.send(
            json!({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create",
            "params": {"sessionId": "s-1", "mode": "form", "message": "Name?",
                "requestedSchema": {"properties": {"answer": {"type": "string"}}}}}),
        );
        let answer = peer.recv();
        assert_eq!(
            answer,
            json!({"jsonrpc": "2.0", "id": 7, "result": {"action": "decline"}})
        );
        peer.update(
            json!({"type": "approval_request", "requestId": "ap-1", "toolName": "bash",
                           "argumentsSummary": "date", "timeoutSecs": 120}),
        );
        let approve = peer.expect("session/approve");
        assert_eq!(approve["params"]["decision"], "allow_always");
        peer.reply(&approve, json!({"acknowledged": true}));
        // An unknown request from the daemon gets an error, not silence.
        peer.send(json!({"jsonrpc": "2.0", "id": 8, "method": "roots/list", "params": {}}));
        let answer = peer.recv();
        assert_eq!(answer["id"], 8);
        assert_eq!(answer["error"]["code"], -32601);
        // No chunks streamed: the final content is printed.
        peer.complete(&prompt, "completed", "the answer");
    });
    let out = chat(&["--socket", daemon.socket()], "go\n\na\n");
    daemon.join();
    assert!(out.status.success(), "{}", out.stderr);
    assert!(out.stdout.ends_with("the answer\n"), "{}", out.stdout);
    assert!(out.stderr.contains("[declined]"), "{}", out.stderr);
}

#[test]
fn ctrl_c_cancels_the_turn_then_a_second_one_exits() {
    let (tx, rx) = std::sync::mpsc::channel::<&str>();
    let daemon = Scripted::start(move |peer| {
        peer.handshake("default");
        let prompt = peer.expect("session/prompt");
        peer.update(json!({"type": "agent_message_chunk", "text": "working"}));
        tx.send("streaming").unwrap();
        let cancel = peer.expect("session/cancel");
        assert_eq!(cancel["params"], json!({"sessionId": "s-1"}));
        peer.reply(&cancel, json!({"sessionId": "s-1", "cancelled": true}));
        peer.complete(&prompt, "cancelled", "working");
        // The next prompt: the chat is still there.
        let _prompt = peer.expect("session/prompt");
        tx.send("second").unwrap();
        // Never answered: the second Ctrl-C exits.
        let _ = peer.expect("session/cancel");
        tx.send("cancel again").unwrap();
    });
    let mut chat = Chat::start(&["--socket", daemon.socket()]);
    chat.write("first\n");
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)), Ok("streaming"));
    chat.interrupt();
    chat.write("second\n");
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)), Ok("second"));
    chat.interrupt();
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)), Ok("cancel again"));
    chat.interrupt();
    let out = chat.wait();
    daemon.join();
    assert_eq!(out.status.code(), Some(130), "{}", out.stderr);
    assert!(out.stdout.starts_with("working\n"), "{}", out.stdout);
    assert!(out.stderr.contains("[turn cancelled]"), "{}", out.stderr);
}

#[test]
fn ctrl_c_at_the_prompt_exits() {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let daemon = Scripted::start(move |peer| {
        peer.handshake("default");
        tx.send(()).unwrap();
    });
    let chat = Chat::start(&["--socket", daemon.socket()]);
    rx.recv_timeout(Duration::from_secs(20)).unwrap();
    // The header is printed once the session exists; then the chat waits for input.
    chat.wait_stderr("session s-1");
    chat.interrupt();
    let out = chat.wait();
    daemon.join();
    assert_eq!(out.status.code(), Some(130), "{}", out.stderr);
}

#[test]
fn daemon_errors_and_disconnects() {
    // session/new refused: non-zero, with the daemon's message.
    let daemon = Scripted::start(|peer| {
        let init = peer.expect("initialize");
        peer.reply(&init, json!({"protocolVersion": 1}));
        let new = peer.expect("session/new");
        peer.send(json!({"jsonrpc": "2.0", "id": new["id"],
            "error": {"code": -32602, "message": "unknown agent `nope`"}}));
    });
    let out = chat(&["--socket", daemon.socket(), "--agent", "nope"], "hi\n");
    daemon.join();
    assert!(!out.status.success());
    assert!(
        out.stderr.contains("unknown agent `nope`"),
        "{}",
        out.stderr
    );

    // The daemon goes away mid-turn: non-zero.
    let daemon = Scripted::start(|peer| {
        peer.handshake("default");
        let _prompt = peer.expect("session/prompt");
        peer.update(json!({"type": "agent_message_chunk", "text": "bye"}));
        peer.hang_up();
    });
    let out = chat(&["--socket", daemon.socket()], "hi\n");
    daemon.join();
    assert!(!out.status.success());
    assert_eq!(out.stdout, "bye\n", "{}", out.stderr);
    assert!(
        out.stderr.contains("closed the connection"),
        "{}",
        out.stderr
    );

    // Nothing listening.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.sock");
    let out = chat(&["--socket", missing.to_str().unwrap()], "hi\n");
    assert!(!out.status.success());
    assert!(out.stderr.contains("cannot connect"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------------------
// The real daemon with its offline `echo` agent.

fn config_dir_arg(dir: &Path) -> [&str; 2] {
    ["--config-dir", dir.to_str().unwrap()]
}

#[test]
fn echo_agent_over_the_real_daemon() {
    let daemon = TestDaemon::start();
    let out = chat(
        &config_dir_arg(daemon.config_dir()),
        "hello world\nsecond prompt, with punctuation!\n",
    );
    assert!(out.status.success(), "{}\n{}", out.stderr, daemon.log());
    assert!(out.stdout.contains("hello world\n"), "{}", out.stdout);
    assert!(
        out.stdout.contains("second prompt, with punctuation!\n"),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("agent default"), "{}", out.stderr);

    // --session resumes the same session.
    let args = config_dir_arg(daemon.config_dir());
    let mut with_id = args.to_vec();
    with_id.extend(["--session", "chat-test-1"]);
    let out = chat(&with_id, "one\n");
    assert!(out.status.success(), "{}", out.stderr);
    assert!(out.stderr.contains("session chat-test-1"), "{}", out.stderr);
    assert!(out.stdout.contains("one\n"), "{}", out.stdout);
    let out = chat(&with_id, "two\n");
    assert!(out.status.success(), "{}", out.stderr);
    assert!(out.stdout.contains("two\n"), "{}", out.stdout);

    // An unknown agent: the daemon's error, non-zero.
    let mut bad = args.to_vec();
    bad.extend(["--agent", "no-such-agent"]);
    let out = chat(&bad, "hi\n");
    assert!(!out.status.success());
    assert!(out.stderr.contains("session/new failed"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------------------
// The real daemon with an OpenAI-compatible fake provider: tools, approvals, ask-user.

#[test]
fn approvals_and_questions_over_the_real_daemon() {
    use zeroclaw_testkit::Scripted;

    let fake = common::Fake::start();
    fake.push(Scripted::tool_call(
        "call_1",
        "bash",
        json!({"command": "echo approved-output"}),
    ));
    fake.push(Scripted::tool_call(
        "call_2",
        "ask_user",
        json!({"question": "Pick a colour", "choices": ["red", "green"]}),
    ));
    fake.push(Scripted::text("all done"));
    // Second turn: refused, then always allowed.
    fake.push(Scripted::tool_call(
        "call_3",
        "bash",
        json!({"command": "echo never-run"}),
    ));
    fake.push(Scripted::tool_call(
        "call_4",
        "bash",
        json!({"command": "echo first-always"}),
    ));
    fake.push(Scripted::tool_call(
        "call_5",
        "bash",
        json!({"command": "echo second-always"}),
    ));
    fake.push(Scripted::text("finished"));
    let config = common::session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let out = chat(
        &config_dir_arg(daemon.config_dir()),
        "run it\ny\n2\nagain\nn\na\n",
    );
    assert!(out.status.success(), "{}\n{}", out.stderr, daemon.log());
    let stdout = &out.stdout;
    for expected in [
        "⚙ bash: echo approved-output\nallow bash `echo approved-output`? [y]es/[n]o/[a]lways y\n  → approved-output",
        "? Pick a colour\n  1) red\n  2) green\nnumber (empty = no answer): 2\n",
        "all done\n",
        "allow bash `echo never-run`? [y]es/[n]o/[a]lways n\n",
        "allow bash `echo first-always`? [y]es/[n]o/[a]lways a\n  → first-always",
        "⚙ bash: echo second-always\n  → second-always",
        "finished\n",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in\n{stdout}"
        );
    }
    // The rejected command's output never shows (its line names it: SPEC §22).
    assert!(!stdout.contains("→ never-run"), "{stdout}");
    // allow_always covered the second call: asked once.
    assert_eq!(stdout.matches("[y]es/[n]o/[a]lways").count(), 3, "{stdout}");
    // The model got the picked choice as the ask_user result.
    let requests = fake.requests();
    let sent = requests[2]["messages"].to_string();
    assert!(sent.contains("green"), "{sent}");
}

#[test]
fn slash_commands_and_resume_over_a_pipe() {
    let daemon = TestDaemon::start();
    let mut args = config_dir_arg(daemon.config_dir()).to_vec();
    args.extend(["--session", "slash-1"]);
    let out = chat(
        &args,
        "/help\nfirst prompt\n/bogus\n//etc/x\n/sessions\n/cancel\n/quit\nnever sent\n",
    );
    assert!(out.status.success(), "{}", out.stderr);
    assert!(
        out.stdout.contains("commands (not sent to the model)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("first prompt\n"), "{}", out.stdout);
    // `//x` sends `/x`.
    assert!(out.stdout.contains("/etc/x\n"), "{}", out.stdout);
    assert!(out.stdout.contains("ID"), "{}", out.stdout);
    assert!(out.stdout.contains("slash-1"), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("[unknown command /bogus; /help lists the commands]"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("[no turn is running in this session]"),
        "{}",
        out.stderr
    );
    let mut c = daemon.client();
    let sent: Vec<(String, String)> = common::roles(&c.messages("slash-1"))
        .into_iter()
        .filter(|(role, _)| role == "user")
        .collect();
    assert_eq!(
        sent,
        [
            ("user".to_string(), "first prompt".to_string()),
            ("user".to_string(), "/etc/x".to_string())
        ]
    );

    // Resumed: the earlier messages come first.
    let out = chat(&args, "");
    assert!(out.status.success(), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "── 4 earlier messages ──\n> first prompt\nfirst prompt\n> /etc/x\n/etc/x\n──\n"
    );
}
