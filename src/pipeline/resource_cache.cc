#include "pipeline/resource_cache.h"

namespace cxds {

absl::StatusOr<ResourcePtr> ResourceCache::GetOrBuild(const ResourceCacheKey& key,
                                                      const std::vector<ConfigKey>& dependencies,
                                                      uint64_t push_sequence,
                                                      absl::FunctionRef<absl::StatusOr<ResourcePtr>()> build) {
  std::shared_ptr<Entry> entry;
  {
    MutexLock lock(&mu_);
    if (push_sequence < token_) {
      stats_.stale_builds++;
      entry = nullptr;
    } else {
      std::shared_ptr<Entry>& slot = entries_[key];
      if (slot == nullptr) {
        slot = std::make_shared<Entry>();
        dependencies_[key] = dependencies;
        for (const ConfigKey& config : dependencies) dependents_[config].insert(key);
      }
      entry = slot;
    }
  }
  if (entry == nullptr) return build();  // an old push: not stored
  MutexLock entry_lock(&entry->mu);      // concurrent callers for the key wait for one build
  if (entry->value != nullptr) {
    MutexLock lock(&mu_);
    stats_.hits++;
    return entry->value;
  }
  absl::StatusOr<ResourcePtr> built = build();
  if (!built.ok()) {
    MutexLock lock(&mu_);
    if (auto it = entries_.find(key); it != entries_.end() && it->second == entry) DropLocked(key);
    return built.status();
  }
  entry->value = *built;
  MutexLock lock(&mu_);
  stats_.builds++;
  return entry->value;
}

void ResourceCache::DropLocked(const ResourceCacheKey& key) {
  entries_.erase(key);
  auto deps = dependencies_.find(key);
  if (deps == dependencies_.end()) return;
  for (const ConfigKey& config : deps->second) {
    auto it = dependents_.find(config);
    if (it == dependents_.end()) continue;
    it->second.erase(key);
    if (it->second.empty()) dependents_.erase(it);
  }
  dependencies_.erase(deps);
}

void ResourceCache::Clear(const std::set<ConfigKey>& configs, uint64_t push_sequence) {
  MutexLock lock(&mu_);
  token_ = std::max(token_, push_sequence);
  for (const ConfigKey& config : configs) {
    auto it = dependents_.find(config);
    if (it == dependents_.end()) continue;
    const std::set<ResourceCacheKey> keys = it->second;  // DropLocked edits the index
    for (const ResourceCacheKey& key : keys) {
      DropLocked(key);
      stats_.invalidations++;
    }
  }
}

void ResourceCache::ClearAll(uint64_t push_sequence) {
  MutexLock lock(&mu_);
  token_ = std::max(token_, push_sequence);
  stats_.invalidations += entries_.size();
  entries_.clear();
  dependencies_.clear();
  dependents_.clear();
}

ResourceCache::Stats ResourceCache::stats() const {
  MutexLock lock(&mu_);
  Stats stats = stats_;
  stats.size = entries_.size();
  return stats;
}

}  // namespace cxds
