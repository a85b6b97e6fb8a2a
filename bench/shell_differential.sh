#!/usr/bin/env bash
# The differential test of the bash permission parser against the shell that runs commands
# (crates/policy/src/permissions/differential_tests.rs): every corpus line (twice: with every
# traced program answering 0, then 1) and FERRITE_DIFF_CASES generated commands (nested
# `bash -c` / `sh -c`, here-documents with line continuations, every wrapper Ferrite follows
# with its options in clusters, abbreviations and `--opt=value`) are run by the real bash
# (`sh -c` strings by the real dash), every exec recorded and suppressed by an LD_PRELOAD
# interposer; the wrappers themselves run for real where Landlock confines writes. Every
# program executed must be one the parser found. Needs bash, cc, and dash for `sh -c`.
#
#   bench/shell_differential.sh                                   # 1,000,000 cases, seed 0xd1ff
#   FERRITE_DIFF_CASES=200000 FERRITE_DIFF_SEED=7 bench/shell_differential.sh
#   PROFILE=release bench/shell_differential.sh                   # faster parsing
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export FERRITE_DIFF_CASES="${FERRITE_DIFF_CASES:-1000000}"
exec cargo test --profile "${PROFILE:-dev}" -p ferrite-policy --lib \
  permissions::differential_tests::the_shell_runs_only_what_the_parser_found \
  -- --exact --nocapture
