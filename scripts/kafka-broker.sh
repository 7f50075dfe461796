#!/usr/bin/env bash
# Local single-node Apache Kafka (KRaft, broker+controller) for integration tests.
#
#   scripts/kafka-broker.sh install   # gather the broker classpath from Maven Central (cached)
#   scripts/kafka-broker.sh up        # install if needed, format fresh storage, start, wait until ready
#   scripts/kafka-broker.sh status    # exit 0 when running and answering metadata, 1 otherwise
#   scripts/kafka-broker.sh down      # stop (TERM, then KILL after a timeout), delete its data
#
# Needs Java 17+ and Maven (install only). No docker, no download other than Maven Central.
# Everything it leaves runs from .services/ at the repo root (pid, log, env file).
#
# Environment:
#   SLUICE_CACHE                    cache root (default $HOME/.cache/sluice); libs go to
#                                   $SLUICE_CACHE/kafka-<version>/libs
#   SLUICE_KAFKA_PORT               PLAINTEXT listener port on 127.0.0.1 (default 19092)
#   SLUICE_KAFKA_CONTROLLER_PORT    CONTROLLER listener port on 127.0.0.1 (default 19093)
#   SLUICE_KAFKA_HEAP_OPTS          default "-Xms256m -Xmx512m"
#   SLUICE_KAFKA_JAVA_OPTS          extra JVM options
#   SLUICE_KAFKA_LOG_LEVEL          log4j2 root level (default WARN)
#   SLUICE_KAFKA_START_TIMEOUT      seconds to wait for readiness (default 90)
#   SLUICE_KAFKA_STOP_TIMEOUT       seconds between SIGTERM and SIGKILL (default 30)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
# shellcheck source=scripts/lib/await-healthy.sh
. "$SCRIPT_DIR/lib/await-healthy.sh"
POM="$SCRIPT_DIR/kafka/pom.xml"
LOG4J_CONF="$SCRIPT_DIR/kafka/log4j2.properties"

KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM" | head -n1)"
CACHE_ROOT="${SLUICE_CACHE:-$HOME/.cache/sluice}"
KAFKA_HOME="$CACHE_ROOT/kafka-$KAFKA_VERSION"
LIBS="$KAFKA_HOME/libs"
STAMP="$KAFKA_HOME/.installed"

PORT="${SLUICE_KAFKA_PORT:-19092}"
CONTROLLER_PORT="${SLUICE_KAFKA_CONTROLLER_PORT:-19093}"
HEAP_OPTS="${SLUICE_KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
START_TIMEOUT="${SLUICE_KAFKA_START_TIMEOUT:-90}"
STOP_TIMEOUT="${SLUICE_KAFKA_STOP_TIMEOUT:-30}"

SERVICES="${SLUICE_SERVICES_DIR:-$REPO_ROOT/.services}" # SLUICE_SERVICES_DIR: a second instance elsewhere (npm run faults)
PID_FILE="$SERVICES/kafka.pid"
LOG_FILE="$SERVICES/kafka.log"   # log4j2 output
OUT_FILE="$SERVICES/kafka.out"   # the JVM's own stdout/stderr (crashes, early errors)
ENV_FILE="$SERVICES/kafka.env"
DATA_FILE="$SERVICES/kafka.datadir"

