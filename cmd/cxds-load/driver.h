// ChangeDriver: who makes the changes whose convergence cxds-load measures, and how each change
// shows in the responses, so a proxy recognises it by content, never by timing.
//
//   none      nothing changes; the run measures connection and first configuration only.
//   teaching  starts `cxds demo` and writes `port <20000+k>` to its standard input for change
//             k; change k is the ClusterLoadAssignment whose endpoint has that port.
//   fanout    starts cxds-fanout (the raw baseline) and writes `push`; change k is the
//             response whose version is `push-k`.
//   files     (not implemented yet; left for when `cxds serve` lands) would rewrite the endpoint
//             file of a `cxds serve --config-dir DIR` directory (write a temporary file, then
//             rename it over the old one) and recognise change k by the same endpoint port as
//             `teaching`; it needs only Start (find the daemon), AddMarker and MakeChange.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
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
  // The control plane's process, for RSS and CPU; 0 if not known.
  virtual int server_pid() const = 0;
  // JSON objects the control plane printed about its own work (cxds-fanout: send times),
  // waiting up to `wait` for `expected` of them.
  virtual std::vector<std::string> ServerReports(int expected, absl::Duration wait) { return {}; }
  // Stops what Start started.
  virtual void Stop() {}
};

// The driver `options.drive` names, or Unimplemented (files) / InvalidArgument.
absl::StatusOr<std::unique_ptr<ChangeDriver>> MakeDriver(const LoadOptions& options);

}  // namespace cxds::load
