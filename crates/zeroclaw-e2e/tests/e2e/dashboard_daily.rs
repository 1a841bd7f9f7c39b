//! The dashboard for a day's work (SPEC §22, issue 46) in a real headless Chromium at
//! desktop (1440×900) and phone (390×844) sizes: the settings form built from
//! `config/schema`, the session sidebar grouped by project, highlighted copyable code
//! blocks, tool cards that say what they run, failed
//! turns with their error, approvals with who decided, the compaction note once and the
//! context meter after compaction, rewind and fork, rewind's confirmation, the folded phone
//! header, the login label, the default agent picked, and what Close and Kill do. Plus
//! `config/schema` over the socket (no browser).
//!
//! What the daemon produces is checked as it produces it: here the code block, the approval
//! answered from the page (`decidedBy` says "from the dashboard") and the failed turn; in
//! `dashboard_real` live tool output, an approval answered from another face, `session/diff`,
//! rewind's files and row, projects from real `cwd`s and the `error` row after a reload. The
//! one case stubbed here is a daemon without `session/diff` (-32601), which this daemon
//! cannot be. Screenshots go to
//! `target/dashboard-screenshots/daily-*.png`.

use crate::browser;
use crate::common;

use std::time::{Duration, Instant};

use browser::{Browser, Page, screenshot_dir};
use common::TestDaemon;
use serde_json::json;
use zeroclaw_testkit::{FakeOpenAi, Scripted};

pub(crate) const WAIT: Duration = Duration::from_secs(20);
const SECRET: &str = "sk-daily-secret-4242";
const MCP_SECRET: &str = "mcp-env-secret-77";

/// A daemon whose gateway starts with it on a free loopback port.
pub(crate) struct Daily {
    pub(crate) daemon: TestDaemon,
    pub(crate) port: u16,
}

impl Daily {
    pub(crate) fn start(config: String) -> Daily {
        let daemon = TestDaemon::start_with(&[], move |dir| {
            std::fs::write(dir.join("config.toml"), config).expect("config")
        });
        let port = common::ws::listening_port(&daemon);
        Daily { daemon, port }
    }

    pub(crate) fn admin(&self) -> common::Conn {
        self.daemon.client()
    }

    pub(crate) fn login_url(&self) -> String {
        let r = self.admin().result("dashboard/login", json!({}));
        r["url"].as_str().expect("login url").to_string()
    }
}

/// Agents `alpha` (sorts before `default`) and `default` on echo, a provider `remote`
/// holding a secret key, and with a fake OpenAI server: `tools` (supervised) and `builder`
/// (full autonomy, so its writes need no approval).
pub(crate) fn config(fake: Option<&str>) -> String {
    let mut c = String::from(
        r#"[wss]
enabled = true
bind = "127.0.0.1"
port = 0
[providers.echo]
kind = "echo"
[providers.remote]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key = "SECRET"
model = "m"
[agents.alpha]
provider = "echo"
[agents.alpha.mcp_servers.files]
command = "true"
env = { TOKEN = "MCPSECRET" }
[agents.default]
provider = "echo"
tools = ["bash", "read_file", "write_file", "ask_user"]
keep_recent_turns = 1
"#,
    )
    .replace("MCPSECRET", MCP_SECRET)
    .replace("SECRET", SECRET);
    if let Some(url) = fake {
        c.push_str(&format!(
            r#"[providers.fake]
kind = "openai"
base_url = "{url}"
model = "m"
timeout_secs = 30
[agents.tools]
provider = "fake"
tools = ["bash", "read_file", "write_file"]
autonomy = "supervised"
max_tool_iterations = 5
[agents.builder]
provider = "fake"
tools = ["bash", "read_file", "write_file"]
autonomy = "full"
max_tool_iterations = 5
"#
        ));
    }
    c
}

pub(crate) async fn login(page: &Page<'_>, url: &str) {
    page.goto(url).await;
    page.wait_for("document.querySelector('ul.sessions li')", WAIT)
        .await;
}

