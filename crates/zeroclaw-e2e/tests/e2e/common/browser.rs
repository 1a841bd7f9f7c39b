//! A headless Chromium driven over the DevTools protocol, for the dashboard's browser tests
//! (SPEC §20): the browser process on a temp profile, one WebSocket to it, pages in their
//! own browser contexts (separate storage, like two people), and a loopback TCP relay that
//! the tests can cut to drop the page's connection to the daemon.
//!
//! The CDP client is small on purpose: numbered commands answered through oneshot
//! channels, events of each page kept in a bounded buffer, every wait with a timeout.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// Events kept per page before the oldest are dropped.
const EVENT_BUFFER: usize = 20_000;
/// How long one CDP command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// The Chromium binary: `ZEROCLAW_CHROMIUM`, else `chromium` or `chromium-browser` on PATH.
pub fn chromium_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ZEROCLAW_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;
type Events = Arc<Mutex<HashMap<String, VecDeque<Value>>>>;

/// A running headless Chromium; killed when dropped.
pub struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    out: mpsc::Sender<String>,
    pending: Pending,
    events: Events,
    next_id: Arc<AtomicU64>,
}

impl Browser {
    /// Starts Chromium and connects to its DevTools endpoint (read from its stderr).
    pub async fn launch() -> Browser {
        let bin = chromium_path().expect("chromium on PATH (scripts/browser-test.sh installs it)");
        let profile = tempfile::tempdir().expect("profile dir");
        let mut child = Command::new(&bin)
            .args([
                "--headless=new",
                "--remote-debugging-port=0",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-breakpad",
                "--hide-scrollbars",
                "--mute-audio",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn chromium");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent && let Some(url) = line.strip_prefix("DevTools listening on ") {
                    let _ = tx.send(url.trim().to_string());
                    sent = true;
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("chromium printed its DevTools URL within 30 s");
        let host = url
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .expect("host:port")
            .to_string();
        let tcp = TcpStream::connect(host.as_str())
            .await
            .expect("connect to DevTools");
        let config = WebSocketConfig::default()
            .max_message_size(Some(256 << 20))
            .max_frame_size(Some(256 << 20));
        let (ws, _) = tokio_tungstenite::client_async_with_config(url.as_str(), tcp, Some(config))
            .await
            .expect("DevTools handshake");
        let (mut sink, mut stream) = ws.split();
        let (out, mut out_rx) = mpsc::channel::<String>(256);
        tokio::spawn(async move {
            while let Some(text) = out_rx.recv().await {
                if sink.send(Message::Text(text.into())).await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let events: Events = Arc::default();
        let (p, e) = (pending.clone(), events.clone());
        tokio::spawn(async move {
            while let Some(Ok(msg)) = stream.next().await {
                let Message::Text(text) = msg else { continue };
                let Ok(v) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                if let Some(id) = v.get("id").and_then(Value::as_u64) {
                    if let Some(tx) = p.lock().expect("pending").remove(&id) {
                        let _ = tx.send(v);
                    }
                } else if v.get("method").is_some() {
                    let session = v
                        .get("sessionId")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    let mut all = e.lock().expect("events");
                    let q = all.entry(session).or_default();
                    if q.len() >= EVENT_BUFFER {
                        q.pop_front();
                    }
                    q.push_back(v);
                }
            }
        });
        Browser {
            child,
            _profile: profile,
            out,
            pending,
            events,
            next_id: Arc::new(AtomicU64::new(1)),
        }
    }

    /// Sends one command (to a page when `session` is given) and returns its result.
    pub async fn send(&self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut frame = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            frame["sessionId"] = json!(s);
        }
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("pending").insert(id, tx);
        self.out
            .send(frame.to_string())
            .await
            .expect("devtools open");
        let answer = tokio::time::timeout(COMMAND_TIMEOUT, rx)
            .await
            .unwrap_or_else(|_| panic!("{method}: no answer in time"))
            .expect("devtools answered");
        if let Some(err) = answer.get("error") {
            panic!("{method} failed: {err}");
        }
        answer["result"].clone()
    }

    /// A new page in a new browser context (its own cookies and storage), `width`×`height`.
    pub async fn page(&self, width: u32, height: u32) -> Page<'_> {
        let ctx = self
            .send(None, "Target.createBrowserContext", json!({}))
            .await;
        let context = ctx["browserContextId"]
            .as_str()
            .expect("context")
            .to_string();
        let target = self
            .send(
                None,
                "Target.createTarget",
                json!({"url": "about:blank", "browserContextId": context}),
            )
            .await;
        let target_id = target["targetId"].as_str().expect("target").to_string();
        let attached = self
            .send(
                None,
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
            )
            .await;
        let session = attached["sessionId"].as_str().expect("session").to_string();
        let page = Page {
            browser: self,
            session,
        };
        for domain in [
            "Page.enable",
            "Runtime.enable",
            "Log.enable",
            "Network.enable",
        ] {
            page.call(domain, json!({})).await;
        }
        // Collects CSP violations in every document, before any of its scripts run.
        page.call(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": "window.__csp = []; document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"}),
        )
        .await;
        page.viewport(width, height).await;
        page
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One tab, attached in flat mode.
pub struct Page<'b> {
    browser: &'b Browser,
    session: String,
}

impl Page<'_> {
    pub async fn call(&self, method: &str, params: Value) -> Value {
        self.browser.send(Some(&self.session), method, params).await
    }

    /// Phone-sized (width < 600) pages are emulated as mobile.
    pub async fn viewport(&self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}),
        )
        .await;
    }

