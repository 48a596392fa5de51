// The seam between the xDS server and a cache of configuration (SnapshotCache, LinearCache,
// MuxConfigWatcher). The server never learns how configuration is built: a stream asks for a
// watch on its node, reads the current snapshot whenever it is told something changed, and
// decides itself, from what it has already sent, what goes on the wire. (A control plane that
// generates per proxy, the push pipeline, is behind server/proxy_generator.h instead.)
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "cache/snapshot.h"
#include "envoy/config/core/v3/base.pb.h"
#include "protocol/type_url.h"

namespace cxds {

// The names of one type that changed, shared by every stream told about the change (so telling
// N streams copies no names); null means the type may have changed in any way.
using ChangedNames = std::shared_ptr<const std::vector<std::string>>;

// What changed in a node's configuration, per type URL: the names whose resource was added,
// modified or removed. A type mapped to null may have changed in any way (every name counts as
// changed); a type whose version changed while no resource did maps to an empty list.
// Streams use it to look only at what changed (delta pushes cost O(changed names)).
struct ConfigChange {
  TypeUrlMap<ChangedNames> types;
  bool everything = false;  // e.g. the first configuration, or one cleared
  // Identifies the change for convergence tracking (0: untracked), and when it was made.
  uint64_t change_id = 0;
  absl::Time change_time = absl::InfiniteFuture();

  static ConfigChange Everything() {
    ConfigChange change;
    change.everything = true;
    return change;
  }
};

// A process-wide unique change id (1, 2, ...). Thread-safe.
uint64_t NewChangeId();

// The names changed between two snapshots (either may be null).
ConfigChange DiffSnapshots(const Snapshot* before, const Snapshot* after);

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
    // What the stream subscribes to for one type, so a watcher can notify it only about names
    // it wants (LinearCache). Watchers that notify per node (SnapshotCache) ignore it.
    virtual void SetInterest(const std::string& type_url, bool wildcard,
                             const absl::flat_hash_set<std::string>& names) {}
  };

  virtual ~ConfigWatcher() = default;

  // Starts watching `node`'s configuration. `on_change` runs after every change with what
  // changed, on the thread
  // that made it, with no lock of the watcher held; it must be quick and must not destroy the
  // watch. Thread-safe.
  virtual std::unique_ptr<Watch> CreateWatch(const envoy::config::core::v3::Node& node,
                                             absl::AnyInvocable<void(const ConfigChange&)> on_change) = 0;
};

}  // namespace cxds
