// The config view (SPEC §6, §20): the whole configuration as the daemon reads it out
// (secrets come masked), one row per property, and editing one property at a time with
// `config/set`; the daemon's refusal is shown at that property. Editing is offered to
// admin principals only; others (with config:read) see it read-only.
import { rpc } from "./rpc.js";
import { h, replace, errText } from "./dom.js";

export function configView(box) {
  let disposed = false;
  const error = h("p.error", { role: "alert" });
  const filter = h("input", { type: "search", placeholder: "Filter properties", "aria-label": "Filter properties", oninput: () => applyFilter() });
  const table = h("div.config");
  const editable = rpc.admin && rpc.can("config/set");
  replace(box, h("div.bar", null, h("h1", null, "Configuration"), filter),
    editable ? null : h("p.muted", null, "Read-only: only an admin principal can change the configuration."),
    error, table);

  async function load() {
    try {
      const r = await rpc.call("config/get", {});
      if (disposed) return;
      const rows = [];
      flatten(r.config || {}, [], rows);
      replace(table, rows.map(([path, value]) => row(path, value)));
      applyFilter();
    } catch (e) {
      error.textContent = errText(e);
    }
  }

  function applyFilter() {
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