    /// Dark or light `prefers-color-scheme`.
    pub async fn color_scheme(&self, scheme: &str) {
        self.call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
        )
        .await;
    }

    pub async fn goto(&self, url: &str) {
        self.call("Page.navigate", json!({"url": url})).await;
        self.wait_for(
            "document.readyState === 'complete'",
            Duration::from_secs(20),
        )
        .await;
    }

    /// Evaluates `expr` (awaiting a promise) and returns its JSON value; panics on an
    /// exception.
    pub async fn eval(&self, expr: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        if let Some(ex) = r.get("exceptionDetails") {
            panic!("{expr}: {ex}");
        }
        r["result"]["value"].clone()
    }

    /// Polls `expr` until it is truthy; panics with `expr` after `limit`.
    pub async fn wait_for(&self, expr: &str, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let r = self
                .call(
                    "Runtime.evaluate",
                    json!({"expression": expr, "returnByValue": true}),
                )
                .await;
            let v = r["result"]["value"].clone();
            let truthy = match &v {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy && r.get("exceptionDetails").is_none() {
                return v;
            }
            if Instant::now() > deadline {
                let text = self.text("#app").await;
                panic!("waited {limit:?} for `{expr}`; the page shows:\n{text}");
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The visible text under the first element matching `selector`.
    pub async fn text(&self, selector: &str) -> String {
        let expr = format!(
            "(document.querySelector({}) || {{innerText: ''}}).innerText",
            json!(selector)
        );
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expr, "returnByValue": true}),
            )
            .await;
        r["result"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Clicks the element matching `selector` (through the DOM, as a user's click would
    /// dispatch).
    pub async fn click(&self, selector: &str) {
        let ok = self
            .eval(&format!(
                "(() => {{ const e = document.querySelector({}); if (!e) return false; e.click(); return true; }})()",
                json!(selector)
            ))
            .await;
        assert_eq!(ok, json!(true), "nothing to click at {selector}");
    }

    /// Types `text` into the focused element, with real key events for Enter.
    pub async fn type_text(&self, selector: &str, text: &str) {
        self.eval(&format!(
            "document.querySelector({}).focus()",
            json!(selector)
        ))
        .await;
        self.call("Input.insertText", json!({"text": text})).await;
    }

    /// Presses a key (`Enter`, `Escape`) with optional modifiers (8 = Shift).
    pub async fn key(&self, key: &str, modifiers: u32) {
        let (code, vk) = match key {
            "Enter" => ("Enter", 13),
            "Escape" => ("Escape", 27),
            other => (other, 0),
        };
        for kind in ["rawKeyDown", "keyUp"] {
            let mut p = json!({"type": kind, "key": key, "code": code,
                "windowsVirtualKeyCode": vk, "modifiers": modifiers});
            if kind == "rawKeyDown" && key == "Enter" {
                p["text"] = json!("\r");
                p["type"] = json!("keyDown");
            }
            self.call("Input.dispatchKeyEvent", p).await;
        }
    }

    /// A PNG of the viewport, written to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let r = self
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().expect("png data"))
            .expect("base64");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot dir");
        }
        std::fs::write(path, bytes).expect("write screenshot");
    }

    /// The events of this page so far whose method is `method`.
    pub fn events(&self, method: &str) -> Vec<Value> {
        let all = self.browser.events.lock().expect("events");
        all.get(&self.session)
            .map(|q| {
                q.iter()
                    .filter(|e| e["method"] == method)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Console errors, log entries about the Content-Security-Policy, and the violations
    /// the page itself saw (`securitypolicyviolation`).
    pub async fn csp_problems(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in self.events("Log.entryAdded") {
            let text = e["params"]["entry"]["text"].as_str().unwrap_or_default();
            if text.contains("Content Security Policy") || text.contains("Content-Security-Policy")
            {
                out.push(text.to_string());
            }
        }
        for e in self.events("Runtime.consoleAPICalled") {
            let args = e["params"]["args"].to_string();
            if args.contains("Content Security Policy") {
                out.push(args);
            }
        }
        if let Some(list) = self.eval("window.__csp || []").await.as_array() {
            out.extend(list.iter().map(|v| v.to_string()));
        }
        out
    }

    /// Uncaught exceptions thrown in the page.
    pub fn exceptions(&self) -> Vec<Value> {
        self.events("Runtime.exceptionThrown")
    }
}

/// A loopback TCP relay in front of the daemon's gateway: the page connects to it, and
/// [`Relay::cut`] drops every connection it carries (the page sees its socket die, as on a
/// network drop); new connections keep working.
pub struct Relay {
    pub port: u16,
    upstream: Arc<AtomicU16>,
    conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// Listens now; relays to the port given to [`Relay::to`] (so a test can name the
    /// relay's origin in the daemon's config before the daemon starts).
    pub async fn start() -> Relay {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind relay");
        let port = listener.local_addr().expect("addr").port();
        let conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let upstream = Arc::new(AtomicU16::new(0));
        let (list, target) = (conns.clone(), upstream.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut down, _)) = listener.accept().await {
                let upstream = target.load(Ordering::Relaxed);
                let task = tokio::spawn(async move {
                    if let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)).await {
                        let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
                    }
                });
                let mut l = list.lock().expect("relay list");
                l.retain(|h| !h.is_finished());
                l.push(task.abort_handle());
            }
        });
        Relay {
            port,
            upstream,
            conns,
            accept,
        }
    }

    /// Where new connections go.
    pub fn to(&self, upstream: u16) {
        self.upstream.store(upstream, Ordering::Relaxed);
    }

    /// Drops every connection open now; returns how many.
    pub fn cut(&self) -> usize {
        let mut l = self.conns.lock().expect("relay list");
        let n = l.iter().filter(|h| !h.is_finished()).count();
        for h in l.drain(..) {
            h.abort();
        }
        n
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

/// Where the tests write their screenshots: `target/dashboard-screenshots/`.
pub fn screenshot_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/dashboard-screenshots")
        .components()
        .collect()
}
