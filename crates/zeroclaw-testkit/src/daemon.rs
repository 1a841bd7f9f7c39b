//! The shared test client of the end-to-end tests: starts the real `zeroclaw` binary on a
//! temporary config dir and speaks raw NDJSON to it over its Unix socket ([`TestDaemon`],
//! [`Conn`]), or through `zeroclaw connect` as another uid ([`UidConn`]). Test crates
//! re-export this module as their `tests/common` module, so a test file reads `common::…`
//! in whichever crate it sits.
//!
//! The binary is found once ([`bin_path`]): `ZEROCLAW_TEST_BIN` when set, else `zeroclaw`
//! next to the test executable (`target/<profile>/zeroclaw`, the parent of its `deps`
//! dir), where `cargo test --workspace` builds it.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use crate::fake::{Fake, Served};
pub use crate::frames::{roles, streamed_text, update_types, updates, updates_of};

/// The `zeroclaw` binary the tests run, usable wherever a program's path is:
/// `Command::new(BIN)`, `.arg(BIN)`, `format!("{BIN}")`, `BIN.display()`.
pub const BIN: Bin = Bin;

/// The type of [`BIN`]: the path [`bin_path`] finds, looked up on first use.
#[derive(Clone, Copy, Debug)]
pub struct Bin;

impl std::ops::Deref for Bin {
    type Target = Path;
    fn deref(&self) -> &Path {
        bin_path()
    }
}

impl AsRef<OsStr> for Bin {
    fn as_ref(&self) -> &OsStr {
        bin_path().as_os_str()
    }
}

impl AsRef<Path> for Bin {
    fn as_ref(&self) -> &Path {
        bin_path()
    }
}

impl From<Bin> for PathBuf {
    fn from(_: Bin) -> PathBuf {
        bin_path().to_path_buf()
    }
}

impl From<Bin> for OsString {
    fn from(_: Bin) -> OsString {
        bin_path().as_os_str().to_owned()
    }
}

impl fmt::Display for Bin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        bin_path().display().fmt(f)
    }
}

/// The `zeroclaw` binary: `ZEROCLAW_TEST_BIN` (for example a release build, to take
/// benchmark figures such as `providers_latency` from the shipped profile; such a binary
/// has no test hooks, so only tests that need none can use it), else `zeroclaw` in the
/// directory the test executable was built for (`target/<profile>/`, the parent of its
/// `deps` dir). Panics, saying how to build it, when it is not there or older than its
/// sources (`bin_fresh`).
pub fn bin_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(find_bin)
}

