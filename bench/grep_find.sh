#!/usr/bin/env bash
# Times ferrite's in-process `grep` and `find` tools against the `rg` binary on the same
# deterministic 50,000-file tree (some .gitignored directories, a few binary files).
#
#   bench/grep_find.sh            # builds the `search` example in release, generates, times
#   RUNS=9 FILES=20000 bench/grep_find.sh
#
# Prints the median of RUNS runs for each command and ferrite's time as a multiple of rg's.
# The tree is a git repository (not committed) so rg honours .gitignore exactly as ferrite does.
set -euo pipefail

RUNS="${RUNS:-5}"
FILES="${FILES:-50000}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

if ! command -v rg >/dev/null; then
  echo "rg not found; install it with: apt-get install -y ripgrep" >&2
  exit 1
fi

(cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --quiet --release -p ferrite-core --example search)
SEARCH="$TARGET/release/examples/search"

# BENCH_TREE=dir reuses (or creates and keeps) a tree between runs while tuning.
if [[ -n "${BENCH_TREE:-}" ]]; then
  TREE="$BENCH_TREE"
else
  TREE="$(mktemp -d "${TMPDIR:-/tmp}/ferrite-bench.XXXXXX")"
  trap 'rm -rf "$TREE"' EXIT
fi

[[ -f "$TREE/.gitignore" ]] || python3 - "$TREE" "$FILES" <<'PY'
import os, random, sys

root, total = sys.argv[1], int(sys.argv[2])
rng = random.Random(42)
words = ("let mut value = compute(input); return result; fn process(items: &[Item]) -> Vec<Out> "
         "struct Config { name: String } impl Display for Thing match token { Some(x) => x } "
         "error warning TODO: handle this case // comment about the code path").split()

def text(n_lines, needle):
    out = []
    for i in range(n_lines):
        line = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
        if needle and i == n_lines // 2:
            line += "  // NEEDLE_MARKER here"
        out.append(("    " * rng.randint(0, 3)) + line)
    return "\n".join(out) + "\n"

# 10% of the files live in ignored directories, as build output and dependencies do.
ignored = total // 10
visible = total - ignored
exts = [".rs", ".ts", ".py", ".md", ".txt", ".json"]
made = 0
for i in range(visible):
    d = os.path.join(root, f"pkg{i % 40:02d}", f"mod{(i // 40) % 25:02d}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"file{i:05d}{exts[i % len(exts)]}")
    with open(path, "w") as f:
        f.write(text(rng.randint(10, 80), needle=(i % 97 == 0)))
    made += 1
for i in range(ignored):
    top = "target" if i % 2 else "node_modules"
    d = os.path.join(root, top, f"gen{i % 50:02d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"out{i:05d}.rs"), "w") as f:
        f.write(text(rng.randint(10, 40), needle=(i % 13 == 0)))
# A few binary files, some containing the needle after a NUL byte.
for i in range(20):
    with open(os.path.join(root, f"pkg{i:02d}", f"blob{i}.bin"), "wb") as f:
        f.write(b"\x00\x01\x02" * 100 + b"NEEDLE_MARKER" + bytes(rng.randrange(256) for _ in range(2000)))
with open(os.path.join(root, ".gitignore"), "w") as f:
    f.write("target/\nnode_modules/\n")
PY
[[ -d "$TREE/.git" ]] || git -C "$TREE" init -q

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Runs "$@" once to warm the page cache, then RUNS times; prints the median wall time in ms.
time_ms() {
  "$@" >/dev/null
  for _ in $(seq "$RUNS"); do
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null
    end=$(date +%s%N)
    echo $(((end - start) / 1000000))
  done | median
}

cd "$TREE"
report() {
  local name=$1 ferrite_ms=$2 rg_ms=$3
  awk -v n="$name" -v f="$ferrite_ms" -v r="$rg_ms" \
    'BEGIN { printf "%-28s ferrite %6d ms   rg %6d ms   ratio %.2fx\n", n, f, r, (r > 0 ? f / r : 0) }'
}

echo "tree: $FILES files ($(find . -type f -not -path './.git/*' | wc -l) on disk), runs: $RUNS, cpus: $(nproc)"
# Sanity: both see the same matches and files.
ferrite_hits=$("$SEARCH" grep '{"pattern": "NEEDLE_MARKER", "limit": 1000000}' | grep -c ':[0-9]*:' || true)
rg_hits=$(rg -n NEEDLE_MARKER . | wc -l)
ferrite_files=$("$SEARCH" find '{"pattern": "*.rs", "limit": 1000000}' | grep -c '\.rs$' || true)
rg_files=$(rg --files -g '*.rs' . | wc -l)
echo "matches: ferrite $ferrite_hits, rg $rg_hits; .rs files: ferrite $ferrite_files, rg $rg_files"

# ferrite runs with the tool's default limits (200 matches / 1,000 paths shown, all counted); rg
# prints everything to /dev/null.
report "grep literal (rare)" \
  "$(time_ms "$SEARCH" grep '{"pattern": "NEEDLE_MARKER"}')" \
  "$(time_ms rg -n NEEDLE_MARKER .)"
report "grep regex (common)" \
  "$(time_ms "$SEARCH" grep '{"pattern": "fn \\w+\\("}')" \
  "$(time_ms rg -n 'fn \w+\(' .)"
report "grep -i, glob *.rs" \
  "$(time_ms "$SEARCH" grep '{"pattern": "todo: handle", "ignore_case": true, "glob": "*.rs"}')" \
  "$(time_ms rg -n -i -g '*.rs' 'todo: handle' .)"
report "find *.rs" \
  "$(time_ms "$SEARCH" find '{"pattern": "*.rs"}')" \
  "$(time_ms rg --files -g '*.rs' .)"
