// Budget requests (SPEC §24.2): a turn paused before a provider call that would pass a
// budget shows a card over the page, answered Raise (by the amount in the field, as much
// again as the limit to start with) or Stop through `session/approve`. When
// `budget_resolved` says it was settled (here, elsewhere, by a timeout or with its turn),
// the card goes away. One card at a time; the rest wait in order.
import { h, replace } from "./dom.js";

const queue = [];
let layer = null;
let rpcRef = null;

export function installBudget(rpc) {
  rpcRef = rpc;
  rpc.addEventListener("update", (ev) => {
    const u = ev.detail;
    if (!u) return;
    if (u.type === "budget_request") {
      if (queue.some((q) => q.requestId === u.requestId)) return;
      queue.push(u);
      if (queue.length === 1) showNext();
    } else if (u.type === "budget_resolved") {
      withdraw(u.requestId);
    }
  });
}

function withdraw(requestId) {
  const i = queue.findIndex((q) => q.requestId === requestId);
  if (i < 0) return;
  queue.splice(i, 1);
  if (i === 0) showNext();
}

function showNext() {
  if (!queue.length) {
    if (layer) layer.remove();
    layer = null;
    return;
  }
  if (!layer) {
    layer = h("div.overlay");
    document.body.appendChild(layer);
  }
  replace(layer, card(queue[0]));
  const first = layer.querySelector("input");
  if (first) first.focus();
}

/** `12,000 tokens` or `$0.2500`. */
function amount(budget, n) {
  return String(budget || "").endsWith("_usd") ? `$${Number(n).toFixed(4)}` : `${Number(n).toLocaleString()} tokens`;
}

function card(u) {
  const by = h("input", { type: "number", min: "0", step: "any", value: String(u.limit || 1), "aria-label": "Raise by" });
  const error = h("p.error", { role: "alert" });
  const send = async (decision) => {
    const params = { sessionId: u.sessionId, requestId: u.requestId, decision };
    if (decision === "raise") params.raiseBy = Number(by.value);
    try {
      await rpcRef.call("session/approve", params);
    } catch (e) {
      error.textContent = (e && e.message) || String(e);
    }
  };
  return h("form.ask.budget", {
    dataset: { requestId: u.requestId },
    onsubmit: (ev) => {
      ev.preventDefault();
      send("raise");
    },
  },
  h("h2", null, "Budget reached"),
  h("p.question", null, `${u.budget}: ${amount(u.budget, u.used)} used of ${amount(u.budget, u.limit)}. The turn waits (at most ${u.timeoutSecs} s).`),
  h("label", null, "Raise by", by),
  error,
  h("div.actions", null,
    h("button.primary", { type: "submit", dataset: { decision: "raise" } }, "Raise"),
    h("button.danger", { type: "button", dataset: { decision: "stop" }, onclick: () => send("stop") }, "Stop")));
}
