// Injected timers: simulated time fires in deadline order; cancellation is synchronous.
#include "common/scheduler.h"

#include <atomic>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

using ::testing::ElementsAre;

// Timers fire in deadline order (ties in creation order), only when time reaches them.
TEST(SimulatedSchedulerTest, FiresInDeadlineOrder) {
  SimulatedScheduler scheduler;
  std::vector<int> fired;
  auto t3 = scheduler.Schedule(absl::Milliseconds(30), [&] { fired.push_back(3); });
  auto t1 = scheduler.Schedule(absl::Milliseconds(10), [&] { fired.push_back(1); });
  auto t2a = scheduler.Schedule(absl::Milliseconds(20), [&] { fired.push_back(2); });
  auto t2b = scheduler.Schedule(absl::Milliseconds(20), [&] { fired.push_back(22); });
  scheduler.AdvanceBy(absl::Milliseconds(9));
  EXPECT_TRUE(fired.empty());
  scheduler.AdvanceBy(absl::Milliseconds(11));
  EXPECT_THAT(fired, ElementsAre(1, 2, 22));
  scheduler.AdvanceBy(absl::Milliseconds(10));
  EXPECT_THAT(fired, ElementsAre(1, 2, 22, 3));
  EXPECT_EQ(scheduler.pending(), 0u);
}

// A timer scheduled by a callback fires in the same AdvanceBy if it falls due; the clock reads
// each timer's deadline while it runs.
TEST(SimulatedSchedulerTest, CallbacksMayScheduleMore) {
  SimulatedScheduler scheduler;
  const absl::Time start = scheduler.clock().Now();
  std::vector<absl::Duration> seen;
  TimerPtr second;
  auto first = scheduler.Schedule(absl::Seconds(1), [&] {
    seen.push_back(scheduler.clock().Now() - start);
    second = scheduler.Schedule(absl::Seconds(1), [&] { seen.push_back(scheduler.clock().Now() - start); });
  });
  scheduler.AdvanceBy(absl::Seconds(5));
  EXPECT_THAT(seen, ElementsAre(absl::Seconds(1), absl::Seconds(2)));
  EXPECT_EQ(scheduler.clock().Now() - start, absl::Seconds(5));
}

// Destroying or cancelling a timer stops it from firing.
TEST(SimulatedSchedulerTest, CancelledTimersDoNotFire) {
  SimulatedScheduler scheduler;
  int fired = 0;
  auto a = scheduler.Schedule(absl::Seconds(1), [&] { fired++; });
  auto b = scheduler.Schedule(absl::Seconds(1), [&] { fired++; });
  a->Cancel();
  b.reset();
  scheduler.AdvanceBy(absl::Seconds(2));
  EXPECT_EQ(fired, 0);
}

// Cancelling finds the timer by its deadline and id: among many at the same deadline, exactly
// the cancelled ones stay silent.
TEST(SimulatedSchedulerTest, CancelsExactlyTheTimerAmongManyAtOneDeadline) {
  SimulatedScheduler scheduler;
  std::vector<int> fired;
  std::vector<TimerPtr> timers;
  for (int i = 0; i < 1000; ++i)
    timers.push_back(scheduler.Schedule(absl::Seconds(1), [&fired, i] { fired.push_back(i); }));
  for (int i = 0; i < 1000; i += 2) timers[i].reset();
  scheduler.AdvanceBy(absl::Seconds(1));
  ASSERT_EQ(fired.size(), 500u);
  for (int i : fired) EXPECT_EQ(i % 2, 1);
}

// The real scheduler runs timers on its thread; a cancelled one never runs.
TEST(RealSchedulerTest, RunsTimersAndCancels) {
  RealScheduler scheduler;
  Mutex mu;
  bool fired = false;
  std::atomic<int> cancelled_ran{0};
  auto cancelled = scheduler.Schedule(absl::Milliseconds(1), [&] { cancelled_ran++; });
  cancelled->Cancel();
  auto timer = scheduler.Schedule(absl::Milliseconds(1), [&] {
    MutexLock lock(&mu);
    fired = true;
  });
  MutexLock lock(&mu);
  EXPECT_TRUE(mu.AwaitWithTimeout([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return fired; }, absl::Seconds(10)));
  EXPECT_EQ(cancelled_ran.load(), 0);
}

}  // namespace
}  // namespace cxds

namespace cxds {
namespace {

// Regression: a waiter whose condition became true while another thread was about to wait
// (not unlock) must still wake. The scheduler's thread finishes a callback and goes back to
// waiting for timers while the thread cancelling that timer waits for the callback to end.
TEST(MutexTest, WaitingReleasesWakeOtherWaiters) {
  for (int round = 0; round < 200; ++round) {
    RealScheduler scheduler;
    Mutex mu;
    bool fired = false;
    auto timer = scheduler.Schedule(absl::ZeroDuration(), [&] {
      MutexLock lock(&mu);
      fired = true;
    });
    {
      MutexLock lock(&mu);
      ASSERT_TRUE(mu.AwaitWithTimeout([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return fired; }, absl::Seconds(10)));
    }
    timer.reset();  // may wait for the callback to return; must not hang
  }
}

TEST(PeriodicTaskTest, RunsEveryIntervalFromStartAndNeverAfterItsDestructor) {
  SimulatedScheduler scheduler;
  int runs = 0;
  {
    PeriodicTask task(scheduler, absl::Seconds(10), [&] { ++runs; });
    scheduler.AdvanceBy(absl::Seconds(30));
    EXPECT_EQ(runs, 0) << "not before Start";
    task.Start();
    scheduler.AdvanceBy(absl::Seconds(9));
    EXPECT_EQ(runs, 0);
    scheduler.AdvanceBy(absl::Seconds(21));
    EXPECT_EQ(runs, 3);
  }
  scheduler.AdvanceBy(absl::Seconds(60));
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(scheduler.pending(), 0u);
}

}  // namespace
}  // namespace cxds
