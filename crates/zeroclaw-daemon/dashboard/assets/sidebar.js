// The session sidebar (SPEC §22 "A dashboard for a day's work"): on a desktop (at least
// 1024 px wide) the open session sits beside the list of sessions, grouped by project,
// the open one marked; it refreshes every few seconds while shown. Below that width it is
// not drawn and not loaded (the sessions view is one tap away).
import { rpc } from "./rpc.js";
import { h, replace, ago } from "./dom.js";
import { groupByProject } from "./projects.js";

const REFRESH_MS = 5000;
const WIDE = "(min-width: 1024px)";

export function sidebarView(currentId) {
  let timer = null;
  let disposed = false;
  const body = h("div.sidebar-groups");
  const el = h("aside.sidebar", { "aria-label": "Sessions" },
    h("div.sidebar-head", null, h("a.sidebar-all", { href: "#/sessions" }, "All sessions")), body);
  const wide = window.matchMedia(WIDE);

  async function load() {
    clearTimeout(timer);
    if (disposed) return;
    if (wide.matches && rpc.can("session/list")) {
      try {
        const r = await rpc.call("session/list", {});
        if (disposed) return;
        const sessions = (r.sessions || []).slice().sort((a, b) => String(b.lastActivity).localeCompare(String(a.lastActivity)));
        draw(sessions);
      } catch {
        // Kept as drawn; the next refresh tries again.
      }
    }
    if (!disposed) timer = setTimeout(load, REFRESH_MS);
  }

  function draw(sessions) {
    replace(body, groupByProject(sessions).map((g) => h("section.project", { dataset: { cwd: g.cwd ?? "" } },
      h("h2.project-name", { title: g.cwd || "Sessions started without a project directory" }, g.name,
        h("span.muted.count", null, ` · ${g.sessions.length}`)),
      h("ul.side-sessions", null, g.sessions.map((s) => h("li", { dataset: { id: s.sessionId } },
        h("a", {
          href: `#/session/${encodeURIComponent(s.sessionId)}`,
          "aria-current": s.sessionId === currentId ? "page" : undefined,
          title: s.title || s.sessionId,
        },
        h("span.side-title", null, s.title || s.sessionId),
        s.activeTurnId ? h("span.badge.running", null, "running") : null,
        h("span.side-meta.muted", null, `${s.agentAlias || ""} · ${ago(s.lastActivity)}`))))))));
  }

  const onChange = () => load();
  wide.addEventListener("change", onChange);
  load();
  return {
    el,
    dispose() {
      disposed = true;
      clearTimeout(timer);
      wide.removeEventListener("change", onChange);
    },
  };
}