fn find_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("ZEROCLAW_TEST_BIN") {
        let bin = PathBuf::from(bin);
        assert!(
            bin.is_file(),
            "ZEROCLAW_TEST_BIN={} is not a file",
            bin.display()
        );
        return bin;
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    let mut dir = exe.parent().expect("the test executable's directory");
    if dir.file_name() == Some(OsStr::new("deps")) {
        dir = dir.parent().expect("the directory above deps");
    }
    let bin = dir.join(format!("zeroclaw{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "the zeroclaw binary is missing: {} does not exist. The end-to-end tests run the \
         real binary; build it with its test hooks first: `cargo test --workspace` does \
         (or `cargo build -p zeroclaw --features test-hooks`), or set ZEROCLAW_TEST_BIN to \
         a zeroclaw binary",
        bin.display()
    );
    crate::bin_fresh::check(&bin);
    bin
}

/// The daemon the tests start: [`bin_path`].
pub fn daemon_bin() -> OsString {
    BIN.into()
}

/// A daemon process on its own temp config dir, stopped (SIGKILL) when dropped.
pub struct TestDaemon {
    pub dir: tempfile::TempDir,
    pub child: Option<Child>,
    pub socket: PathBuf,
    pub stderr_path: PathBuf,
}

pub fn daemon_command(config_dir: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(daemon_bin());
    cmd.arg("daemon")
        .arg("--config-dir")
        .arg(config_dir)
        .args(extra);
    cmd.env_remove("ZEROCLAW_SOCKET")
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .env_remove("ZEROCLAW_DATA_DIR")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    cmd
}

impl TestDaemon {
    pub fn start() -> TestDaemon {
        Self::start_with(&[], |_| {})
    }

    /// Starts with extra daemon args; `prepare` may write files into the config dir first.
    pub fn start_with(extra: &[&str], prepare: impl FnOnce(&Path)) -> TestDaemon {
        let mut daemon = Self::prepared(prepare);
        daemon.spawn(extra);
        daemon
    }

    /// A temp config dir that `prepare` filled, with no process started yet.
    fn prepared(prepare: impl FnOnce(&Path)) -> TestDaemon {
        let dir = tempfile::tempdir().expect("tempdir");
        prepare(dir.path());
        TestDaemon {
            stderr_path: dir.path().join("daemon.log"),
            socket: dir.path().join("data").join("daemon.sock"),
            dir,
            child: None,
        }
    }

    pub fn config_dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn spawn(&mut self, extra: &[&str]) {
        self.spawn_inner(extra, &[], true);
    }

    /// Starts without probing the socket with a connection (ephemeral mode counts a probe
    /// as a client): waits for the socket file instead.
    pub fn start_unprobed(extra: &[&str]) -> TestDaemon {
        Self::start_unprobed_with(extra, |_| {})
    }

    /// [`TestDaemon::start_unprobed`] after `prepare` wrote files into the config dir.
    pub fn start_unprobed_with(extra: &[&str], prepare: impl FnOnce(&Path)) -> TestDaemon {
        let mut daemon = Self::prepared(prepare);
        daemon.spawn_unprobed(extra);
        daemon
    }

    /// Starts again without probing the socket (see [`TestDaemon::start_unprobed`]).
    pub fn spawn_unprobed(&mut self, extra: &[&str]) {
        self.spawn_inner(extra, &[], false);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.socket.exists() {
            assert!(Instant::now() < deadline, "socket never appeared");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn spawn_inner(&mut self, extra: &[&str], env: &[(&str, &str)], probe: bool) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.stderr_path)
            .expect("log file");
        let child = daemon_command(self.dir.path(), extra)
            .envs(env.iter().copied())
            .stderr(log)
            .spawn()
            .expect("spawn daemon");
        self.child = Some(child);
        if probe {
            wait_for_socket(&self.socket, self.child.as_mut());
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    pub fn connect(&self) -> Conn {
        Conn::open(&self.socket)
    }

    /// A connection that has completed `initialize`.
    pub fn client(&self) -> Conn {
        let mut conn = self.connect();
        let init = conn.call("initialize", json!({"protocolVersion": 1}));
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        conn
    }

    #[allow(unsafe_code)]
    pub fn signal(&self, sig: i32) {
        if let Some(child) = &self.child {
            // SAFETY: sending a signal to our own child process.
            unsafe { libc::kill(child.id() as i32, sig) };
        }
    }

    /// Waits for the process to exit on its own.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Polls until the socket accepts a connection (or the process died).
pub fn wait_for_socket(socket: &Path, mut child: Option<&mut Child>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if UnixStream::connect(socket).is_ok() {
            return;
        }
        if let Some(child) = child.as_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            panic!("daemon exited early with {status}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("daemon did not open {}", socket.display());
}

/// One raw NDJSON connection.
pub struct Conn {
    pub stream: UnixStream,
    reader: BufReader<UnixStream>,
    next_id: u64,
}

impl Conn {
    pub fn open(socket: &Path) -> Conn {
        let stream = UnixStream::connect(socket).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let reader = BufReader::new(stream.try_clone().expect("clone"));
        Conn {
            stream,
            reader,
            next_id: 1,
        }
    }

    pub fn send(&mut self, text: &str) {
        self.stream.write_all(text.as_bytes()).expect("write");
        if !text.ends_with('\n') {
            self.stream.write_all(b"\n").expect("write");
        }
    }

    /// Reads one line as JSON; panics on timeout or EOF.
    pub fn recv(&mut self) -> Value {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).expect("read line");
        assert!(n > 0, "connection closed while a message was expected");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("daemon sent invalid JSON {line:?}: {e}"))
    }

    /// Reads until the next message answering `id`, skipping notifications.
    pub fn recv_response(&mut self, id: &Value) -> Value {
        loop {
            let msg = self.recv();
            if msg.get("id") == Some(id) && msg.get("method").is_none() {
                return msg;
            }
        }
    }

    /// Sends a request with a fresh numeric id and returns the whole response message.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&line.to_string());
        self.recv_response(&json!(id))
    }

    /// Like [`Conn::call`] but `None` when the connection breaks instead of panicking.
    pub fn call_or_closed(&mut self, method: &str, params: Value) -> Option<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.stream.write_all(format!("{line}\n").as_bytes()).ok()?;
        loop {
            let mut text = String::new();
            match self.reader.read_line(&mut text) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let msg: Value = serde_json::from_str(&text).ok()?;
            if msg.get("id") == Some(&json!(id)) {
                return Some(msg);
            }
        }
    }

    /// The `result` of a call, panicking with the error otherwise.
    pub fn result(&mut self, method: &str, params: Value) -> Value {
        let resp = self.call(method, params);
        match resp.get("result") {
            Some(result) => result.clone(),
            None => panic!("{method} failed: {resp}"),
        }
    }

    /// The `error` of a call, panicking on success.
    pub fn error(&mut self, method: &str, params: Value) -> Value {
        let resp = self.call(method, params);
        match resp.get("error") {
            Some(error) => error.clone(),
            None => panic!("{method} unexpectedly succeeded: {resp}"),
        }
    }

    /// Whether nothing arrives within `wait`.
    pub fn silent_for(&mut self, wait: Duration) -> bool {
        self.stream.set_read_timeout(Some(wait)).expect("timeout");
        let mut line = String::new();
        let got = self.reader.read_line(&mut line);
        self.stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        match got {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        }
    }

    /// Whether the daemon closed the connection (EOF or reset) within `wait`.
    pub fn closed_within(&mut self, wait: Duration) -> bool {
        self.stream.set_read_timeout(Some(wait)).expect("timeout");
        let mut sink = Vec::new();
        loop {
            let mut buf = [0u8; 65536];
            match self.reader.read(&mut buf) {
                Ok(0) => return true,
                Ok(n) => sink.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }
}

pub fn code(error: &Value) -> i64 {
    error["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no code in {error}"))
}

// ----- sessions and turns ---------------------------------------------------------------

/// A config with agent `default` on the fake provider at `base_url`, agent `echo` on the
/// offline echo provider, and `extra` TOML appended.
pub fn session_config(base_url: &str, extra: &str) -> String {
    format!(
        r#"[providers.fake]
kind = "openai"
base_url = "{base_url}"
model = "m"
timeout_secs = 10

[providers.echo]
kind = "echo"

[agents.default]
provider = "fake"
tools = ["bash", "read_file", "write_file", "ask_user"]
autonomy = "supervised"
max_tool_iterations = 5

[agents.echo]
provider = "echo"

{extra}
"#
    )
}

impl TestDaemon {
    /// Starts with extra environment variables (the test-only hooks).
    pub fn start_env(
        extra: &[&str],
        env: &[(&str, &str)],
        prepare: impl FnOnce(&Path),
    ) -> TestDaemon {
        let mut daemon = Self::prepared(prepare);
        daemon.spawn_env(extra, env);
        daemon
    }

    /// (Re)starts the process on the same directory with extra environment variables.
    pub fn spawn_env(&mut self, extra: &[&str], env: &[(&str, &str)]) {
        self.spawn_inner(extra, env, true);
    }

    /// SIGKILL, and reap the process.
    pub fn kill_hard(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A connection initialized with the elicitation capability.
    pub fn eliciting_client(&self) -> Conn {
        let mut conn = self.connect();
        let init = conn.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"elicitation": {}}}),
        );
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        conn
    }
}

