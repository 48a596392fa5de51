#!/usr/bin/env bash
# make soak: the full soak of issue 11 (not in CI at this size; CI runs load_soak_ci, 60 s).
#
#   bench/soak.sh BUILD_DIR [OUT_DIR]
#
# cxds serve on a copy of examples/mesh; cxds-load --soak with SOAK_STREAMS (2,000) proxies,
# SotW and Delta mixed, a config change every 200 ms for SOAK_DURATION (10m), SOAK_CHURN (0.01)
# disconnects per stream per second (each proxy reconnects within 1 s), seed SOAK_SEED (1).
# Writes OUT_DIR (default bench/results/soak-DATE/): report.json (the verdicts), rss.csv (the
# server's RSS every 5 s), rss.png (gnuplot), summary.md, soak.txt (cxds-load's output) and
# cxds.log. Exits non-zero when the soak failed. Loopback ports 19200-19201 only.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?build directory (with cxds and cxds-load)}
out=${2:-bench/results/soak-$(date -u +%F)}
streams=${SOAK_STREAMS:-2000}
duration=${SOAK_DURATION:-10m}
churn=${SOAK_CHURN:-0.01}
seed=${SOAK_SEED:-1}
mkdir -p "$out"
config=$(mktemp -d)
trap 'rm -rf "$config"' EXIT
cp -r examples/mesh/. "$config/"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)

set +e
"$build/cxds-load" --drive files --cxds-binary "$build/cxds" --config-dir "$config" \
  --xds-address 127.0.0.1:19200 --admin-address 127.0.0.1:19201 \
  --streams "$streams" --protocol mixed --soak "$duration" --change-interval 200ms \
  --churn "$churn" --seed "$seed" --rss-interval 5s --rss-csv "$out/rss.csv" \
  --connect-rate 500 --change-timeout 60s \
  --server-log "$out/cxds.log" --json "$out/report.json" 2>&1 | tee "$out/soak.txt"
rc=${PIPESTATUS[0]}
set -e

if [[ -s "$out/rss.csv" ]]; then
  gnuplot <<GNUPLOT
set terminal png size 900,500
set output "$out/rss.png"
set datafile separator ","
set title "cxds serve RSS during the soak ($streams streams, a change every 200 ms, churn $churn/stream/s)"
set xlabel "seconds"
set ylabel "RSS (MiB)"
set y2label "changes made"
set y2tics
set ytics nomirror
set key left top
plot "$out/rss.csv" using 1:(\$2/1024) skip 1 with lines lw 2 title "server RSS", \
     "$out/rss.csv" using 1:4 skip 1 axes x1y2 with lines dt 2 title "changes"
GNUPLOT
fi

python3 - "$out" "$commit" "$rc" <<'PY'
import json, sys, os
out, commit, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
path = os.path.join(out, "report.json")
if not os.path.exists(path):
    open(os.path.join(out, "summary.md"), "w").write(f"# Soak: no report (cxds-load exited {rc})\n")
    sys.exit(0)
r = json.load(open(path))
rss = r["rss"]
def mib(kb): return "-" if kb is None else f"{kb / 1024:.1f} MiB"
samples = r["rss_samples"]
growth = "-" if rss["growth"] is None else "%+.1f%%" % (rss["growth"] * 100)
curve = ", ".join(f"{s:.0f}s {kb / 1024:.0f}" for s, kb in samples[:: max(1, len(samples) // 12)])
lines = [
    f"# Soak, commit {commit}: {'passed' if r['ok'] else 'FAILED'}",
    "",
    f"{r['streams']} streams ({r['protocols']}: {r['sotw_connections']} SotW and {r['delta_connections']} Delta "
    f"connections), {r['soak_s']:.0f} s, a config change every {r['change_interval_ms']} ms, churn "
    f"{r['churn_per_stream_s']} disconnects per stream per second, seed {r['seed']}; load average "
    f"{r['loadavg_start']} at the start, {r['loadavg_end']} at the end.",
    "",
    "| figure | value |",
    "|---|---|",
    f"| changes made | {r['changes']} (late: {r['late_changes']}) |",
    f"| disconnects / reconnects | {r['disconnects']} / {r['reconnects']} |",
    f"| lost updates (open streams without the last change) | {r['lost_updates']} of {r['open_at_end']} |",
    f"| starved streams (waited > {r['starve_after_ms']} ms for a newer change) | {r['starved_streams']} |",
    f"| longest wait for a newer change | {r['max_update_gap_ms']:.0f} ms |",
    f"| server holds the last change / its stream count / stale types | {r['server_holds_last_change']} / {r['server_streams']} / {r['server_stale_or_nacked_types']} |",
    f"| quiescence after the last change | {r['quiescence_ms']:.0f} ms |",
    f"| unexpected stream ends / NACKs / errors | {r['unexpected_ends']} / {r['nacks']} / {r['errors']} |",
    f"| server RSS: start / after warm-up ({r['warmup_s']:.0f} s) / end / max after warm-up | {mib(rss['start_kb'])} / {mib(rss['after_warmup_kb'])} / {mib(rss['end_kb'])} / {mib(rss['max_after_warmup_kb'])} |",
    f"| RSS growth after warm-up (limit {rss['limit'] * 100:.0f}%) | {growth} |",
    "",
    f"RSS curve (s, MiB): {curve}",
    "",
    "![RSS](rss.png)" if os.path.exists(os.path.join(out, "rss.png")) else "",
]
if r["problems"]:
    lines += ["", "Problems:"] + [f"- {p}" for p in r["problems"]]
open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
PY
echo "soak: $out/summary.md"
exit "$rc"
