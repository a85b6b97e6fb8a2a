#!/usr/bin/env bash
# The differential test of the bash permission parser against the shell that runs commands
# (crates/core/src/permissions/differential_tests.rs): every corpus line (twice: with every
# traced program answering 0, then 1) and FERRITE_DIFF_CASES generated commands are run by the
# real bash (`sh -c` strings by the real dash), every execve recorded and suppressed by an
# LD_PRELOAD interposer; every program executed must be one the parser found. Release mode.
# Needs bash, cc, and dash for the `sh -c` cases.
#
#   bench/shell_differential.sh                                   # 200,000 cases, seed 0xd1ff
#   FERRITE_DIFF_CASES=1000000 FERRITE_DIFF_SEED=7 bench/shell_differential.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export FERRITE_DIFF_CASES="${FERRITE_DIFF_CASES:-200000}"
exec cargo test --release -p ferrite-core --lib \
  permissions::differential_tests::the_shell_runs_only_what_the_parser_found \
  -- --exact --nocapture
