#!/usr/bin/env python3
"""Fails when crates/cli/startup.ld has gone stale: too many of its entries match no function
of a built `ferrite`.

    python3 scripts/startup_check.py --names-only target/debug/ferrite   # .ci/run, MAX_STALE=0.10
    python3 scripts/startup_check.py target/dist/ferrite --max-stale 0.02   # release workflow

Why: a stale entry matches nothing and its function stays where it was, so nothing breaks when
the file is out of date; the startup memory just grows back (bench/README.md: three commits
after a regeneration RSS after `session/new` was 8.6 MiB instead of 8.1, and a bumped leaf
dependency renamed 47% of the functions and took it to 10.5 MiB). This makes it fail loudly.

How: each entry of the linker script names one function's input sections (`.text.<symbol>`,
a `*` standing for a hash or a crate disambiguator, scripts/startup_order.py). An entry is
stale when no symbol of the binary (`nm --defined-only`) matches it. Against a release-profile
binary every entry is matched as the linker matches it. `--names-only` is for the debug binary
the tests built (cheap: `.ci/run` runs it after the test build, no extra build): a debug
build's symbol hashes differ from a release build's, so the entries that write a hash out (a
generic's instances, a quarter of them) are matched by name; a renamed function or module is
still seen, a dependency bump that only changes hashes is not (the release workflow
regenerates the file from the binary it ships, .github/build-setup.yml). Regenerate with the
three commands in scripts/startup_order.py's docstring.
"""
import argparse
import bisect
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LD = os.path.join(ROOT, "crates", "cli", "startup.ld")
# Legacy mangling's hash (`17h` + 16 hex digits + `E`), written out for a generic's instances.
HASH = re.compile(r"17h[0-9a-f]{16}E$")


def entries(path: str, names_only: bool) -> list[str]:
    """The symbol pattern of each entry: its first section name without `.text.` (and, with
    `names_only`, without a written-out hash)."""
    out = []
    for line in open(path):
        line = line.strip()
        if not line.startswith("*(.text."):
            continue
        first = line[2:-1].split()[0]
        pattern = first[len(".text."):]
        out.append(HASH.sub("17h*", pattern) if names_only else pattern)
    return out


def symbols(binary: str) -> list[str]:
    text = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True,
                          check=True).stdout
    return sorted({line.split()[-1] for line in text.splitlines() if line.count(" ") >= 2})


def stale(patterns: list[str], names: list[str]) -> list[str]:
    """The patterns that match no name."""
    exact = set(names)
    missing = []
    middle = []
    for p in patterns:
        body = p.rstrip("*")
        if "*" not in p:
            found = p in exact
        elif "*" not in body:
            # `prefix*`: a sorted list answers by bisection.
            i = bisect.bisect_left(names, body)
            found = i < len(names) and names[i].startswith(body)
        else:
            middle.append(p)
            continue
        if not found:
            missing.append(p)
    # A `*` inside (a v0 crate disambiguator): the names that start with the literal part,
    # found by bisection, tried until one matches.
    for p in middle:
        literal = p.split("*")[0]
        regex = re.compile("^" + ".*".join(map(re.escape, p.split("*"))))
        i = bisect.bisect_left(names, literal)
        while i < len(names) and names[i].startswith(literal):
            if regex.match(names[i]):
                break
            i += 1
        else:
            missing.append(p)
    return missing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--max-stale", type=float,
                    default=float(os.environ.get("MAX_STALE", "0.10")))
    ap.add_argument("--ld", default=LD)
    ap.add_argument("--names-only", action="store_true",
                    help="match hashes as wildcards (a debug binary)")
    args = ap.parse_args()
    patterns = entries(args.ld, args.names_only)
    names = symbols(args.binary)
    if not patterns or not names:
        print(f"startup_check: {len(patterns)} entries, {len(names)} symbols: nothing to compare",
              file=sys.stderr)
        return 1
    missing = stale(patterns, names)
    share = len(missing) / len(patterns)
    print(f"startup.ld: {len(missing)} of {len(patterns)} entries ({share:.1%}) match no "
          f"function of {args.binary} (allowed: {args.max_stale:.0%})")
    if share > args.max_stale:
        for p in missing[:10]:
            print(f"  stale: {p}", file=sys.stderr)
        print("crates/cli/startup.ld is stale: regenerate it with\n"
              "    FERRITE_STARTUP_ORDER=off cargo build --release -p ferrite -p ferrite-test-support\n"
              "    python3 scripts/startup_order.py target/release/ferrite\n"
              "and commit the result (scripts/startup_order.py says why).", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
