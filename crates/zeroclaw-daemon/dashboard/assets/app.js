// The dashboard's entry: logs in (a one-time code from the address bar, a kept session
// token, or a pasted pairing token), then routes `#/sessions`, `#/session/ID`, `#/config`,
// `#/schedules` and `#/status` to their views. Each view gets a container and returns a `dispose()`.
import { rpc, AuthError } from "./rpc.js";
import { h, replace, errText } from "./dom.js";
import { loginView } from "./login.js";
import { sessionsView } from "./sessions.js";
import { sessionView } from "./session.js";
import { sidebarView } from "./sidebar.js";
import { configView } from "./config.js";
import { statusView } from "./status.js";
import { schedulesView } from "./schedules.js";
import { installAsk } from "./ask.js";
import { notifyControl, focusRequest, followClicks } from "./notify.js";
import { installBudget } from "./budget.js";

performance.mark("zeroclaw:modules-loaded");
const app = document.getElementById("app");
const nav = document.getElementById("nav");
const conn = document.getElementById("conn");
let current = null;

rpc.addEventListener("state", (ev) => {
  const { state } = ev.detail;
  conn.textContent = state === "online" ? "" : state === "connecting" ? "connecting…" : "offline, reconnecting…";
  conn.dataset.state = state;
});
rpc.addEventListener("loggedout", (ev) => showLogin(ev.detail));

installAsk(rpc);
followClicks();
installBudget(rpc);

function showLogin(message) {
  dispose();
  nav.hidden = true;
  app.dataset.view = "login";
  replace(app, loginView(async (auth) => {
    await rpc.connect(auth);
    afterLogin();
  }, message));
}

function afterLogin() {
  nav.hidden = false;
  if (!nav.querySelector(".notify")) nav.append(notifyControl(rpc));
  nav.querySelector('[data-view="config"]').hidden = !rpc.can("config/get");
  nav.querySelector('[data-view="status"]').hidden = !rpc.can("status");
  nav.querySelector('[data-view="schedules"]').hidden = !rpc.can("schedule/list");
  if (!location.hash.startsWith("#/")) history.replaceState(null, "", "#/sessions");
  route();
}

function dispose() {
  if (current && current.dispose) current.dispose();
  current = null;
}

function route() {
  if (!rpc.info) return;
  const hash = location.hash || "#/sessions";
  const [, view, arg] = hash.match(/^#\/([a-z]+)(?:\/(.*))?$/) || [];
  dispose();
  const box = h("div.view");
  replace(app, box);
  app.dataset.view = view || "sessions";
  for (const a of nav.querySelectorAll("a")) a.classList.toggle("active", a.dataset.view === app.dataset.view);
  if (view === "session" && arg) {
    // On a desktop the session list sits beside the open session (sidebar.js). A
    // notification's link adds `?request=ID`: the card to open at (notify.js).
    const [path, query] = arg.split("?");
    const id = decodeURIComponent(path);
    const request = new URLSearchParams(query || "").get("request");
    if (request) focusRequest(app, request);
    const side = sidebarView(id);
    replace(app, h("div.layout", null, side.el, box));
    const session = sessionView(box, id);
    current = { dispose() { side.dispose(); session.dispose(); } };
  }
  else if (view === "config" && rpc.can("config/get")) current = configView(box);
  else if (view === "status") current = statusView(box);
  else if (view === "schedules" && rpc.can("schedule/list")) current = schedulesView(box);
  else current = sessionsView(box);
}

window.addEventListener("hashchange", () => {
  if (location.hash.startsWith("#code=")) boot();
  else route();
});

async function boot() {
  const code = new URLSearchParams(location.hash.slice(1)).get("code");
  if (code) {
    // The code works once: take it out of the address bar and history before using it.
    history.replaceState(null, "", location.pathname + location.search + "#/sessions");
    try {
      await rpc.connect({ authCode: code });
      afterLogin();
    } catch (e) {
      const why = e instanceof AuthError
        ? "This login link was already used or has expired. Run `zeroclaw dashboard` again, or paste a pairing token."
        : errText(e);
      showLogin(why);
    }
    return;
  }
  if (rpc.token) {
    try {
      await rpc.connect({ authToken: rpc.token });
      afterLogin();
      return;
    } catch (e) {
      if (e instanceof AuthError) rpc.token = null;
      showLogin(e instanceof AuthError ? "Your session has ended; log in again." : errText(e));
      return;
    }
  }
  showLogin();
}

boot();
