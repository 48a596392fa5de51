#include "pipeline/view_interner.h"

#include <algorithm>

#include "protocol/resource.h"

namespace cxds {

namespace {

void AppendVersionBytes(std::string& bytes, std::string_view name, const Resource& resource) {
  bytes += name;
  bytes += '\0';
  bytes += resource.content_version();
  bytes += '\n';
}

// Calls fn(name, resource) for `base` with `patch` applied, in name order, building nothing.
template <typename Fn>
void ForEachPatched(const std::map<std::string, ResourcePtr>& base, const ViewInterner::Patch& patch, Fn fn) {
  auto b = base.begin();
  auto p = patch.begin();
  while (b != base.end() || p != patch.end()) {
    if (p == patch.end() || (b != base.end() && b->first < p->first)) {
      fn(b->first, b->second);
      ++b;
      continue;
    }
    if (b != base.end() && b->first == p->first) ++b;  // replaced or removed
    if (p->second != nullptr) fn(p->first, p->second);
    ++p;
  }
}

}  // namespace

const std::map<std::string, ResourcePtr>& NoViewItems() {
  static const auto* const kEmpty = new std::map<std::string, ResourcePtr>();
  return *kEmpty;
}

std::string ViewVersion(const std::map<std::string, ResourcePtr>& items) {
  std::string bytes;
  for (const auto& [name, resource] : items) AppendVersionBytes(bytes, name, *resource);
  return ContentHash(bytes).substr(0, 16);
}

template <typename Equal>
Snapshot::TypeResourcesPtr ViewInterner::Find(const Key& key, Equal equal) {
  Snapshot::TypeResourcesPtr existing;
  {
    MutexLock lock(&mu_);
    auto it = table_.find(key);
    if (it == table_.end()) return nullptr;
    existing = it->second.lock();
  }
  // The version is a truncated hash: a hit is checked whole, outside the lock.
  if (existing == nullptr || !equal(existing->items)) return nullptr;
  MutexLock lock(&mu_);
  stats_.shared++;
  return existing;
}

Snapshot::TypeResourcesPtr ViewInterner::Insert(Key key, std::map<std::string, ResourcePtr> items) {
  auto view = std::make_shared<Snapshot::TypeResources>();
  view->version = key.second;
  view->items = std::move(items);
  // Versions are per resource here: SotW sends a client only what it lacks (an endpoint change
  // sends that one ClusterLoadAssignment).
  view->version_covers_all = false;
  MutexLock lock(&mu_);
  table_[std::move(key)] = view;
  stats_.created++;
  if (table_.size() >= sweep_at_) SweepLocked();
  return view;
}

Snapshot::TypeResourcesPtr ViewInterner::Intern(const std::string& type_url, std::map<std::string, ResourcePtr> items) {
  Key key{type_url, ViewVersion(items)};
  const auto same = [&](const std::map<std::string, ResourcePtr>& existing) {
    return existing.size() == items.size() &&
           std::equal(existing.begin(), existing.end(), items.begin(), [](const auto& x, const auto& y) {
             return x.first == y.first &&
                    (x.second == y.second || x.second->content_version() == y.second->content_version());
           });
  };
  if (Snapshot::TypeResourcesPtr existing = Find(key, same)) return existing;
  return Insert(std::move(key), std::move(items));
}

Snapshot::TypeResourcesPtr ViewInterner::InternPatched(const std::string& type_url,
                                                       const Snapshot::TypeResourcesPtr& base, const Patch& patch) {
  std::string memo_key = type_url;
  memo_key += '\n';
  memo_key += std::to_string(reinterpret_cast<uintptr_t>(base.get()));
  memo_key += '\n';
  for (const auto& [name, resource] : patch) {
    memo_key += name;
    memo_key += '\0';
    // A removal is marked by a byte no content version (a hex digest) holds.
    if (resource != nullptr) {
      memo_key += resource->content_version();
    } else {
      memo_key += '\x01';
    }
    memo_key += '\n';
  }
  {
    MutexLock lock(&mu_);
    auto it = patches_.find(memo_key);
    if (it != patches_.end()) {
      Snapshot::TypeResourcesPtr result = it->second.result.lock();
      if (result != nullptr && it->second.base.lock() == base) {
        stats_.shared++;
        stats_.patches_memoized++;
        return result;
      }
    }
  }
  Snapshot::TypeResourcesPtr result = InternPatchedUncached(type_url, base, patch);
  MutexLock lock(&mu_);
  patches_[std::move(memo_key)] = PatchResult{base, result};
  if (patches_.size() >= patches_sweep_at_) SweepPatchesLocked();
  return result;
}

Snapshot::TypeResourcesPtr ViewInterner::InternPatchedUncached(const std::string& type_url,
                                                               const Snapshot::TypeResourcesPtr& base,
                                                               const Patch& patch) {
  const std::map<std::string, ResourcePtr>& base_items = base != nullptr ? base->items : NoViewItems();
  std::string bytes;
  size_t count = 0;
  ForEachPatched(base_items, patch, [&](const std::string& name, const ResourcePtr& resource) {
    AppendVersionBytes(bytes, name, *resource);
    ++count;
  });
  Key key{type_url, ContentHash(bytes).substr(0, 16)};
  const auto same = [&](const std::map<std::string, ResourcePtr>& existing) {
    if (existing.size() != count) return false;
    auto it = existing.begin();
    bool equal = true;
    ForEachPatched(base_items, patch, [&](const std::string& name, const ResourcePtr& resource) {
      equal = equal && it->first == name &&
              (it->second == resource || it->second->content_version() == resource->content_version());
      ++it;
    });
    return equal;
  };
  if (Snapshot::TypeResourcesPtr existing = Find(key, same)) return existing;
  std::map<std::string, ResourcePtr> items = base_items;
  for (const auto& [name, resource] : patch) {
    if (resource != nullptr) {
      items[name] = resource;
    } else {
      items.erase(name);
    }
  }
  return Insert(std::move(key), std::move(items));
}

void ViewInterner::SweepLocked() {
  absl::erase_if(table_, [](const auto& entry) { return entry.second.expired(); });
  sweep_at_ = std::max<size_t>(64, 2 * table_.size());  // amortized: each sweep halves or more
}

void ViewInterner::SweepPatchesLocked() {
  // An entry is worth keeping while its base is alive: only a proxy still holding the base can
  // be given the patch.
  absl::erase_if(patches_,
                 [](const auto& entry) { return entry.second.base.expired() || entry.second.result.expired(); });
  patches_sweep_at_ = std::max<size_t>(64, 2 * patches_.size());
}

ViewInterner::Stats ViewInterner::stats() const {
  MutexLock lock(&mu_);
  Stats stats = stats_;
  stats.entries = table_.size();
  stats.patch_entries = patches_.size();
  return stats;
}

}  // namespace cxds
