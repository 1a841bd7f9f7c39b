// The status view (SPEC §5 `status`, §20): version, uptime, connections, live sessions,
// and where the gateway listens; refreshed every few seconds while shown.
import { rpc } from "./rpc.js";
import { h, replace, errText } from "./dom.js";

export function statusView(box) {
  let timer = null;
  let disposed = false;
  const body = h("dl.status");
  const error = h("p.error", { role: "alert" });
  replace(box, h("h1", null, "Status"), error, body);

  async function load() {
    try {
      const s = await rpc.call("status", {});
      if (disposed) return;
      const items = [
        ["Version", s.serverVersion],
        ["Uptime", uptime(s.uptimeSecs)],
        ["Connections", s.connections],
        ["Live sessions", s.activeSessions],
        ["You are", `${rpc.info?.principal?.id ?? ""}${rpc.admin ? " (admin)" : ""}`],
        ["Gateway", s.gateway?.url ?? (s.gateway === null ? "not running" : undefined)],
        ["Config dir", s.configDir],
        ["Data dir", s.dataDir],
      ].filter(([, v]) => v !== undefined && v !== null);
      replace(body, items.map(([k, v]) => [h("dt", null, k), h("dd", null, String(v))]));
      error.textContent = "";
    } catch (e) {
      if (!disposed) error.textContent = errText(e);
    }
    if (!disposed) timer = setTimeout(load, 5000);
  }

  load();
  return { dispose() { disposed = true; clearTimeout(timer); } };
}

function uptime(secs) {
  if (typeof secs !== "number") return undefined;
  const d = Math.floor(secs / 86400), hh = Math.floor((secs % 86400) / 3600), m = Math.floor((secs % 3600) / 60);
  return d ? `${d} d ${hh} h` : hh ? `${hh} h ${m} min` : `${m} min ${secs % 60} s`;
}
