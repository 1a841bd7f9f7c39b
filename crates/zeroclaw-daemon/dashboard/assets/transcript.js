// The transcript of one session as the page draws it: blocks (prompts, answers, folded
// thoughts, tool cards, approvals, notes) in order, older pages prepended on demand, live
// changes drawn at most once per animation frame (SPEC §20 "Works for people"). Answers
// are markdown through the sanitizer; prompts, tool input and output, file names as text.
// Failed turns show their error (`role: "error"` rows, a failed `turn_complete`), tool
// cards come from toolcard.js, a turn's changed files from diffview.js (SPEC §22).
import { h, replace, markdown, ago } from "./dom.js";
import { fillToolCard, addChunk, startTime } from "./toolcard.js";
import { diffBlock } from "./diffview.js";
import { planCard } from "./plan.js";

/** Past this many characters a streaming answer is drawn as text until its turn ends. */
const LIVE_MARKDOWN_MAX = 20_000;
/** Past this many characters an answer stays text: its markdown would freeze the page. */
const FINAL_MARKDOWN_MAX = 200_000;
/** Characters in one laid-out piece of a long plain-text answer. */
const PIECE = 4096;
/** Re-render a streaming answer's markdown at most this often. */
const LIVE_MARKDOWN_MS = 120;

export class Transcript {
  constructor(actions) {
    this.actions = actions; // {approve(block, decision), rewind(turnId), implement(block)?, canApprove, canRewind, me}
    this.el = h("div.transcript", { role: "log", "aria-live": "polite" });
    this.top = h("div.older");
    this.list = h("div.blocks");
    this.el.append(this.top, this.list);
    this.blocks = [];
    this.tools = new Map();
    this.approvals = new Map();
    this.dirty = new Set();
    this.frame = 0;
    this.stick = true;
    this.ticker = 0; // redraws running tool cards' elapsed time
    this.el.addEventListener("scroll", () => {
      this.stick = this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 40;
    });
  }

  /** Stops the elapsed-time ticker. */
  dispose() {
    clearInterval(this.ticker);
    this.ticker = 0;
  }

  clear() {
    this.dispose();
    this.blocks = [];
    this.tools.clear();
    this.approvals.clear();
    this.dirty.clear();
    this.list.replaceChildren();
    this.stick = true;
  }

  /** The "load earlier" control: `more` older rows exist; `load()` fetches a page. */
  setOlder(more, load) {
    if (!more) {
      replace(this.top, h("p.muted.start", null, "Start of the session"));
      return;
    }
    const button = h("button", { type: "button", onclick: () => load() }, `Load earlier messages (${more} more)`);
    replace(this.top, button);
  }

  // ---- history rows (session/messages) ----

  /** Blocks for transcript rows, in order; `prepend` puts them before what is drawn. */
  addRows(rows, prepend) {
    const made = [];
    const madeTools = new Map();
    for (const row of rows) {
      const b = this.rowBlock(row, madeTools);
      if (b) made.push(b);
    }
    for (const b of made) this.build(b);
    if (prepend) {
      const before = this.el.scrollHeight - this.el.scrollTop;
      this.list.prepend(...made.map((b) => b.el));
      this.blocks = made.concat(this.blocks);
      this.el.scrollTop = this.el.scrollHeight - before;
    } else {
      this.list.append(...made.map((b) => b.el));
      this.blocks.push(...made);
      this.scrollEnd();
    }
  }

  rowBlock(row, madeTools) {
    const base = { seq: row.seq, turnId: row.turnId, final: true };
    const content = row.content ?? "";
    switch (row.role) {
      case "user":
        return { ...base, kind: "user", text: content, attachments: [] };
      case "assistant":
        return { ...base, kind: "assistant", text: content };
      case "tool_call": {
        const c = parse(content);
        const b = { ...base, kind: "tool", id: c.toolCallId, name: c.name || "tool", input: c.rawInput ?? c.arguments ?? c, output: undefined };
        if (b.id) { madeTools.set(b.id, b); this.tools.set(b.id, b); }
        return b;
      }
      case "tool_result": {
        const c = parse(content);
        const card = c.toolCallId && (madeTools.get(c.toolCallId) || this.tools.get(c.toolCallId));
        if (card) {
          card.output = c.rawOutput ?? c;
          if (card.el) this.mark(card);
          return null;
        }
        return { ...base, kind: "tool", id: c.toolCallId, name: c.name || "tool", input: undefined, output: c.rawOutput ?? c };
      }
      case "compaction":
        return { ...base, kind: "note", text: "Context compacted", detail: content };
      case "interruption":
        return { ...base, kind: "note", text: "The turn was interrupted" };
      case "error":
        return { ...base, kind: "failure", ...failureOf(content) };
      case "rewind":
        return { ...base, kind: "note", ...rewindNote(content) };
      case "plan":
        return { ...base, kind: "plan", text: content };
      default:
        return { ...base, kind: "note", text: `${row.role}: ${content}` };
    }
  }