impl Conn {
    /// Sends a request with a fresh numeric id without waiting; returns the id.
    pub fn send_call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&line.to_string());
        json!(id)
    }

    /// Reads until the response to `id`: (every other message before it, the response).
    pub fn collect_until(&mut self, id: &Value) -> (Vec<Value>, Value) {
        let mut seen = Vec::new();
        loop {
            let msg = self.recv();
            if msg.get("id") == Some(id) && msg.get("method").is_none() {
                return (seen, msg);
            }
            seen.push(msg);
        }
    }

    /// Prompts `session_id` with `prompt` (a turn whose fake answer is one tool call) and
    /// reads to the answer: the time from the call's `tool_call` update to its
    /// `tool_result`, as the client reads them (the benchmarks of per-call costs).
    pub fn timed_tool_call(&mut self, session_id: &str, prompt: &str) -> Duration {
        let id = self.send_call(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": prompt}),
        );
        let (mut called, mut took) = (None, None);
        loop {
            let m = self.recv();
            if m.get("id") == Some(&id) && m.get("method").is_none() {
                break;
            }
            match m["params"]["type"].as_str() {
                Some("tool_call") => called = Some(Instant::now()),
                Some("tool_result") => took = called.map(|t: Instant| t.elapsed()),
                _ => {}
            }
        }
        took.expect("a tool_result after its tool_call")
    }

    /// `session/new` → the whole result.
    pub fn new_session(&mut self, params: Value) -> Value {
        self.result("session/new", params)
    }

    /// `session/prompt` and everything streamed before its answer: (updates, response).
    pub fn prompt(&mut self, session_id: &str, prompt: &str) -> (Vec<Value>, Value) {
        let id = self.send_call(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": prompt}),
        );
        self.collect_until(&id)
    }

    /// The whole transcript of a session.
    pub fn messages(&mut self, session_id: &str) -> Vec<Value> {
        let r = self.result("session/messages", json!({"sessionId": session_id}));
        r["messages"].as_array().cloned().unwrap_or_default()
    }

    /// The transcript of the session `session_id` of `mode` (`"acp"` or `"chat"`).
    pub fn messages_in(&mut self, session_id: &str, mode: &str) -> Vec<Value> {
        let r = self.result(
            "session/messages",
            json!({"sessionId": session_id, "mode": mode}),
        );
        r["messages"].as_array().cloned().unwrap_or_default()
    }
}

