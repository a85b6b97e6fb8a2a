#!/usr/bin/env python3
"""Many sessions in one `ferrite acp` process.

    python3 bench/sessions.py           # SESSIONS=50, RUNS=3

Per run, one agent with a fresh FERRITE_HOME and the fake provider as its model, whose every
answer first says one word and then stalls (`STALL_MS`=30000) so that turns stay running:
  new_1      `session/new` latency with no other session open (median of 5 opened first)
  idle       VmRSS growth per idle session: RSS after SESSIONS idle sessions, minus RSS with
             the first 5, divided by the sessions added
  active     VmRSS growth per session with a turn running: a prompt is sent to each of the
             SESSIONS sessions; once every one has streamed its first chunk, RSS minus the idle
             RSS, divided by SESSIONS
  new_N      `session/new` latency with SESSIONS sessions open and every one in a turn (median of 5)
Reports the median over RUNS of each. Targets (issue "Performance where users feel it"): idle
< 1 MiB per session; new_N no slower than new_1.
"""

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from acpbench import Agent, FakeProvider, binaries, fake_model_env, fmt_ms, median, rm, temp_home

SESSIONS = int(os.environ.get("SESSIONS", "50"))
RUNS = int(os.environ.get("RUNS", "3"))
STALL_MS = int(os.environ.get("STALL_MS", "30000"))


def new_session(agent, cwd):
    t = time.perf_counter()
    res = agent.request("session/new", {"cwd": cwd, "mcpServers": []})
    return res["sessionId"], time.perf_counter() - t


def one_run(ferrite, fake_origin, cwd):
    home = temp_home()
    env = fake_model_env(fake_origin)
    agent = Agent(ferrite, home, env)
    try:
        agent.initialize()
        ids = []
        first = []
        for _ in range(5):
            sid, dt = new_session(agent, cwd)
            ids.append(sid)
            first.append(dt)
        rss_5 = agent.rss_kb()
        while len(ids) < SESSIONS:
            sid, _ = new_session(agent, cwd)
            ids.append(sid)
        rss_idle = agent.rss_kb()
        idle_per = (rss_idle - rss_5) / max(1, SESSIONS - 5)

        # A turn in every session; wait until each has streamed its first chunk.
        waiting = set(ids)
        for sid in ids:
            agent.send("session/prompt", {"sessionId": sid,
                                          "prompt": [{"type": "text", "text": "go"}]})
        deadline = time.perf_counter() + 60
        while waiting and time.perf_counter() < deadline:
            line = agent.read_line(timeout=max(0.1, deadline - time.perf_counter()))
            if b"agent_message_chunk" in line:
                msg = json.loads(line)
                waiting.discard(msg["params"]["sessionId"])
        if waiting:
            raise RuntimeError(f"{len(waiting)} sessions never started streaming")
        rss_active = agent.rss_kb()
        active_per = (rss_active - rss_idle) / SESSIONS

        later = []
        for _ in range(5):
            _, dt = new_session(agent, cwd)
            later.append(dt)
        return {
            "new_1": median(first),
            "new_N": median(later),
            "idle": idle_per,
            "active": active_per,
            "rss_idle": rss_idle,
            "rss_active": rss_active,
        }
    finally:
        agent.kill()
        rm(home)


def main():
    ferrite, fake = binaries()
    script = {"steps": [{"type": "text", "text": "thinking"},
                        {"type": "stall", "ms": STALL_MS},
                        {"type": "text", "text": " done"}]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(script, f)
        script_path = f.name
    provider = FakeProvider(fake, "--script", script_path)
    cwd = os.environ.get("BENCH_CWD", os.getcwd())
    try:
        one_run(ferrite, provider.origin, cwd)  # warm-up
        results = [one_run(ferrite, provider.origin, cwd) for _ in range(RUNS)]
    finally:
        provider.stop()
        os.unlink(script_path)
    pick = lambda k: median([r[k] for r in results])
    print(f"sessions: {SESSIONS}, runs: {RUNS}, load average {os.getloadavg()[0]:.1f}")
    print(f"session/new, 1 open           {fmt_ms(pick('new_1'))}")
    print(f"session/new, {SESSIONS} open in turns  {fmt_ms(pick('new_N'))}")
    print(f"RSS per idle session          {pick('idle'):.0f} KiB")
    print(f"RSS per session in a turn     {pick('active'):.0f} KiB (on top of idle)")
    print(f"RSS, {SESSIONS} idle / {SESSIONS} in turns    "
          f"{pick('rss_idle') / 1024:.1f} MiB / {pick('rss_active') / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
