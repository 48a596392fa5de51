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
      Slot& slot = entries_[key];
      if (slot.entry == nullptr) {
        slot.entry = std::make_shared<Entry>();
        slot.dependencies = dependencies;
        for (const ConfigKey& config : dependencies) dependents_[config].insert(key);
      }
      entry = slot.entry;
    }
  }
  if (entry == nullptr) return build();  // an old push: not stored
  MutexLock entry_lock(&entry->mu);      // concurrent callers for the key wait for one build
  if (entry->value != nullptr) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    return entry->value;
  }
  absl::StatusOr<ResourcePtr> built = build();
  if (!built.ok()) {
    MutexLock lock(&mu_);
    if (auto it = entries_.find(key); it != entries_.end() && it->second.entry == entry) DropLocked(key);
    return built.status();
  }
  entry->value = *built;
  MutexLock lock(&mu_);
  stats_.builds++;
  return entry->value;
}

void ResourceCache::DropLocked(const ResourceCacheKey& key) {
  auto slot = entries_.find(key);
  if (slot == entries_.end()) return;
  for (const ConfigKey& config : slot->second.dependencies) {
    auto it = dependents_.find(config);
    if (it == dependents_.end()) continue;
    it->second.erase(key);
    if (it->second.empty()) dependents_.erase(it);
  }
  entries_.erase(slot);
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
  dependents_.clear();
}

ResourceCache::Stats ResourceCache::stats() const {
  MutexLock lock(&mu_);
  Stats stats = stats_;
  stats.hits = hits_.load(std::memory_order_relaxed);
  stats.size = entries_.size();
  return stats;
}

}  // namespace cxds
