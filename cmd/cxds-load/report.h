// The result of a cxds-load run, as a readable table and as JSON.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "load_options.h"
#include "proxy_model.h"

namespace cxds::load {

// Nearest-rank percentiles of a set of durations in milliseconds.
struct Distribution {
  int64_t count = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
};
Distribution Summarize(std::vector<double> values_ms);

struct TypeTotals {
  std::string name;
  uint64_t responses = 0;
  uint64_t bytes = 0;
  uint64_t resources = 0;
  uint64_t acks = 0;
  uint64_t nacks = 0;
};

struct ChangeReport {
  int change = 0;
  std::string marker;          // how the change is recognised
  double made_at_ms = 0;       // since the run started
  double made_at_unix_ms = 0;  // the same on the wall clock, to set against server reports
  int converged = 0;           // streams that acknowledged (raw: received) it
  Distribution latency_ms;     // change made -> ACK (raw: receipt), over the streams that converged
};

struct ServerUsage {
  int pid = 0;
  std::optional<int64_t> rss_kb_before;     // before the streams connect
  std::optional<int64_t> rss_kb_connected;  // once they all have their first configuration
  std::optional<int64_t> rss_kb_end;        // after the changes
  std::optional<double> cpu_s_before;
  std::optional<double> cpu_s_connected;
  std::optional<double> cpu_s_end;
  // --rss-every-changes N: the server's RSS once change k (every N-th) converged, as (k, KiB).
  std::vector<std::pair<int, int64_t>> rss_kb_by_change;
};

// --restart: what the restarted server sent the same proxies reconnecting.
struct ReconnectReport {
  int streams = 0;
  std::optional<int> reconnected;      // streams the new server reported connected
  double restart_ms = 0;               // old server stopped -> new one ready
  std::optional<double> reconnect_ms;  // streams restarted -> the server saw them all
  double settle_ms = 0;                // counted for this long after that
  uint64_t responses = 0;
  uint64_t resources = 0;
  uint64_t bytes = 0;           // serialized responses
  uint64_t resource_bytes = 0;  // of which resources (an empty response has none)
  int failed = 0;
  uint64_t errors = 0;
};

// During the changes: resources the server serialized, against the distinct resource versions
// (type, name, version) the Delta streams received. 1 per version: serialized once, shared.
struct SerializationReport {
  uint64_t server_serializations = 0;
  uint64_t resource_versions = 0;
};

struct RunReport {
  std::string xds_address;
  std::string protocol;
  std::string node_style;
  std::string expect;
  std::string drive;
  int cores = 0;
  // 1-minute load average when the run started and ended: other work on the machine shows.
  std::optional<double> loadavg_start;
  std::optional<double> loadavg_end;
  int streams = 0;
  int connections = 0;
  int started = 0;
  int responded = 0;
  int complete = 0;
  int failed = 0;
  std::optional<double> connect_all_ms;  // first stream started -> last first configuration
  Distribution first_config_ms;          // per stream: started -> ACK completing it
  std::vector<ChangeReport> changes;
  int changes_requested = 0;
  // The last response any stream received (raw mode compares it with cxds-fanout's
  // first_write_unix_ms when the pushes are not made by cxds-load).
  std::optional<double> last_receipt_ms;  // since the run started
  std::optional<int64_t> last_receipt_unix_ms;
  std::vector<TypeTotals> types;  // CDS, EDS, LDS, RDS, other
  uint64_t nacks = 0;
  uint64_t errors = 0;
  std::vector<std::string> first_errors;
  double client_cpu_user_s = 0;
  double client_cpu_system_s = 0;
  int64_t client_max_rss_kb = 0;
  ServerUsage server;
  std::vector<std::string> server_reports;  // JSON objects printed by the server
  std::optional<ReconnectReport> reconnect;
  std::optional<SerializationReport> serializations;
  double wall_s = 0;
  bool ok = false;
  std::vector<std::string> problems;  // why ok is false
};

std::string RenderTable(const RunReport& report);
std::string RenderJson(const RunReport& report);

}  // namespace cxds::load
