#!/usr/bin/env bash
# The measurements of docs/load.md: cxds demo (SotW and Delta) and the raw fan-out baseline
# (cxds-fanout) at 1,000, 5,000 and 10,000 streams, one stream per connection, 3 endpoint
# changes each, server pinned to core 0 and cxds-load to core 1. Loopback ports 18910-18939.
# Every run is bounded (--duration); the reports land in OUT as .txt and .json.
#
#   test/load/measure.sh BUILD_DIR OUT_DIR [STREAMS...]
set -euo pipefail
build=${1:?build directory (with cxds, cxds-load, cxds-fanout)}
out=${2:?output directory}
shift 2
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(1000 5000 10000)
mkdir -p "$out"

# Percent of CPU time busy over the next 3 seconds, from /proc/stat.
busy_percent() {
  local a b
  read -r -a a < <(head -1 /proc/stat)
  sleep 3
  read -r -a b < <(head -1 /proc/stat)
  local idle=$(( (b[4] + b[5]) - (a[4] + a[5]) )) total=0 i
  for i in 1 2 3 4 5 6 7 8; do total=$(( total + b[i] - a[i] )); done
  echo $(( total > 0 ? 100 * (total - idle) / total : 0 ))
}

# Other work on the machine skews every number: wait (at most 5 minutes) for a quiet moment.
wait_quiet() {
  local waited=0 busy
  while busy=$(busy_percent); (( busy > 10 && waited < 300 )); do
    echo "   machine ${busy}% busy; waiting" >&2
    waited=$((waited + 3))
  done
  echo "   machine ${busy}% busy at start" >&2
}

port=18910
for n in "${sizes[@]}"; do
  for run in fanout-sotw demo-sotw demo-delta; do
    case $run in
      fanout-sotw) drive=(--drive fanout --fanout-binary "$build/cxds-fanout" --protocol sotw) ;;
      demo-sotw) drive=(--drive teaching --teaching-binary "$build/cxds" --protocol sotw) ;;
      demo-delta) drive=(--drive teaching --teaching-binary "$build/cxds" --protocol delta) ;;
    esac
    echo "== $run $n streams (127.0.0.1:$port)" >&2
    wait_quiet
    "$build/cxds-load" "${drive[@]}" --xds-address "127.0.0.1:$port" --streams "$n" --changes 3 \
      --change-interval 1s --change-timeout 30s --duration 300s --server-cpu 0 --client-cpu 1 \
      --server-log "$out/$run-$n.server.log" --json "$out/$run-$n.json" | tee "$out/$run-$n.txt" || true
    port=$((port + 1))
  done
done
