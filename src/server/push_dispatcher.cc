#include "server/push_dispatcher.h"

#include <algorithm>

#include "common/logging.h"

namespace cxds {

namespace {
// The dispatcher whose inline loop runs on this thread (so a Done inside a delivery does not
// start a nested loop).
thread_local const PushDispatcher* pumping_dispatcher = nullptr;
}  // namespace

int DefaultPushThrottle() {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  return std::min(15 + 5 * cores, 100);
}

PushDispatcher::PushDispatcher(Options options)
    : max_in_flight_(options.max_in_flight > 0 ? options.max_in_flight : DefaultPushThrottle()),
      clock_(options.clock != nullptr ? options.clock : &RealClock()),
      observer_(options.observer),
      metrics_(options.metrics) {
  if (metrics_ != nullptr) {
    queue_time_ =
        &metrics_->GetHistogram("pilot_proxy_queue_time",
                                "Time a proxy waits in the push queue before its push starts (s).", FineTimeBuckets());
    in_flight_gauge_ = &metrics_->GetGauge("cxds_push_in_flight", "Connections pushing now (throttle slots held).");
    metrics_->GetGauge("cxds_push_throttle", "The push throttle: connections allowed to push at once.")
        .Set(max_in_flight_);
  }
  for (int i = 0; i < options.worker_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

PushDispatcher::~PushDispatcher() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  queue_.ShutDown();
  for (std::thread& worker : workers_) worker.join();
}

void PushDispatcher::Enqueue(PushTarget* target, const PushTargetInfo& info, PushRequestPtr request) {
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    if (!infos_.contains(target)) infos_.emplace(target, std::make_shared<const PushTargetInfo>(info));
  }
  if (observer_ != nullptr) observer_->OnQueued(info, *request, clock_->Now());
  queue_.Enqueue(target, std::move(request));
  if (workers_.empty()) Pump();
}

void PushDispatcher::Deliver(PushQueue::Item item) {
  const absl::Time now = clock_->Now();
  const PushRequest& request = *item.request;
  if (queue_time_ != nullptr && request.start != absl::InfiniteFuture()) {
    queue_time_->Observe(absl::ToDoubleSeconds(std::max(absl::ZeroDuration(), now - request.start)));
  }
  std::shared_ptr<const PushTargetInfo> info;
  {
    MutexLock lock(&mu_);
    slot_holders_.insert(item.target);
    if (auto it = infos_.find(item.target); it != infos_.end()) info = it->second;
    if (metrics_ != nullptr) {
      for (const auto& [reason, count] : request.reasons) {
        Counter*& counter = trigger_counters_[reason];
        if (counter == nullptr) {
          counter =
              &metrics_->GetCounter("pilot_push_triggers", "Pushes per connection, by reason.", {{"type", reason}});
        }
        counter->Add(static_cast<double>(count));
      }
    }
  }
  if (observer_ != nullptr) {
    static const PushTargetInfo kUnknown;
    observer_->OnDequeued(info != nullptr ? *info : kUnknown, request, now);
  }
  PushTarget* target = item.target;
  target->DeliverPush(std::move(item.request));
  queue_.DeliveryFinished(target);
}

void PushDispatcher::Pump() {
  if (pumping_dispatcher == this) return;  // the loop below, further up this thread, continues
  const PushDispatcher* outer = pumping_dispatcher;
  pumping_dispatcher = this;
  for (;;) {
    {
      MutexLock lock(&mu_);
      if (in_flight_ >= max_in_flight_ || stopping_) break;
      in_flight_++;
      max_seen_ = std::max(max_seen_, in_flight_ - reserved_);
      if (in_flight_gauge_ != nullptr) in_flight_gauge_->Set(in_flight_ - reserved_);
    }
    std::optional<PushQueue::Item> item = queue_.TryDequeue();
    if (!item.has_value()) {
      ReleaseSlot();
      // An Enqueue that raced with the release may have seen no free slot: look again.
      if (queue_.Pending() == 0) break;
      continue;
    }
    Deliver(std::move(*item));
  }
  pumping_dispatcher = outer;
}

void PushDispatcher::WorkerLoop() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      mu_.Await([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ < max_in_flight_ || stopping_; });
      if (stopping_) return;
      // The slot is reserved while the worker waits for a push, and counts as pushing only
      // once it has one.
      in_flight_++;
      reserved_++;
    }
    std::optional<PushQueue::Item> item = queue_.Dequeue();
    {
      MutexLock lock(&mu_);
      reserved_--;
      if (item.has_value()) {
        max_seen_ = std::max(max_seen_, in_flight_ - reserved_);
        if (in_flight_gauge_ != nullptr) in_flight_gauge_->Set(in_flight_ - reserved_);
      }
    }
    if (!item.has_value()) {  // shut down
      ReleaseSlot();
      return;
    }
    Deliver(std::move(*item));
  }
}

