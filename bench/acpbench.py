"""Shared helpers for the Python benchmarks in bench/ (stdlib only, Python 3.11).

- `binaries()` finds `ferrite` and `fake-provider`: from FERRITE_BIN / FAKE_PROVIDER_BIN, else it
  runs `cargo build --release -p ferrite -p ferrite-test-support` (honouring CARGO_TARGET_DIR,
  default `<repo>/target`) once and uses `<target>/release/...`. BENCH_NO_BUILD=1 skips the build
  and expects the binaries to be there already (bench/run_all.sh builds once, then sets it).
- `Agent` spawns `ferrite acp` with a clean environment and reads its stdout line by line with
  raw `os.read` (no Python-level buffering in the timed path).
- `median` / `p90` / `fmt_ms` for reporting.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_built = False


def target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")


def build() -> None:
    global _built
    if _built or os.environ.get("BENCH_NO_BUILD") == "1":
        return
    subprocess.run(
        ["cargo", "build", "--quiet", "--release", "-p", "ferrite", "-p", "ferrite-test-support"],
        cwd=ROOT,
        check=True,
    )
    _built = True


def binaries() -> tuple[Path, Path]:
    """(ferrite, fake-provider)."""
    ferrite = os.environ.get("FERRITE_BIN")
    fake = os.environ.get("FAKE_PROVIDER_BIN")
    if not (ferrite and fake):
        build()
    ferrite_p = Path(ferrite) if ferrite else target_dir() / "release" / "ferrite"
    fake_p = Path(fake) if fake else target_dir() / "release" / "fake-provider"
    for p in (ferrite_p, fake_p):
        if not p.is_file():
            sys.exit(f"missing binary {p}; build it or set FERRITE_BIN / FAKE_PROVIDER_BIN")
    return ferrite_p, fake_p


def clean_env(home: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Only what a process needs: no provider keys, no FERRITE_* from the caller."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "FERRITE_HOME": home,
        "LANG": "C.UTF-8",
    }
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    env.update(extra or {})
    return env


def fake_model_env(origin: str) -> dict[str, str]:
    """The environment that makes ferrite's model the fake provider at `origin`, with model
    discovery off (it would contact the local Ollama address)."""
    return {
        "ANTHROPIC_BASE_URL": origin,
        "ANTHROPIC_API_KEY": "x",
        "FERRITE_MODEL": "anthropic/claude-sonnet-4-5",
        "FERRITE_DISCOVERY": "off",
    }


class Timeout(Exception):
    pass


class Agent:
    """`ferrite acp` as a child process, talking JSON-RPC lines."""

    def __init__(self, ferrite: Path, home: str, extra_env: dict[str, str] | None = None,
                 stderr=subprocess.DEVNULL):
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(
            [str(ferrite), "acp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=clean_env(home, extra_env),
            bufsize=0,
        )
        self.fd = self.proc.stdout.fileno()
        self.buf = bytearray()
        self.next_id = 1
        self.eof = False

    # -- writing ---------------------------------------------------------------------------
    def send(self, method: str, params: dict, notify: bool = False) -> int | None:
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        rid = None
        if not notify:
            rid = self.next_id
            self.next_id += 1
            msg["id"] = rid
        self.proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
        return rid

    # -- reading ---------------------------------------------------------------------------
    def read_line(self, timeout: float = 60.0) -> bytes:
        """One raw line (without the newline). Raises Timeout / EOFError."""
        deadline = time.perf_counter() + timeout
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[: i + 1]
                return line
            if self.eof:
                raise EOFError("ferrite closed stdout")
            left = deadline - time.perf_counter()
            if left <= 0:
                raise Timeout()
            r, _, _ = select.select([self.fd], [], [], left)
            if not r:
                raise Timeout()
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                self.eof = True
            self.buf += chunk

    def wait_response(self, rid: int, timeout: float = 60.0, on_line=None) -> dict:
        """Reads until the answer to `rid`; every other line goes to `on_line(raw)` (if given).

        Lines that are session/update notifications are recognised by a byte prefix test and are
        not parsed here (the caller parses them after timing if it needs them)."""
        deadline = time.perf_counter() + timeout
        while True:
            line = self.read_line(max(0.0, deadline - time.perf_counter()))
            if b'"method":"session/update"' in line[:80]:
                if on_line:
                    on_line(line)
                continue
            msg = json.loads(line)
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"request {rid} failed: {msg['error']}")
                return msg["result"]
            if on_line:
                on_line(line)

    def request(self, method: str, params: dict, timeout: float = 60.0, on_line=None) -> dict:
        rid = self.send(method, params)
        return self.wait_response(rid, timeout, on_line)

    def initialize(self) -> dict:
        return self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})

    def rss_kb(self, field: str = "VmRSS") -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise RuntimeError(f"{field} not found")

    def close(self, timeout: float = 10.0) -> float:
        """Closes stdin; returns seconds until the process exited. Drains stdout meanwhile."""
        t = time.perf_counter()
        self.proc.stdin.close()
        deadline = t + timeout
        while not self.eof:
            try:
                self.read_line(max(0.0, deadline - time.perf_counter()))
            except EOFError:
                break
            except Timeout:
                break
        self.proc.wait(timeout=max(0.1, deadline - time.perf_counter()))
        return time.perf_counter() - t

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class FakeProvider:
    """`fake-provider` child; `origin` is the URL it printed."""

    def __init__(self, fake: Path, *args: str):
        self.proc = subprocess.Popen([str(fake), *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.origin = self.proc.stdout.readline().strip()
        if not self.origin.startswith("http://"):
            self.stop()
            sys.exit(f"fake-provider did not print its origin (got {self.origin!r})")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def temp_home() -> str:
    return tempfile.mkdtemp(prefix="ferrite-bench-")


def rm(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def median(xs):
    return statistics.median(xs)


def p90(xs):
    s = sorted(xs)
    # nearest-rank p90
    k = max(0, -(-len(s) * 9 // 10) - 1)
    return s[k]


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"
