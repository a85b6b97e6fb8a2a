#!/usr/bin/env python3
"""Cancelling a running command, and memory while a command floods its output.

    python3 bench/cancel.py               # 10 cancels, then the 1 GiB output run
    RUNS=20 SKIP_FLOOD=1 python3 bench/cancel.py
    FLOOD_BYTES=268435456 python3 bench/cancel.py

cancel  The fake provider answers every request with a script whose one step is a `bash` tool
        call `sleep 30` (id c1). The session is put in mode `full` (session/set_mode) so nothing
        asks for permission. Once ferrite sends `tool_call_update` status `in_progress` for c1,
        the client sends `session/cancel` and times until the prompt's answer
        (`stopReason: "cancelled"`). Median and p90 of RUNS (default 10), each in a fresh
        session of one ferrite process. Target: < 100 ms.
flood   The same with the command
        `head -c 1073741824 /dev/zero | tr '\\0' 'a' | fold -w 200`: the client waits for c1's
        final `tool_call_update` (completed / failed), reads the ferrite process's VmHWM (peak
        RSS), then cancels the turn (the fake model would ask for the same command again).
        Reports the peak RSS and how long the command took from `in_progress` to its result.
        Target: peak RSS < 64 MB.
bg      The same command in the background (`bash` with `background: true`, id c0), with a
        foreground call c1 that waits for it to finish (it touches a file when done): the
        output goes to the spill file while the agent goes on. Reports the same peak RSS.
        SKIP_BG=1 leaves it out.
"""

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from acpbench import Agent, FakeProvider, binaries, fmt_ms, median, p90, rm, temp_home

MODEL = "anthropic/claude-sonnet-4-5"


