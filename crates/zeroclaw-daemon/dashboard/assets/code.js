// Code blocks in rendered answers (SPEC §22 "A dashboard for a day's work"): each `pre >
// code` gets a bar with its language and a Copy button, and its text highlighted by the
// vendored highlight.js (core and a few common languages, assets/vendor/hljs/). The
// highlighter's HTML goes through the sanitizer again, allowed only `span` with a class.
import hljs from "./vendor/hljs/core.min.js";
import bash from "./vendor/hljs/bash.min.js";
import c from "./vendor/hljs/c.min.js";
import cpp from "./vendor/hljs/cpp.min.js";
import css from "./vendor/hljs/css.min.js";
import diff from "./vendor/hljs/diff.min.js";
import go from "./vendor/hljs/go.min.js";
import ini from "./vendor/hljs/ini.min.js";
import java from "./vendor/hljs/java.min.js";
import javascript from "./vendor/hljs/javascript.min.js";
import json from "./vendor/hljs/json.min.js";
import python from "./vendor/hljs/python.min.js";
import rust from "./vendor/hljs/rust.min.js";
import shell from "./vendor/hljs/shell.min.js";
import sql from "./vendor/hljs/sql.min.js";
import typescript from "./vendor/hljs/typescript.min.js";
import xml from "./vendor/hljs/xml.min.js";
import yaml from "./vendor/hljs/yaml.min.js";
import DOMPurify from "./vendor/purify.es.mjs";

const LANGUAGES = { bash, c, cpp, css, diff, go, ini, java, javascript, json, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, grammar] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, grammar);
hljs.registerAliases(["toml"], { languageName: "ini" });
hljs.registerAliases(["sh", "zsh"], { languageName: "bash" });
hljs.registerAliases(["console"], { languageName: "shell" });

/** Past this many characters a block is shown without highlighting. */
const HIGHLIGHT_MAX = 100_000;

/** The `language-X` class marked gives a fenced block: the sanitizer keeps just that. */
export function keepLanguageClass(node, data) {
  if (node.nodeName === "CODE" && data.attrName === "class" && /^language-[A-Za-z0-9_+#.-]{1,32}$/.test(data.attrValue)) {
    data.forceKeepAttr = true;
  }
}

/** Decorates every code block of `root` (a sanitized fragment); returns `root`. */
export function decorateCode(root) {
  for (const code of root.querySelectorAll("pre > code")) {
    const pre = code.parentElement;
    const lang = (code.className.match(/^language-(.+)$/) || [])[1] || "";
    const text = code.textContent;
    code.removeAttribute("class");
    const known = lang && hljs.getLanguage(lang);
    if (known && text.length <= HIGHLIGHT_MAX) {
      try {
        const html = hljs.highlight(text, { language: lang, ignoreIllegals: true }).value;
        code.replaceChildren(DOMPurify.sanitize(html, { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"], RETURN_DOM_FRAGMENT: true }));
        code.classList.add("hljs");
      } catch {
        code.textContent = text;
      }
    }
    const label = document.createElement("span");
    label.className = "code-lang";
    label.textContent = lang || "text";
    const copy = document.createElement("button");
    copy.type = "button";
    copy.className = "code-copy";
    copy.textContent = "Copy";
    copy.title = "Copy this code";
    copy.addEventListener("click", () => copyText(text, copy));
    const bar = document.createElement("div");
    bar.className = "code-bar";
    bar.append(label, copy);
    const wrap = document.createElement("div");
    wrap.className = "code-block";
    pre.replaceWith(wrap);
    wrap.append(bar, pre);
  }
  return root;
}

async function copyText(text, button) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    // Not a secure context, or no permission: the old way.
    const area = document.createElement("textarea");
    area.value = text;
    document.body.append(area);
    area.select();
    try { ok = document.execCommand("copy"); } catch { ok = false; }
    area.remove();
  }
  button.textContent = ok ? "Copied" : "Copy failed";
  button.dataset.copied = ok ? "yes" : "no";
  setTimeout(() => { button.textContent = "Copy"; }, 1500);
}
