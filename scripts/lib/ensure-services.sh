# Sourced by the scripts that need some of the project's services for one run (replay.sh,
# sim-vs-real.sh). Run from the repo root.
#   ensure_services NAME…   starts each named service (s3-server, toxiproxy: scripts/NAME.sh)
#                           that is not running, and on EXIT stops the ones it started,
#                           last started first; services already running are left alone.
ensure_services() {
  ensured_started=()
  trap 'for ((i = ${#ensured_started[@]} - 1; i >= 0; i--)); do bash "scripts/${ensured_started[i]}.sh" down >&2 || true; done' EXIT
  local svc
  for svc in "$@"; do
    if ! bash "scripts/$svc.sh" status >/dev/null 2>&1; then ensured_started+=("$svc"); fi
    bash "scripts/$svc.sh" up >&2
  done
}
