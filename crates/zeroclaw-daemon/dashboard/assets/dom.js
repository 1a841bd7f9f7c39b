// Small DOM helpers for every view: elements are built with text, never with HTML
// strings. The one exception is `markdown()`, whose HTML is the vendored sanitizer's
// output (SPEC §20 "Safe by construction"), code blocks then decorated by code.js.
import { Marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.mjs";
import { decorateCode, keepLanguageClass } from "./code.js";

/** `h("button.primary", {onclick}, "Send")`: an element with classes, props and children. */
export function h(spec, props, ...children) {
  const [tag, ...classes] = spec.split(".");
  const el = document.createElement(tag || "div");
  if (classes.length) el.className = classes.join(" ");
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(el.dataset, v);
      else if (k === "text") el.textContent = String(v);
      else if (k in el && typeof v !== "string") el[k] = v;
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** Replaces every child of `el` with `children`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const marked = new Marked({ gfm: true, breaks: true, async: false });

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

DOMPurify.addHook("uponSanitizeAttribute", keepLanguageClass);

const PURIFY = {
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed"],
  FORBID_ATTR: ["style", "id", "name", "class"],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

/** Model output as a sanitized DOM fragment: markdown → HTML (marked) → DOMPurify. */
export function markdown(text) {
  let html;
  try {
    html = marked.parse(String(text));
  } catch {
    return document.createTextNode(String(text));
  }
  return decorateCode(DOMPurify.sanitize(html, PURIFY));
}

/** "3 min ago" for an RFC 3339 or epoch-seconds/millis time; "" when unknown. */
export function ago(when) {
  if (when === undefined || when === null || when === "") return "";
  let t = typeof when === "number" ? (when < 1e12 ? when * 1000 : when) : Date.parse(when);
  if (Number.isNaN(t)) return String(when);
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(t).toLocaleDateString();
}

/** A one-line JSON (or the string itself) for tool input and output. */
export function show(value) {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** A button that asks "sure?" in place before it runs `action` (no blocking dialogs). */
export function confirmButton(label, question, action, cls = "danger") {
  const wrap = h("span.confirm");
  const first = h(`button.${cls}`, { type: "button", onclick: () => ask() }, label);
  function ask() {
    replace(
      wrap,
      h("span.question", null, question),
      h(`button.${cls}`, { type: "button", onclick: () => { reset(); action(); } }, "Yes"),
      h("button", { type: "button", onclick: reset }, "No"),
    );
  }
  function reset() {
    replace(wrap, first);
  }
  reset();
  return wrap;
}

/** Error text for a JSON-RPC error or an exception. */
export function errText(e) {
  if (!e) return "error";
  if (e.code !== undefined) return `${e.message} (${e.code})`;
  return e.message || String(e);
}
