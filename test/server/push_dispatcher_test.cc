#include "server/push_dispatcher.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/admission.h"

namespace cxds {
namespace {

// A connection that holds each push until the test (or a thread) finishes it.
class HoldingTarget final : public PushTarget {
 public:
  explicit HoldingTarget(int id) : id_(id) {}
  void DeliverPush(PushRequestPtr request) override { delivered.push_back(*request); }
  std::string PushTargetName() const override { return std::to_string(id_); }
  std::vector<PushRequest> delivered;

 private:
  int id_;
};

PushRequestPtr Reason(const std::string& reason) {
  auto r = std::make_shared<PushRequest>();
  r->reasons[reason] = 1;
  return r;
}

TEST(PushDispatcherTest, InlineModeNeverExceedsTheThrottleAndDoneAdmitsTheNext) {
  PushDispatcher::Options options;
  options.max_in_flight = 3;
  PushDispatcher dispatcher(options);
  std::vector<std::unique_ptr<HoldingTarget>> targets;
  for (int i = 0; i < 10; ++i) targets.push_back(std::make_unique<HoldingTarget>(i));
  for (auto& t : targets) dispatcher.Enqueue(t.get(), {}, Reason("x"));
  EXPECT_EQ(dispatcher.in_flight(), 3);
  EXPECT_EQ(dispatcher.queue().Pending(), 7u);
  int delivered = 0;
  for (auto& t : targets) delivered += static_cast<int>(t->delivered.size());
  EXPECT_EQ(delivered, 3);
  // Finishing pushes one by one admits the rest in FIFO order, never more than 3 at once.
  for (int i = 0; i < 10; ++i) {
    dispatcher.Done(targets[i].get());
    EXPECT_LE(dispatcher.in_flight(), 3);
  }
  for (auto& t : targets) EXPECT_EQ(t->delivered.size(), 1u) << t->PushTargetName();
  EXPECT_EQ(dispatcher.in_flight(), 0);
  EXPECT_EQ(dispatcher.max_in_flight_seen(), 3);
}

TEST(PushDispatcherTest, APushArrivingDuringOneInProgressIsMergedAndDeliveredAfterDone) {
  PushDispatcher::Options options;
  options.max_in_flight = 1;
  PushDispatcher dispatcher(options);
  HoldingTarget a(1);
  dispatcher.Enqueue(&a, {}, Reason("x"));
  dispatcher.Enqueue(&a, {}, Reason("y"));
  dispatcher.Enqueue(&a, {}, Reason("z"));
  ASSERT_EQ(a.delivered.size(), 1u) << "one push in progress per connection";
  dispatcher.Done(&a);
  ASSERT_EQ(a.delivered.size(), 2u);
  EXPECT_EQ(a.delivered[1].TotalReasons(), 2) << "y and z merged";
  dispatcher.Done(&a);
  EXPECT_EQ(dispatcher.in_flight(), 0);
}

// Issue 11 (no client may stall another): a proxy that stops reading keeps its push in
// progress until its writes complete (or the send timeout ends it), but holds no throttle slot
// once the push is generated, so the other proxies' pushes go on.
TEST(PushDispatcherTest, AConnectionWhoseWritesStallHoldsNoSlotOnceItsPushIsGenerated) {
  PushDispatcher::Options options;
  options.max_in_flight = 1;
  PushDispatcher dispatcher(options);
  HoldingTarget a(1), b(2), c(3);
  for (HoldingTarget* t : {&a, &b, &c}) dispatcher.Enqueue(t, {}, Reason("x"));
  ASSERT_EQ(a.delivered.size(), 1u);
  EXPECT_TRUE(b.delivered.empty());
  dispatcher.Generated(&a);  // a's writes now wait on a proxy that does not read
  EXPECT_EQ(b.delivered.size(), 1u) << "the slot passed to the next push";
  dispatcher.Enqueue(&a, {}, Reason("y"));
  EXPECT_EQ(a.delivered.size(), 1u) << "a still has one push in progress";
  dispatcher.Generated(&b);
  EXPECT_EQ(c.delivered.size(), 1u);
  dispatcher.Generated(&c);
  EXPECT_EQ(dispatcher.in_flight(), 0) << "three pushes writing, no slot held";
  dispatcher.Done(&b);
  dispatcher.Done(&c);
  EXPECT_EQ(dispatcher.in_flight(), 0);
  dispatcher.Done(&a);  // a's writes completed: its merged push goes out
  ASSERT_EQ(a.delivered.size(), 2u);
  EXPECT_EQ(a.delivered[1].TotalReasons(), 1);
  EXPECT_EQ(dispatcher.in_flight(), 1);
  dispatcher.Done(&a);  // Done frees a slot never given back by Generated
  EXPECT_EQ(dispatcher.in_flight(), 0);
  EXPECT_EQ(dispatcher.max_in_flight_seen(), 1);
}

TEST(PushDispatcherTest, RemoveFreesTheSlotOfAClosingConnection) {
  PushDispatcher::Options options;
  options.max_in_flight = 1;
  PushDispatcher dispatcher(options);
  HoldingTarget a(1), b(2);
  dispatcher.Enqueue(&a, {}, Reason("x"));
  dispatcher.Enqueue(&b, {}, Reason("x"));
  EXPECT_TRUE(b.delivered.empty());
  dispatcher.Remove(&a);  // a closes mid-push
  EXPECT_EQ(b.delivered.size(), 1u);
  dispatcher.Done(&a);  // a late Done is harmless
  EXPECT_EQ(dispatcher.in_flight(), 1);
  dispatcher.Done(&b);
  EXPECT_EQ(dispatcher.in_flight(), 0);
}

// Worker threads deliver; targets finish on other threads. The limit holds throughout.
TEST(PushDispatcherTest, WorkerModeNeverExceedsTheThrottleUnderConcurrency) {
  PushDispatcher::Options options;
  options.max_in_flight = 4;
  options.worker_threads = 3;
  PushDispatcher dispatcher(options);

  class AsyncTarget final : public PushTarget {
   public:
    AsyncTarget(PushDispatcher& d, std::atomic<int>& in_push, std::atomic<int>& max_in_push,
                std::atomic<int64_t>& reasons, Mutex& threads_mu, std::vector<std::thread>& threads)
        : d_(d),
          in_push_(in_push),
          max_in_push_(max_in_push),
          reasons_(reasons),
          threads_mu_(threads_mu),
          threads_(threads) {}
    void DeliverPush(PushRequestPtr request) override {
      const int now = ++in_push_;
      int seen = max_in_push_.load();
      while (now > seen && !max_in_push_.compare_exchange_weak(seen, now)) {
      }
      reasons_ += request->TotalReasons();
      // Finish on another thread, as a write completion would.
      MutexLock lock(&threads_mu_);
      threads_.emplace_back([this] {
        --in_push_;
        d_.Done(this);
      });
    }
    std::string PushTargetName() const override { return "async"; }

   private:
    PushDispatcher& d_;
    std::atomic<int>& in_push_;
    std::atomic<int>& max_in_push_;
    std::atomic<int64_t>& reasons_;
    Mutex& threads_mu_;
    std::vector<std::thread>& threads_;
  };

  std::atomic<int> in_push{0};
  std::atomic<int> max_in_push{0};
  std::atomic<int64_t> reasons{0};
  Mutex threads_mu;
  std::vector<std::thread> finishers;
  std::vector<std::unique_ptr<AsyncTarget>> targets;
  for (int i = 0; i < 32; ++i) {
    targets.push_back(std::make_unique<AsyncTarget>(dispatcher, in_push, max_in_push, reasons, threads_mu, finishers));
  }
  std::vector<std::thread> producers;
  constexpr int kPerProducer = 500;
  for (int p = 0; p < 4; ++p) {
    producers.emplace_back([&, p] {
      for (int n = 0; n < kPerProducer; ++n) dispatcher.Enqueue(targets[(n * 5 + p) % 32].get(), {}, Reason("x"));
    });
  }
  for (auto& t : producers) t.join();
  const absl::Time give_up = absl::Now() + absl::Seconds(60);  // a bound, not a timed assertion
  while (reasons.load() < 4 * kPerProducer && absl::Now() < give_up) std::this_thread::yield();
  while ((dispatcher.in_flight() > 0 || in_push.load() > 0) && absl::Now() < give_up) std::this_thread::yield();
  EXPECT_EQ(reasons.load(), 4 * kPerProducer) << "every request delivered (merged counts add up)";
  EXPECT_LE(dispatcher.max_in_flight_seen(), 4);
  EXPECT_EQ(dispatcher.in_flight(), 0) << "idle workers' reserved slots are not pushes";
  EXPECT_LE(max_in_push.load(), 4);
  for (auto& t : targets) dispatcher.Remove(t.get());
  MutexLock lock(&threads_mu);
  for (auto& t : finishers) t.join();
}

// Records the thread each push was delivered on; with `finish_at_once`, reports Done from
// inside the delivery, as a stream with nothing to send does.
class ThreadRecordingTarget final : public PushTarget {
 public:
  ThreadRecordingTarget(PushDispatcher* dispatcher, bool finish_at_once)
      : dispatcher_(dispatcher), finish_at_once_(finish_at_once) {}
  void DeliverPush(PushRequestPtr) override {
    {
      MutexLock lock(&mu_);
      threads_.push_back(std::this_thread::get_id());
    }
    if (finish_at_once_) dispatcher_->Done(this);
  }
  std::string PushTargetName() const override { return "recording"; }
  std::vector<std::thread::id> threads() const {
    MutexLock lock(&mu_);
    return threads_;
  }
  // Waits (bounded; a bound, not a timed assertion) until `n` pushes were delivered.
  bool AwaitDeliveries(size_t n) const {
    MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return threads_.size() >= n; },
                                absl::Seconds(30));
  }