pub(crate) async fn open_session(page: &Page<'_>, sid: &str) {
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

pub(crate) fn new_session(d: &Daily, agent: &str) -> String {
    d.admin().new_session(json!({"agentAlias": agent}))["sessionId"]
        .as_str()
        .expect("sid")
        .to_string()
}

pub(crate) async fn no_page_problems(page: &Page<'_>) {
    let problems = page.csp_problems().await;
    assert!(problems.is_empty(), "CSP violations: {problems:?}");
    let exceptions = page.exceptions();
    assert!(exceptions.is_empty(), "page exceptions: {exceptions:?}");
}

/// Clicks the middle of the first `selector` element with the mouse.
async fn mouse_click(page: &Page<'_>, selector: &str) {
    let at = page
        .eval(&format!(
            "(() => {{ const e = document.querySelector({}); e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()",
            json!(selector)
        ))
        .await;
    for kind in ["mousePressed", "mouseReleased"] {
        page.call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": at[0], "y": at[1], "button": "left", "clickCount": 1}),
        )
        .await;
    }
}

/// Clicks the first `selector` element whose trimmed text is `text`.
pub(crate) async fn click_text(page: &Page<'_>, selector: &str, text: &str) {
    let ok = page
        .eval(&format!(
            "(() => {{ const e = [...document.querySelectorAll({})].find(e => e.textContent.trim() === {}); if (!e) return false; e.click(); return true; }})()",
            json!(selector),
            json!(text)
        ))
        .await;
    assert_eq!(ok, json!(true), "no {selector} reading {text}");
}