  // ---- live events ----

  userMessage(u) {
    this.push({ kind: "user", turnId: u.turnId, text: u.text || "", attachments: u.attachments || [], by: u.promptedBy, final: true });
  }

  chunk(turnId, kind, text) {
    const last = this.blocks[this.blocks.length - 1];
    if (last && last.kind === kind && last.turnId === turnId && !last.final) {
      last.text += text;
      this.mark(last);
    } else {
      this.push({ kind, turnId, text, final: false, drawn: 0 });
    }
  }

  toolCall(u) {
    const started = startTime(u.startedAt) ?? (u.replay ? null : Date.now());
    const b = { kind: "tool", turnId: u.turnId, id: u.toolCallId, name: u.name, input: u.rawInput, output: undefined, started };
    this.tools.set(u.toolCallId, b);
    this.push(b);
    this.tick();
  }

  /** `tool_output_chunk {toolCallId, stream, text}`: output of a running tool. */
  toolOutput(u) {
    const b = this.tools.get(u.toolCallId);
    if (!b || b.output !== undefined) return;
    addChunk(b, u.stream, String(u.text ?? ""));
    this.mark(b);
  }

  /** While a tool runs, its card's elapsed time is redrawn every second. */
  tick() {
    if (this.ticker) return;
    this.ticker = setInterval(() => {
      let running = 0;
      for (const b of this.tools.values()) {
        if (b.output === undefined && b.started && b.el) {
          running++;
          this.mark(b);
        }
      }
      if (!running) this.dispose();
    }, 1000);
  }

  toolResult(u) {
    const b = this.tools.get(u.toolCallId);
    if (b) {
      b.output = u.rawOutput;
      this.mark(b);
    } else {
      this.push({ kind: "tool", turnId: u.turnId, id: u.toolCallId, name: u.name, output: u.rawOutput });
    }
  }

  approvalRequest(u) {
    const b = { kind: "approval", turnId: u.turnId, requestId: u.requestId, tool: u.toolName, summary: u.argumentsSummary, timeout: u.timeoutSecs, resolved: null };
    this.approvals.set(u.requestId, b);
    // The call it holds: the turn's latest unfinished card of that tool (the request
    // names no call id).
    for (let i = this.blocks.length - 1; i >= 0; i--) {
      const c = this.blocks[i];
      if (c.kind === "tool" && c.turnId === u.turnId && c.name === u.toolName && c.output === undefined && !c.held) {
        c.held = u.requestId;
        c.awaiting = true;
        this.mark(c);
        break;
      }
    }
    this.push(b);
  }

  approvalResolved(u) {
    const b = this.approvals.get(u.requestId);
    if (!b) return;
    b.resolved = { decision: u.decision, reason: u.reason, by: u.decidedBy };
    this.mark(b);
    for (const c of this.tools.values()) {
      if (c.held !== u.requestId || !c.awaiting) continue;
      c.awaiting = false;
      // Its clock runs from the answer (a replayed answer's time is unknown: keep startedAt).
      if (!u.replay && c.output === undefined) c.started = Date.now();
      this.mark(c);
    }
  }

  /** A proposed plan (SPEC §26), once per turn (the row replaces it on reload). */
  plan(turnId, text) {
    if (this.blocks.some((b) => b.kind === "plan" && b.turnId === turnId && turnId)) return;
    this.push({ kind: "plan", turnId, text: text || "", final: true });
  }

  note(text, detail, turnId) {
    this.push({ kind: "note", text, detail, turnId, final: true });
  }

  /** A compaction, drawn once however often the same one is announced (a replay). */
  compacted(u) {
    const key = `${u.turnId || ""}/${u.eventSeq || ""}/${u.tokensBefore}/${u.tokensAfter}/${u.summarizedMessages}`;
    if (this.blocks.some((b) => b.compaction === key)) return;
    const b = { kind: "note", turnId: u.turnId, final: true, compaction: key, detail: u.summary,
      text: `Context compacted: ${u.tokensBefore} → ${u.tokensAfter} tokens (${u.summarizedMessages} messages summarized)` };
    this.push(b);
  }

  /** A failed turn's error, from its `turn_complete` (the row replaces it on reload). */
  failure(turnId, message) {
    if (this.blocks.some((b) => b.kind === "failure" && b.turnId === turnId)) return;
    this.push({ kind: "failure", turnId, message: message || "The turn failed.", final: true });
  }

