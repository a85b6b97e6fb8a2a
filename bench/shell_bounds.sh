#!/usr/bin/env bash
# What one permission decision costs on the most hostile command lines Ferrite knows (issue 34:
# the policy decision of any command must take <= 50 ms and <= 50 MB, whatever its size). Each
# shape is decided in its own process (crates/policy/examples/shell_bounds.rs) in `full` mode
# with ten bash deny rules: its decision (lines beyond the bounds ask), the slowest of three
# runs, and the peak memory the decision added.
#
#   bench/shell_bounds.sh                  # debug build (slower than what ships: an upper bound)
#   PROFILE=release bench/shell_bounds.sh  # what ships
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PROFILE="${PROFILE:-dev}"
cargo build --quiet --profile "$PROFILE" -p ferrite-policy --example shell_bounds
DIR=debug
[ "$PROFILE" = dev ] || DIR="$PROFILE"
BIN="target/$DIR/examples/shell_bounds"
echo "profile $PROFILE, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for shape in $("$BIN" --list); do
  "$BIN" "$shape"
done
