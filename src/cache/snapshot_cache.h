// SnapshotCache: the embedder sets one Snapshot per node key; every stream watching that key is
// told when it changes. The library's equivalent of go-control-plane's SnapshotCache, with
// these differences on purpose (docs/protocol-rules.md, "SnapshotCache"):
//  - SetSnapshot can refuse an inconsistent snapshot (ConsistencyPolicy), returning why;
//  - watches are per stream and survive ClearSnapshot, so the next SetSnapshot still reaches
//    connected streams (E61);
//  - the cache never sends: it notifies, outside its lock, and each stream decides what to send
//    from what it has already sent (so there is no NACK loop, no ADS superset check and no
//    channel a slow stream can block);
//  - locking is per cache but short: no serialization or I/O happens under the lock.
//
// Threading: every method is thread-safe. Change callbacks run on the thread that called
// SetSnapshot/ClearSnapshot, after the cache lock is released.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cache/config_watcher.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace cxds {

// Maps a node to the key its snapshot is stored under. Nodes mapped to one key share a
// snapshot (a node group). Implementations must be thread-safe.
class NodeHash {
 public:
  virtual ~NodeHash() = default;
  virtual std::string Key(const envoy::config::core::v3::Node& node) const = 0;
};

// The default: the key is node.id.
class IdHash final : public NodeHash {
 public:
  std::string Key(const envoy::config::core::v3::Node& node) const override { return node.id(); }
};

enum class ConsistencyPolicy {
  kNone,        // store whatever is given
  kConsistent,  // refuse snapshots that fail Snapshot::Consistent()
  kStrict,      // refuse snapshots that fail Snapshot::ConsistentStrict()
};

struct NodeStatus {
  envoy::config::core::v3::Node node;  // as sent on the most recent stream's first request
  int open_watches = 0;                // streams currently watching this key
  std::optional<absl::Time> last_request_time;
  bool has_snapshot = false;
};

class SnapshotCache final : public ConfigWatcher {
 public:
  struct Options {
    ConsistencyPolicy consistency = ConsistencyPolicy::kConsistent;
    std::shared_ptr<const NodeHash> node_hash;  // defaults to IdHash
    Clock* clock = nullptr;                     // defaults to RealClock()
    // When true, SetSnapshot keeps, from the node's current snapshot, every type whose
    // resources did not change (Snapshot::KeepUnchangedTypes), so a snapshot versioned as a
    // whole resends SotW clients only the types that changed. Off by default: then every type
    // carries the version it was given, as in go-control-plane.
    bool keep_unchanged_types = false;
  };

  SnapshotCache();
  explicit SnapshotCache(Options options);
  ~SnapshotCache() override;
  SnapshotCache(const SnapshotCache&) = delete;
  SnapshotCache& operator=(const SnapshotCache&) = delete;

  // Stores `snapshot` under `node_key` (with Options::keep_unchanged_types, merged with the
  // current one) and notifies the streams watching it. Returns
  // FailedPrecondition (and keeps the previous snapshot) if the policy refuses it, or
  // InvalidArgument for a null snapshot.
  absl::Status SetSnapshot(const std::string& node_key, SnapshotPtr snapshot);
  // The current snapshot of `node_key`, or NotFound.
  absl::StatusOr<SnapshotPtr> GetSnapshot(const std::string& node_key) const;
  // Removes the snapshot of `node_key`. Streams keep their watches (they are served again by
  // the next SetSnapshot) and keep what they already received: nothing is sent to them.
  void ClearSnapshot(const std::string& node_key);

  // Status of one node key, or nullopt if the cache has no snapshot and no watch for it (a
  // key whose last watch closed without a snapshot is forgotten).
  std::optional<NodeStatus> GetStatus(const std::string& node_key) const;
  // Every node key with a snapshot or a watch.
  std::vector<std::string> StatusKeys() const;

  std::unique_ptr<Watch> CreateWatch(const envoy::config::core::v3::Node& node,
                                     absl::AnyInvocable<void(const ConfigChange&)> on_change) override;

 private:
  class WatchImpl;
  struct WatchCallback;  // shared between the cache and one WatchImpl
  struct NodeEntry {
    SnapshotPtr snapshot;
    NodeStatus status;
    std::map<uint64_t, std::shared_ptr<WatchCallback>> watches;
  };

  void Notify(std::vector<std::shared_ptr<WatchCallback>> callbacks, const ConfigChange& change);
  void RemoveWatch(const std::string& key, uint64_t id);
  void RecordRequest(const std::string& key);
  SnapshotPtr Current(const std::string& key) const;

  const Options options_;
  Clock& clock_;
  mutable Mutex mu_;
  std::map<std::string, NodeEntry> nodes_ ABSL_GUARDED_BY(mu_);
  uint64_t next_watch_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace cxds