#[test]
fn config_schema_answers_a_grouped_form_schema_without_secrets() {
    let d = Daily::start(config(None));
    let mut c = d.admin();
    let r = c.result("config/schema", json!({}));
    let s = &r["schema"];
    let groups: Vec<&str> = s["x-groups"]
        .as_array()
        .expect("x-groups")
        .iter()
        .filter_map(|g| g["id"].as_str())
        .collect();
    assert_eq!(
        groups,
        [
            "providers",
            "agents",
            "permissions",
            "gateway",
            "hooks",
            "notify",
            "webhooks"
        ]
    );
    for (key, prop) in s["properties"].as_object().expect("properties") {
        assert!(prop["x-group"].is_string(), "{key} has no section");
        assert!(prop["description"].is_string(), "{key} has no help text");
    }
    let agent = &s["properties"]["agents"]["additionalProperties"]["properties"];
    assert_eq!(
        agent["autonomy"]["enum"],
        json!(["supervised", "full", "read_only", "plan"])
    );
    assert_eq!(agent["auto_compact"]["type"], "boolean");
    assert_eq!(agent["max_tool_iterations"]["maximum"], 10_000);
    assert!(
        agent["provider"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("providers")),
        "{}",
        agent["provider"]
    );
    let key = &s["properties"]["providers"]["additionalProperties"]["properties"]["api_key"];
    assert_eq!(key["writeOnly"], true, "{key}");
    assert!(
        !r.to_string().contains(SECRET),
        "the schema holds no values"
    );
    // Every key the schema offers is one config/set knows: a value of its type is taken.
    let set = c.result(
        "config/set",
        json!({"prop": "agents.alpha.autonomy", "value": agent["autonomy"]["enum"][1]}),
    );
    assert_eq!(set["set"], true, "{set}");
    // The same document for every call; params are not a place for data.
    assert_eq!(c.result("config/schema", json!({}))["schema"], *s);
    // A new connection is told it may call it.
    let mut fresh = common::Conn::open(&d.daemon.socket);
    let init = fresh.result("initialize", json!({"protocolVersion": 1}));
    assert!(
        init["capabilities"]
            .as_array()
            .is_some_and(|m| m.contains(&json!("config/schema"))),
        "{init}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn the_settings_form_is_built_from_the_schema_at_both_sizes() {
    let d = Daily::start(config(None));
    let browser = Browser::launch().await;
    let dir = screenshot_dir();
    for (w, hgt, name) in [(1440, 900, "desktop"), (390, 844, "phone")] {
        let page = browser.page(w, hgt).await;
        login(&page, &d.login_url()).await;
        page.eval("location.hash = '#/config'").await;
        page.wait_for("document.querySelector('.settings form.field')", WAIT)
            .await;
        // Sections in the schema's order.
        let titles = page
            .eval("[...document.querySelectorAll('section.group > h2')].map(e => e.textContent)")
            .await;
        assert_eq!(
            titles,
            json!([
                "Providers",
                "Agents",
                "Permissions",
                "Gateway and limits",
                "Hooks",
                "Notifications",
                "Webhooks"
            ])
        );
        // An enum is a select, a boolean a switch, a number a number box, each with help.
        let kinds = page
            .eval(
                "(() => { const k = p => document.querySelector(`form.field[data-prop=\"${p}\"]`)?.dataset.kind; \
                 return [k('agents.default.autonomy'), k('agents.default.auto_compact'), k('agents.default.max_tool_iterations'), k('providers.remote.kind'), k('agents.default.tools')]; })()",
            )
            .await;
        assert_eq!(
            kinds,
            json!(["select", "switch", "number", "select", "list"])
        );
        assert_eq!(
            page.eval("document.querySelector('form.field[data-prop=\"agents.default.auto_compact\"] input').getAttribute('role')").await,
            json!("switch")
        );
        let without_help = page
            .eval("[...document.querySelectorAll('form.field')].filter(f => !f.querySelector('.help')).map(f => f.dataset.prop)")
            .await;
        assert_eq!(without_help, json!([]), "fields without help text");
        // The secret is never shown back, not even in a value.
        let secret = page
            .eval("(() => { const i = document.querySelector('form.field[data-prop=\"providers.remote.api_key\"] input'); return [i.type, i.value, i.placeholder]; })()")
            .await;
        assert_eq!(secret[0], "password");
        assert_eq!(secret[1], "");
        assert!(
            secret[2].as_str().unwrap_or_default().contains("set"),
            "{secret}"
        );
        let html = page.eval("document.documentElement.outerHTML").await;
        assert!(!html.as_str().unwrap_or_default().contains(SECRET));
        assert!(!html.as_str().unwrap_or_default().contains(MCP_SECRET));
        // A map of secrets (an MCP server's env) is one write-only field per name.
        let env = page
            .eval("(() => { const i = document.querySelector('form.field[data-prop=\"agents.alpha.mcp_servers.files.env.TOKEN\"] input'); return i ? [i.type, i.value] : null; })()")
            .await;
        assert_eq!(env, json!(["password", ""]));
        // Fewer raw text boxes than properties: most are typed widgets.
        let counts = page
            .eval("[document.querySelectorAll('form.field').length, document.querySelectorAll('form.field input[type=text]').length]")
            .await;
        assert!(
            counts[1].as_u64() < counts[0].as_u64().map(|n| n / 2),
            "{counts}"
        );
        page.screenshot(&dir.join(format!("daily-settings-{name}.png")))
            .await;
        // The agents' section: selects, switches, number boxes, lists.
        page.eval("document.querySelector('fieldset.entry[data-prop=\"agents.default\"]').scrollIntoView({block: 'start'})")
            .await;
        page.screenshot(&dir.join(format!("daily-settings-agents-{name}.png")))
            .await;
        no_page_problems(&page).await;
    }

    // Editing: the daemon's refusal at the field, then a good value, a switch, a select.
    let page = browser.page(1440, 900).await;
    login(&page, &d.login_url()).await;
    page.eval("location.hash = '#/config'").await;
    page.wait_for("document.querySelector('.settings form.field')", WAIT)
        .await;
    let field = "form.field[data-prop=\"agents.default.max_tool_iterations\"]";
    let set_number = |v: &str| {
        format!(
            "(() => {{ const f = document.querySelector('{}'); const i = f.querySelector('input'); i.value = {v}; i.dispatchEvent(new Event('input')); f.requestSubmit(); return true; }})()",
            field.replace('\'', "\\'")
        )
    };
    page.eval(&set_number("'99999'")).await;
    page.wait_for(
        &format!("document.querySelector('{field} .prop-error')?.textContent"),
        WAIT,
    )
    .await;
    let err = page.text(&format!("{field} .prop-error")).await;
    assert!(err.contains("-32602") && err.contains("99999"), "{err}");
    assert_eq!(
        page.eval(&format!(
            "document.querySelector('{field}').classList.contains('invalid')"
        ))
        .await,
        json!(true)
    );
    page.eval(&format!(
        "document.querySelector('{field}').scrollIntoView({{block: 'center'}})"
    ))
    .await;
    page.screenshot(&dir.join("daily-settings-error-desktop.png"))
        .await;
    page.eval(&set_number("'7'")).await;
    page.wait_for(
        &format!("document.querySelector('{field} .prop-error.ok')"),
        WAIT,
    )
    .await;
    page.eval("(() => { const i = document.querySelector('form.field[data-prop=\"agents.default.auto_compact\"] input'); i.click(); return true; })()").await;
    page.eval("(() => { const s = document.querySelector('form.field[data-prop=\"agents.alpha.autonomy\"] select'); s.value = 'read_only'; s.dispatchEvent(new Event('change')); return true; })()").await;
    let mut admin = d.admin();
    let deadline = Instant::now() + WAIT;
    loop {
        let got = [
            "agents.default.max_tool_iterations",
            "agents.default.auto_compact",
            "agents.alpha.autonomy",
        ]
        .map(|p| admin.result("config/get", json!({"prop": p}))["value"].clone());
        if got == [json!(7), json!(false), json!("read_only")] {
            break;
        }
        assert!(Instant::now() < deadline, "not written: {got:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A new secret is written, and still not shown back.
    page.eval(
        "(() => { const f = document.querySelector('form.field[data-prop=\"providers.remote.api_key\"]'); const i = f.querySelector('input'); i.value = 'sk-new-one'; i.dispatchEvent(new Event('input')); f.requestSubmit(); return true; })()",
    )
    .await;
    page.wait_for(
        "document.querySelector('form.field[data-prop=\"providers.remote.api_key\"] .prop-error.ok')",
        WAIT,
    )
    .await;
    assert_eq!(
        page.eval("document.querySelector('form.field[data-prop=\"providers.remote.api_key\"] input').value").await,
        json!("")
    );
    no_page_problems(&page).await;
}

/// The prompt the `tools` agent answers first: a fenced Rust block.
const CODE_ANSWER: &str = "Here it is:\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn a_session_for_a_days_work_at_desktop_and_phone_sizes() {
    let fake = FakeOpenAi::start().await.expect("fake openai");
    let d = Daily::start(config(Some(&fake.base_url())));
    let browser = Browser::launch().await;
    let desk = browser.page(1440, 900).await;
    let phone = browser.page(390, 844).await;
    let dir = screenshot_dir();

    // The login label stays on one line on a phone.
    phone.goto(&format!("http://127.0.0.1:{}/", d.port)).await;
    phone
        .wait_for("document.querySelector('form.login .label-text')", WAIT)
        .await;
    let lines = phone
        .eval("(() => { const e = document.querySelector('form.login .label-text'); return Math.round(e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight)); })()")
        .await;
    assert_eq!(lines, json!(1), "the login label's lines");

    for title in ["Release notes", "Parser bug"] {
        let sid = new_session(&d, "default");
        d.admin().result(
            "session/set_title",
            json!({"sessionId": sid, "title": title}),
        );
    }
    login(&desk, &d.login_url()).await;
    login(&phone, &d.login_url()).await;
    // The agent picker starts on the default agent, though `alpha` sorts first.
    desk.wait_for(
        "document.querySelector('form.new select')?.options.length > 2",
        WAIT,
    )
    .await;
    assert_eq!(
        desk.eval("document.querySelector('form.new select').value")
            .await,
        json!("default")
    );
    // Close and Kill say what they do.
    let tips = desk
        .eval("(() => { const b = [...document.querySelectorAll('li.session .actions button')]; const t = n => b.find(x => x.textContent === n)?.title || ''; return [t('Close'), t('Kill')]; })()")
        .await;
    assert!(
        tips[0]
            .as_str()
            .unwrap_or_default()
            .contains("history stays"),
        "{tips}"
    );
    assert!(
        tips[1].as_str().unwrap_or_default().contains("never"),
        "{tips}"
    );

    // A session on the fake model: an answer with a code block, then a bash call that
    // needs approval.
    let sid = new_session(&d, "tools");
    d.admin().result(
        "session/set_title",
        json!({"sessionId": sid, "title": "Fix the build"}),
    );
    fake.push(Scripted::text(CODE_ANSWER));
    let (_, done) = d.admin().prompt(&sid, "show me a main");
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    open_session(&desk, &sid).await;
    open_session(&phone, &sid).await;

    // The sidebar: beside the session on a desktop, grouped by project, this one marked.
    desk.wait_for(
        "document.querySelector('aside.sidebar a[aria-current=page]')",
        WAIT,
    )
    .await;
    let side = desk
        .eval("(() => { const a = document.querySelector('aside.sidebar'); const r = a.getBoundingClientRect(); const v = document.querySelector('.session-view').getBoundingClientRect(); return [getComputedStyle(a).display, r.width > 150, r.right <= v.left + 1, [...a.querySelectorAll('.project-name')].map(e => e.firstChild.textContent), a.querySelectorAll('li').length]; })()")
        .await;
    assert_eq!(side[0], "flex", "{side}");
    assert_eq!(side[1], true, "{side}");
    assert_eq!(side[2], true, "sidebar left of the session: {side}");
    assert_eq!(side[3], json!(["no project"]), "{side}");
    assert_eq!(side[4], json!(3), "{side}");
    assert_eq!(
        phone
            .eval("getComputedStyle(document.querySelector('aside.sidebar')).display")
            .await,
        json!("none")
    );
    // The code block: language, Copy, highlighting, first line where the others start.
    for page in [&desk, &phone] {
        page.wait_for(
            "document.querySelector('.block.assistant .code-block .code-lang')",
            WAIT,
        )
        .await;
        let code = page
            .eval("(() => { const b = document.querySelector('.code-block'); const code = b.querySelector('pre code'); const t = code.textContent; const r = document.createRange(); const at = i => { let n = 0; const w = document.createTreeWalker(code, NodeFilter.SHOW_TEXT); let node; while ((node = w.nextNode())) { if (n + node.length > i) { r.setStart(node, i - n); r.setEnd(node, i - n + 1); return r.getBoundingClientRect().left; } n += node.length; } return null; }; return [b.querySelector('.code-lang').textContent, b.querySelector('button.code-copy')?.textContent, code.querySelectorAll('span[class^=hljs-]').length > 0, at(0), at(t.indexOf('}', t.indexOf('println'))), t]; })()")
            .await;
        assert_eq!(code[0], "rust", "{code}");
        assert_eq!(code[1], "Copy", "{code}");
        assert_eq!(code[2], true, "highlighted: {code}");
        let (first, last) = (code[3].as_f64(), code[4].as_f64());
        assert!(
            first.is_some() && first == last,
            "first line shifted: {code}"
        );
        assert_eq!(code[5], "fn main() {\n    println!(\"hi\");\n}\n");
    }
    // What the page hands the clipboard is recorded on its way there.
    desk.eval("(() => { const c = navigator.clipboard; const write = c.writeText.bind(c); c.writeText = t => { window.copiedText = t; return write(t); }; return true; })()")
        .await;
    // The clipboard is for the focused page: a headless page is told it has focus.
    desk.call(
        "Emulation.setFocusEmulationEnabled",
        json!({"enabled": true}),
    )
    .await;
    // A real click (the clipboard wants a user's gesture, which a script's click is not).
    mouse_click(&desk, ".code-block button.code-copy").await;
    desk.wait_for(
        "document.querySelector('.code-block button.code-copy')?.dataset.copied === 'yes'",
        WAIT,
    )
    .await;
    let copied = desk.eval("window.copiedText").await;
    assert_eq!(copied, json!("fn main() {\n    println!(\"hi\");\n}\n"));

    // A bash call: the collapsed card names the command, never raw JSON; an approval.
    let command = "printf 'compiling\\n'; sleep 0; echo build-finished";
    fake.push(Scripted::tool_call(
        "tc_bash",
        "bash",
        json!({"command": command}),
    ));
    fake.push(Scripted::text("The build is fixed."));
    desk.type_text("form.composer textarea", "fix the build")
        .await;
    desk.key("Enter", 0).await;
    for page in [&desk, &phone] {
        page.wait_for(
            "document.querySelector('.block.approval .actions button')",
            WAIT,
        )
        .await;
        let summary = page.text(".block.tool summary").await;
        assert!(
            summary.contains("bash") && summary.contains("build-finished"),
            "{summary}"
        );
        assert!(
            !summary.contains('{') && !summary.contains("\"command\""),
            "raw JSON: {summary}"
        );
    }
    desk.screenshot(&dir.join("daily-session-desktop.png"))
        .await;
    // The phone's header is one line; its tools are in the menu.
    let head = phone
        .eval("(() => { const h = document.querySelector('.session-head'); return [Math.round(h.getBoundingClientRect().height), getComputedStyle(document.querySelector('.tools')).display, !!document.querySelector('.menu-toggle') && getComputedStyle(document.querySelector('.menu-toggle')).display !== 'none']; })()")
        .await;
    assert!(
        head[0].as_u64().is_some_and(|px| px <= 48),
        "header height: {head}"
    );
    assert_eq!(head[1], "none", "{head}");
    assert_eq!(head[2], true, "{head}");
    phone.screenshot(&dir.join("daily-session-phone.png")).await;
    phone.click(".menu-toggle").await;
    phone
        .wait_for(
            "getComputedStyle(document.querySelector('.tools')).display === 'flex'",
            WAIT,
        )
        .await;
    assert!(phone.text(".tools").await.contains("Compact"));
    phone
        .screenshot(&dir.join("daily-session-menu-phone.png"))
        .await;
    phone.click(".menu-toggle").await;
    desk.click(".block.approval button[data-decision='allow_once']")
        .await;
    for page in [&desk, &phone] {
        page.wait_for(
            "[...document.querySelectorAll('.block.assistant:not(.streaming)')].some(e => e.textContent.includes('The build is fixed.'))",
            WAIT,
        )
        .await;
    }
    let resolved = desk.text(".block.approval .resolved").await;
    assert!(
        resolved.starts_with("Allowed once by ") && resolved.ends_with(" from the dashboard"),
        "{resolved}"
    );

    // A failed turn shows the provider's error.
    fake.push(Scripted::http_error(
        400,
        "the model is unavailable: quota exceeded",
    ));
    desk.type_text("form.composer textarea", "one more thing")
        .await;
    desk.key("Enter", 0).await;
    for page in [&desk, &phone] {
        page.wait_for(
            "document.querySelector('.block.failure')?.textContent.includes('quota exceeded')",
            WAIT,
        )
        .await;
    }
    desk.eval("document.querySelector('.block.failure').scrollIntoView({block: 'end'})")
        .await;
    desk.screenshot(&dir.join("daily-failed-turn-desktop.png"))
        .await;
    // Its `error` row after a reload: dashboard_real::a_turn_the_provider_failed_….
    no_page_problems(&desk).await;
    no_page_problems(&phone).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn compaction_shows_once_and_the_meter_follows_compaction_rewind_and_fork() {
    let d = Daily::start(config(None));
    let browser = Browser::launch().await;
    let page = browser.page(1440, 900).await;
    login(&page, &d.login_url()).await;
    let mut admin = d.admin();
    let sid = new_session(&d, "default");
    for i in 1..=4 {
        admin.prompt(
            &sid,
            &format!("prompt number {i} with a few more words to count"),
        );
    }
    open_session(&page, &sid).await;
    page.wait_for(
        "document.querySelectorAll('.block.user').length === 4",
        WAIT,
    )
    .await;
    let meter_is_status = |sid: &str| {
        let st = d
            .admin()
            .result("session/status", json!({"sessionId": sid}));
        format!(
            "document.querySelector('.usage meter')?.dataset.used === {}",
            json!(
                st["usage"]["contextTokens"]
                    .as_u64()
                    .unwrap_or(0)
                    .to_string()
            )
        )
    };
    page.wait_for(&meter_is_status(&sid), WAIT).await;
    let before = page
        .eval("Number(document.querySelector('.usage meter').dataset.used)")
        .await;

    click_text(&page, ".tools button", "Compact").await;
    page.wait_for("[...document.querySelectorAll('.block.note')].some(e => e.textContent.includes('Context compacted'))", WAIT)
        .await;
    page.wait_for(&meter_is_status(&sid), WAIT).await;
    let after = page
        .eval("Number(document.querySelector('.usage meter').dataset.used)")
        .await;
    assert!(after.as_u64() < before.as_u64(), "meter {before} → {after}");
    // Positive control: a later turn is drawn, and still one compaction note.
    page.type_text("form.composer textarea", "after the compaction")
        .await;
    page.key("Enter", 0).await;
    page.wait_for("[...document.querySelectorAll('.block.assistant:not(.streaming)')].some(e => e.textContent.includes('after the compaction'))", WAIT)
        .await;
    let notes = "[...document.querySelectorAll('.block.note')].filter(e => e.textContent.includes('Context compacted')).length";
    assert_eq!(page.eval(notes).await, json!(1));
    // And after a reload of the page.
    page.call("Page.reload", json!({})).await;
    page.wait_for(
        "document.querySelectorAll('.block.assistant').length >= 5",
        WAIT,
    )
    .await;
    page.wait_for(&meter_is_status(&sid), WAIT).await;
    assert_eq!(page.eval(notes).await, json!(1));

    let before_rewind = page
        .eval("Number(document.querySelector('.usage meter').dataset.used)")
        .await;
    // Rewind asks first; "Conversation only" keeps the files.
    click_text(&page, ".tools button", "Rewind").await;
    page.wait_for("document.querySelector('.rewind-confirm form')", WAIT)
        .await;
    let dialog = page.text(".rewind-confirm form").await;
    assert!(
        dialog.contains("Conversation only") && dialog.contains("1 turn"),
        "{dialog}"
    );
    page.screenshot(&screenshot_dir().join("daily-rewind-confirm-desktop.png"))
        .await;
    page.click(".rewind-confirm button[data-choice='conversation']")
        .await;
    page.wait_for(
        "document.querySelector('form.composer textarea').value === 'after the compaction'",
        WAIT,
    )
    .await;
    page.wait_for("[...document.querySelectorAll('.block.note')].some(e => e.textContent.includes('files were left as they are'))", WAIT)
        .await;
    page.wait_for(&meter_is_status(&sid), WAIT).await;
    let after_rewind = page
        .eval("Number(document.querySelector('.usage meter').dataset.used)")
        .await;
    assert!(
        after_rewind.as_u64() < before_rewind.as_u64(),
        "meter {before_rewind} → {after_rewind} after the rewind"
    );
    // Cancel leaves everything as it was.
    let users = page
        .eval("document.querySelectorAll('.block.user').length")
        .await;
    click_text(&page, ".tools button", "Rewind").await;
    page.wait_for("document.querySelector('.rewind-confirm form')", WAIT)
        .await;
    page.click(".rewind-confirm button[data-choice='cancel']")
        .await;
    page.wait_for("!document.querySelector('.rewind-confirm')", WAIT)
        .await;
    assert_eq!(
        page.eval("document.querySelectorAll('.block.user').length")
            .await,
        users
    );

    // Fork: the new session's meter is its own status.
    click_text(&page, ".tools button", "Fork").await;
    page.wait_for(
        &format!(
            "location.hash.startsWith('#/session/') && !location.hash.includes({})",
            json!(sid)
        ),
        WAIT,
    )
    .await;
    let forked = page
        .eval("decodeURIComponent(location.hash.slice('#/session/'.length))")
        .await;
    let forked = forked.as_str().expect("fork id").to_string();
    page.wait_for(&meter_is_status(&forked), WAIT).await;
    no_page_problems(&page).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn rewind_restores_the_files_a_turn_wrote_and_says_which() {
    let fake = FakeOpenAi::start().await.expect("fake openai");
    let d = Daily::start(config(Some(&fake.base_url())));
    let browser = Browser::launch().await;
    let page = browser.page(1440, 900).await;
    login(&page, &d.login_url()).await;
    let sid = new_session(&d, "builder");
    fake.push(Scripted::tool_call(
        "tc_w",
        "write_file",
        json!({"path": "notes.txt", "content": "written by the turn\n"}),
    ));
    fake.push(Scripted::text("Wrote notes.txt."));
    let (_, done) = d.admin().prompt(&sid, "write the notes");
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    open_session(&page, &sid).await;
    // The card names the path, not JSON.
    page.wait_for(
        "document.querySelector('.block.tool .tool-summary')?.textContent === 'notes.txt'",
        WAIT,
    )
    .await;
    // "1 file changed" under the turn, opening to the file and its highlighted patch.
    page.wait_for(
        "document.querySelector('.block.diff .files-changed')?.textContent === '1 file changed'",
        WAIT,
    )
    .await;
    page.eval("document.querySelectorAll('.block.diff details').forEach(d => d.open = true)")
        .await;
    let diff = page
        .eval("(() => { const b = document.querySelector('.block.diff'); return [b.previousElementSibling.dataset.turn === b.dataset.turn, b.querySelector('.diff-file code.path').textContent, b.querySelector('.diff-file .status').textContent, !!b.querySelector('.hljs-addition')]; })()")
        .await;
    assert_eq!(diff, json!([true, "notes.txt", "added", true]));
    page.screenshot(&screenshot_dir().join("daily-diff-desktop.png"))
        .await;
    click_text(&page, ".block.user button", "Rewind here").await;
    // The confirmation lists the files that go back.
    page.wait_for(
        "document.querySelector('.rewind-confirm .rewind-list')?.textContent.includes('notes.txt')",
        WAIT,
    )
    .await;
    page.click(".rewind-confirm button[data-choice='all']")
        .await;
    page.wait_for(
        "[...document.querySelectorAll('.block.note')].some(e => e.textContent.includes('Rewound (1 turn taken back); 1 file restored') && e.textContent.includes('notes.txt'))",
        WAIT,
    )
    .await;
    assert_eq!(
        page.eval("document.querySelector('form.composer textarea').value")
            .await,
        json!("write the notes")
    );
    no_page_problems(&page).await;

    // A daemon without `session/diff` (-32601): no line, and the confirmation lists none.
    // Stubbed in the page: this daemon always serves the method.
    let other = browser.page(1440, 900).await;
    login(&other, &d.login_url()).await;
    stub_no_diff(&other).await;
    let sid = new_session(&d, "builder");
    fake.push(Scripted::tool_call(
        "tc_w2",
        "write_file",
        json!({"path": "more.txt", "content": "x\n"}),
    ));
    fake.push(Scripted::text("Wrote more.txt."));
    d.admin().prompt(&sid, "write more");
    open_session(&other, &sid).await;
    click_text(&other, ".block.user button", "Rewind here").await;
    // Positive control: the lookup ran (its "Looking up" line is gone).
    other
        .wait_for("document.querySelector('.rewind-confirm .rewind-files') && !document.querySelector('.rewind-confirm .rewind-files').textContent.includes('Looking up')", WAIT)
        .await;
    assert_eq!(
        other
            .eval("[document.querySelectorAll('.block.diff').length, document.querySelector('.rewind-confirm .rewind-files').textContent]")
            .await,
        json!([0, ""])
    );
    other
        .click(".rewind-confirm button[data-choice='cancel']")
        .await;
    no_page_problems(&other).await;
}

/// Makes the page's `session/diff` answer -32601 (no such method), as an older daemon.
async fn stub_no_diff(page: &Page<'_>) {
    let reply = "Promise.reject({code: -32601, message: 'method not found'})";
    page.eval(&format!(
        "import('/assets/rpc.js').then(m => {{ const r = m.rpc; const call = r.call.bind(r); const can = r.can.bind(r); r.can = x => x === 'session/diff' || can(x); r.call = (method, params, t) => method === 'session/diff' ? {reply} : call(method, params, t); return true; }})"
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn each_automatic_compaction_shows_one_note_live_and_after_a_reload() {
    let mut c = config(None);
    // An echo agent whose window is so small that turns 3 and 4 each compact first (both
    // with the same figures: two notes all the same, not one).
    c.push_str("[agents.tiny]\nprovider = \"echo\"\nmax_context_tokens = 80\nkeep_recent_turns = 1\ncompact_threshold = 0.5\n");
    let d = Daily::start(c);
    let browser = Browser::launch().await;
    let page = browser.page(1440, 900).await;
    login(&page, &d.login_url()).await;
    let sid = new_session(&d, "tiny");
    open_session(&page, &sid).await;
    for i in 1..=4 {
        page.type_text(
            "form.composer textarea",
            &format!("prompt {i} with quite a few words in it to fill the context"),
        )
        .await;
        page.key("Enter", 0).await;
        page.wait_for(
            &format!("[...document.querySelectorAll('.block.assistant:not(.streaming)')].some(e => e.textContent.includes('prompt {i} with'))"),
            WAIT,
        )
        .await;
    }
    let rows = d
        .admin()
        .result("session/messages", json!({"sessionId": sid, "limit": 100}));
    let compactions = rows["messages"]
        .as_array()
        .map(|m| m.iter().filter(|r| r["role"] == "compaction").count())
        .unwrap_or(0);
    assert_eq!(compactions, 2, "{rows}");
    let notes = "[...document.querySelectorAll('.block.note')].filter(e => e.textContent.includes('Context compacted')).map(e => e.dataset.turn)";
    let live = page.eval(notes).await;
    assert_eq!(live.as_array().map(Vec::len), Some(2), "{live}");
    assert_ne!(live[0], live[1], "{live}");
    page.call("Page.reload", json!({})).await;
    page.wait_for(
        "document.querySelectorAll('.block.assistant').length === 4",
        WAIT,
    )
    .await;
    assert_eq!(page.eval(notes).await, live);
    no_page_problems(&page).await;
}