 private:
  PushDispatcher* const dispatcher_;
  const bool finish_at_once_;
  mutable Mutex mu_;
  std::vector<std::thread::id> threads_ ABSL_GUARDED_BY(mu_);
};

// A write completion that frees a slot starts the next queued push itself: no worker is woken
// to do it (that hand-off per push was most of the cost of a push to many streams).
TEST(PushDispatcherTest, WorkerModeDoneDeliversTheNextQueuedPushOnTheCallingThread) {
  PushDispatcher::Options options;
  options.max_in_flight = 1;
  options.worker_threads = 1;
  PushDispatcher dispatcher(options);
  ThreadRecordingTarget first(&dispatcher, false), second(&dispatcher, false);
  dispatcher.Enqueue(&first, {}, Reason("x"));
  ASSERT_TRUE(first.AwaitDeliveries(1));
  EXPECT_NE(first.threads()[0], std::this_thread::get_id()) << "Enqueue never delivers in worker mode";
  dispatcher.Enqueue(&second, {}, Reason("x"));  // waits: the one slot is first's
  EXPECT_TRUE(second.threads().empty());
  dispatcher.Done(&first);
  ASSERT_EQ(second.threads().size(), 1u) << "delivered before Done returned";
  EXPECT_EQ(second.threads()[0], std::this_thread::get_id());
  dispatcher.Done(&second);
  dispatcher.Remove(&first);
  dispatcher.Remove(&second);
}

