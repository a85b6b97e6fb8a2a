#!/usr/bin/env python3
"""Requests to the client that overtake the tool call they are about (docs/acp.md, "One ordered
stream per session").

    python3 bench/ordering.py                 # 100 permission requests, 100 delegated reads
    N=500 python3 bench/ordering.py

permission  The fake provider answers every request with one `write` tool call (id c1) of a file
            in the workspace; the session is in mode `ask`, so each call asks. The client answers
            `allow_once` at once. A request counts as late when no `tool_call` for c1 arrived
            since the previous request (the call id repeats: every model request is the same
            script). When a turn ends (max_turn_requests) the next prompt starts; after N
            requests the turn is cancelled.
read        The same with a `read` tool call in mode `auto`, the client advertising
            `fs.readTextFile` and answering every `fs/read_text_file` with a short buffer.
Prints late requests per 100 for each. Target: 0.
"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from acpbench import Agent, FakeProvider, binaries, rm, temp_home

MODEL = "anthropic/claude-sonnet-4-5"


def script_file(name: str, args: dict) -> str:
    script = {"steps": [{"type": "tool_call", "id": "c1", "name": name,
                         "args_json": json.dumps(args)}]}
    fd, path = tempfile.mkstemp(prefix="ferrite-bench-script-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(script, f)
    return path


def measure(ferrite, fake, n: int, tool: str, args: dict, mode: str, method: str, answer: dict,
            fs: bool) -> tuple[int, int]:
    """(late requests, requests) over `n` requests of `method`."""
    path = script_file(tool, args)
    home = temp_home()
    cwd = tempfile.mkdtemp(prefix="ferrite-bench-ws-")
    with open(os.path.join(cwd, "main.rs"), "w") as f:
        f.write("fn main() {}\n")
    late = asked = 0
    try:
        with FakeProvider(fake, "--script", path) as fp:
            env = {"ANTHROPIC_BASE_URL": fp.origin, "ANTHROPIC_API_KEY": "x",
                   "FERRITE_MODEL": MODEL}
            a = Agent(ferrite, home, env)
            try:
                a.request("initialize", {"protocolVersion": 1, "clientCapabilities": {
                    "fs": {"readTextFile": fs, "writeTextFile": False}}})
                sid = a.request("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
                a.request("session/set_mode", {"sessionId": sid, "modeId": mode})
                announced = False
                while asked < n:
                    rid = a.send("session/prompt", {"sessionId": sid,
                                                     "prompt": [{"type": "text", "text": "go"}]})
                    while True:
                        msg = json.loads(a.read_line(30))
                        if msg.get("method") == "session/update":
                            up = msg["params"]["update"]
                            if up.get("sessionUpdate") == "tool_call" and up.get("toolCallId") == "c1":
                                announced = True
                        elif msg.get("method") == method:
                            asked += 1
                            late += 0 if announced else 1
                            announced = False
                            if asked == n:
                                a.send("session/cancel", {"sessionId": sid}, notify=True)
                            a.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                                           "result": answer}).encode() + b"\n")
                        elif msg.get("id") == rid and "method" not in msg:
                            break
                a.close()
            finally:
                a.kill()
    finally:
        rm(home)
        rm(cwd)
        os.unlink(path)
    return late, asked


def main():
    n = int(os.environ.get("N", "100"))
    ferrite, fake = binaries()
    late, asked = measure(ferrite, fake, n, "write", {"path": "out.txt", "content": "x\n"}, "ask",
                          "session/request_permission",
                          {"outcome": {"outcome": "selected", "optionId": "allow_once"}}, False)
    print(f"session/request_permission before its tool_call: {late} of {asked} "
          f"({100 * late / asked:.0f} per 100)   (target 0)")
    late, asked = measure(ferrite, fake, n, "read", {"path": "main.rs"}, "auto",
                          "fs/read_text_file", {"content": "fn unsaved() {}\n"}, True)
    print(f"fs/read_text_file before its tool_call:          {late} of {asked} "
          f"({100 * late / asked:.0f} per 100)   (target 0)")


if __name__ == "__main__":
    main()
