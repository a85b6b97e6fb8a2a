#!/usr/bin/env python3
"""`session/load` time for long sessions.

    python3 bench/load.py                     # sizes 1000 10000 100000, 5 runs each
    SIZES="1000 10000" RUNS=9 python3 bench/load.py

Writes session logs straight into FERRITE_HOME/sessions/<id>.jsonl following docs/sessions.md
(format 1: header, then entries seq 1..N): a repeating mix of
  user_message, assistant (text + tool_call part), tool_call, tool_result, assistant (text),
  turn_end                                    -- a turn with a tool call (6 entries)
  user_message, assistant (text), turn_end    -- a plain turn (3 entries)
plus a `title` entry after the first prompt. It first checks with `ferrite sessions show <id>`
that ferrite reads the generated format (a small log).

Then, per size and run, spawns `ferrite acp`, sends `initialize`, then
`session/load {sessionId, cwd, mcpServers: []}` and times spawn -> load answer, reading every
replayed `session/update` before it. Reports the median total, the median of (total - the
initialize part), and that per entry. Target: 10,000 entries under 200 ms.
"""

import json
import os
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from acpbench import Agent, binaries, clean_env, fmt_ms, median, rm, temp_home

LOREM = ("The build fails because the borrow of `config` outlives the lock guard; moving the "
         "clone before the match fixes it, and the tests in crates/core pass again. ")


def ts(i: int) -> str:
    # RFC 3339, millisecond precision, monotonically increasing.
    base = 1_780_000_000  # 2026-05-28
    s = base + i // 10
    ms = (i % 10) * 100
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{ms:03d}Z"


def generate(path: str, sid: str, cwd: str, n: int) -> int:
    """Writes a log of exactly n entries; returns the number of prompts (turns)."""
    lines = [json.dumps({"type": "header", "format": 1, "id": sid, "cwd": cwd,
                         "created_at": ts(0), "harness": "code"}, separators=(",", ":"))]
    seq = 0
    turns = 0

    def add(kind: dict):
        nonlocal seq
        seq += 1
        e = {"seq": seq, "at": ts(seq)}
        e.update(kind)
        lines.append(json.dumps(e, separators=(",", ":")))

    def user(t):
        add({"type": "user_message",
             "content": [{"type": "text", "text": f"Turn {t}: please look at src/lib_{t % 50}.rs "
                                                  f"and fix the failing test, keep the API."}]})

    def text(t, k=1):
        return {"type": "text", "text": f"[{t}] " + LOREM * k}

    def tool_turn(t):
        cid = f"toolu_{t:08d}"
        args = json.dumps({"path": f"src/lib_{t % 50}.rs"})
        user(t)
        if seq == 1:
            add({"type": "title", "title": f"Turn {t}: please look at src/lib_{t % 50}.rs"})
        add({"type": "assistant", "content": [text(t), {"type": "tool_call", "id": cid,
                                                         "name": "read", "arguments": args}]})
        add({"type": "tool_call", "name": "read",
             "call": {"id": cid, "title": f"Read src/lib_{t % 50}.rs", "kind": "read",
                      "status": "pending", "locations": [], "content": []}})
        # As ferrite writes a result: the card shows the output itself (the log has it twice).
        output = "\n".join(f"{i:>4}  fn item_{i}() -> u32 {{ {i} }}" for i in range(1, 25))
        add({"type": "tool_result", "call_id": cid, "output": output, "is_error": False,
             "update": {"id": cid, "status": "completed",
                        "content": [{"type": "text", "text": output}]}})
        add({"type": "assistant", "content": [text(t, 2)]})
        add({"type": "turn_end", "stop": "end_turn"})

    def plain_turn(t, assistants=1):
        user(t)
        for _ in range(assistants):
            add({"type": "assistant", "content": [text(t, 3)]})
        add({"type": "turn_end", "stop": "end_turn"})

    # tool_turn (6 + title 1 the first time) + plain_turn (3) per cycle.
    while True:
        remaining = n - seq
        cycle = 9 + (1 if seq == 0 else 0)
        if remaining >= cycle + 3 or remaining == cycle:
            tool_turn(turns)
            plain_turn(turns + 1)
            turns += 2
        else:
            break
    remaining = n - seq
    if remaining:
        assert remaining >= 3, remaining
        plain_turn(turns, assistants=remaining - 2)
        turns += 1
    assert seq == n, (seq, n)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return turns


def make_session(home: str, cwd: str, n: int) -> tuple[str, int, int]:
    os.makedirs(os.path.join(home, "sessions"), exist_ok=True)
    sid = str(uuid.uuid4())
    path = os.path.join(home, "sessions", f"{sid}.jsonl")
    turns = generate(path, sid, cwd, n)
    return sid, turns, os.path.getsize(path)


def check_format(ferrite, cwd):
    home = temp_home()
    try:
        sid, turns, _ = make_session(home, cwd, 21)
        out = subprocess.run([str(ferrite), "sessions", "show", sid], env=clean_env(home),
                             capture_output=True, text=True, timeout=30)
        if out.returncode != 0 or "Turn 0" not in out.stdout or "fn item_3" not in out.stdout \
                and "Read src/lib_0.rs" not in out.stdout:
            sys.exit(f"`ferrite sessions show` did not read the generated log:\n"
                     f"status {out.returncode}\nstdout:\n{out.stdout}\nstderr:\n{out.stderr}")
        if os.environ.get("SHOW"):
            print(out.stdout)
        if "skipp" in out.stderr.lower() or "warn" in out.stderr.lower():
            sys.exit(f"ferrite warned about the generated log:\n{out.stderr}")
    finally:
        rm(home)


def one_load(ferrite, home, sid, cwd):
    a = Agent(ferrite, home)
    counts = {}
    try:
        a.initialize()
        t_init = time.perf_counter() - a.t_spawn
        lines = []
        a.request("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []},
                  timeout=600, on_line=lines.append)
        t_load = time.perf_counter() - a.t_spawn
        # After timing: parse what was replayed, to check it is the whole conversation.
        for raw in lines:
            m = json.loads(raw)
            if m.get("method") == "session/update":
                k = m["params"]["update"]["sessionUpdate"]
                counts[k] = counts.get(k, 0) + 1
        a.close()
        return t_init, t_load, counts
    finally:
        a.kill()


def main():
    sizes = [int(s) for s in os.environ.get("SIZES", "1000 10000 100000").split()]
    runs = int(os.environ.get("RUNS", "5"))
    ferrite, _ = binaries()
    cwd = os.path.abspath(os.environ.get("BENCH_CWD", os.getcwd()))
    check_format(ferrite, cwd)
    print(f"ferrite session/load, median of {runs} runs ({ferrite})")
    print(f"{'entries':>8} {'file':>9} {'spawn->load answer':>19} {'load part':>10} "
          f"{'per entry':>10}  replayed updates")
    for n in sizes:
        home = temp_home()
        try:
            sid, turns, size = make_session(home, cwd, n)
            one_load(ferrite, home, sid, cwd)  # warm the page cache; not counted
            res = [one_load(ferrite, home, sid, cwd) for _ in range(runs)]
            total = median([r[1] for r in res])
            load_part = median([r[1] - r[0] for r in res])
            counts = res[-1][2]
            assert counts.get("user_message_chunk", 0) == turns, (counts, turns)
            print(f"{n:>8} {size / 1e6:>7.1f}MB {fmt_ms(total):>19} {fmt_ms(load_part):>10} "
                  f"{load_part / n * 1e6:>7.2f} us  "
                  + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
        finally:
            rm(home)
    print("target: 10,000 entries under 200 ms")


if __name__ == "__main__":
    main()
