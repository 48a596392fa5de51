#include "cache/linear_cache.h"

#include <algorithm>
#include <utility>

#include "common/logging.h"
#include "common/strings.h"

namespace cxds {

// The callback of one watch. Its own mutex makes cancellation synchronous (the WatchImpl
// destructor takes it to clear `on_change`, so it waits for a running callback) and runs the
// callbacks of one watch one at a time.
struct LinearCache::WatchCallback {
  Mutex mu;
  absl::AnyInvocable<void(const ConfigChange&)> on_change ABSL_GUARDED_BY(mu);
};

// What the cache knows of one watch. Guarded by the cache's mu_.
struct LinearCache::WatchEntry {
  enum class Interest { kUndeclared, kWildcard, kNamed };

  std::shared_ptr<WatchCallback> callback;
  std::string node_id;
  Interest interest = Interest::kUndeclared;
  absl::flat_hash_set<std::string> names;  // when kNamed
  uint64_t round = 0;                      // the last notification round that picked it
};

class LinearCache::WatchImpl final : public ConfigWatcher::Watch {
 public:
  WatchImpl(LinearCache* cache, uint64_t id, std::shared_ptr<WatchCallback> callback)
      : cache_(cache), id_(id), callback_(std::move(callback)) {}

  ~WatchImpl() override {
    {
      MutexLock lock(&callback_->mu);
      callback_->on_change = nullptr;
    }
    cache_->RemoveWatch(id_);
  }

  SnapshotPtr Current() override { return cache_->Current(); }
  void RecordRequest() override { cache_->RecordRequest(id_); }
  void SetInterest(const std::string& type_url, bool wildcard, const absl::flat_hash_set<std::string>& names) override {
    if (type_url == cache_->type_url_) cache_->SetInterest(id_, wildcard, names);
  }

