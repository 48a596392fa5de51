// The seam between the xDS server and whatever produces configuration (the SnapshotCache, or
// later the push pipeline). The server never learns how configuration is built: a stream asks
// for a watch on its node, reads the current snapshot whenever it is told something changed,
// and decides itself, from what it has already sent, what goes on the wire.
#pragma once

#include <memory>

#include "absl/functional/any_invocable.h"
#include "cache/snapshot.h"
#include "envoy/config/core/v3/base.pb.h"

namespace cxds {

class ConfigWatcher {
 public:
  // One stream's interest in one node's configuration. Destroying it cancels the watch: once
  // the destructor returns, the change callback is not running and will not run again.
  class Watch {
   public:
    virtual ~Watch() = default;
    // The configuration to serve now, or nullptr while there is none for this node.
    virtual SnapshotPtr Current() = 0;
    // Records that the stream received a request (for per-node status).
    virtual void RecordRequest() = 0;
  };

  virtual ~ConfigWatcher() = default;

  // Starts watching `node`'s configuration. `on_change` runs after every change, on the thread
  // that made it, with no lock of the watcher held; it must be quick and must not destroy the
  // watch. Thread-safe.
  virtual std::unique_ptr<Watch> CreateWatch(const envoy::config::core::v3::Node& node,
                                             absl::AnyInvocable<void()> on_change) = 0;
};

}  // namespace cxds
