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

// Drives one proxy through a whole push of `request`: queued, sent one EDS response, written,
// ACKed (nonce unique per change and proxy).
void DeliverAndAck(ConvergenceTracker& tracker, const PushRequest& request, const PushTargetInfo& target,
                   absl::Time at) {
  const std::string nonce = std::to_string(*request.change_ids.begin()) + "/" + std::to_string(target.stream_id);
  tracker.OnQueued(target, request, at);
  tracker.OnDequeued(target, request, at);
  tracker.OnSent(target, request, kEds, "v", nonce, at);
  tracker.OnPushDone(target, request, 1, at + absl::Milliseconds(1));
  tracker.OnFeedback(target, request, kEds, nonce, /*accepted=*/true, "", at + absl::Milliseconds(2));
}

PushRequest ChangeRequest(uint64_t id) {
  PushRequest request;
  request.change_ids.insert(id);
  return request;
}

// The per-proxy records are capped in total, across changes: the oldest change's detail goes
// first, and its summary still counts every proxy it reached.
TEST(ConvergenceTrackerCapTest, ProxyRecordsAreCappedAcrossChangesAndSummariesStayRight) {
  ConvergenceTracker tracker(ConvergenceTracker::Limits{.max_changes = 10, .max_proxy_records = 50});
  const absl::Time t0 = absl::FromUnixMillis(1'000'000);
  for (uint64_t id = 1; id <= 5; ++id) {
    const PushRequest request = ChangeRequest(id);
    tracker.OnReceived(request, t0);
    for (int64_t stream = 1; stream <= 20; ++stream) {
      DeliverAndAck(tracker, request, PushTargetInfo{stream, "node-" + std::to_string(stream)},
                    t0 + absl::Milliseconds(10 * static_cast<int64_t>(id)));
    }
    EXPECT_LE(tracker.stats().proxy_records, 50u) << "after change " << id;
  }
  const ConvergenceTracker::Stats stats = tracker.stats();
  EXPECT_LE(stats.proxy_records, 50u);
  EXPECT_GE(stats.details_dropped, 3u);  // 100 records made, at most 50 kept
  for (uint64_t id = 1; id <= 5; ++id) {
    std::optional<ChangeSummary> summary = tracker.Summarize(id);
    ASSERT_TRUE(summary.has_value()) << id;
    EXPECT_EQ(summary->proxies, 20) << id;
    EXPECT_EQ(summary->responses, 20) << id;
    EXPECT_EQ(summary->proxies_written, 20) << id;
    EXPECT_EQ(summary->proxies_acked, 20) << id;
    EXPECT_EQ(summary->proxies_nacked, 0) << id;
    EXPECT_EQ(summary->first_sent, t0 + absl::Milliseconds(10 * static_cast<int64_t>(id))) << id;
    EXPECT_EQ(summary->last_answered, t0 + absl::Milliseconds(10 * static_cast<int64_t>(id) + 2)) << id;
  }
  // The oldest changes lost their detail and say so; the newest keeps it.
  std::optional<ChangeStages> oldest = tracker.Get(1);
  ASSERT_TRUE(oldest.has_value());
  EXPECT_TRUE(oldest->proxies.empty());
  EXPECT_TRUE(oldest->detail_truncated);
  EXPECT_TRUE(tracker.Summarize(1)->detail_truncated);
  std::optional<ChangeStages> newest = tracker.Get(5);
  ASSERT_TRUE(newest.has_value());
  EXPECT_EQ(newest->proxies.size(), 20u);
  EXPECT_FALSE(newest->detail_truncated);
}

