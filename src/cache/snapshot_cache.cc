#include "cache/snapshot_cache.h"

#include <atomic>

#include <utility>

#include "common/logging.h"
#include "common/strings.h"

namespace cxds {

// The callback of one watch. Its own mutex makes cancellation synchronous: the WatchImpl
// destructor takes it to clear `on_change`, so it waits for a running callback to finish.
struct SnapshotCache::WatchCallback {
  Mutex mu;
  absl::AnyInvocable<void(const ConfigChange&)> on_change ABSL_GUARDED_BY(mu);
};

class SnapshotCache::WatchImpl final : public ConfigWatcher::Watch {
 public:
  WatchImpl(SnapshotCache* cache, std::string key, uint64_t id, std::shared_ptr<WatchCallback> callback)
      : cache_(cache), key_(std::move(key)), id_(id), callback_(std::move(callback)) {}

  ~WatchImpl() override {
    {
      MutexLock lock(&callback_->mu);
      callback_->on_change = nullptr;
    }
    cache_->RemoveWatch(key_, id_);
  }

  SnapshotPtr Current() override { return cache_->Current(key_); }
  void RecordRequest() override { cache_->RecordRequest(key_); }

 private:
  SnapshotCache* const cache_;
  const std::string key_;
  const uint64_t id_;
  const std::shared_ptr<WatchCallback> callback_;
};

SnapshotCache::SnapshotCache() : SnapshotCache(Options{}) {}

SnapshotCache::SnapshotCache(Options options)
    : options_([&] {
        if (options.node_hash == nullptr) options.node_hash = std::make_shared<IdHash>();
        return std::move(options);
      }()),
      clock_(options_.clock != nullptr ? *options_.clock : RealClock()) {}

SnapshotCache::~SnapshotCache() = default;

absl::Status SnapshotCache::SetSnapshot(const std::string& node_key, SnapshotPtr snapshot) {
  if (snapshot == nullptr) {
    return absl::InvalidArgumentError(StrCat("null snapshot for node ", node_key));
  }
  absl::Status check;
  switch (options_.consistency) {
    case ConsistencyPolicy::kNone:
      break;
    case ConsistencyPolicy::kConsistent:
      check = snapshot->Consistent();
      break;
    case ConsistencyPolicy::kStrict:
      check = snapshot->ConsistentStrict();
      break;
  }
  if (!check.ok()) {
    return absl::FailedPreconditionError(StrCat("snapshot for node ", node_key, " refused: ", check.message()));
  }
  std::vector<std::shared_ptr<WatchCallback>> to_notify;
  SnapshotPtr previous;
  for (bool stored = false; !stored;) {
    // The merge compares every resource, so it runs outside the lock; it is redone if another
    // SetSnapshot of this key came in between.
    SnapshotPtr base = options_.keep_unchanged_types ? Current(node_key) : nullptr;
    SnapshotPtr merged = Snapshot::KeepUnchangedTypes(base, snapshot);
    MutexLock lock(&mu_);
    NodeEntry& entry = nodes_[node_key];
    if (options_.keep_unchanged_types && entry.snapshot != base) continue;
    previous = std::exchange(entry.snapshot, std::move(merged));
    entry.status.has_snapshot = true;
    for (const auto& [id, callback] : entry.watches) to_notify.push_back(callback);
    snapshot = entry.snapshot;
    stored = true;
  }
  // Nothing changed (every type kept): no stream has anything to learn.
  if (options_.keep_unchanged_types && previous == snapshot) return absl::OkStatus();
  if (!to_notify.empty()) {
    // Diffed once here, outside the lock, not once per stream.
    ConfigChange change = DiffSnapshots(previous.get(), snapshot.get());
    change.change_id = NewChangeId();
    change.change_time = clock_.Now();
    Notify(std::move(to_notify), change);
  }
  return absl::OkStatus();
}

absl::StatusOr<SnapshotPtr> SnapshotCache::GetSnapshot(const std::string& node_key) const {
  SnapshotPtr snapshot = Current(node_key);
  if (snapshot == nullptr) {
    return absl::NotFoundError(StrCat("no snapshot for node ", node_key));
  }
  return snapshot;
}

void SnapshotCache::ClearSnapshot(const std::string& node_key) {
  MutexLock lock(&mu_);
  auto it = nodes_.find(node_key);
  if (it == nodes_.end()) {
    return;
  }
  it->second.snapshot = nullptr;
  it->second.status.has_snapshot = false;
  if (it->second.watches.empty()) {
    nodes_.erase(it);
  }
}

std::optional<NodeStatus> SnapshotCache::GetStatus(const std::string& node_key) const {
  MutexLock lock(&mu_);
  auto it = nodes_.find(node_key);
  if (it == nodes_.end()) {
    return std::nullopt;
  }
  return it->second.status;
}

std::vector<std::string> SnapshotCache::StatusKeys() const {
  MutexLock lock(&mu_);
  std::vector<std::string> keys;
  keys.reserve(nodes_.size());
  for (const auto& [key, entry] : nodes_) keys.push_back(key);
  return keys;
}

std::unique_ptr<ConfigWatcher::Watch> SnapshotCache::CreateWatch(
    const envoy::config::core::v3::Node& node, absl::AnyInvocable<void(const ConfigChange&)> on_change) {
  std::string key = options_.node_hash->Key(node);
  auto callback = std::make_shared<WatchCallback>();
  {
    MutexLock lock(&callback->mu);
    callback->on_change = std::move(on_change);
  }
  uint64_t id;
  {
    MutexLock lock(&mu_);
    id = next_watch_id_++;
    NodeEntry& entry = nodes_[key];
    entry.watches.emplace(id, callback);
    entry.status.node = node;
    entry.status.open_watches = static_cast<int>(entry.watches.size());
  }
  return std::make_unique<WatchImpl>(this, std::move(key), id, std::move(callback));
}

void SnapshotCache::Notify(std::vector<std::shared_ptr<WatchCallback>> callbacks, const ConfigChange& change) {
  for (const auto& callback : callbacks) {
    MutexLock lock(&callback->mu);
    if (callback->on_change) {
      callback->on_change(change);
    }
  }
}

uint64_t NewChangeId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

ConfigChange DiffSnapshots(const Snapshot* before, const Snapshot* after) {
  if (before == nullptr || after == nullptr) return ConfigChange::Everything();
  ConfigChange change;
  auto diff_type = [&](const std::string& type_url) {
    const Snapshot::TypeResources* old_items = before->resources(type_url);
    const Snapshot::TypeResources* new_items = after->resources(type_url);
    if (old_items == new_items) return;  // shared, unchanged part
    if (old_items == nullptr || new_items == nullptr) {
      change.types[type_url] = nullptr;
      return;
    }
    std::vector<std::string> names;
    auto a = old_items->items.begin();
    auto b = new_items->items.begin();
    // Both maps are ordered by name: one merge pass.
    while (a != old_items->items.end() || b != new_items->items.end()) {
      if (b == new_items->items.end() || (a != old_items->items.end() && a->first < b->first)) {
        names.push_back(a->first);  // removed
        ++a;
      } else if (a == old_items->items.end() || b->first < a->first) {
        names.push_back(b->first);  // added
        ++b;
      } else {
        if (a->second != b->second && a->second->content_version() != b->second->content_version()) {
          names.push_back(a->first);  // modified
        }
        ++a;
        ++b;
      }
    }
    if (!names.empty() || old_items->version != new_items->version)
      change.types[type_url] = std::make_shared<const std::vector<std::string>>(std::move(names));
  };
  for (const auto& [type_url, typed] : before->types()) diff_type(type_url);
  for (const auto& [type_url, typed] : after->types()) {
    if (before->resources(type_url) == nullptr) diff_type(type_url);
  }
  return change;
}

void SnapshotCache::RemoveWatch(const std::string& key, uint64_t id) {
  MutexLock lock(&mu_);
  auto it = nodes_.find(key);
  if (it == nodes_.end()) {
    return;
  }
  it->second.watches.erase(id);
  it->second.status.open_watches = static_cast<int>(it->second.watches.size());
  // Nothing left to serve or to tell: forget the key, or clients with ever-new node ids would
  // grow the cache (each entry keeps the node as sent) after their streams are gone.
  if (it->second.watches.empty() && it->second.snapshot == nullptr) nodes_.erase(it);
}

void SnapshotCache::RecordRequest(const std::string& key) {
  const absl::Time now = clock_.Now();
  MutexLock lock(&mu_);
  auto it = nodes_.find(key);
  if (it != nodes_.end()) {
    it->second.status.last_request_time = now;
  }
}

SnapshotPtr SnapshotCache::Current(const std::string& key) const {
  MutexLock lock(&mu_);
  auto it = nodes_.find(key);
  return it == nodes_.end() ? nullptr : it->second.snapshot;
}

}  // namespace cxds
