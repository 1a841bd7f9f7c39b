// Sessions grouped by project (SPEC §22 "The project directory"): a session's project is
// its `cwd` (session/list entries carry it); sessions without one (null: a row older than
// the column) or started without a directory (the daemon records their agent's own
// workspace, `…/agents/ALIAS/workspace`) go under "no project". Groups are ordered by their
// latest activity, "no project" last.

export const NO_PROJECT = "no project";

/** The project directory of session entry `s`, or null. */
export function projectOf(s) {
  if (typeof s?.cwd !== "string" || !s.cwd.trim()) return null;
  return isAgentWorkspace(s.cwd, s.agentAlias) ? null : s.cwd;
}

/** Whether `cwd` is agent `alias`'s default workspace (`…/agents/ALIAS/workspace`). */
function isAgentWorkspace(cwd, alias) {
  if (typeof alias !== "string" || !alias) return false;
  const parts = cwd.split(/[\\/]+/).filter(Boolean);
  const n = parts.length;
  return n >= 3 && parts[n - 1] === "workspace" && parts[n - 2] === alias && parts[n - 3] === "agents";
}

/** A project's short name: the last part of its path (`~/src/zeroclaw` → `zeroclaw`). */
export function projectName(cwd) {
  if (!cwd) return NO_PROJECT;
  const parts = cwd.replace(/[\\/]+$/, "").split(/[\\/]/).filter(Boolean);
  return parts.length ? parts[parts.length - 1] : cwd;
}

/** `[{cwd, name, sessions}]`, each group's sessions in the order given. */
export function groupByProject(sessions) {
  const groups = new Map();
  for (const s of sessions) {
    const cwd = projectOf(s);
    if (!groups.has(cwd)) groups.set(cwd, { cwd, name: projectName(cwd), sessions: [], latest: "" });
    const g = groups.get(cwd);
    g.sessions.push(s);
    const at = String(s.lastActivity ?? "");
    if (at > g.latest) g.latest = at;
  }
  return [...groups.values()].sort((a, b) => {
    if (!a.cwd !== !b.cwd) return a.cwd ? -1 : 1;
    return b.latest.localeCompare(a.latest);
  });
}
