#!/usr/bin/env bash
# Fuzzes the bash permission parser and rule matcher (crates/policy/src/permissions/shell.rs,
# command_rules.rs) with a million generated shell-ish commands (tokens, quotes, operators,
# arbitrary bytes), in release mode. The test fails on any panic and on any command allowed
# without being fully understood.
#
#   bench/fuzz_shell.sh                                  # 1,000,000 cases, seed 0x5eed
#   FERRITE_FUZZ_CASES=5000000 FERRITE_FUZZ_SEED=7 bench/fuzz_shell.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export FERRITE_FUZZ_CASES="${FERRITE_FUZZ_CASES:-1000000}"
exec cargo test --release -p ferrite-policy --lib permissions::corpus_tests::fuzz_parser_and_matcher \
  -- --exact --nocapture
