// The xDS gRPC server: Aggregated Discovery Service and the per-type Cluster, Listener, Route,
// Endpoint and Secret discovery services (State of the World), on gRPC's callback API, serving
// whatever a ConfigWatcher (e.g. a SnapshotCache) provides.
//
// Usage:
//   cxds::SnapshotCache cache;
//   cxds::XdsServer xds(cache, {});
//   absl::StatusOr<std::unique_ptr<grpc::Server>> server = xds.Start("127.0.0.1:18000");
// or, with a builder of one's own (RegisterServices applies the same server settings):
//   grpc::ServerBuilder builder;
//   builder.AddListeningPort("127.0.0.1:18000", grpc::InsecureServerCredentials());
//   xds.RegisterServices(builder);
//   auto server = builder.BuildAndStart();
//
// Bad clients: a stream whose response write does not complete within `send_timeout` is
// ended (DEADLINE_EXCEEDED) and its push slot freed, so pushes to other streams never wait on
// it; requests are checked against `limits` (server/limits.h); the port is bound exclusively.
//
// Threading: streams run on gRPC's callback threads and on the dispatcher's threads, which
// deliver configuration changes (see StreamCore and PushDispatcher). The XdsServer must outlive the grpc::Server it is
// registered on (shut the grpc::Server down first). Accessors are thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"

#include "cache/config_watcher.h"
#include "common/clock.h"
#include "common/scheduler.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "metrics/metrics.h"
#include "server/ack_ledger.h"
#include "server/authenticator.h"
#include "server/callbacks.h"
#include "server/limits.h"
#include "server/proxy_generator.h"
#include "server/push_dispatcher.h"

namespace cxds {

class XdsServer {
 public:
  struct Options {
    std::string control_plane_id = "cxds";  // DiscoveryResponse.control_plane.identifier
    ServerCallbacks* callbacks = nullptr;   // not owned; must outlive the server
    Clock* clock = nullptr;                 // defaults to RealClock()
    // Timers for heartbeats and delayed stream admission; the server makes a RealScheduler
    // if it needs one and none is given.
    Scheduler* scheduler = nullptr;
    // Every push to a stream goes through a PushDispatcher (PushQueue + throttle). Give the
    // pipeline's to share it; otherwise the server makes one with these settings.
    PushDispatcher* dispatcher = nullptr;
    int push_throttle = 0;  // connections pushing at once; 0: DefaultPushThrottle()
    int push_workers = 2;   // dispatcher threads; 0: pushes run on the changing thread
    // New streams admitted per second (istiod's PILOT_MAX_REQUESTS_PER_SECOND); 0: no limit.
    double max_new_streams_per_second = 0;
    MetricsRegistry* metrics = nullptr;  // may be null
    PushObserver* observer = nullptr;    // may be null; stage reports (sent, ACK, NACK)
    // Until true, new streams get UNAVAILABLE (the config is not loaded yet). Empty: ready.
    std::function<bool()> ready;
    // A response write that has not completed after this long (the client does not read)
    // ends the stream with DEADLINE_EXCEEDED and frees its push slot at once. Zero: never.
    // Timed on `scheduler` (the server makes a RealScheduler if none is given).
    absl::Duration send_timeout = absl::Seconds(20);
    // What a client may send; see server/limits.h for the defaults and why.
    StreamLimits limits;
    // Transport security for Start (server/tls_credentials.h: MakeTlsServerCredentials). Null:
    // plaintext. With RegisterServices the embedder adds its own listening port and credentials.
    std::shared_ptr<grpc::ServerCredentials> credentials;
    // Who each stream's client is and which node it may serve as (server/authenticator.h);
    // not owned, must outlive the server. Null: streams are not authenticated.
    const Authenticator* authenticator = nullptr;
  };

  // Serves what a cache holds (SnapshotCache, LinearCache, MuxConfigWatcher)...
  XdsServer(ConfigWatcher& watcher, Options options);
  // ... or what a generator makes per proxy (the push pipeline). Not owned; must outlive the
  // server.
  XdsServer(ProxyGenerator& generator, Options options);
  ~XdsServer();
  XdsServer(const XdsServer&) = delete;
  XdsServer& operator=(const XdsServer&) = delete;

  // Registers every discovery service on `builder` and sets what the server needs: the
  // receive limit (limits.max_request_bytes) and no port reuse (GRPC_ARG_ALLOW_REUSEPORT 0:
  // gRPC's default SO_REUSEPORT would let a second control plane bind the same port and the
  // kernel spread proxies over both).
  void RegisterServices(grpc::ServerBuilder& builder);

  // Builds and starts a gRPC server on `address` with these services, with
  // `options.credentials` (plaintext if none). A port that
  // cannot be bound (in use, or not local) is an error naming the address. `bound_port`, if
  // given, receives the port (useful with port 0).
  absl::StatusOr<std::unique_ptr<grpc::Server>> Start(const std::string& address, int* bound_port = nullptr);

  // What each open stream was sent and what it ACKed or NACKed.
  const AckLedger& ledger() const;
  int64_t open_streams() const;
  PushDispatcher& dispatcher();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cxds
