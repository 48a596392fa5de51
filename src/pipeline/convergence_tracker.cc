#include "pipeline/convergence_tracker.h"

#include "pipeline/push_context.h"

#include <algorithm>

namespace cxds {

bool ProxyStages::answered() const {
  return std::all_of(types.begin(), types.end(), [](const TypeStage& t) { return t.answered.has_value(); });
}

bool ProxyStages::rejected() const {
  return std::any_of(types.begin(), types.end(),
                     [](const TypeStage& t) { return t.answered.has_value() && !t.accepted; });
}

namespace {
void Later(std::optional<absl::Time>& into, absl::Time t) {
  if (!into.has_value() || t > *into) into = t;
}
void Earlier(std::optional<absl::Time>& into, absl::Time t) {
  if (!into.has_value() || t < *into) into = t;
}
size_t HeapBytes(const std::string& text) {
  return text.capacity() > 15 ? text.capacity() + 1 : 0;  // libstdc++ keeps 15 bytes inline
}
// A record's estimated footprint: its map node, its strings' heap and its vector's.
size_t RecordBytes(const ProxyStages& proxy) {
  constexpr size_t kMapNode = 48;
  size_t bytes = kMapNode + sizeof(int64_t) + sizeof(ProxyStages) + HeapBytes(proxy.node_id) +
                 proxy.types.capacity() * sizeof(TypeStage);
  for (const TypeStage& type : proxy.types) {
    bytes += HeapBytes(type.type_url) + HeapBytes(type.version) + HeapBytes(type.nonce) + HeapBytes(type.error);
  }
  return bytes;
}
}  // namespace

void ChangeCounters::Add(const ProxyStages& proxy) {
  if (proxy.types.empty()) return;  // nothing was sent to it for this change
  proxies++;
  responses += static_cast<int>(proxy.types.size());
  for (const TypeStage& type : proxy.types) {
    Earlier(first_sent, type.sent);
    if (type.answered.has_value()) Later(last_answered, *type.answered);
  }
  if (proxy.done.has_value()) {
    proxies_written++;
    Later(last_written, *proxy.done);
  }
  if (proxy.rejected()) {
    proxies_nacked++;
  } else if (proxy.answered()) {
    proxies_acked++;
  }
}

ConvergenceTracker::ConvergenceTracker(Limits limits) : limits_(limits) {}

void ConvergenceTracker::Forget(uint64_t id) {
  auto it = changes_.find(id);
  if (it == changes_.end()) return;
  proxy_records_ -= it->second.proxies.size();
  detail_bytes_ -= it->second.detail_bytes;
  forgotten_through_ = std::max(forgotten_through_, id);
  stats_.changes_forgotten++;
  changes_.erase(it);
}

ChangeStages* ConvergenceTracker::Touch(uint64_t id, const PushRequest& request, absl::Time now) {
  auto found = changes_.find(id);
  if (found != changes_.end()) return &found->second;
  if (id <= forgotten_through_) {
    stats_.ignored_forgotten++;
    return nullptr;
  }
  auto [it, inserted] = changes_.try_emplace(id);
  ChangeStages& change = it->second;
  change.id = id;
  // First seen later than received (a snapshot-cache change): the request's start is when
  // the change was made.
  change.received = request.start != absl::InfiniteFuture() ? std::min(request.start, now) : now;
  change.configs_total = request.configs.size();
  for (const ConfigKey& key : request.configs) {
    if (change.configs.size() >= limits_.max_configs_named) break;
    change.configs.push_back(key.ToString());
  }
  change.reasons = request.ReasonsString();
  order_.push_back(id);
  while (order_.size() > std::max<size_t>(limits_.max_changes, 1)) {
    const uint64_t oldest = order_.front();
    order_.pop_front();
    Forget(oldest);
  }
  return &change;
}

bool ConvergenceTracker::DropOldestDetail(uint64_t keep) {
  for (uint64_t id : order_) {
    if (id == keep) continue;
    auto it = changes_.find(id);
    if (it == changes_.end() || it->second.proxies.empty()) continue;
    ChangeStages& change = it->second;
    for (const auto& [stream, proxy] : change.proxies) change.dropped.Add(proxy);
    proxy_records_ -= change.proxies.size();
    detail_bytes_ -= change.detail_bytes;
    change.detail_bytes = 0;
    change.proxies.clear();
    change.detail_dropped = true;
    change.detail_truncated = true;
    stats_.details_dropped++;
    return true;
  }
  return false;
}

ProxyStages* ConvergenceTracker::TouchProxy(ChangeStages& change, const PushTargetInfo& target) {
  auto it = change.proxies.find(target.stream_id);
  if (it == change.proxies.end()) {
    // A proxy whose record was dropped must not be counted again from a new record.
    if (change.detail_dropped) return nullptr;
    while (OverCap()) {
      if (!DropOldestDetail(change.id)) {
        change.detail_truncated = true;  // this change alone fills the cap
        return nullptr;
      }
    }
    it = change.proxies.try_emplace(target.stream_id).first;
    proxy_records_++;
    it->second.stream_id = target.stream_id;
    it->second.node_id = target.node_id;
    Resized(change, 0, it->second);
  }
  return &it->second;
}

bool ConvergenceTracker::OverCap() const {
  return proxy_records_ >= limits_.max_proxy_records || detail_bytes_ >= limits_.max_detail_bytes;
}

void ConvergenceTracker::Resized(ChangeStages& change, size_t before, const ProxyStages& proxy) {
  const size_t after = RecordBytes(proxy);
  change.detail_bytes = change.detail_bytes - before + after;
  detail_bytes_ = detail_bytes_ - before + after;
  while (detail_bytes_ > limits_.max_detail_bytes && DropOldestDetail(change.id)) {
  }
}

void ConvergenceTracker::OnReceived(const PushRequest& request, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    if (ChangeStages* change = Touch(id, request, now)) change->received = now;
  }
}

