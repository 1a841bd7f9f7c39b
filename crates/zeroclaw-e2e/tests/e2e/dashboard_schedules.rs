//! The dashboard's Schedules page (SPEC §24.1) in headless Chromium at phone size
//! (390×844): the page lists a schedule with its next run and last outcome, "Run now"
//! starts a run that the page then shows completed, "Disable" and "Enable" change it,
//! the form adds one and shows the daemon's error on a bad cron; a screenshot of the page
//! (target/dashboard-screenshots/schedules-phone.png).

use crate::browser;
use crate::common;

use std::time::Duration;

use browser::{Browser, screenshot_dir};
use common::TestDaemon;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

const CONFIG: &str = r#"[wss]
enabled = true
bind = "127.0.0.1"
port = 0

[providers.echo]
kind = "echo"
[agents.default]
provider = "echo"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn the_schedules_page_lists_runs_toggles_and_adds_at_phone_size() {
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), CONFIG).expect("config")
    });
    let port = common::ws::listening_port(&daemon);
    let mut c = daemon.client();
    let id = c.result(
        "schedule/create",
        json!({"name": "morning notes", "agentAlias": "default",
               "prompt": "summarise what changed overnight", "cron": "30 7 * * MON-FRI",
               "tz": "Europe/Berlin"}),
    )["scheduleId"]
        .as_str()
        .unwrap()
        .to_owned();
    let url = c.result("dashboard/login", json!({}))["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(url.contains(&format!(":{port}/")), "{url}");

    let browser = Browser::launch().await;
    let page = browser.page(390, 844).await;
    page.goto(&url).await;
    page.wait_for("document.querySelector('ul.sessions')", WAIT)
        .await;
    // The header links to it; the page lists the schedule with its next run.
    page.click("#nav a[data-view=schedules]").await;
    let row = format!("li.schedule[data-id='{id}']");
    page.wait_for(
        &format!("document.querySelector(\"{row} dd.next\")?.textContent.length > 1"),
        WAIT,
    )
    .await;
    assert!(
        page.text(&format!("{row} .schedule-name"))
            .await
            .contains("morning notes")
    );
    assert!(
        page.text(&format!("{row} .schedule-head"))
            .await
            .contains("cron 30 7 * * MON-FRI (Europe/Berlin)")
    );
    assert_eq!(page.text(&format!("{row} dd.last")).await, "never");

    // Run now: the run completes and the page shows it.
    page.click(&format!("{row} button.run")).await;
    page.wait_for(
        &format!("document.querySelector(\"{row} dd.last\")?.textContent.startsWith('completed')"),
        WAIT,
    )
    .await;
    let runs = c.result("schedule/runs", json!({"scheduleId": id}));
    assert_eq!(runs["runs"][0]["outcome"], "completed", "{runs}");

    // Disable, then enable again.
    page.click(&format!("{row} button.toggle")).await;
    page.wait_for(
        &format!("document.querySelector(\"{row} button.toggle\")?.textContent === 'Enable'"),
        WAIT,
    )
    .await;
    let listed = c.result("schedule/list", json!({}));
    assert_eq!(listed["schedules"][0]["enabled"], false, "{listed}");
    assert_eq!(page.text(&format!("{row} dd.next")).await, "—");
    page.click(&format!("{row} button.toggle")).await;
    page.wait_for(
        &format!("document.querySelector(\"{row} button.toggle\")?.textContent === 'Disable'"),
        WAIT,
    )
    .await;
    assert_eq!(
        c.result("schedule/list", json!({}))["schedules"][0]["enabled"],
        true
    );

    // The form: a bad cron shows the daemon's error; a good one adds a row.
    page.type_text("form.schedule-add input[name=name]", "weekly review")
        .await;
    page.type_text("form.schedule-add textarea[name=prompt]", "review the week")
        .await;
    page.type_text("form.schedule-add input[name=when]", "61 * * * *")
        .await;
    page.click("form.schedule-add button[type=submit]").await;
    page.wait_for(
        "document.querySelector('form.schedule-add .error')?.textContent.includes('-32602')",
        WAIT,
    )
    .await;
    assert!(
        page.text("form.schedule-add .error")
            .await
            .starts_with("cron:")
    );
    page.eval("document.querySelector('form.schedule-add input[name=when]').value = ''")
        .await;
    page.type_text("form.schedule-add input[name=when]", "0 17 * * FRI")
        .await;
    page.click("form.schedule-add button[type=submit]").await;
    page.wait_for(
        "document.querySelectorAll('li.schedule').length === 2",
        WAIT,
    )
    .await;
    let listed = c.result("schedule/list", json!({}));
    assert_eq!(listed["schedules"][1]["name"], "weekly review", "{listed}");
    assert_eq!(listed["schedules"][1]["cron"], "0 17 * * FRI", "{listed}");
    // Nothing overflows the phone's width.
    let wide = page
        .eval("document.documentElement.scrollWidth <= window.innerWidth")
        .await;
    assert_eq!(wide, true, "the page is wider than the phone");
    assert!(page.exceptions().is_empty(), "{:?}", page.exceptions());
    page.eval("window.scrollTo(0, 0)").await;
    page.screenshot(&screenshot_dir().join("schedules-phone.png"))
        .await;
}
