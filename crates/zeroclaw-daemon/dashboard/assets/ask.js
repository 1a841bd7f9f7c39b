// Ask-user forms (SPEC §14 "Ask-user"): answers the daemon's `elicitation/create` with a
// form built from its `requestedSchema` (free text `answer`, one `choice`, or several
// `choices`). The form shows over the page; one at a time, the rest wait in order.
// A question is asked of every face of the owner (SPEC §22): when `ask_user_resolved`
// says it was settled elsewhere (or timed out, or its turn ended), its form goes away;
// the daemon no longer waits, so what the form is resolved with then is ignored.
import { h, replace } from "./dom.js";

const queue = [];
let layer = null;

export function installAsk(rpc) {
  rpc.onRequest("elicitation/create", (params) => new Promise((resolve) => {
    queue.push({ params, resolve });
    if (queue.length === 1) showNext();
  }));
  rpc.addEventListener("update", (ev) => {
    const u = ev.detail;
    if (u && u.type === "ask_user_resolved") withdraw(u.requestId);
  });
}

/** Drops the question `requestId` (settled elsewhere), showing the next one if it was up. */
function withdraw(requestId) {
  if (!requestId) return;
  const i = queue.findIndex((q) => q.params.requestId === requestId);
  if (i < 0) return;
  const [q] = queue.splice(i, 1);
  q.resolve({ action: "cancel" });
  if (i === 0) showNext();
}

function showNext() {
  if (!queue.length) {
    if (layer) layer.remove();
    layer = null;
    return;
  }
  const { params, resolve } = queue[0];
  const done = (answer) => {
    queue.shift();
    resolve(answer);
    showNext();
  };
  if (!layer) {
    layer = h("div.overlay");
    document.body.appendChild(layer);
  }
  replace(layer, askForm(params, done));
  const first = layer.querySelector("input, select, textarea");
  if (first) first.focus();
}

/** One form field per schema property; returns [element, read()] pairs. */
function fields(schema) {
  const props = (schema && schema.properties) || {};
  const out = [];
  for (const [name, prop] of Object.entries(props)) {
    const title = prop.title || name;
    if (prop.type === "array") {
      const options = (prop.items && (prop.items.anyOf || prop.items.oneOf)) || [];
      const boxes = options.map((o) => h("input", { type: "checkbox", value: String(o.const) }));
      const el = h("fieldset.choices", null, h("legend", null, title),
        options.map((o, i) => h("label", null, boxes[i], String(o.title ?? o.const))));
      out.push([name, el, () => boxes.filter((b) => b.checked).map((b) => b.value)]);
    } else if (prop.oneOf || prop.enum) {
      const options = prop.oneOf || prop.enum.map((v) => ({ const: v, title: v }));
      const group = `ask-${name}`;
      const radios = options.map((o, i) => h("input", { type: "radio", name: group, value: String(o.const), checked: i === 0 }));
      const el = h("fieldset.choices", null, h("legend", null, title),
        options.map((o, i) => h("label", null, radios[i], String(o.title ?? o.const))));
      out.push([name, el, () => (radios.find((r) => r.checked) || {}).value]);
    } else if (prop.type === "boolean") {
      const box = h("input", { type: "checkbox" });
      out.push([name, h("label", null, box, title), () => box.checked]);
    } else if (prop.type === "number" || prop.type === "integer") {
      const input = h("input", { type: "number" });
      out.push([name, h("label", null, title, input), () => Number(input.value)]);
    } else {
      const input = h("textarea", { rows: 3 });
      out.push([name, h("label", null, title, input), () => input.value]);
    }
  }
  return out;
}

function askForm(params, done) {
  const list = fields(params.requestedSchema);
  const form = h("form.ask", {
    onsubmit: (ev) => {
      ev.preventDefault();
      const content = {};
      for (const [name, , read] of list) content[name] = read();
      done({ action: "accept", content });
    },
  },
  h("h2", null, "The agent asks"),
  h("p.question", null, params.message || ""),
  list.map(([, el]) => el),
  h("div.actions",
    null,
    h("button.primary", { type: "submit" }, "Answer"),
    h("button", { type: "button", onclick: () => done({ action: "decline" }) }, "Decline")));
  return form;
}
