// A session's background processes (SPEC §26): the list from `session/status` (`shells`),
// and for the one picked its kept output from `session/shell_output`, which never moves
// the agent's own read position. Polled every two seconds while the view is open; hidden
// while the session has none.
import { rpc } from "./rpc.js";
import { h, replace, errText } from "./dom.js";

const POLL_MS = 2000;

export function shellsPanel(sessionId) {
  let disposed = false;
  let timer = null;
  let picked = null; // shellId whose output is shown
  const list = h("ul.shell-list");
  const out = h("pre.io.shell-output", { hidden: true, "aria-label": "Process output" });
  const note = h("p.muted.shell-note");
  const summary = h("summary", null, "Background processes");
  const el = h("details.shells", { hidden: true, open: true }, summary, list, note, out);

  function row(s) {
    const state = s.running ? "running" : s.exitCode !== undefined ? `exit ${s.exitCode}` : "ended";
    const button = h("button.shell", {
      type: "button",
      "aria-pressed": String(s.shellId === picked),
      dataset: { shellId: s.shellId },
      onclick: () => { picked = s.shellId; el.open = true; load(); },
    }, h("code", null, s.shellId), " ", h("span.shell-command", null, s.command), " ",
    h(`span.shell-state${s.running ? ".running" : ""}`, null, state));
    return h("li", null, button);
  }

  async function load() {
    clearTimeout(timer);
    try {
      const st = await rpc.call("session/status", { sessionId });
      if (disposed) return;
      const shells = st.shells ?? [];
      el.hidden = shells.length === 0;
      summary.textContent = `Background processes (${shells.filter((s) => s.running).length} running, ${shells.length} in all)`;
      replace(list, shells.map(row));
      if (picked && shells.some((s) => s.shellId === picked) && rpc.can("session/shell_output")) {
        const r = await rpc.call("session/shell_output", { sessionId, shellId: picked });
        if (disposed) return;
        const stick = out.scrollTop + out.clientHeight >= out.scrollHeight - 4;
        out.textContent = r.output || "(no output yet)";
        out.hidden = false;
        if (stick) out.scrollTop = out.scrollHeight;
        note.textContent = `${r.shellId}: ${r.command}` +
          (r.droppedBytes ? ` — ${r.droppedBytes} earlier bytes dropped (only the newest 64 KiB are kept)` : "");
      }
    } catch (e) {
      // A session that is not live (any more) has no processes.
      if (!disposed) { el.hidden = true; note.textContent = errText(e); }
    }
    if (!disposed) timer = setTimeout(load, POLL_MS);
  }

  if (rpc.can("session/status")) load();
  return { el, dispose() { disposed = true; clearTimeout(timer); } };
}
