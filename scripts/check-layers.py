#!/usr/bin/env python3
"""Layering check: no two modules of a crate may import each other, directly or through
others, however long the way round.

For every crate under crates/, each source file is one module (`src/a/b.rs` and
`src/a/b/mod.rs` are `a::b`; `lib.rs`/`main.rs` is the crate root). A file depends on
another when it names it through `crate::…`, `super::…`, `self::…` or a child module, in a
`use` declaration or inline in code (`crate::pairing::fingerprint(…)`). A name re-exported
by a module (`pub use x::Y;`) counts as a dependency on where it comes from. `mod x;`
declarations are not dependencies, and `#[cfg(test)]` inline modules are skipped (tests may
look anywhere).

Two graphs are checked for cycles of any length (strongly connected groups):

- files: each file against every other file;
- module trees: a module counts with everything below it. For an import `a -> b` where
  neither holds the other, the two children of their common parent that hold `a` and `b`
  depend on each other in that direction (a child naming its parent through `super::` is
  not an edge). So `compact -> provider` (mod.rs) and `provider/echo.rs -> compact` is a
  cycle between `compact` and `provider`, though no file cycle goes round through them.

Prints every cycle (the group, and the imports that close it) and exits 1 if a checked
crate has one (in a crate given to --skip: reported, not failed on).

Between crates, [`CRATE_BOUNDARIES`] names the crates a crate must not depend on, in any
dependency table of its Cargo.toml (normal, dev, build, per target): the services
(`zeroclaw-sessions`) know nothing of the wire, so they may not depend on `zeroclaw-rpc`,
`zeroclaw-ipc` or the daemon. A crossing is an error, whatever `--skip` says.

    python3 scripts/check-layers.py                      # every crate
    python3 scripts/check-layers.py --skip zeroclaw-daemon
    python3 scripts/check-layers.py --only zeroclaw-daemon
    python3 scripts/check-layers.py --self-test          # the checker's own test
"""

import argparse
import os
import re
import sys
import tomllib

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"

# Crate -> the crates it must not depend on (README "Layout").
CRATE_BOUNDARIES = {
    "zeroclaw-sessions": {"zeroclaw-rpc", "zeroclaw-ipc", "zeroclaw-daemon"},
    "zeroclaw-schedules": {"zeroclaw-rpc", "zeroclaw-ipc", "zeroclaw-daemon", "zeroclaw-sessions"},
    "zeroclaw-notify": {"zeroclaw-rpc", "zeroclaw-ipc", "zeroclaw-daemon", "zeroclaw-sessions"},
    "zeroclaw-webhooks": {"zeroclaw-rpc", "zeroclaw-ipc", "zeroclaw-daemon"},
}

DEP_TABLES = ("dependencies", "dev-dependencies", "build-dependencies")


def declared_deps(manifest):
    """Every crate a parsed Cargo.toml names in a dependency table, per-target tables
    included (a renamed dependency counts by its `package`)."""
    tables = [manifest.get(t, {}) for t in DEP_TABLES]
    for target in manifest.get("target", {}).values():
        tables += [target.get(t, {}) for t in DEP_TABLES]
    names = set()
    for table in tables:
        for key, spec in table.items():
            names.add(spec.get("package", key) if isinstance(spec, dict) else key)
    return names


def boundary_crossings(crates_dir, boundaries=CRATE_BOUNDARIES):
    """[(crate, forbidden dependency)] for every crate that depends across its boundary."""
    out = []
    for crate, forbidden in sorted(boundaries.items()):
        path = os.path.join(crates_dir, crate, "Cargo.toml")
        if not os.path.exists(path):
            out.append((crate, "(no Cargo.toml: the boundary cannot be checked)"))
            continue
        with open(path, "rb") as fh:
            deps = declared_deps(tomllib.load(fh))
        out += [(crate, dep) for dep in sorted(deps & forbidden)]
    return out


