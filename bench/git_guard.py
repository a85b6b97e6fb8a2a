#!/usr/bin/env python3
"""What guarding git's hooks and config costs a command (docs/sandbox.md, "What git runs is put
back after a command"): below `full`, Ferrite reads a repository's hooks folder, config and
`.git` folder before each command and again after it.

    python3 bench/git_guard.py            # RUNS=30

Two agents, each with one session in mode `auto`: one in a fresh `git init` repository (git's
sample hooks: 14 files), one in the same files without `.git`. Each prompt: the model calls
`bash` with `true`, then answers; every model answer is queued with `POST /_fake/push` and sent at
once, so prompt -> answer is Ferrite's own work (the sandboxed command included). The two agents
alternate prompt by prompt; medians of `RUNS` after one warm-up. Uses `FERRITE_BIN` and
`FAKE_PROVIDER_BIN`, else builds and uses the release binaries (`acpbench.binaries`).
"""

import os
import subprocess
import time

from acpbench import Agent, FakeProvider, binaries, fake_model_env, fmt_ms, median, rm, temp_home
from subagent import call, push, text

RUNS = int(os.environ.get("RUNS", "30"))


class Rig:
    def __init__(self, ferrite, origin, cwd):
        self.home = temp_home()
        self.agent = Agent(ferrite, self.home, fake_model_env(origin))
        self.agent.initialize()
        self.sid = self.agent.request("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        self.agent.request("session/set_mode", {"sessionId": self.sid, "modeId": "auto"})
        self.origin = origin
        self.runs = 0

    def prompt(self):
        self.runs += 1
        push(self.origin, [call(f"b{self.runs}", "bash", {"command": "true"})])
        push(self.origin, text("done"))
        t = time.perf_counter()
        rid = self.agent.send("session/prompt", {"sessionId": self.sid,
                                                 "prompt": [{"type": "text", "text": "go"}]})
        self.agent.wait_response(rid, timeout=120)
        return time.perf_counter() - t

    def close(self):
        try:
            self.agent.close()
        finally:
            self.agent.kill()
            rm(self.home)


def workspace(git):
    cwd = temp_home()
    for i in range(5):
        with open(os.path.join(cwd, f"f{i}.txt"), "w") as f:
            f.write("x\n")
    if git:
        subprocess.run(["git", "init", "-q", cwd], check=True)
    return cwd


def main():
    ferrite, fake = binaries()
    dirs = {"repository": workspace(True), "plain folder": workspace(False)}
    times = {name: [] for name in dirs}
    try:
        with FakeProvider(fake, "--text-deltas", "1") as provider:
            rigs = {name: Rig(ferrite, provider.origin, cwd) for name, cwd in dirs.items()}
            try:
                for run in range(RUNS + 1):
                    for name, rig in rigs.items():
                        took = rig.prompt()
                        if run:  # the first is a warm-up
                            times[name].append(took)
            finally:
                for rig in rigs.values():
                    rig.close()
    finally:
        for cwd in dirs.values():
            rm(cwd)
    print(f"ferrite prompt -> answer, one `bash true` call in auto mode, median of {RUNS} runs")
    for name in dirs:
        print(f"  {name:>12}: {fmt_ms(median(times[name]))}")
    print(f"  the guard adds {fmt_ms(median(times['repository']) - median(times['plain folder']))}")


if __name__ == "__main__":
    main()
