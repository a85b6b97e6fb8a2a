#!/usr/bin/env python3
"""The shape of a crate's source: lines per file, the longest functions, and the import circles
between its modules (as `scripts/modcycles.py` counts them).

    scripts/rust_shape.py crates/acp/src [--fn-limit 80] [--under DIR]

Functions are measured from their `fn` line to the closing brace at the same
depth (string and comment contents are skipped roughly; good enough for rustfmt'd code).
"""

import argparse
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import modcycles  # noqa: E402


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--fn-limit", type=int, default=80)
    ap.add_argument("--under", help="only count lines and functions of files under this dir")
    ap.add_argument("--check", action="store_true", help="exit 1 on a circle or a long function")
    a = ap.parse_args()
    files = {}
    for d, _, names in os.walk(a.src):
        for n in names:
            if n.endswith(".rs"):
                p = os.path.join(d, n)
                files[module_of(a.src, p)] = p
    long_fns = 0
    print("lines  file (longest fn)")
    for m, p in sorted(files.items(), key=lambda kv: kv[1]):
        raw = open(p, encoding="utf-8").read()
        text = strip_comments_and_strings(raw)
        # Tests are not part of the module graph.
        prod = re.split(r"#\[cfg\(test\)\]\s*mod\s+\w+", text)[0]
        if a.under and not os.path.abspath(p).startswith(os.path.abspath(a.under)):
            continue
        fns = functions(prod)
        longest = max(fns, key=lambda f: f[2], default=("-", 0, 0))
        print(f"{raw.count(chr(10)):5}  {os.path.relpath(p, a.src)} ({longest[0]}: {longest[2]})")
        for name, line, n in fns:
            if n > a.fn_limit:
                long_fns += 1
                print(f"       over {a.fn_limit}: {name} at line {line}: {n} lines")
    circles = modcycles.crate_cycles(Path(a.src).resolve().parent)
    print(f"circles: {len(circles)}")
    for c in circles:
        print("  " + " <-> ".join(c))
    if a.check and (circles or long_fns):
        sys.exit(1)


if __name__ == "__main__":
    main()
