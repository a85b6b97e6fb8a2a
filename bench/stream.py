#!/usr/bin/env python3
"""The streaming path: fake provider -> ferrite -> ACP client.

    python3 bench/stream.py               # 10,000 deltas, 5 runs
    DELTAS=50000 RUNS=9 python3 bench/stream.py

Starts `fake-provider --text-deltas N` (every request is answered with N small text deltas,
`tok0 `, `tok1 `, ..., each its own HTTP chunk) and measures, median of RUNS:
  direct   a client POSTing a minimal Anthropic Messages body to <origin>/v1/messages over a raw
           socket and reading the SSE body until EOF (the cost of producing and moving the bytes)
  floor    `examples/stream_floor` of the cli crate (FLOOR_BIN, else built in release): Ferrite's
           own provider client, SSE decoder and `session/update` serialization on one thread, with
           no session, turn, channel or pump; a line on its stdin starts a request, every delta
           becomes the same `agent_message_chunk` line, then `done`. It writes its lines out
           whenever no more deltas are ready, as ferrite's writer does when its queue is empty
           (what an agent must do for the editor to show text as it comes)
  ferrite  one `ferrite acp` (ANTHROPIC_BASE_URL=<origin>, FERRITE_MODEL=anthropic/claude-sonnet-4-5)
           for all runs, as the floor is one process: per run a new session and the time from
           writing its `session/prompt` until its answer, reading every `agent_message_chunk` on
           the way (the text is checked after the clock stops). Like the floor's, the process's
           first prompt is a warm-up; it is reported apart (`first prompt`).
Reports deltas/s through ferrite, the overhead ferrite/direct - 1 (target < 50%) and ferrite/floor
(the fair comparison: goal within 1.3x).
"""

import json
import os
import socket
import sys
import time
from urllib.parse import urlparse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from acpbench import Agent, FakeProvider, binaries, fmt_ms, median, rm, temp_home

MODEL = "anthropic/claude-sonnet-4-5"


def direct(origin: str) -> tuple[float, int]:
    u = urlparse(origin)
    body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    req = (f"POST /v1/messages HTTP/1.1\r\nHost: {u.netloc}\r\n"
           f"content-type: application/json\r\nx-api-key: x\r\nanthropic-version: 2023-06-01\r\n"
           f"accept: text/event-stream\r\nconnection: close\r\n"
           f"content-length: {len(body)}\r\n\r\n").encode() + body
    t = time.perf_counter()
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(req)
    n = 0
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        n += len(chunk)
    el = time.perf_counter() - t
    s.close()
    return el, n


def floor_bin() -> str:
    path = os.environ.get("FLOOR_BIN")
    if path:
        return path
    from acpbench import ROOT, target_dir
    path = str(target_dir() / "release" / "examples" / "stream_floor")
    if not os.path.isfile(path):
        import subprocess
        subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "ferrite", "--example",
                        "stream_floor"], cwd=ROOT, check=True)
    return path


