//! The web dashboard (SPEC §20) in a real headless Chromium, driven over the DevTools
//! protocol: logging in with a one-time code, streaming a turn, two browsers and a socket
//! client on one session, approvals answered elsewhere, a connection cut mid-turn, hostile
//! model output and file names, a non-admin principal, the security headers, and the
//! screenshots of the README. `scripts/browser-test.sh` installs Chromium and runs these.

use crate::browser;
use crate::common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use browser::{Browser, Page, Relay, screenshot_dir};
use common::{Conn, TestDaemon};
use serde_json::{Value, json};
use zeroclaw_testkit::chat_window::ChatWindow;
use zeroclaw_testkit::{FakeOpenAi, Scripted};

const WAIT: Duration = Duration::from_secs(20);

/// A daemon with its gateway started (`gateway/start`) and a local admin connection.
struct Dash {
    daemon: TestDaemon,
    port: u16,
}

impl Dash {
    /// A daemon on `config` (TOML) whose gateway starts with it (`[wss] enabled`, a free
    /// loopback port).
    fn start(config: &str) -> Dash {
        let config = config.to_string();
        let daemon = TestDaemon::start_with(&[], move |dir| {
            std::fs::write(dir.join("config.toml"), config).expect("config")
        });
        let port = common::ws::listening_port(&daemon);
        Dash { daemon, port }
    }

    /// A daemon without `[wss]` whose gateway is started by `gateway/start`, as `zeroclaw
    /// dashboard` does, with login codes that live `code_ttl_ms`.
    fn started_by_call(code_ttl_ms: u64) -> Dash {
        let ttl = code_ttl_ms.to_string();
        let daemon = TestDaemon::start_env(
            &[],
            &[("ZEROCLAW_TEST_LOGIN_CODE_TTL_MS", ttl.as_str())],
            |dir| {
                std::fs::write(
                    dir.join("config.toml"),
                    "[providers.echo]\nkind = \"echo\"\n[agents.default]\nprovider = \"echo\"\n",
                )
                .expect("config")
            },
        );
        let r = daemon.client().result("gateway/start", json!({}));
        let url = r["url"].as_str().expect("gateway url").to_string();
        let port = url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .and_then(|a| a.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {url}"));
        Dash { daemon, port }
    }

    fn admin(&self) -> Conn {
        self.daemon.client()
    }

    /// A fresh one-time login URL for the operator (`dashboard/login`), pointed at `port`.
    fn login_url(&self, port: u16) -> String {
        let r = self.admin().result("dashboard/login", json!({}));
        let url = r["url"].as_str().expect("login url");
        assert!(
            url.starts_with(&format!("http://127.0.0.1:{}/#code=", self.port)),
            "{url}"
        );
        url.replace(&format!(":{}/", self.port), &format!(":{port}/"))
    }
}

/// Echo agent `default` (and `tools` on the fake OpenAI server when given), a non-admin
/// user `bob` with his own sessions and no config grant, the gateway on a free loopback
/// port (`[wss]`, `extra` appended to that section first).
fn config(fake: Option<&str>, extra: &str) -> String {
    let mut c = format!("[wss]\nenabled = true\nbind = \"127.0.0.1\"\nport = 0\n{extra}\n");
    c.push_str(
        r#"[providers.echo]
kind = "echo"
[agents.default]
provider = "echo"
tools = ["bash", "read_file", "write_file", "ask_user"]
[permission_profiles.own]
grants = { sessions = ["create", "read", "update", "execute", "delete"], system = ["read"], files = ["create"] }
allowed_agents = ["default"]
[users.bob]
permission_profiles = ["own"]
"#,
    );
    if let Some(url) = fake {
        c.push_str(&format!(
            r#"[providers.fake]
kind = "openai"
base_url = "{url}"
model = "m"
timeout_secs = 30
[agents.tools]
provider = "fake"
tools = ["bash", "read_file", "write_file", "ask_user"]
autonomy = "supervised"
max_tool_iterations = 5
"#
        ));
    }
    c
}

/// Opens `url` and waits until the sessions view is drawn.
async fn login(page: &Page<'_>, url: &str) {
    page.goto(url).await;
    page.wait_for("document.querySelector('ul.sessions li')", WAIT)
        .await;
}

/// Types `text` in the composer and presses Enter.
async fn send_prompt(page: &Page<'_>, text: &str) {
    page.type_text("form.composer textarea", text).await;
    page.key("Enter", 0).await;
}

/// The text of every drawn answer, in order.
async fn answers(page: &Page<'_>) -> Vec<String> {
    page.eval("[...document.querySelectorAll('.block.assistant .md')].map(e => e.textContent)")
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .collect()
}

/// Opens session `sid` in the page and waits until its transcript is drawn.
async fn open_session(page: &Page<'_>, sid: &str) {
    page.eval(&format!(
        "location.hash = {}",
        json!(format!("#/session/{sid}"))
    ))
    .await;
    page.wait_for(
        "document.querySelector('.session-view .older') && document.querySelector('.older').textContent !== ''",
        WAIT,
    )
    .await;
}

/// One HTTP/1.1 request to the gateway; returns (status line, lowercase headers, body).
fn http(port: u16, request: &str) -> (String, Vec<(String, String)>, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    s.write_all(request.as_bytes()).expect("write");
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().unwrap_or_default().to_string();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, body.to_string())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn assert_security_headers(what: &str, headers: &[(String, String)]) {
    let csp = header(headers, "content-security-policy")
        .unwrap_or_else(|| panic!("{what}: no Content-Security-Policy in {headers:?}"));
    for part in [
        "default-src 'self'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{what}: CSP {csp} lacks {part}");
    }
    assert!(!csp.contains("unsafe-inline"), "{what}: {csp}");
    assert_eq!(
        header(headers, "x-content-type-options"),
        Some("nosniff"),
        "{what}"
    );
    assert_eq!(
        header(headers, "referrer-policy"),
        Some("no-referrer"),
        "{what}"
    );
}