  /** "N files changed" under turn `turnId` (nothing when no file changed). */
  showDiff(turnId, files) {
    if (!files || !files.length) return;
    const old = this.blocks.find((b) => b.kind === "diff" && b.turnId === turnId);
    const b = old || { kind: "diff", turnId, final: true };
    b.files = files;
    if (old) {
      this.mark(b);
      return;
    }
    this.build(b);
    let at = -1;
    for (let i = this.blocks.length - 1; i >= 0; i--) {
      if (this.blocks[i].turnId === turnId) { at = i; break; }
    }
    if (at < 0) return;
    this.blocks.splice(at + 1, 0, b);
    this.blocks[at].el.after(b.el);
  }

  /** The turn ended: its streamed answers get their final markdown. */
  endTurn(turnId) {
    for (let i = this.blocks.length - 1; i >= 0 && i >= this.blocks.length - 200; i--) {
      const b = this.blocks[i];
      if (b.turnId !== turnId) continue;
      if ((b.kind === "assistant" || b.kind === "thought") && !b.final) {
        b.final = true;
        this.mark(b);
      }
    }
  }

  push(b) {
    this.build(b);
    this.blocks.push(b);
    this.list.appendChild(b.el);
    this.scrollEnd();
  }

  mark(b) {
    this.dirty.add(b);
    if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
  }

  flush() {
    this.frame = 0;
    for (const b of this.dirty) this.fill(b);
    this.dirty.clear();
    if (this.stick) this.el.scrollTop = this.el.scrollHeight;
  }

  scrollEnd() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
  }

  // ---- drawing ----

  build(b) {
    b.el = h(`article.block.${b.kind}`, { dataset: { turn: b.turnId || "" } });
    this.fill(b);
  }

  fill(b) {
    switch (b.kind) {
      case "user": return this.fillUser(b);
      case "assistant": return this.fillText(b, "Assistant");
      case "thought": return this.fillThought(b);
      case "tool": return this.fillTool(b);
      case "approval": return this.fillApproval(b);
      case "failure": return this.fillFailure(b);
      case "diff": return replace(b.el, diffBlock(b.files));
      case "plan": return replace(b.el, ...planCard(b, this.actions.implement || null));
      default: return this.fillNote(b);
    }
  }

  fillUser(b) {
    const mine = !b.by || b.by === this.actions.me();
    const head = h("header", null, h("span.who", null, mine ? "You" : b.by));
    b.el.classList.toggle("other", !mine);
    if (b.turnId && this.actions.canRewind()) {
      head.append(h("button.link.rewind", { type: "button", title: "Go back to before this prompt and edit it", onclick: () => this.actions.rewind(b.turnId) }, "Rewind here"));
    }
    replace(b.el, head,
      h("div.prompt", null, b.text),
      b.attachments && b.attachments.length
        ? h("ul.files", null, b.attachments.map((a) => h("li.file", null, a.filename || ""))) : null);
  }

  fillText(b, who) {
    if (!b.body) {
      b.body = h("div.md");
      b.el.replaceChildren(h("header", null, h("span.who", null, who)), b.body);
    }
    b.el.classList.toggle("streaming", !b.final);
    const now = performance.now();
    const markdownNow = b.final
      ? b.text.length <= FINAL_MARKDOWN_MAX
      : b.text.length <= LIVE_MARKDOWN_MAX && now - (b.mdAt || 0) >= LIVE_MARKDOWN_MS;
    if (markdownNow) {
      b.body.replaceChildren(markdown(b.text));
      b.mdAt = now;
      b.plain = false;
      b.drawn = b.text.length;
      b.body.classList.remove("plain");
      return;
    }
    if (!b.final && b.text.length <= LIVE_MARKDOWN_MAX) {
      // Markdown again soon: make sure the last chunk shows then.
      if (!b.timer) b.timer = setTimeout(() => { b.timer = 0; this.mark(b); }, LIVE_MARKDOWN_MS);
      return;
    }
    // Long answers: append only what is new, as text (until the turn ends, or for good
    // past FINAL_MARKDOWN_MAX), in pieces of about PIECE characters cut after a line
    // break, so a frame lays out the last piece and not the whole answer.
    if (!b.plain) {
      b.plain = true;
      b.piece = null;
      b.drawn = 0;
      b.body.replaceChildren();
      b.body.classList.add("plain");
    }
    let rest = b.text.slice(b.drawn);
    while (rest) {
      if (!b.piece || b.piece.length >= PIECE) {
        b.piece = document.createTextNode("");
        b.body.appendChild(h("div.piece", null, b.piece));
      }
      let take = rest;
      const room = PIECE - b.piece.length;
      if (take.length > room) {
        const cut = rest.lastIndexOf("\n", room);
        take = rest.slice(0, cut > 0 ? cut + 1 : room);
      }
      b.piece.appendData(take);
      if (take.length < rest.length) b.piece = null;
      rest = rest.slice(take.length);
    }
    b.drawn = b.text.length;
  }

  fillThought(b) {
    if (!b.details) {
      b.pre = h("div.thought-text");
      b.details = h("details", null, h("summary", null, "Thinking…"), b.pre);
      b.el.replaceChildren(b.details);
    }
    b.pre.textContent = b.text;
    b.details.firstChild.textContent = b.final ? "Thought" : "Thinking…";
  }

  fillTool(b) {
    fillToolCard(b);
  }

  fillFailure(b) {
    b.el.setAttribute("role", "alert");
    replace(b.el, h("header", null, h("span.who", null, "Turn failed")),
      h("p.failure-message", null, b.message || ""),
      b.retries ? h("p.muted.retries", null, `after ${b.retries} ${b.retries === 1 ? "retry" : "retries"}`) : null);
  }

  fillApproval(b) {
    // A notification's click opens the session at this card (notify.js).
    b.el.dataset.request = b.requestId;
    const head = h("header", null, h("span.who", null, "Approval needed"), h("span.tool-name", null, b.tool || ""));
    const summary = h("pre.io", null, b.summary || "");
    let foot;
    if (b.resolved) {
      const r = b.resolved;
      foot = h("p.resolved", null, `${label(r.decision)}${decidedBy(r.by)}${r.reason && r.reason !== "answered" ? ` (${r.reason})` : ""}`);
      b.el.classList.add("done");
    } else if (this.actions.canApprove()) {
      const choose = (d) => this.actions.approve(b, d);
      foot = h("div.actions", null,
        h("button.primary", { type: "button", dataset: { decision: "allow_once" }, onclick: () => choose("allow_once") }, "Allow once"),
        h("button", { type: "button", dataset: { decision: "allow_always" }, onclick: () => choose("allow_always") }, "Always allow"),
        h("button.danger", { type: "button", dataset: { decision: "reject" }, onclick: () => choose("reject") }, "Reject"));
    } else {
      foot = h("p.muted", null, "Waiting for the session's owner");
    }
    replace(b.el, head, summary, foot, b.error ? h("p.error", null, b.error) : null);
  }

  fillNote(b) {
    replace(b.el, h("p.note", null, b.text),
      b.detail ? h("details", null, h("summary", null, "Details"), h("div.prompt", null, b.detail)) : null,
      b.at ? h("span.muted", null, ago(b.at)) : null);
  }
}

