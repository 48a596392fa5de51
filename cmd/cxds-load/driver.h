// ChangeDriver: who makes the changes whose convergence cxds-load measures, and how each change
// shows in the responses, so a proxy recognises it by content, never by timing.
//
//   none      nothing changes; the run measures connection and first configuration only.
//   teaching  starts `cxds demo` and writes `port <20000+k>` to its standard input for change
//             k; change k is the ClusterLoadAssignment whose endpoint has that port.
//   fanout    starts cxds-fanout (the raw baseline) and writes `push`; change k is the
//             response whose version is `push-k`.
//   files     adds a file to the config directory of `cxds serve --config-dir DIR` (started
//             by the driver) with a ServiceEntry and its WorkloadEntry, and for change k
//             rewrites it (temporary file, then rename) with the endpoint port 20000+k; change
//             k is recognised by that port, as for `teaching`. It can also restart the server
//             (Restart) and count its connected streams (ServerStreams).
//   etcd      writes the same two documents to etcd (one key each, PREFIX/KIND/NAMESPACE/NAME,
//             in one transaction per change) and starts N replicas of `cxds serve
//             --config-source etcd://ADDR/PREFIX`; the streams are spread over them
//             (StreamAddresses), and one can be killed (KillReplica) to measure a failover.
//             The etcd itself is the caller's: the drive neither starts nor stops it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/strings.h"
#include "load_options.h"
#include "proxy_stream.h"

namespace cxds::load {

class ChangeDriver {
 public:
  virtual ~ChangeDriver() = default;
  virtual std::string name() const = 0;
  // Gets the control plane ready (e.g. starts it and waits until it serves). Runs before any
  // gRPC channel exists, so it may fork.
  virtual absl::Status Start() = 0;
  // Node id every stream must use, if the control plane serves only one (cxds demo).
  virtual std::string SharedNodeId() const { return ""; }
  // Adds how change k (1-based) shows in a response.
  virtual void AddMarker(int k, ChangeMarkers* markers) const = 0;
  // Makes change k. The caller stamps the time just before the call.
  virtual absl::Status MakeChange(int k) = 0;
  // The control plane's process, for RSS and CPU; 0 if not known. With replicas, the first.
  virtual int server_pid() const = 0;
  // Every process of the control plane (replicas), in replica order; empty if not known.
  virtual std::vector<int> server_pids() const {
    const int pid = server_pid();
    return pid > 0 ? std::vector<int>{pid} : std::vector<int>{};
  }
  // The xDS addresses the streams are spread over, round robin (stream j: [j % size]). Empty:
  // --xds-address alone.
  virtual std::vector<std::string> StreamAddresses() const { return {}; }
  // JSON objects the control plane printed about its own work (cxds-fanout: send times),
  // waiting up to `wait` for `expected` of them. With replicas, each object's first field is
  // "replica" (its index).
  virtual std::vector<std::string> ServerReports(int expected, absl::Duration wait) { return {}; }
  // Stops the control plane and starts it again on the same configuration; returns once it
  // serves. Every stream loses its call then.
  virtual absl::Status Restart() { return absl::UnimplementedError(StrCat("--drive ", name(), " cannot restart")); }
  // Resources the control plane has serialized so far (a process-wide count), if it says.
  virtual std::optional<uint64_t> ServerSerializations() { return std::nullopt; }
  // Streams the control plane says are connected, if it says.
  virtual std::optional<int> ServerStreams() { return std::nullopt; }
  // The same for one replica (the index into StreamAddresses).
  virtual std::optional<int> ReplicaStreams(int replica) { return replica == 0 ? ServerStreams() : std::nullopt; }
  // What each replica says about its config source (/debug/config_source), one JSON object
  // each, in replica order; empty if the drive has none.
  virtual std::vector<std::string> ReplicaSources() { return {}; }
  // SIGKILLs one replica (a crash: no goodbye to its streams) and reaps it.
  virtual absl::Status KillReplica(int replica) {
    return absl::UnimplementedError(StrCat("--drive ", name(), " cannot kill a replica"));
  }
  // Stops what Start started.
  virtual void Stop() {}
};

// The driver `options.drive` names, or InvalidArgument.
absl::StatusOr<std::unique_ptr<ChangeDriver>> MakeDriver(const LoadOptions& options);
// --drive etcd (etcd_driver.cc).
absl::StatusOr<std::unique_ptr<ChangeDriver>> MakeEtcdDriver(const LoadOptions& options);

}  // namespace cxds::load
