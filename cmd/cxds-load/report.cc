#include "report.h"

#include "common/strings.h"

#include <algorithm>
#include <cmath>

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

}  // namespace

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
  for (const std::string& line : r.server_reports) out += fmt::format("  server: {}\n", line);
  if (r.serializations.has_value()) {
    out += fmt::format("  serializations during the changes: {} by the server for {} resource versions received\n",
                       r.serializations->server_serializations, r.serializations->resource_versions);
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
    out += fmt::format(
        "{}\n    {{\"change\": {}, \"marker\": {}, \"made_at_ms\": {}, \"made_at_unix_ms\": {}, \"converged\": {}, "
        "\"latency_ms\": {}}}",
        i == 0 ? "" : ",", c.change, JsonString(c.marker), JsonNumber(c.made_at_ms), JsonNumber(c.made_at_unix_ms),
        c.converged, JsonDistribution(c.latency_ms));
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
  out += fmt::format("  \"wall_s\": {},\n  \"ok\": {},\n  \"problems\": [", JsonNumber(r.wall_s), r.ok);
  for (size_t i = 0; i < r.problems.size(); ++i) out += (i == 0 ? "" : ", ") + JsonString(r.problems[i]);
  out += "]\n}\n";
  return out;
}

}  // namespace cxds::load
