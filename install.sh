#!/usr/bin/env bash
# install.sh: install MetaClaw in one command, and undo it.
#
#   ./install.sh [--binary PATH] [--prefix DIR] \
#                [--api-base URL] [--api-key-env VAR] [--model ID] [--api openai|anthropic] \
#                [--client NAME [--agent ID]... [--via proxy|hooks|both]] [--start]
#   ./install.sh --uninstall [--purge] [--prefix DIR]
#
# Builds bin/metaclaw with `make build` (or takes --binary), installs it as
# $PREFIX/bin/metaclaw (default ~/.local/bin/metaclaw), writes the config with
# `metaclaw config set` when given the upstream flags (the key named by
# --api-key-env is stored in secrets.yaml, 0600), installs the skill bank,
# wires one client with `metaclaw wire <client> --yes`, and with --start
# starts the host. Running it again changes nothing that is already in place.
# --uninstall restores every wired client and removes the binary;
# $METACLAW_HOME (default ~/.metaclaw) is kept unless --purge.

set -euo pipefail

prog=install.sh
die() { echo "$prog: $*" >&2; exit 1; }
say() { echo "$prog: $*"; }

usage() {
	# the comment block at the top of this file, up to its first blank line
	awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
	exit "${1:-0}"
}

PREFIX="${HOME}/.local"
BINARY=""
CLIENT=""
AGENTS=()
VIA=""
API_BASE=""
API_KEY_ENV=""
MODEL=""
API=""
UNINSTALL=0
PURGE=0
START=0

need() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
	case "$1" in
	--*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
	--binary) need "$@"; BINARY="$2"; shift 2 ;;
	--prefix) need "$@"; PREFIX="$2"; shift 2 ;;
	--client) need "$@"; CLIENT="$2"; shift 2 ;;
	--agent) need "$@"; AGENTS+=("$2"); shift 2 ;;
	--via) need "$@"; VIA="$2"; shift 2 ;;
	--api-base) need "$@"; API_BASE="$2"; shift 2 ;;
	--api-key-env) need "$@"; API_KEY_ENV="$2"; shift 2 ;;
	--model) need "$@"; MODEL="$2"; shift 2 ;;
	--api) need "$@"; API="$2"; shift 2 ;;
	--uninstall) UNINSTALL=1; shift ;;
	--purge) PURGE=1; shift ;;
	--start) START=1; shift ;;
	-h|--help) usage 0 ;;
	*) echo "$prog: unknown option $1" >&2; usage 2 ;;
	esac
done

case "$PREFIX" in /*) ;; *) PREFIX="$(pwd)/$PREFIX" ;; esac
BIN="$PREFIX/bin/metaclaw"
MC_HOME="${METACLAW_HOME:-$HOME/.metaclaw}"

if [ "$UNINSTALL" = 1 ]; then
	did=0
	mc="$BIN"
	[ -x "$mc" ] || mc="$(command -v metaclaw 2>/dev/null || true)"
	if [ -n "$mc" ] && [ -x "$mc" ]; then
		args=(uninstall --yes)
		[ "$PURGE" = 1 ] && args+=(--purge)
		"$mc" "${args[@]}"
		did=1
	elif [ "$PURGE" = 1 ] && [ -d "$MC_HOME" ]; then
		if ls "$MC_HOME"/backups/*/*/manifest.json >/dev/null 2>&1 && grep -qs '"state": "wired"' "$MC_HOME"/backups/*/*/manifest.json; then
			die "clients are still wired but no metaclaw binary is left to restore them; reinstall, then run --uninstall again"
		fi
		rm -rf -- "$MC_HOME"
		say "deleted $MC_HOME"
		did=1
	fi
	if [ -e "$BIN" ]; then
		rm -f -- "$BIN"
		say "removed $BIN"
		did=1
	fi
	if [ "$did" = 0 ]; then
		kept=""
		[ -d "$MC_HOME" ] && kept=" ($MC_HOME is kept: --uninstall --purge deletes it)"
		say "nothing to uninstall: no metaclaw at $BIN or on PATH$kept"
	else
		say "uninstalled"
	fi
	exit 0