def strip_code(text):
    """Blanks out comments, string and char literals (keeping line structure)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and not re.match(r"\w", text[i - 1 : i] or " "):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and (re.match(r"'\\.[^']*'", text[i:]) or re.match(r"'[^\\']'", text[i:])):
            m = re.match(r"'\\.[^']*'", text[i:]) or re.match(r"'[^\\']'", text[i:])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(text, open_at):
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def split_top(text):
    """Splits a use-tree list on commas outside braces."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def expand_use(tree, prefix=()):
    """`a::{b, c::{self, D as E}}` -> [((a,b), b), ((a,c), c), ((a,c,D), E)]: each imported
    path with the name it is bound to (None for globs)."""
    tree = re.sub(r"\s+as\s+", "@", tree.strip())
    tree = re.sub(r"\s+", "", tree)
    if tree.startswith("::"):
        tree = tree[2:]
    brace = tree.find("{")
    if brace < 0:
        tree, _, alias = tree.partition("@")
        segs = tuple(s for s in tree.split("::") if s)
        glob = bool(segs) and segs[-1] == "*"
        segs = tuple(s for s in segs if s != "*")
        if segs and segs[-1] == "self":
            segs = segs[:-1]
        full = prefix + segs
        bound = None if glob or not full else (alias or full[-1])
        return [(full, bound)]
    head = tuple(s for s in tree[:brace].split("::") if s)
    inner = tree[brace + 1 : tree.rfind("}")]
    out = []
    for part in split_top(inner):
        out.extend(expand_use(part, prefix + head))
    return out


class Crate:
    def __init__(self, root):
        self.root = root
        self.modules = {}  # module path tuple -> file
        src = os.path.join(root, "src")
        for dirpath, _, files in os.walk(src):
            for f in files:
                if not f.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, src)[:-3].split(os.sep)
                if rel[-1] == "mod":
                    rel = rel[:-1]
                if rel in (["lib"], ["main"]):
                    rel = []
                if rel and rel[0] == "bin":
                    continue
                self.modules.setdefault(tuple(rel), path)
        self.reexports = {}  # (module, name) -> target path tuple
        self.uses = {}  # module -> list of (inline_module_path, path tuple)
        for mod, path in self.modules.items():
            with open(path, encoding="utf-8") as fh:
                self.scan(mod, strip_code(fh.read()))

    def scan(self, mod, code):
        # Skip #[cfg(test)] inline modules; remember other inline modules' extents.
        inline = []  # (start, end, name)
        for m in re.finditer(r"(#\[cfg\(test\)\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*\{", code):
            end = matching_brace(code, m.end() - 1)
            if m.group(1):
                code = code[: m.start()] + " " * (end + 1 - m.start()) + code[end + 1 :]
            else:
                inline.append((m.end(), end, m.group(2)))

        def where(pos):
            extra = tuple(name for (s, e, name) in inline if s <= pos <= e)
            return mod + extra

        found = []
        exported = []  # (module, name, path) re-exported here
        bindings = {}  # (module, name) -> path a `use` bound that name to
        for m in re.finditer(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", code):
            here = where(m.start())
            for segs, bound in expand_use(m.group(2)):
                if bound:
                    bindings[(here, bound)] = segs
                if m.group(1) and bound:
                    # A re-export is a name, not a use: code that names it depends on
                    # where it comes from, the re-exporting module does not.
                    self.reexports[(here, bound)] = (here, segs)
                    exported.append((here, bound, segs))
                else:
                    found.append((here, segs))
        # Paths inside `use` declarations were handled above.
        code = re.sub(r"\buse\s+[^;]+;", lambda u: " " * len(u.group(0)), code)
        # ... unless the re-exporting module also uses the name itself.
        for here, bound, segs in exported:
            if re.search(r"(?<![\w:])" + re.escape(bound) + r"\b", code):
                found.append((here, segs))
        for m in re.finditer(r"(?<![\w:])" + IDENT + r"(?:::" + IDENT + r")+", code):
            here = where(m.start())
            segs = tuple(m.group(0).split("::"))
            if segs[0] in ("crate", "super", "self"):
                found.append((here, segs))
            elif (here, segs[0]) in bindings:
                found.append((here, bindings[(here, segs[0])] + segs[1:]))
            elif here + (segs[0],) in self.modules:
                found.append((here, segs))
        self.uses[mod] = found

    def absolute(self, here, segs):
        """Resolves a path used in module `here` to an absolute segment tuple, or None for
        paths outside the crate."""
        if not segs:
            return None
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] in ("super", "self"):
            cur = list(here)
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    if not cur:
                        return None
                    cur.pop()
                segs = segs[1:]
            return tuple(cur) + tuple(segs)
        if tuple(here) + (segs[0],) in self.modules:
            return tuple(here) + tuple(segs)
        return None

    def file_of(self, abs_path, depth=0):
        """The module file an absolute path lands in, following `pub use` re-exports."""
        for k in range(len(abs_path), -1, -1):
            prefix = tuple(abs_path[:k])
            if prefix in self.modules:
                rest = abs_path[k:]
                if rest and depth < 8 and (prefix, rest[0]) in self.reexports:
                    here, segs = self.reexports[(prefix, rest[0])]
                    target = self.absolute(here, segs)
                    if target is not None and tuple(target) != tuple(abs_path):
                        return self.file_of(tuple(target) + tuple(rest[1:]), depth + 1)
                return prefix
        return None

    def edges(self):
        out = {m: set() for m in self.modules}
        for mod, found in self.uses.items():
            for here, segs in found:
                target = self.absolute(here, segs)
                if target is None:
                    continue
                dest = self.file_of(target)
                if dest is not None and dest != mod:
                    out[mod].add(dest)
        return out


