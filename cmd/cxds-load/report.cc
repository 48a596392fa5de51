#include "report.h"

#include "common/strings.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "absl/strings/numbers.h"
#include "fmt/format.h"

namespace cxds::load {

namespace {

std::string JsonString(const std::string& text) { return JsonQuote(text); }

std::string JsonNumber(double value) { return fmt::format("{:.3f}", value); }

template <typename T>
std::string JsonOptional(const std::optional<T>& value) {
  if (!value.has_value()) return "null";
  if constexpr (std::is_floating_point_v<T>) return JsonNumber(*value);
  return std::to_string(*value);
}

std::string JsonDistribution(const Distribution& d) {
  return fmt::format(R"({{"count": {}, "p50": {}, "p90": {}, "p99": {}, "max": {}}})", d.count, JsonNumber(d.p50),
                     JsonNumber(d.p90), JsonNumber(d.p99), JsonNumber(d.max));
}

std::string Row(const std::string& label, const Distribution& d) {
  if (d.count == 0) return fmt::format("  {:<34} (none)\n", label);
  return fmt::format("  {:<34} n={:<6} p50={:>9.2f} p90={:>9.2f} p99={:>9.2f} max={:>9.2f}\n", label, d.count, d.p50,
                     d.p90, d.p99, d.max);
}

std::string Optional(const std::optional<int64_t>& value, const char* unit) {
  return value.has_value() ? fmt::format("{} {}", *value, unit) : "-";
}

std::optional<double> RssPerStreamKb(const RunReport& report) {
  if (!report.server.rss_kb_before || !report.server.rss_kb_connected || report.complete == 0) return std::nullopt;
  return static_cast<double>(*report.server.rss_kb_connected - *report.server.rss_kb_before) / report.complete;
}

std::optional<double> Difference(const std::optional<double>& from, const std::optional<double>& to) {
  if (!from || !to) return std::nullopt;
  return *to - *from;
}

// A number field of a flat JSON object such as `"received_unix_ms":1764662400123.456`;
// nullopt if absent or null.
std::optional<double> JsonNumberField(const std::string& object, const std::string& key) {
  const std::string needle = StrCat("\"", key, "\":");
  const size_t at = object.find(needle);
  if (at == std::string::npos) return std::nullopt;
  const size_t begin = at + needle.size();
  size_t end = begin;
  while (end < object.size() && (std::isdigit(static_cast<unsigned char>(object[end])) ||
                                 std::string_view("+-.eE").find(object[end]) != std::string_view::npos)) {
    ++end;
  }
  double value = 0;
  if (end == begin || !absl::SimpleAtod(object.substr(begin, end - begin), &value)) return std::nullopt;
  return value;
}

std::string JsonOptionalArray(const std::vector<std::optional<int64_t>>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i == 0 ? "" : ", ") + JsonOptional(values[i]);
  return out + "]";
}

std::string JsonStringArray(const std::vector<std::string>& values, bool quote) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i == 0 ? "" : ", ") + (quote ? JsonString(values[i]) : values[i]);
  return out + "]";
}

std::string ReplicaPids(const ServerUsage& server) {
  std::string out;
  for (int pid : server.replica_pids) out += (out.empty() ? "" : ", ") + std::to_string(pid);
  return out;
}

std::string Ms(const std::optional<double>& value) { return value ? fmt::format("{:.2f} ms", *value) : "-"; }

std::string ReplicaPushJson(const ReplicaPush& p) {
  return fmt::format(
      R"({{"replica": {}, "found": {}, "received_ms": {}, "first_write_ms": {}, "last_write_ms": {}, "proxies": {}, )"
      R"("proxies_written": {}, "proxies_acked": {}}})",
      p.replica, p.found, JsonOptional(p.received_ms), JsonOptional(p.first_write_ms), JsonOptional(p.last_write_ms),
      p.proxies, p.proxies_written, p.proxies_acked);
}

}  // namespace

