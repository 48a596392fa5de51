#!/usr/bin/env bash
# make bench: the standard scenarios of issue 6 in one run, then the report.
#
#   bench/run.sh BUILD_DIR [RUN_DIR]
#
# 1. Google Benchmark micro-benchmarks (bench/*_bench.cc), JSON into RUN_DIR/micro.
# 2. Load at N = 1,000, 5,000 and 10,000 streams (BENCH_SIZES overrides): cxds demo over Delta
#    and SotW, then the raw fan-out baseline (cxds-fanout) pushing messages of the size cxds's
#    EDS responses had in the Delta run. Server pinned to core 0, cxds-load to core 1, one
#    stream per connection, 5 endpoint changes one second apart, debounce off (the demo has
#    none). Each run waits (at most 5 minutes) for the machine to be quiet first.
# 3. The mesh: cxds serve on 1,000 services with 10,000 endpoints (bench/gen_mesh.py),
#    BENCH_MESH_STREAMS (1,000) Envoy-like Delta proxies, 5 endpoint changes through the files.
# 4. Restart: cxds serve on examples/mesh with the largest N (at most 5,000) Delta proxies; after the changes
#    cxds restarts and every proxy reconnects with the versions it holds.
# 5. Big config: 1,000 and 10,000 services (BENCH_BIG=0 leaves it out), the full push context and
#    an endpoint change to the last ACK for 1,000 gRPC-style proxies.
# The demo runs use `cxds demo --keep-unchanged-types` (a change moves EDS alone).
# Also, at BENCH_STYLE_SIZES (5,000 and 10,000): the demo with gRPC-style proxies over Delta and
# SotW (grpc-style/), SotW with every type on every version (sotwwhole-N, both styles), and cxds serve on the mesh with gRPC-style proxies against the raw fan-out
# and the same fan-out with clients that ACK every receipt (daemon/).
# 6. The ratios of issue 16 again (BENCH_REPEAT pairs in all, default 3): the demo's SotW and
#    Delta of both styles and the daemon and fan-out, at BENCH_STYLE_SIZES, each pair one run
#    after the other; the report takes the median of the pairs' ratios.
# 7. bench/report.py writes bench/results/NAME.md (BENCH_NAME, default the date; tables, PNG plots) and
#    bench/results/latest.json.
#
# Every run is bounded (--duration) and uses loopback ports 19400-19599 only (two per run: 61 runs
# with the defaults, 14 more per extra BENCH_REPEAT; bench/soak.sh uses 19200). For a quick look:
# BENCH_SIZES="100 200" BENCH_STYLE_SIZES=100 BENCH_MESH_STREAMS=20 BENCH_MICRO=0 BENCH_BIG=0 bench/run.sh build /tmp/run
# (BENCH_WAIT_QUIET_S=0 skips the wait for a quiet machine)
# (the report then still goes to bench/results/).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?build directory (with cxds, cxds-load, cxds-fanout, bench/)}
date=$(date -u +%F)
# The report's name (bench/results/NAME.md, NAME-*.png); BENCH_NAME sets it for a second run in a day.
report_name=${BENCH_NAME:-$date}
run=${2:-bench/results/$report_name-data}
read -r -a sizes <<<"${BENCH_SIZES:-1000 5000 10000}"
mesh_streams=${BENCH_MESH_STREAMS:-1000}
largest=${sizes[-1]}
mkdir -p "$run/micro" "$run/load" "$run/mesh" "$run/restart" "$run/metrics" "$run/logs"
# Repeats of an earlier run into the same directory would join this run's medians.
rm -f "$run"/load/*-r[0-9]*.* "$run"/grpc-style/*-r[0-9]*.* "$run"/daemon/*-r[0-9]*.*

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
  while busy=$(busy_percent); (( busy > 10 && waited < ${BENCH_WAIT_QUIET_S:-300} )); do
    echo "   machine ${busy}% busy; waiting" >&2
    waited=$((waited + 3))
  done
  echo "   machine ${busy}% busy at start" >&2
}

port=19400
next_port() {
  port=$((port + 2))
  if ((port > 19598)); then
    echo "bench: out of ports (19400-19599): fewer BENCH_REPEAT" >&2
    exit 1
  fi
}

# cxds-load with the settings every run shares; the report goes to $1.json and $1.txt.
load() {
  local out=$1
  shift
  wait_quiet
  "$build/cxds-load" --xds-address "127.0.0.1:$port" --server-cpu 0 --client-cpu 1 \
    --changes 5 --change-interval 1s --change-timeout 60s --duration 600s --quiet \
    --server-log "$run/logs/$(basename "$(dirname "$out")")-$(basename "$out").server.log" --json "$out.json" "$@" | tee "$out.txt" || true
  next_port
}

git_commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || git_commit="$git_commit-dirty"
cat >"$run/machine.json" <<JSON
{"date": "$date", "cores": $(nproc), "kernel": "$(uname -r)", "commit": "$git_commit",
 "grpc": "$(pkg-config --modversion grpc++ 2>/dev/null || echo unknown)",
 "build_type": "$(sed -n "s/^CMAKE_BUILD_TYPE:[A-Z]*=//p" "$build/CMakeCache.txt" | grep . || echo "RelWithDebInfo (project default)")",
 "memory_kb": $(awk '/MemTotal/ {print $2}' /proc/meminfo),
 "open_files_limit": $(ulimit -Hn), "loadavg_start": $(cut -d' ' -f1 /proc/loadavg)}
JSON

echo "== micro-benchmarks" >&2
[[ ${BENCH_MICRO:-1} == 0 ]] || for bench in "$build"/bench/cxds_*_bench; do
  name=$(basename "$bench" _bench)
  name=${name#cxds_}
  wait_quiet
  "$bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out="$run/micro/$name.json" --benchmark_out_format=json >/dev/null
done

# The demo versions its whole snapshot at each change; with --keep-unchanged-types (the runs
# named sotw and delta) only the changed type gets a new version, as a control plane that pushes
# only what a change touches does. The sotwwhole runs keep every type on every version, as the
# teaching walkthrough does (and go-control-plane's snapshot cache), at BENCH_STYLE_SIZES.
keep=--server-arg=--keep-unchanged-types
read -r -a style_sizes <<<"${BENCH_STYLE_SIZES:-5000 10000}"
for n in "${sizes[@]}"; do
  echo "== cxds demo, Delta and SotW, $n streams" >&2
  load "$run/load/delta-$n" --drive teaching --cxds-binary "$build/cxds" "$keep" --protocol delta --streams "$n"
  load "$run/load/sotw-$n" --drive teaching --cxds-binary "$build/cxds" "$keep" --protocol sotw --streams "$n"
  # The baseline writes what cxds wrote for a change: one EDS response of the same size.
  eds_bytes=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['types']['EDS']; print(max(64, round(t['bytes']/max(1,t['responses']))))" "$run/load/delta-$n.json" 2>/dev/null || echo 1200)
  echo "== raw fan-out baseline, $n streams, $eds_bytes-byte pushes" >&2
  load "$run/load/fanout-$n" --drive fanout --fanout-binary "$build/cxds-fanout" --message-bytes "$eds_bytes" --streams "$n"
done

# Issue 16: SotW against Delta with proxyless-gRPC-style proxies too (LDS by name, following
# references), at the sizes of its target.
mkdir -p "$run/grpc-style"
for n in "${style_sizes[@]}"; do
  echo "== cxds demo, gRPC-style proxies, Delta and SotW, $n streams" >&2
  load "$run/grpc-style/delta-$n" --drive teaching --cxds-binary "$build/cxds" "$keep" --protocol delta --node-style grpc --streams "$n"
  load "$run/grpc-style/sotw-$n" --drive teaching --cxds-binary "$build/cxds" "$keep" --protocol sotw --node-style grpc --streams "$n"
  echo "== cxds demo, every type on every version, SotW, Envoy- and gRPC-style, $n streams" >&2
  load "$run/load/sotwwhole-$n" --drive teaching --cxds-binary "$build/cxds" --protocol sotw --streams "$n"
  load "$run/grpc-style/sotwwhole-$n" --drive teaching --cxds-binary "$build/cxds" --protocol sotw --node-style grpc --streams "$n"
done

echo "== mesh: 1,000 services, 10,000 endpoints, $mesh_streams Delta proxies" >&2
mesh_dir=$(mktemp -d /tmp/cxds-bench-mesh.XXXXXX)
trap 'rm -rf "$mesh_dir"' EXIT
python3 bench/gen_mesh.py "$mesh_dir/config" 1000 10 >&2
load "$run/mesh/delta-$mesh_streams" --drive files --cxds-binary "$build/cxds" --config-dir "$mesh_dir/config" \
  --admin-address "127.0.0.1:$((port + 1))" --protocol delta --streams "$mesh_streams"
echo "{\"services\": 1000, \"endpoints\": 10000, \"streams\": $mesh_streams, \"node_style\": \"envoy\"}" >"$run/mesh/scenario.json"
python3 - "$run/mesh/delta-$mesh_streams.json" "$run/metrics/serializations.json" <<'PY' || true
import json, sys
s = json.load(open(sys.argv[1])).get("serializations")
if s:
    json.dump({"serializations": s["server_serializations"], "resource_versions": s["resource_versions"],
               "measured_on": "mesh run, during its changes"}, open(sys.argv[2], "w"))
PY

# The daemon at the demo's ratios (issue 16): cxds serve on the same mesh, gRPC-style Delta
# proxies (an Envoy-style proxy holds ~2,000 resources here, more than the one-core load client
# can take for thousands of them), one endpoint change at a time through the files; then the raw
# fan-out at the same N with messages of that run's EDS size.
mkdir -p "$run/daemon"
for n in "${style_sizes[@]}"; do
  echo "== daemon: cxds serve on the mesh, $n gRPC-style Delta proxies, and the fan-out" >&2
  load "$run/daemon/delta-$n" --drive files --cxds-binary "$build/cxds" --config-dir "$mesh_dir/config" \
    --admin-address "127.0.0.1:$((port + 1))" --protocol delta --node-style grpc \
    --listener load-target.load.local:8080 --streams "$n"
  eds_bytes=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['types']['EDS']; print(max(64, round(t['bytes']/max(1,t['responses']))))" "$run/daemon/delta-$n.json" 2>/dev/null || echo 400)
  load "$run/daemon/fanout-$n" --drive fanout --fanout-binary "$build/cxds-fanout" --message-bytes "$eds_bytes" --streams "$n"
  # The same with clients that ACK every receipt: the reads an xDS server cannot skip, measured
  # apart (reported beside the targets, which stay on the raw fan-out).
  load "$run/daemon/fanoutack-$n" --drive fanout --fanout-binary "$build/cxds-fanout" --message-bytes "$eds_bytes" \
    --streams "$n" --raw-ack
done

# The ratios of issue 16 again, BENCH_REPEAT (3) pairs in all: this machine's speed drifts by up
# to a third between sittings, so each ratio is taken of two runs made one after the other and
# the report gives the median over the pairs (kind-N-rK.json is pair K; pair 1 is above).
for ((k = 2; k <= ${BENCH_REPEAT:-3}; k++)); do
  for n in "${style_sizes[@]}"; do
    echo "== repeat $k: SotW against Delta (both styles) and the daemon against the fan-out, $n streams" >&2
    load "$run/load/delta-$n-r$k" --drive teaching --cxds-binary "$build/cxds" "$keep" --protocol delta --streams "$n"
    load "$run/load/sotw-$n-r$k" --drive teaching --cxds-binary "$build/cxds" "$keep" --protocol sotw --streams "$n"
    load "$run/grpc-style/delta-$n-r$k" --drive teaching --cxds-binary "$build/cxds" "$keep" --protocol delta \
      --node-style grpc --streams "$n"
    load "$run/grpc-style/sotw-$n-r$k" --drive teaching --cxds-binary "$build/cxds" "$keep" --protocol sotw \
      --node-style grpc --streams "$n"
    load "$run/daemon/delta-$n-r$k" --drive files --cxds-binary "$build/cxds" --config-dir "$mesh_dir/config" \
      --admin-address "127.0.0.1:$((port + 1))" --protocol delta --node-style grpc \
      --listener load-target.load.local:8080 --streams "$n"
    eds_bytes=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['types']['EDS']; print(max(64, round(t['bytes']/max(1,t['responses']))))" "$run/daemon/delta-$n-r$k.json" 2>/dev/null || echo 400)
    load "$run/daemon/fanout-$n-r$k" --drive fanout --fanout-binary "$build/cxds-fanout" --message-bytes "$eds_bytes" \
      --streams "$n"
    load "$run/daemon/fanoutack-$n-r$k" --drive fanout --fanout-binary "$build/cxds-fanout" \
      --message-bytes "$eds_bytes" --streams "$n" --raw-ack
  done
done

# At most 5,000: while the restarted server's proxies reconnect, cxds-load holds the new
# connection of each channel and, for a while, the old one too; 10,000 channels then need more
# than 20,000 descriptors, this machine's hard limit.
restart_streams=$(( largest < 5000 ? largest : 5000 ))
echo "== restart: examples/mesh, $restart_streams Delta proxies" >&2
mkdir -p "$mesh_dir/restart"
cp examples/mesh/*.yaml "$mesh_dir/restart/"
load "$run/restart/delta-restart" --drive files --cxds-binary "$build/cxds" --config-dir "$mesh_dir/restart" \
  --admin-address "127.0.0.1:$((port + 1))" --protocol delta --streams "$restart_streams" --restart

# Big config (issue 16): the full push context and one endpoint change to the last ACK for 1,000
# proxyless-gRPC-style proxies, at 1,000 and 10,000 services (10 endpoints each). Envoy-style
# proxies are left out at this size: each would hold 20,000 resources, more than the one-core
# load client can take for 1,000 of them (bench/results/big-config-2026-12-02).
if [[ ${BENCH_BIG:-1} != 0 ]]; then
  mkdir -p "$run/big"
  for services in ${BENCH_BIG_SIZES:-1000 10000}; do
    echo "== big config: $services services, gRPC-style proxies" >&2
    python3 bench/gen_mesh.py "$mesh_dir/big-$services" "$services" 10 >&2
    for i in 1 2 3; do  # the context alone: cxds serve with no proxy, three starts
      "$build/cxds" serve --config-dir "$mesh_dir/big-$services" --xds-address "127.0.0.1:$port" \
        --admin-address "127.0.0.1:$((port + 1))" >"$run/logs/big-$services-context-$i.log" 2>&1 &
      pid=$!
      for _ in $(seq 1 300); do curl -sf "127.0.0.1:$((port + 1))/ready" >/dev/null && break; sleep 0.1; done
      curl -s "127.0.0.1:$((port + 1))/debug/push_status" >"$run/big/context-$services-$i.json" || true
      kill "$pid"; wait "$pid" 2>/dev/null || true
      next_port
    done
    load "$run/big/grpc-$services" --drive files --cxds-binary "$build/cxds" --config-dir "$mesh_dir/big-$services" \
      --admin-address "127.0.0.1:$((port + 1))" --protocol delta --node-style grpc \
      --listener load-target.load.local:8080 --streams 1000
  done
fi

echo "== report" >&2
python3 bench/report.py "$run" "bench/results/$report_name.md" bench/results/latest.json
echo "bench: wrote bench/results/$report_name.md and bench/results/latest.json (data in $run)" >&2
