#!/usr/bin/env python3
"""Startup, memory and shutdown of `ferrite acp`.

    python3 bench/startup.py            # N=20 runs
    N=50 python3 bench/startup.py

Per run, with FERRITE_HOME set to a fresh temporary directory and a clean environment (no
provider keys; a keyless default model, FERRITE_MODEL=ollama/bench, since with no usable model
at all session/new answers -32000). Two scenarios, each N runs:
  plain    model discovery on (it asks the local Ollama address after session/new)
  silent   plus a configured provider whose server accepts connections and never answers
           (discovery waits on it in the background; session/new must not)
  init     spawn -> the `initialize` answer (initialize is written right after spawn)
  new      spawn -> the `session/new` answer (session/new sent once initialize was answered,
           absolute existing cwd, "mcpServers": [])
  rss      VmRSS of ferrite right after the session/new answer
  exit     stdin closed (EOF) -> process exited
Reports median and p90 of each. Targets: init < 5 ms, RSS < 15 MB, exit < 50 ms after EOF.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import socket
import time

from acpbench import Agent, binaries, fmt_ms, median, p90, rm, temp_home


MODEL_ENV = {"FERRITE_MODEL": "ollama/bench"}


def one_run(ferrite, cwd, silent_port=None):
    home = temp_home()
    try:
        if silent_port is not None:
            with open(os.path.join(home, "config.toml"), "w") as f:
                f.write('[providers.silent]\napi = "openai-chat"\n'
                        f'base_url = "http://127.0.0.1:{silent_port}/v1"\n')
        a = Agent(ferrite, home, MODEL_ENV)
        try:
            a.initialize()
            t_init = time.perf_counter() - a.t_spawn
            res = a.request("session/new", {"cwd": cwd, "mcpServers": []})
            t_new = time.perf_counter() - a.t_spawn
            assert "sessionId" in res, res
            rss = a.rss_kb("VmRSS")
            t_exit = a.close()
            assert a.proc.returncode == 0, f"exit status {a.proc.returncode}"
            return t_init, t_new, rss, t_exit
        finally:
            a.kill()
    finally:
        rm(home)


def main():
    n = int(os.environ.get("N", "20"))
    ferrite, _ = binaries()
    cwd = os.path.abspath(os.environ.get("BENCH_CWD", os.getcwd()))
    # Accepts connections (the kernel completes the handshake) and never answers.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1024)
    port = silent.getsockname()[1]
    for name, silent_port in (("plain", None), ("silent", port)):
        one_run(ferrite, cwd, silent_port)  # warm the page cache; not counted
        rows = [one_run(ferrite, cwd, silent_port) for _ in range(n)]
        report(f"{name}, {n} runs ({ferrite})", rows)
    silent.close()


def report(title, rows):
    init, new, rss, ex = (list(c) for c in zip(*rows))
    print(f"ferrite startup: {title}")
    print(f"  spawn -> initialize answer : median {fmt_ms(median(init))}  p90 {fmt_ms(p90(init))}"
          f"   (target < 5 ms)")
    print(f"  spawn -> session/new answer: median {fmt_ms(median(new))}  p90 {fmt_ms(p90(new))}")
    print(f"  VmRSS after session/new    : median {median(rss) / 1024:.1f} MiB  "
          f"p90 {p90(rss) / 1024:.1f} MiB   (target < 15 MB)")
    print(f"  EOF -> exit                : median {fmt_ms(median(ex))}  p90 {fmt_ms(p90(ex))}"
          f"   (target < 50 ms)")


if __name__ == "__main__":
    main()
