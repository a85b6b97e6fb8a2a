#!/usr/bin/env python3
"""MCP servers start in the background: `session/new` does not wait for them.

    python3 bench/mcp_start.py              # SERVERS=10, RUNS=10

Per run, a fresh `ferrite acp` (FERRITE_HOME a new temporary directory, the fake provider as the
model) gets `session/new` with SERVERS stdio MCP servers (`fake-mcp-server`, from
FAKE_MCP_SERVER_BIN or next to the fake provider), then one prompt:
  new0     `session/new` latency with no MCP server (same agent set-up)
  new      `session/new` latency with SERVERS servers
  prompt   prompt sent right after `session/new` -> first `agent_message_chunk`: the first prompt
           waits only for the servers still starting
  ready    the same for a second prompt (every server started)
Medians over RUNS. Goal (issue "Performance where users feel it"): `session/new` with 10 stdio
servers under 10 ms.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from acpbench import Agent, FakeProvider, binaries, fake_model_env, fmt_ms, median, rm, temp_home

SERVERS = int(os.environ.get("SERVERS", "10"))
RUNS = int(os.environ.get("RUNS", "10"))


def prompt(agent, sid):
    t = time.perf_counter()
    rid = agent.send("session/prompt", {"sessionId": sid,
                                        "prompt": [{"type": "text", "text": "hi"}]})
    first = [None]

    def on_line(line):
        if first[0] is None and b"agent_message_chunk" in line:
            first[0] = time.perf_counter() - t

    agent.wait_response(rid, timeout=60, on_line=on_line)
    return first[0] if first[0] is not None else float("nan")


def one_run(ferrite, mcp_bin, origin, cwd):
    home = temp_home()
    agent = Agent(ferrite, home, fake_model_env(origin))
    try:
        agent.initialize()
        t = time.perf_counter()
        agent.request("session/new", {"cwd": cwd, "mcpServers": []})
        new0 = time.perf_counter() - t
        servers = [{"name": f"s{i}", "command": str(mcp_bin), "args": [], "env": []}
                   for i in range(SERVERS)]
        t = time.perf_counter()
        sid = agent.request("session/new", {"cwd": cwd, "mcpServers": servers})["sessionId"]
        new = time.perf_counter() - t
        first = prompt(agent, sid)
        ready = prompt(agent, sid)
        return new0, new, first, ready
    finally:
        agent.kill()
        rm(home)


def main():
    ferrite, fake = binaries()
    mcp_bin = Path(os.environ.get("FAKE_MCP_SERVER_BIN") or fake.parent / "fake-mcp-server")
    if not mcp_bin.is_file():
        sys.exit(f"missing {mcp_bin}; build it with cargo build --release -p ferrite-test-support")
    provider = FakeProvider(fake, "--text-deltas", "1")
    cwd = os.environ.get("BENCH_CWD", os.getcwd())
    try:
        one_run(ferrite, mcp_bin, provider.origin, cwd)  # warm-up
        rows = [one_run(ferrite, mcp_bin, provider.origin, cwd) for _ in range(RUNS)]
    finally:
        provider.stop()
    col = lambda i: median([r[i] for r in rows])
    print(f"{SERVERS} stdio MCP servers, {RUNS} runs, load average {os.getloadavg()[0]:.1f}")
    print(f"session/new, no server            {fmt_ms(col(0))}")
    print(f"session/new, {SERVERS} servers          {fmt_ms(col(1))}   (goal < 10 ms)")
    print(f"first prompt -> first chunk       {fmt_ms(col(2))}   (waits for servers still starting)")
    print(f"second prompt -> first chunk      {fmt_ms(col(3))}")


if __name__ == "__main__":
    main()