def cycles(edges):
    """Strongly connected groups with more than one module (Tarjan)."""
    index, low, stack, on, groups, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return groups


def tree_edges(edges):
    """The module-tree graph of a file graph: node `p + (x,)` stands for child `x` of `p`
    and all below it. Returns (graph, why): `why[(u, v)]` lists the file imports behind an
    edge."""
    graph, why = {}, {}
    for a, targets in edges.items():
        for b in targets:
            k = 0
            while k < min(len(a), len(b)) and a[k] == b[k]:
                k += 1
            if k == len(a) or k == len(b):
                continue  # one holds the other: a parent and its descendant
            u, v = a[: k + 1], b[: k + 1]
            graph.setdefault(u, set()).add(v)
            graph.setdefault(v, set())
            why.setdefault((u, v), []).append((a, b))
    return graph, why


def name(crate, mod):
    return os.path.relpath(crate.modules[mod], crate.root)


def self_test():
    """Checks the checker on a made-up crate with known cycles."""
    import tempfile

    files = {
        "lib.rs": "mod a;\nmod b;\nmod c;\nmod d;\nmod k;\nmod p;\nmod x;\nmod y;\nmod z;\n"
        "pub use d::Thing;\npub(crate) use b::g;\nfn h() { g(); }\n",
        # a <-> b through a grouped `use` and an inline path.
        "a.rs": "use crate::{b::{self, B as Bee}, c};\nfn f() { c::g(); }\n",
        "b.rs": "fn g() { crate::a::f(); }\n",
        # c names d's item through the root's re-export: c -> d, not c -> lib.
        "c.rs": "use crate::Thing;\n// use crate::a; (a comment)\nconst S: &str = \"crate::a::f\";\n",
        "d.rs": "pub struct Thing;\n#[cfg(test)]\nmod tests { use crate::c; }\n",
        # A cycle through three files: x -> y -> z -> x.
        "x.rs": "use crate::y::Y;\n",
        "y.rs": "pub struct Y;\nfn f() { crate::z::f(); }\n",
        "z.rs": "fn f() { super::x::f(); }\n",
        # k -> p (mod.rs) -> (holds) p::e -> k: no file cycle, a module-tree cycle. A child
        # naming its parent (`super::T`) is no edge between trees.
        "k.rs": "use crate::p::T;\n",
        "p/mod.rs": "pub mod e;\npub use e::E;\npub trait T {}\n",
        "p/e.rs": "use super::T;\npub struct E;\nfn f() { crate::k::g(); }\n",
    }
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "src", "p"))
        for name, text in files.items():
            with open(os.path.join(tmp, "src", name), "w") as fh:
                fh.write(text)
        crate = Crate(tmp)
        edges = crate.edges()
        assert edges[("a",)] == {("b",), ("c",)}, edges
        assert edges[("b",)] == {("a",)}, edges
        assert edges[("c",)] == {("d",)}, edges
        assert edges[("d",)] == set(), edges
        assert edges[()] == {("b",)}, edges
        assert edges[("z",)] == {("x",)}, edges
        assert edges[("p",)] == set(), edges
        assert edges[("p", "e")] == {("p",), ("k",)}, edges
        assert cycles(edges) == [[("a",), ("b",)], [("x",), ("y",), ("z",)]], cycles(edges)
        tree, why = tree_edges(edges)
        assert tree[("p",)] == {("k",)} and why[(("p",), ("k",))] == [(("p", "e"), ("k",))], tree
        assert ("p", "e") not in tree, tree
        assert cycles(tree) == [
            [("a",), ("b",)],
            [("k",), ("p",)],
            [("x",), ("y",), ("z",)],
        ], cycles(tree)
        # Crate boundaries: a normal and a per-target (renamed) dependency across the line
        # are found; a crate that stays inside passes.
        manifests = {
            "svc": '[dependencies]\nok = "1"\n'
            '[target.\'cfg(unix)\'.dependencies]\nwire = { package = "rpc", path = "x" }\n',
            "clean": '[dependencies]\nok = "1"\n[dev-dependencies]\nalso-ok = "1"\n',
            "dev": '[dev-dependencies]\nrpc = "1"\n',
        }
        for crate, text in manifests.items():
            os.makedirs(os.path.join(tmp, "crates", crate))
            with open(os.path.join(tmp, "crates", crate, "Cargo.toml"), "w") as fh:
                fh.write(text)
        rules = {c: {"rpc", "daemon"} for c in ("svc", "clean", "dev", "missing")}
        found = boundary_crossings(os.path.join(tmp, "crates"), rules)
        assert found == [
            ("dev", "rpc"),
            ("missing", "(no Cargo.toml: the boundary cannot be checked)"),
            ("svc", "rpc"),
        ], found
    print("self-test ok")
    return 0