// Records grow as responses are sent; their estimated bytes are capped too (the soak of issue
// 11 filled a 50,000-record cap with about 100 MB). Long node ids and five types per proxy:
// the byte cap binds long before the record cap, and summaries still count everything.
TEST(ConvergenceTrackerCapTest, DetailBytesAreCappedAsRecordsGrow) {
  constexpr size_t kCap = 64 * 1024;
  ConvergenceTracker tracker(
      ConvergenceTracker::Limits{.max_changes = 100, .max_proxy_records = 1'000'000, .max_detail_bytes = kCap});
  const absl::Time t0 = absl::FromUnixMillis(1'000'000);
  const std::string long_node(200, 'n');
  for (uint64_t id = 1; id <= 40; ++id) {
    const PushRequest request = ChangeRequest(id);
    tracker.OnReceived(request, t0);
    for (int64_t stream = 1; stream <= 8; ++stream) {  // a change's detail is well under the cap
      const PushTargetInfo target{stream, long_node + std::to_string(stream)};
      tracker.OnQueued(target, request, t0);
      for (int type = 0; type < 5; ++type) {
        const std::string nonce =
            "nonce-of-some-length-" + std::to_string(id) + "-" + std::to_string(stream) + "-" + std::to_string(type);
        tracker.OnSent(target, request, std::string(kEds) + std::to_string(type), "version-0123456789", nonce, t0);
        tracker.OnFeedback(target, request, std::string(kEds) + std::to_string(type), nonce, /*accepted=*/false,
                           std::string(300, 'e'), t0 + absl::Milliseconds(1));
      }
      tracker.OnPushDone(target, request, 5, t0);
      EXPECT_LE(tracker.stats().detail_bytes, kCap) << "change " << id << " stream " << stream;
    }
  }
  const ConvergenceTracker::Stats stats = tracker.stats();
  EXPECT_GT(stats.detail_bytes, kCap / 2) << "the cap is used, not emptied";
  EXPECT_GT(stats.details_dropped, 30u);
  EXPECT_LT(stats.proxy_records, 40u * 8u);
  for (uint64_t id : {uint64_t{1}, uint64_t{40}}) {
    std::optional<ChangeSummary> summary = tracker.Summarize(id);
    ASSERT_TRUE(summary.has_value()) << id;
    EXPECT_EQ(summary->proxies, 8) << id;
    EXPECT_EQ(summary->responses, 40) << id;
    EXPECT_EQ(summary->proxies_nacked, 8) << id;
  }
  EXPECT_TRUE(tracker.Summarize(1)->detail_truncated);
  // Forgetting every change gives every byte back.
  ConvergenceTracker small(ConvergenceTracker::Limits{.max_changes = 1, .max_detail_bytes = kCap});
  const PushRequest one = ChangeRequest(1);
  small.OnSent(PushTargetInfo{1, long_node}, one, kEds, "v", "n", t0);
  EXPECT_GT(small.stats().detail_bytes, long_node.size());
  small.OnReceived(ChangeRequest(2), t0);
  EXPECT_EQ(small.stats().detail_bytes, 0u);
}

// Events that arrive after a change's detail was dropped never count a proxy twice; they move
// the times and the response count, and are counted as untracked.
TEST(ConvergenceTrackerCapTest, LateEventsOfADroppedChangeDoNotCountAProxyTwice) {
  ConvergenceTracker tracker(ConvergenceTracker::Limits{.max_changes = 10, .max_proxy_records = 2});
  const absl::Time t0 = absl::FromUnixMillis(1'000'000);
  const PushRequest first = ChangeRequest(1);
  const PushTargetInfo a{1, "a"};
  const PushTargetInfo b{2, "b"};
  tracker.OnSent(a, first, kEds, "v", "n1", t0);
  tracker.OnSent(b, first, kEds, "v", "n2", t0);
  DeliverAndAck(tracker, ChangeRequest(2), a, t0 + absl::Milliseconds(5));  // drops change 1's detail
  ASSERT_TRUE(tracker.Get(1)->proxies.empty());

  tracker.OnPushDone(a, first, 1, t0 + absl::Milliseconds(20));
  tracker.OnFeedback(a, first, kEds, "n1", true, "", t0 + absl::Milliseconds(30));
  tracker.OnSent(a, first, kEds, "v", "n3", t0 + absl::Milliseconds(40));
  std::optional<ChangeSummary> summary = tracker.Summarize(1);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->proxies, 2);    // as at the drop: never a third from a new record
  EXPECT_EQ(summary->responses, 3);  // the late response counted
  EXPECT_EQ(summary->last_written, t0 + absl::Milliseconds(20));
  EXPECT_EQ(summary->last_answered, t0 + absl::Milliseconds(30));
  EXPECT_EQ(summary->untracked_events, 3u);
  EXPECT_TRUE(summary->detail_truncated);
  EXPECT_TRUE(tracker.Get(1)->proxies.empty());
}

