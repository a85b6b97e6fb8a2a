#!/usr/bin/env python3
"""What a `task` call costs Ferrite itself, apart from the model.

    python3 bench/subagent.py                 # STEPS=3 tool calls in the subagent, RUNS=15
    STEPS=0 python3 bench/subagent.py         # a `task` that does nothing against a plain turn
    FERRITE_BIN=... OLD_BIN=... python3 bench/subagent.py   # two binaries, interleaved

One agent, one session (mode `auto`), in a workspace of a few files. Each run queues, through
`POST /_fake/push` of `fake-provider`, the answers of one prompt: the parent calls `task`; the
subagent calls `ls` `STEPS` times, one response each, then answers; the parent answers. Every
model answer is sent at once, so prompt -> answer is Ferrite's own work: the subagent's
session (a log of its own since issue 27: created, written, synced), its requests, its tool
calls and the parent's. The same prompt without `task` (the parent calls `ls` `STEPS` times
itself) is the baseline, so the difference is what the subagent adds. Medians of `RUNS`, after
one warm-up; with `OLD_BIN` the two binaries alternate run by run.

"Ferrite's own" takes out the fake provider's own time, which a real model replaces with its
latency: for each model request of the prompt (`GET /_fake/timings`, wall clock), the time
from its body's last byte arriving to its answer's last byte leaving (parsing the request,
writing the answer). What stays is Ferrite's: the turn, the child session, building and
sending each request, reading each answer, the logs and their syncs. A `task` that does
nothing makes two more model requests than a plain turn (the child's answer, and the parent's
after the result), and Ferrite's part of those is counted.
"""

import json
import os
import time
import urllib.request

from acpbench import Agent, FakeProvider, binaries, fake_model_env, fmt_ms, median, rm, temp_home

STEPS = int(os.environ.get("STEPS", "3"))
RUNS = int(os.environ.get("RUNS", "15"))
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def push(origin, steps):
    body = json.dumps({"steps": steps}).encode()
    req = urllib.request.Request(f"{origin}/_fake/push", data=body, method="POST",
                                 headers={"content-type": "application/json"})
    with NO_PROXY.open(req, timeout=10) as r:
        r.read()


def call(cid, name, args):
    return {"type": "tool_call", "id": cid, "name": name, "args_json": json.dumps(args)}


def text(t):
    return [{"type": "text", "text": t}, {"type": "usage", "input": 100, "output": 5,
                                          "cached": 0}]


def queue(origin, run, with_task):
    if with_task:
        push(origin, [call(f"t{run}", "task", {"description": "look", "prompt": "List it."})])
    for i in range(STEPS):
        push(origin, [call(f"s{run}-{i}", "ls", {})])
    if with_task:
        push(origin, text("the subagent's answer"))
    push(origin, text("done"))


def provider_time(origin, since_ns):
    """The fake provider's own time (request body in -> answer out) over the model requests
    that arrived since `since_ns`, in seconds."""
    with NO_PROXY.open(f"{origin}/_fake/timings", timeout=10) as r:
        timings = json.loads(r.read())
    return sum((t["reply_end_ns"] - t["request_end_ns"]) / 1e9 for t in timings
               if t["request_start_ns"] >= since_ns and t.get("reply_end_ns"))


class Rig:
    def __init__(self, ferrite, origin, cwd):
        self.home = temp_home()
        self.agent = Agent(ferrite, self.home, fake_model_env(origin))
        self.agent.initialize()
        self.sid = self.agent.request("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        self.agent.request("session/set_mode", {"sessionId": self.sid, "modeId": "auto"})
        self.origin = origin
        self.runs = 0

    def prompt(self, with_task):
        """(prompt -> answer, the provider's own time within it), in seconds."""
        self.runs += 1
        queue(self.origin, self.runs, with_task)
        since = time.time_ns()
        t = time.perf_counter()
        rid = self.agent.send("session/prompt", {"sessionId": self.sid,
                                                 "prompt": [{"type": "text", "text": "go"}]})
        self.agent.wait_response(rid, timeout=120)
        took = time.perf_counter() - t
        return took, provider_time(self.origin, since)

    def close(self):
        try:
            self.agent.close()
        finally:
            self.agent.kill()
            rm(self.home)


def main():
    ferrite, fake = binaries()
    old = os.environ.get("OLD_BIN")
    cwd = temp_home()
    for i in range(5):
        with open(os.path.join(cwd, f"f{i}.txt"), "w") as f:
            f.write("x\n")
    names = {"new": ferrite} | ({"old": old} if old else {})
    times = {(n, t): [] for n in names for t in (True, False)}
    own = {(n, t): [] for n in names for t in (True, False)}
    try:
        with FakeProvider(fake, "--text-deltas", "1") as provider:
            rigs = {n: Rig(b, provider.origin, cwd) for n, b in names.items()}
            try:
                for run in range(RUNS + 1):
                    for n, rig in rigs.items():
                        for with_task in (True, False):
                            took, provider = rig.prompt(with_task)
                            if run:  # the first is a warm-up
                                times[(n, with_task)].append(took)
                                own[(n, with_task)].append(took - provider)
            finally:
                for rig in rigs.values():
                    rig.close()
    finally:
        rm(cwd)
    print(f"ferrite prompt -> answer, {STEPS} `ls` calls, model answers at once, "
          f"median of {RUNS} runs")
    for n, b in names.items():
        task = median(times[(n, True)])
        plain = median(times[(n, False)])
        print(f"  {n:>4} ({b}): with `task` {fmt_ms(task)}, without {fmt_ms(plain)}, "
              f"the subagent adds {fmt_ms(task - plain)}")
        task, plain = median(own[(n, True)]), median(own[(n, False)])
        print(f"  {n:>4} Ferrite's own (the provider's time taken out): with `task` "
              f"{fmt_ms(task)}, without {fmt_ms(plain)}, the subagent adds {fmt_ms(task - plain)}")


if __name__ == "__main__":
    main()