std::vector<std::vector<ReplicaPush>> MatchReplicaPushes(const std::vector<std::string>& summaries,
                                                         const std::vector<double>& commit_unix_ms, int replicas) {
  std::vector<std::vector<ReplicaPush>> pushes(commit_unix_ms.size(), std::vector<ReplicaPush>(replicas));
  for (std::vector<ReplicaPush>& change : pushes) {
    for (int r = 0; r < replicas; ++r) change[r].replica = r;
  }
  for (const std::string& summary : summaries) {
    const std::optional<double> replica = JsonNumberField(summary, "replica");
    const std::optional<double> received = JsonNumberField(summary, "received_unix_ms");
    if (!replica || !received || *replica < 0 || *replica >= replicas) continue;
    // The last commit at or before the replica received it (commits are in time order).
    const auto after = std::upper_bound(commit_unix_ms.begin(), commit_unix_ms.end(), *received);
    if (after == commit_unix_ms.begin()) continue;  // before the first change: the initial load
    const size_t k = static_cast<size_t>(after - commit_unix_ms.begin()) - 1;
    const double commit = commit_unix_ms[k];
    const auto since_commit = [&](const char* key) -> std::optional<double> {
      const std::optional<double> at = JsonNumberField(summary, key);
      return at ? std::optional<double>(*at - commit) : std::nullopt;
    };
    ReplicaPush candidate{
        .replica = static_cast<int>(*replica),
        .found = true,
        .received_ms = *received - commit,
        .first_write_ms = since_commit("first_sent_unix_ms"),
        .last_write_ms = since_commit("last_written_unix_ms"),
        .proxies = static_cast<int64_t>(JsonNumberField(summary, "proxies").value_or(0)),
        .proxies_written = static_cast<int64_t>(JsonNumberField(summary, "proxies_written").value_or(0)),
        .proxies_acked = static_cast<int64_t>(JsonNumberField(summary, "proxies_acked").value_or(0))};
    ReplicaPush& held = pushes[k][candidate.replica];
    const bool wrote = candidate.proxies_written > 0;
    const bool held_wrote = held.proxies_written > 0;
    if (!held.found || (wrote && !held_wrote) ||
        (wrote == held_wrote && *candidate.received_ms < held.received_ms.value_or(0))) {
      held = candidate;
    }
  }
  return pushes;
}

Distribution Summarize(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  auto rank = [&](double p) {
    const size_t index = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
    return values[std::clamp<size_t>(index, 1, values.size()) - 1];
  };
  d.count = static_cast<int64_t>(values.size());
  d.p50 = rank(0.50);
  d.p90 = rank(0.90);
  d.p99 = rank(0.99);
  d.max = values.back();
  return d;
}

