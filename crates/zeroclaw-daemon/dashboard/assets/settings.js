// The settings form (SPEC §6 `config/schema`, §22 "A dashboard for a day's work"): built
// from the JSON Schema the daemon serves and filled from `config/get`. Sections follow the
// schema's `x-groups`; each property gets a widget by its type (a select for an enum, a
// switch for a boolean, a number box with its range, one line per entry for a list, JSON for
// the rest) and its help text; secrets (`writeOnly`) are never shown back, only replaced.
// A change is written with `config/set`, and the daemon's error is shown at that field.
import { rpc } from "./rpc.js";
import { h, replace, errText } from "./dom.js";

/** Draws the form in `box` from `schema` and `config`; returns the filter function. */
export function settingsForm(box, schema, config, editable, reload) {
  const groups = schema["x-groups"] || [{ id: "all", title: "Settings", properties: Object.keys(schema.properties || {}) }];
  const nav = h("nav.groups", { "aria-label": "Sections" });
  const sections = [];
  for (const g of groups) {
    const section = h("section.group", { dataset: { group: g.id }, "aria-labelledby": `group-${g.id}` },
      h("h2", { id: `group-${g.id}` }, g.title));
    for (const key of g.properties || []) {
      const s = schema.properties?.[key];
      if (s) section.append(...property(s, [key], config?.[key], editable, reload));
    }
    sections.push(section);
    nav.append(h("a", { href: `#group-${g.id}`, onclick: (ev) => { ev.preventDefault(); section.scrollIntoView({ block: "start" }); } }, g.title));
  }
  replace(box, nav, sections);
}

/** Filters the drawn fields by property path or label (case-insensitive). */
export function filterSettings(box, query) {
  const q = query.trim().toLowerCase();
  for (const f of box.querySelectorAll(".field")) {
    f.hidden = !!q && !(f.dataset.prop.toLowerCase().includes(q) || f.textContent.toLowerCase().includes(q));
  }
  for (const set of box.querySelectorAll("fieldset.entry, fieldset.struct")) {
    set.hidden = !!q && !set.querySelector(".field:not([hidden])");
  }
}

/** The widgets for the property at `path` (`s` its schema, `value` its current value). */
function property(s, path, value, editable, reload) {
  if (s.type === "object" && s.properties) {
    const inner = Object.entries(s.properties).flatMap(([k, sub]) => property(sub, path.concat(k), value?.[k], editable, reload));
    if (path.length === 1) {
      return [h("fieldset.struct", { dataset: { prop: propPath(path) } },
        h("legend", null, path[path.length - 1]), s.description ? h("p.help.muted", null, s.description) : null, inner)];
    }
    return inner;
  }
  if (s.type === "object" && s.additionalProperties && typeof s.additionalProperties === "object" && s.additionalProperties.properties) {
    return [entries(s, path, value || {}, editable, reload)];
  }
  if (s.type === "object" && s.additionalProperties?.writeOnly) {
    return [secretMap(s, path, value || {}, editable, reload)];
  }
  return [field(s, path, value, editable)];
}

/** A map of named entries (providers, agents, …): one fieldset each, and "Add". */
function entries(s, path, value, editable, reload) {
  const what = s["x-keyName"] || "entry";
  const box = h("fieldset.map", { dataset: { prop: propPath(path) } },
    h("legend", null, path[path.length - 1]), s.description ? h("p.help.muted", null, s.description) : null);
  const names = Object.keys(value);
  if (!names.length) box.append(h("p.muted.none", null, `No ${what} yet.`));
  for (const name of names) {
    const p = path.concat(name);
    const inner = Object.entries(s.additionalProperties.properties)
      .flatMap(([k, sub]) => property(sub, p.concat(k), value[name]?.[k], editable, reload));
    box.append(h("fieldset.entry", { dataset: { prop: propPath(p) } },
      h("legend", null, h("span.entry-kind.muted", null, `${what} `), name), inner));
  }
  if (editable) {
    const name = h("input", { type: "text", placeholder: `new ${what} name`, "aria-label": `New ${what} name`, spellcheck: false });
    const msg = h("span.prop-error", { role: "alert" });
    box.append(h("form.add", {
      onsubmit: async (ev) => {
        ev.preventDefault();
        if (!name.value.trim()) return;
        try {
          await rpc.call("config/set", { prop: propPath(path.concat(name.value.trim())), value: {} });
          reload();
        } catch (e) {
          msg.textContent = errText(e);
        }
      },
    }, name, h("button", { type: "submit" }, `Add ${what}`), msg));
  }
  return box;
}

/**
 * A map of secrets (an MCP server's `env`): one write-only field per name, never the
 * values (they come masked, and a JSON box would write the mask back), and "Add".
 */
