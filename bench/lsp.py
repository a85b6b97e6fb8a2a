#!/usr/bin/env python3
"""Language servers after edits (docs/lsp.md): what they cost an edit.

    python3 bench/lsp.py            # RUNS=5, the servers of target/lsp-servers (FERRITE_LSP_SERVERS)

Per server (pyright, typescript) and run, a fresh `ferrite acp` (new FERRITE_HOME and workspace,
the fake provider as the model, `auto` mode, `max_turn_requests = 1`) runs prompts whose one tool
call is a `write`; each prompt is timed from `session/prompt` to its answer:
  off      `lsp.enabled = false`: the write alone (baseline)
  first    the first write of a file with a type error: the server starts cold and the result
           holds the error (`wait_ms = 30000`, so the edit waits for it): first-diagnostics latency
  clean    a later write of clean content (server warm), result "reports no errors"
  warm_off `lsp.enabled = false` again, after those: a warm write alone
Reported: medians of first - off (first-diagnostics latency) and clean - warm_off (the cost a
clean edit pays), and of off itself. Binaries: FERRITE_BIN / FAKE_PROVIDER_BIN, else a release build.
"""

import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from acpbench import ROOT, Agent, FakeProvider, binaries, fmt_ms, median, rm, temp_home

RUNS = int(os.environ.get("RUNS", "5"))
MODEL = "anthropic/claude-sonnet-4-5"

SERVERS = {
    "pyright": ("a.py", 'x: int = "no"\n', "x: int = 1\n", "pyright reports"),
    "typescript": ("a.ts", 'export const x: number = "no";\n', "export const x = 1;\n",
                   "typescript reports"),
}


def servers_bin() -> Path:
    base = Path(os.environ.get("FERRITE_LSP_SERVERS") or ROOT / "target" / "lsp-servers")
    bin_dir = base / "node_modules" / ".bin"
    if not (bin_dir / "pyright-langserver").exists():
        sys.exit(f"no language servers in {base}: run the npm install line of .ci/run")
    return bin_dir.resolve()


def push_write(origin: str, path: str, content: str) -> None:
    script = {"steps": [{"type": "tool_call", "id": "c1", "name": "write",
                         "args_json": json.dumps({"path": path, "content": content})}]}
    req = urllib.request.Request(origin + "/_fake/push", data=json.dumps(script).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    urllib.request.urlopen(req).read()


def timed_write(agent: Agent, origin: str, sid: str, path: str, content: str) -> float:
    push_write(origin, path, content)
    t = time.perf_counter()
    agent.request("session/prompt", {"sessionId": sid,
                                     "prompt": [{"type": "text", "text": "go"}]}, timeout=120)
    return time.perf_counter() - t


def one_run(ferrite: Path, origin: str, name: str) -> dict:
    file, broken, clean, _ = SERVERS[name]
    home = temp_home()
    ws = tempfile.mkdtemp(prefix="ferrite-bench-lsp-")
    env = {"ANTHROPIC_BASE_URL": origin, "ANTHROPIC_API_KEY": "x", "FERRITE_MODEL": MODEL,
           "PATH": f"{servers_bin()}:{os.environ.get('PATH', '')}"}
    cfg = os.path.join(home, "config.toml")
    agent = Agent(ferrite, home, env)
    try:
        agent.initialize()
        sid = agent.request("session/new", {"cwd": ws, "mcpServers": []})["sessionId"]
        agent.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
        with open(cfg, "w") as f:
            f.write("max_turn_requests = 1\n[lsp]\nenabled = false\n")
        off = timed_write(agent, origin, sid, "off" + file, broken)
        with open(cfg, "w") as f:
            f.write("max_turn_requests = 1\n[lsp]\nwait_ms = 30000\n")
        first = timed_write(agent, origin, sid, file, broken)
        clean_t = timed_write(agent, origin, sid, file, clean)
        with open(cfg, "w") as f:
            f.write("max_turn_requests = 1\n[lsp]\nenabled = false\n")
        # The baseline a warm edit is compared with: the session's first prompt pays for more
        # than the write (the model connection, the first log writes).
        warm_off = timed_write(agent, origin, sid, "off2" + file, clean)
        agent.close()
        return {"off": off, "first": first, "clean": clean_t, "warm_off": warm_off}
    finally:
        agent.kill()
        rm(home)
        rm(ws)


def main() -> None:
    ferrite, fake = binaries()
    with FakeProvider(fake) as provider:
        for name in SERVERS:
            runs = [one_run(ferrite, provider.origin, name) for _ in range(RUNS)]
            off = median([r["off"] for r in runs])
            first = median([r["first"] - r["off"] for r in runs])
            clean = median([r["clean"] - r["warm_off"] for r in runs])
            print(f"{name:11} first diagnostics {fmt_ms(first):>9}   clean edit +{fmt_ms(clean):>8}"
                  f"   (write alone {fmt_ms(off)}, {RUNS} runs, medians)")


if __name__ == "__main__":
    main()
