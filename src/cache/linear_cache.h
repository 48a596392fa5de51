// LinearCache: the resources of one type URL, shared by every node (no per-node snapshots) and
// versioned one by one. Meant for large shared sets such as EDS or SDS, combined with a
// SnapshotCache through MuxConfigWatcher. The library's counterpart of go-control-plane's
// LinearCache, with these differences on purpose (docs/protocol-rules.md, "LinearCache"):
//  - a resource's version is its content hash (Resource::content_version()) for SotW and delta
//    alike, and writing identical content is not a change: no version bump, no notification;
//  - the cache version ("prefix" + decimal counter, the TypeResources::version served) counts
//    real changes only, so identical mutation sequences give identical versions in every
//    process. A reused version cannot make a client miss content: the part is published with
//    `version_covers_all = false`, so streams compare resources, not versions;
//  - nothing is served before the first successful mutation (Current() is null, as for a node
//    without a snapshot), so a control plane that restarts does not tell reconnecting clients
//    that every resource is gone before it has loaded them. The first mutation publishes the
//    cache even if it changes no resource (SetResources({}) publishes an empty set); that
//    counts as a change and is notified to every watch as ConfigChange::Everything();
//  - the cache never sends and never blocks on a stream: it notifies, outside its lock, only the
//    watches whose declared interest (Watch::SetInterest) covers a changed name. Interest is
//    indexed by name, so a change of k names costs O(k + watches notified), not O(all watches).
//
// Threading: every method is thread-safe. Change callbacks run on the thread that made the
// change, after the cache lock is released, one at a time per watch. The snapshot Current()
// returns is built at most once per version, on the first Current() call after a change (an
// O(resources) copy of the name map, made under the cache lock). The cache must outlive its
// watches.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "cache/config_watcher.h"
#include "cache/snapshot_cache.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace cxds {

class LinearCache final : public ConfigWatcher {
 public:
  struct Options {
    // Prepended to the change counter to form the cache version. Give caches of one process
    // different prefixes if clients should tell their versions apart; it need not (and, for
    // stable versions across restarts, should not) change from one process to the next.
    std::string version_prefix;
    Clock* clock = nullptr;  // defaults to RealClock(); stamps NodeStatus::last_request_time
  };

  explicit LinearCache(std::string type_url);
  LinearCache(std::string type_url, Options options);
  ~LinearCache() override;
  LinearCache(const LinearCache&) = delete;
  LinearCache& operator=(const LinearCache&) = delete;

  // Stores `resource` under its name, replacing any resource of that name. InvalidArgument for
  // a null resource or one of another type URL (nothing is stored then).
  absl::Status UpdateResource(ResourcePtr resource);
  // Removes the resource named `name`; an unknown name changes nothing and is OK.
  absl::Status DeleteResource(const std::string& name);
  // Stores `upserts` and removes `deletes` as one change: one version bump and one round of
  // notifications at most. All or nothing: InvalidArgument (and nothing changes) for a null
  // resource, a resource of another type, a name upserted twice, or a name both upserted and
  // deleted. Deleting unknown names is fine.
  absl::Status UpdateResources(std::vector<ResourcePtr> upserts, std::vector<std::string> deletes);
  // Replaces every resource with `resources`: names not given are deleted. Same refusals as
  // UpdateResources (a duplicate name is InvalidArgument).
  absl::Status SetResources(std::vector<ResourcePtr> resources);

  // The resource named `name`, or nullptr.
  ResourcePtr Get(const std::string& name) const;
  // How many resources the cache holds.
  size_t size() const;
  // The current cache version: version_prefix + the number of changes so far.
  std::string version() const;
  const std::string& type_url() const { return type_url_; }

  // Status of the nodes with an open watch, by node.id (has_snapshot: the cache was written).
  // Nodes are forgotten when their last watch closes.
  std::optional<NodeStatus> GetStatus(const std::string& node_id) const;

  // Counters for tests and benchmarks.
  // Open watches.
  size_t num_watches() const;
  // Open watches whose interest in this type is a wildcard.
  size_t num_wildcard_watches() const;
  // Open watches that named `name` in their interest (wildcards excluded).
  size_t num_watches_for(const std::string& name) const;
  // Change callbacks run since the cache was created.
  uint64_t notifications_delivered() const { return notifications_delivered_.load(std::memory_order_relaxed); }
  // Snapshots Current() has built since the cache was created (at most one per version).
  uint64_t snapshots_built() const;

  // `node` is used for status only: every node sees the same resources. The watch is notified
  // of the first write, then of changes to the names its interest covers. Until it declares an
  // interest in this cache's type it is notified of every change.
  std::unique_ptr<Watch> CreateWatch(const envoy::config::core::v3::Node& node,
                                     absl::AnyInvocable<void(const ConfigChange&)> on_change) override;

 private:
  class WatchImpl;
  struct WatchCallback;  // shared between the cache and one WatchImpl
  struct WatchEntry;     // the cache's bookkeeping of one watch

  // Applies a validated batch. `replace_all`: names absent from `upserts` are deleted too.
  absl::Status Apply(std::vector<ResourcePtr> upserts, std::vector<std::string> deletes, bool replace_all);
  // Checks type URLs, nulls and duplicates of a batch.
  absl::Status Validate(const std::vector<ResourcePtr>& upserts, const std::vector<std::string>& deletes) const;
  // The callbacks of the watches to tell about `changed` (sorted names); all of them if
  // `everything`.
  std::vector<std::shared_ptr<WatchCallback>> CollectLocked(const std::vector<std::string>& changed, bool everything)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notify(const std::vector<std::shared_ptr<WatchCallback>>& callbacks, const ConfigChange& change);
  std::string VersionLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Called by WatchImpl.
  void RemoveWatch(uint64_t id);
  void RecordRequest(uint64_t id);
  void SetInterest(uint64_t id, bool wildcard, const absl::flat_hash_set<std::string>& names);
  SnapshotPtr Current();

  // Immutable after construction.
  const std::string type_url_;
  const std::string version_prefix_;
  Clock& clock_;

  mutable Mutex mu_;
  // Guarded by mu_.
  std::map<std::string, ResourcePtr> resources_ ABSL_GUARDED_BY(mu_);
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;  // the counter in the version
  bool published_ ABSL_GUARDED_BY(mu_) = false;
  SnapshotPtr snapshot_ ABSL_GUARDED_BY(mu_);  // of the current version, once built
  uint64_t snapshots_built_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_watch_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t notify_round_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, std::unique_ptr<WatchEntry>> watches_ ABSL_GUARDED_BY(mu_);
  // The interest index: a watch is in undeclared_, in wildcard_, or under each name it wants in
  // by_name_ (a watch that wants no name is in none of them).
  absl::flat_hash_set<WatchEntry*> undeclared_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<WatchEntry*> wildcard_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::flat_hash_set<WatchEntry*>> by_name_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, NodeStatus> status_ ABSL_GUARDED_BY(mu_);

  std::atomic<uint64_t> notifications_delivered_{0};
};

}  // namespace cxds
