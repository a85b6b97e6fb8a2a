#!/usr/bin/env python3
"""Turn overhead against history size: what a long session costs on every prompt.

    python3 bench/turn_overhead.py          # SIZES="100 1000 10000", RUNS=5

Per size, a session log of that many entries is generated (the mix of `bench/load.py`: turns
with a `read` tool call and plain turns) and resumed (`session/resume`, no replay) in a fresh
`ferrite acp` (size 0: a new session); then RUNS prompts are sent in a row (after one warm-up
prompt). The fake provider answers each request at once with one short text, and notes (wall
clock, `GET /_fake/timings`) when each request's first bytes arrived and when its answer's last
byte left. Measured per prompt:
  request    `session/prompt` sent -> the provider request's first bytes arrived (the turn's
             setup, the history rebuilt into a request and serialized, the connection)
  tail       the provider's last byte -> the prompt's answer (the end of the turn: the
             response recorded and synced, the answer written)
  answer     `session/prompt` sent -> the prompt's answer
  rested     `request`, for a prompt sent after the agent rested (REST_S): it has let go of the
             last body, so the whole history is written again (back-to-back requests, a turn's
             tool loop or prompts in a row, keep the part of the last body that is the same;
             `crates/llm/src/body.rs`). RESTED prompts, each after a rest.
Also the request body's size, the log's size on disk and the agent's VmRSS once the session is
open (`RSS open`) and after the prompts once the agent has rested (1.5 s: it hands memory back
after a second without turns), and the same for its anonymous memory (`RssAnon`: the
heap, without the pages of the binary, which vary by a MiB or two with the code's layout).
Reports medians, the growth of `request` over the smallest size per MB of request body, and the
growth of RSS after the prompts over the smallest size as a multiple of the log's size.
Goals (issue "Performance where users feel it"): prompt -> request under 5 ms at 1,000 entries;
its growth under 2 ms per MB of request body; RSS under 2x the history's size on disk (plus the
~10 MiB of an empty agent).
"""

import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from acpbench import Agent, FakeProvider, binaries, fake_model_env, fmt_ms, median, rm, temp_home
from load import make_session

SIZES = [int(s) for s in os.environ.get("SIZES", "0 100 1000 10000").split()]
RUNS = int(os.environ.get("RUNS", "5"))
RESTED = int(os.environ.get("RESTED", "3"))
# Longer than the idle time after which the agent returns freed memory (`runtime::memory::IDLE`).
REST_S = 1.5


# Loopback only: no proxy from the environment.
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def last_timing(origin):
    with NO_PROXY.open(f"{origin}/_fake/timings", timeout=10) as r:
        return json.loads(r.read())[-1]


def measure(ferrite, origin, cwd, n):
    home = temp_home()
    try:
        sid, size = (make_session(home, cwd, n)[::2]) if n else (None, 0)
        env = fake_model_env(origin)
        agent = Agent(ferrite, home, env)
        try:
            agent.initialize()
            if sid:
                agent.request("session/resume", {"sessionId": sid, "cwd": cwd,
                                                 "mcpServers": []})
            else:
                sid = agent.request("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
            rss_open = agent.rss_kb()
            anon_open = agent.rss_kb("RssAnon")
            def prompt():
                t = time.time_ns()
                rid = agent.send("session/prompt", {"sessionId": sid,
                                                    "prompt": [{"type": "text", "text": "next"}]})
                agent.wait_response(rid, timeout=120)
                done = time.time_ns()
                timing = last_timing(origin)
                return ((timing["request_start_ns"] - t) / 1e9, (done - timing["reply_end_ns"]) / 1e9,
                        (done - t) / 1e9, timing["request_bytes"])

            requests, tails, answers, body = [], [], [], 0
            for _ in range(RUNS + 1):
                request, tail, answer, body = prompt()
                requests.append(request)
                tails.append(tail)
                answers.append(answer)
            # At rest: the agent hands freed memory back once no turn ran for a second.
            time.sleep(REST_S)
            rss = agent.rss_kb()
            anon = agent.rss_kb("RssAnon")
            rested = []
            for _ in range(RESTED):
                rested.append(prompt()[0])
                time.sleep(REST_S)
        finally:
            agent.kill()
        # The first prompt warms up (the HTTP client, the certificate store): not counted.
        return (size, body, median(requests[1:]), median(tails[1:]), median(answers[1:]),
                rss_open, rss, anon_open, anon, median(rested) if rested else float("nan"))
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
    print(f"{'entries':>8} {'log':>9} {'request':>9} {'prompt->request':>16} "
          f"{'last byte->answer':>18} {'prompt->answer':>15} {'RSS open':>9} {'RSS':>9} "
          f"{'anon open':>10} {'anon':>9} {'rested':>9}")
    for n, size, body, request, tail, answer, rss_open, rss, anon_open, anon, rested in rows:
        print(f"{n:>8} {size / 1e6:>7.2f}MB {body / 1e6:>7.2f}MB {fmt_ms(request):>16} "
              f"{fmt_ms(tail):>18} {fmt_ms(answer):>15} {rss_open / 1024:>6.1f}MiB "
              f"{rss / 1024:>6.1f}MiB {anon_open / 1024:>7.1f}MiB {anon / 1024:>6.1f}MiB "
              f"{fmt_ms(rested):>9}")
    base_n, _, base_body, base_request = rows[0][:4]
    base_rss, base_anon, base_rested = rows[0][7], rows[0][9], rows[0][10]
    for n, size, body, request, _, _, _, rss, _, anon, rested in rows[1:]:
        mb = max(1e-9, (body - base_body) / 1e6)
        grow = (request - base_request) / mb
        grow_rested = (rested - base_rested) / mb
        print(f"growth {base_n} -> {n} entries: {grow * 1000:.2f} ms per MB of request body "
              f"(after a rest {grow_rested * 1000:.2f}); "
              f"RSS +{(rss - base_rss) * 1024 / max(1, size):.2f}x the log, "
              f"anonymous +{(anon - base_anon) * 1024 / max(1, size):.2f}x the log")


if __name__ == "__main__":
    main()
