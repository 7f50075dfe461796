#!/usr/bin/env bash
# A local single-node Apache Kafka (KRaft) whose client listener is SASL_SSL and requires
# SCRAM-SHA-512, for the authentication tests (issue 27 item 6).
#
#   scripts/kafka-sasl.sh up       # install if needed, certificates, format with a SCRAM user, start, wait
#   scripts/kafka-sasl.sh status   # exit 0 when running and answering metadata, 1 otherwise
#   scripts/kafka-sasl.sh down     # stop (TERM, then KILL after a timeout), delete data and certificates
#
# Separate from scripts/kafka-broker.sh (the plain broker the other tests share): its own
# ports, files and process, never started by scripts/services.sh (a JVM start is ~10 s; the
# tests that need it start it, see packages/testkit/src/Services.ts). It reuses
# kafka-broker.sh (sourced, as scripts/kafka-cluster.sh does): the Maven-Central classpath,
# its install, the log4j2 config, the cluster-id generator and the raw Metadata readiness
# check. Certificates come from scripts/kafka-certs.sh (a fresh CA at every `up`).
#
# Listeners, all on 127.0.0.1:
#   SASL_SSL   $SLUICE_KAFKA_SASL_PORT (default 29692): TLS with the broker certificate for
#              127.0.0.1 (signed by the fresh CA), then SASL; SCRAM-SHA-512 is the only
#              mechanism enabled. No client certificate is asked for.
#   INTERNAL   $SLUICE_KAFKA_SASL_INTERNAL_PORT (default 29693), PLAINTEXT: inter-broker
#              traffic and the readiness check only (a single node replicates to nobody; a
#              SASL inter-broker listener would need a second, super-user credential).
#   CONTROLLER $SLUICE_KAFKA_SASL_CONTROLLER_PORT (default 29694), PLAINTEXT.
# A client bootstrapping on the SASL_SSL port is answered with that listener's address
# only, so everything it does goes through TLS + SCRAM.
#
# The SCRAM user is written into the metadata log by Kafka's own tool at format time
# (`kafka-storage format --add-scram 'SCRAM-SHA-512=[name=…,password=…]'`, i.e.
# kafka.tools.StorageTool). The password is random at every `up` unless
# SLUICE_KAFKA_SASL_PASSWORD is set; it is written to the env file (mode 600), not logged.
#
# Failed authentications are logged by the broker at INFO
# (org.apache.kafka.common.network.Selector: "Failed authentication with /127.0.0.1 …"), so a
# test can count the attempts a client made with a wrong password from outside the client.
#
# Files: .services/kafka-sasl/ (pid, kafka.log, kafka.out, certs/, datadir) and
# .services/kafka-sasl.env:
#   SLUICE_KAFKA_SASL_BROKERS        127.0.0.1:<SASL_SSL port>
#   SLUICE_KAFKA_SASL_CA             the CA certificate (PEM) the broker's certificate chains to
#   SLUICE_KAFKA_SASL_MECHANISM      SCRAM-SHA-512
#   SLUICE_KAFKA_SASL_USERNAME       the SCRAM user
#   SLUICE_KAFKA_SASL_PASSWORD       its password
#   SLUICE_KAFKA_SASL_PLAIN_BROKERS  127.0.0.1:<INTERNAL port> (test set-up only: topics)
#   SLUICE_KAFKA_SASL_LOG            the broker's log4j2 file (failed authentications)
#
# Environment:
#   SLUICE_KAFKA_SASL_PORT, SLUICE_KAFKA_SASL_INTERNAL_PORT, SLUICE_KAFKA_SASL_CONTROLLER_PORT
#   SLUICE_KAFKA_SASL_USERNAME   default sluice-archiver
#   SLUICE_KAFKA_SASL_PASSWORD   default: 24 random characters at every `up`
#   SLUICE_KAFKA_SASL_HEAP_OPTS  default "-Xms128m -Xmx384m"
#   SLUICE_KAFKA_SASL_START_TIMEOUT  seconds to wait for readiness (default 90)
#   SLUICE_CACHE, SLUICE_KAFKA_LOG_LEVEL, SLUICE_KAFKA_STOP_TIMEOUT as for scripts/kafka-broker.sh
set -euo pipefail

SASL_SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/kafka-broker.sh
. "$SASL_SCRIPT_DIR/kafka-broker.sh"

SASL_PORT="${SLUICE_KAFKA_SASL_PORT:-29692}"
SASL_INTERNAL_PORT="${SLUICE_KAFKA_SASL_INTERNAL_PORT:-29693}"
SASL_CONTROLLER_PORT="${SLUICE_KAFKA_SASL_CONTROLLER_PORT:-29694}"
SASL_USER="${SLUICE_KAFKA_SASL_USERNAME:-sluice-archiver}"
SASL_HEAP="${SLUICE_KAFKA_SASL_HEAP_OPTS:--Xms128m -Xmx384m}"
SASL_START_TIMEOUT="${SLUICE_KAFKA_SASL_START_TIMEOUT:-90}"
SASL_MECHANISM="SCRAM-SHA-512"

