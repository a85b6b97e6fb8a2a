#!/usr/bin/env python3
"""Building one model request from a long session, in process (no HTTP, no turn).

    python3 bench/request_build.py            # SIZES="1000 10000", RUNS=50

Per size, a session log of that many entries is generated (the mix of `bench/load.py`) and
`examples/request_build` of the cli crate (REQUEST_BUILD_BIN, else built in release) loads it
and builds the request of a prompt RUNS times: the history rebuilt as model messages
(`messages`), then serialized as each API's body (`serialize`). Prints the medians and, for
each API, the total per MB of body: the part of `bench/turn_overhead.py`'s growth per MB that
is building the request (the rest is the turn's setup and the send), without the noise of
three processes on a small machine.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from acpbench import rm, temp_home
from load import make_session

SIZES = [int(s) for s in os.environ.get("SIZES", "1000 10000").split()]
RUNS = int(os.environ.get("RUNS", "50"))


def build_bin() -> str:
    path = os.environ.get("REQUEST_BUILD_BIN")
    if path:
        return path
    from acpbench import ROOT, target_dir
    path = str(target_dir() / "release" / "examples" / "request_build")
    if not os.path.isfile(path) or not os.environ.get("BENCH_NO_BUILD"):
        subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "ferrite", "--example",
                        "request_build"], cwd=ROOT, check=True)
    return path


def main():
    binary = build_bin()
    print(f"runs: {RUNS}, load average {os.getloadavg()[0]:.1f}")
    print(f"{'entries':>8} {'api':>17} {'body':>8} {'messages':>9} {'serialize':>10} "
          f"{'total':>8} {'per MB':>8}")
    for n in SIZES:
        home = temp_home()
        try:
            sid, _, _ = make_session(home, home, n)
            out = subprocess.run([binary, home, sid, str(RUNS)], capture_output=True, text=True,
                                 check=True).stdout
            values = dict(line.split() for line in out.splitlines())
            for api in ("anthropic", "openai-responses", "openai-chat"):
                size = int(values[f"{api}.body_bytes"]) / 1e6
                total = float(values[f"{api}.total_ms"])
                print(f"{n:>8} {api:>17} {size:>6.2f}MB {float(values[f'{api}.messages_ms']):>7.2f}ms "
                      f"{float(values[f'{api}.serialize_ms']):>8.2f}ms {total:>6.2f}ms "
                      f"{total / size:>6.2f}ms")
        finally:
            rm(home)


if __name__ == "__main__":
    main()
