#!/usr/bin/env python3
"""Turn overhead against history size: what a long session costs on every prompt.

    python3 bench/turn_overhead.py          # SIZES="100 1000 10000", RUNS=5

Per size, a session log of that many entries is generated (the mix of `bench/load.py`: turns
with a `read` tool call and plain turns) and resumed (`session/resume`, no replay) in a fresh
`ferrite acp`; then RUNS prompts are sent in a row (after one warm-up prompt). The fake provider
answers each request at once with one short text. Measured per prompt:
  first      `session/prompt` sent -> the first `agent_message_chunk` (the whole history turned
             into a request, sent, answered and decoded: the agent's per-turn cost plus one
             loopback round trip)
  answer     `session/prompt` sent -> the prompt's answer
Also the log size on disk and the agent's VmRSS after the prompts. Reports medians, and the growth
of `first` over the smallest session per MB of log. Goals (issue "Performance where users feel
it"): prompt -> request under 5 ms at 1,000 entries; growth under 2 ms per MB; RSS under 2x the
history's size on disk (plus the ~10 MiB of an empty agent).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from acpbench import Agent, FakeProvider, binaries, fake_model_env, fmt_ms, median, rm, temp_home
from load import make_session

SIZES = [int(s) for s in os.environ.get("SIZES", "100 1000 10000").split()]
RUNS = int(os.environ.get("RUNS", "5"))


def measure(ferrite, origin, cwd, n):
    home = temp_home()
    try:
        sid, _, size = make_session(home, cwd, n)
        env = fake_model_env(origin)
        agent = Agent(ferrite, home, env)
        try:
            agent.initialize()
            agent.request("session/resume", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
            firsts, answers = [], []
            for _ in range(RUNS + 1):
                t = time.perf_counter()
                rid = agent.send("session/prompt", {"sessionId": sid,
                                                    "prompt": [{"type": "text", "text": "next"}]})
                first = [None]

                def on_line(line, first=first, t=t):
                    if first[0] is None and b"agent_message_chunk" in line:
                        first[0] = time.perf_counter() - t

                agent.wait_response(rid, timeout=120, on_line=on_line)
                answers.append(time.perf_counter() - t)
                firsts.append(first[0] if first[0] is not None else float("nan"))
            rss = agent.rss_kb()
        finally:
            agent.kill()
        # The first prompt warms up (the HTTP client, the certificate store): not counted.
        return size, median(firsts[1:]), median(answers[1:]), rss
    finally:
        rm(home)


def main():
    ferrite, fake = binaries()
    provider = FakeProvider(fake, "--text-deltas", "1")
    cwd = os.environ.get("BENCH_CWD", os.getcwd())
    rows = []
    try:
        for n in SIZES:
            rows.append((n, *measure(ferrite, provider.origin, cwd, n)))
    finally:
        provider.stop()
    print(f"runs: {RUNS}, load average {os.getloadavg()[0]:.1f}")
    print(f"{'entries':>8} {'log':>9} {'prompt->chunk':>14} {'prompt->answer':>15} {'RSS':>10}")
    for n, size, first, answer, rss in rows:
        print(f"{n:>8} {size / 1e6:>7.2f}MB {fmt_ms(first):>14} {fmt_ms(answer):>15} "
              f"{rss / 1024:>7.1f}MiB")
    base_n, base_size, base_first = rows[0][0], rows[0][1], rows[0][2]
    for n, size, first, _, _ in rows[1:]:
        grow = (first - base_first) / max(1e-9, (size - base_size) / 1e6)
        print(f"growth {base_n} -> {n} entries: {grow * 1000:.2f} ms per MB of log")


if __name__ == "__main__":
    main()
