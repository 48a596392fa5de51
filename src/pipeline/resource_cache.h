// ResourceCache: generated resources, serialized once per version and shared by every
// connection (istiod's XdsCache, with serialized bytes as the value).
//
// A generator asks GetOrBuild(key, dependencies, push_sequence, build): the first caller for a
// key builds (serializes) the resource, concurrent callers for the same key wait for it, and
// everyone after gets the same ResourcePtr. The key must name every input the resource
// depends on besides the configs listed as dependencies (e.g. the proxy variant: "envoy" or
// "grpc"), or proxies would see each other's resources.
//
// Invalidation: Clear(configs) drops every entry that depends on one of the configs,
// ClearAll() drops all. Both record the push sequence that cleared; a build for an older push
// (a generator still running on an old context) is returned to its caller but not stored, so
// it cannot bring back what a newer push invalidated (istiod's cache token).
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "common/mutex.h"
#include "protocol/resource.h"
#include "push/push_request.h"

namespace cxds {

struct ResourceCacheKey {
  std::string type_url;
  std::string name;
  std::string variant;  // every other input the resource depends on
  auto operator<=>(const ResourceCacheKey&) const = default;

  template <typename H>
  friend H AbslHashValue(H state, const ResourceCacheKey& key) {
    return H::combine(std::move(state), key.type_url, key.name, key.variant);
  }
};

class ResourceCache {
 public:
  struct Stats {
    uint64_t hits = 0;
    uint64_t builds = 0;         // resources built (each serialized once)
    uint64_t stale_builds = 0;   // built for an old push, not stored
    uint64_t invalidations = 0;  // entries dropped by Clear/ClearAll
    size_t size = 0;
  };

  absl::StatusOr<ResourcePtr> GetOrBuild(const ResourceCacheKey& key, const std::vector<ConfigKey>& dependencies,
                                         uint64_t push_sequence,
                                         absl::FunctionRef<absl::StatusOr<ResourcePtr>()> build);
  void Clear(const std::set<ConfigKey>& configs, uint64_t push_sequence);
  void ClearAll(uint64_t push_sequence);
  Stats stats() const;

 private:
  struct Entry {
    Mutex mu;
    ResourcePtr value ABSL_GUARDED_BY(mu);
  };
  void DropLocked(const ResourceCacheKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  struct Slot {
    std::shared_ptr<Entry> entry;
    std::vector<ConfigKey> dependencies;
  };

  mutable Mutex mu_;
  // Hashed: every proxy's push looks up each of its resources, and an ordered map's
  // comparisons would walk the type URL that all keys of a type share.
  absl::flat_hash_map<ResourceCacheKey, Slot> entries_ ABSL_GUARDED_BY(mu_);
  std::map<ConfigKey, std::set<ResourceCacheKey>> dependents_ ABSL_GUARDED_BY(mu_);
  uint64_t token_ ABSL_GUARDED_BY(mu_) = 0;  // the push sequence of the latest clear
  Stats stats_ ABSL_GUARDED_BY(mu_);         // all but hits
  // Counted without the lock: every proxy's push takes the hit path.
  std::atomic<uint64_t> hits_{0};
};

}  // namespace cxds
