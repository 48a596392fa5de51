// A LinearCache serving EDS to SotW and Delta streams at once (behind a MuxConfigWatcher that
// takes CDS from a SnapshotCache): only streams interested in a changed name are told, and each
// is sent only the resources it lacks.
#include "cache/linear_cache.h"
#include "cache/mux_watcher.h"
#include "common/status_matchers.h"
#include "fakes/delta_harness.h"
#include "fakes/stream_harness.h"
#include "fakes/test_resources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace cxds::testing;  // NOLINT

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);

class LinearCacheStreamTest : public ::testing::Test {
 protected:
  LinearCacheStreamTest()
      : snapshots_(SnapshotCache::Options{ConsistencyPolicy::kNone, nullptr, nullptr}),
        endpoints_(kEds),
        mux_({{kEds, &endpoints_}}, &snapshots_) {}

  void SetUp() override {
    ASSERT_OK(snapshots_.SetSnapshot("node-a", MustSnapshot("c1", {EdsCluster("a"), EdsCluster("b")})));
    ASSERT_OK(endpoints_.SetResources({Endpoints("a", {1}), Endpoints("b", {2})}));
  }

  SnapshotCache snapshots_;
  LinearCache endpoints_;
  MuxConfigWatcher mux_;
};

// One endpoint change reaches the SotW and Delta clients that want it, with that resource only;
// a client that does not want it is not even notified.
TEST_F(LinearCacheStreamTest, ChangesReachOnlyInterestedStreamsWithOnlyTheChangedResource) {
  StreamHarness sotw(mux_, "", nullptr, "node-a", 1);
  sotw.Send(Request(kEds, {"a", "b"}));
  auto s1 = sotw.Take();
  ASSERT_EQ(s1.size(), 1u);
  EXPECT_THAT(NamesOf(s1[0]), ElementsAre("a", "b"));
  sotw.Send(Ack(s1[0], {"a", "b"}));

  DeltaHarness delta(mux_, "node-a", 2);
  delta.Send(DeltaRequest(kEds, {"b"}));
  delta.Settle();
  EXPECT_EQ(delta.held(kEds).size(), 1u);

  const uint64_t notified_before = endpoints_.notifications_delivered();
  ASSERT_OK(endpoints_.UpdateResource(Endpoints("a", {11})));
  EXPECT_EQ(endpoints_.notifications_delivered() - notified_before, 1u) << "only the SotW stream wants a";
  auto s2 = sotw.Take();
  ASSERT_EQ(s2.size(), 1u);
  EXPECT_THAT(NamesOf(s2[0]), ElementsAre("a")) << "per-resource versions: only what changed";
  sotw.Send(Ack(s2[0], {"a", "b"}));
  EXPECT_THAT(delta.Take(), IsEmpty());

  ASSERT_OK(endpoints_.UpdateResource(Endpoints("b", {22})));
  auto s3 = sotw.Take();
  ASSERT_EQ(s3.size(), 1u);
  EXPECT_THAT(NamesOf(s3[0]), ElementsAre("b"));
  auto d3 = delta.Take();
  ASSERT_EQ(d3.size(), 1u);
  ASSERT_EQ(d3[0].resources_size(), 1);
  EXPECT_EQ(d3[0].resources(0).name(), "b");
  EXPECT_EQ(d3[0].resources(0).version(), endpoints_.Get("b")->content_version());

  ASSERT_OK(endpoints_.DeleteResource("b"));
  auto d4 = delta.Take();
  ASSERT_EQ(d4.size(), 1u);
  EXPECT_THAT(std::vector<std::string>(d4[0].removed_resources().begin(), d4[0].removed_resources().end()),
              ElementsAre("b"));
  EXPECT_TRUE(delta.held(kEds).empty());
  EXPECT_THAT(sotw.Take(), IsEmpty()) << "SotW cannot express an EDS deletion";
}

}  // namespace
}  // namespace cxds
