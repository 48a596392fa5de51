#!/usr/bin/env python3
"""Turns one benchmark run directory into a Markdown report, PNG plots and a JSON summary.

    python3 bench/report.py RUN_DIR OUT_MD OUT_JSON

Python 3 standard library only (it runs with Debian's /usr/bin/python3); the plots are drawn
by gnuplot (Debian package gnuplot-nox) and written next to OUT_MD, named after it (NAME.md: NAME-*.png).

RUN_DIR (every piece is optional; what is absent is reported as "not measured in this run" in
the Markdown and as null in the JSON):
  machine.json                  {"date", "cores", "kernel", "commit", "grpc", "build_type", "loadavg_start"}
  micro/*.json                  Google Benchmark JSON output, one file per binary
  load/{fanout,sotw,delta}-N.json  cxds-load JSON (see docs/load.md), N = stream count
  load/sotwwhole-N.json, grpc-style/{sotw,delta,sotwwhole}-N.json  the demo SotW/Delta pairs (issue 16)
  mesh/scenario.json, mesh/*-N.json  cxds-load against `cxds serve` with a large config directory
  restart/delta-restart.json    cxds-load JSON with a top-level "reconnect" object
  metrics/serializations.json   {"resource_versions", "serializations"}
"""

import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

NOT_MEASURED = "not measured in this run"

# The servers of a load run, in table order: file prefix and label.
SERVERS = [("fanout", "fan-out (raw)"), ("sotw", "cxds SotW"), ("delta", "cxds Delta")]
CXDS = [("sotw", "cxds SotW"), ("delta", "cxds Delta")]
LABEL = dict(SERVERS)

# Issue 6's targets. These limits are the only fixed numbers; every measured figure and every
# verdict is computed from the run.
TARGET_STREAMS = 10000
TARGET_RSS_PER_STREAM_KB = 64.0
TARGET_SEND_RATIO = 1.3
TARGET_LAST_ACK_RATIO = 1.5
TARGET_SERIALIZATIONS_PER_VERSION = 1.0
TARGET_RECONNECT_BYTES = 0

# Keys of a Google Benchmark result that are not user counters.
BENCHMARK_STANDARD_KEYS = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
    "aggregate_name", "aggregate_unit", "label", "error_occurred", "error_message", "skipped",
    "skip_message", "big_o", "rms", "cpu_coefficient", "real_coefficient", "complexity_n",
}
AGGREGATE_SUFFIX = re.compile(r"_(mean|median|stddev|cv|BigO|RMS)$")


# ---------------------------------------------------------------------------------------------
# Small helpers


def median(values):
    """Median of the values that were measured; None when none were."""
    present = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return statistics.median(present) if present else None


def ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def number(value):
    """A JSON number, or None (server summaries write null for what they did not see)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def rounded(value, digits=3):
    return None if value is None else round(value, digits)


def fmt_ms(value, digits=1):
    return "—" if value is None else f"{value:,.{digits}f}"


def fmt_int(value):
    return "—" if value is None else f"{value:,.0f}"


def fmt_ratio(value):
    return "—" if value is None else f"{value:.2f}×"


def fmt_count(value):
    """A benchmark counter: integers exactly, large values with an SI prefix."""
    if value is None:
        return ""
    magnitude = abs(value)
    # From 100,000 on, an SI prefix: 15.0 M items/s reads better than 15,017,254.9.
    for threshold, scale, prefix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e5, 1e3, "k")):
        if magnitude >= threshold:
            scaled = value / scale
            digits = 0 if abs(scaled) >= 100 else 1 if abs(scaled) >= 10 else 2
            return f"{scaled:,.{digits}f} {prefix}"
    if float(value).is_integer():
        return f"{value:,.0f}"
    if magnitude >= 1:
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    return f"{value:.3g}"


def fmt_time(value):
    """A benchmark time: three significant digits at least, thousands separated."""
    if value is None:
        return "—"
    magnitude = abs(value)
    digits = 0 if magnitude >= 100 else 1 if magnitude >= 10 else 2 if magnitude >= 1 else 4
    return f"{value:,.{digits}f}"


def joined(values, formatter=fmt_ms):
    """Per-change values as the docs show them: 'a / b / c'."""
    return " / ".join(formatter(v) for v in values) if values else "—"


def md_escape(text):
    return str(text).replace("|", "\\|")


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


class RunDir:
    """Reads RUN_DIR, remembering what could not be read so the report can say so."""

    def __init__(self, root):
        self.root = root
        self.problems = []

    def json(self, relative):
        path = os.path.join(self.root, relative)
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            self.problems.append(f"`{relative}` could not be read: {error}")
            return None

    def sized(self, subdir):
        """{(kind, N): data} for SUBDIR/kind-N.json (the first of its repeats)."""
        return {key: repeats[1] for key, repeats in self.repeats(subdir).items() if 1 in repeats}

    def repeats(self, subdir):
        """{(kind, N): {repeat: data}} for SUBDIR/kind-N.json (repeat 1) and kind-N-rK.json (repeat K:
        bench/run.sh's BENCH_REPEAT runs the pairs a ratio is taken of again, one after the other)."""
        runs = {}
        for path in sorted(glob.glob(os.path.join(self.root, subdir, "*.json"))):
            match = re.fullmatch(r"([a-z]+)-(\d+)(?:-r(\d+))?\.json", os.path.basename(path))
            if not match:
                continue
            data = self.json(os.path.join(subdir, os.path.basename(path)))
            if isinstance(data, dict):
                runs.setdefault((match.group(1), int(match.group(2))), {})[int(match.group(3) or 1)] = data
        return runs


def paired_ratios(runs_a, runs_b, value_a, value_b, problems, what):
    """Per pair K present on both sides ({K: Run}), value_a(A) / value_b(B) of the two runs made one
    after the other; the median of these is the ratio reported (this machine's speed drifts by a
    third between sittings, so a ratio of two runs minutes apart is mostly that drift). A pair with
    a run that is not ok is left out, and `problems` says so."""
    out = []
    for k in sorted(set(runs_a) & set(runs_b)):
        faults = [s for s in (runs_a[k].status(), runs_b[k].status()) if s != "ok"]
        if faults:
            problems.append(f"{what}: pair {k} is left out of the median ({'; '.join(faults)})")
            continue
        r = ratio(value_a(runs_a[k]), value_b(runs_b[k]))
        if r is not None:
            out.append(r)
    return out


# ---------------------------------------------------------------------------------------------
# One cxds-load report


class Run:
    """The figures of one cxds-load JSON report."""

    def __init__(self, kind, data):
        self.kind = kind
        self.data = data
        self.server = data.get("server") or {}
        self.changes = data.get("changes") or []
        self.notes = []  # what a reader must know about this run's numbers

        def latency(key):
            return [number((c.get("latency_ms") or {}).get(key)) if (c.get("latency_ms") or {}).get("count") else None
                    for c in self.changes]

        self.p50 = latency("p50")
        self.p99 = latency("p99")
        self.max = latency("max")
        # One entry per change: the server's own account of it (None when it gave none).
        self.server_changes = self._server_changes()

    # Plain fields ---------------------------------------------------------------------------

    @property
    def streams(self):
        return self.data.get("streams")

    @property
    def complete(self):
        return self.data.get("streams_complete")

    @property
    def failed(self):
        return self.data.get("streams_failed") or 0

    @property
    def rss_per_stream_kb(self):
        return number(self.server.get("rss_per_stream_kb"))

    @property
    def cpu_s_changes(self):
        return number(self.server.get("cpu_s_changes"))

    @property
    def cpu_ms_per_change(self):
        # Per change made, so runs with different change counts compare.
        if self.cpu_s_changes is None or not self.changes:
            return None
        return 1000.0 * self.cpu_s_changes / len(self.changes)

    @property
    def connect_all_ms(self):
        return number(self.data.get("connect_all_ms"))

    @property
    def last_ack_ms(self):
        """Median over changes of the slowest stream (the last ACK; baseline: last receipt)."""
        return median(self.max)

    @property
    def last_ack_after_intake_ms(self):
        """cxds serve: the same, counted from the moment the server took the change in (its
        summary's received_unix_ms) instead of the file write, so without the directory's quiet
        period and the debounce; None without the server's summaries."""
        spans = []
        for change, slowest, summary in zip(self.changes, self.max, self.server_changes):
            made = number(change.get("made_at_unix_ms"))
            received = number(summary.get("received_unix_ms")) if summary else None
            if slowest is not None and made is not None and received is not None:
                spans.append(slowest - (received - made))
        return median(spans) if len(spans) == len(self.changes) else None

    def status(self):
        """'ok', or what made the run incomplete (its numbers then cover fewer streams)."""
        faults = []
        streams = self.streams or 0
        if self.complete is not None and self.complete < streams:
            faults.append(f"{self.complete:,} of {streams:,} streams complete")
        if self.failed:
            faults.append(f"{self.failed:,} streams failed")
        for change in self.changes:
            converged = change.get("converged")
            if converged is not None and converged < streams:
                faults.append(f"change {change.get('change')} reached {converged:,} of {streams:,}")
        if self.data.get("nacks"):
            faults.append(f"{self.data['nacks']:,} NACKs")
        if self.data.get("errors"):
            faults.append(f"{self.data['errors']:,} errors")
        if not faults and self.data.get("ok") is False:
            faults.extend(self.data.get("problems") or ["run not ok"])
        return "; ".join(faults) if faults else "ok"

    # Server reports -------------------------------------------------------------------------

    def _server_changes(self):
        reports = [r for r in (self.data.get("server_reports") or []) if isinstance(r, dict)]
        if not self.changes or not reports:
            return [None] * len(self.changes)
        if self.kind == "fanout" or any(r.get("event") == "push" for r in reports):
            pushes = [r for r in reports if r.get("event") == "push"]
            by_number = {r.get("push"): r for r in pushes}
            if all(c.get("change") in by_number for c in self.changes):
                return [by_number[c.get("change")] for c in self.changes]
            return (pushes + [None] * len(self.changes))[: len(self.changes)]
        # cxds lists every change it tracked; those that reached no proxy (the initial
        # configuration, published before any stream connected) are not the run's changes.
        summaries = [r for r in reports if (number(r.get("proxies")) or 0) > 0]
        if len(summaries) > len(self.changes):
            # More than the run made: drop any received before the run's first change (the
            # clocks are the same machine's wall clock; 5 ms of slack for rounding).
            first_made = number(self.changes[0].get("made_at_unix_ms"))
            if first_made is not None:
                summaries = [s for s in summaries
                             if number(s.get("received_unix_ms")) is None or s["received_unix_ms"] >= first_made - 5]
        if len(summaries) != len(self.changes):
            self.notes.append(f"the server listed {len(summaries)} changes that reached proxies for the "
                              f"{len(self.changes)} the run made; they are matched in order")
        return (summaries + [None] * len(self.changes))[: len(self.changes)]

    def server_field(self, key):
        return [number(s.get(key)) if s else None for s in self.server_changes]

    @property
    def send_ms(self):
        return self.server_field("send_ms")

    @property
    def push_ms(self):
        return self.server_field("push_ms")

    def delivery_notes(self):
        """cxds changes the server did not fully write or that were NACKed."""
        notes = []
        for change, summary in zip(self.changes, self.server_changes):
            if not summary or self.kind == "fanout":
                continue
            proxies = summary.get("proxies") or 0
            written = summary.get("proxies_written")
            nacked = summary.get("proxies_nacked") or 0
            acked = summary.get("proxies_acked")
            parts = []
            if written is not None and written < proxies:
                parts.append(f"{written:,} of {proxies:,} proxies written")
            if acked is not None and acked < proxies:
                parts.append(f"{acked:,} of {proxies:,} ACKed")
            if nacked:
                parts.append(f"{nacked:,} NACKed")
            if parts:
                notes.append(f"change {change.get('change')}: " + ", ".join(parts))
        return notes


# ---------------------------------------------------------------------------------------------
# Figures and targets


def figures(run, baseline):
    """The JSON figures of one cxds run at one N, against the baseline at the same N."""
    if run is None:
        return None
    fanout_send = median(baseline.send_ms) if baseline else None
    fanout_last = baseline.last_ack_ms if baseline else None
    return {
        "streams": run.streams,
        "streams_held": run.complete,
        "ok": run.status() == "ok",
        "rss_per_stream_kb": rounded(run.rss_per_stream_kb),
        "eds_convergence_p50_ms": rounded(median(run.p50)),
        "eds_convergence_p99_ms": rounded(median(run.p99)),
        "last_ack_ms": rounded(run.last_ack_ms),
        "push_vs_raw_fanout_ratio": rounded(ratio(median(run.push_ms), fanout_send), 4),
        "send_vs_raw_fanout_ratio": rounded(ratio(median(run.send_ms), fanout_send), 4),
        "convergence_vs_raw_receipt_ratio": rounded(ratio(run.last_ack_ms, fanout_last), 4),
    }


def target(name, subject, limit_text, limit, value, value_text, unit="", comparison="<="):
    """One target row: met or missed, and by how much (in the unit and in percent of the limit)."""
    row = {"target": name, "measured_on": subject, "limit_text": limit_text, "comparison": comparison,
           "limit": limit, "value": rounded(value, 4), "value_text": value_text}
    if value is None:
        row.update(met=None, result=NOT_MEASURED)
        return row
    over = value - limit if comparison == "<=" else limit - value  # > 0: missed
    share = abs(over) / limit * 100 if limit else None
    percent = "" if share is None else f" ({share:.0f}%)" if share >= 1 else f" ({share:.1f}%)"
    # Counts (streams, bytes) are whole numbers; ratios and sizes get two decimals.
    amount = f"{abs(over):,.0f}" if isinstance(value, int) and isinstance(limit, int) else f"{abs(over):,.2f}"
    if over > 1e-9:
        row.update(met=False, result=f"**missed** by {amount}{unit}{percent}")
    elif over < -1e-9:
        side = "under" if comparison == "<=" else "over"
        row.update(met=True, result=f"**met**, {amount}{unit} {side} the limit{percent}")
    else:
        row.update(met=True, result="**met**" if comparison == ">=" or not limit else "**met**, exactly at the limit")
    return row


def targets(largest, runs, serializations, reconnect):
    """Issue 6's targets at the largest N, each with its verdict computed from the run."""
    rows = []
    for kind, label in CXDS:
        run = runs.get((kind, largest)) if largest else None
        base = runs.get(("fanout", largest)) if largest else None
        subject = f"{label}, N = {largest:,}" if largest else label

        # Held: every stream complete, and none failed (ended before the run stopped it).
        complete = run.complete if run and largest >= TARGET_STREAMS else None
        row = target("10,000 streams held", subject, f"≥ {TARGET_STREAMS:,}", TARGET_STREAMS, complete,
                     f"{run.complete or 0:,} complete, {run.failed:,} failed" if run else "—",
                     " streams", comparison=">=")
        if run and largest < TARGET_STREAMS:
            row["result"] = f"{NOT_MEASURED} (largest N is {largest:,})"
        elif complete is not None and run.failed:
            short = max(TARGET_STREAMS - complete, 0)
            row.update(met=False, result=f"**missed**: {run.failed:,} streams failed" +
                       (f", {short:,} short of {TARGET_STREAMS:,} complete" if short else ""))
        rows.append(row)

        rss = run.rss_per_stream_kb if run else None
        rows.append(target("server memory per stream", subject, f"≤ {TARGET_RSS_PER_STREAM_KB:g} KiB",
                           TARGET_RSS_PER_STREAM_KB, rss, f"{rss:,.1f} KiB" if rss is not None else "—", " KiB"))

        # Judged on the whole server-side push (change received → last write completed) against
        # the baseline's send; the write phase alone (cxds send_ms) is shown beside it.
        base_send = median(base.send_ms) if base else None
        push = ratio(median(run.push_ms), base_send) if run else None
        send = ratio(median(run.send_ms), base_send) if run else None
        rows.append(target("send time within 1.3× the raw fan-out's", subject, f"≤ {TARGET_SEND_RATIO:g}×",
                           TARGET_SEND_RATIO, push,
                           f"push_ms {fmt_ratio(push)} (send_ms {fmt_ratio(send)})" if push is not None else "—",
                           "×"))

        last = ratio(run.last_ack_ms, base.last_ack_ms) if run and base else None
        rows.append(target("last ACK within 1.5× the baseline's last receipt", subject,
                           f"≤ {TARGET_LAST_ACK_RATIO:g}×", TARGET_LAST_ACK_RATIO, last,
                           f"{fmt_ratio(last)} ({fmt_ms(run.last_ack_ms)} vs {fmt_ms(base.last_ack_ms)} ms)"
                           if last is not None else "—", "×"))

    rows.append(target("1 serialization per resource version", "cxds (metrics)",
                       f"≤ {TARGET_SERIALIZATIONS_PER_VERSION:g}", TARGET_SERIALIZATIONS_PER_VERSION, serializations,
                       f"{serializations:.3f}" if serializations is not None else "—"))

    sent = reconnect.get("resource_bytes") if reconnect else None
    streams = reconnect.get("streams") if reconnect else None
    back = reconnect.get("reconnected") if reconnect else None
    row = target("0 resource bytes on Delta reconnect", "cxds Delta restart", "0 bytes", TARGET_RECONNECT_BYTES, sent,
                 f"{sent:,} bytes to {fmt_int(back)} of {fmt_int(streams)} reconnected streams"
                 if sent is not None else "—", " bytes")
    if sent is not None and (back is None or streams is None or back < streams):
        # Nothing sent proves nothing unless every proxy came back.
        row.update(met=False, result=f"**missed**: only {fmt_int(back)} of {fmt_int(streams)} streams reconnected")
    rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# Plots


class Plotter:
    """Draws PNGs with gnuplot; says why when it cannot."""

    def __init__(self, out_dir, prefix):
        self.out_dir = out_dir
        self.prefix = prefix
        self.gnuplot = shutil.which("gnuplot")
        self.terminal = None
        self.failure = None
        if not self.gnuplot:
            self.failure = "gnuplot is not installed; on Debian: apt-get install gnuplot-nox"
            return
        # pngcairo draws antialiased lines and dash patterns; libgd's png is the fallback.
        for terminal in ("pngcairo size 900,560 font ',10'", "png size 900,560"):
            probe = subprocess.run([self.gnuplot], input=f"set terminal {terminal}\n", text=True,
                                   capture_output=True, timeout=30)
            if probe.returncode == 0 and not probe.stderr.strip():
                self.terminal = terminal
                break
        if not self.terminal:
            self.failure = "gnuplot has neither the pngcairo nor the png terminal"

    def draw(self, name, title, ylabel, series, logy=False, xlabel="streams (N)"):
        """series: [(title, colour, dash, point, [(x, y), ...])]. Returns the file name or None."""
        series = [s for s in series if s[4]]
        if not self.terminal or not series:
            return None
        file_name = f"{self.prefix}-{name}.png"
        xs = sorted({x for s in series for x, _ in s[4]})
        quote = lambda text: "'" + str(text).replace("'", "''") + "'"
        script = [
            f"set terminal {self.terminal}",
            f"set output {quote(os.path.join(self.out_dir, file_name))}",
            f"set title {quote(title)}",
            f"set xlabel {quote(xlabel)}",
            f"set ylabel {quote(ylabel)}",
            "set grid",
            "set key outside right top",
            # Room around the points, and a usable range when only one N was measured.
            "set offsets graph 0.05, graph 0.05, 0, 0",
            "set xtics (" + ", ".join(f"{quote(f'{x:,}')} {x}" for x in xs) + ")",
        ]
        if logy:
            # A range around the data: autoscaling widens a log axis to whole decades (1 to
            # 100,000 for data between 25 and 1,700), which squeezes the lines together.
            ys = [y for s in series for _, y in s[4]]
            script += ["set logscale y", f"set yrange [{min(ys) / 1.5}:{max(ys) * 1.5}]"]
        else:
            script.append("set yrange [0:*]")
        if len(xs) == 1:
            script.append(f"set xrange [{xs[0] * 0.5}:{xs[0] * 1.5}]")
        plots = []
        for index, (label, colour, dash, point, points) in enumerate(series):
            # Inline data blocks: no temporary files to clean up.
            block = f"$s{index}"
            script.append(f"{block} << EOD")
            script += [f"{x} {y}" for x, y in sorted(points)]
            script.append("EOD")
            plots.append(f"{block} using 1:2 with linespoints lw 2 lc rgb {quote(colour)} dt {dash} pt {point} "
                         f"ps 1.2 title {quote(label)}")
        script.append("plot " + ", \\\n  ".join(plots))
        result = subprocess.run([self.gnuplot], input="\n".join(script) + "\n", text=True, capture_output=True,
                                timeout=60)
        path = os.path.join(self.out_dir, file_name)
        if result.returncode != 0 or not os.path.exists(path):
            self.failure = f"gnuplot failed for {file_name}: {result.stderr.strip()[:300]}"
            return None
        return file_name


COLOURS = {"fanout": "#555555", "sotw": "#d95f02", "delta": "#1b9e77"}


def draw_plots(plotter, runs, sizes):
    def points(kind, value):
        out = []
        for n in sizes:
            run = runs.get((kind, n))
            v = value(run) if run else None
            if v is not None and v > 0:  # log scales cannot show 0
                out.append((n, v))
        return out

    drawn = {}
    stats = [("p50", 1, 7, lambda r: median(r.p50)), ("p99", 2, 5, lambda r: median(r.p99)),
             ("max", 3, 9, lambda r: median(r.max))]
    drawn["convergence"] = plotter.draw(
        "convergence", "EDS convergence vs streams (median over changes)",
        "ms: change made → ACK (fan-out: push → receipt)",
        [(f"{LABEL[kind]} {stat}", COLOURS[kind], dash, point, points(kind, value))
         for kind, _ in SERVERS for stat, dash, point, value in stats], logy=True)
    drawn["memory"] = plotter.draw(
        "memory", "Server memory per stream", "KiB per stream ((RSS connected − before) / streams)",
        [(LABEL[kind], COLOURS[kind], 1, 7, points(kind, lambda r: r.rss_per_stream_kb)) for kind, _ in SERVERS])
    drawn["cpu"] = plotter.draw(
        "cpu", "Server CPU per change", "server CPU ms per change (during the changes)",
        [(LABEL[kind], COLOURS[kind], 1, 7, points(kind, lambda r: r.cpu_ms_per_change)) for kind, _ in SERVERS])
    return drawn


# ---------------------------------------------------------------------------------------------
# Markdown sections


def machine_section(machine, runs):
    out = ["## Machine", ""]
    if not isinstance(machine, dict):
        out.append(f"`machine.json`: {NOT_MEASURED}.")
    else:
        names = {"date": "date", "cores": "cores (nproc)", "kernel": "kernel", "commit": "commit", "grpc": "gRPC",
                 "build_type": "build type", "loadavg_start": "load average (1 min) at start"}
        rows = [(names.get(key, key), str(value)) for key, value in machine.items()]
        out.append(table(["", "value"], rows))
    loads = [(f"{LABEL.get(kind, kind)} {n:,}", run.data.get("loadavg_start"), run.data.get("loadavg_end"))
             for (kind, n), run in sorted(runs.items(), key=lambda item: (item[0][1], kind_order(item[0][0])))]
    loads = [(name, a, b) for name, a, b in loads if a is not None or b is not None]
    if loads:
        out += ["", "Load average (1 min) at the start → end of each load run (cxds-load's own threads count): " +
                "; ".join(f"{name} {fmt_ms(a, 2)} → {fmt_ms(b, 2)}" for name, a, b in loads) + "."]
    return out


def kind_order(kind):
    order = [k for k, _ in SERVERS]
    return order.index(kind) if kind in order else len(order)


def method_section(runs):
    out = ["## Method", ""]
    if not runs:
        return out + [f"Load runs: {NOT_MEASURED}."]
    styles = sorted({r.data.get("node_style", "?") for r in runs.values() if r.kind != "fanout"})
    changes = sorted({len(r.changes) for r in runs.values()})
    one_per_connection = all(r.data.get("connections") == r.streams for r in runs.values())
    message_bytes = sorted({s.get("message_bytes") for r in runs.values() if r.kind == "fanout"
                            for s in r.server_changes if s and s.get("message_bytes")})
    out += [
        f"- Each load run starts its server, opens N simulated proxies with `cxds-load` "
        f"({', '.join(styles) or '—'} style; "
        f"{'one ADS stream per connection' if one_per_connection else 'streams shared over fewer connections'}) and "
        f"makes {' or '.join(str(c) for c in changes)} change(s) "
        "(see docs/load.md).",
        "- **Convergence** of a change, per stream: change made → the ACK of the response carrying it, measured on "
        "the client (so it includes cxds-load's own queueing). Baseline: push written → receipt. Tables give p50, "
        "p99 and max over the streams for each change; summaries take the median over the changes.",
        "- **Baseline** (`cxds-fanout`): plain gRPC streams that write one pre-serialized message"
        + (f" of {', '.join(f'{b:,}' for b in message_bytes)} bytes" if message_bytes else "")
        + " to every stream, with no xDS logic.",
        "- **Send time**, server side: the baseline's `send_ms` = first write started → last write completed; "
        "cxds's `send_ms` is the same span for a change, and `push_ms` = change received → last write completed "
        "(it includes building the responses). The target is judged on `push_ms`.",
        "- **RSS per stream** = (server RSS once all streams are connected − before) / complete streams. "
        "**Server CPU for the changes**: cxds-load's `cpu_s_changes` (server CPU time in the change phase); "
        "the CPU plot divides it by the number of changes.",
    ]
    return out


def load_section(runs, sizes, plots, plot_failure):
    out = ["## Load: convergence, memory and CPU", ""]
    if not runs:
        return out + [f"{NOT_MEASURED.capitalize()} (no `load/*.json`)."]
    for n in sizes:
        change_counts = {len(runs[(k, n)].changes) for k, _ in SERVERS if (k, n) in runs}
        k = change_counts.pop() if len(change_counts) == 1 else None
        out += [f"### N = {n:,}", ""]
        rows = []
        notes = []
        for kind, label in SERVERS:
            run = runs.get((kind, n))
            if run is None:
                rows.append([label] + [NOT_MEASURED] + [""] * 7)
                continue
            before, connected = run.server.get("rss_kb_before"), run.server.get("rss_kb_connected")
            cpu = run.cpu_s_changes
            rows.append([
                label, joined(run.p50), joined(run.p99), joined(run.max),
                f"{fmt_ms(run.connect_all_ms, 0)} ms" if run.connect_all_ms is not None else "— (not all complete)",
                f"{fmt_int(before)} → {fmt_int(connected)} KiB",
                f"{run.rss_per_stream_kb:,.1f} KiB" if run.rss_per_stream_kb is not None else "—",
                (f"{cpu:.2f} s" if cpu is not None else "—") + ("" if k else f" ({len(run.changes)} changes)"),
                run.status(),
            ])
            notes += [f"{label}: {note}" for note in run.notes]
        cpu_header = f"server CPU for {k} changes" if k else "server CPU for the changes"
        out.append(table(["server", "p50 (ms)", "p99 (ms)", "max (ms)", "connect all",
                          "server RSS before → connected", "per stream", cpu_header, "result"], rows))
        if notes:
            out += [""] + [f"- {note}" for note in notes]
        out.append("")
    out += ["### Plots", ""]
    names = [("convergence", "EDS convergence (p50, p99, max; median over changes) against N, log scale"),
             ("memory", "server memory per stream against N"),
             ("cpu", "server CPU per change against N")]
    for key, caption in names:
        if plots.get(key):
            out += [f"![{caption}]({plots[key]})", "", f"*{caption}*", ""]
        else:
            out += [f"- {caption}: not drawn ({plot_failure or 'no data'}).", ""]
    return out


def send_section(runs, sizes):
    out = ["## Send time: cxds against the raw fan-out", ""]
    if not runs:
        return out + [f"{NOT_MEASURED.capitalize()}."]
    for n in sizes:
        base = runs.get(("fanout", n))
        cxds = {kind: runs.get((kind, n)) for kind, _ in CXDS}
        count = max([len(r.changes) for r in [base] + list(cxds.values()) if r] or [0])
        out += [f"### N = {n:,}", ""]
        measured = (base and any(v is not None for v in base.send_ms)) or any(
            r and any(v is not None for v in r.push_ms + r.send_ms) for r in cxds.values())
        if not measured:
            out += [f"Server send times: {NOT_MEASURED} (no server reports).", ""]
            continue
        header = ["change", "fan-out send_ms"]
        for _, label in CXDS:
            header += [f"{label} push_ms", f"{label} send_ms", f"{label} push / send vs fan-out"]

        def cells(base_send, values):
            row = [fmt_ms(base_send)]
            for kind, _ in CXDS:
                push, send = values[kind]
                row += [fmt_ms(push), fmt_ms(send),
                        f"{fmt_ratio(ratio(push, base_send))} / {fmt_ratio(ratio(send, base_send))}"]
            return row

        rows = []
        for i in range(count):
            base_send = base.send_ms[i] if base and i < len(base.send_ms) else None
            values = {kind: ((r.push_ms[i], r.send_ms[i]) if r and i < len(r.changes) else (None, None))
                      for kind, r in cxds.items()}
            rows.append([str(i + 1)] + cells(base_send, values))
        values = {kind: ((median(r.push_ms), median(r.send_ms)) if r else (None, None)) for kind, r in cxds.items()}
        rows.append(["**median**"] + cells(median(base.send_ms) if base else None, values))
        out.append(table(header, rows))
        notes = [f"{label}: {note}" for kind, label in CXDS if cxds[kind] for note in cxds[kind].delivery_notes()]
        for run, label in [(base, "fan-out send_ms")] + [(cxds[kind], f"{label} push_ms and send_ms")
                                                        for kind, label in CXDS]:
            times = [] if run is None else run.send_ms + (run.push_ms if run.kind != "fanout" else [])
            if not any(v is not None for v in times):
                why = "no run at this N" if run is None else "no server reports"
                notes.append(f"{label}: {NOT_MEASURED} ({why})")
        out += ([""] + [f"- {note}" for note in notes]) if notes else []
        out.append("")

    out += ["### Last ACK against the baseline's last receipt", "",
            "Median over the changes of the slowest stream's latency (`latency_ms.max`).", ""]
    rows = []
    for n in sizes:
        base = runs.get(("fanout", n))
        base_last = base.last_ack_ms if base else None
        row = [f"{n:,}", fmt_ms(base_last)]
        for kind, _ in CXDS:
            run = runs.get((kind, n))
            last = run.last_ack_ms if run else None
            row += [fmt_ms(last), fmt_ratio(ratio(last, base_last))]
        rows.append(row)
    out.append(table(["N", "fan-out last receipt (ms)", "SotW last ACK (ms)", "SotW ratio", "Delta last ACK (ms)",
                      "Delta ratio"], rows))
    return out


def run_table(named_runs):
    """A compact table for the mesh and restart runs."""
    rows = []
    for name, run in named_runs:
        first = run.data.get("first_config_ms") or {}
        rows.append([
            name, f"{run.complete or 0:,} / {run.streams or 0:,}",
            f"{fmt_ms(run.connect_all_ms, 0)} ms" if run.connect_all_ms is not None else "— (not all complete)",
            " / ".join(fmt_ms(number(first.get(key))) for key in ("p50", "p99", "max")),
            joined(run.p50), joined(run.p99), joined(run.max),
            f"push {joined(run.push_ms)}; send {joined(run.send_ms)}"
            if any(v is not None for v in run.push_ms + run.send_ms) else NOT_MEASURED,
            f"{run.rss_per_stream_kb:,.1f} KiB" if run.rss_per_stream_kb is not None else "—",
            f"{run.cpu_s_changes:.2f} s" if run.cpu_s_changes is not None else "—",
            run.status(),
        ])
    return table(["run", "streams complete", "connect all", "first config p50 / p99 / max (ms)",
                  "convergence p50 (ms)", "p99 (ms)", "max (ms)", "server push_ms; send_ms per change",
                  "RSS per stream", "server CPU for the changes", "result"], rows)


# ---------------------------------------------------------------------------------------------
# Issue 16: SotW against Delta in one run, and the daemon against the raw fan-out


def sotw_vs_delta(run_dir, kind_of_sotw="sotw"):
    """{(style, N): (p50 ratio, p99 ratio, sotw Run, delta Run of the first pair, p50 and p99 ratio of
    each pair)} for the demo runs: Envoy-style ones in load/, gRPC-style ones in grpc-style/, at the
    sizes grpc-style/ has. Ratios are SotW over Delta of the medians over changes, the median over pairs. `kind_of_sotw`: "sotw" (the demo with --keep-unchanged-types) or "sotwwhole"
    (every type on every version)."""
    out = {}
    # The sizes bench/run.sh ran both styles at (BENCH_STYLE_SIZES, by default 5,000 and 10,000).
    sizes = {n for _, n in run_dir.sized("grpc-style")}
    for style, subdir in (("envoy", "load"), ("grpc", "grpc-style")):
        repeats = run_dir.repeats(subdir)
        for (kind, n), sotw_runs in repeats.items():
            delta_runs = repeats.get(("delta", n), {})
            if kind != kind_of_sotw or n not in sizes or 1 not in sotw_runs or 1 not in delta_runs:
                continue
            sotw_by = {k: Run("sotw", d) for k, d in sotw_runs.items()}
            delta_by = {k: Run("delta", d) for k, d in delta_runs.items()}
            what = f"SotW ({kind_of_sotw}) against Delta, {style}-style, {n:,} streams"
            p50s = paired_ratios(sotw_by, delta_by, lambda r: median(r.p50), lambda r: median(r.p50),
                                 run_dir.problems, what)
            p99s = paired_ratios(sotw_by, delta_by, lambda r: median(r.p99), lambda r: median(r.p99), [], what)
            out[(style, n)] = (median(p50s), median(p99s), sotw_by[1], delta_by[1], p50s, p99s)
    return out


def worst(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def daemon_run_pairs(run_dir, baseline="fanout"):
    """{N: (cxds Run, fan-out Run or None)} for cxds serve on the generated mesh (daemon/delta-N)
    and the raw fan-out at the same N and message size (daemon/fanout-N; with baseline="fanoutack",
    the same fan-out whose clients ACK every receipt, daemon/fanoutack-N)."""
    sized = run_dir.sized("daemon")
    return {n: (Run("delta", data), Run("fanout", sized[(baseline, n)]) if (baseline, n) in sized else None)
            for (kind, n), data in sized.items() if kind == "delta"}


def repeat_daemon_ratios(run_dir, daemon, baseline, ratios):
    """Sets each daemon ratio of `daemon` ({N: figures}) to the median over the repeated pairs
    (daemon/delta-N-rK.json with BASELINE-N-rK.json, run one after the other) and lists each
    pair's (KEY with _by_pair for _ratio). `ratios`: (key, value of the daemon's Run, value of
    the baseline's Run)."""
    repeats = run_dir.repeats("daemon")
    for n, figs in daemon.items():
        runs = {k: Run("delta", d) for k, d in repeats.get(("delta", n), {}).items()}
        bases = {k: Run("fanout", d) for k, d in repeats.get((baseline, n), {}).items()}
        for i, (key, value_a, value_b) in enumerate(ratios):
            # Each left-out pair is reported once, with the first ratio.
            by_pair = paired_ratios(runs, bases, value_a, value_b, run_dir.problems if i == 0 else [],
                                    f"the daemon against {baseline}, {n:,} streams")
            figs[key] = rounded(median(by_pair), 4) if by_pair else figs.get(key)
            figs[key.replace("_ratio", "_by_pair")] = [rounded(r, 4) for r in by_pair]


RAW_FANOUT_RATIOS = (
    ("push_vs_raw_fanout_ratio", lambda r: median(r.push_ms), lambda b: median(b.send_ms)),
    ("send_vs_raw_fanout_ratio", lambda r: median(r.send_ms), lambda b: median(b.send_ms)),
    ("convergence_vs_raw_receipt_ratio", lambda r: r.last_ack_ms, lambda b: b.last_ack_ms),
    # Not a target: the last ACK counted from the daemon's intake of the change (no quiet period, no debounce).
    ("convergence_after_intake_vs_raw_receipt_ratio", lambda r: r.last_ack_after_intake_ms, lambda b: b.last_ack_ms))
ACKED_FANOUT_RATIOS = (
    ("push_vs_acked_fanout_ratio", lambda r: median(r.push_ms), lambda b: median(b.send_ms)),
    ("convergence_vs_acked_fanout_receipt_ratio", lambda r: r.last_ack_ms, lambda b: b.last_ack_ms))


def fmt_repeats(ratios):
    """The ratio of each repeated pair, as the report lists them beside their median."""
    return ", ".join(fmt_ratio(r) for r in ratios) if len(ratios) > 1 else "one pair"


def pairs_table(pairs):
    rows = []
    for (style, n), (p50, p99, sotw, delta, p50s, p99s) in sorted(pairs.items()):
        rows.append([style, fmt_int(n), f"{fmt_ms(median(sotw.p50))} / {fmt_ms(median(sotw.p99))}",
                     f"{fmt_ms(median(delta.p50))} / {fmt_ms(median(delta.p99))}", fmt_ratio(p50), fmt_ratio(p99),
                     f"{fmt_repeats(p50s)}; {fmt_repeats(p99s)}",
                     sotw.status() if sotw.status() != "ok" else delta.status()])
    return table(["proxies", "streams", "SotW p50 / p99 (ms), first pair", "Delta p50 / p99 (ms), first pair",
                  "p50 ratio", "p99 ratio", "each pair's p50; p99 ratio", "status"], rows)


def draw_protocol_plots(plotter, pairs, whole_pairs, daemon_pairs, big):
    """The plots of issue 16's scenarios: SotW against Delta per proxy style, the daemon against
    the raw fan-out, and the big config's growth. {name: file or None}."""
    drawn = {}
    for style in ("envoy", "grpc"):
        series = []
        for label, colour, which, source in (("cxds Delta", COLOURS["delta"], 3, pairs),
                                             ("cxds SotW, changed types", COLOURS["sotw"], 2, pairs),
                                             ("cxds SotW, every type", "#7570b3", 2, whole_pairs)):
            for stat, dash, point in (("p50", 1, 7), ("p99", 2, 5)):
                pts = [(n, median(getattr(pair[which], stat))) for (s, n), pair in source.items() if s == style]
                series.append((f"{label} {stat}", colour, dash, point,
                               [(n, v) for n, v in pts if v is not None and v > 0]))
        drawn[f"sotw-delta-{style}"] = plotter.draw(
            f"sotw-delta-{style}", f"Demo, {style}-style proxies: EDS convergence (median over changes)",
            "ms: change made → ACK", series, logy=True)
    series = []
    for label, colour, dash, point, value in (
            ("cxds serve: push (change → last write)", COLOURS["delta"], 1, 7, lambda d, f: median(d.push_ms)),
            ("fan-out: send", COLOURS["fanout"], 1, 5, lambda d, f: median(f.send_ms) if f else None),
            ("cxds serve: last ACK", COLOURS["delta"], 2, 9, lambda d, f: d.last_ack_ms),
            ("fan-out: last receipt", COLOURS["fanout"], 2, 13, lambda d, f: f.last_ack_ms if f else None)):
        pts = [(n, value(d, f)) for n, (d, f) in daemon_pairs.items()]
        series.append((label, colour, dash, point, [(n, v) for n, v in pts if v is not None and v > 0]))
    drawn["daemon"] = plotter.draw("daemon", "cxds serve on the generated mesh against the raw fan-out",
                                   "ms (median over changes)", series)
    series = []
    for label, colour, dash, point, key in (("full push context", "#1b9e77", 1, 7, "context_ms"),
                                            ("endpoint change → last ACK (1,000 proxies)", "#d95f02", 1, 5,
                                             "change_ms")):
        pts = [(services, median(entry[key])) for services, entry in big.items()]
        series.append((label, colour, dash, point, [(n, v) for n, v in pts if v is not None and v > 0]))
    drawn["big-config"] = plotter.draw("big-config", "Big config: growth with the number of services",
                                       "ms (median)", series, logy=True, xlabel="services")
    return drawn


def plot_line(plots, name, caption):
    file_name = plots.get(name)
    return [f"![{caption}]({file_name})", ""] if file_name else []


def protocol_section(pairs, whole_pairs, daemon, plots):
    md = ["## SotW against Delta, and the daemon against the raw fan-out (issue 16)", ""]
    if not pairs:
        md += [f"SotW against Delta: {NOT_MEASURED}.", ""]
    else:
        md += ["The demo (`cxds demo --keep-unchanged-types`, `--drive teaching`: each change moves the "
               "endpoint and so the EDS version alone), SotW and Delta in the same run; each ratio is of the "
               "medians over changes of a SotW run and the Delta run made just before it, and with BENCH_REPEAT "
               "pairs the median of their ratios (this machine's speed drifts by up to a third between "
               "sittings, so only runs made one after the other compare). At 5,000 streams and more these are bound by the server core (core 0, saturated "
               "during the pushes; docs/load.md has the profile).", ""]
        md += [pairs_table(pairs), ""]
        md += plot_line(plots, "sotw-delta-envoy", "SotW against Delta, Envoy-style proxies")
        md += plot_line(plots, "sotw-delta-grpc", "SotW against Delta, gRPC-style proxies")
    if whole_pairs:
        md += ["The same SotW runs with every type on every version (`cxds demo` as in the teaching "
               "walkthrough, and as go-control-plane's snapshot cache versions a snapshot), against the first "
               "pair's Delta runs, made several runs earlier (one pair, not a target: for scale): each change "
               "then costs a SotW stream four responses and four ACKs.", ""]
        md += [pairs_table(whole_pairs), ""]
    if not daemon:
        md += [f"The daemon on the generated mesh: {NOT_MEASURED}.", ""]
    else:
        md += ["`cxds serve` on the generated mesh (1,000 services, 10,000 endpoints), gRPC-style Delta proxies, "
               "one endpoint change at a time through the files; the raw fan-out at the same N pushes messages "
               "of the size of that run's EDS responses. The daemon's times count from the file write, so they "
               "include the config directory's quiet period (10 ms after cxds-load's whole-file replace, "
               "`--config-rename-settle`) and reading the change, which the fan-out does "
               "not have (cxds-load starts cxds with `--eds-debounce false`: an endpoint change is not debounced); "
               "at small N those dominate; at thousands of streams the server core does. Each ratio is "
               "the median over the repeated pairs (the daemon, then the fan-out just after it).", ""]
        rows = [[fmt_int(n), fmt_ratio(f["push_vs_raw_fanout_ratio"]), fmt_ratio(f["send_vs_raw_fanout_ratio"]),
                 fmt_ratio(f["convergence_vs_raw_receipt_ratio"]),
                 f'{fmt_repeats(f.get("push_vs_raw_fanout_by_pair") or [])}; '
                 f'{fmt_repeats(f.get("convergence_vs_raw_receipt_by_pair") or [])}',
                 fmt_ms(f["last_ack_ms"]), "ok" if f["ok"] else "not ok"]
                for n, f in sorted(daemon.items())]
        md.append(table(["streams", "push / fan-out send", "send / fan-out send", "last ACK / last receipt",
                         "each pair's push; last ACK ratio", "last ACK (ms), first pair", "status"], rows))
        md += [""] + plot_line(plots, "daemon", "cxds serve against the raw fan-out")
        acked = [(n, f) for n, f in sorted(daemon.items()) if f.get("acked_fanout_send_ms") is not None
                 or f.get("last_ack_after_intake_ms") is not None]
        if acked:
            md += ["What the gap is made of. The targets are judged on the raw fan-out above; beside it, the same "
                   "fan-out with clients that ACK every receipt (`cxds-load --raw-ack`: its server then reads one "
                   "request per push per stream, as an xDS server must), and the daemon's last ACK counted from "
                   "the moment it took the change in (its change summary's `received_unix_ms`), without the "
                   "directory's quiet period and reading the change. Each ACKed fan-out run follows the raw fan-out run "
                   "that follows the daemon's, so its pairs are a run further apart; ratios are medians over the "
                   "pairs, times the first pair's.", ""]
            rows = [[fmt_int(n), fmt_ms(f.get("acked_fanout_send_ms")), fmt_ratio(f.get("push_vs_acked_fanout_ratio")),
                     fmt_ms(f.get("acked_fanout_last_receipt_ms")),
                     fmt_ratio(f.get("convergence_vs_acked_fanout_receipt_ratio")),
                     f'{fmt_repeats(f.get("push_vs_acked_fanout_by_pair") or [])}; '
                     f'{fmt_repeats(f.get("convergence_vs_acked_fanout_receipt_by_pair") or [])}',
                     fmt_ms(f.get("last_ack_after_intake_ms")),
                     fmt_ratio(f.get("convergence_after_intake_vs_raw_receipt_ratio"))] for n, f in acked]
            md.append(table(["streams", "ACKed fan-out send (ms)", "push / ACKed fan-out send",
                             "ACKed fan-out last receipt (ms)", "last ACK / ACKed fan-out last receipt",
                             "each pair's push; last ACK ratio", "last ACK from intake (ms)",
                             "last ACK from intake / raw last receipt"], rows))
            md.append("")
    return md



def big_config(run_dir, root):
    """Per service count of the big-config scenario: the full push context's build times (ms, one
    per start of cxds serve) and, per endpoint change, the time from the file written to the last
    ACK of the 1,000 gRPC-style proxies (ms, from the client's change time and the server's
    summary), with the load run."""
    out = {}
    big = os.path.join(root, "big")
    if not os.path.isdir(big):
        return out
    for name in sorted(os.listdir(big)):
        m = re.fullmatch(r"context-(\d+)-\d+\.json", name)
        if m:
            pushes = run_dir.json(os.path.join("big", name))
            first = pushes[0] if isinstance(pushes, list) and pushes and isinstance(pushes[0], dict) else {}
            if number(first.get("context_ms")) is not None:
                out.setdefault(int(m.group(1)), {"context_ms": [], "change_ms": [], "run": None})["context_ms"].append(
                    first["context_ms"])
        m = re.fullmatch(r"grpc-(\d+)\.json", name)
        if m:
            data = run_dir.json(os.path.join("big", name))
            if not isinstance(data, dict):
                continue
            entry = out.setdefault(int(m.group(1)), {"context_ms": [], "change_ms": [], "run": None})
            entry["run"] = Run("delta", data)
            reports = {r.get("change"): r for r in data.get("server_reports") or [] if isinstance(r, dict)}
            for change in data.get("changes") or []:
                report = reports.get(change.get("change"))
                made, acked = number(change.get("made_at_unix_ms")), number((report or {}).get("last_answered_unix_ms"))
                if made is not None and acked is not None and (report or {}).get("proxies_acked") == report.get("proxies"):
                    entry["change_ms"].append(acked - made)
    return out


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


MESH_MICRO = {"context": "BM_BuildPushContext", "index": "BM_IndexServicesByHost"}


def mesh_micro(run_dir):
    """{services: {"context"|"index": ns per service}} from micro/xds.json (bench/xds_bench.cc)."""
    data = run_dir.json(os.path.join("micro", "xds.json"))
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        return {}
    rows, _ = select_benchmarks(data["benchmarks"])
    out = {}
    for row in rows:
        name, _, arg = base_name(row).partition("/services:")
        label = next((k for k, v in MESH_MICRO.items() if v == name), None)
        value = number(row.get("per_service_ns"))
        if label is None or not arg.isdigit() or value is None or row.get("error_occurred"):
            continue
        # An inverted rate counter is reported in seconds per service.
        out.setdefault(int(arg), {})[label] = value * 1e9
    return out


def mesh_micro_growth(micro, small=1000, large=10000):
    """Per-service cost at `large` over that at `small`, for the context and its baseline."""
    if small not in micro or large not in micro:
        return None, None
    def grow(label):
        a, b = micro[small].get(label), micro[large].get(label)
        return b / a if a and b else None
    return grow("context"), grow("index")


def mesh_micro_lines(micro):
    if not micro:
        return []
    out = ["The context alone (`BM_BuildPushContext` of `bench/xds_bench.cc`, no I/O), against a baseline "
           "measured beside it on the same store: only the Services indexed by host in a map "
           "(`BM_IndexServicesByHost`).", "",
           "| services | context (ns / service) | index by host (ns / service) | context / index |",
           "|---|---|---|---|"]
    for services, row in sorted(micro.items()):
        c, i = row.get("context"), row.get("index")
        ns = lambda value: "—" if value is None else f"{value:,.0f}"
        out.append(f"| {services:,} | {ns(c)} | {ns(i)} | "
                   f"{f'{c / i:.2f}x' if c and i else '—'} |")
    context_growth, index_growth = mesh_micro_growth(micro)
    if context_growth and index_growth:
        out += ["", f"Per-service cost from 1,000 to 10,000 services: the context {context_growth:.2f}x, the baseline "
                f"{index_growth:.2f}x (1.0x would be linear). The share of the growth that is the context's own is "
                f"their quotient, {context_growth / index_growth:.2f}x; the rest is the baseline's, node-based maps "
                "missing the cache as they outgrow it."]
    return out + [""]


def big_section(big, plots, micro=None):
    out = ["## Big config (`cxds serve`, gRPC-style proxies)", ""]
    if not big:
        return out + [f"{NOT_MEASURED.capitalize()} (BENCH_BIG=0, or no `big/` results)."] + [""] + mesh_micro_lines(micro)
    out += ["Services with 10 endpoints each (`bench/gen_mesh.py`). Full push context: `context_ms` of the first "
            "push of three starts with no proxy. Change to last ACK: the endpoint file written to the last ACK of "
            "1,000 proxies (LDS by name, then their route, cluster and endpoints), per change.", "",
            "| services | full push context (ms) | change to last ACK (ms) | server CPU connecting (s) | RSS per proxy |",
            "|---|---|---|---|---|"]
    for services, entry in sorted(big.items()):
        run = entry["run"]
        cpu = number(run.server.get("cpu_s_connect")) if run else None
        out.append(f"| {services:,} | {', '.join(f'{v:,.2f}' for v in entry['context_ms']) or '—'} | "
                   f"{', '.join(f'{v:,.0f}' for v in entry['change_ms']) or '—'} | "
                   f"{f'{cpu:,.2f}' if cpu is not None else '—'} | "
                   f"{f'{run.rss_per_stream_kb:,.1f} KiB' if run and run.rss_per_stream_kb is not None else '—'} |")
    sizes = sorted(big)
    if len(sizes) >= 2:
        small, large = big[sizes[0]], big[sizes[-1]]
        for label, key in (("full push context", "context_ms"), ("change to last ACK", "change_ms")):
            a, b = median(small[key]), median(large[key])
            if a and b:
                out.append("")
                out.append(f"Growth of the {label} from {sizes[0]:,} to {sizes[-1]:,} services: {b / a:.1f}x "
                           f"for {sizes[-1] / sizes[0]:.0f}x the services "
                           f"({'linear or better' if b / a <= sizes[-1] / sizes[0] else 'worse than linear'}).")
    out += ["", "Bound by: the context by the server's CPU on one thread; the change by the server's CPU "
            "(re-reading the whole directory, then the push) and the one-core load client.", ""]
    return out + mesh_micro_lines(micro) + plot_line(plots, "big-config", "Big config growth")


def mesh_section(scenario, mesh_runs):
    out = ["## Mesh scenario (`cxds serve`, config directory)", ""]
    if not mesh_runs and not isinstance(scenario, dict):
        return out + [f"{NOT_MEASURED.capitalize()}."]
    if isinstance(scenario, dict):
        parts = [f"{scenario[key]:,} {name}" for key, name in (("services", "services"), ("endpoints", "endpoints"),
                                                               ("streams", "streams"))
                 if isinstance(scenario.get(key), int)]
        if scenario.get("node_style"):
            parts.append(f"{scenario['node_style']}-style proxies")
        out += ["Scenario: " + ", ".join(parts) + ".", ""]
    else:
        out += [f"`mesh/scenario.json`: {NOT_MEASURED}.", ""]
    if not mesh_runs:
        return out + [f"Mesh load run: {NOT_MEASURED}."]
    named = [(f"{LABEL.get(kind, kind)}, N = {n:,}", run) for (kind, n), run in sorted(mesh_runs.items())]
    out.append(run_table(named))
    notes = [f"{name}: {note}" for name, run in named for note in run.notes + run.delivery_notes()]
    return out + ([""] + [f"- {note}" for note in notes] if notes else [])


def restart_section(restart):
    out = ["## Restart: Delta reconnect", ""]
    if restart is None:
        return out + [f"{NOT_MEASURED.capitalize()}."]
    reconnect = restart.data.get("reconnect")
    out += [run_table([("before the restart", restart)]), ""]
    if not isinstance(reconnect, dict):
        return out + [f"Reconnect figures: {NOT_MEASURED} (no `reconnect` object)."]
    rows = [(label, fmt_ms(number(reconnect.get(key)), digits) if key.endswith("_ms") else fmt_int(reconnect.get(key)))
            for key, label, digits in (
                ("streams", "streams", 0), ("reconnected", "reconnected (server's count)", 0),
                ("restart_ms", "restart: old server stopped → new one ready (ms)", 0),
                ("reconnect_ms", "streams restarted → all seen by the server (ms)", 0),
                ("settle_ms", "counted for, after that (ms)", 0), ("responses", "responses sent", 0),
                ("response_bytes", "bytes of those responses (envelopes included)", 0),
                ("resources", "resources sent", 0), ("resource_bytes", "bytes of resources", 0),
                ("failed", "reconnected streams failed", 0), ("errors", "errors", 0))
            if key in reconnect]
    out.append(table(["after the restart", "value"], rows))
    return out


def micro_section(run_dir):
    out = ["## Micro-benchmarks", ""]
    paths = sorted(glob.glob(os.path.join(run_dir.root, "micro", "*.json")))
    if not paths:
        return out + [f"{NOT_MEASURED.capitalize()} (no `micro/*.json`)."]
    for path in paths:
        name = os.path.basename(path)
        data = run_dir.json(os.path.join("micro", name))
        out += [f"### {name}", ""]
        if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
            out += ["Not a Google Benchmark JSON file.", ""]
            continue
        context = data.get("context") or {}
        facts = [f"{k} {context[k]}" for k in ("date", "host_name", "num_cpus", "mhz_per_cpu", "library_build_type")
                 if k in context]
        if facts:
            out += ["Context: " + ", ".join(facts) + ".", ""]
        rows, shown_as = select_benchmarks(data["benchmarks"])
        counters = []
        for row in rows:
            for key, value in row.items():
                if key not in BENCHMARK_STANDARD_KEYS and key not in counters and isinstance(value, (int, float)):
                    counters.append(key)
        body = []
        for row in rows:
            label = f" ({row['label']})" if row.get("label") else ""
            if row.get("error_occurred") or row.get("skipped"):
                time_text = "error: " + str(row.get("error_message") or row.get("skip_message") or "skipped")
            else:
                time_text = f"{fmt_time(number(row.get('real_time')))} {row.get('time_unit', 'ns')}"
            body.append([base_name(row) + label, time_text] + [fmt_count(number(row.get(c))) for c in counters])
        out.append(table(["benchmark", "real time"] + counters, body))
        if shown_as:
            out += ["", shown_as]
        out.append("")
    return out


def base_name(row):
    return row.get("run_name") or AGGREGATE_SUFFIX.sub("", row.get("name", "?"))


def select_benchmarks(benchmarks):
    """One row per benchmark: its _median aggregate when there is one, else what was reported."""
    groups = {}
    for row in benchmarks:
        if isinstance(row, dict):
            groups.setdefault(base_name(row), []).append(row)
    rows, medians, means = [], 0, 0
    for rows_of_one in groups.values():
        median_rows = [r for r in rows_of_one if r.get("aggregate_name") == "median"
                       or r.get("name", "").endswith("_median")]
        mean_rows = [r for r in rows_of_one if r.get("aggregate_name") == "mean" or r.get("name", "").endswith("_mean")]
        plain = [r for r in rows_of_one
                 if r.get("run_type") != "aggregate" and not AGGREGATE_SUFFIX.search(r.get("name", ""))]
        if median_rows:
            rows.append(median_rows[0])
            medians += 1
        elif mean_rows:
            rows.append(mean_rows[0])
            means += 1
        else:
            rows += plain or rows_of_one
    note = []
    if medians:
        note.append(f"{medians} row(s) are the median over repetitions")
    if means:
        note.append(f"{means} row(s) are the mean (no median reported)")
    return rows, ("*" + "; ".join(note) + ".*") if note else ""


def targets_section(rows, largest, serial_line):
    out = ["## Targets (issue 6)", ""]
    if largest:
        out += [f"Load figures at the largest N measured ({largest:,}); medians over the changes.", ""]
    body = [[r["target"], r["measured_on"], r["limit_text"], r["value_text"], r["result"]] for r in rows]
    out.append(table(["target", "measured on", "limit", "measured", "result"], body))
    return out + ["", serial_line]


# ---------------------------------------------------------------------------------------------


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: python3 bench/report.py RUN_DIR OUT_MD OUT_JSON\n")
        return 2
    root, out_md, out_json = argv[1:]
    if not os.path.isdir(root):
        sys.stderr.write(f"report.py: {root} is not a directory\n")
        return 2
    run_dir = RunDir(root)
    machine = run_dir.json("machine.json")
    machine = machine if isinstance(machine, dict) else None

    runs = {}
    for (kind, n), data in run_dir.sized("load").items():
        if kind in LABEL:
            runs[(kind, n)] = Run(kind, data)
        elif kind != "sotwwhole":  # read by sotw_vs_delta
            run_dir.problems.append(f"`load/{kind}-{n}.json` ignored: unknown server `{kind}`")
    sizes = sorted({n for _, n in runs})
    largest = sizes[-1] if sizes else None

    mesh_runs = {key: Run(key[0], data) for key, data in run_dir.sized("mesh").items()}
    big = big_config(run_dir, root)
    micro = mesh_micro(run_dir)
    scenario = run_dir.json(os.path.join("mesh", "scenario.json"))
    restart_data = run_dir.json(os.path.join("restart", "delta-restart.json"))
    restart = Run("delta", restart_data) if isinstance(restart_data, dict) else None
    reconnect = restart.data.get("reconnect") if restart and isinstance(restart.data.get("reconnect"), dict) else None

    metrics = run_dir.json(os.path.join("metrics", "serializations.json"))
    serializations = None
    if isinstance(metrics, dict):
        serializations = ratio(number(metrics.get("serializations")), number(metrics.get("resource_versions")))

    # The run's date, and the report's name names its plots (NAME.md, NAME-*.png).
    date = (machine or {}).get("date") or time.strftime("%Y-%m-%d", time.gmtime())
    out_dir = os.path.dirname(os.path.abspath(out_md))
    os.makedirs(out_dir, exist_ok=True)
    if os.path.dirname(os.path.abspath(out_json)):
        os.makedirs(os.path.dirname(os.path.abspath(out_json)), exist_ok=True)
    plotter = Plotter(out_dir, os.path.splitext(os.path.basename(out_md))[0])
    plots = draw_plots(plotter, runs, sizes) if runs else {}

    target_rows = targets(largest, runs, serializations, reconnect)
    pairs = sotw_vs_delta(run_dir)
    whole_pairs = sotw_vs_delta(run_dir, "sotwwhole")
    daemon_pairs = daemon_run_pairs(run_dir)
    daemon = {n: figures(run, base) for n, (run, base) in daemon_pairs.items()}
    for n, (run, acked) in daemon_run_pairs(run_dir, "fanoutack").items():
        daemon[n].update({"acked_fanout_send_ms": rounded(median(acked.send_ms)) if acked else None,
                          "acked_fanout_last_receipt_ms": rounded(acked.last_ack_ms) if acked else None,
                          "last_ack_after_intake_ms": rounded(run.last_ack_after_intake_ms)})
    repeat_daemon_ratios(run_dir, daemon, "fanout", RAW_FANOUT_RATIOS)
    repeat_daemon_ratios(run_dir, daemon, "fanoutack", ACKED_FANOUT_RATIOS)
    plots.update(draw_protocol_plots(plotter, pairs, whole_pairs, daemon_pairs, big))

    # Markdown ---------------------------------------------------------------------------------
    commit = (machine or {}).get("commit")
    md = [f"# cxds benchmark report, {date}" + (f" (commit {commit})" if commit else ""), "",
          f"Generated by `bench/report.py` from `{os.path.basename(os.path.normpath(root))}`.", ""]
    serial_line = (f"Serializations per resource version (`metrics/serializations.json`): "
                   f"{metrics.get('serializations'):,} serializations / {metrics.get('resource_versions'):,} "
                   f"resource versions = {serializations:.3f}."
                   if serializations is not None else f"Serializations per resource version: {NOT_MEASURED}.")
    sections = [machine_section(machine, runs), method_section(runs),
                load_section(runs, sizes, plots, plotter.failure), send_section(runs, sizes),
                mesh_section(scenario if isinstance(scenario, dict) else None, mesh_runs),
                restart_section(restart), big_section(big, plots, micro), protocol_section(pairs, whole_pairs, daemon, plots), micro_section(run_dir),
                targets_section(target_rows, largest, serial_line)]
    # After the sections: reading the micro-benchmark files can add problems too.
    if run_dir.problems:
        md += ["**Input problems:**", ""] + [f"- {p}" for p in run_dir.problems] + [""]
    for section in sections:
        md += section + [""]
    with open(out_md, "w", encoding="utf-8") as f:
        f.write("\n".join(md).rstrip() + "\n")

    # JSON -------------------------------------------------------------------------------------
    cores = (machine or {}).get("cores")
    if cores is None and runs:
        cores = next(iter(runs.values())).data.get("cores")
    per_n = {}
    for n in sizes:
        base = runs.get(("fanout", n))
        per_n[str(n)] = {kind: figures(runs.get((kind, n)), base) for kind, _ in CXDS}
    top = per_n.get(str(largest), {}) if largest else {}
    delta = top.get("delta") or {}
    held = [f["streams_held"] for f in (top.get("sotw"), top.get("delta")) if f and f.get("streams_held") is not None]
    summary = {
        "date": date,
        "commit": commit,
        "cores": cores,
        "largest_n": largest,
        # Both protocols must hold the streams; the smaller count is what the server held.
        "streams_held": min(held) if held else None,
        "rss_per_stream_kb": delta.get("rss_per_stream_kb"),
        "eds_convergence_p50_ms": delta.get("eds_convergence_p50_ms"),
        "eds_convergence_p99_ms": delta.get("eds_convergence_p99_ms"),
        "serializations_per_resource_version": rounded(serializations, 4),
        "push_vs_raw_fanout_ratio": delta.get("push_vs_raw_fanout_ratio"),
        "send_vs_raw_fanout_ratio": delta.get("send_vs_raw_fanout_ratio"),
        "convergence_vs_raw_receipt_ratio": delta.get("convergence_vs_raw_receipt_ratio"),
        "delta_reconnect_resource_bytes": reconnect.get("resource_bytes") if reconnect else None,
        # The mesh scenario (1,000 services, ~2,000 resources a proxy): server RSS per connected
        # proxy, from the largest mesh run (issue 16's target: at most 256 KiB).
        "mesh_rss_per_proxy_kb": rounded(max(mesh_runs.items())[1].rss_per_stream_kb) if mesh_runs else None,
        # Big config (issue 16), medians: the full push context, and an endpoint change to the
        # last ACK of 1,000 gRPC-style proxies, at 10,000 and 1,000 services.
        "full_push_context_ms_10k": rounded(median(big.get(10000, {}).get("context_ms", []))),
        "eds_change_ms_10k": rounded(median(big.get(10000, {}).get("change_ms", []))),
        "full_push_context_ms_1k": rounded(median(big.get(1000, {}).get("context_ms", []))),
        "eds_change_ms_1k": rounded(median(big.get(1000, {}).get("change_ms", []))),
        # The context alone (BM_BuildPushContext): per-service cost at 10,000 services over that
        # at 1,000 (1.0: linear), for the context and for a baseline that only indexes services.
        "mesh_context_growth_1k_to_10k": rounded(mesh_micro_growth(micro)[0], 4),
        "mesh_index_baseline_growth_1k_to_10k": rounded(mesh_micro_growth(micro)[1], 4),
        # Issue 16: SotW over Delta on the demo, the worst over sizes (>= 5,000) and proxy styles;
        # the daemon on the generated mesh against the raw fan-out, the worst over sizes.
        "sotw_vs_delta_p50_ratio": rounded(worst(v[0] for v in pairs.values()), 4),
        "sotw_vs_delta_p99_ratio": rounded(worst(v[1] for v in pairs.values()), 4),
        "sotw_vs_delta": {f"{style}-{n}": {"p50": rounded(p50, 4), "p99": rounded(p99, 4),
                                           "p50_by_pair": [rounded(r, 4) for r in p50s],
                                           "p99_by_pair": [rounded(r, 4) for r in p99s]}
                          for (style, n), (p50, p99, _, _, p50s, p99s) in sorted(pairs.items())},
        # The same with every type on every version (the teaching walkthrough's versioning).
        "sotw_whole_snapshot_vs_delta_p50_ratio": rounded(worst(v[0] for v in whole_pairs.values()), 4),
        "sotw_whole_snapshot_vs_delta_p99_ratio": rounded(worst(v[1] for v in whole_pairs.values()), 4),
        "sotw_whole_snapshot_vs_delta": {f"{style}-{n}": {"p50": rounded(p50, 4), "p99": rounded(p99, 4)}
                                         for (style, n), (p50, p99, *_) in sorted(whole_pairs.items())},
        "daemon_push_vs_raw_fanout_ratio": rounded(worst(f["push_vs_raw_fanout_ratio"] for f in daemon.values()), 4),
        "daemon_convergence_vs_raw_receipt_ratio":
            rounded(worst(f["convergence_vs_raw_receipt_ratio"] for f in daemon.values()), 4),
        # Not targets: the daemon against the fan-out whose clients ACK, and its last ACK from its intake.
        "daemon_push_vs_acked_fanout_ratio":
            rounded(worst(f.get("push_vs_acked_fanout_ratio") for f in daemon.values()), 4),
        "daemon_convergence_vs_acked_fanout_receipt_ratio":
            rounded(worst(f.get("convergence_vs_acked_fanout_receipt_ratio") for f in daemon.values()), 4),
        "daemon_convergence_after_intake_vs_raw_receipt_ratio":
            rounded(worst(f.get("convergence_after_intake_vs_raw_receipt_ratio") for f in daemon.values()), 4),
        "daemon_per_n": {str(n): f for n, f in sorted(daemon.items())},
        "per_n": per_n,
        "targets": [{key: r[key] for key in ("target", "measured_on", "comparison", "limit", "value", "met")}
                    for r in target_rows],
    }
    with open(out_json, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
