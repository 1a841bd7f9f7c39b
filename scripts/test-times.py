#!/usr/bin/env python3
"""How long each test binary of a `cargo test` run took, read from its output as it goes.

    cargo test --workspace 2>&1 | python3 scripts/test-times.py

Passes every line through unchanged, notes the time each `Running …` or `Doc-tests …`
line arrives, and at the end prints a summary: the build (start to the first `Running`),
then each test binary with its crate and the seconds until the next one began, then the
total per crate. It runs nothing itself, so the run costs what it costs without it (CI
uses it on the README's test command). `--self-test` checks the parsing on a made-up log.
"""

import os
import re
import sys
import time

RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+) \((?:.*[/\\])?([^/\\]+?)(?:-[0-9a-f]+)?(?:\.exe)?\)")
DOC_TESTS = re.compile(r"^\s*Doc-tests (\S+)")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def crate_of(path, binary, last_crate):
    """The crate a test binary belongs to. Cargo names the source path relative to its
    package: a unit-test binary is named after its crate; an integration test's path is
    looked up under crates/ (the package of the last unit tests when several have it)."""
    if path.startswith("src/"):
        return binary.replace("_", "-")
    crates_dir = os.path.join(ROOT, "crates")
    try:
        owners = [c for c in sorted(os.listdir(crates_dir)) if os.path.isfile(os.path.join(crates_dir, c, path))]
    except OSError:
        owners = []
    if len(owners) == 1:
        return owners[0]
    if last_crate in owners or not owners:
        return last_crate or "?"
    return "?"


class Times:
    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.start = clock()
        self.steps = []  # [label, crate, started]
        self.last_crate = None

    def line(self, text):
        now = self.clock()
        m = RUNNING.match(text)
        if m:
            path, binary = m.group(1), m.group(2)
            crate = crate_of(path, binary, self.last_crate)
            if path.startswith("src/"):
                self.last_crate = crate
            self.steps.append([f"{path} ({binary})", crate, now])
            return
        m = DOC_TESTS.match(text)
        if m:
            crate = m.group(1).replace("_", "-")
            self.steps.append(["doc tests", crate, now])

    def summary(self):
        end = self.clock()
        out = []
        if not self.steps:
            out.append(f"test times: no test binary ran ({end - self.start:.1f} s)")
            return out
        build = self.steps[0][2] - self.start
        out.append(f"test times ({end - self.start:.1f} s in all; build {build:.1f} s):")
        per_crate = {}
        rows = []
        for i, (label, crate, started) in enumerate(self.steps):
            stop = self.steps[i + 1][2] if i + 1 < len(self.steps) else end
            rows.append((stop - started, crate, label))
            per_crate[crate] = per_crate.get(crate, 0.0) + (stop - started)
        for took, crate, label in sorted(rows, reverse=True):
            out.append(f"  {took:8.1f} s  {crate:22} {label}")
        out.append("per crate:")
        for crate, took in sorted(per_crate.items(), key=lambda kv: -kv[1]):
            out.append(f"  {took:8.1f} s  {crate}")
        return out


def self_test():
    ticks = iter([0, 10, 10, 12, 12, 42, 42, 43, 45])
    t = Times(clock=lambda: next(ticks))
    for text in [
        "   Compiling zeroclaw-rpc v0.1.0",
        "     Running unittests src/lib.rs (target/debug/deps/zeroclaw_rpc-0123abcd)",
        "test result: ok. 3 passed",
        "     Running tests/e2e/main.rs (target/debug/deps/e2e-4567ef89)",
        "test wire::handshake_gate ... ok",
        "   Doc-tests zeroclaw_rpc",
        "test result: ok. 0 passed",
    ]:
        t.line(text)
    got = t.summary()
    assert got[0] == "test times (45.0 s in all; build 10.0 s):", got
    assert got[1].split() == ["30.0", "s", "zeroclaw-e2e", "tests/e2e/main.rs", "(e2e)"], got
    assert got[-1].split() == ["5.0", "s", "zeroclaw-rpc"], got
    print("test-times self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    times = Times()
    for text in sys.stdin:
        sys.stdout.write(text)
        sys.stdout.flush()
        times.line(text.rstrip("\n"))
    print("\n".join(times.summary()), flush=True)


if __name__ == "__main__":
    main()
