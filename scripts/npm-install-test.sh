#!/usr/bin/env bash
# The npm packages install from a locally built binary and run: `npx @ferrite-agent/ferrite`
# answers --version and an ACP `initialize`. No registry is asked (--offline). Run by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-${CARGO_TARGET_DIR:-$PWD/target}/debug/ferrite}
key=$(node -p 'process.platform + "-" + process.arch')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A debug build carries ~300 MB of debug info that npm would gzip for minutes; the package is
# the same without it.
strip -o "$tmp/ferrite" "$bin"
python3 scripts/npm_packages.py --out "$tmp/pkgs" --binary "$key=$tmp/ferrite" --only-built >/dev/null
mkdir "$tmp/app"
cd "$tmp/app"
npm init -y >/dev/null
npm install --offline --no-audit --no-fund --loglevel=error "$tmp"/pkgs/*.tgz >/dev/null

version=$(npx --offline --no-install ferrite --version)
echo "npx ferrite --version: $version"
[[ "$version" == ferrite* ]]
reply=$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}' \
  | FERRITE_HOME="$tmp/home" npx --offline --no-install ferrite acp)
echo "$reply" | grep -q '"protocolVersion":1' || { echo "no initialize answer: $reply"; exit 1; }
echo "npm package: installed from $bin and answered initialize"