class Floor:
    def __init__(self, origin: str):
        import subprocess
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ANTHROPIC_BASE_URL": origin,
               "ANTHROPIC_API_KEY": "x", "HOME": "/nonexistent"}
        self.proc = subprocess.Popen([floor_bin()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, bufsize=0)

    def run(self, expected_chunks_at_least: int) -> float:
        t = time.perf_counter()
        self.proc.stdin.write(b"go\n")
        n = 0
        buf = b""
        while True:
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                raise SystemExit("stream_floor exited early")
            buf += chunk
            if buf.endswith(b"done\n"):
                break
        el = time.perf_counter() - t
        n = buf.count(b"agent_message_chunk")
        if n < expected_chunks_at_least:
            raise SystemExit(f"stream_floor wrote {n} chunks")
        return el

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


class Ferrite:
    """One `ferrite acp` serving every run, as the floor is one process: each run is a prompt in
    a new session, so a run's clock holds the turn and never the process's start (the HTTP
    client, the certificate store, the first connection). The first prompt of the process is
    the warm-up, timed apart as `cold`."""

    def __init__(self, ferrite, origin: str, cwd: str, expected_text: str):
        self.home = temp_home()
        env = {"ANTHROPIC_BASE_URL": origin, "ANTHROPIC_API_KEY": "x", "FERRITE_MODEL": MODEL}
        self.agent = Agent(ferrite, self.home, env)
        self.agent.initialize()
        self.cwd = cwd
        self.expected_text = expected_text

    def run(self) -> tuple[float, int]:
        a = self.agent
        sid = a.request("session/new", {"cwd": self.cwd, "mcpServers": []})["sessionId"]
        lines = []
        t = time.perf_counter()
        rid = a.send("session/prompt", {"sessionId": sid,
                                         "prompt": [{"type": "text", "text": "hi"}]})
        res = a.wait_response(rid, timeout=300, on_line=lines.append)
        el = time.perf_counter() - t
        # After the clock: check what arrived.
        assert res["stopReason"] == "end_turn", res
        assert "_meta" not in res or "turnFailure" not in json.dumps(res), res
        chunks, text = 0, []
        for raw in lines:
            m = json.loads(raw)
            if m.get("method") != "session/update" or m["params"]["sessionId"] != sid:
                continue
            up = m["params"]["update"]
            if up["sessionUpdate"] == "agent_message_chunk":
                chunks += 1
                text.append(up["content"]["text"])
        text = "".join(text)
        if text != self.expected_text:
            raise SystemExit(f"ferrite streamed {len(text)} chars, expected "
                             f"{len(self.expected_text)}: {text[:200]!r}")
        return el, chunks

    def close(self):
        try:
            self.agent.close()
        finally:
            self.agent.kill()
            rm(self.home)


def main():
    n = int(os.environ.get("DELTAS", "10000"))
    runs = int(os.environ.get("RUNS", "5"))
    ferrite, fake = binaries()
    cwd = os.path.abspath(os.environ.get("BENCH_CWD", os.getcwd()))
    expected = "".join(f"tok{i} " for i in range(n))
    with FakeProvider(fake, "--text-deltas", str(n)) as fp:
        direct(fp.origin)  # warm-up
        d = [direct(fp.origin) for _ in range(runs)]
        nbytes = d[0][1]
        floor = Floor(fp.origin)
        floor.run(1)  # warm-up
        fl = [floor.run(1) for _ in range(runs)]
        floor.close()
        agent = Ferrite(ferrite, fp.origin, cwd, expected)
        try:
            cold = agent.run()[0]  # warm-up
            f = [agent.run() for _ in range(runs)]
        finally:
            agent.close()
    td = median([x[0] for x in d])
    tfl = median(fl)
    tf = median([x[0] for x in f])
    chunks = f[-1][1]
    print(f"streaming {n} text deltas, median of {runs} runs")
    print(f"  direct HTTP read of the SSE body ({nbytes / 1e6:.2f} MB): {fmt_ms(td)}"
          f"  ({n / td:,.0f} deltas/s)")
    print(f"  ferrite prompt -> answer ({chunks} agent_message_chunk, {len(expected)} chars): "
          f"{fmt_ms(tf)}  ({n / tf:,.0f} deltas/s)")
    print(f"  ferrite's first prompt (a fresh process: HTTP client, connection): {fmt_ms(cold)}")
    print(f"  floor (client + decoder + update lines, one thread): {fmt_ms(tfl)}"
          f"  ({n / tfl:,.0f} deltas/s)")
    print(f"  overhead ferrite/direct - 1: {(tf / td - 1) * 100:.0f}%   (target < 50%)")
    print(f"  ferrite / floor: {tf / tfl:.2f}x   (goal < 1.3x)")
    print(f"  all runs direct : " + " ".join(f"{x[0] * 1000:.1f}" for x in d) + " ms")
    print(f"  all runs ferrite: " + " ".join(f"{x[0] * 1000:.1f}" for x in f) + " ms")


if __name__ == "__main__":
    main()
