#include "server/push_queue.h"

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace cxds {
namespace {

class NamedTarget final : public PushTarget {
 public:
  explicit NamedTarget(std::string name) : name_(std::move(name)) {}
  void DeliverPush(PushRequestPtr) override {}
  std::string PushTargetName() const override { return name_; }

 private:
  std::string name_;
};

PushRequestPtr Reason(const std::string& reason, int64_t start_s = 100) {
  auto r = std::make_shared<PushRequest>();
  r->reasons[reason] = 1;
  r->start = absl::FromUnixSeconds(start_s);
  return r;
}

TEST(PushQueueTest, FifoByFirstEnqueueAndMergeKeepsThePlace) {
  PushQueue queue;
  NamedTarget a("a"), b("b"), c("c");
  queue.Enqueue(&a, Reason("x", 30));
  queue.Enqueue(&b, Reason("x"));
  queue.Enqueue(&c, Reason("x"));
  queue.Enqueue(&a, Reason("y", 10));  // merged: a keeps its place, and the earliest start
  EXPECT_EQ(queue.Pending(), 3u);
  auto first = queue.TryDequeue();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->target, &a);
  EXPECT_EQ(first->request->TotalReasons(), 2);
  EXPECT_EQ(first->request->start, absl::FromUnixSeconds(10));
  EXPECT_EQ(queue.TryDequeue()->target, &b);
  EXPECT_EQ(queue.TryDequeue()->target, &c);
  EXPECT_FALSE(queue.TryDequeue().has_value());
}

TEST(PushQueueTest, RequestDuringProcessingIsKeptAsideAndRequeuedAtTheBackOnMarkDone) {
  PushQueue queue;
  NamedTarget a("a"), b("b");
  queue.Enqueue(&a, Reason("x"));
  auto item = queue.TryDequeue();
  ASSERT_TRUE(item.has_value());
  queue.DeliveryFinished(&a);
  EXPECT_TRUE(queue.IsProcessing(&a));
  queue.Enqueue(&a, Reason("y"));
  queue.Enqueue(&a, Reason("z"));
  EXPECT_EQ(queue.Pending(), 0u) << "a connection being pushed is never queued twice";
  EXPECT_FALSE(queue.IsPending(&a));
  queue.Enqueue(&b, Reason("x"));
  EXPECT_TRUE(queue.MarkDone(&a));
  EXPECT_EQ(queue.Pending(), 2u);
  EXPECT_EQ(queue.TryDequeue()->target, &b) << "a goes to the back of the line";
  auto again = queue.TryDequeue();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->target, &a);
  EXPECT_EQ(again->request->TotalReasons(), 2);
  EXPECT_EQ(again->request->reasons.count("y"), 1u);
  EXPECT_EQ(again->request->reasons.count("z"), 1u);
}

TEST(PushQueueTest, OneRequestForManyConnectionsIsSharedNotCopied) {
  PushQueue queue;
  NamedTarget a("a"), b("b");
  PushRequestPtr push = Reason("x");
  queue.Enqueue(&a, push);
  queue.Enqueue(&b, push);
  EXPECT_EQ(queue.TryDequeue()->request, push);
  EXPECT_EQ(queue.TryDequeue()->request, push);
  EXPECT_EQ(push->TotalReasons(), 1) << "merging never changes a shared request";
}

TEST(PushQueueTest, MarkDoneWithNothingNewLeavesTheConnectionIdle) {
  PushQueue queue;
  NamedTarget a("a");
  queue.Enqueue(&a, Reason("x"));
  ASSERT_TRUE(queue.TryDequeue().has_value());
  queue.DeliveryFinished(&a);
  EXPECT_TRUE(queue.MarkDone(&a));
  EXPECT_FALSE(queue.MarkDone(&a)) << "not processing any more";
  EXPECT_EQ(queue.Pending(), 0u);
  EXPECT_EQ(queue.Processing(), 0u);
}