SASL_DIR="$SERVICES/kafka-sasl"
SASL_ENV="$SERVICES/kafka-sasl.env"
SASL_PID_FILE="$SASL_DIR/pid"
SASL_LOG="$SASL_DIR/kafka.log"
SASL_OUT="$SASL_DIR/kafka.out"
SASL_DATA_FILE="$SASL_DIR/datadir"
# Serialises up/down: test files running in parallel may each ask for the broker.
SASL_LOCK="$SERVICES/kafka-sasl.lock"

slog() { printf 'kafka-sasl: %s\n' "$*" >&2; }
sdie() { slog "ERROR: $*"; exit 1; }

sasl_pid() {
  local pid
  [[ -f "$SASL_PID_FILE" ]] || return 1
  pid="$(cat "$SASL_PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'kafka\.Kafka' || return 1
  echo "$pid"
}

# The INTERNAL port of the running broker (from its properties), so that status agrees
# with it when the environment changed since.
sasl_running_internal_port() {
  local data p
  data="$(cat "$SASL_DATA_FILE" 2>/dev/null)" || { echo "$SASL_INTERNAL_PORT"; return; }
  p="$(sed -n 's|^listeners=.*INTERNAL://127.0.0.1:\([0-9]*\).*$|\1|p' "$data/server.properties" 2>/dev/null)"
  echo "${p:-$SASL_INTERNAL_PORT}"
}

write_sasl_properties() { # data certs
  local data=$1 certs=$2
  cat >"$data/server.properties" <<EOF
# Generated by scripts/kafka-sasl.sh for local tests. Not for production.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$SASL_CONTROLLER_PORT
listeners=SASL_SSL://127.0.0.1:$SASL_PORT,INTERNAL://127.0.0.1:$SASL_INTERNAL_PORT,CONTROLLER://127.0.0.1:$SASL_CONTROLLER_PORT
advertised.listeners=SASL_SSL://127.0.0.1:$SASL_PORT,INTERNAL://127.0.0.1:$SASL_INTERNAL_PORT
inter.broker.listener.name=INTERNAL
controller.listener.names=CONTROLLER
listener.security.protocol.map=SASL_SSL:SASL_SSL,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT

# The client listener: the broker's key from the PKCS12 keystore kafka-certs.sh made,
# SCRAM-SHA-512 the only mechanism, credentials checked against the metadata log (the
# SCRAM login module, with no login credentials of its own: nobody logs in as the broker).
listener.name.sasl_ssl.ssl.keystore.type=PKCS12
listener.name.sasl_ssl.ssl.keystore.location=$certs/broker.p12
listener.name.sasl_ssl.ssl.keystore.password=$(cat "$certs/broker.password")
listener.name.sasl_ssl.sasl.enabled.mechanisms=$SASL_MECHANISM
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
sasl.enabled.mechanisms=$SASL_MECHANISM

log.dirs=$data/logs
metadata.log.dir=$data/metadata

num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.cleaner.dedupe.buffer.size=16777216
num.network.threads=2
num.io.threads=2
background.threads=2
EOF
}

write_sasl_env() { # password
  ( umask 077; {
    printf 'SLUICE_KAFKA_SASL_BROKERS=127.0.0.1:%s\n' "$SASL_PORT"
    printf 'SLUICE_KAFKA_SASL_CA=%s\n' "$SASL_DIR/certs/ca.pem"
    printf 'SLUICE_KAFKA_SASL_MECHANISM=%s\n' "$SASL_MECHANISM"
    printf 'SLUICE_KAFKA_SASL_USERNAME=%s\n' "$SASL_USER"
    printf 'SLUICE_KAFKA_SASL_PASSWORD=%s\n' "$1"
    printf 'SLUICE_KAFKA_SASL_PLAIN_BROKERS=127.0.0.1:%s\n' "$SASL_INTERNAL_PORT"
    printf 'SLUICE_KAFKA_SASL_LOG=%s\n' "$SASL_LOG"
  } >"$SASL_ENV" )
}

cmd_sasl_status() {
  local pid port
  if pid="$(sasl_pid)"; then
    port="$(sasl_running_internal_port)"
    if metadata_ready "$port" && [[ -f "$SASL_ENV" ]]; then
      echo "running: pid $pid, SASL_SSL $(sed -n 's/^SLUICE_KAFKA_SASL_BROKERS=//p' "$SASL_ENV") ($SASL_MECHANISM), Kafka $KAFKA_VERSION"
      return 0
    fi
    echo "starting or unhealthy: pid $pid, not answering metadata on 127.0.0.1:$port"
    return 1
  fi
  echo "stopped"
  return 1
}

