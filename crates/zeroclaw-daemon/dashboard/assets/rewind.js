// Rewind's confirmation (SPEC §18, §22 "What a turn changed"): before `session/rewind`
// the page says what goes — the turns, and the files they changed when the daemon serves
// `session/diff` — and offers rewinding the conversation only (`restoreFiles: false`).
import { h, replace } from "./dom.js";
import { pathsOf } from "./diffview.js";

/**
 * Asks whether to rewind the `turns` (the target first). `diffOf(turnId)` → files or null
 * (null: unknown). Resolves `{restoreFiles}` or null when the person cancels.
 */
export function confirmRewind(turns, diffOf) {
  return new Promise((resolve) => {
    const layer = h("div.overlay.rewind-confirm");
    const files = h("div.rewind-files", null, diffOf ? h("p.muted", null, "Looking up the files these turns changed…") : null);
    const finish = (choice) => {
      document.removeEventListener("keydown", onKey, true);
      layer.remove();
      resolve(choice);
    };
    const onKey = (ev) => {
      if (ev.key === "Escape") {
        ev.preventDefault();
        ev.stopPropagation();
        finish(null);
      }
    };
    const n = turns.length;
    const form = h("form.ask.rewind", {
      role: "dialog", "aria-modal": "true", "aria-labelledby": "rewind-title",
      onsubmit: (ev) => { ev.preventDefault(); finish({ restoreFiles: true }); },
    },
    h("h2", { id: "rewind-title" }, "Rewind?"),
    h("p.question", null, `The conversation goes back to before this prompt (${n} turn${n === 1 ? "" : "s"} removed); the prompt returns to the composer.`),
    files,
    h("div.actions", null,
      h("button.primary", { type: "submit", dataset: { choice: "all" } }, "Rewind"),
      h("button", { type: "button", dataset: { choice: "conversation" }, title: "Go back in the conversation but keep every file as it is now", onclick: () => finish({ restoreFiles: false }) }, "Conversation only"),
      h("button", { type: "button", dataset: { choice: "cancel" }, onclick: () => finish(null) }, "Cancel")));
    layer.append(form);
    document.body.append(layer);
    document.addEventListener("keydown", onKey, true);
    form.querySelector("button.primary").focus();
    if (diffOf) listFiles(turns, diffOf, files);
  });
}

async function listFiles(turns, diffOf, box) {
  const lists = [];
  let known = true;
  for (const turnId of turns.slice(0, 50)) {
    const f = await diffOf(turnId);
    if (f === null) known = false;
    else lists.push(f);
  }
  const paths = pathsOf(lists);
  if (!known && !paths.length) {
    replace(box);
    return;
  }
  if (!paths.length) {
    replace(box, h("p.muted", null, "No file was changed in these turns."));
    return;
  }
  replace(box, h("p", null, `These files go back to how they were:`),
    h("ul.rewind-list", null, paths.map((p) => h("li", null, h("span.status", null, p.status), " ", h("code", null, p.path)))));
}