fi

case "$API" in ""|openai|anthropic) ;; *) die "--api must be openai or anthropic" ;; esac
case "$VIA" in ""|proxy|hooks|both) ;; *) die "--via must be proxy, hooks or both" ;; esac
[ ${#AGENTS[@]} -eq 0 ] || [ -n "$CLIENT" ] || die "--agent needs --client"
# the key is checked before anything is installed
KEY=""
if [ -n "$API_KEY_ENV" ]; then
	[[ "$API_KEY_ENV" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "--api-key-env takes a variable name, not a key"
	KEY="${!API_KEY_ENV:-}"
	[ -n "$KEY" ] || die "$API_KEY_ENV is empty: export it first (the key is stored in $MC_HOME/secrets.yaml, mode 0600)"
fi

# 1. the binary
if [ -z "$BINARY" ]; then
	src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
	[ -f "$src/Makefile" ] || die "no Makefile next to $prog: pass --binary PATH"
	command -v go >/dev/null 2>&1 || die "Go 1.26+ is needed to build metaclaw (or pass --binary PATH)"
	say "building (make build)"
	make -C "$src" build >/dev/null
	BINARY="$src/bin/metaclaw"
fi
[ -f "$BINARY" ] && [ -x "$BINARY" ] || die "$BINARY is not an executable file"
mkdir -p "$PREFIX/bin"
if cmp -s "$BINARY" "$BIN"; then
	say "$BIN is up to date"
else
	tmp="$(mktemp "$PREFIX/bin/.metaclaw.XXXXXX")"
	cp "$BINARY" "$tmp"
	chmod 0755 "$tmp"
	mv -f "$tmp" "$BIN"
	say "installed $BIN"
fi
"$BIN" version >/dev/null || die "$BIN does not run"

# 2. the state dir and the install record (metaclaw uninstall removes the binary)
mkdir -p "$MC_HOME"
chmod 0700 "$MC_HOME"
esc=${BIN//\\/\\\\}
esc=${esc//\"/\\\"}
printf '{"binary": "%s"}\n' "$esc" >"$MC_HOME/install.json.tmp"
chmod 0600 "$MC_HOME/install.json.tmp"
mv -f "$MC_HOME/install.json.tmp" "$MC_HOME/install.json"

# 3. the config (each set validates the whole config and keeps comments)
setkey() {
	local cur
	cur="$("$BIN" config get --reveal "$1" 2>/dev/null || true)"
	if [ "$cur" != "$2" ]; then
		"$BIN" config set "$1" "$2" >/dev/null
		say "config: $1 set"
	fi
}
[ -n "$API" ] && setkey llm.api "$API"
[ -n "$API_BASE" ] && setkey llm.api_base "$API_BASE"
[ -n "$MODEL" ] && setkey llm.model_id "$MODEL"
[ -n "$KEY" ] && setkey llm.api_key "$KEY"

# 4. the skill bank (what `metaclaw setup` installs; skills you wrote or
# edited are never overwritten)
bank="$("$BIN" skills install-bank)" || die "installing the skill bank failed (see above)"
say "skills: $bank"

# 5. the client
if [ -n "$CLIENT" ]; then
	args=(wire "$CLIENT" --yes)
	for a in "${AGENTS[@]}"; do args+=(--agent "$a"); done
	[ -n "$VIA" ] && args+=(--via "$VIA")
	"$BIN" "${args[@]}"
fi

if [ "$START" = 1 ]; then
	"$BIN" start || die "metaclaw start failed (see $MC_HOME/logs/)"
fi

case ":$PATH:" in
*":$PREFIX/bin:"*) ;;
*) say "add $PREFIX/bin to your PATH (e.g. in ~/.profile: export PATH=\"$PREFIX/bin:\$PATH\")" ;;
esac
if [ "$START" = 1 ]; then
	say "done. Next: metaclaw doctor"
else
	say "done. Next: metaclaw start; metaclaw doctor"
fi
