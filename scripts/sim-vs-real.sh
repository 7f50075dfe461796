#!/usr/bin/env bash
# npm run sim-vs-real [-- OUT_DIR [SCENARIO…]]
#
# Each scenario (default: examples/replay/scenarios/*.json) × default, deliveryrate, aimd,
# fixed:8, in the simulator and replayed against the real S3 server (npm run replay), at
# SLUICE_REPLAY_SCALE (default 0.1) with SLUICE_REPLAY_RECORD_BYTES-byte records (default
# 1500): the simulator runs the scenario as the replay scales it (replay --write-sim). Each
# run's summary, trace and plot go to OUT_DIR (default reports/sim-vs-real), then the table
# per phase (sim, real, difference) to OUT_DIR/table.md and the report to OUT_DIR/index.html.
# The simulator runs from the workspace's sources, as the replay does (a built dist/ could be
# older than the policies replayed). It also runs each cell at SLUICE_SIM_SEEDS other seeds (default 8: 1…8), so the
# table sets the replay against the model's spread, not one draw of it.
# SLUICE_SIM_VS_REAL_REPLAY=0 re-runs the simulator side only (the replays' summaries stay).
# Oracles are measured once per store state and reused (OUT_DIR/oracle-cache). Bounded: each
# replay by SLUICE_REPLAY_TIMEOUT (replay.sh); 16 replays of the shipped 110 s scenarios take
# about 45 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
# Operands only; --help prints the comment above. A flag is not a folder or a scenario.
for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "sim-vs-real: unknown option $arg (npm run sim-vs-real [-- OUT_DIR [SCENARIO…]]; --help)" >&2; exit 2 ;;
  esac
done
out=${1:-reports/sim-vs-real}
shift || true
scenarios=("$@")
if [[ ${#scenarios[@]} == 0 ]]; then scenarios=(examples/replay/scenarios/*.json); fi
policies=(${SLUICE_SIM_VS_REAL_POLICIES:-default deliveryrate aimd fixed:8})
scale=${SLUICE_REPLAY_SCALE:-0.1}
bytes=${SLUICE_REPLAY_RECORD_BYTES:-1500}
mkdir -p "$out"
. scripts/lib/run-source.sh
node=$(repo_node)
# One S3 server and toxiproxy for every replay (replay.sh leaves running ones alone).
. scripts/lib/ensure-services.sh
ensure_services s3-server toxiproxy
for file in "${scenarios[@]}"; do
  name=$(basename "$file" .json)
  "$node" --conditions=@sluice/source examples/replay/main.ts "$file" --scale "$scale" --record-bytes "$bytes" --write-sim "$out/$name.sim-scenario.json"
  for policy in "${policies[@]}"; do
    tag="$name.${policy//:/-}"
    echo "sim-vs-real: $name × $policy (simulator)" >&2
    "$node" --conditions=@sluice/source packages/testkit/src/bin.ts run "$out/$name.sim-scenario.json" --policy "$policy" --json --trace "$out/$tag.sim.csv" --plot "$out/$tag.sim.svg" \
      | tail -n 1 > "$out/$tag.sim.json" || true
    : > "$out/$tag.sim-seeds.jsonl"
    for seed in $(seq 1 "${SLUICE_SIM_SEEDS:-8}"); do
      "$node" -e 'const fs = require("node:fs"); const s = JSON.parse(fs.readFileSync(process.argv[1], "utf8")); s.seed = Number(process.argv[2]); fs.writeFileSync(process.argv[3], JSON.stringify(s))' \
        "$out/$name.sim-scenario.json" "$seed" "$out/$name.seed.json"
      "$node" --conditions=@sluice/source packages/testkit/src/bin.ts run "$out/$name.seed.json" --policy "$policy" --json | tail -n 1 >> "$out/$tag.sim-seeds.jsonl" || true
    done
    rm -f "$out/$name.seed.json"
    if [[ ${SLUICE_SIM_VS_REAL_REPLAY:-1} == 0 ]]; then continue; fi
    echo "sim-vs-real: $name × $policy (replay)" >&2
    bash scripts/replay.sh "$file" --policy "$policy" --scale "$scale" --record-bytes "$bytes" --oracle-cache "$out/oracle-cache" \
      --json --trace "$out/$tag.real.csv" --plot "$out/$tag.real.svg" 2> "$out/$tag.real.log" | tail -n 1 > "$out/$tag.real.json" || true
  done
done
"$node" --conditions=@sluice/source examples/replay/table.ts "$out"
