#include "common/scheduler.h"

#include <type_traits>
#include <vector>

namespace cxds {

namespace scheduler_internal {
// The Timer both schedulers hand out: cancels through the scheduler that made it.
template <typename S>
class TimerHandle final : public Timer {
 public:
  TimerHandle(S* scheduler, uint64_t id) : scheduler_(scheduler), id_(id) {}
  ~TimerHandle() override { Cancel(); }
  void Cancel() override {
    if (scheduler_ != nullptr) {
      scheduler_->CancelTimer(id_);
      scheduler_ = nullptr;
    }
  }

 private:
  S* scheduler_;
  const uint64_t id_;
};
}  // namespace scheduler_internal

// ---- RealScheduler

RealScheduler::RealScheduler() : thread_([this] { Run(); }) {}

RealScheduler::~RealScheduler() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
    timers_.clear();
  }
  thread_.join();
}

TimerPtr RealScheduler::Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) {
  MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  timers_.emplace(std::make_pair(absl::Now() + delay, id), Entry{std::move(fn)});
  generation_++;
  return std::make_unique<scheduler_internal::TimerHandle<std::remove_pointer_t<decltype(this)>>>(this, id);
}

void RealScheduler::CancelTimer(uint64_t id) {
  MutexLock lock(&mu_);
  for (auto it = timers_.begin(); it != timers_.end(); ++it) {
    if (it->first.second == id) {
      timers_.erase(it);
      generation_++;
      break;
    }
  }
  // Wait for a running callback of this timer, unless we are inside it.
  if (running_id_ == id && std::this_thread::get_id() != thread_.get_id()) {
    cancelling_id_ = id;
    mu_.Await([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_id_ != cancelling_id_; });
  }
}

void RealScheduler::Run() {
  MutexLock lock(&mu_);
  while (!stop_) {
    if (timers_.empty()) {
      mu_.Await([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !timers_.empty(); });
      continue;
    }
    auto first = timers_.begin();
    const absl::Time deadline = first->first.first;
    if (absl::Now() < deadline) {
      // Sleep until the deadline, or until the set of timers changes (an earlier one may have
      // been added, or this one cancelled).
      const uint64_t seen = generation_;
      waiting_generation_ = seen;
      mu_.AwaitWithDeadline(
          [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || generation_ != waiting_generation_; },
          deadline);
      continue;
    }
    running_id_ = first->first.second;
    absl::AnyInvocable<void()> fn = std::move(first->second.fn);
    timers_.erase(first);
    mu_.Unlock();
    fn();
    mu_.Lock();
    running_id_ = 0;
  }
}

// ---- SimulatedScheduler

TimerPtr SimulatedScheduler::Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) {
  MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  timers_.emplace(std::make_pair(clock_.Now() + std::max(delay, absl::ZeroDuration()), id), std::move(fn));
  return std::make_unique<scheduler_internal::TimerHandle<std::remove_pointer_t<decltype(this)>>>(this, id);
}

void SimulatedScheduler::CancelTimer(uint64_t id) {
  MutexLock lock(&mu_);
  for (auto it = timers_.begin(); it != timers_.end(); ++it) {
    if (it->first.second == id) {
      timers_.erase(it);
      return;
    }
  }
}

void SimulatedScheduler::AdvanceBy(absl::Duration d) {
  const absl::Time target = clock_.Now() + d;
  for (;;) {
    absl::AnyInvocable<void()> fn;
    {
      MutexLock lock(&mu_);
      if (timers_.empty() || timers_.begin()->first.first > target) break;
      auto first = timers_.begin();
      const absl::Time due = first->first.first;
      if (due > clock_.Now()) clock_.Advance(due - clock_.Now());
      fn = std::move(first->second);
      timers_.erase(first);
    }
    fn();  // may schedule more timers, which fire in this loop if due by `target`
  }
  if (target > clock_.Now()) clock_.Advance(target - clock_.Now());
}

size_t SimulatedScheduler::pending() const {
  MutexLock lock(&mu_);
  return timers_.size();
}

}  // namespace cxds