std::string RenderTable(const RunReport& r) {
  std::string out;
  out += fmt::format("cxds-load  {} {} {} drive={} expect={}  streams={} connections={} cores={}\n", r.xds_address,
                     r.protocol, r.node_style, r.drive, r.expect, r.streams, r.connections, r.cores);
  out += fmt::format("  machine load average (1 min) start={} end={}\n",
                     r.loadavg_start ? fmt::format("{:.2f}", *r.loadavg_start) : "-",
                     r.loadavg_end ? fmt::format("{:.2f}", *r.loadavg_end) : "-");
  out += fmt::format("  streams started={} responded={} complete={} failed={}\n", r.started, r.responded, r.complete,
                     r.failed);
  out += fmt::format("  {:<34} {}\n", "time to connect all (ms)",
                     r.connect_all_ms ? fmt::format("{:.2f}", *r.connect_all_ms) : "- (not all complete)");
  out += Row("first complete configuration (ms)", r.first_config_ms);
  for (const ChangeReport& change : r.changes) {
    out += Row(fmt::format("change {} ({}) converged {}/{}", change.change, change.marker, change.converged, r.streams),
               change.latency_ms);
    for (const ReplicaPush& p : change.replicas) {
      if (!p.found) {
        out += fmt::format("    replica {}: no change summary after the commit\n", p.replica);
        continue;
      }
      out += fmt::format(
          "    replica {}: etcd commit -> received {}, first write {}, last write {} (proxies {}, written {}, acked "
          "{})\n",
          p.replica, Ms(p.received_ms), Ms(p.first_write_ms), Ms(p.last_write_ms), p.proxies, p.proxies_written,
          p.proxies_acked);
    }
  }
  if (r.last_receipt_ms) {
    out += fmt::format("  {:<34} {:.2f} (unix ms {})\n", "last receipt (ms since start)", *r.last_receipt_ms,
                       *r.last_receipt_unix_ms);
  }
  out += fmt::format("  {:<6} {:>10} {:>14} {:>10} {:>10} {:>6}\n", "type", "responses", "bytes", "resources", "acks",
                     "nacks");
  for (const TypeTotals& t : r.types) {
    if (t.responses == 0 && t.acks == 0) continue;
    out += fmt::format("  {:<6} {:>10} {:>14} {:>10} {:>10} {:>6}\n", t.name, t.responses, t.bytes, t.resources, t.acks,
                       t.nacks);
  }
  out += fmt::format("  nacks={} errors={}\n", r.nacks, r.errors);
  for (const std::string& error : r.first_errors) out += fmt::format("    error: {}\n", error);
  out += fmt::format("  client cpu user={:.2f}s system={:.2f}s max_rss={} KiB wall={:.2f}s\n", r.client_cpu_user_s,
                     r.client_cpu_system_s, r.client_max_rss_kb, r.wall_s);
  if (r.server.pid != 0) {
    const std::optional<double> per_stream = RssPerStreamKb(r);
    out += fmt::format("  server pid={} rss before={} connected={} end={} per_stream={}\n", r.server.pid,
                       Optional(r.server.rss_kb_before, "KiB"), Optional(r.server.rss_kb_connected, "KiB"),
                       Optional(r.server.rss_kb_end, "KiB"), per_stream ? fmt::format("{:.1f} KiB", *per_stream) : "-");
    for (const auto& [change, kb] : r.server.rss_kb_by_change) {
      out += fmt::format("  server rss after change {}: {} KiB\n", change, kb);
    }
    const auto connect_cpu = Difference(r.server.cpu_s_before, r.server.cpu_s_connected);
    const auto change_cpu = Difference(r.server.cpu_s_connected, r.server.cpu_s_end);
    out += fmt::format("  server cpu connect={} changes={}\n", connect_cpu ? fmt::format("{:.2f}s", *connect_cpu) : "-",
                       change_cpu ? fmt::format("{:.2f}s", *change_cpu) : "-");
  }
  if (r.replica_addresses.size() > 1 || r.server.replica_pids.size() > 1) {
    for (size_t i = 0; i < r.server.replica_pids.size(); ++i) {
      out += fmt::format(
          "  replica {} {} pid={} rss connected={} end={}\n", i,
          i < r.replica_addresses.size() ? r.replica_addresses[i] : std::string("-"), r.server.replica_pids[i],
          i < r.server.replica_rss_kb_connected.size() ? Optional(r.server.replica_rss_kb_connected[i], "KiB") : "-",
          i < r.server.replica_rss_kb_end.size() ? Optional(r.server.replica_rss_kb_end[i], "KiB") : "-");
    }
  }
  for (const std::string& source : r.replica_sources) out += fmt::format("  config source: {}\n", source);
  for (const std::string& line : r.server_reports) out += fmt::format("  server: {}\n", line);
  if (r.serializations.has_value()) {
    out += fmt::format("  serializations during the changes: {} by the server{} for {} resource versions received\n",
                       r.serializations->server_serializations,
                       r.replica_addresses.size() > 1
                           ? fmt::format(" (summed over {} replicas: one each per version)", r.replica_addresses.size())
                           : "",
                       r.serializations->resource_versions);
  }
  if (r.reconnect.has_value()) {
    const ReconnectReport& c = *r.reconnect;
    out += fmt::format(
        "  restart: server ready again in {:.0f} ms; {} of {} streams reconnected{}; in the {:.0f} ms after: "
        "{} responses ({} bytes), {} resources ({} bytes)\n",
        c.restart_ms, c.reconnected.value_or(0), c.streams,
        c.reconnect_ms ? fmt::format(" in {:.0f} ms", *c.reconnect_ms) : std::string(), c.settle_ms, c.responses,
        c.bytes, c.resources, c.resource_bytes);
  }
  if (r.failover.has_value()) {
    const FailoverReport& f = *r.failover;
    out += fmt::format(
        "  failover: replica {} killed; its {} streams ended in {} and re-attached to {} survivors in {} "
        "({} counted)\n",
        f.replica, f.streams, Ms(f.detach_ms), f.survivors, Ms(f.reattach_ms),
        f.reattached ? std::to_string(*f.reattached) : std::string("-"));
    out += fmt::format(
        "  failover: in the {:.0f} ms after, the moved streams got {} responses ({} bytes), {} resources ({} bytes); "
        "the others got {} responses\n",
        f.settle_ms, f.responses, f.bytes, f.resources, f.resource_bytes, f.other_responses);
  }
  out += r.ok ? "  RESULT ok\n" : "  RESULT incomplete\n";
  for (const std::string& problem : r.problems) out += fmt::format("    {}\n", problem);
  return out;
}