 private:
  LinearCache* const cache_;
  const uint64_t id_;
  const std::shared_ptr<WatchCallback> callback_;
};

LinearCache::LinearCache(std::string type_url) : LinearCache(std::move(type_url), Options{}) {}

LinearCache::LinearCache(std::string type_url, Options options)
    : type_url_(std::move(type_url)),
      version_prefix_(std::move(options.version_prefix)),
      clock_(options.clock != nullptr ? *options.clock : RealClock()) {}

LinearCache::~LinearCache() = default;

absl::Status LinearCache::UpdateResource(ResourcePtr resource) {
  std::vector<ResourcePtr> upserts;
  upserts.push_back(std::move(resource));
  return UpdateResources(std::move(upserts), {});
}

absl::Status LinearCache::DeleteResource(const std::string& name) { return UpdateResources({}, {name}); }

absl::Status LinearCache::UpdateResources(std::vector<ResourcePtr> upserts, std::vector<std::string> deletes) {
  return Apply(std::move(upserts), std::move(deletes), /*replace_all=*/false);
}

absl::Status LinearCache::SetResources(std::vector<ResourcePtr> resources) {
  return Apply(std::move(resources), {}, /*replace_all=*/true);
}

absl::Status LinearCache::Validate(const std::vector<ResourcePtr>& upserts,
                                   const std::vector<std::string>& deletes) const {
  absl::flat_hash_set<std::string> names;
  names.reserve(upserts.size());
  for (const ResourcePtr& resource : upserts) {
    if (resource == nullptr) {
      return absl::InvalidArgumentError(StrCat("null resource for the LinearCache of ", type_url_));
    }
    if (resource->type_url() != type_url_) {
      return absl::InvalidArgumentError(StrCat("resource \"", resource->name(), "\" has type ", resource->type_url(),
                                               " but this LinearCache holds ", type_url_));
    }
    if (!names.insert(resource->name()).second) {
      return absl::InvalidArgumentError(StrCat("resource \"", resource->name(), "\" given twice"));
    }
  }
  for (const std::string& name : deletes) {
    if (names.contains(name)) {
      return absl::InvalidArgumentError(StrCat("resource \"", name, "\" both updated and deleted"));
    }
  }
  return absl::OkStatus();
}

absl::Status LinearCache::Apply(std::vector<ResourcePtr> upserts, std::vector<std::string> deletes, bool replace_all) {
  if (absl::Status valid = Validate(upserts, deletes); !valid.ok()) {
    return valid;
  }
  // Sorted before taking the lock (the merge below needs it, and it is O(m log m)).
  if (replace_all) {
    std::sort(upserts.begin(), upserts.end(),
              [](const ResourcePtr& a, const ResourcePtr& b) { return a->name() < b->name(); });
  }
  std::vector<std::string> changed;
  std::vector<std::shared_ptr<WatchCallback>> to_notify;
  bool first = false;
  {
    MutexLock lock(&mu_);
    auto store = [&](std::map<std::string, ResourcePtr>::iterator at, ResourcePtr& resource) {
      // Equal content is not a change: keep the stored object.
      if (at->second->content_version() != resource->content_version()) {
        at->second = std::move(resource);
        changed.push_back(at->first);
      }
    };
    if (replace_all) {
      // One merge pass over two name-ordered sequences.
      auto stored = resources_.begin();
      for (ResourcePtr& resource : upserts) {
        while (stored != resources_.end() && stored->first < resource->name()) {
          changed.push_back(stored->first);  // removed
          stored = resources_.erase(stored);
        }
        if (stored != resources_.end() && stored->first == resource->name()) {
          store(stored, resource);
          ++stored;
        } else {
          changed.push_back(resource->name());  // added
          resources_.emplace_hint(stored, resource->name(), std::move(resource));
        }
      }
      while (stored != resources_.end()) {
        changed.push_back(stored->first);  // removed
        stored = resources_.erase(stored);
      }
    } else {
      for (ResourcePtr& resource : upserts) {
        auto [at, added] = resources_.try_emplace(resource->name(), resource);
        if (added) {
          changed.push_back(at->first);
        } else {
          store(at, resource);
        }
      }
      for (const std::string& name : deletes) {
        if (resources_.erase(name) > 0) changed.push_back(name);
      }
      std::sort(changed.begin(), changed.end());
    }
    first = !published_;
    if (changed.empty() && !first) {
      return absl::OkStatus();
    }
    published_ = true;
    ++changes_;
    snapshot_ = nullptr;
    to_notify = CollectLocked(changed, /*everything=*/first);
  }
  if (!to_notify.empty()) {
    ConfigChange change;
    if (first) {
      change = ConfigChange::Everything();
    } else {
      change.types[type_url_] = std::make_shared<const std::vector<std::string>>(std::move(changed));
    }
    change.change_id = NewChangeId();
    Notify(to_notify, change);
  }
  return absl::OkStatus();
}

std::vector<std::shared_ptr<LinearCache::WatchCallback>> LinearCache::CollectLocked(
    const std::vector<std::string>& changed, bool everything) {
  std::vector<std::shared_ptr<WatchCallback>> callbacks;
  if (everything) {
    callbacks.reserve(watches_.size());
    for (const auto& [id, entry] : watches_) callbacks.push_back(entry->callback);
    return callbacks;
  }
  // A watch may want several changed names: the round stamp picks it once.
  const uint64_t round = ++notify_round_;
  auto pick = [&callbacks, round](WatchEntry* entry) {
    if (entry->round != round) {
      entry->round = round;
      callbacks.push_back(entry->callback);
    }
  };
  for (WatchEntry* entry : undeclared_) pick(entry);
  for (WatchEntry* entry : wildcard_) pick(entry);
  for (const std::string& name : changed) {
    auto wanting = by_name_.find(name);
    if (wanting == by_name_.end()) continue;
    for (WatchEntry* entry : wanting->second) pick(entry);
  }
  return callbacks;
}

void LinearCache::Notify(const std::vector<std::shared_ptr<WatchCallback>>& callbacks, const ConfigChange& change) {
  for (const auto& callback : callbacks) {
    MutexLock lock(&callback->mu);
    if (callback->on_change) {
      callback->on_change(change);
      notifications_delivered_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

ResourcePtr LinearCache::Get(const std::string& name) const {
  MutexLock lock(&mu_);
  auto it = resources_.find(name);
  return it == resources_.end() ? nullptr : it->second;
}

size_t LinearCache::size() const {
  MutexLock lock(&mu_);
  return resources_.size();
}

std::string LinearCache::version() const {
  MutexLock lock(&mu_);
  return VersionLocked();
}

std::string LinearCache::VersionLocked() const { return StrCat(version_prefix_, changes_); }

std::optional<NodeStatus> LinearCache::GetStatus(const std::string& node_id) const {
  MutexLock lock(&mu_);
  auto it = status_.find(node_id);
  if (it == status_.end()) {
    return std::nullopt;
  }
  NodeStatus status = it->second;
  status.has_snapshot = published_;
  return status;
}

size_t LinearCache::num_watches() const {
  MutexLock lock(&mu_);
  return watches_.size();
}

size_t LinearCache::num_wildcard_watches() const {
  MutexLock lock(&mu_);
  return wildcard_.size();
}

size_t LinearCache::num_watches_for(const std::string& name) const {
  MutexLock lock(&mu_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? 0 : it->second.size();
}

uint64_t LinearCache::snapshots_built() const {
  MutexLock lock(&mu_);
  return snapshots_built_;
}

std::unique_ptr<ConfigWatcher::Watch> LinearCache::CreateWatch(
    const envoy::config::core::v3::Node& node, absl::AnyInvocable<void(const ConfigChange&)> on_change) {
  auto callback = std::make_shared<WatchCallback>();
  {
    MutexLock lock(&callback->mu);
    callback->on_change = std::move(on_change);
  }
  auto entry = std::make_unique<WatchEntry>();
  entry->callback = callback;
  entry->node_id = node.id();
  uint64_t id;
  {
    MutexLock lock(&mu_);
    id = next_watch_id_++;
    undeclared_.insert(entry.get());
    NodeStatus& status = status_[node.id()];
    status.node = node;
    status.open_watches++;
    watches_.emplace(id, std::move(entry));
  }
  return std::make_unique<WatchImpl>(this, id, std::move(callback));
}

void LinearCache::RemoveWatch(uint64_t id) {
  MutexLock lock(&mu_);
  auto it = watches_.find(id);
  if (it == watches_.end()) {
    return;
  }
  WatchEntry* entry = it->second.get();
  undeclared_.erase(entry);
  wildcard_.erase(entry);
  for (const std::string& name : entry->names) {
    auto wanting = by_name_.find(name);
    wanting->second.erase(entry);
    if (wanting->second.empty()) by_name_.erase(wanting);
  }
  auto status = status_.find(entry->node_id);
  if (status != status_.end() && --status->second.open_watches <= 0) {
    status_.erase(status);
  }
  watches_.erase(it);
}

void LinearCache::RecordRequest(uint64_t id) {
  const absl::Time now = clock_.Now();
  MutexLock lock(&mu_);
  auto it = watches_.find(id);
  if (it == watches_.end()) {
    return;
  }
  auto status = status_.find(it->second->node_id);
  if (status != status_.end()) {
    status->second.last_request_time = now;
  }
}

void LinearCache::SetInterest(uint64_t id, bool wildcard, const absl::flat_hash_set<std::string>& names) {
  MutexLock lock(&mu_);
  auto it = watches_.find(id);
  if (it == watches_.end()) {
    return;
  }
  WatchEntry* entry = it->second.get();
  auto unindex = [this, entry](const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto wanting = by_name_.find(name);
    wanting->second.erase(entry);
    if (wanting->second.empty()) by_name_.erase(wanting);
  };
  if (entry->interest == WatchEntry::Interest::kUndeclared) undeclared_.erase(entry);
  if (entry->interest == WatchEntry::Interest::kWildcard) wildcard_.erase(entry);
  if (wildcard) {
    for (const std::string& name : entry->names) unindex(name);
    entry->names.clear();
    entry->interest = WatchEntry::Interest::kWildcard;
    wildcard_.insert(entry);
    return;
  }
  // Only the difference touches the index: O(old names + new names).
  for (const std::string& name : entry->names) {
    if (!names.contains(name)) unindex(name);
  }
  for (const std::string& name : names) {
    if (!entry->names.contains(name)) by_name_[name].insert(entry);
  }
  entry->names = names;
  entry->interest = WatchEntry::Interest::kNamed;
}

SnapshotPtr LinearCache::Current() {
  MutexLock lock(&mu_);
  if (!published_) {
    return nullptr;
  }
  if (snapshot_ == nullptr) {
    auto part = std::make_shared<Snapshot::TypeResources>();
    part->version = VersionLocked();
    part->items = resources_;
    part->version_covers_all = false;
    absl::StatusOr<SnapshotPtr> snapshot = Snapshot::FromTypes({{type_url_, std::move(part)}});
    if (!snapshot.ok()) {
      // Unreachable: the part is not null and its version is never empty.
      Log().error("LinearCache {}: cannot build a snapshot: {}", type_url_, snapshot.status().ToString());
      return nullptr;
    }
    snapshot_ = *std::move(snapshot);
    ++snapshots_built_;
  }
  return snapshot_;
}

}  // namespace cxds
