// Shares identical per-proxy views. Every proxy of a mesh that sees the same services is
// generated the same clusters and endpoints: the same names mapping to the same shared
// resources. Each proxy's view of a type is one immutable map (PushPipeline), so proxies whose
// maps are equal can hold one map between them: a view is interned by its content, and a proxy
// keeps its own map only where it differs. Measured on a 1,000-service mesh, the maps were
// ~260 KB of each proxy's memory before.
//
// Entries are weak: a view lives as long as a proxy (or a snapshot given to a stream) holds it;
// expired entries are swept as the table grows. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "cache/snapshot.h"
#include "common/mutex.h"

namespace cxds {

class ViewInterner {
 public:
  struct Stats {
    uint64_t shared = 0;            // views found already held by another proxy
    uint64_t created = 0;           // views made
    uint64_t patches_memoized = 0;  // InternPatched calls answered from the patch memo
    size_t patch_entries = 0;       // patch memo entries (live or expired, until swept)
    size_t entries = 0;             // table entries (live or expired, until swept)
  };

  // The view of `type_url` holding `items` (version from their names and content versions,
  // version_covers_all false): an existing equal one if any is alive, else a new one.
  Snapshot::TypeResourcesPtr Intern(const std::string& type_url, std::map<std::string, ResourcePtr> items);

  // Changes to a view: by name, sorted, unique; a null resource removes the name.
  using Patch = std::vector<std::pair<std::string, ResourcePtr>>;
  // The view `base` (may be null: empty) with `patch` applied. The result's version and its
  // equality with an interned view are worked out without building it, so a change that many
  // proxies see alike (an endpoint update) builds one new map, not one per proxy. Proxies that
  // hold the same base and are given the same patch are answered from a memo of recent
  // patches, in time proportional to the patch rather than the view (an endpoint change on a
  // 1,000-service mesh otherwise hashes every proxy's ~1,000 names).
  Snapshot::TypeResourcesPtr InternPatched(const std::string& type_url, const Snapshot::TypeResourcesPtr& base,
                                           const Patch& patch);
  Stats stats() const;

 private:
  using Key = std::pair<std::string, std::string>;  // type URL, view version
  // An interned view of `key` that `equal` accepts, or null.
  template <typename Equal>
  Snapshot::TypeResourcesPtr Find(const std::pair<std::string, std::string>& key, Equal equal);
  Snapshot::TypeResourcesPtr Insert(std::pair<std::string, std::string> key, std::map<std::string, ResourcePtr> items);
  Snapshot::TypeResourcesPtr InternPatchedUncached(const std::string& type_url, const Snapshot::TypeResourcesPtr& base,
                                                   const Patch& patch);
  void SweepLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SweepPatchesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // A patch applied before. The base is held weakly and compared on a hit: a key names the
  // base by address, and a freed view's address can be reused by another.
  struct PatchResult {
    std::weak_ptr<const Snapshot::TypeResources> base;
    std::weak_ptr<const Snapshot::TypeResources> result;
  };

  mutable Mutex mu_;
  absl::flat_hash_map<Key, std::weak_ptr<const Snapshot::TypeResources>> table_ ABSL_GUARDED_BY(mu_);
  size_t sweep_at_ ABSL_GUARDED_BY(mu_) = 64;  // sweep when the table reaches this size
  // By type URL, base address, and the patch's names and content versions.
  absl::flat_hash_map<std::string, PatchResult> patches_ ABSL_GUARDED_BY(mu_);
  size_t patches_sweep_at_ ABSL_GUARDED_BY(mu_) = 64;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

// A version derived from a type's content (names and content versions), so that equal views
// get equal versions in every process.
std::string ViewVersion(const std::map<std::string, ResourcePtr>& items);

// An empty view's items (a proxy that has no view of a type yet).
const std::map<std::string, ResourcePtr>& NoViewItems();

}  // namespace cxds