void ConvergenceTracker::OnDebounced(const PushRequest& request, uint64_t push_number, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    ChangeStages* change = Touch(id, request, now);
    if (change != nullptr && !change->debounced.has_value()) {
      change->debounced = now;
      change->push_number = push_number;
    }
  }
}

void ConvergenceTracker::OnPushStarted(const PushRequest& request, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    ChangeStages* change = Touch(id, request, now);
    if (change != nullptr && !change->push_started.has_value()) {
      change->push_started = now;
      change->full = request.full;
      if (request.context != nullptr) change->push_version = request.context->version();
    }
  }
}

ProxyStages* ConvergenceTracker::RecordFor(ChangeStages& change, const PushTargetInfo& target) {
  ProxyStages* proxy = TouchProxy(change, target);
  if (proxy == nullptr) {  // the change's per-proxy detail was dropped: the event is only counted
    change.untracked_events++;
    stats_.untracked_events++;
  }
  return proxy;
}

void ConvergenceTracker::OnQueued(const PushTargetInfo& target, const PushRequest& request, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    ChangeStages* change = Touch(id, request, now);
    if (change == nullptr) continue;
    ProxyStages* proxy = RecordFor(*change, target);
    if (proxy != nullptr && !proxy->queued.has_value()) proxy->queued = now;
  }
}

void ConvergenceTracker::OnDequeued(const PushTargetInfo& target, const PushRequest& request, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    ChangeStages* change = Touch(id, request, now);
    if (change == nullptr) continue;
    ProxyStages* proxy = RecordFor(*change, target);
    if (proxy != nullptr && !proxy->dequeued.has_value()) proxy->dequeued = now;
  }
}

void ConvergenceTracker::OnSent(const PushTargetInfo& target, const PushRequest& request, const std::string& type_url,
                                const std::string& version, const std::string& nonce, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    ChangeStages* change = Touch(id, request, now);
    if (change == nullptr) continue;
    ProxyStages* proxy = RecordFor(*change, target);
    if (proxy == nullptr) {
      change->dropped.responses++;
      Earlier(change->dropped.first_sent, now);
      continue;
    }
    const size_t before = RecordBytes(*proxy);
    proxy->types.push_back(TypeStage{type_url, version, nonce, now, std::nullopt, false, ""});
    Resized(*change, before, *proxy);
  }
}

void ConvergenceTracker::OnFeedback(const PushTargetInfo& target, const PushRequest& request,
                                    const std::string& type_url, const std::string& nonce, bool accepted,
                                    const std::string& error, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    auto change = changes_.find(id);
    if (change == changes_.end()) continue;
    auto proxy = change->second.proxies.find(target.stream_id);
    if (proxy == change->second.proxies.end()) {
      if (change->second.detail_truncated) {
        change->second.untracked_events++;
        stats_.untracked_events++;
        Later(change->second.dropped.last_answered, now);
      }
      continue;
    }
    const size_t before = RecordBytes(proxy->second);
    for (TypeStage& stage : proxy->second.types) {
      if (stage.nonce == nonce && !stage.answered.has_value()) {
        stage.answered = now;
        stage.accepted = accepted;
        stage.error = error;
      }
    }
    Resized(change->second, before, proxy->second);
  }
}

void ConvergenceTracker::OnPushDone(const PushTargetInfo& target, const PushRequest& request, int responses,
                                    absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    ChangeStages* change = Touch(id, request, now);
    if (change == nullptr) continue;
    ProxyStages* proxy = RecordFor(*change, target);
    if (proxy == nullptr) {
      if (responses > 0) Later(change->dropped.last_written, now);
      continue;
    }
    proxy->done = now;
    proxy->responses += responses;
  }
}

std::optional<ChangeStages> ConvergenceTracker::Get(uint64_t change_id) const {
  MutexLock lock(&mu_);
  auto it = changes_.find(change_id);
  if (it == changes_.end()) return std::nullopt;
  return it->second;
}

std::optional<ChangeSummary> ConvergenceTracker::Summarize(uint64_t change_id) const {
  MutexLock lock(&mu_);
  auto it = changes_.find(change_id);
  if (it == changes_.end()) return std::nullopt;
  const ChangeStages& change = it->second;
  ChangeSummary summary;
  static_cast<ChangeCounters&>(summary) = change.dropped;
  summary.id = change.id;
  summary.received = change.received;
  summary.version = change.push_version;
  summary.detail_truncated = change.detail_truncated;
  summary.untracked_events = change.untracked_events;
  for (const auto& [stream, proxy] : change.proxies) summary.Add(proxy);
  return summary;
}

ConvergenceTracker::Stats ConvergenceTracker::stats() const {
  MutexLock lock(&mu_);
  Stats stats = stats_;
  stats.changes = changes_.size();
  stats.proxy_records = proxy_records_;
  stats.detail_bytes = detail_bytes_;
  return stats;
}

std::vector<uint64_t> ConvergenceTracker::RecentIds() const {
  MutexLock lock(&mu_);
  return {order_.begin(), order_.end()};
}

}  // namespace cxds
