# Sourced by scripts that need the local Kafka broker and S3 server for one run
# (bench-e2e.sh, soak.sh, recovery.sh, chaos.sh). `services_for_run` starts them
# (scripts/s3-server.sh and kafka-broker.sh up; logs to stderr), exports their .services/*.env, and
# stops on exit only the services that were not already running before.
# Run from the repo root. Ports: SLUICE_S3_PORT, SLUICE_KAFKA_PORT,
# SLUICE_KAFKA_CONTROLLER_PORT (see services.sh).
services_for_run() {
  s3_was_up=0
  kafka_was_up=0
  # Up means its process runs, healthy or not yet: a service someone else started
  # is never stopped here. (On `status`'s exit code alone, a health check slow under
  # load read the test suite's shared broker as down, and this run's exit trap
  # stopped it under the tests still using it.)
  case "$(bash scripts/s3-server.sh status 2>/dev/null || true)" in running*) s3_was_up=1 ;; esac
  case "$(bash scripts/kafka-broker.sh status 2>/dev/null || true)" in running* | "starting or unhealthy"*) kafka_was_up=1 ;; esac
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