log() { printf 'kafka-broker: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# --- install ---------------------------------------------------------------

pom_digest() { sha256sum <"$POM" | cut -d' ' -f1; }

is_installed() {
  [[ -f "$STAMP" && "$(cat "$STAMP")" == "$(pom_digest)" ]] && compgen -G "$LIBS/kafka_2.13-*.jar" >/dev/null
}

cmd_install() {
  command -v java >/dev/null || die "java not found (Kafka $KAFKA_VERSION needs Java 17+)"
  if is_installed; then
    log "Kafka $KAFKA_VERSION already installed in $LIBS"
    return 0
  fi
  command -v mvn >/dev/null || die "mvn not found (needed once to gather the Kafka classpath)"
  mkdir -p "$KAFKA_HOME"
  local tmp start
  tmp="$(mktemp -d "$KAFKA_HOME/libs.tmp.XXXXXX")"
  start=$SECONDS
  log "installing Kafka $KAFKA_VERSION into $LIBS (mvn dependency:copy-dependencies) ..."
  # Bounded: a stalled Maven Central fails the install, named, instead of holding CI.
  if ! timeout --kill-after=30 900 mvn -B -q -f "$POM" dependency:copy-dependencies -DoutputDirectory="$tmp" >"$tmp.mvn.log" 2>&1; then
    cat "$tmp.mvn.log" >&2
    rm -rf "$tmp" "$tmp.mvn.log"
    die "mvn could not gather the Kafka classpath (or passed its 900 s bound)"
  fi
  rm -f "$tmp.mvn.log"
  rm -rf "$LIBS"
  mv "$tmp" "$LIBS"
  pom_digest >"$STAMP"
  log "installed $(find "$LIBS" -name '*.jar' | wc -l) jars in $((SECONDS - start))s"
}

# --- helpers ---------------------------------------------------------------

# The live broker pid recorded in pid file $1 (default: this broker's), or fail.
# kafka-cluster.sh and kafka-sasl.sh (which source this file) call it with theirs.
running_pid() {
  local file=${1:-$PID_FILE} pid
  [[ -f "$file" ]] || return 1
  pid="$(cat "$file")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # Guard against a recycled pid: it must be our broker.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'kafka\.Kafka' || return 1
  echo "$pid"
}

# The PLAINTEXT port of the broker that is running (from its own server.properties),
# so that status/up agree with it even when SLUICE_KAFKA_PORT changed since.
running_port() {
  local data p
  data="$(cat "$DATA_FILE" 2>/dev/null)" || { echo "$PORT"; return; }
  p="$(sed -n 's|^advertised.listeners=PLAINTEXT://127.0.0.1:\([0-9]*\)$|\1|p' "$data/server.properties" 2>/dev/null)"
  echo "${p:-$PORT}"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Sends a Metadata v4 request (all topics) to 127.0.0.1:$1 and succeeds when the
# answer carries our correlation id and lists at least $2 brokers (default 1).
# Request: size=21 | api_key=3 | api_version=4 | correlation_id=0x5151 |
#          client_id="sluice" | topics=null(-1) | allow_auto_topic_creation=false
# Response (v4, header v0): size | correlation_id | throttle_time_ms | brokers count | ...
metadata_ready() {
  local bytes
  # shellcheck disable=SC2016  # $1 is expanded by the inner bash
  bytes="$(timeout 5 bash -c '
      exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
      printf "\x00\x00\x00\x15\x00\x03\x00\x04\x00\x00\x51\x51\x00\x06sluice\xff\xff\xff\xff\x00" >&3
      head -c 16 <&3 | od -An -v -tu1' _ "$1" 2>/dev/null)" || return 1
  # shellcheck disable=SC2206
  local b=($bytes)
  [[ ${#b[@]} -eq 16 ]] || return 1
  [[ ${b[4]} -eq 0 && ${b[5]} -eq 0 && ${b[6]} -eq 81 && ${b[7]} -eq 81 ]] || return 1
  local brokers=$(( (b[12] << 24) | (b[13] << 16) | (b[14] << 8) | b[15] ))
  (( brokers >= ${2:-1} ))
}

# Same shape as `kafka.tools.StorageTool random-uuid` (a Kafka Uuid: 16 random bytes,
# base64url without padding, not starting with '-'), without paying for a JVM start.
new_cluster_id() {
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [[ ${#id} -eq 22 && "$id" != -* ]] && break
  done
  echo "$id"
}

show_log_tail() {
  local f
  for f in "$OUT_FILE" "$LOG_FILE"; do
    if [[ -s "$f" ]]; then
      log "---- last lines of $f ----"
      tail -n 40 "$f" >&2
    fi
  done
}

write_server_properties() {
  local data="$1" props="$2"
  cat >"$props" <<EOF
# Generated by scripts/kafka-broker.sh for local tests. Not for production.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT

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
# The consumer group protocol (KIP-848): the broker, not the member, sets the
# session timeout. 12 s (the classic restart tests' own), down from 45 s, so a
# test that waits a dead member out takes seconds, not a minute; the heartbeat
# interval stays the broker's default (5 s), what a user's cluster runs.
group.consumer.min.session.timeout.ms=6000
group.consumer.session.timeout.ms=12000

# Fast retention for tests: check every second, start checking at once,
# delete files as soon as a segment is dropped.
log.retention.check.interval.ms=1000
log.initial.task.delay.ms=0
log.segment.delete.delay.ms=0

# Smaller cleaner buffer: the default 128 MiB is a quarter of this heap.
log.cleaner.dedupe.buffer.size=16777216
EOF
}

# --- up / down / status ------------------------------------------------------

cmd_up() {
  local pid
  if pid="$(running_pid)"; then
    PORT="$(running_port)"
    if await_healthy "$START_TIMEOUT" "$pid" metadata_ready "$PORT"; then
      log "already running (pid $pid) on 127.0.0.1:$PORT"
      write_env_file
      return 0
    fi
    log "pid $pid is running but not answering on 127.0.0.1:$PORT after ${START_TIMEOUT}s; restarting it"
    cmd_down
    PORT="${SLUICE_KAFKA_PORT:-19092}"
  fi
  rm -f "$PID_FILE"

  cmd_install
  mkdir -p "$SERVICES"
  [[ -f "$SERVICES/.gitignore" ]] || printf '*\n' >"$SERVICES/.gitignore"

  port_open "$PORT" && die "127.0.0.1:$PORT is already in use by another process (set SLUICE_KAFKA_PORT)"
  port_open "$CONTROLLER_PORT" && die "127.0.0.1:$CONTROLLER_PORT is already in use by another process (set SLUICE_KAFKA_CONTROLLER_PORT)"

  : >"$LOG_FILE"
  : >"$OUT_FILE"

  remove_data_dir  # a leftover from a broker that died without `down`

  local data props cluster_id cp start
  data="$(mktemp -d "${TMPDIR:-/tmp}/sluice-kafka.XXXXXX")"
  echo "$data" >"$DATA_FILE"
  props="$data/server.properties"
  write_server_properties "$data" "$props"
  cp="$LIBS/*"
  start=$SECONDS

  local java_common=(-Dlog4j2.configurationFile="$LOG4J_CONF" -Dsluice.kafka.logFile="$LOG_FILE" -Djava.awt.headless=true)
  cluster_id="$(new_cluster_id)"
  java -Xmx256m "${java_common[@]}" -cp "$cp" kafka.tools.StorageTool format \
      -t "$cluster_id" -c "$props" >>"$OUT_FILE" 2>&1 \
    || { show_log_tail; die "StorageTool format failed"; }

  launch "$data" "$props" "cluster $cluster_id"
  write_env_file
  log "ready on 127.0.0.1:$PORT in $((SECONDS - start))s (pid $(read_pid_file)); env in $ENV_FILE"
}

read_pid_file() { tr -dc '0-9' <"$PID_FILE" 2>/dev/null; }

# Starts the broker JVM on an existing, formatted data dir ($1, its properties $2) and
# waits until it answers metadata; what it says it started goes after "started pid N (".
launch() {
  local data="$1" props="$2" what="$3" cp="$LIBS/*" pid
  local java_common=(-Dlog4j2.configurationFile="$LOG4J_CONF" -Dsluice.kafka.logFile="$LOG_FILE" -Djava.awt.headless=true)
  # shellcheck disable=SC2086
  setsid nohup java -server $HEAP_OPTS \
      -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
      -XX:+ExplicitGCInvokesConcurrent \
      "${java_common[@]}" ${SLUICE_KAFKA_JAVA_OPTS:-} \
      -cp "$cp" kafka.Kafka "$props" \
      </dev/null >>"$OUT_FILE" 2>&1 &
  pid=$!
  echo "$pid" >"$PID_FILE"
  log "started pid $pid ($what, data $data); waiting for 127.0.0.1:$PORT ..."

  if ! await_healthy "$START_TIMEOUT" "$pid" listening "$PORT"; then
    show_log_tail
    if ! kill -0 "$pid" 2>/dev/null; then
      cmd_down 2>/dev/null
      die "broker process $pid exited during startup"
    fi
    log "broker not ready on 127.0.0.1:$PORT after ${START_TIMEOUT}s; stopping it"
    cmd_down
    die "broker not ready on 127.0.0.1:$PORT after ${START_TIMEOUT}s (SLUICE_KAFKA_START_TIMEOUT)"
  fi
}

# The broker on 127.0.0.1:$1 accepts connections and answers metadata.
listening() { port_open "$1" && metadata_ready "$1"; }

# The fault runs (examples/faults): SIGKILL the broker, its data kept, as a crash
# leaves it; `start` brings it back on the same data (no format), as a restart does.
cmd_kill() {
  local pid
  pid="$(running_pid)" || die "not running"
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  rm -f "$PID_FILE"
  log "killed pid $pid (SIGKILL); data kept in $(cat "$DATA_FILE")"
}

cmd_start() {
  running_pid >/dev/null && die "already running"
  [[ -f "$DATA_FILE" ]] || die "no data dir of a killed broker (run up)"
  local data start=$SECONDS
  data="$(cat "$DATA_FILE")"
  PORT="$(running_port)"
  launch "$data" "$data/server.properties" "restart on kept data"
  log "ready again on 127.0.0.1:$PORT in $((SECONDS - start))s (pid $(read_pid_file))"
}

write_env_file() {
  mkdir -p "$SERVICES"
  printf 'SLUICE_KAFKA_BROKERS=127.0.0.1:%s\n' "$PORT" >"$ENV_FILE"
}

cmd_down() {
  local pid
  if pid="$(running_pid)"; then
    log "stopping pid $pid ..."
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_TIMEOUT))
    while kill -0 "$pid" 2>/dev/null && (( SECONDS < deadline )); do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      log "pid $pid still alive after ${STOP_TIMEOUT}s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
    log "stopped"
  else
    log "not running"
  fi
  rm -f "$PID_FILE" "$ENV_FILE"
  remove_data_dir
}

remove_data_dir() {
  [[ -f "$DATA_FILE" ]] || return 0
  local data
  data="$(cat "$DATA_FILE")"
  case "$data" in
    */sluice-kafka.?*) rm -rf -- "$data" ;;  # only ever a dir that `up` made
  esac
  rm -f "$DATA_FILE"
}

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    PORT="$(running_port)"
    if metadata_ready "$PORT"; then
      echo "running: pid $pid, 127.0.0.1:$PORT, Kafka $KAFKA_VERSION, data $(cat "$DATA_FILE" 2>/dev/null || echo '?')"
      return 0
    fi
    echo "starting or unhealthy: pid $pid, not answering metadata on 127.0.0.1:$PORT"
    return 1
  fi
  echo "stopped"
  return 1
}

# Sourced (scripts/kafka-cluster.sh reuses the install, classpath and readiness
# check): define the functions only.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  case "${1:-}" in
    install) cmd_install ;;
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    kill) cmd_kill ;;
    start) cmd_start ;;
    *) echo "usage: $0 install|up|down|status|kill|start" >&2; exit 2 ;;
  esac
fi
