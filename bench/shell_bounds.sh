#!/usr/bin/env bash
# What one permission decision costs on the most hostile command lines Ferrite knows (issue 34:
# the policy decision of any command must take <= 50 ms and <= 50 MB, whatever its size). Each
# shape is decided in its own process (crates/policy/examples/shell_bounds.rs) in `full` mode
# with ten bash deny rules: its decision (lines beyond the bounds ask), the slowest of three
# runs, the peak memory the decision added, and the CPU time of the costliest run (on a shared
# machine the wall time says as much about the load). Each shape's process runs RUNS times
# (default 5) and the line with the median wall time is shown. The `-max` shapes hold as much as
# the bounds checked before parsing let through: the costliest lines that are parsed.
#
#   bench/shell_bounds.sh                  # debug build (slower than what ships: an upper bound)
#   PROFILE=release bench/shell_bounds.sh  # what ships
#   BIN=/path/to/shell_bounds bench/shell_bounds.sh   # an already built binary (say, an older one)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PROFILE="${PROFILE:-dev}"
RUNS="${RUNS:-5}"
if [ -z "${BIN:-}" ]; then
  cargo build --quiet --profile "$PROFILE" -p ferrite-policy --example shell_bounds
  DIR=debug
  [ "$PROFILE" = dev ] || DIR="$PROFILE"
  BIN="target/$DIR/examples/shell_bounds"
fi
echo "$BIN ($PROFILE), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), median of $RUNS runs"
for shape in $("$BIN" --list); do
  for _ in $(seq "$RUNS"); do
    "$BIN" "$shape"
  done | sort -n -k5 | sed -n "$(((RUNS + 1) / 2))p"
done
