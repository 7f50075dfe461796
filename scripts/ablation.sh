#!/usr/bin/env bash
# npm run ablation [-- OUT_DIR]
#
# The default composition with each rule of examples/ablation/Ablations.ts switched off in turn,
# against the default itself, in the simulator: on the family test set (SLUICE_ABLATION_COUNT
# scenarios of family mixed, default 200, drawn from SLUICE_ABLATION_SEED, default 3: the test
# seed, which chose nothing) and on the shipped scenarios (packages/policies/scenarios,
# packages/testkit/scenarios). Writes OUT_DIR (default reports/ablation): the family's scenario
# files, one JSON line per run, and OUT_DIR/table.md (examples/ablation/table.ts). Two jobs, one
# per core, each a share of the variants; each bounded by SLUICE_ABLATION_TIMEOUT seconds (default
# 7200: twice the longer job of the run below). 200 scenarios × 9 variants took 62 minutes on two cores (2026-12-07).
set -euo pipefail
cd "$(dirname "$0")/.."
# One optional operand, the output folder; --help prints the comment above. A flag is not a folder.
case "${1-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  -*) echo "ablation: unknown option $1 (npm run ablation [-- OUT_DIR]; --help)" >&2; exit 2 ;;
esac
if (( $# > 1 )); then echo "ablation: one output folder at most, got $# arguments (npm run ablation [-- OUT_DIR])" >&2; exit 2; fi
out=${1:-reports/ablation}
count=${SLUICE_ABLATION_COUNT:-200}
seed=${SLUICE_ABLATION_SEED:-3}
timeout=${SLUICE_ABLATION_TIMEOUT:-7200}
variants=${SLUICE_ABLATION_VARIANTS:-default,no-probes,no-pending,own-defaults,no-throttle,no-batch,throttle-no-restore,batch-no-restore,with-shared}
. scripts/lib/run-source.sh
mkdir -p "$out"
family="$out/family-mixed-seed-$seed-$count"
if [[ ! -d $family ]]; then
  npx --no-install sluice-sim generate --family mixed --count "$count" --seed "$seed" --out "$family" >&2
fi
IFS=, read -r -a all <<< "$variants"
jobs=()
for job in 0 1; do
  mine=()
  for i in "${!all[@]}"; do
    if (( i % 2 == job )); then mine+=("${all[$i]}"); fi
  done
  if [[ ${#mine[@]} == 0 ]]; then continue; fi
  list=$(IFS=,; echo "${mine[*]}")
  (
    run_source "$timeout" examples/ablation/main.ts "$family" --variants "$list" --out "$out/family.$job.jsonl"
    run_source "$timeout" examples/ablation/main.ts packages/policies/scenarios --variants "$list" --out "$out/matrix.policies.$job.jsonl"
    run_source "$timeout" examples/ablation/main.ts packages/testkit/scenarios --variants "$list" --out "$out/matrix.testkit.$job.jsonl"
  ) 2> "$out/job.$job.log" &
  jobs+=($!)
done
status=0
for pid in "${jobs[@]}"; do wait "$pid" || status=$?; done
"$(repo_node)" --conditions=@sluice/source examples/ablation/table.ts "$out"
exit "$status"
