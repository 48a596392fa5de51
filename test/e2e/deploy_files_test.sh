#!/usr/bin/env bash
# The deployment files in deploy/ are checked against the real binary:
#  - deploy/systemd/cxds.service passes `systemd-analyze verify` (with ExecStart pointing at the
#    binary under test);
#  - deploy/systemd/cxds.yaml is accepted by `cxds serve --config` (every key known, every value
#    valid; paths and ports overridden by flags) and the server becomes ready;
#  - every metric the Grafana dashboard (deploy/grafana/cxds.json) queries is a family that
#    server exports once a real proxyless gRPC client is connected, and every family it exports
#    is documented in docs/operations.md.
#   deploy_files_test.sh CXDS SOURCE_DIR WORK BASE_PORT    (ports BASE..BASE+1 on 127.0.0.1)
set -euo pipefail
CXDS=$1 SRC=$2 WORK=$3 BASE=$4
XDS=$BASE ADMIN=$((BASE + 1))
rm -rf "$WORK" && mkdir -p "$WORK"
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done' EXIT

sed "s|^ExecStart=/usr/local/bin/cxds |ExecStart=$CXDS |" "$SRC/deploy/systemd/cxds.service" >"$WORK/cxds.service"
# verify exits 0 on an unknown key or value (it only warns): any message is a failure.
systemd-analyze verify "$WORK/cxds.service" >"$WORK/verify.txt" 2>&1
if [ -s "$WORK/verify.txt" ]; then
  echo "FAIL systemd-analyze verify cxds.service:"
  cat "$WORK/verify.txt"
  exit 1
fi
echo "PASS systemd-analyze verify cxds.service (no warning)"

"$CXDS" serve --config "$SRC/deploy/systemd/cxds.yaml" --config-dir "$SRC/examples/mesh" \
  --xds-address "127.0.0.1:$XDS" --admin-address "127.0.0.1:$ADMIN" >"$WORK/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  curl -sf "127.0.0.1:$ADMIN/ready" >/dev/null && break
  sleep 0.1
done
grep -q "READY" "$WORK/serve.log" || { cat "$WORK/serve.log"; exit 1; }
echo "PASS cxds serve --config deploy/systemd/cxds.yaml starts and is ready"

node -e "require('$SRC/examples/mesh-client/e2e_lib').bootstrap('$WORK/bootstrap.json', $XDS, 'grpc-deploy-1', 'default')"
GRPC_XDS_BOOTSTRAP=$WORK/bootstrap.json timeout 60 node "$SRC/examples/mesh-client/mesh_client.js" \
  --calls 1 --deadline-ms 5000 >"$WORK/client.json"
curl -sf "127.0.0.1:$ADMIN/metrics" >"$WORK/metrics.txt"

python3 - "$SRC/deploy/grafana/cxds.json" "$WORK/metrics.txt" <<'PY'
import json, re, sys
dashboard = json.load(open(sys.argv[1]))
families = set(re.findall(r"^# TYPE (\S+) ", open(sys.argv[2]).read(), re.M))
functions = {"sum", "rate", "max", "min", "by", "le", "histogram_quantile", "instance", "type"}
used = set()
for panel in dashboard["panels"]:
    for target in panel["targets"]:
        for name in re.findall(r"[a-z_][a-z0-9_]*", re.sub(r"\[[^]]*\]", "", target["expr"])):
            if name in functions:
                continue
            used.add(re.sub(r"_(bucket|sum|count)$", "", name) if name.endswith(("_bucket",)) else name)
missing = sorted(n for n in used if n not in families)
if missing:
    print("FAIL the dashboard queries metrics the server does not export:", missing)
    sys.exit(1)
print(f"PASS all {len(used)} metrics of the dashboard's {len(dashboard['panels'])} panels are exported")
PY

# Every metric family the server exports is documented, one line each.
python3 - "$SRC/docs/operations.md" "$WORK/metrics.txt" <<'PY'
import re, sys
documented = set(re.findall(r"^\| `([a-z_]+)` \|", open(sys.argv[1]).read(), re.M))
families = set(re.findall(r"^# TYPE (\S+) ", open(sys.argv[2]).read(), re.M))
missing = sorted(families - documented)
if missing:
    print("FAIL exported but not in docs/operations.md:", missing)
    sys.exit(1)
print(f"PASS all {len(families)} exported metric families are in docs/operations.md")
PY
