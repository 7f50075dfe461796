#!/usr/bin/env bash
# Local S3-compatible server (Versity S3 Gateway, posix backend) for integration tests.
#
#   scripts/s3-server.sh install   build + cache the pinned versitygw binary (skipped if cached)
#   scripts/s3-server.sh up        start it on 127.0.0.1:$SLUICE_S3_PORT (default 19000), wait until ready
#   scripts/s3-server.sh down      stop it and delete its data folder
#   scripts/s3-server.sh status    exit 0 if running and healthy, 1 otherwise
#   scripts/s3-server.sh kill      SIGKILL it (a crash), its data and state kept (examples/faults)
#   scripts/s3-server.sh start     start it again on the kept data, port and keys, wait until ready
#
# After `up`, .services/s3.env holds SLUICE_S3_ENDPOINT / _ACCESS_KEY / _SECRET_KEY / _REGION.
# Log: .services/s3.log   pid: .services/s3.pid   (.services/ at the repo root)
#
# Environment:
#   SLUICE_CACHE              cache root (default $HOME/.cache/sluice); binary in $SLUICE_CACHE/bin
#   SLUICE_S3_PORT            listen port (default 19000); always bound to 127.0.0.1 only
#   SLUICE_S3_ACCESS_KEY      root access key (else ROOT_ACCESS_KEY, else "sluice")
#   SLUICE_S3_SECRET_KEY      root secret key (else ROOT_SECRET_KEY, else "sluicesecret")
#   SLUICE_S3_START_TIMEOUT   seconds to wait for readiness (default 30)
#   SLUICE_S3_DATA_SIZE       if set (e.g. 64m): the data folder is a tmpfs of that size, so a
#                             test can fill the server's disk (mount needs root; `up` fails
#                             saying so otherwise); unmounted by `down`
# See scripts/S3-SERVERS.md for what this server does and does not support.
set -euo pipefail

VERSITYGW_MODULE="github.com/versity/versitygw"
VERSITYGW_VERSION="v1.8.0" # pinned; the only version the Go module proxy lists (checked 2026-11)

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib/await-healthy.sh
. "$REPO_ROOT/scripts/lib/await-healthy.sh"
SERVICES_DIR="${SLUICE_SERVICES_DIR:-$REPO_ROOT/.services}" # SLUICE_SERVICES_DIR: a second instance elsewhere (npm run faults)
PID_FILE="$SERVICES_DIR/s3.pid"
LOG_FILE="$SERVICES_DIR/s3.log"
ENV_FILE="$SERVICES_DIR/s3.env"
STATE_FILE="$SERVICES_DIR/s3.state" # port, data dir and keys of the running instance

CACHE_DIR="${SLUICE_CACHE:-$HOME/.cache/sluice}"
BIN_DIR="$CACHE_DIR/bin"
BIN="$BIN_DIR/versitygw"

HOST="127.0.0.1"
PORT="${SLUICE_S3_PORT:-19000}"
REGION="us-east-1"
HEALTH_PATH="/_sluice_health" # underscore: can never collide with a bucket name
START_TIMEOUT="${SLUICE_S3_START_TIMEOUT:-30}"
ACCESS_KEY="${SLUICE_S3_ACCESS_KEY:-${ROOT_ACCESS_KEY:-sluice}}"
SECRET_KEY="${SLUICE_S3_SECRET_KEY:-${ROOT_SECRET_KEY:-sluicesecret}}"

