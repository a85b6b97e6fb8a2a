#!/usr/bin/env python3
"""What checkpoints cost on a 10,000-file workspace, and how long `/undo` takes.

    python3 bench/checkpoints.py            # FILES=10000, RUNS=5
    FILES=2000 RUNS=3 python3 bench/checkpoints.py

The workspace: FILES files of 1-4 KiB (distinct random bytes, base64 text) in directories of
100, plus a `.gitignore`d `target/` of 100 files that no snapshot may copy. The fake provider
answers every request with one `bash` call; `max_turn_requests = 1` ends the turn right after the
command, so a turn is exactly: one model request, one command, the checkpoint work. Mode `full`
(commands run unsandboxed: no sandbox start-up noise), so before the command the whole workspace
is snapshotted.

Each run uses a fresh FERRITE_HOME and one ferrite process and times, prompt → answer:
  off     a turn with `checkpoints.max_count = 0` (no checkpoint work at all), the baseline;
  first   the first turn with checkpoints: every file hashed and copied into the store;
  second  the next turn: the index lets unchanged files cost one lstat, nothing is re-copied;
  noop    a turn whose command changes nothing (the checkpoint is dropped);
  undo    `/undo` of the second turn (one file restored, no model call).
The command of `first`/`second` appends a line to one file. Disk: the bytes the store takes
(allocated blocks, `du`-style) after `first` and after `second`. Reports medians of RUNS.
"""

import base64
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from acpbench import Agent, FakeProvider, binaries, fmt_ms, median, rm, temp_home

MODEL = "anthropic/claude-sonnet-4-5"
FILES = int(os.environ.get("FILES", "10000"))
RUNS = int(os.environ.get("RUNS", "5"))


def make_workspace(n: int) -> tuple[str, int]:
    ws = tempfile.mkdtemp(prefix="ferrite-bench-ws-")
    total = 0
    for i in range(n):
        d = os.path.join(ws, f"d{i // 100:03}")
        os.makedirs(d, exist_ok=True)
        body = base64.b64encode(os.urandom(768 + (i % 4) * 768)) + b"\n"
        with open(os.path.join(d, f"f{i % 100:03}.txt"), "wb") as f:
            f.write(body)
        total += len(body)
    os.makedirs(os.path.join(ws, "target"))
    for i in range(100):
        with open(os.path.join(ws, "target", f"obj{i}.o"), "wb") as f:
            f.write(os.urandom(4096))
    with open(os.path.join(ws, ".gitignore"), "w") as f:
        f.write("target/\n")
    return ws, total


def script_file(command: str) -> str:
    script = {"steps": [{"type": "tool_call", "id": "c1", "name": "bash",
                         "args_json": json.dumps({"command": command})}]}
    fd, path = tempfile.mkstemp(prefix="ferrite-bench-script-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(script, f)
    return path


def disk(path: str) -> int:
    total = 0
    for d, _, fs in os.walk(path):
        for f in fs:
            total += os.lstat(os.path.join(d, f)).st_blocks * 512
    return total


def prompt(a: Agent, sid: str, text: str) -> float:
    t = time.perf_counter()
    a.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]},
              timeout=600)
    return time.perf_counter() - t


def one_run(ferrite, origin, ws) -> dict:
    home = temp_home()
    try:
        cfg = os.path.join(home, "config.toml")
        env = {"ANTHROPIC_BASE_URL": origin, "ANTHROPIC_API_KEY": "x", "FERRITE_MODEL": MODEL}
        a = Agent(ferrite, home, env)
        try:
            a.initialize()
            # Config is read at each turn, so one process serves both settings.
            with open(cfg, "w") as f:
                f.write("max_turn_requests = 1\n[checkpoints]\nmax_count = 0\n")
            sid = a.request("session/new", {"cwd": ws, "mcpServers": []})["sessionId"]
            a.request("session/set_mode", {"sessionId": sid, "modeId": "full"})
            out = {"off": prompt(a, sid, "go")}
            with open(cfg, "w") as f:
                f.write("max_turn_requests = 1\n")
            store = os.path.join(home, "checkpoints", sid)
            out["first"] = prompt(a, sid, "go")
            out["disk_first"] = disk(store)
            out["second"] = prompt(a, sid, "go")
            out["disk_second"] = disk(store)
            out["undo"] = prompt(a, sid, "/undo")
            a.close()
        finally:
            a.kill()
        return out
    finally:
        rm(home)


def noop_run(ferrite, fake, ws) -> float:
    """A snapshot whose turn changes nothing, after a first snapshot filled the index."""
    path = script_file("true")
    home = temp_home()
    try:
        with FakeProvider(fake, "--script", path) as fp:
            with open(os.path.join(home, "config.toml"), "w") as f:
                f.write("max_turn_requests = 1\n")
            env = {"ANTHROPIC_BASE_URL": fp.origin, "ANTHROPIC_API_KEY": "x",
                   "FERRITE_MODEL": MODEL}
            a = Agent(ferrite, home, env)
            try:
                a.initialize()
                sid = a.request("session/new", {"cwd": ws, "mcpServers": []})["sessionId"]
                a.request("session/set_mode", {"sessionId": sid, "modeId": "full"})
                prompt(a, sid, "go")  # fills the index
                t = prompt(a, sid, "go")
                left = os.path.join(home, "checkpoints", sid, "manifests")
                assert not os.path.isdir(left) or not os.listdir(left), "a no-op left a checkpoint"
                a.close()
            finally:
                a.kill()
        return t
    finally:
        rm(home)
        os.unlink(path)


def main():
    ferrite, fake = binaries()
    ws, total = make_workspace(FILES)
    path = script_file("echo $RANDOM >> d000/f000.txt")
    runs = []
    noops = []
    try:
        with FakeProvider(fake, "--script", path) as fp:
            one_run(ferrite, fp.origin, ws)  # warm-up (page cache), not counted
            for _ in range(RUNS):
                runs.append(one_run(ferrite, fp.origin, ws))
        for _ in range(RUNS):
            noops.append(noop_run(ferrite, fake, ws))
    finally:
        rm(ws)
        os.unlink(path)
    m = {k: median([r[k] for r in runs]) for k in runs[0]}
    print(f"workspace: {FILES} files, {total / 2**20:.1f} MiB (+100 ignored), median of {RUNS}")
    print(f"turn, checkpoints off        {fmt_ms(m['off'])}")
    print(f"turn, first snapshot         {fmt_ms(m['first'])}  (+{fmt_ms(m['first'] - m['off'])})")
    print(f"turn, second snapshot        {fmt_ms(m['second'])}  (+{fmt_ms(m['second'] - m['off'])})")
    print(f"turn that changes nothing    {fmt_ms(median(noops))}  (+{fmt_ms(median(noops) - m['off'])})")
    print(f"/undo (1 file)               {fmt_ms(m['undo'])}")
    print(f"store on disk after first    {m['disk_first'] / 2**20:.1f} MiB")
    print(f"store on disk after second   {m['disk_second'] / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
