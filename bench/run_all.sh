#!/usr/bin/env bash
# Builds the release binaries once, then runs every ACP benchmark in bench/.
#
#   bench/run_all.sh                       # target dir: $CARGO_TARGET_DIR or ./target
#   CARGO_TARGET_DIR=/tmp/t bench/run_all.sh
#   FERRITE_BIN=... FAKE_PROVIDER_BIN=... bench/run_all.sh   # skip the build, use these
#
# bench/grep_find.sh (the search tools against rg) is separate: run it on its own.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
PY="${PYTHON:-python3}"

if [[ -z "${FERRITE_BIN:-}" || -z "${FAKE_PROVIDER_BIN:-}" ]]; then
  (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --release -p ferrite -p ferrite-test-support)
  export FERRITE_BIN="$TARGET/release/ferrite"
  export FAKE_PROVIDER_BIN="$TARGET/release/fake-provider"
fi
export BENCH_NO_BUILD=1

echo "# $(date -u +%Y-%m-%dT%H:%MZ)  nproc=$(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# ferrite: $FERRITE_BIN"
for b in startup load list subagent stream stream_latency cancel ordering sessions turn_overhead request_build mcp_start; do
  echo
  "$PY" "$ROOT/bench/$b.py"
done
