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

// --drive etcd: one replica's own account of a change (a summary of /debug/change_summaries),
// set against the change's commit stamp, taken just before the etcd commit (one machine: one
// wall clock).
struct ReplicaPush {
  int replica = 0;
  bool found = false;                    // the replica has a summary of this change
  std::optional<double> received_ms;     // commit -> the replica took the change in
  std::optional<double> first_write_ms;  // commit -> its first response carrying it written
  std::optional<double> last_write_ms;   // commit -> the last of them written
  int64_t proxies = 0;                   // the replica's proxies the change concerned
  int64_t proxies_written = 0;
  int64_t proxies_acked = 0;
};

// Change k of a replica is its summary first received at or after commit k and before commit
// k+1 (changes are made one at a time, each after the previous converged), preferring one that
// wrote to some proxy. `summaries`: objects with a "replica" field (ChangeDriver::ServerReports);
// `commit_unix_ms[k-1]`: the stamp of change k. Returns [k-1][replica].
std::vector<std::vector<ReplicaPush>> MatchReplicaPushes(const std::vector<std::string>& summaries,
                                                         const std::vector<double>& commit_unix_ms, int replicas);

struct ChangeReport {
  int change = 0;
  std::string marker;                 // how the change is recognised
  double made_at_ms = 0;              // since the run started
  double made_at_unix_ms = 0;         // the same on the wall clock, to set against server reports
  int converged = 0;                  // streams that acknowledged (raw: received) it
  Distribution latency_ms;            // change made -> ACK (raw: receipt), over the streams that converged
  std::vector<ReplicaPush> replicas;  // --drive etcd: per replica
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
  // --drive etcd: every replica (the fields above are of the first), in replica order.
  std::vector<int> replica_pids;
  std::vector<std::optional<int64_t>> replica_rss_kb_connected;
  std::vector<std::optional<int64_t>> replica_rss_kb_end;
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

// --failover: a replica was SIGKILLed after the changes and its proxies reconnected to the
// survivors (round robin) with the resource versions they hold.
struct FailoverReport {
  int replica = 0;  // the one killed
  int survivors = 0;
  int streams = 0;                    // its streams, moved
  std::optional<double> detach_ms;    // SIGKILL -> every one of them saw its call end
  std::optional<double> reattach_ms;  // SIGKILL -> the survivors count every stream connected
  std::optional<int> reattached;      // of the moved streams, counted by the survivors
  double settle_ms = 0;               // counted for this long after re-attaching
  // What the moved streams received after reconnecting (goal: nothing).
  uint64_t responses = 0;
  uint64_t resources = 0;
  uint64_t bytes = 0;
  uint64_t resource_bytes = 0;
  int failed = 0;
  uint64_t errors = 0;
  uint64_t other_responses = 0;  // received meanwhile by the streams that stayed (goal: none)
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
  std::optional<FailoverReport> failover;
  std::optional<SerializationReport> serializations;
  // --drive etcd: the replicas' xDS addresses, and each one's /debug/config_source at the end
  // of the changes (JSON objects).
  std::vector<std::string> replica_addresses;
  std::vector<std::string> replica_sources;
  double wall_s = 0;
  bool ok = false;
  std::vector<std::string> problems;  // why ok is false
};

std::string RenderTable(const RunReport& report);
std::string RenderJson(const RunReport& report);

}  // namespace cxds::load