// ---- a second local user ----------------------------------------------------------

/// A connection made by a process running as `uid`, through `zeroclaw connect`.
pub struct UidConn {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl UidConn {
    pub fn open(socket: &std::path::Path, uid: u32) -> UidConn {
        let mut child = Command::new(BIN)
            .args(["connect", "--socket", socket.to_str().unwrap()])
            .uid(uid)
            .gid(uid)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        UidConn {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        // Notifications (a prompt's updates) before the answer are skipped.
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "connection closed"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v.get("method").is_some() && v.get("id").is_none() {
                continue;
            }
            assert_eq!(v["id"], id);
            return v;
        }
    }

    /// The next message the daemon sent, whatever it is (a test of requests the daemon
    /// sends, such as `elicitation/create`).
    pub fn recv(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "connection closed"
        );
        serde_json::from_str(&line).unwrap()
    }

    /// Writes one line as is.
    pub fn send(&mut self, text: &str) {
        writeln!(self.stdin, "{text}").unwrap();
    }

    /// The `result` of a call, panicking with the error otherwise.
    pub fn result(&mut self, method: &str, params: Value) -> Value {
        let resp = self.call(method, params.clone());
        match resp.get("result") {
            Some(result) => result.clone(),
            None => panic!("{method} {params} failed: {resp}"),
        }
    }

    /// The `error` of a call, panicking on success.
    pub fn error(&mut self, method: &str, params: Value) -> Value {
        let resp = self.call(method, params.clone());
        match resp.get("error") {
            Some(error) => error.clone(),
            None => panic!("{method} {params} unexpectedly succeeded: {resp}"),
        }
    }
}

impl Drop for UidConn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[allow(unsafe_code)]
pub fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A uid no account uses, for tests that connect as "another local user".
pub fn test_uid() -> u32 {
    50_000 + std::process::id() % 10_000
}
