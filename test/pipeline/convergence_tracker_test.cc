#include "pipeline/convergence_tracker.h"

#include <memory>

#include "gtest/gtest.h"
#include "push/push_request.h"

namespace cxds {
namespace {

constexpr char kEds[] = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";

class ConvergenceTrackerTest : public ::testing::Test {
 protected:
  ConvergenceTrackerTest() {
    request_.change_ids.insert(7);
    request_.start = T(0);
  }
  static absl::Time T(int ms) { return absl::FromUnixMillis(1'000'000) + absl::Milliseconds(ms); }

  ConvergenceTracker tracker_;
  PushRequest request_;
};

// The summary a load tool sets against a raw fan-out: first write started, last proxy's last
// write completed, and who ACKed or NACKed.
TEST_F(ConvergenceTrackerTest, SummaryCoversEveryProxyTheChangeReached) {
  const PushTargetInfo a{1, "a"};
  const PushTargetInfo b{2, "b"};
  const PushTargetInfo c{3, "c"};  // dequeued, but nothing was sent to it
  for (const PushTargetInfo& target : {a, b, c}) tracker_.OnQueued(target, request_, T(1));
  tracker_.OnSent(a, request_, kEds, "v", "n1", T(2));
  tracker_.OnSent(b, request_, kEds, "v", "n2", T(5));
  tracker_.OnPushDone(a, request_, 1, T(3));
  tracker_.OnPushDone(c, request_, 0, T(4));
  tracker_.OnFeedback(a, request_, kEds, "n1", /*accepted=*/true, "", T(6));

  std::optional<ChangeSummary> summary = tracker_.Summarize(7);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->proxies, 2);  // c had nothing to send
  EXPECT_EQ(summary->responses, 2);
  EXPECT_EQ(summary->proxies_written, 1);  // b's write has not completed
  EXPECT_EQ(summary->proxies_acked, 1);
  EXPECT_EQ(summary->proxies_nacked, 0);
  EXPECT_EQ(summary->received, T(0));
  EXPECT_EQ(summary->first_sent, T(2));
  EXPECT_EQ(summary->last_written, T(3));
  EXPECT_EQ(summary->last_answered, T(6));

  tracker_.OnPushDone(b, request_, 1, T(9));
  tracker_.OnFeedback(b, request_, kEds, "n2", /*accepted=*/false, "bad", T(10));
  summary = tracker_.Summarize(7);
  EXPECT_EQ(summary->proxies_written, 2);
  EXPECT_EQ(summary->last_written, T(9));
  EXPECT_EQ(summary->proxies_nacked, 1);
  EXPECT_EQ(summary->last_answered, T(10));
}

TEST_F(ConvergenceTrackerTest, UnknownChangeHasNoSummary) { EXPECT_FALSE(tracker_.Summarize(99).has_value()); }

}  // namespace
}  // namespace cxds
