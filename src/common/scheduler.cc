#include "common/scheduler.h"

#include <type_traits>
#include <vector>

namespace cxds {

namespace scheduler_internal {
// The Timer both schedulers hand out: cancels through the scheduler that made it.
template <typename S>
class TimerHandle final : public Timer {
 public:
  // `key` (deadline, id) finds the timer in the scheduler's map without a scan: every stream
  // holds timers, and 10,000 streams closing at once would otherwise scan 10,000 each.
  TimerHandle(S* scheduler, TimerKey key) : scheduler_(scheduler), key_(key) {}
  ~TimerHandle() override { Cancel(); }
  void Cancel() override {
    if (scheduler_ != nullptr) {
      scheduler_->CancelTimer(key_);
      scheduler_ = nullptr;
    }
  }

 private:
  S* scheduler_;
  const TimerKey key_;
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
  const TimerKey key{absl::Now() + delay, next_id_++};
  timers_.emplace(key, Entry{std::move(fn)});
  generation_++;
  return std::make_unique<scheduler_internal::TimerHandle<std::remove_pointer_t<decltype(this)>>>(this, key);
}

void RealScheduler::CancelTimer(const TimerKey& key) {
  const uint64_t id = key.second;
  MutexLock lock(&mu_);
  if (timers_.erase(key) > 0) generation_++;
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
  const TimerKey key{clock_.Now() + std::max(delay, absl::ZeroDuration()), next_id_++};
  timers_.emplace(key, std::move(fn));
  return std::make_unique<scheduler_internal::TimerHandle<std::remove_pointer_t<decltype(this)>>>(this, key);
}

void SimulatedScheduler::CancelTimer(const TimerKey& key) {
  MutexLock lock(&mu_);
  timers_.erase(key);
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

PeriodicTask::PeriodicTask(Scheduler& scheduler, absl::Duration interval, absl::AnyInvocable<void()> fn)
    : scheduler_(scheduler), interval_(interval), fn_(std::move(fn)) {}

PeriodicTask::~PeriodicTask() {
  TimerPtr timer;
  {
    MutexLock lock(&mu_);
    stopping_ = true;  // a run in progress does not reschedule
    timer = std::move(timer_);
  }
  timer.reset();  // waits for a run in progress, or cancels the next one
}

void PeriodicTask::Start(absl::Duration first_delay) {
  MutexLock lock(&mu_);
  const absl::Duration delay = first_delay == absl::InfiniteDuration() ? interval_ : first_delay;
  if (!stopping_) timer_ = scheduler_.Schedule(delay, [this] { Run(); });
}

void PeriodicTask::Run() {
  fn_();
  MutexLock lock(&mu_);
  if (!stopping_) timer_ = scheduler_.Schedule(interval_, [this] { Run(); });
}

}  // namespace cxds
