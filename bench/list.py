#!/usr/bin/env python3
"""`session/list` time over many long sessions.

    python3 bench/list.py                        # 50 sessions of 10,000 entries, 7 runs
    SESSIONS=100 ENTRIES=1000 RUNS=9 python3 bench/list.py

Writes `SESSIONS` logs of `ENTRIES` entries each (the mix of bench/load.py) into a fresh
FERRITE_HOME, then resumes half of them naming another root (`additionalDirectories`), so that
ferrite records a `directories` entry at their end, as when a client names other roots. Then, per run, one `ferrite acp` answers `initialize` and `session/list {}`
three times in a row: each list reads every log's head (up to its title) and, for the
sessions of the page (50), the note of their current roots kept beside the log; the second and
third find the files in the page cache. Reports the medians of the first and of the later lists,
and checks that the sessions with a `directories` entry report it (`NO_CHECK=1` skips that, to
time a binary from before the list reported them).
"""

import os
import time

from acpbench import Agent, binaries, fmt_ms, median, rm, temp_home
from load import make_session


def name_directories(ferrite, home: str, cwd: str, sids, extra: str) -> None:
    """Resumes each session naming `extra` as its additional root, as a client does: ferrite
    records a `directories` entry."""
    a = Agent(ferrite, home)
    try:
        a.initialize()
        for sid in sids:
            a.request("session/resume", {"sessionId": sid, "cwd": cwd, "mcpServers": [],
                                         "additionalDirectories": [extra]}, timeout=600)
            a.request("session/close", {"sessionId": sid})
        a.close()
    finally:
        a.kill()


def one_run(ferrite, home):
    a = Agent(ferrite, home)
    try:
        a.initialize()
        times, answers = [], []
        for _ in range(3):
            t = time.perf_counter()
            answers.append(a.request("session/list", {}, timeout=600))
            times.append(time.perf_counter() - t)
        a.close()
        return times, answers[-1]
    finally:
        a.kill()


def main():
    sessions = int(os.environ.get("SESSIONS", "50"))
    entries = int(os.environ.get("ENTRIES", "10000"))
    runs = int(os.environ.get("RUNS", "7"))
    ferrite, _ = binaries()
    cwd = os.path.abspath(os.environ.get("BENCH_CWD", os.getcwd()))
    extra = os.path.abspath(os.path.dirname(__file__))
    home = temp_home()
    try:
        total = 0
        with_dirs = set()
        for i in range(sessions):
            sid, _, size = make_session(home, cwd, entries)
            total += size
            if i % 2 == 0:
                with_dirs.add(sid)
        name_directories(ferrite, home, cwd, sorted(with_dirs), extra)
        res = [one_run(ferrite, home) for _ in range(runs)]
        listed = res[-1][1]["sessions"]
        reported = {s["sessionId"] for s in listed if s.get("additionalDirectories") == [extra]}
        page = {s["sessionId"] for s in listed}
        # NO_CHECK=1: a binary from before lists reported roots (for a before/after comparison).
        if os.environ.get("NO_CHECK") != "1":
            assert reported == with_dirs & page, (len(reported), len(with_dirs & page))
        first = median([r[0][0] for r in res])
        later = median([t for r in res for t in r[0][1:]])
        print(f"ferrite session/list, {sessions} sessions x {entries} entries "
              f"({total / 1e6:.0f} MB), median of {runs} runs ({ferrite})")
        print(f"  first list: {fmt_ms(first)}   later lists: {fmt_ms(later)}   "
              f"({len(page)} on the page, {len(reported)} with other roots)")
    finally:
        rm(home)


if __name__ == "__main__":
    main()
