#include "cache/mux_watcher.h"

#include <utility>

#include "absl/base/thread_annotations.h"
#include "common/logging.h"
#include "common/mutex.h"

namespace cxds {

// One stream's watch: a watch on each distinct underlying watcher, whose changes it restricts
// and forwards, and whose configurations it assembles.
class MuxConfigWatcher::WatchImpl final : public ConfigWatcher::Watch {
 public:
  WatchImpl(const MuxConfigWatcher* mux, absl::AnyInvocable<void(const ConfigChange&)> on_change)
      : mux_(mux), on_change_(std::move(on_change)) {}

  // Creates the underlying watches. A change that arrives meanwhile waits for `started_`, so
  // the callback (which may read Current()) never sees underlying_ incomplete. callback_mu_ is
  // not held while creating: an underlying watcher holds its own callback lock when it calls
  // Forward, and Forward takes callback_mu_, so the locks are only ever taken in that order.
  void Start(const envoy::config::core::v3::Node& node) {
    std::vector<std::unique_ptr<Watch>> underlying;
    underlying.reserve(mux_->watchers_.size());
    for (size_t i = 0; i < mux_->watchers_.size(); ++i) {
      underlying.push_back(
          mux_->watchers_[i]->CreateWatch(node, [this, i](const ConfigChange& change) { Forward(i, change); }));
    }
    underlying_ = std::move(underlying);
    MutexLock lock(&callback_mu_);
    started_ = true;
  }

  // Destroying each underlying watch waits for its running callback; after the last one no
  // callback of this watch runs.
  ~WatchImpl() override { underlying_.clear(); }

  SnapshotPtr Current() override {
    if (underlying_.empty()) {
      return nullptr;
    }
    std::vector<SnapshotPtr> parts;
    parts.reserve(underlying_.size());
    for (const auto& watch : underlying_) {
      SnapshotPtr part = watch->Current();
      if (part == nullptr) {
        return nullptr;  // never a partial configuration
      }
      parts.push_back(std::move(part));
    }
    MutexLock lock(&current_mu_);
    if (assembled_ != nullptr && parts == assembled_from_) {
      return assembled_;
    }
    std::map<std::string, Snapshot::TypeResourcesPtr> types;
    for (size_t i = 0; i < parts.size(); ++i) {
      for (const auto& [type_url, resources] : parts[i]->types()) {
        if (mux_->OwnerIndex(type_url) == i) types.emplace(type_url, resources);
      }
    }
    absl::StatusOr<SnapshotPtr> assembled = Snapshot::FromTypes(std::move(types));
    if (!assembled.ok()) {
      // Unreachable: the parts come from valid snapshots.
      Log().error("MuxConfigWatcher: cannot assemble a snapshot: {}", assembled.status().ToString());
      return nullptr;
    }
    assembled_ = *std::move(assembled);
    assembled_from_ = std::move(parts);
    return assembled_;
  }

  void RecordRequest() override {
    for (const auto& watch : underlying_) watch->RecordRequest();
  }

  void SetInterest(const std::string& type_url, bool wildcard, const absl::flat_hash_set<std::string>& names) override {
    std::optional<size_t> owner = mux_->OwnerIndex(type_url);
    if (owner.has_value()) underlying_[*owner]->SetInterest(type_url, wildcard, names);
  }

 private:
  void Forward(size_t index, const ConfigChange& change) {
    std::optional<ConfigChange> restricted = mux_->Restrict(index, change);
    if (!restricted.has_value()) {
      return;
    }
    MutexLock lock(&callback_mu_);
    callback_mu_.Await([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(callback_mu_) { return started_; });
    if (on_change_) on_change_(*restricted);
  }

  const MuxConfigWatcher* const mux_;
  // Runs the callback one change at a time, once Start() is done.
  Mutex callback_mu_;
  absl::AnyInvocable<void(const ConfigChange&)> on_change_ ABSL_GUARDED_BY(callback_mu_);
  bool started_ ABSL_GUARDED_BY(callback_mu_) = false;
  // One per distinct watcher, in the order of mux_->watchers_. Filled by Start(), then
  // immutable until destruction.
  std::vector<std::unique_ptr<Watch>> underlying_;
  // The last snapshot assembled and the parts it was assembled from.
  Mutex current_mu_;
  SnapshotPtr assembled_ ABSL_GUARDED_BY(current_mu_);
  std::vector<SnapshotPtr> assembled_from_ ABSL_GUARDED_BY(current_mu_);
};

MuxConfigWatcher::MuxConfigWatcher(std::map<std::string, ConfigWatcher*> routes, ConfigWatcher* fallback) {
  auto index_of = [this](ConfigWatcher* watcher) {
    for (size_t i = 0; i < watchers_.size(); ++i) {
      if (watchers_[i] == watcher) return i;
    }
    watchers_.push_back(watcher);
    return watchers_.size() - 1;
  };
  for (const auto& [type_url, watcher] : routes) {
    route_index_[type_url] = watcher != nullptr ? std::optional<size_t>(index_of(watcher)) : std::nullopt;
  }
  if (fallback != nullptr) fallback_index_ = index_of(fallback);
}

MuxConfigWatcher::~MuxConfigWatcher() = default;

std::optional<size_t> MuxConfigWatcher::OwnerIndex(const std::string& type_url) const {
  auto route = route_index_.find(type_url);
  return route != route_index_.end() ? route->second : fallback_index_;
}

ConfigWatcher* MuxConfigWatcher::OwnerOf(const std::string& type_url) const {
  std::optional<size_t> owner = OwnerIndex(type_url);
  return owner.has_value() ? watchers_[*owner] : nullptr;
}

std::optional<ConfigChange> MuxConfigWatcher::Restrict(size_t index, const ConfigChange& change) const {
  if (change.everything) {
    return ConfigChange::Everything();
  }
  ConfigChange restricted;
  for (const auto& [type_url, names] : change.types) {
    if (OwnerIndex(type_url) == index) restricted.types.emplace(type_url, names);
  }
  if (restricted.types.empty()) {
    return std::nullopt;
  }
  return restricted;
}

std::unique_ptr<ConfigWatcher::Watch> MuxConfigWatcher::CreateWatch(
    const envoy::config::core::v3::Node& node, absl::AnyInvocable<void(const ConfigChange&)> on_change) {
  auto watch = std::make_unique<WatchImpl>(this, std::move(on_change));
  watch->Start(node);
  return watch;
}

}  // namespace cxds
