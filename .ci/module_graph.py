#!/usr/bin/env python3
"""The module graph of each crate, and a check that it has no cycle.

A module depends on another when its code names it: `crate::a::...` (a top-level module
of the crate) or `super::b::...` (a sibling inside the same folder module). A folder
module's `mod.rs` only declares and re-exports its children, so it depends on nothing
itself, and a name reached through it counts as a dependency on the folder as a whole.
Test modules (`#[cfg(test)]`, `tests.rs`) are left out: tests may look anywhere.

    python3 .ci/module_graph.py            # check every crate; exit 1 on a cycle
    python3 .ci/module_graph.py --print    # also print each crate's edges
"""
import os
import re
import sys

CRATES = ["core", "columnar", "udf", "connectors", "gpu", "cli", "testkit", "python", "capi"]


def modules(src):
    """(module path, file) for every module file under `src`."""
    out = []
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)[:-3]
            parts = rel.split(os.sep)
            if parts[-1] in ("lib", "main"):
                parts = parts[:-1]
            elif parts[-1] == "mod":
                parts = parts[:-1]
            if parts and parts[-1] == "tests":
                continue
            out.append(("::".join(parts), os.path.join(root, f)))
    return out


def code_of(path):
    text = open(path).read()
    # Drop test modules and comments.
    text = re.split(r"#\[cfg\(test\)\]\s*mod \w+ \{", text)[0]
    text = re.sub(r"//[^\n]*", "", text)
    return text


def graph(src):
    mods = dict(modules(src))
    top = {m.split("::")[0] for m in mods if m}
    edges = {}
    for m, path in mods.items():
        if not m:
            continue
        is_facade = path.endswith("mod.rs")
        deps = set()
        if not is_facade:
            code = code_of(path)
            for name in re.findall(r"\bcrate::(\w+)", code):
                if name in top and name != m.split("::")[0]:
                    deps.add(name)
            parent = m.rsplit("::", 1)[0] if "::" in m else ""
            for name in re.findall(r"\bsuper::(\w+)", code):
                sib = f"{parent}::{name}" if parent else name
                if sib in mods and sib != m:
                    deps.add(sib)
        edges[m] = deps
    return edges


def cycle(edges):
    """A cycle as a list of modules, or None."""
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in sorted(edges.get(n, ())):
            # A dependency on a folder module is on all of it: follow its children too.
            targets = [d] + [c for c in edges if c.startswith(d + "::")]
            for t in targets:
                if state.get(t) == 1 and t.split("::")[0] != n.split("::")[0]:
                    return stack[stack.index(t):] + [t] if t in stack else [n, t]
                if state.get(t) == 1 and t in stack:
                    return stack[stack.index(t):] + [t]
                if t not in state:
                    c = visit(t)
                    if c:
                        return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def main():
    ok = True
    for crate in CRATES:
        edges = graph(os.path.join(crate, "src"))
        # Package level: a top-level module depends on another when any file in it does.
        pkg = {}
        for m, deps in edges.items():
            p = m.split("::")[0]
            pkg.setdefault(p, set()).update(d.split("::")[0] for d in deps if d.split("::")[0] != p)
        inner = {m: {d for d in deps if d.split("::")[0] == m.split("::")[0]} for m, deps in edges.items()}
        for name, g in (("modules", pkg), ("inside folders", inner)):
            c = cycle(g)
            if c:
                ok = False
                print(f"{crate}: import cycle among {name}: {' -> '.join(c)}")
        if "--print" in sys.argv:
            print(f"## {crate}")
            for m in sorted(pkg):
                print(f"  {m} -> {', '.join(sorted(pkg[m])) or '-'}")
    if ok:
        print("module graphs: no import cycle in " + ", ".join(CRATES))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
