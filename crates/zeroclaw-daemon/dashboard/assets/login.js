// The login view: what to do when the page has no session. A pairing token (`zeroclaw
// pair`) can be pasted for remote use over TLS; locally, `zeroclaw dashboard` opens the
// page with a one-time code that needs no form.
import { h, errText } from "./dom.js";
import { AuthError } from "./rpc.js";

export function loginView(submit, message) {
  const input = h("input", { type: "password", name: "token", autocomplete: "off", placeholder: "pairing token", required: true });
  const error = h("p.error", { role: "alert" }, message || "");
  const button = h("button.primary", { type: "submit" }, "Log in");
  const form = h("form.login", {
    onsubmit: async (ev) => {
      ev.preventDefault();
      button.disabled = true;
      error.textContent = "";
      try {
        await submit({ authToken: input.value.trim() });
      } catch (e) {
        error.textContent = e instanceof AuthError ? "That token was not accepted." : errText(e);
        button.disabled = false;
      }
    },
  },
  h("h1", null, "Log in"),
  h("p.muted", null, "On this machine, run ", h("code", null, "zeroclaw dashboard"), ": it opens this page logged in."),
  // The label's words in one span: each would be a line of its own in the column.
  h("label", null, h("span.label-text", null, "Pairing token (", h("code", null, "zeroclaw pair"), ")"), input),
  button,
  error);
  return form;
}
