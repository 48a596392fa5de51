// The xDS gRPC server: Aggregated Discovery Service and the per-type Cluster, Listener, Route,
// Endpoint and Secret discovery services (State of the World), on gRPC's callback API, serving
// whatever a ConfigWatcher (e.g. a SnapshotCache) provides.
//
// Usage:
//   cxds::SnapshotCache cache;
//   cxds::XdsServer xds(cache, {});
//   grpc::ServerBuilder builder;
//   builder.AddListeningPort("127.0.0.1:18000", grpc::InsecureServerCredentials());
//   xds.RegisterServices(builder);
//   auto server = builder.BuildAndStart();
//
// Threading: streams run on gRPC's callback threads and on the threads that change the
// configuration (see SotwStream). The XdsServer must outlive the grpc::Server it is registered
// on (shut the grpc::Server down first). Accessors are thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "cache/config_watcher.h"
#include "common/clock.h"
#include "grpcpp/server_builder.h"
#include "server/ack_ledger.h"
#include "server/callbacks.h"

namespace cxds {

class XdsServer {
 public:
  struct Options {
    std::string control_plane_id = "cxds";  // DiscoveryResponse.control_plane.identifier
    ServerCallbacks* callbacks = nullptr;   // not owned; must outlive the server
    Clock* clock = nullptr;                 // defaults to RealClock()
  };

  XdsServer(ConfigWatcher& watcher, Options options);
  ~XdsServer();
  XdsServer(const XdsServer&) = delete;
  XdsServer& operator=(const XdsServer&) = delete;

  // Registers every discovery service on `builder`.
  void RegisterServices(grpc::ServerBuilder& builder);

  // What each open stream was sent and what it ACKed or NACKed.
  const AckLedger& ledger() const;
  int64_t open_streams() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cxds
