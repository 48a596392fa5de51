#include "server/push_queue.h"

namespace cxds {

void PushQueue::Slot::Merge(PushRequestPtr incoming) {
  if (empty()) {
    shared = std::move(incoming);
    return;
  }
  if (owned == nullptr) {
    owned = std::make_shared<PushRequest>(*shared);
    shared = nullptr;
  }
  owned->Merge(*incoming);
}

void PushQueue::Enqueue(PushTarget* target, PushRequestPtr request) {
  MutexLock lock(&mu_);
  if (shutting_down_) return;
  if (auto processing = processing_.find(target); processing != processing_.end()) {
    processing->second.Merge(std::move(request));
    return;
  }
  if (auto pending = pending_.find(target); pending != pending_.end()) {
    pending->second.Merge(std::move(request));
    return;
  }
  pending_.emplace(target, Slot{std::move(request), nullptr});
  queue_.push_back(target);
}

std::optional<PushQueue::Item> PushQueue::PopLocked() {
  if (queue_.empty()) return std::nullopt;
  PushTarget* target = queue_.front();
  queue_.pop_front();
  auto pending = pending_.find(target);
  Item item{target, pending->second.get()};
  pending_.erase(pending);
  processing_.emplace(target, Slot{});
  delivering_[target]++;
  return item;
}

std::optional<PushQueue::Item> PushQueue::Dequeue() {
  MutexLock lock(&mu_);
  mu_.Await([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || shutting_down_; });
  return PopLocked();
}

std::optional<PushQueue::Item> PushQueue::TryDequeue() {
  MutexLock lock(&mu_);
  return PopLocked();
}

void PushQueue::DeliveryFinished(PushTarget* target) {
  MutexLock lock(&mu_);
  auto it = delivering_.find(target);
  if (it != delivering_.end() && --it->second == 0) delivering_.erase(it);
}

bool PushQueue::MarkDone(PushTarget* target) {
  MutexLock lock(&mu_);
  auto processing = processing_.find(target);
  if (processing == processing_.end()) return false;
  Slot arrived = std::move(processing->second);
  processing_.erase(processing);
  if (!arrived.empty() && !shutting_down_) {
    pending_.emplace(target, std::move(arrived));
    queue_.push_back(target);
  }
  return true;
}

bool PushQueue::Remove(PushTarget* target) {
  MutexLock lock(&mu_);
  if (pending_.erase(target) > 0) {
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (*it == target) {
        queue_.erase(it);
        break;
      }
    }
  }
  const bool was_processing = processing_.erase(target) > 0;
  mu_.Await([this, target]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !delivering_.contains(target); });
  return was_processing;
}

void PushQueue::ShutDown() {
  MutexLock lock(&mu_);
  shutting_down_ = true;
}

size_t PushQueue::Pending() const {
  MutexLock lock(&mu_);
  return queue_.size();
}

size_t PushQueue::Processing() const {
  MutexLock lock(&mu_);
  return processing_.size();
}

bool PushQueue::IsPending(PushTarget* target) const {
  MutexLock lock(&mu_);
  return pending_.contains(target);
}

bool PushQueue::IsProcessing(PushTarget* target) const {
  MutexLock lock(&mu_);
  return processing_.contains(target);
}

PushRequestPtr PushQueue::Waiting(PushTarget* target) const {
  MutexLock lock(&mu_);
  if (auto it = pending_.find(target); it != pending_.end()) return it->second.get();
  if (auto it = processing_.find(target); it != processing_.end()) return it->second.get();
  return nullptr;
}

}  // namespace cxds