def main():
    if "--self-test" in sys.argv:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--skip", action="append", default=[], help="crate to report but not fail on")
    ap.add_argument("--only", action="append", default=[], help="check only these crates")
    args = ap.parse_args()
    crates_dir = os.path.join(args.root, "crates")
    failed = False
    for crate, dep in boundary_crossings(crates_dir):
        print(f"{crate}: depends on {dep}, across its boundary")
        failed = True
    for entry in sorted(os.listdir(crates_dir)):
        root = os.path.join(crates_dir, entry)
        if not os.path.isdir(os.path.join(root, "src")) or (args.only and entry not in args.only):
            continue
        crate = Crate(root)
        edges = crate.edges()
        groups = cycles(edges)
        tree, why = tree_edges(edges)
        # A file cycle shows up again as a tree cycle; list each group once.
        file_sets = [set(g) for g in groups]
        tangles = [g for g in cycles(tree) if set(g) not in file_sets]
        if not groups and not tangles:
            print(f"{entry}: ok ({len(crate.modules)} modules)")
            continue
        fatal = entry not in args.skip
        failed |= fatal
        for found, kind in ((groups, "file"), (tangles, "module-tree")):
            if not found:
                continue
            note = "" if fatal else " (reported, not failing)"
            print(f"{entry}: {len(found)} {kind} import cycle(s){note}")
        for group in groups:
            print(f"  cycle of {len(group)} files:")
            members = set(group)
            for mod in group:
                deps = sorted(name(crate, d) for d in edges[mod] if d in members)
                print(f"    {name(crate, mod)} -> {', '.join(deps)}")
            pairs = sorted(
                (name(crate, a), name(crate, b))
                for a in group
                for b in edges[a]
                if b in members and a in edges[b] and name(crate, a) < name(crate, b)
            )
            for a, b in pairs:
                print(f"    mutual: {a} <-> {b}")
        for group in tangles:
            shown = ", ".join("::".join(m) for m in group)
            print(f"  cycle of {len(group)} module trees: {shown}")
            members = set(group)
            for u in group:
                for v in sorted(tree[u] & members):
                    files = sorted(f"{name(crate, a)} -> {name(crate, b)}" for a, b in why[(u, v)])
                    more = f" (+{len(files) - 3} more)" if len(files) > 3 else ""
                    print(f"    {'::'.join(u)} -> {'::'.join(v)}: {'; '.join(files[:3])}{more}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
