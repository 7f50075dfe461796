#!/usr/bin/env bash
# The local S3-compatible server (versitygw, as scripts/s3-server.sh runs it) over HTTPS,
# with a certificate from a private CA, for the TLS tests (issue 27 item 6).
#
#   scripts/s3-tls.sh up       # a fresh CA and server certificate, start, wait until ready
#   scripts/s3-tls.sh down     # stop it, delete its data folder and certificates
#   scripts/s3-tls.sh status   # exit 0 if running and answering over HTTPS, 1 otherwise
#
# Its own port, files and process beside the plain server (scripts/s3-server.sh, sourced
# for the install and the pid/state helpers); not started by scripts/services.sh: the tests
# that need it start it (scripts/lib/LazyService.ts) and the vitest run stops it.
#
# Certificates (openssl, at every `up`, in .services/s3-tls/certs/): ca.pem + ca.key, a
# throwaway CA (RSA 2048, 2 days) that no trust store knows; server.pem + server.key,
# CN=127.0.0.1 with SAN IP:127.0.0.1 and DNS:localhost, signed by it. A client trusts the
# server only when told to trust ca.pem.
#
# After `up`, .services/s3-tls.env (mode 600) holds:
#   SLUICE_S3_TLS_ENDPOINT     https://127.0.0.1:<port>
#   SLUICE_S3_TLS_CA           the CA certificate (PEM) the server's certificate chains to
#   SLUICE_S3_TLS_ACCESS_KEY / SLUICE_S3_TLS_SECRET_KEY / SLUICE_S3_TLS_REGION
#
# Environment:
#   SLUICE_S3_TLS_PORT         listen port on 127.0.0.1 (default 29643)
#   SLUICE_S3_TLS_ACCESS_KEY   root access key (default sluice-tls)
#   SLUICE_S3_TLS_SECRET_KEY   root secret key (default: 30 random characters at every `up`)
#   SLUICE_S3_START_TIMEOUT, SLUICE_CACHE as for scripts/s3-server.sh
set -euo pipefail

TLS_SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/s3-server.sh
. "$TLS_SCRIPT_DIR/s3-server.sh"

# The sourced helpers read these globals: point them at this instance's files.
PORT="${SLUICE_S3_TLS_PORT:-29643}"
TLS_DIR="$SERVICES_DIR/s3-tls"
PID_FILE="$TLS_DIR/pid"
LOG_FILE="$TLS_DIR/versitygw.log"
STATE_FILE="$TLS_DIR/state"
ENV_FILE="$SERVICES_DIR/s3-tls.env"
CERTS="$TLS_DIR/certs"
TLS_LOCK="$SERVICES_DIR/s3-tls.lock"  # serialises up/down: test files run in parallel
TLS_ACCESS_KEY="${SLUICE_S3_TLS_ACCESS_KEY:-sluice-tls}"

tlog() { echo "s3-tls: $*" >&2; }
tdie() { tlog "ERROR: $*"; exit 1; }

