// What a turn changed (SPEC §22 "What a turn changed"): the "N files changed" line under a
// turn, from `session/diff {sessionId, turnId}`, opening to each file's status, counts and
// unified diff (highlighted as a diff by the vendored highlighter, as text otherwise).
import { h } from "./dom.js";
import { decorateCode } from "./code.js";

/** The folded "N files changed" view of `files` ([{path, status, additions, deletions, patch?}]). */
export function diffBlock(files) {
  const n = files.length;
  const add = files.reduce((a, f) => a + (Number(f.additions) || 0), 0);
  const del = files.reduce((a, f) => a + (Number(f.deletions) || 0), 0);
  return h("details.diff", null,
    h("summary", null, h("span.files-changed", null, `${n} file${n === 1 ? "" : "s"} changed`),
      h("span.adds", null, ` +${add}`), h("span.dels", null, ` −${del}`)),
    h("ul.diff-files", null, files.map(fileItem)));
}

function fileItem(f) {
  const patch = typeof f.patch === "string" && f.patch ? patchView(f.patch) : h("p.muted", null, "No text diff for this file.");
  return h("li.diff-file", { dataset: { status: f.status || "" } },
    h("details", null,
      h("summary", null, h("span.status", null, f.status || ""), " ", h("code.path", null, f.path || ""),
        h("span.adds", null, ` +${Number(f.additions) || 0}`), h("span.dels", null, ` −${Number(f.deletions) || 0}`)),
      patch));
}

function patchView(patch) {
  const code = h("code", { class: "language-diff" }, patch);
  const box = h("div", null, h("pre", null, code));
  decorateCode(box);
  return box;
}

/** The paths `files` lists, for a rewind's confirmation. */
export function pathsOf(lists) {
  const seen = new Map();
  for (const files of lists) for (const f of files || []) if (f && f.path) seen.set(f.path, f.status || "");
  return [...seen.entries()].map(([path, status]) => ({ path, status }));
}
