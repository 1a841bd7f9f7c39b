//! The dashboard (SPEC §22) against what the real daemon sends, in headless Chromium at
//! desktop (1440×900) and phone (390×844) sizes — no update injected, no answer stubbed:
//!
//! - a real `bash` call on the fake OpenAI model that prints, sleeps and prints: its
//!   `approval_request` reaches the page and a raw socket client that said it is `chat`
//!   answers it (the page says "by … from the chat", from the real `decidedBy`); its
//!   `tool_output_chunk`s show in the card while it runs, with the time since `startedAt`;
//! - a turn that added one file and changed another: the real `session/diff` gives "2 files
//!   changed" under it, live and after a reload; "Rewind here" lists those two files, puts
//!   them back on disk, and the daemon's `rewind` row is drawn as a sentence;
//! - sessions started in two real directories (and one without): the sidebar and the phone's
//!   session list group them by project;
//! - a turn the provider fails after one retry: its `error` row after a reload, with the
//!   message and "after 1 retry".
//!
//! Screenshots go to `target/dashboard-screenshots/real-*.png`.

use crate::browser;
use crate::common;
use crate::dashboard_daily::{
    Daily, WAIT, click_text, config, login, new_session, no_page_problems, open_session,
};

use std::path::Path;

use browser::{Browser, Page, screenshot_dir};
use serde_json::{Value, json};
use zeroclaw_testkit::{FakeOpenAi, Scripted};

/// A session of `agent` whose tools run in `cwd`.
fn session_in(d: &Daily, agent: &str, cwd: &Path) -> String {
    let r = d
        .admin()
        .new_session(json!({"agentAlias": agent, "cwd": cwd}));
    r["sessionId"].as_str().expect("sessionId").to_string()
}

