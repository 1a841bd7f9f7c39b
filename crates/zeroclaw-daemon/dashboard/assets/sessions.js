// The sessions view (SPEC §20): the sessions this principal may see, with title, agent,
// last activity, messages and live/running badges; search by title, paging, a new
// session with an agent picker, and close, kill and delete (delete asks first).
import { rpc } from "./rpc.js";
import { h, replace, ago, confirmButton, errText } from "./dom.js";
import { groupByProject } from "./projects.js";

const PAGE = 25;
const REFRESH_MS = 3000;

export function sessionsView(box) {
  let page = 0;
  let search = "";
  let sessions = [];
  let timer = null;
  let disposed = false;

  const error = h("p.error", { role: "alert" });
  const list = h("ul.sessions");
  const pager = h("div.pager");
  const searchInput = h("input", {
    type: "search", placeholder: "Search titles", "aria-label": "Search titles",
    oninput: () => {
      search = searchInput.value;
      page = 0;
      load();
    },
  });

  const agentSelect = h("select", { "aria-label": "Agent" }, h("option", { value: "default" }, "default"));
  const newForm = h("form.new", {
    onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const r = await rpc.call("session/new", { agentAlias: agentSelect.value });
        location.hash = `#/session/${encodeURIComponent(r.sessionId)}`;
      } catch (e) {
        error.textContent = errText(e);
      }
    },
  }, agentSelect, h("button.primary", { type: "submit" }, "New session"));
  newForm.hidden = !rpc.can("session/new");

  replace(box,
    h("div.bar", null, h("h1", null, "Sessions"), searchInput, newForm),
    error, list, pager);

  loadAgents(agentSelect);

  async function load() {
    try {
      const params = search ? { search } : {};
      const r = await rpc.call("session/list", params);
      if (disposed) return;
      sessions = (r.sessions || []).slice().sort((a, b) => String(b.lastActivity).localeCompare(String(a.lastActivity)));
      error.textContent = "";
      draw();
    } catch (e) {
      if (!disposed) error.textContent = errText(e);
    }
    schedule();
  }

  function schedule() {
    clearTimeout(timer);
    if (!disposed) timer = setTimeout(load, REFRESH_MS);
  }

  function draw() {
    const pages = Math.max(1, Math.ceil(sessions.length / PAGE));
    page = Math.min(page, pages - 1);
    const shown = sessions.slice(page * PAGE, page * PAGE + PAGE);
    if (!shown.length) {
      replace(list, h("li.empty.muted", null, search ? "No session has that in its title." : "No sessions yet."));
    } else {
      // Grouped by project (`cwd`) within the page; one group needs no heading.
      const groups = groupByProject(shown);
      replace(list, groups.length > 1 || groups[0].cwd
        ? groups.map((g) => [h("li.project-head", { title: g.cwd || "", dataset: { cwd: g.cwd ?? "" } }, g.name, g.cwd ? h("span.muted.path", null, ` ${g.cwd}`) : null), g.sessions.map(row)])
        : shown.map(row));
    }
    // For the first-paint figure in docs/BENCHMARKS.md.
    if (!performance.getEntriesByName("zeroclaw:sessions-drawn").length) performance.mark("zeroclaw:sessions-drawn");
    replace(pager,
      h("button", { type: "button", disabled: page === 0, onclick: () => { page--; draw(); } }, "‹ Newer"),
      h("span.muted", null, `${page + 1} / ${pages} · ${sessions.length} session${sessions.length === 1 ? "" : "s"}`),
      h("button", { type: "button", disabled: page >= pages - 1, onclick: () => { page++; draw(); } }, "Older ›"));
  }

  function row(s) {
    const act = (method, label, tip) => rpc.can(method)
      ? h("button", { type: "button", title: tip, "aria-label": `${label}: ${tip}`, onclick: () => run(method, s) }, label) : null;
    return h("li.session", { dataset: { id: s.sessionId } },
      h("a.title", { href: `#/session/${encodeURIComponent(s.sessionId)}`, text: s.title || s.sessionId }),
      h("span.badges", null,
        s.live ? h("span.badge.live", null, "live") : null,
        s.activeTurnId ? h("span.badge.running", null, "running") : null,
        s.forkedFrom ? h("span.badge", null, "fork") : null),
      h("span.meta.muted", null,
        h("span.agent", null, s.agentAlias || ""), " · ",
        h("span", null, ago(s.lastActivity)), " · ",
        h("span.count", null, `${s.messageCount ?? 0} messages`)),
      h("span.actions", null,
        s.live ? act("session/close", "Close", "Unload it from memory, stopping a running turn; its history stays and a new prompt brings it back") : null,
        act("session/kill", "Kill", "End it for good: it can never be prompted again; its transcript stays readable"),
        rpc.can("session/delete")
          ? confirmButton("Delete", "Delete this session and its history?", () => run("session/delete", s)) : null));
  }

  async function run(method, s) {
    try {
      await rpc.call(method, { sessionId: s.sessionId, mode: s.mode });
      load();
    } catch (e) {
      error.textContent = errText(e);
    }
  }

  const onReady = () => load();
  rpc.addEventListener("ready", onReady);
  load();

  return {
    dispose() {
      disposed = true;
      clearTimeout(timer);
      rpc.removeEventListener("ready", onReady);
    },
  };
}

/** Fills the agent picker from the config's agents when this principal may read them. */
async function loadAgents(select) {
  if (!rpc.can("config/get")) return;
  try {
    const r = await rpc.call("config/get", { prop: "agents" });
    const names = Object.keys(r.value || {});
    // Starts on the default agent (the one `zeroclaw chat` uses), not the first by name.
    const start = names.includes("default") ? "default" : names[0];
    if (names.length) replace(select, names.map((n) => h("option", { value: n, selected: n === start }, n)));
    select.value = start ?? "default";
  } catch {
    // Keep "default": the daemon says at session/new whether it is allowed.
  }
}
