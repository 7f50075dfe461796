# Sourced. `service_running SCRIPT` succeeds when the service that SCRIPT
# (scripts/s3-server.sh, kafka-broker.sh) manages has its process running,
# healthy or not yet: its `status` line begins "running" or "starting or
# unhealthy". A run that found a service so never stops it on exit. `status`'s
# exit code alone also fails a running service whose health check is slow under
# load: a run then took the test suite's shared broker for its own and stopped it.
service_running() {
  case "$(bash "$1" status 2>/dev/null || true)" in
    running* | "starting or unhealthy"*) return 0 ;;
  esac
  return 1
}
