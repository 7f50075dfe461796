# Sourced by scripts that need the local Kafka broker and S3 server for one run
# (bench-e2e.sh, soak.sh, recovery.sh, chaos.sh). `services_for_run` starts them
# (scripts/s3-server.sh and kafka-broker.sh up; logs to stderr), exports their .services/*.env, and
# stops on exit only the services that were not already running before.
# Run from the repo root. Ports: SLUICE_S3_PORT, SLUICE_KAFKA_PORT,
# SLUICE_KAFKA_CONTROLLER_PORT (see services.sh).
. scripts/lib/service-running.sh
services_for_run() {
  s3_was_up=0
  kafka_was_up=0
  # Up means its process runs, healthy or not yet (service-running.sh).
  service_running scripts/s3-server.sh && s3_was_up=1
  service_running scripts/kafka-broker.sh && kafka_was_up=1
  stop_started_services() {
    if [[ $kafka_was_up == 0 ]]; then bash scripts/kafka-broker.sh down >&2 || true; fi
    if [[ $s3_was_up == 0 ]]; then bash scripts/s3-server.sh down >&2 || true; fi
  }
  trap stop_started_services EXIT
  # The broker and the S3 server only (services.sh up would start toxiproxy too).
  bash scripts/s3-server.sh up >&2
  bash scripts/kafka-broker.sh up >&2
  set -a
  for f in .services/*.env; do [ -f "$f" ] && . "$f"; done
  set +a
}
