#!/usr/bin/env bash
# cxds-load --drive etcd on a real etcd (started here on loopback, temporary data dir): two
# replicas of cxds serve, 40 Delta proxies, 3 endpoint changes written to etcd, then replica 0
# SIGKILLed and its proxies moved to the survivor with the versions they hold. Fails unless
# every stream converged on every change and the moved proxies were re-attached and sent
# nothing (0 responses, 0 resource bytes).
#   run_load_etcd.sh LOAD CXDS WORK BASE_PORT     (ports BASE..BASE+15 on 127.0.0.1)
set -euo pipefail
LOAD=$1 CXDS=$2 WORK=$3 BASE=$4
rm -rf "$WORK" && mkdir -p "$WORK"
etcd_url=http://127.0.0.1:$BASE peer_url=http://127.0.0.1:$((BASE + 1))
# setpriv --pdeathsig: etcd dies with this script even if the script is killed (a ctest timeout).
setpriv --pdeathsig KILL etcd --name=load --data-dir="$WORK/etcd" --listen-client-urls="$etcd_url" \
  --advertise-client-urls="$etcd_url" --listen-peer-urls="$peer_url" \
  --initial-advertise-peer-urls="$peer_url" --initial-cluster=load="$peer_url" >"$WORK/etcd.log" 2>&1 &
etcd_pid=$!
trap 'kill -9 $etcd_pid 2>/dev/null || true' EXIT
# A connection made while etcd starts waits about ten seconds: wait until it says it serves.
for _ in $(seq 1 200); do
  grep -q "ready to serve client requests" "$WORK/etcd.log" && break
  sleep 0.1
done
grep -q "ready to serve client requests" "$WORK/etcd.log" || { cat "$WORK/etcd.log"; exit 1; }

timeout -s KILL 150 "$LOAD" --drive etcd --etcd "127.0.0.1:$BASE" --etcd-prefix /load --replicas 2 \
  --cxds-binary "$CXDS" --streams 40 --protocol delta --node-style grpc --changes 3 --failover \
  --xds-address "127.0.0.1:$((BASE + 2))" --admin-address "127.0.0.1:$((BASE + 10))" \
  --server-log "$WORK/serve.log" --duration 120s --quiet --json "$WORK/report.json"

python3 - "$WORK/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
f = r["failover"]
problems = []
if not r["ok"]: problems.append(f"report not ok: {r['problems']}")
for c in r["changes"]:
    if c["converged"] != 40: problems.append(f"change {c['change']} converged {c['converged']}/40")
if f["reattached"] != 20: problems.append(f"re-attached {f['reattached']}/20")
if f["responses"] != 0 or f["resource_bytes"] != 0: problems.append(f"resent after failover: {f}")
if len(r["replica_config_sources"]) != 2: problems.append("not two replicas")
print("\n".join(problems) if problems else f"OK failover re-attached 20 in {f['reattach_ms']} ms, 0 bytes resent")
sys.exit(1 if problems else 0)
PY