function secretMap(s, path, value, editable, reload) {
  const box = h("fieldset.map.secrets", { dataset: { prop: propPath(path) } },
    h("legend", null, path[path.length - 1]), s.description ? h("p.help.muted", null, s.description) : null);
  const names = Object.keys(value);
  if (!names.length) box.append(h("p.muted.none", null, "None."));
  for (const name of names) box.append(field(s.additionalProperties, path.concat(name), value[name], editable));
  if (editable) {
    const name = h("input", { type: "text", placeholder: "NAME", "aria-label": "New variable name", spellcheck: false });
    const secret = h("input", { type: "password", placeholder: "value", "aria-label": "New variable value", autocomplete: "new-password" });
    const msg = h("span.prop-error", { role: "alert" });
    box.append(h("form.add", {
      onsubmit: async (ev) => {
        ev.preventDefault();
        if (!name.value.trim()) return;
        try {
          await rpc.call("config/set", { prop: propPath(path.concat(name.value.trim())), value: secret.value });
          reload();
        } catch (e) {
          msg.textContent = errText(e);
        }
      },
    }, name, secret, h("button", { type: "submit" }, "Add"), msg));
  }
  return box;
}

/** One property: its label, help text, widget, and where the daemon's answer shows. */
function field(s, path, value, editable) {
  const prop = propPath(path);
  const id = `f-${prop.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  const help = s.description ? h("p.help.muted", { id: `${id}-help` }, s.description) : null;
  const msg = h("span.prop-error", { role: "alert" });
  const described = help ? `${id}-help` : undefined;
  const secret = s.writeOnly === true;
  const w = widget(s, value, { id, described, disabled: !editable, secret });
  const save = h("button", { type: "submit", hidden: true }, "Save");
  const wrap = h("form.field", {
    // The daemon checks the value and its answer is shown here, not the browser's.
    novalidate: true,
    dataset: { prop, kind: w.kind },
    onsubmit: (ev) => { ev.preventDefault(); write(); },
  }, h("label", { for: id }, h("span.name", null, path[path.length - 1]), secret ? h("span.badge", null, "secret") : null),
  w.el, save, help, msg);

  async function write() {
    if (!editable) return;
    let next;
    try {
      next = w.read();
    } catch (e) {
      show(e.message, false);
      return;
    }
    try {
      const r = await rpc.call("config/set", { prop, value: next });
      show(r.restartRequired ? "Saved; takes effect at the next start." : "Saved.", true);
      save.hidden = true;
      if (secret) w.saved();
    } catch (e) {
      show(errText(e), false);
    }
  }

  function show(text, ok) {
    msg.textContent = text;
    msg.classList.toggle("ok", ok);
    wrap.classList.toggle("invalid", !ok);
    w.el.setAttribute("aria-invalid", ok ? "false" : "true");
  }

  w.onChange(() => {
    msg.textContent = "";
    wrap.classList.remove("invalid");
    if (w.instant) write();
    else save.hidden = !editable;
  });
  return wrap;
}

/** The input for one schema type: `{el, kind, read(), onChange(fn), instant}`. */
function widget(s, value, { id, described, disabled, secret }) {
  const common = { id, "aria-describedby": described, disabled };
  if (s.enum) {
    const el = h("select", common, s.enum.map((v) => h("option", { value: v, selected: v === value }, v)));
    return simple(el, "select", () => el.value, true);
  }
  if (s.type === "boolean") {
    const el = h("input", { ...common, type: "checkbox", role: "switch", checked: value === true });
    return simple(h("span.switch", null, el, h("span.slider", { "aria-hidden": "true" })), "switch", () => el.checked, true, el);
  }
  if (s.type === "integer" || s.type === "number") {
    const el = h("input", { ...common, type: "number", value: value ?? "", min: s.minimum ?? s.exclusiveMinimum, max: s.maximum, step: s.type === "integer" ? 1 : "any" });
    return simple(el, "number", () => {
      if (el.value.trim() === "") throw new Error("a number is needed");
      return Number(el.value);
    }, false);
  }
  if (s.type === "string") {
    if (secret) {
      const set = typeof value === "string" && value !== "";
      const el = h("input", { ...common, type: "password", value: "", autocomplete: "new-password", placeholder: set ? "set (hidden); type to replace" : "not set" });
      const w = simple(el, "secret", () => el.value, false);
      w.saved = () => { el.value = ""; el.placeholder = "set (hidden); type to replace"; };
      return w;
    }
    const el = h("input", { ...common, type: "text", value: value ?? "", spellcheck: false });
    return simple(el, "text", () => el.value, false);
  }
  if (s.type === "array" && s.items?.type === "string") {
    const list = Array.isArray(value) ? value : [];
    const el = h("textarea", { ...common, rows: Math.min(6, Math.max(1, list.length)), spellcheck: false, placeholder: "one per line" });
    el.value = list.join("\n");
    return simple(el, "list", () => el.value.split("\n").map((x) => x.trim()).filter(Boolean), false);
  }
  // Anything else (a map of strings, a list of hooks): JSON.
  const el = h("textarea.json", { ...common, rows: 3, spellcheck: false });
  el.value = value === undefined ? "" : JSON.stringify(value, null, 1);
  return simple(el, "json", () => {
    try {
      return JSON.parse(el.value || "null");
    } catch {
      throw new Error("not valid JSON");
    }
  }, false);
}

function simple(el, kind, read, instant, input = el) {
  return {
    el, kind, read, instant,
    saved() {},
    onChange(fn) { input.addEventListener(instant ? "change" : "input", fn); },
  };
}

function segment(s) {
  return /^[A-Za-z0-9_-]+$/.test(s) ? s : `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** The dotted property path of `segments`, quoting the ones that need it. */
export function propPath(segments) {
  return segments.map(segment).join(".");
}
