#!/usr/bin/env bash
# A/B: the same cxds-load against the before (dce7f30) and after cxds, alternating.
set -u
load=/work/main/build/cxds-load
port=19100
for style in envoy grpc; do
for n in 5000 10000; do
for proto in sotw delta; do
for which in before after; do
  bin=/work/$([ $which = before ] && echo before || echo main)/build/cxds
  out=/tmp/ab/$style-$n-$proto-$which
  $load --xds-address 127.0.0.1:$port --server-cpu 0 --client-cpu 1 --changes 5 --change-interval 1s \
    --change-timeout 60s --duration 300s --quiet --drive teaching --cxds-binary $bin --protocol $proto \
    --node-style $style --streams $n --json $out.json > $out.txt 2>&1
  port=$((port + 2))
  echo "$style $n $proto $which: $(python3 -c "import json;d=json.load(open('$out.json'));print(d.get('eds_convergence_p50_ms'),d.get('eds_convergence_p99_ms'))" 2>&1)"
done; done; done; done