std::string RssByChangeJson(const ServerUsage& server) {
  std::string out;
  for (const auto& [change, kb] : server.rss_kb_by_change) {
    out += fmt::format("{}{{\"change\": {}, \"rss_kb\": {}}}", out.empty() ? "" : ", ", change, kb);
  }
  return out;
}

std::string RenderJson(const RunReport& r) {
  std::string out = "{\n";
  out += fmt::format("  \"tool\": \"cxds-load\",\n  \"xds_address\": {},\n  \"protocol\": {},\n",
                     JsonString(r.xds_address), JsonString(r.protocol));
  out += fmt::format("  \"node_style\": {},\n  \"expect\": {},\n  \"drive\": {},\n", JsonString(r.node_style),
                     JsonString(r.expect), JsonString(r.drive));
  out += fmt::format("  \"cores\": {},\n  \"loadavg_start\": {},\n  \"loadavg_end\": {},\n", r.cores,
                     JsonOptional(r.loadavg_start), JsonOptional(r.loadavg_end));
  out += fmt::format("  \"streams\": {},\n  \"connections\": {},\n", r.streams, r.connections);
  out += fmt::format(
      "  \"streams_started\": {},\n  \"streams_responded\": {},\n  \"streams_complete\": {},\n  \"streams_failed\": "
      "{},\n",
      r.started, r.responded, r.complete, r.failed);
  out += fmt::format("  \"connect_all_ms\": {},\n", JsonOptional(r.connect_all_ms));
  out += fmt::format("  \"first_config_ms\": {},\n", JsonDistribution(r.first_config_ms));
  out += fmt::format("  \"changes_requested\": {},\n  \"changes\": [", r.changes_requested);
  for (size_t i = 0; i < r.changes.size(); ++i) {
    const ChangeReport& c = r.changes[i];
    std::string replicas;
    if (!c.replicas.empty()) {
      // etcd_to_push_ms: commit -> each replica's first write of the change (null: unknown).
      std::string first_writes;
      std::string details;
      for (const ReplicaPush& p : c.replicas) {
        first_writes += (first_writes.empty() ? "" : ", ") + JsonOptional(p.first_write_ms);
        details += (details.empty() ? "" : ", ") + ReplicaPushJson(p);
      }
      replicas = fmt::format(", \"etcd_to_push_ms\": [{}], \"replica_pushes\": [{}]", first_writes, details);
    }
    out += fmt::format(
        "{}\n    {{\"change\": {}, \"marker\": {}, \"made_at_ms\": {}, \"made_at_unix_ms\": {}, \"converged\": {}, "
        "\"latency_ms\": {}{}}}",
        i == 0 ? "" : ",", c.change, JsonString(c.marker), JsonNumber(c.made_at_ms), JsonNumber(c.made_at_unix_ms),
        c.converged, JsonDistribution(c.latency_ms), replicas);
  }
  out += r.changes.empty() ? "],\n" : "\n  ],\n";
  out += fmt::format("  \"last_receipt_ms\": {},\n  \"last_receipt_unix_ms\": {},\n", JsonOptional(r.last_receipt_ms),
                     JsonOptional(r.last_receipt_unix_ms));
  out += "  \"types\": {";
  for (size_t i = 0; i < r.types.size(); ++i) {
    const TypeTotals& t = r.types[i];
    out +=
        fmt::format("{}\n    {}: {{\"responses\": {}, \"bytes\": {}, \"resources\": {}, \"acks\": {}, \"nacks\": {}}}",
                    i == 0 ? "" : ",", JsonString(t.name), t.responses, t.bytes, t.resources, t.acks, t.nacks);
  }
  out += "\n  },\n";
  out += fmt::format("  \"nacks\": {},\n  \"errors\": {},\n  \"first_errors\": [", r.nacks, r.errors);
  for (size_t i = 0; i < r.first_errors.size(); ++i) out += (i == 0 ? "" : ", ") + JsonString(r.first_errors[i]);
  out += "],\n";
  out += fmt::format("  \"client\": {{\"cpu_user_s\": {}, \"cpu_system_s\": {}, \"cpu_s\": {}, \"max_rss_kb\": {}}},\n",
                     JsonNumber(r.client_cpu_user_s), JsonNumber(r.client_cpu_system_s),
                     JsonNumber(r.client_cpu_user_s + r.client_cpu_system_s), r.client_max_rss_kb);
  out += fmt::format(
      "  \"server\": {{\"pid\": {}, \"rss_kb_before\": {}, \"rss_kb_connected\": {}, \"rss_kb_end\": {}, "
      "\"rss_per_stream_kb\": {}, \"cpu_s_connect\": {}, \"cpu_s_changes\": {}, \"rss_kb_by_change\": [{}]}},\n",
      r.server.pid, JsonOptional(r.server.rss_kb_before), JsonOptional(r.server.rss_kb_connected),
      JsonOptional(r.server.rss_kb_end), JsonOptional(RssPerStreamKb(r)),
      JsonOptional(Difference(r.server.cpu_s_before, r.server.cpu_s_connected)),
      JsonOptional(Difference(r.server.cpu_s_connected, r.server.cpu_s_end)), RssByChangeJson(r.server));
  // Every server process (--drive etcd: every replica; "server" above is the first).
  out += fmt::format(
      "  \"replicas\": {},\n  \"replica_xds_addresses\": {},\n  \"replica_pids\": [{}],\n  \"replica_rss_kib\": {},\n"
      "  \"replica_rss_kib_connected\": {},\n  \"replica_config_sources\": {},\n",
      std::max(r.replica_addresses.size(), r.server.replica_pids.size()), JsonStringArray(r.replica_addresses, true),
      ReplicaPids(r.server), JsonOptionalArray(r.server.replica_rss_kb_end),
      JsonOptionalArray(r.server.replica_rss_kb_connected), JsonStringArray(r.replica_sources, false));
  out += "  \"server_reports\": [";
  for (size_t i = 0; i < r.server_reports.size(); ++i) out += (i == 0 ? "" : ", ") + r.server_reports[i];
  out += "],\n";
  if (r.serializations.has_value()) {
    out += fmt::format("  \"serializations\": {{\"server_serializations\": {}, \"resource_versions\": {}}},\n",
                       r.serializations->server_serializations, r.serializations->resource_versions);
  }
  if (r.reconnect.has_value()) {
    const ReconnectReport& c = *r.reconnect;
    out += fmt::format(
        "  \"reconnect\": {{\"streams\": {}, \"reconnected\": {}, \"restart_ms\": {}, \"reconnect_ms\": {}, "
        "\"settle_ms\": {}, \"responses\": {}, \"response_bytes\": {}, \"resources\": {}, \"resource_bytes\": {}, "
        "\"failed\": {}, "
        "\"errors\": {}}},\n",
        c.streams, JsonOptional(c.reconnected), JsonNumber(c.restart_ms), JsonOptional(c.reconnect_ms),
        JsonNumber(c.settle_ms), c.responses, c.bytes, c.resources, c.resource_bytes, c.failed, c.errors);
  }
  if (r.failover.has_value()) {
    const FailoverReport& f = *r.failover;
    out += fmt::format(
        "  \"failover\": {{\"replica\": {}, \"survivors\": {}, \"streams\": {}, \"detach_ms\": {}, "
        "\"reattach_ms\": {}, \"reattached\": {}, \"settle_ms\": {}, \"responses\": {}, \"response_bytes\": {}, "
        "\"resources\": {}, \"resource_bytes\": {}, \"failed\": {}, \"errors\": {}, \"other_responses\": {}}},\n",
        f.replica, f.survivors, f.streams, JsonOptional(f.detach_ms), JsonOptional(f.reattach_ms),
        JsonOptional(f.reattached), JsonNumber(f.settle_ms), f.responses, f.bytes, f.resources, f.resource_bytes,
        f.failed, f.errors, f.other_responses);
  }
  out += fmt::format("  \"wall_s\": {},\n  \"ok\": {},\n  \"problems\": [", JsonNumber(r.wall_s), r.ok);
  for (size_t i = 0; i < r.problems.size(); ++i) out += (i == 0 ? "" : ", ") + JsonString(r.problems[i]);
  out += "]\n}\n";
  return out;
}

}  // namespace cxds::load
