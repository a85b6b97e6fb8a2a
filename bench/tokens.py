#!/usr/bin/env python3
"""What every model request costs before the conversation: system prompt + tool definitions.

    python3 bench/tokens.py                       # FERRITE_BIN, else <target>/debug/ferrite
    TOKENIZER_JSON=path/to/tokenizer.json python3 bench/tokens.py   # also a BPE count

Runs `ferrite acp` against a stub of the Messages API that records the first request of a
prompt and answers with one text block, in a fresh session (mode `default`, default tools, no
extensions), then in a workspace with 5 skills, 2 agents and hooks, trusted (`ferrite trust`; the fixture of the golden
test, crates/cli/tests/suite/request_tokens.rs). Prints, for each, the tools offered and the
fixed part's estimated tokens: the bytes of the compact JSON of `system` and `tools` / 4, rounded
up, with the workspace path and platform normalised (the rule the golden test pins). With
`TOKENIZER_JSON` (a Hugging Face `tokenizers` file, e.g. the Claude tokenizer the `anthropic`
Python SDK shipped up to 0.3x as `anthropic/tokenizer.json`; needs `pip install tokenizers`) it
also prints that tokenizer's count of the same text.
"""

import http.server
import json
import math
import os
import platform
import socketserver
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import subprocess

from acpbench import Agent, clean_env, fake_model_env, rm, target_dir, temp_home

SKILLS = [
    ("pdf", "Extract text and tables from PDF files, fill forms, merge documents. Use when working "
            "with PDF files or when the user mentions PDFs, forms or document extraction."),
    ("release-notes", "Write release notes from the git log since the last tag, grouped by kind "
                      "of change."),
    ("db-migrations", "Create and review database migrations: naming, reversible steps, locking on "
                      "large tables. Use when a change touches the schema."),
    ("api-docs", "Keep the OpenAPI description and the handler code in step; use when adding or "
                 "changing an HTTP endpoint."),
    ("frontend-tests", "Write and fix component tests with the project's testing library "
                       "conventions."),
]
AGENTS = [
    ("code-reviewer", "Reviews a diff for bugs, missing tests and style problems; use after a "
                      "change is made."),
    ("debugger", "Finds the cause of a failing test or error message by reading code and running "
                 "checks."),
]


def sse() -> bytes:
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "m", "type": "message", "role": "assistant", "model": "x", "content": [],
            "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "ok"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 1}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


class Stub:
    """A Messages API endpoint that keeps every request body."""

    def __init__(self):
        bodies = self.bodies = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("content-length", 0))
                bodies.append(json.loads(self.rfile.read(n)))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                self.wfile.write(sse())

            def do_GET(self):
                self.send_response(404)
                self.end_headers()

            def log_message(self, *_):
                pass

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"


def fixture(ws: str) -> None:
    for name, description in SKILLS:
        d = os.path.join(ws, ".claude", "skills", name)
        os.makedirs(d)
        with open(os.path.join(d, "SKILL.md"), "w") as f:
            f.write(f"---\nname: {name}\ndescription: {description}\n---\nSteps.\n")
    agents = os.path.join(ws, ".claude", "agents")
    os.makedirs(agents)
    for name, description in AGENTS:
        with open(os.path.join(agents, f"{name}.md"), "w") as f:
            f.write(f"---\nname: {name}\ndescription: {description}\n---\nYou help.\n")
    hook = [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]
    with open(os.path.join(ws, ".claude", "settings.json"), "w") as f:
        json.dump({"hooks": {"PreToolUse": hook, "PostToolUse": hook}}, f)


def first_request(ferrite: str, stub: Stub, ws: str, trust: bool) -> dict:
    home = temp_home()
    if trust:
        # The repository's hooks and agents are used once the folder is trusted.
        subprocess.run([ferrite, "trust"], cwd=ws, env=clean_env(home), check=True,
                       capture_output=True)
    agent = Agent(ferrite, home, fake_model_env(stub.origin))
    try:
        agent.initialize()
        sid = agent.request("session/new", {"cwd": ws, "mcpServers": []})["sessionId"]
        before = len(stub.bodies)
        agent.request("session/prompt",
                      {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]})
        return stub.bodies[before]
    finally:
        agent.close()
        rm(home)


def fixed_text(body: dict, ws: str) -> str:
    compact = lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    os_name = {"Linux": "linux", "Darwin": "macos", "Windows": "windows"}.get(platform.system(), "")
    arch = {"AMD64": "x86_64", "arm64": "aarch64"}.get(platform.machine(), platform.machine())
    return (compact(body["system"]) + compact(body["tools"])).replace(ws, "/workspace").replace(
        f"{os_name} {arch}", "linux x86_64")


def main():
    ferrite = os.environ.get("FERRITE_BIN") or str(target_dir() / "debug" / "ferrite")
    tokenizer = None
    if os.environ.get("TOKENIZER_JSON"):
        from tokenizers import Tokenizer
        tokenizer = Tokenizer.from_file(os.environ["TOKENIZER_JSON"])
    stub = Stub()
    counts = {}
    for label, with_fixture in (("default tools", False), ("5 skills, 2 agents, hooks", True)):
        ws = tempfile.mkdtemp(prefix="ferrite-tokens-")
        try:
            if with_fixture:
                fixture(ws)
            body = first_request(ferrite, stub, ws, with_fixture)
            text = fixed_text(body, ws)
            estimate = math.ceil(len(text.encode()) / 4)
            counts[label] = (estimate, len(tokenizer.encode(text).ids) if tokenizer else None)
            names = [t["name"] for t in body["tools"]]
            bpe = f", BPE {counts[label][1]}" if tokenizer else ""
            print(f"{label}: {len(names)} tools, {len(text.encode())} bytes, "
                  f"~{estimate} tokens (bytes/4){bpe}")
            print(f"  tools: {' '.join(names)}")
        finally:
            rm(ws)
    base, ext = counts["default tools"], counts["5 skills, 2 agents, hooks"]
    n = len(SKILLS) + len(AGENTS)
    line = f"per skill or agent: ~{(ext[0] - base[0]) / n:.1f} tokens (bytes/4)"
    if tokenizer:
        line += f", BPE {(ext[1] - base[1]) / n:.1f}"
    print(line)


if __name__ == "__main__":
    main()