cmd_sasl_down() {
  local pid
  if pid="$(sasl_pid)"; then
    slog "stopping pid $pid ..."
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_TIMEOUT))
    while kill -0 "$pid" 2>/dev/null && (( SECONDS < deadline )); do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      slog "pid $pid still alive after ${STOP_TIMEOUT}s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
    slog "stopped"
  else
    slog "not running"
  fi
  if [[ -f "$SASL_DATA_FILE" ]]; then
    local data
    data="$(cat "$SASL_DATA_FILE")"
    case "$data" in */sluice-kafka-sasl.?*) rm -rf -- "$data" ;; esac  # only ever a dir `up` made
  fi
  rm -rf -- "$SASL_DIR" "$SASL_ENV"
}

cmd_sasl_up() {
  if cmd_sasl_status >/dev/null 2>&1; then
    slog "already running: $(cmd_sasl_status)"
    return 0
  fi
  cmd_sasl_down 2>/dev/null || true  # leftovers of a broker that died without `down`
  cmd_install
  local p
  for p in "$SASL_PORT" "$SASL_INTERNAL_PORT" "$SASL_CONTROLLER_PORT"; do
    port_open "$p" && sdie "127.0.0.1:$p is already in use by another process (set SLUICE_KAFKA_SASL_PORT / _INTERNAL_PORT / _CONTROLLER_PORT)"
  done
  mkdir -p "$SASL_DIR"
  [[ -f "$SERVICES/.gitignore" ]] || printf '*\n' >"$SERVICES/.gitignore"
  local certs="$SASL_DIR/certs" data cluster_id password start=$SECONDS
  bash "$SASL_SCRIPT_DIR/kafka-certs.sh" "$certs"
  password="${SLUICE_KAFKA_SASL_PASSWORD:-$(head -c 18 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')}"
  data="$(mktemp -d "${TMPDIR:-/tmp}/sluice-kafka-sasl.XXXXXX")"
  echo "$data" >"$SASL_DATA_FILE"
  write_sasl_properties "$data" "$certs"
  : >"$SASL_LOG"
  : >"$SASL_OUT"
  # The failed-authentication line is INFO; the rest stays at the shared config's levels.
  local java_common=(-Dlog4j2.configurationFile="$LOG4J_CONF" -Dsluice.kafka.logFile="$SASL_LOG"
    -Dsluice.kafka.authLogLevel=INFO -Djava.awt.headless=true)
  cluster_id="$(new_cluster_id)"
  # Kafka's own tool writes the SCRAM credential (salted, 4096 iterations) into the
  # metadata log before the first start.
  java -Xmx128m "${java_common[@]}" -cp "$LIBS/*" kafka.tools.StorageTool format \
      -t "$cluster_id" -c "$data/server.properties" \
      --add-scram "$SASL_MECHANISM=[name=$SASL_USER,password=$password]" >>"$SASL_OUT" 2>&1 \
    || { tail -n 20 "$SASL_OUT" >&2; cmd_sasl_down; sdie "StorageTool format failed"; }
  # shellcheck disable=SC2086
  setsid nohup java -server $SASL_HEAP \
    -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExplicitGCInvokesConcurrent -XX:ActiveProcessorCount=2 \
    "${java_common[@]}" ${SLUICE_KAFKA_JAVA_OPTS:-} \
    -cp "$LIBS/*" kafka.Kafka "$data/server.properties" \
    </dev/null >>"$SASL_OUT" 2>&1 9>&- &  # 9: the lock, not to be held by the broker
  echo $! >"$SASL_PID_FILE"
  slog "started pid $(cat "$SASL_PID_FILE") (cluster $cluster_id, data $data); waiting ..."
  local deadline=$((SECONDS + SASL_START_TIMEOUT))
  until port_open "$SASL_PORT" && metadata_ready "$SASL_INTERNAL_PORT"; do
    sasl_pid >/dev/null || { tail -n 30 "$SASL_OUT" "$SASL_LOG" >&2 2>/dev/null || true; cmd_sasl_down; sdie "broker exited during startup"; }
    if (( SECONDS >= deadline )); then
      tail -n 30 "$SASL_OUT" "$SASL_LOG" >&2 2>/dev/null || true
      cmd_sasl_down
      sdie "broker not ready after ${SASL_START_TIMEOUT}s (SLUICE_KAFKA_SASL_START_TIMEOUT)"
    fi
    sleep 0.25
  done
  write_sasl_env "$password"
  slog "ready in $((SECONDS - start))s: SASL_SSL on 127.0.0.1:$SASL_PORT ($SASL_MECHANISM, user $SASL_USER); env in $SASL_ENV"
}

sasl_locked() {
  mkdir -p "$SERVICES"
  exec 9>"$SASL_LOCK"
  flock -w $((SASL_START_TIMEOUT + STOP_TIMEOUT + 30)) 9 || sdie "another kafka-sasl.sh still holds $SASL_LOCK"
  "$@"
}

case "${1:-}" in
  up) sasl_locked cmd_sasl_up ;;
  down) sasl_locked cmd_sasl_down ;;
  status) cmd_sasl_status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