function label(decision) {
  return { allow_once: "Allowed once", allow_always: "Always allowed", reject: "Rejected", reject_with_edit: "Rejected with an edit" }[decision] || String(decision);
}

/** Where an answer came from, as words: `decidedBy.client` (SPEC §22.1). */
const FACES = { chat: "the chat", dashboard: "the dashboard", acp: "an editor (ACP)", rpc: "the command line (rpc)", webhook: "a webhook", schedule: "a schedule" };

/** " by operator from the dashboard" from `decidedBy {principal, client}`; "" without it. */
function decidedBy(by) {
  if (!by || typeof by !== "object") return "";
  const who = typeof by.principal === "string" && by.principal ? ` by ${by.principal}` : "";
  const client = typeof by.client === "string" ? by.client : "";
  const from = client ? ` from ${Object.hasOwn(FACES, client) ? FACES[client] : client}` : "";
  return `${who}${from}`;
}

/**
 * A `rewind` row's note: its content is JSON `{toTurnId, rewoundTurns, restoredFiles,
 * restoreFiles}` (SPEC §22.2); the files that came back are its details. Text that is not
 * that JSON is shown as it is.
 */
export function rewindNote(content) {
  const c = parse(content);
  if (!Array.isArray(c.rewoundTurns) && !Array.isArray(c.restoredFiles)) return { text: `Rewound: ${String(content)}` };
  const files = Array.isArray(c.restoredFiles) ? c.restoredFiles.filter((f) => typeof f === "string") : [];
  const turns = Array.isArray(c.rewoundTurns) ? c.rewoundTurns.length : 0;
  const gone = `${turns} turn${turns === 1 ? "" : "s"} taken back`;
  if (c.restoreFiles === false) return { text: `Rewound the conversation (${gone}); files were left as they are` };
  const n = files.length;
  return { text: `Rewound (${gone}); ${n} file${n === 1 ? "" : "s"} restored`, detail: n ? files.join("\n") : null };
}

/** An error row's content: `{message, retries}` as JSON, or the message as text. */
function failureOf(content) {
  const c = parse(content);
  if (typeof c.message === "string" || typeof c.error === "string") {
    const retries = Number(c.retries ?? c.attempts ?? 0);
    return { message: c.message ?? c.error, retries: Number.isFinite(retries) ? retries : 0 };
  }
  return { message: typeof c.value === "string" ? c.value : String(content), retries: 0 };
}

function parse(content) {
  try {
    const v = JSON.parse(content);
    return v && typeof v === "object" ? v : { value: v };
  } catch {
    return { value: content };
  }
}
