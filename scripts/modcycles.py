#!/usr/bin/env python3
"""Import circles between the modules of each crate.

A module is a file under `crates/<crate>/src/` (`lib.rs`/`main.rs` is the crate root, `a.rs` and
`a/mod.rs` are `a`, `a/b.rs` is `a::b`). An edge A -> B is a `use crate::b…` (braces expanded) or a
`crate::b::…` path in A's code (comments and string literals ignored), resolved to the longest
module prefix. A parent and the files of its directory are one unit by design (`turn`,
`turn::stream`, `turn::dispatch::tests` are the unit `turn`), so circles are counted between units:
`runtime::task -> turn` and `turn::env -> runtime` make the circle `runtime, turn`. Relative paths
(`super::`, `self::`, a child's name) stay inside a unit and are not edges. Test code
(`#[cfg(test)]` modules, inline or in their own files) is left out: it may build fixtures from
any layer.

Prints, per crate, every strongly connected component with more than one module.
Usage: scripts/modcycles.py [crate-dir ...]   (default: every crates/*)
"""

import re
import sys
from pathlib import Path


def module_name(src: Path, f: Path) -> str:
    rel = f.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts == ["lib"] or parts == ["main"]:
        return "crate"
    if parts[-1] == "mod":
        parts = parts[:-1]
    return "::".join(parts)


def strip(code: str) -> str:
    """Removes comments, string and char literals (keeps line structure roughly)."""
    out = []
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            i = n if j < 0 else j
        elif code.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if code.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif code.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', code[i:i + 10]) and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")):
            m = re.match(r'r(#*)"', code[i:])
            end = '"' + m.group(1)
            j = code.find(end, i + len(m.group(0)))
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and code[i] != '"':
                i += 2 if code[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", code[i:i + 4]) or (c == "'" and code.startswith("'\\", i)):
            j = code.find("'", i + 1 if code[i + 1] != "\\" else i + 3)
            i = n if j < 0 else j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use(tree: str, prefix: str = "") -> list[str]:
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = tree.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", tree, re.S)
    if not m:
        return [prefix + tree]
    head, body = m.group(1), m.group(2)
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    out = []
    for it in items:
        if it.strip():
            out.extend(expand_use(it, prefix + head))
    return out


def edges_of(code: str) -> set[str]:
    paths = set()
    for m in re.finditer(r"\buse\s+(crate::[^;]*);", code, re.S):
        for p in expand_use(re.sub(r"\s+", "", m.group(1))):
            paths.add(p)
    for m in re.finditer(r"\bcrate((?:::[A-Za-z_][A-Za-z0-9_]*)+)", code):
        paths.add("crate" + m.group(1))
    return paths


def resolve(path: str, modules: set[str]) -> str | None:
    parts = path.split("::")[1:]
    parts = [p.split(" as ")[0] for p in parts if p not in ("*", "self")]
    for k in range(len(parts), 0, -1):
        name = "::".join(parts[:k])
        if name in modules:
            return name
    return None


def sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def unit(module: str) -> str:
    return module.split("::")[0]


TEST_ITEM = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+(\w+)\s*([;{])")


def without_tests(code: str) -> tuple[str, set[str]]:
    """Cuts `#[cfg(test)] mod x { … }` blocks out of the code; returns it and the names of the
    `#[cfg(test)] mod x;` files it declares (test code, which may use anything)."""
    test_files = set()
    while True:
        m = TEST_ITEM.search(code)
        if not m:
            return code, test_files
        if m.group(2) == ";":
            test_files.add(m.group(1))
            code = code[: m.start()] + code[m.end():]
            continue
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        code = code[: m.start()] + code[i:]


def crate_cycles(crate: Path) -> list[list[str]]:
    src = crate / "src"
    files = sorted(src.rglob("*.rs"))
    modules = {module_name(src, f): f for f in files}
    names = set(modules)
    code, tests = {}, set()
    for name, f in modules.items():
        code[name], declared = without_tests(strip(f.read_text()))
        parent = "" if name == "crate" else name + "::"
        tests |= {parent + t for t in declared}
    graph = {}
    for name, f in modules.items():
        if name in tests or any(name.startswith(t + "::") for t in tests):
            continue
        targets = set()
        for p in edges_of(code[name]):
            t = resolve(p, names)
            if t and unit(t) != unit(name):
                targets.add(unit(t))
        graph.setdefault(unit(name), set()).update(targets)
    return sorted((c for c in sccs(graph) if len(c) > 1), key=lambda c: (-len(c), c))


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    crates = [Path(a) for a in sys.argv[1:]] or sorted(p for p in (root / "crates").iterdir() if (p / "src").is_dir())
    found = 0
    for crate in crates:
        cycles = crate_cycles(crate)
        print(f"{crate.name}: {len(cycles)} circle(s)")
        for c in cycles:
            found += 1
            print(f"  {len(c)} modules: {', '.join(c)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
