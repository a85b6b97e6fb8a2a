#!/usr/bin/env bash
# Type-checks the workspace for the other release targets on a Linux machine that cannot download
# their standard library with rustup (docs/platforms.md, "Which targets were checked").
#
#   sudo scripts/check-targets.sh [TARGET [CARGO-ARGS...]]
#
# How: a Debian sid chroot (debootstrap) with Debian's rustc, cargo and rust-src of one version;
# the standard library is built for the target (`-Zbuild-std`, RUSTC_BOOTSTRAP=1). C code of build
# scripts is not compiled: a stand-in compiler writes empty objects, which a check never links.
# Needs root, debootstrap and Debian's package mirror; the chroot is kept in $CHROOT for reuse.
# Without arguments checks every registry target. Not part of .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT_DIR=$PWD
CHROOT=${CHROOT:-/var/tmp/ferrite-xcheck-sid}
XTARGET=${XTARGET:-/var/tmp/ferrite-xcheck-target}
MIRROR=${MIRROR:-http://deb.debian.org/debian}

if [ ! -x "$CHROOT/usr/bin/cargo" ]; then
  debootstrap --variant=minbase --include=ca-certificates sid "$CHROOT" "$MIRROR"
  # A mirror snapshot may carry an expired Release file.
  echo 'Acquire::Check-Valid-Until "false";' > "$CHROOT/etc/apt/apt.conf.d/99novalid"
  cp /etc/resolv.conf "$CHROOT/etc/resolv.conf"
  cp /etc/ssl/certs/ca-certificates.crt "$CHROOT/etc/ssl/certs/ca-certificates.crt"
  chroot "$CHROOT" sh -c 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
    --no-install-recommends rustc cargo rust-src gcc libc6-dev binutils-mingw-w64-x86-64'
fi

mkdir -p "$CHROOT/usr/local/fake" "$CHROOT/src" "$CHROOT/xtarget" "$XTARGET" \
  "$CHROOT/root/.cargo/registry" "$HOME/.cargo/registry"
cat > "$CHROOT/usr/local/fake/cc" <<'CC'
#!/bin/sh
# Type-checking only: writes an empty object wherever one is asked for (`-o x.o`, `/Fox.obj`).
out=""; prev=""
for a in "$@"; do
  case "$a" in -E) echo ""; exit 0;; --version|-v) echo "fakecc 1.0"; exit 0;; esac
  if [ "$prev" = "-o" ]; then out="$a"; fi
  case "$a" in /Fo*|-Fo*) out="${a#?Fo}";; esac
  prev="$a"
done
[ -n "$out" ] && : > "$out"
exit 0
CC
cat > "$CHROOT/usr/local/fake/ar" <<'AR'
#!/bin/sh
# Writes an empty archive wherever one is asked for (`ar crs x.a`, `lib.exe /OUT:x.lib`).
for a in "$@"; do
  case "$a" in
    /OUT:*|-OUT:*|/out:*|-out:*) printf '!<arch>\n' > "${a#*:}";;
    *.a|*.lib) printf '!<arch>\n' > "$a";;
  esac
done
exit 0
AR
chmod +x "$CHROOT/usr/local/fake/cc" "$CHROOT/usr/local/fake/ar"

mounted=()
bind() { mount --bind "$1" "$2"; mounted+=("$2"); }
cleanup() { for ((i=${#mounted[@]}-1; i>=0; i--)); do umount "${mounted[$i]}"; done; }
trap cleanup EXIT
bind "$ROOT_DIR" "$CHROOT/src"
bind "$XTARGET" "$CHROOT/xtarget"
bind "$HOME/.cargo/registry" "$CHROOT/root/.cargo/registry"
bind /dev "$CHROOT/dev"
bind /proc "$CHROOT/proc"

check() {
  local target=$1; shift
  local t=${target//-/_}
  echo "== $target $*"
  chroot "$CHROOT" env RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=/xtarget CARGO_HOME=/root/.cargo \
    "CC_$t=/usr/local/fake/cc" "CXX_$t=/usr/local/fake/cc" "AR_$t=/usr/local/fake/ar" \
    AWS_LC_SYS_CMAKE_BUILDER=0 AWS_LC_SYS_PREBUILT_NASM=1 \
    sh -c 'cd /src && exec cargo check --ignore-rust-version -Zbuild-std=std,panic_abort "$@"' \
    check --target "$target" "$@"
}

if [ $# -gt 0 ]; then
  check "$@"
else
  check aarch64-unknown-linux-gnu --workspace --all-targets
  check x86_64-apple-darwin --workspace --all-targets
  check aarch64-apple-darwin --workspace --all-targets
  check x86_64-pc-windows-msvc --workspace
  check x86_64-pc-windows-msvc -p ferrite-exec -p ferrite-llm --tests
  check aarch64-pc-windows-msvc --workspace
fi
