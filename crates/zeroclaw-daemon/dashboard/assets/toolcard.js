// Tool cards (SPEC §22 "Live tool output"): a collapsed card names what the call does —
// the command for bash, the path for the file tools, otherwise the tool and a one-line
// summary of its arguments (MCP tools are `SERVER__TOOL`) — never raw JSON. While the tool
// runs, the card shows the output streamed as `tool_output_chunk` events and the time since
// `startedAt` (or since it was allowed, when it waited for an approval); while an approval
// holds it, it says so. Input and output in full are folded below.
import { h, replace, show } from "./dom.js";

/** Live output kept per card, in characters (the oldest is dropped past it). */
const LIVE_MAX = 64 * 1024;
/** Lines of live output shown on the collapsed card. */
const TAIL_LINES = 6;

/** The one line a collapsed card shows for a call of `name` with `input`. */
export function toolSummary(name, input) {
  const args = input && typeof input === "object" && !Array.isArray(input) ? input : null;
  if (name === "bash" && typeof args?.command === "string") return oneLine(args.command);
  if ((name === "read_file" || name === "write_file") && typeof args?.path === "string") return args.path;
  if (!args) return input === undefined || input === null ? "" : oneLine(show(input));
  const parts = Object.entries(args).map(([k, v]) => `${k}: ${short(v)}`);
  return oneLine(parts.join(", "));
}

/** The tool's name as shown: `server › tool` for an MCP tool. */
export function toolLabel(name) {
  const n = String(name || "tool");
  const cut = n.indexOf("__");
  return cut > 0 ? `${n.slice(0, cut)} › ${n.slice(cut + 2)}` : n;
}

function short(v) {
  const s = typeof v === "string" ? v : JSON.stringify(v) ?? String(v);
  return s.length > 40 ? `${s.slice(0, 39)}…` : s;
}

function oneLine(s) {
  const first = String(s).split("\n").find((l) => l.trim()) || "";
  const more = String(s).includes("\n") && String(s).trim() !== first.trim();
  return more ? `${first.trim()} …` : first.trim();
}

/** Appends a `tool_output_chunk` to card `b`. */
export function addChunk(b, stream, text) {
  b.live = b.live || [];
  b.liveLen = (b.liveLen || 0) + text.length;
  const last = b.live[b.live.length - 1];
  if (last && last.stream === stream) last.text += text;
  else b.live.push({ stream, text });
  while (b.liveLen > LIVE_MAX && b.live.length) {
    const over = b.liveLen - LIVE_MAX;
    const first = b.live[0];
    if (first.text.length <= over) {
      b.live.shift();
      b.liveLen -= first.text.length;
    } else {
      first.text = first.text.slice(over);
      b.liveLen -= over;
    }
    b.cut = true;
  }
}

/** Milliseconds since the epoch of a `startedAt` (RFC 3339, or epoch seconds/millis). */
export function startTime(at) {
  if (typeof at === "number") return at < 1e12 ? at * 1000 : at;
  if (typeof at === "string") {
    const t = Date.parse(at);
    if (!Number.isNaN(t)) return t;
  }
  return null;
}

function elapsed(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** Draws card `b` into `b.el`. */
export function fillToolCard(b) {
  const running = b.output === undefined;
  // A call held for a person's answer is not running yet: no clock until it is allowed.
  const status = !running ? h("span.badge", null, "done")
    : b.awaiting ? h("span.badge.waiting", null, "awaiting approval")
    : h("span.badge.running", null, "running");
  const summary = toolSummary(b.name, b.input);
  const time = running && b.started && !b.awaiting ? h("span.elapsed.muted", null, elapsed(Date.now() - b.started)) : null;
  const parts = [h("summary", null,
    h("span.tool-name", null, toolLabel(b.name)),
    summary ? h("span.tool-summary", { title: summary }, summary) : null,
    status, time)];
  if (b.input !== undefined) parts.push(h("div.label", null, "Input"), h("pre.io", null, show(b.input)));
  if (b.live && b.live.length && running) {
    parts.push(h("div.label", null, "Output so far"), liveOutput(b.live, b.cut));
  }
  if (b.output !== undefined) parts.push(h("div.label", null, "Output"), h("pre.io", null, show(b.output)));
  const open = b.el.querySelector("details")?.open || false;
  const tail = running && b.live && b.live.length && !open ? h("pre.io.tail", { "aria-live": "off" }, tailOf(b.live)) : null;
  replace(b.el, h("details.card", { open }, parts), tail);
}

function liveOutput(live, cut) {
  return h("pre.io.live", null, cut ? h("span.muted", null, "…\n") : null,
    live.map((c) => h(`span.${c.stream === "stderr" ? "stderr" : "stdout"}`, null, c.text)));
}

/** The last TAIL_LINES lines of `live`, stderr in its own colour. */
function tailOf(live) {
  const text = live.map((c) => c.text).join("").replace(/\n$/, "");
  let from = text.length;
  for (let n = 0; n < TAIL_LINES && from > 0; n++) from = text.lastIndexOf("\n", from - 1);
  from = Math.max(0, from < 0 ? 0 : from + 1);
  const out = [];
  let at = 0;
  for (const c of live) {
    const end = Math.min(at + c.text.length, text.length);
    if (end > from) out.push(h(`span.${c.stream === "stderr" ? "stderr" : "stdout"}`, null, c.text.slice(Math.max(0, from - at), end - at)));
    at += c.text.length;
  }
  return out;
}
