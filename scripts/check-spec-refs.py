#!/usr/bin/env python3
"""Contract reference check: every "§N" or "§N.M" (usually written "SPEC §N") in the code
and the docs must name a section that docs/PROTOCOL.md has.

PROTOCOL.md's sections are its Markdown headings that start with a number: `## 7. Sessions`
is §7, `### 7.3 Durable history` is §7.3. References are looked for in crates/**/*.rs,
README.md and docs/*.md (PROTOCOL.md included); a reference is `§` followed by numbers
joined by dots (`§17.1`; a sentence's final dot is not part of it, and `§N` written with a
letter, as in this docstring, is no reference). Each reference naming a section that
PROTOCOL.md does not have is printed as `file:line: §N` and the exit status is 1.

    python3 scripts/check-spec-refs.py              # the repository this script is in
    python3 scripts/check-spec-refs.py --root DIR   # another checkout
    python3 scripts/check-spec-refs.py --self-test  # the checker's own test
"""

import argparse
import os
import re
import sys
import tempfile

REFERENCE = re.compile(r"§(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s")
CONTRACT = os.path.join("docs", "PROTOCOL.md")


def sections(protocol_text):
    """The section numbers PROTOCOL.md's headings define ("7", "7.3", …)."""
    found = set()
    in_code = False
    for line in protocol_text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        m = None if in_code else HEADING.match(line)
        if m:
            found.add(m.group(1))
    return found


def scanned_files(root):
    """crates/**/*.rs, README.md and docs/*.md under root, as paths relative to it."""
    out = []
    crates = os.path.join(root, "crates")
    for dirpath, dirnames, filenames in os.walk(crates):
        dirnames[:] = sorted(d for d in dirnames if d != "target" and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".rs"):
                out.append(os.path.relpath(os.path.join(dirpath, name), root))
    if os.path.isfile(os.path.join(root, "README.md")):
        out.append("README.md")
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        for name in sorted(os.listdir(docs)):
            if name.endswith(".md"):
                out.append(os.path.join("docs", name))
    return out


def references(text):
    """(line number, section) for every reference in text."""
    for number, line in enumerate(text.splitlines(), 1):
        for m in REFERENCE.finditer(line):
            yield number, m.group(1)


def check(root):
    """Returns (number of references checked, list of "file:line: §N" for missing ones),
    or raises FileNotFoundError when root has no docs/PROTOCOL.md."""
    with open(os.path.join(root, CONTRACT), encoding="utf-8") as f:
        known = sections(f.read())
    if not known:
        raise ValueError(f"{CONTRACT} has no numbered headings")
    checked, missing = 0, []
    for rel in scanned_files(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for line, section in references(text):
            checked += 1
            if section not in known:
                missing.append(f"{rel}:{line}: §{section} (no such section in {CONTRACT})")
    return checked, missing


def self_test():
    """Builds small repositories and checks the verdicts, so the check cannot pass by
    finding nothing."""
    failures = []

    def expect(what, ok):
        if not ok:
            failures.append(what)

    def repo(files):
        root = tempfile.mkdtemp(prefix="check-spec-refs-")
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return root

    protocol = (
        "# Title\n\n## 1. What it is\n\n## 3. Wire\n\n### 3.1 Envelope\n\n"
        "```\n## 9. not a heading inside a code block\n```\n\n## 17. Hardening\n\n"
        "### 17.1 Second pass\n\nSee §3.1 and §17.\n"
    )
    expect("headings", sections(protocol) == {"1", "3", "3.1", "17", "17.1"})
    expect(
        "references",
        list(references("a SPEC §3.1's rule, §17. end; §7.1/§7.3, §18–§21, §N, §N.M"))
        == [(1, "3.1"), (1, "17"), (1, "7.1"), (1, "7.3"), (1, "18"), (1, "21")],
    )

    good = repo(
        {
            CONTRACT: protocol,
            "README.md": "Rules: SPEC §1, §3.\n",
            "docs/other.md": "The envelope (§3.1).\n",
            "crates/a/src/lib.rs": "//! SPEC §17.1: second pass.\nfn f() {} // §3\n",
        }
    )
    checked, missing = check(good)
    expect("all references found", checked == 7)
    expect("a good repository passes", missing == [])

    bad = repo(
        {
            CONTRACT: protocol,
            "README.md": "SPEC §2 is missing.\n",
            "docs/other.md": "ok §1\nbad §3.2\n",
            "crates/a/src/lib.rs": "// SPEC §17.1\n// SPEC §9 (only inside a code block)\n",
            "crates/a/tests/t.rs": "// §17.10\n",
            "crates/a/target/debug/x.rs": "// §99 is build output, not scanned\n",
        }
    )
    checked, missing = check(bad)
    expect(
        "each missing reference named with file and line",
        missing
        == [
            "crates/a/src/lib.rs:2: §9 (no such section in docs/PROTOCOL.md)",
            "crates/a/tests/t.rs:1: §17.10 (no such section in docs/PROTOCOL.md)",
            "README.md:1: §2 (no such section in docs/PROTOCOL.md)",
            "docs/other.md:2: §3.2 (no such section in docs/PROTOCOL.md)",
        ],
    )

    empty = repo({CONTRACT: "# No numbered sections\n", "README.md": "§1\n"})
    try:
        check(empty)
        expect("a contract without sections is an error", False)
    except ValueError:
        pass

    if failures:
        for f in failures:
            print(f"self-test FAILED: {f}", file=sys.stderr)
        return 1
    print("check-spec-refs self-test passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    root = os.path.abspath(args.root)
    try:
        checked, missing = check(root)
    except (OSError, ValueError) as e:
        print(f"check-spec-refs: {e}", file=sys.stderr)
        return 2
    for m in missing:
        print(m)
    if missing:
        print(f"{len(missing)} of {checked} references name a missing section", file=sys.stderr)
        return 1
    print(f"{checked} references, every one names a section of {CONTRACT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
