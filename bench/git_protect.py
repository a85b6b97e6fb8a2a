#!/usr/bin/env python3
"""What keeping git's hooks and config costs a sandboxed command (docs/sandbox.md, "Git's files
are protected paths too"): in a fresh repository, `ferrite __sandbox` (Landlock) with the
workspace writable, once without and once with the protected git paths an `auto` session passes
(`.git/hooks`, `.git/config`, `.git/commondir`):

- the median time of `RUNS`=40 starts of `/bin/true` (the carve walk's cost);
- which everyday commands still work (exit code and first line of output, with the paths kept).

Uses `FERRITE_BIN`, else `./target/debug/ferrite`.
"""

import os
import subprocess
import sys
import tempfile
import time

BIN = os.environ.get("FERRITE_BIN", "target/debug/ferrite")
RUNS = int(os.environ.get("RUNS", "40"))
KEPT = [".git/hooks", ".git/config", ".git/commondir"]
COMMANDS = [
    "git status --short",
    "git log --oneline -1",
    "git add a.txt",
    "git commit -qm x",
    "git switch -c feat",
    "git config core.hooksPath x",
    "echo x > .git/hooks/pre-commit",
    "touch NOTES.md",
    "mkdir target",
    "echo x > src/new.rs",
    "echo x >> a.txt",
]


def sandboxed(repo, tmp, kept, command):
    args = [os.path.abspath(BIN), "__sandbox", "--parent", str(os.getpid()), "--tree",
            "subreaper", "--sandbox", "landlock", "--write", repo, "--write", tmp]
    for path in kept:
        args += ["--protect", os.path.join(repo, path)]
    args += ["--", "/bin/bash", "-c", command]
    return subprocess.run(args, cwd=repo, capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as top:
        repo, tmp = os.path.join(top, "r"), os.path.join(top, "tmp")
        os.makedirs(os.path.join(repo, "src"))
        os.makedirs(tmp)
        env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
                   GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
        os.environ.update(env)
        subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True)
        subprocess.run(["git", "-C", repo, "commit", "-q", "--allow-empty", "-m", "i"], check=True)
        with open(os.path.join(repo, "a.txt"), "w") as f:
            f.write("a\n")
        for label, kept in [("without", []), ("with", KEPT)]:
            times = []
            for _ in range(RUNS):
                start = time.perf_counter()
                sandboxed(repo, tmp, kept, "true")
                times.append(time.perf_counter() - start)
            times.sort()
            print(f"start of /bin/true {label} the git paths: median "
                  f"{times[len(times) // 2] * 1000:.1f} ms ({RUNS} runs)")
        for command in COMMANDS:
            r = sandboxed(repo, tmp, KEPT, command)
            first = (r.stdout + r.stderr).strip().splitlines()[:1]
            print(f"  exit {r.returncode:3}  {command:34} {first[0] if first else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
