// A plan-mode turn's proposed plan (SPEC §26): the plan card of the transcript — the plan's
// markdown through the sanitizer, and an Implement button that accepts it (the session
// goes back to `supervised` and is prompted "Implement the plan.", as every face does).
import { h, markdown } from "./dom.js";

/** What Implement sends after switching the session to supervised. */
export const IMPLEMENT_PROMPT = "Implement the plan.";

/**
 * The card of block `b` ({text, implemented?, error?}); `implement(b)` accepts it, null
 * when this principal cannot configure and prompt the session.
 */
export function planCard(b, implement) {
  const head = h("header", null, h("span.who", null, "Proposed plan"));
  const body = h("div.md", null, markdown(b.text || ""));
  let foot = null;
  if (b.implemented) {
    foot = h("p.muted.resolved", null, "Implementing: the session is supervised again");
  } else if (implement) {
    foot = h("div.actions", null,
      h("button.primary.implement", { type: "button", title: "Leave plan mode (supervised) and ask the agent to carry out this plan", onclick: () => implement(b) }, "Implement"));
  }
  return [head, body, foot, b.error ? h("p.error", null, b.error) : null];
}