void PushDispatcher::ReleaseSlot() {
  MutexLock lock(&mu_);
  in_flight_--;
  if (in_flight_gauge_ != nullptr) in_flight_gauge_->Set(in_flight_ - reserved_);
}

void PushDispatcher::Generated(PushTarget* target) { PassSlotOf(target); }

void PushDispatcher::Done(PushTarget* target) {
  // Whether this push still holds a slot is settled before MarkDone can queue the target
  // again: from then on a worker may deliver its next push, which takes a slot of its own and
  // marks the target a holder again; looking afterwards would pass that slot and leak this one.
  bool held = false;
  {
    MutexLock lock(&mu_);
    held = slot_holders_.erase(target) > 0;
  }
  if (!queue_.MarkDone(target)) {
    // Not pushing (removed meanwhile): a slot it held is given back here, once (Remove found
    // no holder to release).
    if (held) {
      ReleaseSlot();
      if (workers_.empty()) Pump();
    }
    return;
  }
  if (held) {
    PassSlot();
  } else if (workers_.empty()) {
    Pump();  // MarkDone may have queued it again, and a slot may be free
  }
}

void PushDispatcher::PassSlotOf(PushTarget* target) {
  {
    MutexLock lock(&mu_);
    if (slot_holders_.erase(target) == 0) return;
  }
  PassSlot();
}

void PushDispatcher::PassSlot() {
  bool stopping = false;
  {
    MutexLock lock(&mu_);
    stopping = stopping_;
  }
  // The slot passes straight to the next queued push, delivered on this thread (usually the
  // one that generated or completed a write): releasing it instead would wake a worker for
  // every push, and those hand-offs were most of the cost of a push to many streams. Not
  // inside a delivery on this thread: the loop further up continues, and the stack stays flat.
  if (pumping_dispatcher != this && !stopping) {
    if (std::optional<PushQueue::Item> item = queue_.TryDequeue(); item.has_value()) {
      const PushDispatcher* outer = pumping_dispatcher;
      pumping_dispatcher = this;
      Deliver(std::move(*item));
      pumping_dispatcher = outer;
      if (workers_.empty()) Pump();  // slots a nested Generated/Done released
      return;
    }
  }
  ReleaseSlot();
  if (workers_.empty()) Pump();
}

void PushDispatcher::Remove(PushTarget* target) {
  (void)queue_.Remove(target);  // no delivery to it is in progress after this
  bool held = false;
  {
    MutexLock lock(&mu_);
    infos_.erase(target);
    held = slot_holders_.erase(target) > 0;
  }
  if (held) {
    ReleaseSlot();
    if (workers_.empty()) Pump();
  }
}

int PushDispatcher::in_flight() const {
  MutexLock lock(&mu_);
  return in_flight_ - reserved_;
}

int PushDispatcher::max_in_flight_seen() const {
  MutexLock lock(&mu_);
  return max_seen_;
}

}  // namespace cxds
