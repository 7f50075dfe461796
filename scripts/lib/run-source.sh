# Sourced by the scripts that run one TypeScript entry of the workspace on its sources
# (soak.sh, bench-e2e.sh, chaos.sh, recovery.sh, brokers.sh). Run from the repo root.
#   repo_node                      the repo's pinned Node (node_modules/.bin/node), else node on PATH
#   run_source SECONDS FILE ARGS…  FILE on repo_node with --conditions=@sluice/source, bounded:
#                                  SIGTERM after SECONDS, SIGKILL 30 s later
#
# NODE_COMPILE_CACHE (unless set): Node's on-disk V8 code cache for every module it compiles,
# TypeScript included, in the directory Node's docs recommend (under the temp directory), so
# that a process started again (a bench round, a restarted archiver) does not compile the
# same module graph again. Python does this by default (the peer's venv holds its .pyc files
# from the install); Node only when asked. Measured here (bench:peer, 200 k records, the
# archiver's process tree): 2.86-2.97 s of CPU a run without it, 2.23 s with it warm; the
# first run that fills it costs the same as without. NODE_DISABLE_COMPILE_CACHE=1 turns it off.
export NODE_COMPILE_CACHE="${NODE_COMPILE_CACHE:-${TMPDIR:-/tmp}/node-compile-cache}"
repo_node() {
  if [[ -x node_modules/.bin/node ]]; then echo node_modules/.bin/node; else echo node; fi
}
run_source() {
  local seconds=$1 file=$2
  shift 2
  timeout --kill-after=30 "$seconds" "$(repo_node)" --conditions=@sluice/source "$file" "$@"
}
