# Sourced by the scripts that run one TypeScript entry of the workspace on its sources
# (soak.sh, bench-e2e.sh, chaos.sh, recovery.sh, brokers.sh). Run from the repo root.
#   repo_node                      the repo's pinned Node (node_modules/.bin/node), else node on PATH
#   run_source SECONDS FILE ARGS…  FILE on repo_node with --conditions=@sluice/source, bounded:
#                                  SIGTERM after SECONDS, SIGKILL 30 s later
repo_node() {
  if [[ -x node_modules/.bin/node ]]; then echo node_modules/.bin/node; else echo node; fi
}
run_source() {
  local seconds=$1 file=$2
  shift 2
  timeout --kill-after=30 "$seconds" "$(repo_node)" --conditions=@sluice/source "$file" "$@"
}