/// Waits until every page in `pages` makes `expr` true.
async fn on_both(pages: [&Page<'_>; 2], expr: &str) {
    for page in pages {
        page.wait_for(expr, WAIT).await;
    }
}

/// The last tool card's `[tail text, running?, elapsed text, summary]`.
const LAST_CARD: &str = "(() => { const c = [...document.querySelectorAll('.block.tool')].pop(); if (!c) return null; return [c.querySelector('pre.tail')?.textContent ?? null, !!c.querySelector('.badge.running'), c.querySelector('.elapsed')?.textContent ?? null, c.querySelector('.tool-summary')?.textContent ?? null]; })()";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn a_real_bash_call_streams_into_its_card_and_a_chat_window_approves_it() {
    let fake = FakeOpenAi::start().await.expect("fake openai");
    let d = Daily::start(config(Some(&fake.base_url())));
    let project = tempfile::tempdir().expect("project dir");
    let sid = session_in(&d, "tools", project.path());
    d.admin().result(
        "session/set_title",
        json!({"sessionId": sid, "title": "Run the tests"}),
    );
    let browser = Browser::launch().await;
    let desk = browser.page(1440, 900).await;
    let phone = browser.page(390, 844).await;
    let dir = screenshot_dir();
    login(&desk, &d.login_url()).await;
    login(&phone, &d.login_url()).await;
    open_session(&desk, &sid).await;
    open_session(&phone, &sid).await;

    // Another face of the same owner: a socket client that calls itself `chat`, watching.
    let mut chat = common::Conn::open(&d.daemon.socket);
    let init = chat.result(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "chat", "version": "1"}}),
    );
    let principal = init["principal"]["id"]
        .as_str()
        .expect("principal id")
        .to_string();
    chat.result("session/subscribe", json!({"sessionId": sid}));

    // Prints, sleeps, prints to stderr, sleeps, prints: the first line is out long before
    // the call ends.
    let command = "printf 'step one: compiling\\n'; sleep 4; printf 'warning: slow test\\n' >&2; sleep 3; printf 'all done\\n'";
    fake.push(Scripted::tool_call(
        "tc_live",
        "bash",
        json!({"command": command}),
    ));
    fake.push(Scripted::text("The tests ran."));
    desk.type_text("form.composer textarea", "run the tests")
        .await;
    desk.key("Enter", 0).await;

    // The request reaches both pages and the chat client.
    let request = loop {
        let m = chat.recv();
        if m["method"] == "session/update" && m["params"]["type"] == "approval_request" {
            break m["params"].clone();
        }
    };
    on_both(
        [&desk, &phone],
        "!!document.querySelector('.block.approval .actions button[data-decision=allow_once]')",
    )
    .await;
    for page in [&desk, &phone] {
        let shown = page.text(".block.approval pre.io").await;
        assert!(shown.contains("step one"), "{shown}");
        // The call it holds waits, without a clock.
        let card = page.eval(LAST_CARD).await;
        assert_eq!(card[1], false, "{card}");
        assert_eq!(card[2], Value::Null, "{card}");
        assert_eq!(
            page.text(".block.tool .badge").await,
            "awaiting approval",
            "{card}"
        );
    }
    desk.screenshot(&dir.join("real-approval-desktop.png"))
        .await;
    phone.screenshot(&dir.join("real-approval-phone.png")).await;

    // The chat answers it; every page says who, from where (the daemon's `decidedBy`).
    let answered = chat.result(
        "session/approve",
        json!({"sessionId": sid, "requestId": request["requestId"], "decision": "allow_once"}),
    );
    assert!(answered.is_object(), "{answered}");
    let said = format!("Allowed once by {principal} from the chat");
    on_both(
        [&desk, &phone],
        &format!(
            "[...document.querySelectorAll('.block.approval .resolved')].some(e => e.textContent === {})",
            json!(said)
        ),
    )
    .await;

    // Live output while it runs: the first line in the card, the badge still `running`,
    // the time counting — and not yet the last line.
    on_both(
        [&desk, &phone],
        "(() => { const c = [...document.querySelectorAll('.block.tool')].pop(); return c && c.querySelector('.badge.running') && (c.querySelector('pre.tail')?.textContent || '').includes('step one: compiling'); })()",
    )
    .await;
    for page in [&desk, &phone] {
        let card = page.eval(LAST_CARD).await;
        assert_eq!(card[1], true, "still running: {card}");
        assert!(
            card[2].as_str().is_some_and(|t| t.ends_with(" s")),
            "elapsed time: {card}"
        );
        assert!(
            !card[0].as_str().unwrap_or_default().contains("all done"),
            "{card}"
        );
        assert!(
            card[3]
                .as_str()
                .is_some_and(|s| s.starts_with("printf 'step one")),
            "{card}"
        );
    }
    // The stderr line arrives, marked stderr, while the tool still runs (3 s before its end).
    on_both(
        [&desk, &phone],
        "(() => { const c = [...document.querySelectorAll('.block.tool')].pop(); return c && c.querySelector('.badge.running') && (c.querySelector('pre.tail span.stderr')?.textContent || '').includes('warning: slow test'); })()",
    )
    .await;
    desk.screenshot(&dir.join("real-live-tool-desktop.png"))
        .await;
    phone
        .screenshot(&dir.join("real-live-tool-phone.png"))
        .await;

    // Its result ends the live view: no tail, no clock, the whole output in the card.
    on_both(
        [&desk, &phone],
        "[...document.querySelectorAll('.block.assistant:not(.streaming)')].some(e => e.textContent.includes('The tests ran.'))",
    )
    .await;
    for page in [&desk, &phone] {
        let done = page
            .eval("(() => { const c = [...document.querySelectorAll('.block.tool')].pop(); return [!c.querySelector('pre.tail'), !c.querySelector('.elapsed'), c.querySelector('.badge')?.textContent, c.textContent.includes('all done')]; })()")
            .await;
        assert_eq!(done, json!([true, true, "done", true]));
    }
    // After a reload the page draws the same call from history, finished.
    desk.call("Page.reload", json!({})).await;
    desk.wait_for(
        "[...document.querySelectorAll('.block.approval, .block.tool')].length > 0 && document.querySelector('.block.tool .badge')?.textContent === 'done'",
        WAIT,
    )
    .await;
    no_page_problems(&desk).await;
    no_page_problems(&phone).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn a_turn_that_wrote_files_shows_its_real_diff_and_rewind_puts_them_back() {
    let fake = FakeOpenAi::start().await.expect("fake openai");
    let d = Daily::start(config(Some(&fake.base_url())));
    let project = tempfile::tempdir().expect("project dir");
    let readme = project.path().join("README.md");
    std::fs::write(&readme, "# demo\n\nold line\n").expect("readme");
    let sid = session_in(&d, "builder", project.path());
    let browser = Browser::launch().await;
    let desk = browser.page(1440, 900).await;
    let phone = browser.page(390, 844).await;
    let dir = screenshot_dir();
    login(&desk, &d.login_url()).await;
    login(&phone, &d.login_url()).await;
    open_session(&desk, &sid).await;
    open_session(&phone, &sid).await;

    // Written by `bash`, which runs in the session's directory (`write_file` takes paths
    // from the agent's workspace).
    fake.push(Scripted::tool_call(
        "tc_w1",
        "bash",
        json!({"command": "printf 'first note\\nsecond note\\n' > notes.txt; printf '# demo\\n\\nnew line\\n' > README.md"}),
    ));
    fake.push(Scripted::text("Wrote the notes and fixed the README."));
    desk.type_text("form.composer textarea", "write the notes")
        .await;
    desk.key("Enter", 0).await;

    // Live: when the turn ends, "2 files changed" under it, from the daemon's session/diff.
    let changed =
        "document.querySelector('.block.diff .files-changed')?.textContent === '2 files changed'";
    on_both([&desk, &phone], changed).await;
    for page in [&desk, &phone] {
        page.eval("document.querySelectorAll('.block.diff details').forEach(d => d.open = true)")
            .await;
        let files = page
            .eval("[...document.querySelectorAll('.block.diff .diff-file')].map(f => [f.querySelector('code.path').textContent, f.querySelector('.status').textContent, f.querySelector('.adds').textContent.trim(), f.querySelector('.dels').textContent.trim()])")
            .await;
        assert_eq!(
            files,
            json!([
                ["README.md", "modified", "+1", "−1"],
                ["notes.txt", "added", "+2", "−0"]
            ])
        );
        let patch = page
            .eval("[...document.querySelectorAll('.block.diff .hljs-addition, .block.diff .hljs-deletion')].map(e => e.textContent.trim())")
            .await;
        let patch = patch.to_string();
        assert!(
            patch.contains("+new line") && patch.contains("-old line"),
            "{patch}"
        );
        page.eval("document.querySelector('.block.diff').scrollIntoView({block: 'center'})")
            .await;
    }
    desk.screenshot(&dir.join("real-diff-desktop.png")).await;
    phone.screenshot(&dir.join("real-diff-phone.png")).await;

    // After a reload, drawn again from history.
    desk.call("Page.reload", json!({})).await;
    desk.wait_for(changed, WAIT).await;

    // Rewind lists the two files the daemon would put back, then puts them back.
    click_text(&desk, ".block.user button", "Rewind here").await;
    desk.wait_for(
        "document.querySelector('.rewind-confirm .rewind-list')",
        WAIT,
    )
    .await;
    let listed = desk
        .eval("[...document.querySelectorAll('.rewind-confirm .rewind-list li')].map(l => l.textContent)")
        .await;
    assert_eq!(listed, json!(["modified README.md", "added notes.txt"]));
    desk.screenshot(&dir.join("real-rewind-confirm-desktop.png"))
        .await;
    desk.click(".rewind-confirm button[data-choice='all']")
        .await;
    desk.wait_for(
        "[...document.querySelectorAll('.block.note')].some(e => e.textContent.includes('Rewound (1 turn taken back); 2 files restored') && e.textContent.includes('notes.txt') && e.textContent.includes('README.md'))",
        WAIT,
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(&readme).expect("readme"),
        "# demo\n\nold line\n"
    );
    assert!(!project.path().join("notes.txt").exists());
    assert_eq!(
        desk.eval("document.querySelector('form.composer textarea').value")
            .await,
        json!("write the notes")
    );
    // The note is the daemon's `rewind` row: the other page, reloaded, draws it too, once.
    phone.call("Page.reload", json!({})).await;
    phone
        .wait_for(
            "[...document.querySelectorAll('.block.note')].filter(e => e.textContent.includes('2 files restored')).length === 1",
            WAIT,
        )
        .await;
    let raw = phone
        .eval("[...document.querySelectorAll('.block.note')].some(e => e.textContent.includes('rewoundTurns'))")
        .await;
    assert_eq!(raw, json!(false), "the row's JSON is not shown");
    no_page_problems(&desk).await;
    no_page_problems(&phone).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn sessions_in_real_directories_are_grouped_by_project() {
    let d = Daily::start(config(None));
    let root = tempfile::tempdir().expect("root");
    let zeroclaw = root.path().join("src").join("zeroclaw");
    let notes = root.path().join("notes");
    std::fs::create_dir_all(&zeroclaw).expect("dir");
    std::fs::create_dir_all(&notes).expect("dir");
    let mut made: Vec<(String, &str)> = Vec::new();
    for (cwd, title) in [
        (Some(&zeroclaw), "Parser bug"),
        (Some(&notes), "Weekly notes"),
        (None, "Scratch"),
        (Some(&zeroclaw), "Release notes"),
    ] {
        let sid = match cwd {
            Some(dir) => session_in(&d, "default", dir),
            None => new_session(&d, "default"),
        };
        d.admin().result(
            "session/set_title",
            json!({"sessionId": sid, "title": title}),
        );
        made.push((sid, title));
    }
    // What the daemon lists: the two directories, and the agent's own workspace for the
    // session started without one (the page puts that under "no project").
    let list = d.admin().result("session/list", json!({}));
    let in_workspace = list["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter(|s| {
            s["cwd"]
                .as_str()
                .is_some_and(|c| c.ends_with("/agents/default/workspace"))
        })
        .count();
    assert_eq!(in_workspace, 1, "{list}");

    let browser = Browser::launch().await;
    let desk = browser.page(1440, 900).await;
    login(&desk, &d.login_url()).await;
    open_session(&desk, &made[3].0).await;
    desk.wait_for(
        "document.querySelectorAll('aside.sidebar section.project').length === 3",
        WAIT,
    )
    .await;
    let groups = desk
        .eval("[...document.querySelectorAll('aside.sidebar section.project')].map(s => [s.querySelector('.project-name').firstChild.textContent, [...s.querySelectorAll('.side-title')].map(t => t.textContent).sort()])")
        .await;
    assert_eq!(
        groups,
        json!([
            ["zeroclaw", ["Parser bug", "Release notes"]],
            ["notes", ["Weekly notes"]],
            ["no project", ["Scratch"]]
        ])
    );
    let current = desk
        .eval(
            "document.querySelector('aside.sidebar a[aria-current=page] .side-title')?.textContent",
        )
        .await;
    assert_eq!(current, json!("Release notes"));
    desk.screenshot(&screenshot_dir().join("real-sidebar-desktop.png"))
        .await;

    // A phone has no sidebar: its sessions list carries the same groups.
    let phone = browser.page(390, 844).await;
    login(&phone, &d.login_url()).await;
    phone
        .wait_for(
            "document.querySelectorAll('ul.sessions li.project-head').length === 3",
            WAIT,
        )
        .await;
    let heads = phone
        .eval("[...document.querySelectorAll('ul.sessions li.project-head')].map(h => h.firstChild.textContent)")
        .await;
    assert_eq!(heads, json!(["zeroclaw", "notes", "no project"]));
    phone
        .screenshot(&screenshot_dir().join("real-sessions-phone.png"))
        .await;
    no_page_problems(&desk).await;
    no_page_problems(&phone).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn a_turn_the_provider_failed_shows_its_error_row_after_a_reload() {
    let fake = FakeOpenAi::start().await.expect("fake openai");
    let d = Daily::start(config(Some(&fake.base_url())));
    let sid = new_session(&d, "tools");
    let browser = Browser::launch().await;
    let page = browser.page(1440, 900).await;
    login(&page, &d.login_url()).await;
    open_session(&page, &sid).await;
    // One retry (a 429 that may be retried at once), then a refusal.
    fake.push(Scripted::throttled(429, "slow down", "0"));
    fake.push(Scripted::http_error(
        400,
        "the model is unavailable: quota exceeded",
    ));
    page.type_text("form.composer textarea", "one more thing")
        .await;
    page.key("Enter", 0).await;
    page.wait_for(
        "document.querySelector('.block.failure')?.textContent.includes('quota exceeded')",
        WAIT,
    )
    .await;
    // The daemon's row: `role: "error"`, its content JSON.
    let rows = d.admin().messages(&sid);
    let row = rows
        .iter()
        .find(|r| r["role"] == "error")
        .unwrap_or_else(|| panic!("no error row: {rows:?}"));
    let content: Value =
        serde_json::from_str(row["content"].as_str().unwrap_or_default()).expect("error JSON");
    assert_eq!(content["retries"], 1, "{content}");

    page.call("Page.reload", json!({})).await;
    page.wait_for(
        "document.querySelector('.block.user') && document.querySelector('.block.failure')",
        WAIT,
    )
    .await;
    let shown = page
        .eval("[...document.querySelectorAll('.block.failure')].map(e => [e.querySelector('.failure-message')?.textContent, e.querySelector('.retries')?.textContent ?? null])")
        .await;
    assert_eq!(shown.as_array().map(Vec::len), Some(1), "{shown}");
    assert!(
        shown[0][0]
            .as_str()
            .is_some_and(|m| m.contains("quota exceeded") && !m.contains('{')),
        "{shown}"
    );
    assert_eq!(shown[0][1], "after 1 retry", "{shown}");
    page.eval("document.querySelector('.block.failure').scrollIntoView({block: 'end'})")
        .await;
    page.screenshot(&screenshot_dir().join("real-failed-turn-desktop.png"))
        .await;
    no_page_problems(&page).await;
}
