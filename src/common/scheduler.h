// Injected timers. Code that waits (heartbeats, debounce, throttling, retries) asks a Scheduler
// for a timer instead of sleeping, so tests run it on simulated time with no sleeps:
// SimulatedScheduler::AdvanceBy fires due timers in deadline order on the test's thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace cxds {

// A scheduled callback. Destroying (or Cancel()ing) it guarantees that the callback is not
// running and will not run, unless Cancel is called from inside the callback itself.
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void Cancel() = 0;
};
using TimerPtr = std::unique_ptr<Timer>;

namespace scheduler_internal {
template <typename S>
class TimerHandle;
}  // namespace scheduler_internal

// A timer's place in its scheduler: deadline, then a unique id.
using TimerKey = std::pair<absl::Time, uint64_t>;

// Thread-safe.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // Runs `fn` once, `delay` from now, on the scheduler's thread.
  [[nodiscard]] virtual TimerPtr Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) = 0;
  virtual Clock& clock() = 0;
};

// Timers on one background thread with the real clock.
class RealScheduler final : public Scheduler {
 public:
  RealScheduler();
  ~RealScheduler() override;  // stops the thread; pending timers never run
  TimerPtr Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) override;
  Clock& clock() override { return RealClock(); }

 private:
  friend class scheduler_internal::TimerHandle<RealScheduler>;
  struct Entry {
    absl::AnyInvocable<void()> fn;
  };
  void Run();
  void CancelTimer(const TimerKey& key);

  Mutex mu_;
  // Keyed by (deadline, id): ties fire in creation order.
  std::map<TimerKey, Entry> timers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t running_id_ ABSL_GUARDED_BY(mu_) = 0;  // the timer whose callback runs now
  uint64_t cancelling_id_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // bumped whenever timers_ changes
  uint64_t waiting_generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// Simulated time for tests: nothing fires until AdvanceBy/RunUntilIdle, which run due timers
// in deadline order (ties in creation order) on the calling thread.
class SimulatedScheduler final : public Scheduler {
 public:
  explicit SimulatedScheduler(absl::Time start = absl::FromUnixSeconds(1'700'000'000)) : clock_(start) {}
  TimerPtr Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) override;
  Clock& clock() override { return clock_; }
  SimulatedClock& simulated_clock() { return clock_; }

  // Moves time forward by `d`, firing every timer that falls due, in order.
  void AdvanceBy(absl::Duration d);
  // Fires timers that are due now (delay zero), repeatedly, until none is.
  void RunUntilIdle() { AdvanceBy(absl::ZeroDuration()); }
  size_t pending() const;

 private:
  friend class scheduler_internal::TimerHandle<SimulatedScheduler>;
  void CancelTimer(const TimerKey& key);

  SimulatedClock clock_;
  mutable Mutex mu_;
  std::map<TimerKey, absl::AnyInvocable<void()>> timers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

// Runs `fn` every `interval` on `scheduler`'s thread, the first time `interval` after Start.
// The destructor returns once no run is in progress and none will follow (a run in progress
// finishes first). Start and the destructor on the owner's thread; not from inside `fn`.
class PeriodicTask {
 public:
  PeriodicTask(Scheduler& scheduler, absl::Duration interval, absl::AnyInvocable<void()> fn);
  ~PeriodicTask();
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

  // The first run `first_delay` from now (default: one interval), then every interval.
  void Start(absl::Duration first_delay = absl::InfiniteDuration());

 private:
  void Run();

  Scheduler& scheduler_;
  const absl::Duration interval_;
  absl::AnyInvocable<void()> fn_;  // the scheduler's thread only, once started
  Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  TimerPtr timer_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cxds