log() { echo "s3-server: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

installed_version() {
  # Module version recorded in the binary by the Go toolchain ("" if absent/unreadable).
  [[ -x "$BIN" ]] || return 0
  go version -m "$BIN" 2>/dev/null | awk -v m="$VERSITYGW_MODULE" '$1 == "mod" && $2 == m { print $3 }'
}

cmd_install() {
  command -v go >/dev/null || die "go not found on PATH (needed to build versitygw)"
  if [[ "$(installed_version)" == "$VERSITYGW_VERSION" ]]; then
    log "versitygw $VERSITYGW_VERSION already installed at $BIN"
    return 0
  fi
  mkdir -p "$BIN_DIR"
  log "building versitygw $VERSITYGW_VERSION into $BIN_DIR (first build takes ~2 min on 2 cores)..."
  local start=$SECONDS
  # Bounded: a stalled module proxy fails the install, named, instead of holding CI.
  # 15 min is ~7x the measured cold build.
  GOBIN="$BIN_DIR" GOFLAGS="${GOFLAGS:-} -trimpath" \
    timeout --kill-after=30 900 go install "$VERSITYGW_MODULE/cmd/versitygw@$VERSITYGW_VERSION" \
    || die "go install $VERSITYGW_MODULE/cmd/versitygw@$VERSITYGW_VERSION failed or passed its 900 s bound"
  [[ "$(installed_version)" == "$VERSITYGW_VERSION" ]] || die "installed binary does not report $VERSITYGW_VERSION"
  log "installed versitygw $VERSITYGW_VERSION in $((SECONDS - start))s"
}

read_pid() { if [[ -f "$PID_FILE" ]]; then tr -dc '0-9' <"$PID_FILE"; fi; }

# True if $1 is a live versitygw process (guards against a recycled pid).
is_our_process() {
  local pid="$1"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q versitygw
}

state_get() { if [[ -f "$STATE_FILE" ]]; then sed -n "s/^$1=//p" "$STATE_FILE" | head -n1; fi; }

healthy() { # $1 = port
  [[ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://$HOST:$1$HEALTH_PATH" 2>/dev/null)" == "200" ]]
}

port_in_use() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

write_env() { # port access secret
  cat >"$ENV_FILE" <<EOF
SLUICE_S3_ENDPOINT=http://$HOST:$1
SLUICE_S3_ACCESS_KEY=$2
SLUICE_S3_SECRET_KEY=$3
SLUICE_S3_REGION=$REGION
EOF
}

stop_pid() { # pid: TERM, wait up to 10 s, then KILL
  local pid="$1" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  log "pid $pid ignored SIGTERM for 10s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  die "could not stop pid $pid"
}

cleanup_state() {
  local data_dir
  data_dir="$(state_get DATA_DIR)"
  # Only ever delete a folder this script created.
  if [[ -n "$data_dir" && -d "$data_dir" && "$(basename "$data_dir")" == sluice-s3.* ]]; then
    if mountpoint -q "$data_dir"; then umount "$data_dir" || log "could not unmount $data_dir"; fi
    rm -rf -- "$data_dir"
  fi
  rm -f -- "$PID_FILE" "$STATE_FILE" "$ENV_FILE"
}

cmd_up() {
  mkdir -p "$SERVICES_DIR"
  local pid
  pid="$(read_pid)"
  if is_our_process "$pid"; then
    local running_port
    running_port="$(state_get PORT)"
    [[ "$running_port" == "$PORT" ]] \
      || die "already running (pid $pid) on port ${running_port:-?}, not $PORT; run '$0 down' first"
    if await_healthy "$START_TIMEOUT" "$pid" healthy "$PORT"; then
      write_env "$PORT" "$(state_get ACCESS_KEY)" "$(state_get SECRET_KEY)"
      log "already running and healthy (pid $pid) at http://$HOST:$PORT"
      return 0
    fi
    die "pid $pid is running but http://$HOST:$PORT$HEALTH_PATH has not answered 200 within ${START_TIMEOUT}s; run '$0 down' then '$0 up'. Log tail:
$(tail -n 30 "$LOG_FILE" 2>/dev/null)"
  fi
  if [[ -n "$pid" || -f "$STATE_FILE" ]]; then
    log "removing stale state of a previous instance (pid ${pid:-?} is gone)"
    cleanup_state
  fi

  [[ "$(installed_version)" == "$VERSITYGW_VERSION" ]] || cmd_install
  command -v curl >/dev/null || die "curl not found on PATH (needed for the readiness check)"
  if port_in_use "$PORT"; then
    die "port $HOST:$PORT is already in use by another process (set SLUICE_S3_PORT to use another port)"
  fi

  local data_dir
  data_dir="$(mktemp -d "${TMPDIR:-/tmp}/sluice-s3.XXXXXX")"
  {
    echo "PORT=$PORT"
    echo "DATA_DIR=$data_dir"
    echo "ACCESS_KEY=$ACCESS_KEY"
    echo "SECRET_KEY=$SECRET_KEY"
  } >"$STATE_FILE"

  if [[ -n "${SLUICE_S3_DATA_SIZE:-}" ]]; then
    mount -t tmpfs -o "size=$SLUICE_S3_DATA_SIZE" sluice-s3 "$data_dir" 2>/dev/null \
      || { cleanup_state; die "SLUICE_S3_DATA_SIZE=$SLUICE_S3_DATA_SIZE: cannot mount a tmpfs on $data_dir (needs root)"; }
  fi
  : >"$LOG_FILE"
  launch "$data_dir"
  write_env "$PORT" "$ACCESS_KEY" "$SECRET_KEY"
  log "versitygw $VERSITYGW_VERSION up (pid $(read_pid)) at http://$HOST:$PORT, data in $data_dir; env in $ENV_FILE"
}

# Starts versitygw on data folder $1 with this instance's port and keys; waits until ready.
launch() {
  local data_dir="$1" pid
  # Keys go through versitygw's documented env vars, not argv (keeps them out of `ps`).
  # setsid: the server outlives the shell that ran `up`, until `down`.
  # --keep-alive: versitygw answers every request with `Connection: close` without
  # it; real S3 keeps connections open, and so must the server the tests use
  # (packages/adapters-s3/test/KeepAlive.test.ts counts the sockets).
  ROOT_ACCESS_KEY="$ACCESS_KEY" ROOT_SECRET_KEY="$SECRET_KEY" \
    setsid "$BIN" --port "$HOST:$PORT" --region "$REGION" --health "$HEALTH_PATH" --keep-alive \
    posix "$data_dir" >>"$LOG_FILE" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$PID_FILE"

  if ! await_healthy "$START_TIMEOUT" "$pid" healthy "$PORT"; then
    if ! kill -0 "$pid" 2>/dev/null; then
      cleanup_state
      die "versitygw exited during startup. Log tail ($LOG_FILE):
$(tail -n 30 "$LOG_FILE")"
    fi
    stop_pid "$pid"
    cleanup_state
    die "versitygw not ready on http://$HOST:$PORT within ${START_TIMEOUT}s. Log tail ($LOG_FILE):
$(tail -n 30 "$LOG_FILE")"
  fi
}

cmd_kill() {
  local pid
  pid="$(read_pid)"
  is_our_process "$pid" || die "not running"
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  log "killed versitygw (pid $pid, SIGKILL); data kept in $(state_get DATA_DIR)"
}

cmd_start() {
  local pid data_dir
  pid="$(read_pid)"
  is_our_process "$pid" && die "already running (pid $pid)"
  data_dir="$(state_get DATA_DIR)"
  [[ -n "$data_dir" && -d "$data_dir" ]] || die "no kept data of a killed instance (run up)"
  PORT="$(state_get PORT)"
  ACCESS_KEY="$(state_get ACCESS_KEY)"
  SECRET_KEY="$(state_get SECRET_KEY)"
  launch "$data_dir"
  log "versitygw up again (pid $(read_pid)) at http://$HOST:$PORT on kept data $data_dir"
}

cmd_down() {
  local pid
  pid="$(read_pid)"
  if is_our_process "$pid"; then
    stop_pid "$pid"
    log "stopped versitygw (pid $pid)"
  elif [[ -n "$pid" ]]; then
    log "pid $pid is not running; cleaning up"
  else
    log "not running"
  fi
  cleanup_state
}

cmd_status() {
  local pid port
  pid="$(read_pid)"
  port="$(state_get PORT)"
  if is_our_process "$pid"; then
    if healthy "${port:-$PORT}"; then
      echo "running (pid $pid) http://$HOST:${port:-$PORT} data=$(state_get DATA_DIR)"
      return 0
    fi
    echo "running (pid $pid) but NOT healthy on http://$HOST:${port:-$PORT}"
    return 1
  fi
  echo "not running"
  return 1
}

# Sourced (scripts/s3-tls.sh reuses the install, the pid and state helpers): define the
# functions only.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  case "${1:-}" in
    install) cmd_install ;;
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    kill) cmd_kill ;;
    start) cmd_start ;;
    *)
      echo "usage: $0 {install|up|down|status|kill|start}" >&2
      exit 2
      ;;
  esac
fi
