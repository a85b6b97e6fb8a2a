#!/bin/sh
# The container's entrypoint: `ferrite "$@"` on the repository in the working directory (/work),
# as a user who can write it, with a HOME and a FERRITE_HOME that user can write, and with git
# trusting the directory.
#
# Why: a checkout bind-mounted with `-v "$PWD:/work"` belongs to the host user (uid 1000, say),
# not to the image's user. Run as anyone else, every `write` fails with "Permission denied" and git
# refuses the "dubious ownership". So:
# - started as root (the image's default): drop to the owner of the working directory (uid and
#   gid, no supplementary groups, no new privileges). A root-owned directory (Docker Desktop's
#   file sharing, rootless engines, a Kubernetes emptyDir) is run as uid 10001 when that uid can
#   write it, else as root: the container and Ferrite's sandbox are then the boundary.
# - started as any other uid (`--user`, Kubernetes `runAsUser`): that uid, as given.
# - HOME and FERRITE_HOME: kept when writable, else a private directory is made (an arbitrary uid
#   has no passwd entry and HOME=/).
#
# FERRITE_BIN (the binary to run) and FERRITE_ENTRY_USER (the uid:gid to drop to, instead of the
# directory's owner) exist for tests and unusual setups.
set -eu

ferrite=${FERRITE_BIN:-ferrite}
work=$(pwd)

say() { printf 'ferrite-entrypoint: %s\n' "$*" >&2; }

# Whether uid:gid $1 can write directory $2 (asked of the kernel as that user, not guessed).
can_write_as() {
    setpriv --reuid="${1%%:*}" --regid="${1##*:}" --clear-groups test -w "$2" 2>/dev/null
}

if [ "$(id -u)" = 0 ] && [ -z "${FERRITE_ENTRY_DROPPED:-}" ]; then
    target=${FERRITE_ENTRY_USER:-$(stat -c '%u:%g' "$work")}
    if [ "$target" = "0:0" ] || [ "${target%%:*}" = 0 ]; then
        if can_write_as 10001:10001 "$work"; then
            target=10001:10001
        else
            target=
            say "running as root: $work belongs to root and uid 10001 cannot write it"
        fi
    fi
    if [ -n "$target" ]; then
        export FERRITE_ENTRY_DROPPED=1
        exec setpriv --reuid="${target%%:*}" --regid="${target##*:}" --clear-groups \
            --no-new-privs sh "$0" "$@"
    fi
fi

# Only what can be written is kept: a HOME the user cannot write breaks git and Ferrite alike.
if [ -z "${HOME:-}" ] || [ "$HOME" = / ] || ! { mkdir -p "$HOME" 2>/dev/null && [ -w "$HOME" ]; }; then
    HOME=$(mktemp -d "${TMPDIR:-/tmp}/ferrite-home.XXXXXX")
    export HOME
fi
if [ -n "${FERRITE_HOME:-}" ] && ! { mkdir -p "$FERRITE_HOME" 2>/dev/null && [ -w "$FERRITE_HOME" ]; }; then
    say "FERRITE_HOME=$FERRITE_HOME is not writable by uid $(id -u); using $HOME/.ferrite"
    unset FERRITE_HOME
fi
export FERRITE_HOME="${FERRITE_HOME:-$HOME/.ferrite}"

# git refuses a repository owned by another uid ("dubious ownership"); this one was handed to us.
if command -v git >/dev/null 2>&1; then
    if ! git config --global --get-all safe.directory 2>/dev/null | grep -qxF "$work"; then
        git config --global --add safe.directory "$work" || say "could not mark $work safe for git"
    fi
fi

exec "$ferrite" "$@"
