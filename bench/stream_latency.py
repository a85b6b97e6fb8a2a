#!/usr/bin/env python3
"""Per-delta latency while several sessions stream at once: provider byte -> client line.

    python3 bench/stream_latency.py        # SESSIONS=4, DELTAS=500, GAP_MS=2, RUNS=3

`fake-provider --stamp` answers every request with DELTAS text deltas, GAP_MS apart, each
`ts=<the time it was handed to the socket, ns since the epoch> `. Measured per delta (the
reader notes the wall clock as each read returns, before it parses anything):
  raw      SESSIONS raw-socket clients POSTing to the fake provider at once and reading its SSE
           body: what the provider, the loopback and this Python reader cost on their own
  ferrite  one `ferrite acp` with SESSIONS sessions, a prompt sent to each at once; every
           `agent_message_chunk` line is matched back to the stamps it carries (Ferrite merges
           deltas that arrive together, so one line can answer several)
Reports p50 / p99 / max over every delta of RUNS runs, and ferrite minus raw at p50 and p99 (the
latency Ferrite adds). Goal (issue "Performance where users feel it"): added p99 under 1 ms with
4 sessions streaming.
"""

import json
import os
import re
import select
import socket
import sys
import time
from urllib.parse import urlparse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from acpbench import Agent, FakeProvider, binaries, fake_model_env, rm, temp_home

SESSIONS = int(os.environ.get("SESSIONS", "4"))
DELTAS = int(os.environ.get("DELTAS", "500"))
GAP_MS = int(os.environ.get("GAP_MS", "2"))
RUNS = int(os.environ.get("RUNS", "3"))
STAMP = re.compile(rb"ts=(\d{19})")


def percentile(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def raw_run(origin):
    """SESSIONS raw-socket readers at once; latencies in ns."""
    u = urlparse(origin)
    body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    req = (f"POST /v1/messages HTTP/1.1\r\nHost: {u.netloc}\r\n"
           f"content-type: application/json\r\nconnection: close\r\n"
           f"content-length: {len(body)}\r\n\r\n").encode() + body
    socks = []
    for _ in range(SESSIONS):
        s = socket.create_connection((u.hostname, u.port))
        s.sendall(req)
        socks.append(s)
    tails = {s.fileno(): b"" for s in socks}
    open_fds = {s.fileno(): s for s in socks}
    lat = []
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [], 30)
        if not ready:
            raise TimeoutError("raw readers stalled")
        for fd in ready:
            chunk = open_fds[fd].recv(1 << 20)
            now = time.time_ns()
            if not chunk:
                open_fds.pop(fd).close()
                continue
            data = tails[fd] + chunk
            # A stamp split across reads is completed by the next one.
            cut = data.rfind(b"\n") + 1
            tails[fd] = data[cut:]
            lat.extend(now - int(m.group(1)) for m in STAMP.finditer(data[:cut]))
    return lat


def ferrite_run(ferrite, origin, cwd):
    home = temp_home()
    agent = Agent(ferrite, home, fake_model_env(origin))
    try:
        agent.initialize()
        sids = [agent.request("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
                for _ in range(SESSIONS)]
        pending = {agent.send("session/prompt", {"sessionId": sid, "prompt": [
            {"type": "text", "text": "go"}]}) for sid in sids}
        lat = []
        tail = bytes(agent.buf)
        agent.buf.clear()
        deadline = time.monotonic() + 60 + DELTAS * GAP_MS / 1000
        while pending:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([agent.fd], [], [], max(0, left))
            if not ready:
                raise TimeoutError(f"prompts {pending} not answered")
            chunk = os.read(agent.fd, 1 << 20)
            now = time.time_ns()
            if not chunk:
                raise EOFError("ferrite closed stdout")
            data = tail + chunk
            cut = data.rfind(b"\n") + 1
            tail = data[cut:]
            for line in data[:cut].splitlines():
                if b"agent_message_chunk" in line:
                    lat.extend(now - int(m.group(1)) for m in STAMP.finditer(line))
                elif b'"method"' not in line:
                    msg = json.loads(line)
                    if "error" in msg:
                        raise RuntimeError(f"prompt failed: {msg['error']}")
                    pending.discard(msg.get("id"))
        return lat
    finally:
        agent.kill()
        rm(home)


def report(name, lat):
    ms = [x / 1e6 for x in lat]
    p50, p99 = percentile(ms, 0.5), percentile(ms, 0.99)
    print(f"{name:>8} {len(ms):>7} {p50:>9.3f} {p99:>9.3f} {max(ms):>9.3f}")
    return p50, p99


def main():
    ferrite, fake = binaries()
    provider = FakeProvider(fake, "--stamp", "--text-deltas", str(DELTAS), "--gap-ms",
                            str(GAP_MS))
    cwd = os.environ.get("BENCH_CWD", os.getcwd())
    raw, through = [], []
    try:
        for _ in range(RUNS):
            raw += raw_run(provider.origin)
            through += ferrite_run(ferrite, provider.origin, cwd)
    finally:
        provider.stop()
    expected = RUNS * SESSIONS * DELTAS
    for name, lat in (("raw", raw), ("ferrite", through)):
        if len(lat) != expected:
            sys.exit(f"{name}: {len(lat)} stamps read, expected {expected}")
    print(f"sessions: {SESSIONS}, deltas: {DELTAS} each, {GAP_MS} ms apart, runs: {RUNS}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'client':>8} {'deltas':>7} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}")
    r50, r99 = report("raw", raw)
    f50, f99 = report("ferrite", through)
    print(f"added by ferrite: p50 {f50 - r50:.3f} ms, p99 {f99 - r99:.3f} ms (goal: p99 < 1 ms)")


if __name__ == "__main__":
    main()
