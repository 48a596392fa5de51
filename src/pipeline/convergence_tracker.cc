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

ChangeStages& ConvergenceTracker::Touch(uint64_t id, const PushRequest& request, absl::Time now) {
  auto [it, inserted] = changes_.try_emplace(id);
  if (inserted) {
    ChangeStages& change = it->second;
    change.id = id;
    // First seen later than received (a snapshot-cache change): the request's start is when
    // the change was made.
    change.received = request.start != absl::InfiniteFuture() ? std::min(request.start, now) : now;
    for (const ConfigKey& key : request.configs) change.configs.push_back(key.ToString());
    change.reasons = request.ReasonsString();
    order_.push_back(id);
    while (order_.size() > max_changes_) {
      changes_.erase(order_.front());
      order_.pop_front();
    }
  }
  return it->second;
}

ProxyStages& ConvergenceTracker::TouchProxy(ChangeStages& change, const PushTargetInfo& target) {
  ProxyStages& proxy = change.proxies[target.stream_id];
  proxy.stream_id = target.stream_id;
  proxy.node_id = target.node_id;
  return proxy;
}

void ConvergenceTracker::OnReceived(const PushRequest& request, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) Touch(id, request, now).received = now;
}

void ConvergenceTracker::OnDebounced(const PushRequest& request, uint64_t push_number, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    ChangeStages& change = Touch(id, request, now);
    if (!change.debounced.has_value()) {
      change.debounced = now;
      change.push_number = push_number;
    }
  }
}

void ConvergenceTracker::OnPushStarted(const PushRequest& request, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    ChangeStages& change = Touch(id, request, now);
    if (!change.push_started.has_value()) {
      change.push_started = now;
      change.full = request.full;
      if (request.context != nullptr) change.push_version = request.context->version();
    }
  }
}

void ConvergenceTracker::OnQueued(const PushTargetInfo& target, const PushRequest& request, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    ProxyStages& proxy = TouchProxy(Touch(id, request, now), target);
    if (!proxy.queued.has_value()) proxy.queued = now;
  }
}

void ConvergenceTracker::OnDequeued(const PushTargetInfo& target, const PushRequest& request, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    ProxyStages& proxy = TouchProxy(Touch(id, request, now), target);
    if (!proxy.dequeued.has_value()) proxy.dequeued = now;
  }
}

void ConvergenceTracker::OnSent(const PushTargetInfo& target, const PushRequest& request, const std::string& type_url,
                                const std::string& version, const std::string& nonce, absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    ProxyStages& proxy = TouchProxy(Touch(id, request, now), target);
    proxy.types.push_back(TypeStage{type_url, version, nonce, now, std::nullopt, false, ""});
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
    if (proxy == change->second.proxies.end()) continue;
    for (TypeStage& stage : proxy->second.types) {
      if (stage.nonce == nonce && !stage.answered.has_value()) {
        stage.answered = now;
        stage.accepted = accepted;
        stage.error = error;
      }
    }
  }
}

void ConvergenceTracker::OnPushDone(const PushTargetInfo& target, const PushRequest& request, int responses,
                                    absl::Time now) {
  MutexLock lock(&mu_);
  for (uint64_t id : request.change_ids) {
    ProxyStages& proxy = TouchProxy(Touch(id, request, now), target);
    proxy.done = now;
    proxy.responses += responses;
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
  summary.id = change.id;
  summary.received = change.received;
  summary.version = change.push_version;
  const auto later = [](std::optional<absl::Time>& into, absl::Time t) {
    if (!into.has_value() || t > *into) into = t;
  };
  for (const auto& [stream, proxy] : change.proxies) {
    if (proxy.types.empty()) continue;  // nothing was sent to it for this change
    summary.proxies++;
    summary.responses += static_cast<int>(proxy.types.size());
    for (const TypeStage& type : proxy.types) {
      if (!summary.first_sent.has_value() || type.sent < *summary.first_sent) summary.first_sent = type.sent;
      if (type.answered.has_value()) later(summary.last_answered, *type.answered);
    }
    if (proxy.done.has_value()) {
      summary.proxies_written++;
      later(summary.last_written, *proxy.done);
    }
    if (proxy.rejected()) {
      summary.proxies_nacked++;
    } else if (proxy.answered()) {
      summary.proxies_acked++;
    }
  }
  return summary;
}

std::vector<uint64_t> ConvergenceTracker::RecentIds() const {
  MutexLock lock(&mu_);
  return {order_.begin(), order_.end()};
}

}  // namespace cxds