// A Done reported inside a delivery does not deliver again on that thread (the stack stays
// flat); the freed slots go to the worker, and every queued push is still delivered.
TEST(PushDispatcherTest, WorkerModeDoneInsideADeliveryLeavesTheRestToTheWorkers) {
  PushDispatcher::Options options;
  options.max_in_flight = 1;
  options.worker_threads = 1;
  PushDispatcher dispatcher(options);
  ThreadRecordingTarget holder(&dispatcher, false);
  dispatcher.Enqueue(&holder, {}, Reason("x"));
  ASSERT_TRUE(holder.AwaitDeliveries(1));
  std::vector<std::unique_ptr<ThreadRecordingTarget>> quick;
  for (int i = 0; i < 200; ++i) {
    quick.push_back(std::make_unique<ThreadRecordingTarget>(&dispatcher, true));
    dispatcher.Enqueue(quick.back().get(), {}, Reason("x"));
  }
  dispatcher.Done(&holder);  // delivers quick[0] here; its nested Done frees the slot
  int on_this_thread = 0;
  for (auto& target : quick) {
    ASSERT_TRUE(target->AwaitDeliveries(1));
    if (target->threads()[0] == std::this_thread::get_id()) on_this_thread++;
  }
  EXPECT_EQ(on_this_thread, 1);
  EXPECT_EQ(quick[0]->threads()[0], std::this_thread::get_id());
  dispatcher.Remove(&holder);
  for (auto& target : quick) dispatcher.Remove(target.get());
}

TEST(PushDispatcherTest, DefaultThrottleIsIstiods) {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(DefaultPushThrottle(), std::min(15 + 5 * cores, 100));
}

TEST(AdmissionLimiterTest, AdmitsAtTheRateAndRefusesBeyondTheWait) {
  SimulatedClock clock;
  AdmissionLimiter limiter(10, absl::Seconds(1), clock);  // one every 100 ms
  std::vector<absl::Duration> waits;
  for (int i = 0; i < 11; ++i) {
    auto wait = limiter.Admit();
    ASSERT_TRUE(wait.ok()) << i;
    waits.push_back(*wait);
  }
  EXPECT_EQ(waits[0], absl::ZeroDuration());
  EXPECT_EQ(waits[1], absl::Milliseconds(100));
  EXPECT_EQ(waits[10], absl::Seconds(1));
  auto refused = limiter.Admit();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  clock.Advance(absl::Seconds(2));
  auto later = limiter.Admit();
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(*later, absl::ZeroDuration());
  EXPECT_EQ(limiter.admitted(), 12u);
  EXPECT_EQ(limiter.refused(), 1u);
}

}  // namespace
}  // namespace cxds
