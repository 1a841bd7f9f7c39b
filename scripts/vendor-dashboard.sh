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
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$dest"

for entry in "${packages[@]}"; do
  read -r name version sha _ <<<"$entry"
  tarball="$work/$name-$version.tgz"
  curl -fsSL --max-time 120 -o "$tarball" "$registry/$name/-/$name-$version.tgz"
  got=$(sha256sum "$tarball" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "$name $version: sha256 $got, expected $sha" >&2
    exit 1
  fi
  mkdir -p "$work/$name"
  tar xzf "$tarball" -C "$work/$name"
  for pair in $(echo "$entry" | cut -d' ' -f4-); do
    cp "$work/$name/package/${pair%%:*}" "$dest/${pair##*:}"
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