TEST(PushQueueTest, RemoveForgetsPendingAndProcessing) {
  PushQueue queue;
  NamedTarget a("a"), b("b");
  queue.Enqueue(&a, Reason("x"));
  queue.Enqueue(&b, Reason("x"));
  EXPECT_FALSE(queue.Remove(&b));
  auto item = queue.TryDequeue();
  queue.DeliveryFinished(&a);
  queue.Enqueue(&a, Reason("y"));
  EXPECT_TRUE(queue.Remove(&a));
  EXPECT_FALSE(queue.MarkDone(&a));
  EXPECT_EQ(queue.Pending(), 0u);
  EXPECT_FALSE(queue.TryDequeue().has_value());
}

TEST(PushQueueTest, ShutDownWakesABlockedDequeueAndDropsLaterRequests) {
  PushQueue queue;
  std::thread waiter([&] { EXPECT_FALSE(queue.Dequeue().has_value()); });
  queue.ShutDown();
  waiter.join();
  NamedTarget a("a");
  queue.Enqueue(&a, Reason("x"));
  EXPECT_EQ(queue.Pending(), 0u);
}

TEST(PushQueueTest, ItemsQueuedBeforeShutDownCanStillBeDequeued) {
  PushQueue queue;
  NamedTarget a("a");
  queue.Enqueue(&a, Reason("x"));
  queue.ShutDown();
  EXPECT_TRUE(queue.Dequeue().has_value());
  EXPECT_FALSE(queue.Dequeue().has_value());
}

// Many producers and consumers: no connection is ever processed twice at once, and every
// enqueued reason is delivered exactly once (merging adds counts, it never loses them).
TEST(PushQueueTest, ConcurrentEnqueueDequeueKeepsTheInvariants) {
  PushQueue queue;
  constexpr int kTargets = 16;
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 2000;
  std::vector<std::unique_ptr<NamedTarget>> targets;
  for (int i = 0; i < kTargets; ++i) targets.push_back(std::make_unique<NamedTarget>(std::to_string(i)));
  std::vector<std::atomic<int>> in_progress(kTargets);
  std::vector<std::atomic<int64_t>> delivered(kTargets);
  std::atomic<bool> violated{false};
  std::atomic<int64_t> total_delivered{0};
  std::map<NamedTarget*, int> index;
  for (int i = 0; i < kTargets; ++i) index[targets[i].get()] = i;

  std::vector<std::thread> consumers;
  for (int c = 0; c < 3; ++c) {
    consumers.emplace_back([&] {
      while (auto item = queue.Dequeue()) {
        const int i = index.at(static_cast<NamedTarget*>(item->target));
        if (in_progress[i].fetch_add(1) != 0) violated = true;
        delivered[i] += item->request->TotalReasons();
        total_delivered += item->request->TotalReasons();
        in_progress[i].fetch_sub(1);
        queue.DeliveryFinished(item->target);
        queue.MarkDone(item->target);
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int n = 0; n < kPerProducer; ++n) queue.Enqueue(targets[(p * 7 + n) % kTargets].get(), Reason("x"));
    });
  }
  for (auto& t : producers) t.join();
  // Drain: wait until everything enqueued was delivered, then shut down.
  constexpr int64_t kTotal = int64_t{kProducers} * kPerProducer;
  const absl::Time give_up = absl::Now() + absl::Seconds(60);  // a bound, not a timed assertion
  while (total_delivered.load() < kTotal && absl::Now() < give_up) std::this_thread::yield();
  queue.ShutDown();
  for (auto& t : consumers) t.join();
  EXPECT_FALSE(violated.load()) << "a connection was processed by two consumers at once";
  EXPECT_EQ(total_delivered.load(), kTotal);
  int64_t sum = 0;
  for (auto& d : delivered) sum += d.load();
  EXPECT_EQ(sum, kTotal);
}

}  // namespace
}  // namespace cxds
