// The send timeout (issue 11, stalls), on the fake transport and simulated time: a stream whose
// response write never completes holds its push slot only until the timeout; then it is ended
// with DEADLINE_EXCEEDED, cut (its write is not waited for), and the next stream's push is
// delivered at once. A write that completes in time is never cut.
#include "cache/snapshot_cache.h"
#include "common/scheduler.h"
#include "common/status_matchers.h"
#include "fakes/delta_harness.h"
#include "fakes/inline_dispatcher.h"
#include "fakes/stream_harness.h"
#include "fakes/test_resources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace cxds::testing;  // NOLINT

const std::string kCds(kClusterType);
constexpr absl::Duration kSendTimeout = absl::Seconds(20);

class SendTimeoutTest : public ::testing::Test {
 protected:
  SendTimeoutTest() : dispatcher_(InlineDispatcher(/*max_in_flight=*/1)) {}

  void Set(const std::string& version) {
    ASSERT_OK(cache_.SetSnapshot("node-a", MustSnapshot(version, {EdsCluster("c-" + version)})));
  }

  StreamHarnessOptions Options() {
    StreamHarnessOptions options;
    options.scheduler = &scheduler_;
    options.clock = &scheduler_.simulated_clock();
    options.dispatcher = dispatcher_.get();
    options.send_timeout = kSendTimeout;
    return options;
  }

  SimulatedScheduler scheduler_;
  SnapshotCache cache_{SnapshotCache::Options{ConsistencyPolicy::kNone, nullptr, nullptr}};
  std::unique_ptr<PushDispatcher> dispatcher_;
};

// One slot. A stream whose write never completes holds no slot once its push is computed
// (issue 11: no client may stall another), so the other stream's pushes go on; the stalled
// stream keeps its one push in progress until the send timeout ends it.
TEST_F(SendTimeoutTest, AStalledWriteHoldsNoSlotAndIsEndedByTheSendTimeout) {
  Set("1");
  StreamHarness stalled(cache_, "", nullptr, "node-a", 1, Options());
  StreamHarness good(cache_, "", nullptr, "node-a", 2, Options());
  stalled.Send(Request(kCds, {}));
  good.Send(Request(kCds, {}));
  ASSERT_EQ(stalled.Take().size(), 1u);
  ASSERT_EQ(good.Take().size(), 1u);

  Set("2");
  ASSERT_EQ(good.Take().size(), 1u);
  ASSERT_EQ(stalled.transport().writes.size(), 2u) << "v2 is being written to the stalled stream";
  ASSERT_TRUE(stalled.transport().write_in_flight);
  EXPECT_EQ(dispatcher_->in_flight(), 0) << "the stalled stream's write holds no slot";

  // v3 reaches the good stream at once; the stalled one gets nothing while v2 is outstanding.
  Set("3");
  std::vector<DiscoveryResponse> pushed = good.Take();
  ASSERT_EQ(pushed.size(), 1u);
  EXPECT_EQ(pushed[0].version_info(), "3");
  EXPECT_EQ(stalled.transport().writes.size(), 2u) << "one write at a time";
  scheduler_.AdvanceBy(kSendTimeout - absl::Seconds(1));
  EXPECT_FALSE(stalled.transport().finished.has_value()) << "cut before the timeout";

  scheduler_.AdvanceBy(absl::Seconds(1));
  ASSERT_TRUE(stalled.transport().aborted.has_value()) << "the stalled write must be cut, not waited for";
  EXPECT_EQ(stalled.transport().aborted->code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(stalled.transport().aborted->message()), HasSubstr("send timeout"));
  EXPECT_EQ(dispatcher_->in_flight(), 0);
  EXPECT_EQ(dispatcher_->queue().Processing(), 0u) << "the ended stream's push is over";

  // The ended stream takes no part in later pushes.
  Set("4");
  ASSERT_EQ(good.Take().size(), 1u);
  EXPECT_EQ(dispatcher_->in_flight(), 0);
  EXPECT_EQ(stalled.transport().writes.size(), 2u);
}

// The timeout runs per write: a client that reads slowly but within the timeout is never cut,
// and the timer checks the write outstanding when it fires, not the one it was armed for.
TEST_F(SendTimeoutTest, AWriteThatCompletesInTimeIsNeverCutAndTheNextWriteGetsAFullTimeout) {
  Set("1");
  StreamHarness slow(cache_, "", nullptr, "node-a", 1, Options());
  slow.Send(Request(kCds, {}));  // write 1 starts at t=0
  scheduler_.AdvanceBy(absl::Seconds(15));
  slow.CompleteWrite();
  Set("2");  // write 2 starts at t=15
  ASSERT_TRUE(slow.transport().write_in_flight);
  scheduler_.AdvanceBy(absl::Seconds(19));  // t=34: the first timer (t=20) saw write 2, 5 s old
  EXPECT_FALSE(slow.transport().finished.has_value());
  scheduler_.AdvanceBy(absl::Seconds(1));  // t=35: write 2 is 20 s old
  ASSERT_TRUE(slow.transport().finished.has_value());
  EXPECT_EQ(slow.transport().finished->code(), absl::StatusCode::kDeadlineExceeded);
}

// A stream with nothing to write has no timeout (an idle, connected proxy is fine).
TEST_F(SendTimeoutTest, AnIdleStreamIsNeverCut) {
  Set("1");
  StreamHarness idle(cache_, "", nullptr, "node-a", 1, Options());
  idle.Send(Request(kCds, {}));
  ASSERT_EQ(idle.Take().size(), 1u);
  scheduler_.AdvanceBy(absl::Hours(1));
  EXPECT_FALSE(idle.transport().finished.has_value());
  EXPECT_EQ(scheduler_.pending(), 0u) << "no timer is left armed without an outstanding write";
}

}  // namespace
}  // namespace cxds
