#!/usr/bin/env python3
"""Writes crates/cli/startup.ld: the functions a fresh `ferrite acp` runs until it has answered
`initialize` and `session/new` (and the model discovery that follows), linked together at the
start of the text.

    python3 scripts/startup_order.py target/release/ferrite

Why: the kernel maps a binary's text 64 KiB around each page a process touches (fault-around).
Spread over the 16 MB of text, the ~1.3 MB of functions startup runs touched about 90 such
windows, so a fresh agent held 7-8 MB of text it mostly never ran (bench/README.md,
2026-12-05, "startup memory").

How: runs the binary under valgrind's callgrind (spawn, `initialize`, `session/new`, half a
second for discovery, stdin closed; once as is, once with a configured provider that accepts
connections and never answers, bench/startup.py's two scenarios), takes every function of the binary that ran, and writes a
linker script fragment (crates/cli/build.rs passes it to release links on Linux) whose output
section `.text.startup` holds them, inserted before `.text`. Symbol hashes change with the
dependency graph and the compiler (one dependency added to ferrite-core changed the names of
half the bytes traced), so a name is matched without its hash where the binary has at most
`SHARED` functions of that name, and exactly where a generic has more instances
(`RawVec::grow_one`): fewer names go stale, for a section somewhat larger than what runs. A stale
name matches nothing and its function stays where it was: nothing breaks when the file is out
of date, the startup memory grows back. Re-run after dependency or toolchain updates:

    FERRITE_STARTUP_ORDER=off cargo build --release -p ferrite -p ferrite-test-support
    python3 scripts/startup_order.py target/release/ferrite
    cargo build --release -p ferrite -p ferrite-test-support

(valgrind does not see the functions of a binary linked with the script, hence the first build;
the same packages as bench/ builds, since a different feature set renames symbols too).
"""
import collections
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "cli", "startup.ld")
# A name shared by at most this many functions is matched without its hash (all of them).
SHARED = 16


def trace(binary: str, provider: bool) -> list[str]:
    """Mangled names of the binary's functions that ran, in order of first execution. With
    `provider`, a configured provider as in bench/startup.py's `silent` scenario (its server
    accepts the connection and never answers), so discovery connects and sends its request."""
    home = tempfile.mkdtemp()
    out = os.path.join(home, "callgrind.out")
    env = {"PATH": os.environ["PATH"], "HOME": home, "FERRITE_HOME": home,
           "FERRITE_MODEL": "ollama/bench", "LANG": "C.UTF-8"}
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    if provider:
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write('[providers.silent]\napi = "openai-chat"\n'
                    f'base_url = "http://127.0.0.1:{silent.getsockname()[1]}/v1"\n')
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--demangle=no",
           binary, "acp"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env)

    def request(i, method, params):
        line = json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        p.stdin.write((line + "\n").encode())
        p.stdin.flush()
        while json.loads(p.stdout.readline()).get("id") != i:
            pass

    request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    request(2, "session/new", {"cwd": os.getcwd(), "mcpServers": []})
    time.sleep(0.5)
    p.stdin.close()
    p.wait()
    names, seen, ob, obs, fns = [], set(), None, {}, {}
    base = os.path.basename(binary)
    for line in open(out, errors="replace"):
        m = re.match(r"^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        kind, i, name = m.groups()
        if kind.endswith("ob"):
            if name is not None:
                obs[i] = name
            if kind == "ob":
                ob = obs[i]
        else:
            if name is not None:
                fns[i] = name
            if kind == "fn" and ob and os.path.basename(ob) == base:
                n = fns[i].split("'")[0]
                if n not in seen:
                    seen.add(n)
                    names.append(n)
    silent.close()
    shutil.rmtree(home, ignore_errors=True)
    return names


def stripped(name: str) -> str:
    """The name without what changes from build to build: the legacy hash, crate
    disambiguators of v0 names, ThinLTO's `.llvm.N` suffix."""
    name = re.sub(r"\.llvm\.\d+$", "", name)
    name = re.sub(r"17h[0-9a-f]{16}E$", "17h*", name)
    return re.sub(r"Cs[0-9A-Za-z]+_", "Cs*_", name)


def main():
    binary = sys.argv[1]
    names = trace(binary, False)
    names += [n for n in trace(binary, True) if n not in set(names)]
    nm = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True,
                        check=True).stdout
    count = collections.Counter(stripped(l.split()[-1]) for l in nm.splitlines()
                                if len(l.split()) == 3 and l.split()[1] in "tTwW")
    pats, seen = [], set()
    for n in names:
        s = stripped(n)
        p = s if count[s] <= SHARED else re.sub(r"\.llvm\.\d+$", "", n)
        if p.startswith("_R") or ".llvm." in n:
            p += "*"
        if not re.fullmatch(r"[A-Za-z0-9_$.*]+", p) or p in seen:
            continue
        seen.add(p)
        pats.append(p)
    with open(OUT, "w") as f:
        f.write("/* Generated by scripts/startup_order.py: the functions a fresh `ferrite acp`\n"
                "   runs, kept together (see that script). */\nSECTIONS {\n  .text.startup : {\n")
        for p in pats:
            f.write(f"    *(.text.{p} .text.unlikely.{p} .text.startup.{p})\n")
        f.write("  }\n} INSERT BEFORE .text;\n")
    print(f"{len(names)} functions, {len(pats)} patterns -> {OUT}")


if __name__ == "__main__":
    main()
