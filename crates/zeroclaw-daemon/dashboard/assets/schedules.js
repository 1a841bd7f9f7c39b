// The Schedules page (SPEC §24.1): the caller's schedules with their next run and last
// outcome, "Run now", enable/disable, delete, and a form that adds one. Refreshed every
// few seconds while shown; every value is shown as text.
import { rpc } from "./rpc.js";
import { h, replace, errText, confirmButton } from "./dom.js";

const REFRESH_MS = 5000;

export function schedulesView(box) {
  let timer = null;
  let disposed = false;
  const list = h("ul.schedules");
  const error = h("p.error", { role: "alert" });
  const form = addForm(() => load());
  replace(box, h("h1", null, "Schedules"), error, list, form);

  async function load() {
    clearTimeout(timer);
    try {
      const r = await rpc.call("schedule/list", {});
      if (disposed) return;
      draw(r.schedules || []);
      error.textContent = "";
    } catch (e) {
      if (!disposed) error.textContent = errText(e);
    }
    if (!disposed) timer = setTimeout(load, REFRESH_MS);
  }

  async function act(method, params) {
    try {
      await rpc.call(method, params);
      error.textContent = "";
    } catch (e) {
      error.textContent = errText(e);
    }
    load();
  }

  function draw(schedules) {
    if (!schedules.length) {
      replace(list, h("li.muted", null, "No schedules yet: add one below."));
      return;
    }
    replace(list, schedules.map((s) => h("li.schedule", { dataset: { id: s.scheduleId } },
      h("div.schedule-head", null,
        h("strong.schedule-name", null, s.name),
        h("span.muted", null, ` · ${s.agentAlias} · ${timing(s)}`),
        s.enabled ? null : h("span.badge", null, "disabled")),
      h("p.schedule-prompt", null, s.prompt),
      h("dl.schedule-facts", null,
        h("dt", null, "Next run"), h("dd.next", null, s.enabled && s.nextRunAt ? when(s.nextRunAt) : "—"),
        h("dt", null, "Last run"), h("dd.last", null, last(s.lastRun))),
      h("div.actions", null,
        h("button.run", { type: "button", onclick: () => act("schedule/run", { scheduleId: s.scheduleId }) }, "Run now"),
        h("button.toggle", {
          type: "button",
          onclick: () => act("schedule/update", { scheduleId: s.scheduleId, enabled: !s.enabled }),
        }, s.enabled ? "Disable" : "Enable"),
        confirmButton("Delete", `Delete the schedule “${s.name}” and its runs?`,
          () => act("schedule/delete", { scheduleId: s.scheduleId }))))));
  }

  load();
  return { dispose() { disposed = true; clearTimeout(timer); } };
}

/** The add form: name, agent, prompt, one timing (cron, every or at), zone. */
function addForm(added) {
  const name = h("input", { name: "name", required: true, placeholder: "nightly-notes", autocomplete: "off" });
  const agent = h("input", { name: "agentAlias", required: true, value: "default", autocomplete: "off" });
  const prompt = h("textarea", { name: "prompt", required: true, rows: 3, placeholder: "What the agent is asked each time" });
  const kind = h("select", { name: "kind" },
    h("option", { value: "cron" }, "cron"),
    h("option", { value: "every" }, "every"),
    h("option", { value: "at" }, "at"));
  const value = h("input", { name: "when", required: true, placeholder: "30 7 * * MON-FRI", autocomplete: "off" });
  const tz = h("input", { name: "tz", placeholder: "Europe/Berlin (default: the daemon's zone)", autocomplete: "off" });
  const status = h("p.error", { role: "alert" });
  const hints = { cron: "30 7 * * MON-FRI", every: "2h", at: "2026-12-24T09:00:00+01:00" };
  kind.addEventListener("change", () => { value.placeholder = hints[kind.value]; });
  const label = (text, input) => h("label", null, h("span", null, text), input);
  const form = h("form.schedule-add", {
    async onsubmit(ev) {
      ev.preventDefault();
      const params = { name: name.value.trim(), agentAlias: agent.value.trim(), prompt: prompt.value };
      params[kind.value] = value.value.trim();
      if (tz.value.trim()) params.tz = tz.value.trim();
      try {
        await rpc.call("schedule/create", params);
        status.textContent = "";
        name.value = "";
        prompt.value = "";
        value.value = "";
        added();
      } catch (e) {
        status.textContent = errText(e);
      }
    },
  },
  h("h2", null, "Add a schedule"),
  label("Name", name), label("Agent", agent), label("Prompt", prompt),
  h("div.schedule-when", null, label("When", kind), label("Value", value)),
  label("Time zone", tz), status,
  h("button.primary", { type: "submit" }, "Add"));
  return form;
}

function timing(s) {
  if (s.cron) return `cron ${s.cron} (${s.tz})`;
  if (s.every) return `every ${s.every}`;
  if (s.at) return `once at ${when(s.at)}`;
  return "";
}

function when(text) {
  const d = new Date(text);
  return Number.isNaN(d.getTime()) ? String(text) : d.toLocaleString();
}

function last(run) {
  if (!run) return "never";
  const at = run.startedAt || run.scheduledFor;
  const error = run.error ? `: ${run.error}` : "";
  return `${run.outcome} · ${when(at)}${error}`;
}