healthy_tls() { # $1 = port: the health path answers 200 over HTTPS, the server checked against our CA
  [[ -f "$CERTS/ca.pem" ]] || return 1
  [[ "$(curl -s -o /dev/null -m 2 --cacert "$CERTS/ca.pem" -w '%{http_code}' "https://$HOST:$1$HEALTH_PATH" 2>/dev/null)" == "200" ]]
}

make_certs() {
  command -v openssl >/dev/null || tdie "openssl not found"
  rm -rf -- "$CERTS"
  mkdir -p "$CERTS"
  ( cd "$CERTS" && umask 077
    quiet() { local out; out=$("$@" 2>&1) || { printf 's3-tls: failed: %s\n%s\n' "$*" "$out" >&2; exit 1; }; }
    quiet openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=sluice-s3-test-ca"
    quiet openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1"
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
    quiet openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext
    rm -f server.csr server.ext ca.srl
    chmod 644 ca.pem server.pem )
}

write_tls_env() { # access secret
  ( umask 077; cat >"$ENV_FILE" <<EOF
SLUICE_S3_TLS_ENDPOINT=https://$HOST:$PORT
SLUICE_S3_TLS_CA=$CERTS/ca.pem
SLUICE_S3_TLS_ACCESS_KEY=$1
SLUICE_S3_TLS_SECRET_KEY=$2
SLUICE_S3_TLS_REGION=$REGION
EOF
  )
}

cmd_tls_status() {
  local pid port
  pid="$(read_pid)"
  port="$(state_get PORT)"
  if is_our_process "$pid" && healthy_tls "${port:-$PORT}"; then
    echo "running (pid $pid) https://$HOST:${port:-$PORT} data=$(state_get DATA_DIR)"
    return 0
  fi
  if is_our_process "$pid"; then echo "running (pid $pid) but NOT healthy on https://$HOST:${port:-$PORT}"; else echo "not running"; fi
  return 1
}

cmd_tls_down() {
  local pid
  pid="$(read_pid)"
  if is_our_process "$pid"; then
    stop_pid "$pid"
    tlog "stopped versitygw (pid $pid)"
  else
    tlog "not running"
  fi
  cleanup_state  # the data folder (only a sluice-s3.* one), pid, state and env files
  rm -rf -- "$TLS_DIR"
}

cmd_tls_up() {
  local running running_port
  running="$(read_pid)"
  if is_our_process "$running"; then
    running_port="$(state_get PORT)"
    if await_healthy "$START_TIMEOUT" "$running" healthy_tls "${running_port:-$PORT}"; then
      tlog "already running: $(cmd_tls_status)"
      return 0
    fi
    tlog "pid $running is running but not answering after ${START_TIMEOUT}s; restarting it"
  fi
  cmd_tls_down 2>/dev/null || true  # leftovers of an instance that died without `down`, or one not answering
  [[ "$(installed_version)" == "$VERSITYGW_VERSION" ]] || cmd_install
  command -v curl >/dev/null || tdie "curl not found on PATH (needed for the readiness check)"
  port_in_use "$PORT" && tdie "port $HOST:$PORT is already in use by another process (set SLUICE_S3_TLS_PORT)"
  mkdir -p "$TLS_DIR"
  [[ -f "$SERVICES_DIR/.gitignore" ]] || printf '*\n' >"$SERVICES_DIR/.gitignore"
  make_certs
  local secret data_dir pid
  secret="${SLUICE_S3_TLS_SECRET_KEY:-$(head -c 24 /dev/urandom | base64 | tr -d '/+=\n')}"
  data_dir="$(mktemp -d "${TMPDIR:-/tmp}/sluice-s3.XXXXXX")"
  ( umask 077; printf 'PORT=%s\nDATA_DIR=%s\n' "$PORT" "$data_dir" >"$STATE_FILE" )
  : >"$LOG_FILE"
  # Keys through versitygw's env vars, not argv (kept out of `ps`), as s3-server.sh does.
  ROOT_ACCESS_KEY="$TLS_ACCESS_KEY" ROOT_SECRET_KEY="$secret" \
    setsid "$BIN" --port "$HOST:$PORT" --region "$REGION" --health "$HEALTH_PATH" --keep-alive \
    --cert "$CERTS/server.pem" --key "$CERTS/server.key" \
    posix "$data_dir" >>"$LOG_FILE" 2>&1 </dev/null 9>&- &  # 9: the lock, not to be held by the server
  pid=$!
  echo "$pid" >"$PID_FILE"
  if ! await_healthy "$START_TIMEOUT" "$pid" healthy_tls "$PORT"; then
    local exited=0
    kill -0 "$pid" 2>/dev/null || exited=1
    tail -n 30 "$LOG_FILE" >&2 || true
    cmd_tls_down
    ((exited == 0)) || tdie "versitygw exited during startup"
    tdie "versitygw not ready on https://$HOST:$PORT within ${START_TIMEOUT}s"
  fi
  write_tls_env "$TLS_ACCESS_KEY" "$secret"
  tlog "versitygw $VERSITYGW_VERSION up (pid $pid) at https://$HOST:$PORT (private CA $CERTS/ca.pem); env in $ENV_FILE"
}

tls_locked() {
  mkdir -p "$SERVICES_DIR"
  exec 9>"$TLS_LOCK"
  flock -w $((START_TIMEOUT + 30)) 9 || tdie "another s3-tls.sh still holds $TLS_LOCK"
  "$@"
}

case "${1:-}" in
  up) tls_locked cmd_tls_up ;;
  down) tls_locked cmd_tls_down ;;
  status) cmd_tls_status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
