#!/usr/bin/env python3
"""The shape of a crate's source: lines per file, the longest functions, and import circles
between its modules.

    scripts/rust_shape.py crates/acp/src [--fn-limit 80] [--under DIR]

A module is a file (`lib.rs` is the crate root, `a/b.rs` is `a::b`). Module A imports B when A
names `crate::…`, `super::…` or `self::…` paths that resolve to B (the longest known module
prefix). `mod b;` declarations are not imports. A circle is a strongly connected set of two or
more modules. Functions are measured from their `fn` line to the closing brace at the same
depth (string and comment contents are skipped roughly; good enough for rustfmt'd code).
"""

import argparse
import os
import re
import sys


def module_of(root, path):
    rel = os.path.relpath(path, root)[:-3]
    if rel in ("lib", "main"):
        return ""
    return rel.replace(os.sep, "::")


def strip_comments_and_strings(text):
    """Blanks out comments, strings and char literals, keeping newlines (a small lexer)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif re.match(r'(?<![\w])(b?r#*")', text[i:i + 12]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^'\\])'", text[i:i + 4]):
            m = re.match(r"'(\\.|[^'\\])'", text[i:i + 4])
            out.append("' '")
            i += m.end()
        elif c == "'" and re.match(r"'\\u\{[0-9a-fA-F]+\}'", text[i:i + 12]):
            m = re.match(r"'\\u\{[0-9a-fA-F]+\}'", text[i:i + 12])
            out.append("' '")
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use(tree):
    """`a::{b, c::{d, e}}` → [a::b, a::c::d, a::c::e]."""
    tree = tree.strip()
    if "{" not in tree:
        return [tree]
    head, rest = tree.split("{", 1)
    body = rest[: rest.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if p.strip():
            out += [head + x for x in expand_use(p)]
    return out


def paths_in(text):
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        paths += expand_use(re.sub(r"\s+", "", m.group(1)))
    paths += re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", text)
    return paths


def resolve(path, here, modules):
    segs = path.split("::")
    base = here.split("::") if here else []
    if segs[0] == "crate":
        segs, base = segs[1:], []
    else:
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    full = base + [s for s in segs if s and s != "*"]
    for n in range(len(full), -1, -1):
        cand = "::".join(full[:n])
        if cand in modules:
            return cand
    return None


def functions(text):
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)", lines[i])
        if not m:
            i += 1
            continue
        depth, started, j = 0, False, i
        while j < len(lines):
            depth += lines[j].count("{") - lines[j].count("}")
            started = started or "{" in lines[j]
            if ";" in lines[j] and not started:
                break
            if started and depth <= 0:
                out.append((m.group(1), i + 1, j - i + 1))
                break
            j += 1
        i += 1
    return out


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--fn-limit", type=int, default=80)
    ap.add_argument("--under", help="only count lines and functions of files under this dir")
    ap.add_argument("--only", help="only look for circles among modules whose path starts so")
    ap.add_argument("--check", action="store_true", help="exit 1 on a circle or a long function")
    a = ap.parse_args()
    files = {}
    for d, _, names in os.walk(a.src):
        for n in names:
            if n.endswith(".rs"):
                p = os.path.join(d, n)
                files[module_of(a.src, p)] = p
    graph = {m: set() for m in files}
    long_fns = 0
    print("lines  file (longest fn)")
    for m, p in sorted(files.items(), key=lambda kv: kv[1]):
        raw = open(p, encoding="utf-8").read()
        text = strip_comments_and_strings(raw)
        # Tests are not part of the module graph.
        prod = re.split(r"#\[cfg\(test\)\]\s*mod\s+\w+", text)[0]
        # Paths through a child module without `self::` (`task::run(..)`).
        prefix = m + "::" if m else ""
        children = {c[len(prefix):] for c in files if c.startswith(prefix) and "::" not in c[len(prefix):] and c != m}
        bare = [f"self::{c}" for c in children if re.search(rf"(?<![\w:]){c}::\w", prod)]
        for path in paths_in(prod) + bare:
            t = resolve(path, m, files)
            if t is not None and t != m:
                graph[m].add(t)
        if a.under and not os.path.abspath(p).startswith(os.path.abspath(a.under)):
            continue
        fns = functions(prod)
        longest = max(fns, key=lambda f: f[2], default=("-", 0, 0))
        print(f"{raw.count(chr(10)):5}  {os.path.relpath(p, a.src)} ({longest[0]}: {longest[2]})")
        for name, line, n in fns:
            if n > a.fn_limit:
                long_fns += 1
                print(f"       over {a.fn_limit}: {name} at line {line}: {n} lines")
    if a.only:
        keep = {m for m in graph if m.startswith(a.only)}
        graph = {m: {t for t in ts if t in keep} for m, ts in graph.items() if m in keep}
    circles = sccs(graph)
    print(f"circles: {len(circles)}")
    for c in circles:
        print("  " + " <-> ".join(x or "crate" for x in c))
    if a.check and (circles or long_fns):
        sys.exit(1)


if __name__ == "__main__":
    main()
