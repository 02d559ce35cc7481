#!/usr/bin/env bash
# Regenerate host/rl/testdata/goldens/qwen3/goldens.json with the reference
# implementation (Hugging Face's JavaScript tokenizer and Jinja engine, from
# npm, cached in ~/.cache/metaclaw-e2e/rl-goldens). Needs Node from npm
# (test/e2e/node.sh) and the Qwen3 tokenizer files (fetched here).
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/e2e/node.sh
log() { echo "rlgoldens: $*" >&2; }
setup_node
GOLD_DIR="$CACHE/rl-goldens"
for pkg in @huggingface/tokenizers@0.2.0 @huggingface/jinja@0.5.11; do
  name="${pkg%@*}"
  [ -f "$GOLD_DIR/node_modules/$name/package.json" ] || npm_install_into "$GOLD_DIR" "$pkg" 300
done
# The same default as tokfetch.DefaultDir, which the inputs program reads.
TOK_DIR="${METACLAW_TOKENIZER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metaclaw/tokenizers}/qwen3"
go run ./cmd/metaclaw rl fetch-tokenizer --model qwen3 --dir "$TOK_DIR" >&2
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go run ./tools/rlgoldens/inputs "$tmp/inputs.json"
mkdir -p host/rl/testdata/goldens/qwen3
cp tools/rlgoldens/gen.mjs "$GOLD_DIR/gen.mjs"
"$NODE_BIN_DIR/node" "$GOLD_DIR/gen.mjs" "$TOK_DIR" "$tmp/inputs.json" host/rl/testdata/goldens/qwen3/goldens.json
