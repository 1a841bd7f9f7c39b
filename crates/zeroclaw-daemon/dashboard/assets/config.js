// The config view (SPEC §6, §20, §22): the settings form built from `config/schema`
// (settings.js) when the daemon serves it, else the whole configuration as the daemon
// reads it out (secrets come masked), one row per property. Either way a property is
// written with `config/set` and the daemon's refusal is shown at it. Editing is offered to
// admin principals only; others (with config:read) see it read-only.
import { rpc } from "./rpc.js";
import { h, replace, errText } from "./dom.js";
import { settingsForm, filterSettings } from "./settings.js";

export function configView(box) {
  let disposed = false;
  let form = false;
  const error = h("p.error", { role: "alert" });
  const filter = h("input", { type: "search", placeholder: "Filter settings", "aria-label": "Filter settings", oninput: () => applyFilter() });
  const table = h("div.config");
  const editable = rpc.admin && rpc.can("config/set");
  replace(box, h("div.bar", null, h("h1", null, "Settings"), filter),
    editable ? null : h("p.muted", null, "Read-only: only an admin principal can change the configuration."),
    error, table);
  box.classList.add("config-view");

  async function load() {
    try {
      const [r, schema] = await Promise.all([rpc.call("config/get", {}), loadSchema()]);
      if (disposed) return;
      if (schema) {
        form = true;
        table.classList.add("settings");
        settingsForm(table, schema, r.config || {}, editable, load);
        applyFilter();
        return;
      }
      const rows = [];
      flatten(r.config || {}, [], rows);
      replace(table, rows.map(([path, value]) => row(path, value)));
      applyFilter();
    } catch (e) {
      error.textContent = errText(e);
    }
  }

  function applyFilter() {
    if (form) return filterSettings(table, filter.value);
    const q = filter.value.toLowerCase();
    for (const r of table.children) r.hidden = !!q && !r.dataset.prop.toLowerCase().includes(q);
  }

  function row(prop, value) {
    const secret = value === "***";
    const text = typeof value === "string" ? value : JSON.stringify(value);
    const field = h("input", { type: secret ? "password" : "text", value: text, readOnly: !editable, "aria-label": prop, spellcheck: false });
    const msg = h("span.prop-error", { role: "alert" });
    const save = h("button", { type: "submit", hidden: true }, "Save");
    field.addEventListener("input", () => { save.hidden = !editable || field.value === text; msg.textContent = ""; });
    const form = h("form.prop", {
      dataset: { prop },
      onsubmit: async (ev) => {
        ev.preventDefault();
        if (!editable) return;
        msg.textContent = "";
        const next = typeof value === "string" ? field.value : parseJson(field.value);
        try {
          const r = await rpc.call("config/set", { prop, value: next });
          msg.textContent = r.restartRequired ? "Saved; takes effect at the next start." : "Saved.";
          msg.classList.add("ok");
          save.hidden = true;
        } catch (e) {
          msg.classList.remove("ok");
          msg.textContent = errText(e);
        }
      },
    }, h("label", null, h("code.prop-name", null, prop), field), save, msg);
    return form;
  }

  load();
  return { dispose() { disposed = true; } };
}

/** The configuration's schema, or null when this daemon does not serve `config/schema`. */
async function loadSchema() {
  if (!rpc.can("config/schema")) return null;
  try {
    const r = await rpc.call("config/schema", {});
    return r && r.schema && r.schema.properties ? r.schema : null;
  } catch {
    return null;
  }
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function segment(s) {
  return /^[A-Za-z0-9_-]+$/.test(s) ? s : `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** [property path, value] for every leaf (arrays and empty tables count as leaves). */
function flatten(value, path, out) {
  if (value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length) {
    for (const [k, v] of Object.entries(value)) flatten(v, path.concat(segment(k)), out);
  } else if (path.length) {
    out.push([path.join("."), value]);
  }
}
