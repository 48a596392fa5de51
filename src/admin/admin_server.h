// The admin HTTP server of `cxds serve` (cpp-httplib), on a loopback address:
//
//   /                          the web status page (admin/status_page.h): proxies, last changes
//                              as timelines, convergence histogram, a proxy's config on click;
//                              served without the bearer token (it holds no data)
//   /healthz                   200 while the process runs
//   /ready                     200 once the first full load is translated, else 503
//   /metrics                   Prometheus text (istiod's metric names where they mean the same),
//                              and cxds_resource_serializations (read when scraped)
//   /debug/syncz               per stream and type: version and nonce sent (with time), version
//                              ACKed (with time), last NACK and its error
//   /debug/proxy_status        per proxy stream: CDS, LDS, EDS, RDS each SYNCED, NOT SENT, STALE
//                              (with age) or NACK (with the error), as `cxds proxy-status` shows
//   /debug/config_dump?proxy=ID  what that proxy is served now, as JSON
//   /debug/proxy_config?proxy=ID  what cxds last sent that proxy (the ledger), per type with
//                              its state, as `cxds proxy-config` shows
//   /debug/proxy_diff?proxy=ID  per type, what that proxy was last sent against what it would be
//                              sent now, with a diff per changed resource (`cxds proxy-status ID`)
//   /debug/push_status         the last pushes: version, full or not, reasons, configs,
//                              proxies pushed, durations
//   /debug/config_status       input files (etcd: keys): objects accepted, errors
//                              ?proxy=ID: what that proxy is not given, and why (gRPC nodes)
//   /debug/config_source       the config source: connected or not, revision applied (also
//                              as X-Cxds-Config-Revision/-Source-Connected on the two above)
//   /debug/changes             recent change ids; /debug/changes/ID: that change's stages
//                              for every proxy it reached
//   /debug/change_summaries    recent changes, one summary each: proxies sent to, written,
//                              ACKed, NACKed; first write, last write done, last answer
//
// Connections are handled by HttpListener (admin/http_listener.h): bounded threads,
// connections, request size and read/write timeouts (AdminLimits, with their defaults), an
// exclusively bound port; httplib only parses requests and routes them. Every source read by a
// page is thread-safe. Untrusted strings in pages (node ids, NACK errors, file names) are JSON
// quoted (control characters escaped, invalid UTF-8 replaced); a request's own text is echoed
// cut to kMaxEchoBytes.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "admin/http_listener.h"
#include "common/heap_release.h"
#include "config/config_source.h"
#include "config/config_store.h"
#include "metrics/metrics.h"
#include "model/mesh_model.h"
#include "pipeline/convergence_tracker.h"
#include "pipeline/push_pipeline.h"
#include "server/ack_ledger.h"

namespace cxds {

class AdminRouter;  // httplib's request parsing and routing (admin_server.cc)

struct AdminSources {
  MetricsRegistry* metrics = nullptr;
  const AckLedger* ledger = nullptr;
  PushPipeline* pipeline = nullptr;
  const ConfigStore* store = nullptr;  // null: /debug/config_status lists nothing
  const ConvergenceTracker* tracker = nullptr;
  std::function<bool()> ready;  // empty: always ready
  // Non-empty: every request except /healthz and /ready must carry "Authorization: Bearer
  // TOKEN" (401 otherwise). Required to listen on an address that is not loopback.
  std::string bearer_token;
  // Runs at each /metrics scrape before rendering, for gauges read then (e.g. certificate expiry).
  std::function<void(MetricsRegistry&)> on_scrape;
  // Where the config comes from (may be null): its connection and revision are shown by
  // /debug/config_source, as headers of /debug/syncz and /debug/config_status, and as metrics.
  const ConfigSource* source = nullptr;
  // Gives freed heap back to the system (may be null): its trims are exported as metrics.
  const HeapReleaser* heap_releaser = nullptr;
  // Who may be sent Secrets (TranslationOptions::secret_readers), for /debug/config_status.
  std::vector<std::string> secret_readers = {};
  // Who proxies are by the registry (may be null: by their nodes alone), for /debug/config_status.
  const MeshModel* model = nullptr;
};

// `text` as a JSON string literal that is valid JSON whatever the bytes (node ids, NACK errors
// and file names are untrusted): control characters escaped, and each byte that is not part of
// well-formed UTF-8 replaced by U+FFFD (RFC 8259 requires UTF-8).
std::string AdminJsonQuote(std::string_view text);

// One line of JSON for a change's summary (see ChangeSummary). Times are Unix milliseconds, so
// a load tool can set them against its own clock; `send_ms` is the first write started to the
// last write completed, `push_ms` the change made to the last write completed.
std::string ChangeSummaryJson(const ChangeSummary& summary);

// The bearer token in the file at `path`, surrounding whitespace removed; "" for an empty path.
// An unreadable, empty or oversized (over 4 KiB) file is an error naming it.
absl::StatusOr<std::string> ReadBearerToken(const std::string& path);

class AdminServer {
 public:
  // Longest part of a request (a proxy id, a change id) quoted back in an error page.
  static constexpr size_t kMaxEchoBytes = 256;

  explicit AdminServer(AdminSources sources, AdminLimits limits = {});
  ~AdminServer();  // stops serving
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Binds `host:port` exclusively (port 0 picks one) and serves on background threads. A busy
  // port is an error naming host:port; so is a host that is not loopback (127.0.0.0/8, ::1,
  // localhost) without a bearer token: configuration pages are never served unauthenticated
  // off loopback.
  absl::Status Start(const std::string& host, int port);
  // The same for "host:port"; InvalidArgument if it is not of that form.
  absl::Status Start(const std::string& address);
  int port() const { return listener_.port(); }
  // Closes every connection and joins the threads; returns promptly at any time, also right
  // after Start.
  void Stop();

  const HttpListener& listener() const { return listener_; }

 private:
  void Routes();

  AdminSources sources_;
  std::unique_ptr<AdminRouter> router_;
  HttpListener listener_;
};

}  // namespace cxds
