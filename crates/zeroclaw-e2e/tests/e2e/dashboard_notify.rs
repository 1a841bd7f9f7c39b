//! The dashboard as an installable app with phone notifications (SPEC §24.3), in headless
//! Chromium at phone size (390×844): the manifest and the service worker are served (right
//! content type, scope `/`), the worker registers and controls the page, "Notify me" is
//! offered, and when an approval waits the daemon's push (decrypted by the fake push
//! service) carries the link that the worker's `notificationclick` handler — driven in the
//! worker itself, since headless Chromium receives no real pushes — sends the open page
//! to: the session, scrolled to the waiting card. Screenshot:
//! `target/dashboard-screenshots/notify-click-phone.png`.

use std::time::Duration;

use crate::browser::{Browser, screenshot_dir};
use crate::dashboard_daily::{Daily, WAIT, config, login, new_session};
use serde_json::{Value, json};
use zeroclaw_testkit::{Fake, FakePush, Scripted, Served};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn the_app_installs_its_worker_and_a_notification_click_opens_the_waiting_card() {
    let fake = Fake::start();
    fake.push(Scripted::slow(
        Duration::from_millis(800),
        Scripted::tool_call("n1", "bash", json!({"command": "echo from the phone"})),
    ));
    fake.push(Scripted::text("done"));
    let d = Daily::start(config(Some(&fake.server.base_url())));
    let push = Served::<FakePush>::start();
    let mut admin = d.admin();
    admin.result("push/subscribe", push.server.subscription("/phone"));

    let browser = Browser::launch().await;
    let page = browser.page(390, 844).await;
    login(&page, &d.login_url()).await;

    // Installable: the manifest and the worker at the root, the worker in control.
    let manifest = page
        .eval("fetch(document.querySelector('link[rel=manifest]').href).then(async r => [r.headers.get('content-type'), (await r.json()).display])")
        .await;
    assert_eq!(manifest, json!(["application/manifest+json", "standalone"]));
    let worker = page
        .eval("navigator.serviceWorker.ready.then(r => [r.scope, r.active && r.active.scriptURL])")
        .await;
    let origin = format!("http://127.0.0.1:{}", d.port);
    assert_eq!(
        worker,
        json!([format!("{origin}/"), format!("{origin}/sw.js")])
    );
    page.wait_for("navigator.serviceWorker.controller !== null", WAIT)
        .await;
    let offered = page
        .eval("(() => { const b = document.querySelector('nav .notify'); return b && !b.hidden ? b.textContent : null; })()")
        .await;
    assert_eq!(offered, json!("Notify me"));

    // An approval waits while the owner is away: the push carries the link.
    let sid = new_session(&d, "tools");
    {
        let mut prompter = d.admin();
        prompter.send_call("session/prompt", json!({"sessionId": sid, "prompt": "go"}));
        loop {
            let m = prompter.recv();
            if m["params"]["type"] == "user_message" {
                break;
            }
        }
    }
    let got = push.server.wait_requests("/phone", 1, WAIT);
    assert_eq!(got.len(), 1, "{}", d.daemon.log());
    let notice: Value =
        serde_json::from_slice(&push.server.decrypt(&got[0].body).expect("decrypts"))
            .expect("json");
    let request = notice["requestId"].as_str().expect("requestId").to_owned();
    assert_eq!(
        notice["url"],
        format!("{origin}/#/session/{sid}?request={request}"),
        "{notice}"
    );

    // The worker's click handler, driven in the worker with the notice's data.
    let targets = browser.send(None, "Target.getTargets", json!({})).await;
    let sw = targets["targetInfos"]
        .as_array()
        .and_then(|t| {
            t.iter()
                .find(|t| t["type"] == "service_worker" && t["url"] == format!("{origin}/sw.js"))
        })
        .unwrap_or_else(|| panic!("no worker target in {targets}"))["targetId"]
        .clone();
    let attached = browser
        .send(
            None,
            "Target.attachToTarget",
            json!({"targetId": sw, "flatten": true}),
        )
        .await;
    let session = attached["sessionId"].as_str().expect("session").to_owned();
    let data = json!({"url": notice["url"], "sessionId": notice["sessionId"], "requestId": notice["requestId"]});
    let click = format!(
        "(async () => {{ const e = new Event('notificationclick'); let done = Promise.resolve(); \
         e.notification = {{ data: {data}, close() {{}} }}; e.waitUntil = (p) => {{ done = p; }}; \
         self.dispatchEvent(e); await done; return 'clicked'; }})()"
    );
    let r = browser
        .send(
            Some(&session),
            "Runtime.evaluate",
            json!({"expression": click, "awaitPromise": true, "returnByValue": true}),
        )
        .await;
    assert_eq!(r["result"]["value"], "clicked", "{r}");

    // The page follows: the session, at the waiting card.
    let card = format!(".block.approval.focused[data-request=\"{request}\"]");
    page.wait_for(&format!("document.querySelector({})", json!(card)), WAIT)
        .await;
    let hash = page.eval("location.hash").await;
    assert_eq!(hash, json!(format!("#/session/{sid}?request={request}")));
    let seen = page
        .eval(&format!(
            "(() => {{ const r = document.querySelector({}).getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }})()",
            json!(card)
        ))
        .await;
    assert_eq!(seen, json!(true), "the card is on screen");
    page.screenshot(&screenshot_dir().join("notify-click-phone.png"))
        .await;
    admin.result(
        "session/approve",
        json!({"sessionId": sid, "requestId": request, "decision": "reject"}),
    );
}
