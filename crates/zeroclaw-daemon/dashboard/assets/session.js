// One session's view (SPEC §20): its transcript paged upward, then the live stream through
// `session/subscribe` with replay. Every event is applied once: a per-turn `eventSeq`
// cursor drops what was already drawn, and after a reconnect the page subscribes again
// from the last event it saw. Owns the composer (Enter sends, Shift+Enter breaks the line,
// Esc cancels), the usage meter, the model and autonomy pickers, and the session actions
// (cancel, compact, rewind, fork, rename). On a phone the header is one line and the
// session's tools fold into its menu (SPEC §22); each turn that changed files gets its
// "N files changed" line from `session/diff`, and rewind asks first (rewind.js).
import { rpc } from "./rpc.js";
import { h, replace, errText } from "./dom.js";
import { Transcript } from "./transcript.js";
import { confirmRewind } from "./rewind.js";
import { shellsPanel } from "./shells.js";
import { IMPLEMENT_PROMPT } from "./plan.js";

const PAGE = 100;
const TURN_TIMEOUT_MS = 3_600_000;
const AUTONOMY = ["supervised", "full", "read_only", "plan"];

export function sessionView(box, sessionId) {
  let disposed = false;
  let loading = true;
  let queued = [];
  let seen = new Map(); // turnId → last eventSeq applied
  let cursor = null; // {turnId, eventSeq} of the last event applied
  let activeTurn = null;
  let oldestSeq = null;
  let info = { mode: undefined, agentAlias: "" };
  let reloadPending = false;
  let loadedRows = 0; // transcript rows fetched so far, for "N more"
  let generation = 0; // the latest open(): an older one still loading gives up
  let diffs = rpc.can("session/diff"); // false once the daemon answers -32601

  const t = new Transcript({
    canApprove: () => rpc.can("session/approve"),
    canRewind: () => rpc.can("session/rewind"),
    me: () => rpc.info?.principal?.id,
    approve,
    rewind,
    implement: rpc.can("session/configure") && rpc.can("session/prompt") ? implement : null,
  });

  const title = h("h1.title", null, sessionId);
  const badges = h("span.badges");
  const error = h("p.error", { role: "alert" });
  const meter = h("meter", { min: 0, max: 1, value: 0, "aria-label": "Context used" });
  const usageText = h("span.usage-text.muted");
  const modelSelect = h("select", { "aria-label": "Model", onchange: () => configure({ model: modelSelect.value }) });
  const autonomySelect = h("select", { "aria-label": "Autonomy", onchange: () => configure({ autonomy: autonomySelect.value }) },
    AUTONOMY.map((a) => h("option", { value: a }, a.replace("_", " "))));
  const cancelButton = h("button.danger", { type: "button", hidden: true, title: "Cancel the turn (Esc)", onclick: cancel }, "Cancel");

  const tools = h("div.tools");
  const maybe = (method, label, fn, tip) => rpc.can(method) ? h("button", { type: "button", title: tip, onclick: fn }, label) : null;
  replace(tools,
    rpc.can("models/list") && rpc.can("session/configure") ? h("label.pick", null, "Model ", modelSelect) : null,
    rpc.can("session/configure") ? h("label.pick", null, "Autonomy ", autonomySelect) : null,
    cancelButton,
    maybe("session/compact", "Compact", compact, "Summarize older turns to free context"),
    maybe("session/rewind", "Rewind", () => rewind(null), "Go back one turn (asks first); its prompt returns to the composer"),
    maybe("session/fork", "Fork", fork, "A new session with this transcript"),
    maybe("session/set_title", "Rename", rename, "Set the title"));

  const input = h("textarea", { rows: 2, placeholder: "Message (Enter sends, Shift+Enter new line, Esc cancels)", "aria-label": "Message" });
  const files = h("input", { type: "file", multiple: true, "aria-label": "Attach files" });
  const fileNames = h("span.muted.filenames");
  files.addEventListener("change", () => { fileNames.textContent = [...files.files].map((f) => f.name).join(", "); });
  const composer = h("form.composer", {
    onsubmit: (ev) => { ev.preventDefault(); send(); },
  }, input, h("div.composer-row", null,
    rpc.can("file/attach") ? h("label.attach", null, "Attach", files) : null, fileNames,
    h("button.primary", { type: "submit" }, "Send")));
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      send();
    }
  });
  composer.hidden = !rpc.can("session/prompt");

  const menuButton = h("button.menu-toggle", {
    type: "button", "aria-label": "Session menu", "aria-expanded": "false", "aria-controls": "session-tools", title: "Session menu",
    onclick: () => toggleMenu(),
  }, "⋯");
  tools.id = "session-tools";
  tools.addEventListener("click", (ev) => { if (ev.target.closest("button")) toggleMenu(false); });
  function toggleMenu(open) {
    const next = open ?? !tools.classList.contains("open");
    tools.classList.toggle("open", next);
    menuButton.setAttribute("aria-expanded", String(next));
  }

  const shells = shellsPanel(sessionId);
  replace(box,
    h("div.session-head", null,
      h("a.back", { href: "#/sessions", "aria-label": "All sessions" }, "‹"),
      title, badges,
      h("span.usage", null, meter, usageText),
      menuButton),
    tools, error, shells.el, t.el, composer);
  box.classList.add("session-view");

  const onKey = (ev) => {
    if (ev.key === "Escape" && activeTurn) {
      ev.preventDefault();
      cancel();
    }
  };
  document.addEventListener("keydown", onKey);

  const onUpdate = (ev) => {
    const u = ev.detail;
    if (u.sessionId !== sessionId) return;
    if (loading) queued.push(u);
    else apply(u);
  };
  rpc.addEventListener("update", onUpdate);

  // After a reconnect: subscribe again from the last event seen.
  const onReady = () => { if (!loading) resubscribe(); };
  rpc.addEventListener("ready", onReady);

  open();

  // ---- loading ----

  async function open() {
    const gen = ++generation;
    const stale = () => disposed || gen !== generation;
    loading = true;
    queued = [];
    seen = new Map();
    cursor = null;
    loadedRows = 0;
    t.clear();
    try {
      const sub = await rpc.call("session/subscribe", { sessionId });
      if (stale()) return;
      activeTurn = sub.activeTurnId || null;
      const r = await rpc.call("session/messages", { sessionId, limit: PAGE, beforeSeq: sub.lastTranscriptSeq + 1 });
      if (stale()) return;
      // The running turn's rows are replayed as events: draw them once, from the events.
      const rows = (r.messages || []).filter((m) => !activeTurn || m.turnId !== activeTurn);
      oldestSeq = r.messages && r.messages.length ? r.messages[0].seq : null;
      t.addRows(rows, false);
      t.setOlder(olderCount(r), loadOlder);
      historyDiffs(rows, gen);
      error.textContent = "";
      performance.mark("zeroclaw:transcript-drawn");
    } catch (e) {
      if (stale()) return;
      error.textContent = errText(e);
    }
    loading = false;
    const pending = queued;
    queued = [];
    for (const u of pending) apply(u);
    setRunning(activeTurn);
    loadInfo();
  }

  function olderCount(r) {
    if (!r.messages || !r.messages.length) return 0;
    loadedRows += r.messages.length;
    return Math.max(0, (r.total ?? 0) - loadedRows);
  }

  async function loadOlder() {
    if (oldestSeq === null) return;
    try {
      const r = await rpc.call("session/messages", { sessionId, limit: PAGE, beforeSeq: oldestSeq });
      if (disposed || !r.messages) return;
      if (r.messages.length) oldestSeq = r.messages[0].seq;
      t.addRows(r.messages, true);
      t.setOlder(r.messages.length ? olderCount(r) : 0, loadOlder);
    } catch (e) {
      error.textContent = errText(e);
    }
  }

  async function resubscribe() {
    const params = { sessionId };
    if (cursor) {
      params.turnId = cursor.turnId;
      params.afterEventSeq = cursor.eventSeq;
    }
    try {
      // The answer is followed by the events after the cursor (a `replay_gap` first when
      // some are gone, which reloads the transcript).
      await rpc.call("session/subscribe", params);
      loadInfo();
    } catch (e) {
      error.textContent = errText(e);
    }
  }

  function reload() {
    if (reloadPending) return;
    reloadPending = true;
    queueMicrotask(async () => {
      reloadPending = false;
      await open();
    });
  }

  async function loadInfo() {
    try {
      const list = await rpc.call("session/list", {});
      const s = (list.sessions || []).find((x) => x.sessionId === sessionId);
      if (s && !disposed) {
        info = s;
        title.textContent = s.title || sessionId;
        document.title = `${s.title || "Session"} · zeroclaw`;
      }
    } catch {
      // The title stays the id.
    }
    try {
      const st = await rpc.call("session/status", { sessionId });
      if (disposed) return;
      autonomySelect.value = st.autonomy || "supervised";
      // Always redrawn: after a compaction, rewind or fork the old figures are wrong.
      drawUsage(st.usage || {});
      if (rpc.can("models/list")) {
        const m = await rpc.call("models/list", { agentAlias: st.agentAlias });
        const models = m.models || [];
        replace(modelSelect, models.map((x) => h("option", { value: x.model, selected: x.model === st.model || x.current }, x.model)));
        if (!models.length) replace(modelSelect, h("option", { value: st.model || "" }, st.model || "default"));
      }
    } catch {
      // A session that is not live has no status: the pickers stay as they are.
    }
  }

  // ---- events ----

  function apply(u) {
    if (u.type === "replay_gap") {
      reload();
      return;
    }
    if (u.turnId && u.eventSeq) {
      if ((seen.get(u.turnId) || 0) >= u.eventSeq) return;
      seen.set(u.turnId, u.eventSeq);
      cursor = { turnId: u.turnId, eventSeq: u.eventSeq };
    }
    switch (u.type) {
      case "user_message":
        t.userMessage(u);
        setRunning(u.turnId);
        break;
      case "agent_message_chunk":
        t.chunk(u.turnId, "assistant", u.text || "");
        break;
      case "agent_thought_chunk":
        t.chunk(u.turnId, "thought", u.text || "");
        break;
      case "tool_call":
        t.toolCall(u);
        break;
      case "tool_result":
        t.toolResult(u);
        break;
      case "tool_output_chunk":
        t.toolOutput(u);
        break;
      case "approval_request":
        t.approvalRequest(u);
        break;
      case "approval_resolved":
        t.approvalResolved(u);
        break;
      case "usage":
        drawUsage(u);
        break;
      case "context_compacted":
        t.compacted(u);
        drawUsage({ contextTokens: u.tokensAfter, contextWindow: Number(meter.dataset.window) || 0 });
        if (!u.replay) loadInfo();
        break;
      case "plan":
        t.plan(u.turnId, u.plan);
        break;
      case "history_trimmed":
        t.note(`Older turns left the model's context (${u.droppedMessages} messages)`, null, u.turnId);
        break;
      case "provider_retry":
        t.note(`The provider failed; trying again in ${u.delaySecs} s (${u.reason})`, null, u.turnId);
        break;
      case "session_rewound":
        reload();
        return;
      case "turn_complete":
        t.endTurn(u.turnId);
        if (u.outcome === "failed") t.failure(u.turnId, u.content || u.error || u.message);
        else if (u.outcome && u.outcome !== "completed") t.note(`Turn ${u.outcome}`, null, u.turnId);
        if (activeTurn === u.turnId) setRunning(null);
        if (!u.replay) loadInfo();
        if (u.turnId) turnDiff(u.turnId);
        break;
      default:
        break;
    }
  }

  function setRunning(turnId) {
    activeTurn = turnId;
    cancelButton.hidden = !turnId || !rpc.can("session/cancel");
    replace(badges, turnId ? h("span.badge.running", null, "running") : null);
  }

  function drawUsage(u) {
    const used = u.contextTokens ?? 0;
    const win = u.contextWindow || 0;
    meter.dataset.window = String(win);
    meter.dataset.used = String(used);
    meter.max = win || 1;
    meter.value = Math.min(used, win || 1);
    const turn = u.inputTokens !== undefined ? ` · call: ${u.inputTokens} in, ${u.outputTokens} out` : "";
    usageText.textContent = win ? `${used.toLocaleString()} / ${win.toLocaleString()} tokens${turn}` : "";
  }

  // ---- actions ----

  async function send() {
    const text = input.value;
    if (!text.trim() && !files.files.length) return;
    const params = { sessionId, prompt: text };
    try {
      if (files.files.length) params.attachments = await readFiles(files.files);
    } catch (e) {
      error.textContent = errText(e);
      return;
    }
    input.value = "";
    files.value = "";
    fileNames.textContent = "";
    error.textContent = "";
    try {
      // The prompt is drawn from its user_message event, like everyone else's.
      await rpc.call("session/prompt", params, TURN_TIMEOUT_MS);
    } catch (e) {
      if (e && e.code !== undefined) error.textContent = errText(e);
    }
  }

  async function cancel() {
    try {
      await rpc.call("session/cancel", { sessionId });
    } catch (e) {
      error.textContent = errText(e);
    }
  }

  async function approve(block, decision) {
    try {
      await rpc.call("session/approve", { sessionId, requestId: block.requestId, decision });
    } catch (e) {
      block.error = errText(e);
      t.mark(block);
    }
  }

  /** Accepts a proposed plan (SPEC §26): supervised again, then "Implement the plan.". */
  async function implement(block) {
    error.textContent = "";
    try {
      await rpc.call("session/configure", { sessionId, autonomy: "supervised" });
      autonomySelect.value = "supervised";
      block.implemented = true;
      block.error = "";
      t.mark(block);
      await rpc.call("session/prompt", { sessionId, prompt: IMPLEMENT_PROMPT }, TURN_TIMEOUT_MS);
    } catch (e) {
      if (e && e.code !== undefined) {
        block.error = errText(e);
        t.mark(block);
      }
    }
  }

  async function compact() {
    error.textContent = "";
    try {
      await rpc.call("session/compact", { sessionId }, TURN_TIMEOUT_MS);
    } catch (e) {
      error.textContent = errText(e);
    }
  }

  async function rewind(turnId) {
    error.textContent = "";
    let target = turnId;
    if (!target) {
      const users = t.blocks.filter((b) => b.kind === "user" && b.turnId);
      if (!users.length) {
        error.textContent = "no turn to rewind";
        return;
      }
      target = users[users.length - 1].turnId;
    }
    // The turns that go: the target and every later one, for the list of files.
    const turns = [];
    for (const b of t.blocks) if (b.kind === "user" && b.turnId && (turns.length || b.turnId === target)) turns.push(b.turnId);
    const choice = await confirmRewind(turns, diffs ? diffOf : null);
    if (!choice) return;
    try {
      const params = { sessionId, turnId: target };
      if (!choice.restoreFiles) params.restoreFiles = false;
      const r = await rpc.call("session/rewind", params);
      if (typeof r.prompt === "string") {
        input.value = r.prompt;
        input.focus();
      }
      // What came back is the daemon's `rewind` row (SPEC §22.2), drawn by open(); what
      // could not come back is said here.
      const left = [...(r.conflicts || []), ...(r.unrestorable || [])].map((f) => (typeof f === "string" ? f : f?.path)).filter(Boolean);
      await open();
      if (left.length) error.textContent = `Not restored (changed since, or not restorable): ${left.join(", ")}`;
    } catch (e) {
      error.textContent = errText(e);
    }
  }

  // ---- what turns changed ----

  /** `session/diff` of one turn: its files, or null (none, or the daemon lacks the method). */
  async function diffOf(turnId) {
    if (!diffs) return null;
    try {
      const r = await rpc.call("session/diff", { sessionId, turnId });
      return Array.isArray(r?.files) ? r.files : null;
    } catch (e) {
      if (e && e.code === -32601) diffs = false;
      return null;
    }
  }

  async function turnDiff(turnId) {
    const files = await diffOf(turnId);
    if (files && !disposed) t.showDiff(turnId, files);
  }

  /** The diff lines of the loaded history's turns that ran tools (the newest 20). */
  async function historyDiffs(rows, gen) {
    if (!diffs) return;
    const turns = [...new Set(rows.filter((r) => r.role === "tool_call" && r.turnId).map((r) => r.turnId))].slice(-20);
    for (const turnId of turns) {
      if (disposed || gen !== generation || !diffs) return;
      await turnDiff(turnId);
    }
  }

  async function fork() {
    try {
      const r = await rpc.call("session/fork", { sessionId });
      location.hash = `#/session/${encodeURIComponent(r.sessionId)}`;
    } catch (e) {
      error.textContent = errText(e);
    }
  }

  function rename() {
    const field = h("input", { type: "text", maxlength: 200, value: title.textContent, "aria-label": "Title" });
    const form = h("form.rename", {
      onsubmit: async (ev) => {
        ev.preventDefault();
        try {
          const r = await rpc.call("session/set_title", { sessionId, title: field.value });
          title.textContent = r.title;
          form.replaceWith(title);
        } catch (e) {
          error.textContent = errText(e);
        }
      },
    }, field, h("button.primary", { type: "submit" }, "Save"),
    h("button", { type: "button", onclick: () => form.replaceWith(title) }, "Cancel"));
    title.replaceWith(form);
    field.focus();
  }

  async function configure(change) {
    try {
      await rpc.call("session/configure", { sessionId, ...change });
      error.textContent = "";
    } catch (e) {
      error.textContent = errText(e);
      loadInfo();
    }
  }

  return {
    dispose() {
      disposed = true;
      t.dispose();
      shells.dispose();
      rpc.removeEventListener("update", onUpdate);
      rpc.removeEventListener("ready", onReady);
      document.removeEventListener("keydown", onKey);
      rpc.call("session/unsubscribe", { sessionId }).catch(() => {});
      document.title = "zeroclaw";
    },
  };
}

async function readFiles(list) {
  const out = [];
  for (const f of list) {
    const bytes = new Uint8Array(await f.arrayBuffer());
    let bin = "";
    for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    out.push({ dataB64: btoa(bin), filename: f.name, mimeType: f.type || undefined });
  }
  return out;
}
