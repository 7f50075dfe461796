#!/usr/bin/env bash
# Shopify's toxiproxy, the network shaper between the pipeline and the local S3 server
# (latency, per-connection bandwidth, stalls, resets), on 127.0.0.1 only.
#
#   scripts/toxiproxy.sh install   build + cache the pinned server (skipped if cached)
#   scripts/toxiproxy.sh up        start its API on 127.0.0.1:$SLUICE_TOXIPROXY_PORT (default 18474)
#   scripts/toxiproxy.sh down      stop it
#   scripts/toxiproxy.sh status    exit 0 if its API answers, 1 otherwise
#
# After `up`, .services/toxiproxy.env holds SLUICE_TOXIPROXY_URL. Proxies and toxics are made
# through its HTTP API (POST /proxies, POST /proxies/<name>/toxics), always listening on
# 127.0.0.1. Log: .services/toxiproxy.log (LOG_LEVEL=warn: its default logs every connection).
#
# Environment:
#   SLUICE_CACHE              cache root (default $HOME/.cache/sluice); binary in $SLUICE_CACHE/bin
#   SLUICE_TOXIPROXY_PORT     API port (default 18474)
set -euo pipefail

MODULE="github.com/Shopify/toxiproxy/v2"
VERSION="v2.5.0" # pinned; the Go module proxy lists v2.3.0 and v2.5.0 (checked 2026-12-01)

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib/await-healthy.sh
. "$REPO_ROOT/scripts/lib/await-healthy.sh"
SERVICES_DIR="${SLUICE_SERVICES_DIR:-$REPO_ROOT/.services}" # SLUICE_SERVICES_DIR: a second instance elsewhere (npm run faults)
PID_FILE="$SERVICES_DIR/toxiproxy.pid"
LOG_FILE="$SERVICES_DIR/toxiproxy.log"
ENV_FILE="$SERVICES_DIR/toxiproxy.env"
CACHE_DIR="${SLUICE_CACHE:-$HOME/.cache/sluice}"
BIN_DIR="$CACHE_DIR/bin"
BIN="$BIN_DIR/toxiproxy-server"
HOST="127.0.0.1"
PORT="${SLUICE_TOXIPROXY_PORT:-18474}"
# How long a start may take to answer, and how long `up` waits for a running
# one that does not answer yet: a Go binary answers in well under a second, 20 s
# covers a loaded machine.
START_TIMEOUT=20

log() { echo "toxiproxy: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

installed_version() {
  [[ -x "$BIN" ]] || return 0
  go version -m "$BIN" 2>/dev/null | awk -v m="$MODULE" '$1 == "mod" && $2 == m { print $3 }'
}

cmd_install() {
  command -v go >/dev/null || die "go not found on PATH (needed to build toxiproxy)"
  if [[ "$(installed_version)" == "$VERSION" ]]; then
    log "toxiproxy $VERSION already installed at $BIN"
    return 0
  fi
  mkdir -p "$BIN_DIR"
  local tmp start=$SECONDS
  tmp="$(mktemp -d)"
  log "building toxiproxy $VERSION (~75 s the first time) ..."
  # Bounded (~8x the measured cold build): a stalled module proxy fails, named.
  GOBIN="$tmp" GOFLAGS="${GOFLAGS:-} -trimpath" timeout --kill-after=30 600 go install "$MODULE/cmd/server@$VERSION" \
    || { rm -rf "$tmp"; die "go install $MODULE/cmd/server@$VERSION failed or passed its 600 s bound"; }
  mv "$tmp/server" "$BIN"
  rm -rf "$tmp"
  [[ "$(installed_version)" == "$VERSION" ]] || die "installed binary does not report $VERSION"
  log "installed toxiproxy $VERSION in $((SECONDS - start))s"
}

healthy() { [[ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://$HOST:$PORT/version" 2>/dev/null)" == "200" ]]; }
read_pid() { if [[ -f "$PID_FILE" ]]; then tr -dc '0-9' <"$PID_FILE"; fi; }
is_ours() { local pid="$1"; [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q toxiproxy-server; }

cmd_up() {
  mkdir -p "$SERVICES_DIR"
  local pid
  pid="$(read_pid)"
  if is_ours "$pid"; then
    await_healthy "$START_TIMEOUT" "$pid" healthy \
      || die "pid $pid is running but http://$HOST:$PORT/version has not answered 200 within ${START_TIMEOUT}s; run '$0 down' then '$0 up'"
    log "already running (pid $pid) at http://$HOST:$PORT"
    echo "SLUICE_TOXIPROXY_URL=http://$HOST:$PORT" >"$ENV_FILE"
    return 0
  fi
  [[ "$(installed_version)" == "$VERSION" ]] || cmd_install
  : >"$LOG_FILE"
  LOG_LEVEL=warn setsid "$BIN" -host "$HOST" -port "$PORT" >>"$LOG_FILE" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$PID_FILE"
  if ! await_healthy "$START_TIMEOUT" "$pid" healthy; then
    kill -0 "$pid" 2>/dev/null || die "toxiproxy exited during startup. Log tail:
$(tail -n 20 "$LOG_FILE")"
    kill "$pid" 2>/dev/null || true
    die "toxiproxy not ready on $HOST:$PORT within ${START_TIMEOUT} s"
  fi
  echo "SLUICE_TOXIPROXY_URL=http://$HOST:$PORT" >"$ENV_FILE"
  log "toxiproxy $VERSION up (pid $pid) at http://$HOST:$PORT; env in $ENV_FILE"
}

cmd_down() {
  local pid i
  pid="$(read_pid)"
  if is_ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    log "stopped toxiproxy (pid $pid)"
  else
    log "not running"
  fi
  rm -f -- "$PID_FILE" "$ENV_FILE"
}

case "${1:-status}" in
  install) cmd_install ;;
  up) cmd_up ;;
  down) cmd_down ;;
  status) healthy ;;
  *) echo "usage: $0 install|up|down|status" >&2; exit 2 ;;
esac
