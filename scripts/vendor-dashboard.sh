#!/usr/bin/env bash
# Refreshes the dashboard's vendored browser code (SPEC §20 "Built without Node"): the
# markdown renderer and the HTML sanitizer, at pinned versions, from the npm registry's
# tarballs, each checked against its pinned SHA-256 before a file of it is copied. The
# copies (and their licences) are committed; `cargo build` never runs this.
set -euo pipefail
cd "$(dirname "$0")/.."

dest=crates/zeroclaw-daemon/dashboard/assets/vendor
registry=https://registry.npmjs.org

# name version sha256-of-tarball file-in-package:copy-as …
packages=(
  "marked 18.2.1 d66c5213fc203466186060105b01f51896764ba64b3797d2620d02e28e34b8ca lib/marked.esm.js:marked.esm.js LICENSE:marked.LICENSE"
  "dompurify 3.4.18 8b86f79c6481fec23dd81d4de32179422668912ed033c0c47e786a6e70cb3379 dist/purify.es.mjs:purify.es.mjs LICENSE:dompurify.LICENSE"
  # The code highlighter: highlight.js core and a few common languages (assets/highlight.js
  # registers them).
  "@highlightjs/cdn-assets 11.11.1 28a06bf6ebcc2218c6e842bdb4f1c8353508a8cada59e85110f91892f5726195 es/core.min.js:hljs/core.min.js LICENSE:hljs/LICENSE es/languages/bash.min.js:hljs/bash.min.js es/languages/shell.min.js:hljs/shell.min.js es/languages/javascript.min.js:hljs/javascript.min.js es/languages/typescript.min.js:hljs/typescript.min.js es/languages/python.min.js:hljs/python.min.js es/languages/rust.min.js:hljs/rust.min.js es/languages/json.min.js:hljs/json.min.js es/languages/go.min.js:hljs/go.min.js es/languages/diff.min.js:hljs/diff.min.js es/languages/yaml.min.js:hljs/yaml.min.js es/languages/xml.min.js:hljs/xml.min.js es/languages/css.min.js:hljs/css.min.js es/languages/ini.min.js:hljs/ini.min.js es/languages/sql.min.js:hljs/sql.min.js es/languages/c.min.js:hljs/c.min.js es/languages/cpp.min.js:hljs/cpp.min.js es/languages/java.min.js:hljs/java.min.js"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$dest"

for entry in "${packages[@]}"; do
  read -r name version sha _ <<<"$entry"
  base=${name##*/}
  tarball="$work/$base-$version.tgz"
  curl -fsSL --max-time 120 -o "$tarball" "$registry/$name/-/$base-$version.tgz"
  got=$(sha256sum "$tarball" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "$name $version: sha256 $got, expected $sha" >&2
    exit 1
  fi
  mkdir -p "$work/$base"
  tar xzf "$tarball" -C "$work/$base"
  for pair in $(echo "$entry" | cut -d' ' -f4-); do
    mkdir -p "$(dirname "$dest/${pair##*:}")"
    cp "$work/$base/package/${pair%%:*}" "$dest/${pair##*:}"
  done
  echo "$name $version ok"
done

# What is vendored, for a reader of the tree.
{
  echo "Vendored by scripts/vendor-dashboard.sh from the npm registry; do not edit."
  for entry in "${packages[@]}"; do
    read -r name version sha _ <<<"$entry"
    echo "$name $version tarball sha256 $sha"
  done
} >"$dest/VERSIONS"
