// One simulated proxy: an ADS stream (SotW or Delta) on gRPC's callback API, so thousands of
// streams share gRPC's few threads. It ACKs every response the way a faithful proxy does,
// follows references (ProxyModel), and stamps the moments the run measures: the ACK that
// completes its first configuration and the ACK of each response carrying a change.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "common/mutex.h"
#include "envoy/config/core/v3/base.pb.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "grpcpp/support/status.h"
#include "load_options.h"
#include "proxy_model.h"

namespace cxds::load {

// Monotonic nanoseconds (steady clock): every stamp of a run is on this clock.
int64_t NowNanos();

// Counters of one type, summed over every stream.
struct TypeCounters {
  std::atomic<uint64_t> responses{0};
  std::atomic<uint64_t> bytes{0};           // serialized response size
  std::atomic<uint64_t> resources{0};       // resources carried
  std::atomic<uint64_t> resource_bytes{0};  // of those, their serialized size (no envelope)
  std::atomic<uint64_t> acks{0};
  std::atomic<uint64_t> nacks{0};
};

// Shared by every stream of a run; read by the progress line and the report.
struct RunStats {
  explicit RunStats(int changes) : converged(new std::atomic<int>[changes + 1]()) {}
  std::array<TypeCounters, kXdsTypeCount> types;
  TypeCounters other;  // responses of a type the proxy does not watch (raw mode: everything)
  std::atomic<int> started{0};
  std::atomic<int> responded{0};  // streams with at least one response
  std::atomic<int> complete{0};   // streams whose first configuration is complete
  std::atomic<int> failed{0};     // streams that ended before the run stopped them
  std::atomic<int> done{0};       // streams gRPC has finished with (OnDone)
  std::atomic<uint64_t> errors{0};
  std::unique_ptr<std::atomic<int>[]> converged;  // [k]: streams that acknowledged change k
  // While set (the change phase), Delta streams note every resource version they receive, so
  // the run can set the server's serializations against the versions that exist.
  std::atomic<bool> record_versions{false};
  Mutex versions_mu;
  std::set<std::string> versions_seen ABSL_GUARDED_BY(versions_mu);  // "type name version"
};

// What identifies change k in a response: an endpoint port (teaching drive) or a response
// version (raw fan-out). Fixed before the streams start, then read-only.
struct ChangeMarkers {
  absl::flat_hash_map<uint32_t, int> by_endpoint_port;
  absl::flat_hash_map<std::string, int> by_version;
};

struct StreamConfig {
  int index = 0;
  Protocol protocol = Protocol::kSotw;
  NodeStyle style = NodeStyle::kEnvoy;
  Expect expect = Expect::kXds;
  // Raw mode: answer every receipt with an ACK-shaped request (type, nonce; SotW: version), so
  // the baseline's server reads one request per push per stream, as an xDS server does.
  bool raw_ack = false;
  envoy::config::core::v3::Node node;
  std::vector<std::string> listeners;
  int changes = 0;
  const ChangeMarkers* markers = nullptr;
  RunStats* stats = nullptr;
};

// What one stream saw; read once it is done.
struct StreamResult {
  int64_t start_ns = 0;
  int64_t first_response_ns = 0;   // 0: never
  int64_t complete_ns = 0;         // ACK completing the first configuration (raw: first receipt)
  std::vector<int64_t> change_ns;  // [k]: ACK of the response carrying change k (raw: receipt)
  int64_t last_receipt_ns = 0;
  // Soak: the newest change ACKed (0: none), when, and the longest this stream waited, while
  // open, for a newer change (from its start to the first, then between them).
  int latest_change = 0;
  int64_t latest_change_ns = 0;
  int64_t max_update_gap_ns = 0;
  bool finished = false;  // gRPC called OnDone
  bool failed = false;    // ended before the run stopped it
  std::string error;      // first error seen
};

class ProxyStream {
 public:
  virtual ~ProxyStream() = default;
  // Starts the ADS call on `stub`'s channel. Call once.
  virtual void Start(envoy::service::discovery::v3::AggregatedDiscoveryService::Stub* stub) = 0;
  // Ends the stream (the run is over). Thread-safe; harmless once done.
  virtual void Stop() = 0;
  virtual StreamResult Result() const = 0;
  // Once this stream is done (its call ended, e.g. the server restarted): a new stream that
  // carries on as the same proxy reconnecting, with what this one subscribed to and holds.
  // Delta only: its first requests carry initial_resource_versions, so a server that has the
  // same resources sends none. Null for SotW.
  virtual std::unique_ptr<ProxyStream> Resume(StreamConfig config) const = 0;
  // The run expects the call to end now (server restart): its end is not a failure.
  virtual void ExpectEnd() = 0;
};

std::unique_ptr<ProxyStream> MakeProxyStream(StreamConfig config);

}  // namespace cxds::load