def script_file(command: str, background: str = "") -> str:
    steps = [{"type": "tool_call", "id": "c1", "name": "bash",
              "args_json": json.dumps({"command": command})}]
    if background:
        steps.insert(0, {"type": "tool_call", "id": "c0", "name": "bash",
                         "args_json": json.dumps({"command": background, "background": True})})
    script = {"steps": steps}
    fd, path = tempfile.mkstemp(prefix="ferrite-bench-script-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(script, f)
    return path


def c1_status(raw: bytes):
    """The status of a tool_call_update for c1 in this line, else None (parses only candidates)."""
    if b'"tool_call_update"' not in raw or b'"c1"' not in raw:
        return None
    up = json.loads(raw)["params"]["update"]
    if up.get("sessionUpdate") == "tool_call_update" and up.get("toolCallId") == "c1":
        return up.get("status")
    return None


def wait_for_c1(a: Agent, rid: int, statuses: set, timeout: float) -> str:
    deadline = time.perf_counter() + timeout
    while True:
        raw = a.read_line(max(0.0, deadline - time.perf_counter()))
        st = c1_status(raw)
        if st in statuses:
            return st
        if b'"method"' not in raw[:60]:
            msg = json.loads(raw)
            if msg.get("id") == rid:
                raise RuntimeError(f"the prompt ended before c1 reached {statuses}: {msg}")
            if "method" in msg and "id" in msg:
                raise RuntimeError(f"unexpected request from ferrite: {raw[:300]!r}")


def start(ferrite, origin, home, cwd):
    env = {"ANTHROPIC_BASE_URL": origin, "ANTHROPIC_API_KEY": "x", "FERRITE_MODEL": MODEL}
    return Agent(ferrite, home, env)


def new_full_session(a: Agent, cwd: str) -> str:
    sid = a.request("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
    a.request("session/set_mode", {"sessionId": sid, "modeId": "full"})
    return sid


def cancel_runs(ferrite, fake, cwd, runs):
    path = script_file("sleep 30")
    home = temp_home()
    times = []
    try:
        with FakeProvider(fake, "--script", path) as fp:
            a = start(ferrite, fp.origin, home, cwd)
            try:
                a.initialize()
                for _ in range(runs + 1):  # the first is a warm-up
                    sid = new_full_session(a, cwd)
                    rid = a.send("session/prompt", {"sessionId": sid,
                                                     "prompt": [{"type": "text", "text": "go"}]})
                    wait_for_c1(a, rid, {"in_progress"}, 30)
                    t = time.perf_counter()
                    a.send("session/cancel", {"sessionId": sid}, notify=True)
                    res = a.wait_response(rid, timeout=30)
                    el = time.perf_counter() - t
                    assert res["stopReason"] == "cancelled", res
                    times.append(el)
                a.close()
            finally:
                a.kill()
    finally:
        rm(home)
        os.unlink(path)
    return times[1:]


def flood(ferrite, fake, cwd, nbytes, background=False):
    cmd = f"head -c {nbytes} /dev/zero | tr '\\0' 'a' | fold -w 200"
    done = tempfile.mktemp(prefix="ferrite-bench-bg-done-")
    if background:
        path = script_file(f"while [ ! -e {done} ]; do sleep 0.05; done; rm -f {done}",
                           background=f"{cmd}; touch {done}")
    else:
        path = script_file(cmd)
    home = temp_home()
    try:
        with FakeProvider(fake, "--script", path) as fp:
            a = start(ferrite, fp.origin, home, cwd)
            try:
                a.initialize()
                sid = new_full_session(a, cwd)
                hwm_before = a.rss_kb("VmHWM")
                rid = a.send("session/prompt", {"sessionId": sid,
                                                 "prompt": [{"type": "text", "text": "go"}]})
                wait_for_c1(a, rid, {"in_progress"}, 30)
                t = time.perf_counter()
                final = wait_for_c1(a, rid, {"completed", "failed"}, 600)
                el = time.perf_counter() - t
                hwm = a.rss_kb("VmHWM")
                rss = a.rss_kb("VmRSS")
                a.send("session/cancel", {"sessionId": sid}, notify=True)
                res = a.wait_response(rid, timeout=30)
                assert res["stopReason"] == "cancelled", res
                a.close()
                spill = sum(os.path.getsize(os.path.join(d, f))
                            for d, _, fs in os.walk(home) for f in fs if not f.endswith(".jsonl"))
                return el, hwm_before, hwm, rss, final, spill
            finally:
                a.kill()
    finally:
        rm(home)
        os.unlink(path)


def main():
    runs = int(os.environ.get("RUNS", "10"))
    ferrite, fake = binaries()
    cwd = os.path.abspath(os.environ.get("BENCH_CWD", os.getcwd()))
    t = cancel_runs(ferrite, fake, cwd, runs)
    print(f"session/cancel -> `cancelled` answer while `sleep 30` runs, {runs} runs")
    print(f"  median {fmt_ms(median(t))}  p90 {fmt_ms(p90(t))}   (target < 100 ms)")
    print("  all: " + " ".join(f"{x * 1000:.1f}" for x in t) + " ms")
    if os.environ.get("SKIP_FLOOD") == "1":
        return
    nbytes = int(os.environ.get("FLOOD_BYTES", str(1 << 30)))
    el, before, hwm, rss, final, spill = flood(ferrite, fake, cwd, nbytes)
    print(f"command printing {nbytes / (1 << 20):.0f} MiB (`head -c {nbytes} /dev/zero | tr "
          f"'\\0' 'a' | fold -w 200`)")
    print(f"  in_progress -> {final}: {el:.2f} s ({nbytes / (1 << 20) / el:.0f} MiB/s)")
    print(f"  ferrite VmHWM: {hwm / 1024:.1f} MiB (before the prompt {before / 1024:.1f} MiB; "
          f"VmRSS after {rss / 1024:.1f} MiB)   (target < 64 MB)")
    print(f"  spill files in FERRITE_HOME: {spill / (1 << 20):.0f} MiB")
    if os.environ.get("SKIP_BG") == "1":
        return
    el, before, hwm, rss, final, spill = flood(ferrite, fake, cwd, nbytes, background=True)
    print(f"the same command in the background (bash background: true), a foreground call "
          f"waiting for it")
    print(f"  until it ended: {el:.2f} s ({nbytes / (1 << 20) / el:.0f} MiB/s)")
    print(f"  ferrite VmHWM: {hwm / 1024:.1f} MiB (before the prompt {before / 1024:.1f} MiB; "
          f"VmRSS after {rss / 1024:.1f} MiB)   (target < 64 MB)")
    print(f"  spill files in FERRITE_HOME: {spill / (1 << 20):.0f} MiB")


if __name__ == "__main__":
    main()