// One change reaching more proxies than the cap keeps records up to the cap and counts the
// rest as untracked events; memory does not follow the proxy count.
TEST(ConvergenceTrackerCapTest, AChangeLargerThanTheCapKeepsRecordsUpToIt) {
  ConvergenceTracker tracker(ConvergenceTracker::Limits{.max_changes = 10, .max_proxy_records = 5});
  const absl::Time t0 = absl::FromUnixMillis(1'000'000);
  const PushRequest request = ChangeRequest(1);
  for (int64_t stream = 1; stream <= 8; ++stream) {
    DeliverAndAck(tracker, request, PushTargetInfo{stream, "n"}, t0 + absl::Milliseconds(stream));
  }
  EXPECT_EQ(tracker.stats().proxy_records, 5u);
  std::optional<ChangeSummary> summary = tracker.Summarize(1);
  ASSERT_TRUE(summary.has_value());
  EXPECT_TRUE(summary->detail_truncated);
  EXPECT_EQ(summary->proxies, 5);
  EXPECT_EQ(summary->responses, 8);  // every response, recorded or not
  EXPECT_EQ(summary->last_written, t0 + absl::Milliseconds(8 + 1));
  EXPECT_EQ(summary->last_answered, t0 + absl::Milliseconds(8 + 2));
  EXPECT_EQ(summary->untracked_events, 3u * 5u);  // queued, dequeued, sent, done, ACK
}

// At most max_changes changes; a change id older than one forgotten does not come back (it
// would push out a newer change with a partial record).
TEST(ConvergenceTrackerCapTest, ChangesAreCappedAndAForgottenChangeStaysForgotten) {
  ConvergenceTracker tracker(ConvergenceTracker::Limits{.max_changes = 3});
  const absl::Time t0 = absl::FromUnixMillis(1'000'000);
  for (uint64_t id = 1; id <= 5; ++id) tracker.OnReceived(ChangeRequest(id), t0);
  EXPECT_EQ(tracker.RecentIds(), (std::vector<uint64_t>{3, 4, 5}));
  tracker.OnSent(PushTargetInfo{1, "a"}, ChangeRequest(2), kEds, "v", "n", t0);
  tracker.OnPushDone(PushTargetInfo{1, "a"}, ChangeRequest(1), 1, t0);
  EXPECT_EQ(tracker.RecentIds(), (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_FALSE(tracker.Summarize(2).has_value());
  EXPECT_EQ(tracker.stats().ignored_forgotten, 2u);
  EXPECT_EQ(tracker.stats().changes, 3u);
  EXPECT_EQ(tracker.stats().proxy_records, 0u);
}

TEST(ConvergenceTrackerCapTest, AChangeNamesAtMostMaxConfigsNamed) {
  ConvergenceTracker tracker(ConvergenceTracker::Limits{.max_configs_named = 20});
  PushRequest request = ChangeRequest(1);
  for (int i = 0; i < 30; ++i) request.configs.insert(ConfigKey{"ServiceEntry", "ns", "s" + std::to_string(i)});
  tracker.OnReceived(request, absl::FromUnixMillis(1'000'000));
  std::optional<ChangeStages> change = tracker.Get(1);
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->configs.size(), 20u);
  EXPECT_EQ(change->configs_total, 30u);
}

}  // namespace
}  // namespace cxds