async fn no_csp_problems(page: &Page<'_>) {
    let problems = page.csp_problems().await;
    assert!(problems.is_empty(), "CSP violations: {problems:?}");
    let exceptions = page.exceptions();
    assert!(exceptions.is_empty(), "page exceptions: {exceptions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn login_with_a_code_then_stream_an_echo_answer() {
    let dash = Dash::start(&config(None, ""));
    let browser = Browser::launch().await;
    let page = browser.page(1280, 800).await;

    let url = dash.login_url(dash.port);
    let code = url.split("#code=").nth(1).expect("code").to_string();
    page.goto(&url).await;
    page.wait_for("document.querySelector('ul.sessions')", WAIT)
        .await;
    // The code left the address bar; the session token is kept for this tab only.
    let href = page.eval("location.href").await;
    assert!(!href.as_str().unwrap_or_default().contains(&code), "{href}");
    let token = page.eval("sessionStorage.getItem('zeroclaw.token')").await;
    assert!(
        token.as_str().is_some_and(|t| !t.is_empty() && t != code),
        "{token}"
    );

    // A used code does not log in again, in another browser context.
    let other = browser.page(1280, 800).await;
    other.goto(&url).await;
    other
        .wait_for(
            "document.querySelector('form.login .error')?.textContent",
            WAIT,
        )
        .await;
    assert!(
        other
            .text("form.login .error")
            .await
            .contains("already used or has expired")
    );
    // A wrong pasted token is refused at the form.
    other.type_text("form.login input", "zct_not_a_token").await;
    other.click("form.login button").await;
    other
        .wait_for(
            "document.querySelector('form.login .error')?.textContent.includes('not accepted')",
            WAIT,
        )
        .await;

    // An expired code does not log in either (a daemon whose codes live 1.5 s, its
    // gateway started by `gateway/start` as `zeroclaw dashboard` does).
    let short = Dash::started_by_call(1500);
    let stale = short.login_url(short.port);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    other.goto(&stale).await;
    other
        .wait_for(
            "document.querySelector('form.login .error')?.textContent.includes('expired')",
            WAIT,
        )
        .await;
    let fresh = browser.page(1280, 800).await;
    login(&fresh, &short.login_url(short.port)).await;

    // A new session from the sessions view, and an answer streamed into it.
    page.click("form.new button").await;
    page.wait_for("location.hash.startsWith('#/session/')", WAIT)
        .await;
    page.wait_for("document.querySelector('form.composer textarea')", WAIT)
        .await;
    send_prompt(&page, "hello from the **browser**").await;
    page.wait_for(
        "document.querySelector('.block.assistant:not(.streaming) .md strong')?.textContent === 'browser'",
        WAIT,
    )
    .await;
    assert_eq!(
        page.text(".block.user .prompt").await,
        "hello from the **browser**"
    );
    // Reloading the page keeps the login (sessionStorage) and shows the transcript.
    page.call("Page.reload", json!({})).await;
    page.wait_for(
        "document.querySelector('.block.assistant .md strong')?.textContent === 'browser'",
        WAIT,
    )
    .await;
    assert_eq!(
        answers(&page).await.concat().trim(),
        "hello from the browser"
    );
    no_csp_problems(&page).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn every_response_carries_the_security_headers() {
    let dash = Dash::start(&config(None, ""));
    let port = dash.port;
    let requests = [
        (
            "GET /",
            format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"),
        ),
        (
            "GET /assets/app.js",
            format!(
                "GET /assets/app.js HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
            ),
        ),
        (
            "GET /assets/vendor/purify.es.mjs",
            format!(
                "GET /assets/vendor/purify.es.mjs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
            ),
        ),
        (
            "GET /healthz",
            format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"),
        ),
        (
            "GET /assets/missing.js",
            format!(
                "GET /assets/missing.js HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
            ),
        ),
        (
            "POST /rpc without a token",
            format!(
                "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
            ),
        ),
    ];
    for (what, req) in &requests {
        let (status, headers, _) = http(port, req);
        assert!(status.starts_with("HTTP/1.1"), "{what}: {status}");
        assert_security_headers(what, &headers);
    }
    let (status, headers, body) = http(port, &requests[0].1);
    assert!(status.contains(" 200"), "{status}");
    assert!(header(&headers, "content-type").is_some_and(|c| c.starts_with("text/html")));
    assert!(
        !body.contains("<script>") && !body.contains(" style="),
        "inline code in index.html"
    );
    let (status, headers, _) = http(port, &requests[1].1);
    assert!(status.contains(" 200"), "{status}");
    assert!(
        header(&headers, "content-type").is_some_and(|c| c.contains("javascript")),
        "{headers:?}"
    );
    let (status, _, body) = http(port, &requests[3].1);
    assert!(
        status.contains(" 200") && body.trim() == "ok",
        "{status} {body}"
    );
    let (status, _, _) = http(port, &requests[5].1);
    assert!(status.contains(" 401"), "{status}");

    // From the browser's side: the whole page loads and works under that policy.
    let browser = Browser::launch().await;
    let page = browser.page(1280, 800).await;
    login(&page, &dash.login_url(port)).await;
    let mut admin = dash.admin();
    let sid = admin.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .expect("sid")
        .to_string();
    admin.prompt(&sid, "a `code` answer\n\n| a | b |\n|---|---|\n| 1 | 2 |");
    open_session(&page, &sid).await;
    page.wait_for("document.querySelector('.block.assistant .md table')", WAIT)
        .await;
    for view in ["#/config", "#/status", "#/sessions"] {
        page.eval(&format!("location.hash = '{view}'")).await;
        page.wait_for("document.querySelector('.view h1')", WAIT)
            .await;
    }
    page.wait_for("document.querySelector('ul.sessions li.session')", WAIT)
        .await;
    no_csp_problems(&page).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn two_browsers_and_a_socket_client_share_a_session_and_its_approvals() {
    let fake = FakeOpenAi::start().await.expect("fake openai");
    let dash = Dash::start(&config(Some(&fake.base_url()), ""));
    let browser = Browser::launch().await;
    let a = browser.page(1280, 800).await;
    let b = browser.page(390, 844).await;
    login(&a, &dash.login_url(dash.port)).await;
    login(&b, &dash.login_url(dash.port)).await;

    let mut admin = dash.admin();
    let sid = admin.new_session(json!({"agentAlias": "tools"}))["sessionId"]
        .as_str()
        .expect("sid")
        .to_string();
    admin.result(
        "session/set_title",
        json!({"sessionId": sid, "title": "Shared session"}),
    );
    open_session(&a, &sid).await;
    open_session(&b, &sid).await;

    // A prompt from the socket client shows in both browsers, with its answer.
    fake.push(Scripted::chunks(
        ["first ", "answer ", "from ", "the ", "model"],
        Duration::from_millis(5),
    ));
    let (_, done) = admin.prompt(&sid, "prompt from a socket client");
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    for page in [&a, &b] {
        page.wait_for(
            "[...document.querySelectorAll('.block.assistant:not(.streaming)')].some(e => e.textContent.includes('first answer from the model'))",
            WAIT,
        )
        .await;
        assert!(
            page.text(".blocks")
                .await
                .contains("prompt from a socket client")
        );
    }

    // A prompt from browser A reaches B and the socket client; the model asks for a
    // tool that needs approval, shown in both browsers.
    fake.push(Scripted::tool_call(
        "tc_1",
        "bash",
        json!({"command": "echo approved-output"}),
    ));
    fake.push(Scripted::chunks(
        ["the ", "tool ", "ran"],
        Duration::from_millis(5),
    ));
    let watcher = std::thread::spawn({
        let socket = dash.daemon.socket.clone();
        let sid = sid.clone();
        move || {
            let mut conn = Conn::open(&socket);
            conn.result("initialize", json!({"protocolVersion": 1}));
            conn.result("session/subscribe", json!({"sessionId": sid}));
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut seen = Vec::new();
            while Instant::now() < deadline {
                let msg = conn.recv();
                if msg["method"] == "session/update" {
                    seen.push(msg["params"].clone());
                    if msg["params"]["type"] == "turn_complete" {
                        break;
                    }
                }
            }
            seen
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    send_prompt(&a, "please run the tool").await;
    for page in [&a, &b] {
        page.wait_for(
            "document.querySelector('.block.approval .actions button')",
            WAIT,
        )
        .await;
        page.wait_for("document.querySelector('.block.tool summary')", WAIT)
            .await;
    }
    assert!(b.text(".blocks").await.contains("please run the tool"));
    // Screenshots of a session with a tool call and an approval, both sizes.
    let dir = screenshot_dir();
    a.eval("document.querySelector('.block.tool details').open = true")
        .await;
    a.screenshot(&dir.join("session-desktop.png")).await;
    b.screenshot(&dir.join("session-phone.png")).await;

    // Answered in B, gone from A.
    b.click(".block.approval button[data-decision='allow_once']")
        .await;
    a.wait_for(
        "!document.querySelector('.block.approval .actions') && document.querySelector('.block.approval .resolved')?.textContent.includes('Allowed once')",
        WAIT,
    )
    .await;
    for page in [&a, &b] {
        page.wait_for(
            "[...document.querySelectorAll('.block.assistant:not(.streaming)')].some(e => e.textContent.includes('the tool ran'))",
            WAIT,
        )
        .await;
        assert!(page.text(".block.tool").await.contains("bash"));
    }
    let seen = watcher.join().expect("socket watcher");
    let user = seen
        .iter()
        .find(|u| u["type"] == "user_message")
        .expect("the socket client saw the browser's prompt");
    assert_eq!(user["text"], "please run the tool");
    assert!(seen.iter().any(|u| u["type"] == "approval_resolved"));

    // The sessions view, both sizes, with a few more sessions in it.
    for prompt in [
        "Summarize yesterday's build failures",
        "Draft release notes for 0.2",
        "Why does the parser reject trailing commas?",
    ] {
        let s = admin.new_session(json!({"agentAlias": "default"}))["sessionId"]
            .as_str()
            .expect("sid")
            .to_string();
        admin.prompt(&s, prompt);
    }
    for (page, name) in [(&a, "sessions-desktop.png"), (&b, "sessions-phone.png")] {
        page.eval("location.hash = '#/sessions'").await;
        page.wait_for("document.querySelector('ul.sessions li.session')", WAIT)
            .await;
        page.screenshot(&dir.join(name)).await;
    }
    a.color_scheme("dark").await;
    a.screenshot(&dir.join("sessions-desktop-dark.png")).await;
    no_csp_problems(&a).await;
    no_csp_problems(&b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn a_connection_cut_mid_turn_resumes_with_nothing_lost_or_doubled() {
    let fake = FakeOpenAi::start().await.expect("fake openai");
    let relay = Relay::start().await;
    let dash = Dash::start(&config(
        Some(&fake.base_url()),
        // The page reaches the gateway through the relay's port: that `Host` is named in
        // `gateway.hostnames` (an address there matches on any port, SPEC §17.2).
        &format!(
            "allowed_origins = [\"http://127.0.0.1:{}\"]\n[gateway]\nhostnames = [\"127.0.0.1\"]",
            relay.port
        ),
    ));
    relay.to(dash.port);
    let browser = Browser::launch().await;
    let page = browser.page(1280, 800).await;
    login(&page, &dash.login_url(relay.port)).await;

    let words: Vec<String> = (0..400).map(|i| format!("w{i} ")).collect();
    let expected: String = words.concat();
    fake.push(Scripted::chunks(words.clone(), Duration::from_millis(8)));
    let mut admin = dash.admin();
    let sid = admin.new_session(json!({"agentAlias": "tools"}))["sessionId"]
        .as_str()
        .expect("sid")
        .to_string();
    open_session(&page, &sid).await;
    send_prompt(&page, "count for me").await;
    page.wait_for(
        "document.querySelector('.block.assistant .md')?.textContent.includes('w40 ')",
        WAIT,
    )
    .await;
    // Cut twice while the answer streams; chunks keep coming from the daemon meanwhile.
    assert!(relay.cut() >= 1, "the page's socket went through the relay");
    page.wait_for(
        "document.getElementById('conn').dataset.state === 'online'",
        WAIT,
    )
    .await;
    page.wait_for(
        "document.querySelector('.block.assistant .md')?.textContent.includes('w200 ')",
        WAIT,
    )
    .await;
    relay.cut();
    page.wait_for(
        "document.querySelector('.block.assistant:not(.streaming)')",
        Duration::from_secs(40),
    )
    .await;
    let drawn: Vec<String> = answers(&page)
        .await
        .iter()
        .map(|a| a.trim().to_string())
        .collect();
    assert_eq!(
        drawn,
        vec![expected.trim_end().to_string()],
        "one answer, every chunk once"
    );
    let prompts = page
        .eval("document.querySelectorAll('.block.user').length")
        .await;
    assert_eq!(prompts, json!(1), "the prompt drawn once");
    no_csp_problems(&page).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn hostile_answers_file_names_and_titles_render_inert() {
    let dash = Dash::start(&config(None, ""));
    let browser = Browser::launch().await;
    let page = browser.page(1280, 800).await;
    login(&page, &dash.login_url(dash.port)).await;
    let hostile = "<img src=x onerror=\"window.__pwned='img'\"> <script>window.__pwned='script'</script> [click](javascript:window.__pwned='link') <a href=\"javascript:window.__pwned='a'\">a</a> <svg onload=\"window.__pwned='svg'\"></svg> <iframe src=\"javascript:window.__pwned='iframe'\"></iframe>";
    let file_name = "<img src=x onerror=\"window.__pwned='file'\">.txt";

    let mut admin = dash.admin();
    let sid = admin.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .expect("sid")
        .to_string();
    admin.result(
        "session/set_title",
        json!({"sessionId": sid, "title": "<script>window.__pwned='title'</script>"}),
    );
    open_session(&page, &sid).await;
    // The echo provider answers with the prompt itself: the hostile markup is the model's
    // output; the attachment's name comes back in user_message.
    use base64::Engine;
    let (_, done) = {
        let id = admin.send_call(
            "session/prompt",
            json!({"sessionId": sid, "prompt": hostile, "attachments": [{
                "dataB64": base64::engine::general_purpose::STANDARD.encode("plain text"),
                "filename": file_name,
                "mimeType": "text/plain",
            }]}),
        );
        admin.collect_until(&id)
    };
    assert!(done.get("result").is_some(), "{done}");
    page.wait_for(
        "document.querySelector('.block.assistant:not(.streaming) .md')",
        WAIT,
    )
    .await;
    page.wait_for("document.querySelector('li.file')", WAIT)
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let state = page
        .eval(
            "({pwned: window.__pwned ?? null,
              scripts: document.querySelectorAll('#app script, #app iframe, #app object, #app embed, #app [onerror], #app [onload]').length,
              jsLinks: [...document.querySelectorAll('#app a')].filter(a => (a.getAttribute('href') || '').trim().toLowerCase().startsWith('javascript')).length,
              file: document.querySelector('li.file').textContent,
              title: document.querySelector('.session-head .title').textContent})",
        )
        .await;
    assert_eq!(state["pwned"], Value::Null, "{state}");
    assert_eq!(state["scripts"], json!(0), "{state}");
    assert_eq!(state["jsLinks"], json!(0), "{state}");
    assert_eq!(
        state["file"],
        json!(file_name),
        "the file name shown as text"
    );
    assert_eq!(
        state["title"],
        json!("<script>window.__pwned='title'</script>")
    );
    // The prompt is text, exactly as sent.
    assert_eq!(page.text(".block.user .prompt").await, hostile);
    // The sessions list shows the title as text too.
    page.eval("location.hash = '#/sessions'").await;
    page.wait_for("document.querySelector('li.session .title')", WAIT)
        .await;
    assert_eq!(
        page.text("li.session .title").await,
        "<script>window.__pwned='title'</script>"
    );
    assert_eq!(page.eval("window.__pwned ?? null").await, Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn a_non_admin_sees_only_its_sessions_and_no_config_editing() {
    let dash = Dash::start(&config(None, ""));
    let mut admin = dash.admin();
    let theirs = admin.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .expect("sid")
        .to_string();
    admin.result(
        "session/set_title",
        json!({"sessionId": theirs, "title": "operator's own"}),
    );
    let token = common::ws::pair(dash.daemon.config_dir(), "bob");

    let browser = Browser::launch().await;
    let page = browser.page(390, 844).await;
    page.goto(&format!("http://127.0.0.1:{}/", dash.port)).await;
    page.wait_for("document.querySelector('form.login input')", WAIT)
        .await;
    page.type_text("form.login input", &token).await;
    page.click("form.login button").await;
    page.wait_for("document.querySelector('ul.sessions li')", WAIT)
        .await;
    assert_eq!(
        page.eval("document.querySelectorAll('li.session').length")
            .await,
        json!(0),
        "bob sees no session of the operator"
    );
    assert_eq!(
        page.eval("document.querySelector('nav a[data-view=config]').hidden")
            .await,
        json!(true)
    );
    // Bob's own session shows up; the operator's never does.
    page.click("form.new button").await;
    page.wait_for("location.hash.startsWith('#/session/')", WAIT)
        .await;
    page.eval("location.hash = '#/config'").await;
    page.wait_for("document.querySelector('ul.sessions li.session')", WAIT)
        .await;
    assert_eq!(
        page.eval("document.querySelectorAll('li.session').length")
            .await,
        json!(1)
    );
    assert!(!page.text("ul.sessions").await.contains("operator's own"));
    assert_eq!(
        page.eval("document.querySelectorAll('form.prop, form.field').length")
            .await,
        json!(0)
    );
    // The operator's session opened by id is refused, not shown.
    page.eval(&format!("location.hash = '#/session/{theirs}'"))
        .await;
    page.wait_for("document.querySelector('.view .error')?.textContent", WAIT)
        .await;
    assert_eq!(
        page.eval("document.querySelectorAll('.block').length")
            .await,
        json!(0)
    );
    no_csp_problems(&page).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn an_admin_edits_one_config_property_and_sees_the_daemons_error_there() {
    let mut toml = config(None, "");
    toml.push_str("[providers.remote]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \"sk-secret-value\"\nmodel = \"m\"\n");
    let dash = Dash::start(&toml);
    let browser = Browser::launch().await;
    let page = browser.page(1280, 800).await;
    login(&page, &dash.login_url(dash.port)).await;
    page.eval("location.hash = '#/config'").await;
    page.wait_for("document.querySelector('form.field')", WAIT)
        .await;
    let shown = page.text(".config").await;
    let values = page
        .eval("[...document.querySelectorAll('form.field input')].map(i => i.value).join('\\n')")
        .await;
    assert!(
        !values
            .as_str()
            .unwrap_or_default()
            .contains("sk-secret-value"),
        "{values}"
    );
    assert!(shown.contains("api_key"), "{shown}");
    assert_eq!(
        page.eval("document.querySelector('form.field[data-prop=\"providers.remote.api_key\"] input').type")
            .await,
        json!("password")
    );

    let set = |prop: &str, value: &str| {
        format!(
            "(() => {{ const f = document.querySelector('form.field[data-prop=\"{prop}\"]'); const i = f.querySelector('input'); i.value = {}; i.dispatchEvent(new Event('input')); f.requestSubmit(); return true; }})()",
            json!(value)
        )
    };
    page.eval(&set("agents.default.max_tool_iterations", "99999"))
        .await;
    page.wait_for(
        "document.querySelector('form.field[data-prop=\"agents.default.max_tool_iterations\"] .prop-error')?.textContent",
        WAIT,
    )
    .await;
    let err = page
        .text("form.field[data-prop=\"agents.default.max_tool_iterations\"] .prop-error")
        .await;
    assert!(err.contains("-32602"), "{err}");
    page.eval(&set("agents.default.max_tool_iterations", "7"))
        .await;
    page.wait_for(
        "document.querySelector('form.field[data-prop=\"agents.default.max_tool_iterations\"] .prop-error.ok')",
        WAIT,
    )
    .await;
    let r = dash.admin().result(
        "config/get",
        json!({"prop": "agents.default.max_tool_iterations"}),
    );
    assert_eq!(r["value"], json!(7));
    no_csp_problems(&page).await;
}

/// Clicks the first `selector` element whose text is `text`.
async fn click_text(page: &Page<'_>, selector: &str, text: &str) {
    let ok = page
        .eval(&format!(
            "(() => {{ const e = [...document.querySelectorAll({})].find(e => e.textContent.trim() === {}); if (!e) return false; e.click(); return true; }})()",
            json!(selector),
            json!(text)
        ))
        .await;
    assert_eq!(ok, json!(true), "no {selector} reading {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn rename_compact_rewind_fork_cancel_and_ask_user_from_the_page() {
    let fake = FakeOpenAi::start().await.expect("fake openai");
    let dash = Dash::start(&config(Some(&fake.base_url()), ""));
    let browser = Browser::launch().await;
    let page = browser.page(1280, 800).await;
    login(&page, &dash.login_url(dash.port)).await;
    let mut admin = dash.admin();
    let sid = admin.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .expect("sid")
        .to_string();
    for i in 1..=4 {
        admin.prompt(&sid, &format!("prompt number {i}"));
    }
    open_session(&page, &sid).await;
    page.wait_for(
        "document.querySelectorAll('.block.user').length === 4",
        WAIT,
    )
    .await;

    // Rename.
    click_text(&page, ".tools button", "Rename").await;
    page.eval("document.querySelector('form.rename input').value = 'Renamed in the page'; document.querySelector('form.rename').requestSubmit()").await;
    page.wait_for(
        "document.querySelector('.session-head .title')?.textContent === 'Renamed in the page'",
        WAIT,
    )
    .await;
    let list = admin.result("session/list", json!({"search": "renamed in"}));
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(1), "{list}");

    // The autonomy picker configures the live session.
    page.wait_for(
        "document.querySelector('.tools select[aria-label=Autonomy]')?.value === 'supervised'",
        WAIT,
    )
    .await;
    page.eval("(() => { const s = document.querySelector('.tools select[aria-label=Autonomy]'); s.value = 'read_only'; s.dispatchEvent(new Event('change')); })()").await;
    let deadline = Instant::now() + WAIT;
    loop {
        let st = admin.result("session/status", json!({"sessionId": sid}));
        if st["autonomy"] == "read_only" {
            break;
        }
        assert!(Instant::now() < deadline, "autonomy not configured: {st}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Compact: the page shows what the daemon announced.
    click_text(&page, ".tools button", "Compact").await;
    page.wait_for("[...document.querySelectorAll('.block.note')].some(e => e.textContent.includes('Context compacted'))", WAIT)
        .await;

    // Rewind: the last prompt leaves the transcript and comes back to the composer.
    click_text(&page, ".tools button", "Rewind").await;
    // It asks first (SPEC §22).
    page.wait_for("document.querySelector('.rewind-confirm form')", WAIT)
        .await;
    page.click(".rewind-confirm button[data-choice='all']")
        .await;
    page.wait_for(
        "document.querySelector('form.composer textarea').value === 'prompt number 4'",
        WAIT,
    )
    .await;
    page.wait_for("document.querySelectorAll('.block.user').length === 3 && !document.querySelector('.blocks').textContent.includes('prompt number 4')", WAIT)
        .await;

    // Fork: a new session with the transcript so far.
    click_text(&page, ".tools button", "Fork").await;
    page.wait_for(
        &format!(
            "location.hash.startsWith('#/session/') && !location.hash.includes({})",
            json!(sid)
        ),
        WAIT,
    )
    .await;
    page.wait_for(
        "document.querySelectorAll('.block.user').length === 3",
        WAIT,
    )
    .await;

    // Esc cancels a running turn (a slow answer from the fake provider).
    let slow = admin.new_session(json!({"agentAlias": "tools"}))["sessionId"]
        .as_str()
        .expect("sid")
        .to_string();
    fake.push(Scripted::chunks(
        (0..400).map(|i| format!("slow{i} ")),
        Duration::from_millis(25),
    ));
    open_session(&page, &slow).await;
    send_prompt(&page, "take your time").await;
    page.wait_for(
        "document.querySelector('.block.assistant .md')?.textContent.includes('slow5 ')",
        WAIT,
    )
    .await;
    page.key("Escape", 0).await;
    page.wait_for("[...document.querySelectorAll('.block.note')].some(e => e.textContent.includes('Turn cancelled'))", WAIT)
        .await;
    assert!(!page.text(".block.assistant").await.contains("slow399"));

    // An ask_user question becomes a form; its answer goes back to the model.
    fake.push(Scripted::tool_call(
        "tc_ask",
        "ask_user",
        json!({"question": "Which colour?", "choices": ["red", "green"]}),
    ));
    fake.push(Scripted::chunks(["noted"], Duration::from_millis(5)));
    send_prompt(&page, "ask me something").await;
    page.wait_for(
        "document.querySelector('form.ask')?.textContent.includes('Which colour?')",
        WAIT,
    )
    .await;
    page.eval("document.querySelector('form.ask input[value=green]').click(); document.querySelector('form.ask').requestSubmit()").await;
    page.wait_for("!document.querySelector('form.ask') && [...document.querySelectorAll('.block.assistant:not(.streaming)')].some(e => e.textContent.includes('noted'))", WAIT)
        .await;
    let asked = fake.requests();
    let last = asked.last().expect("a request").to_string();
    assert!(
        last.contains("green"),
        "the answer reached the model: {last}"
    );
    no_csp_problems(&page).await;
}

/// Waits until the session has `n` subscribers (the browser's page and a chat window).
fn wait_subscribers(c: &mut Conn, session: &str, n: u64) {
    let deadline = Instant::now() + WAIT;
    loop {
        let list = c.result("session/list", json!({}));
        let subscribers = list["sessions"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["sessionId"] == session))
            .map(|s| s["subscribers"].clone())
            .unwrap_or_default();
        if subscribers == n {
            return;
        }
        assert!(Instant::now() < deadline, "{list}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn a_terminal_chat_and_a_browser_see_each_others_prompts_and_answers() {
    let dash = Dash::start(&config(None, ""));
    let browser = Browser::launch().await;
    let page = browser.page(1280, 800).await;
    login(&page, &dash.login_url(dash.port)).await;
    let mut admin = dash.admin();
    let sid = admin.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .expect("sid")
        .to_string();
    open_session(&page, &sid).await;
    let dir = dash.daemon.config_dir().to_path_buf();
    let mut chat = tokio::task::block_in_place(|| {
        let mut chat = ChatWindow::open(&dir, &["--session", &sid]);
        chat.expect("> ");
        wait_subscribers(&mut admin, &sid, 2);
        // Typed in the terminal: the echo agent streams the words back.
        chat.send("typed in the terminal\r");
        chat.expect(" out · context ");
        chat
    });
    page.wait_for(
        "[...document.querySelectorAll('.block.user .prompt')].some(e => e.textContent === 'typed in the terminal')",
        WAIT,
    )
    .await;
    page.wait_for(
        "[...document.querySelectorAll('.block.assistant:not(.streaming)')].some(e => e.textContent.includes('typed in the terminal'))",
        WAIT,
    )
    .await;

    // Typed in the browser: the terminal shows the prompt with its sender, then the answer.
    send_prompt(&page, "sent from the browser").await;
    let screen = tokio::task::block_in_place(|| {
        chat.expect("sent from the browser");
        chat.expect(" out · context ");
        chat.screen()
    });
    assert!(
        screen
            .iter()
            .any(|l| l.starts_with("> sent from the browser ·")),
        "the prompt with its sender: {screen:#?}"
    );
    assert!(
        screen.iter().any(|l| l == "sent from the browser"),
        "the echoed answer: {screen:#?}"
    );
    page.wait_for(
        "[...document.querySelectorAll('.block.assistant:not(.streaming)')].some(e => e.textContent.includes('sent from the browser'))",
        WAIT,
    )
    .await;
    assert_eq!(
        answers(&page)
            .await
            .iter()
            .map(|a| a.trim().to_string())
            .collect::<Vec<_>>(),
        ["typed in the terminal", "sent from the browser"],
        "each answer once, in order"
    );
    no_csp_problems(&page).await;
}
