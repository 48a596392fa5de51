// Names a client subscribes to that its configuration does not have (issue 17): the stream
// says which, once per stream and name, and counts them, in both protocol variants, so that a
// proxyless client dialling a target nobody defines no longer waits in silence.
#include "cache/snapshot_cache.h"
#include "common/status_matchers.h"
#include "fakes/captured_log.h"
#include "fakes/delta_harness.h"
#include "fakes/stream_harness.h"
#include "fakes/test_resources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using namespace cxds::testing;  // NOLINT

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);
const std::string kLds(kListenerType);

class MissingNamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(cache_.SetSnapshot("node-a", MustSnapshot("1", {ApiListener("reviews.shop.svc.cluster.local:9080", "r"),
                                                              EdsCluster("c1"), Endpoints("c1", {80})})));
  }
  std::string Metric(const MetricsRegistry& registry, const std::string& type) const {
    const std::string text = registry.RenderPrometheus();
    const std::string key = "cxds_xds_missing_names{type=\"" + type + "\"} ";
    const size_t at = text.find(key);
    return at == std::string::npos ? "" : text.substr(at + key.size(), text.find('\n', at) - at - key.size());
  }

  SnapshotCache cache_{SnapshotCache::Options{ConsistencyPolicy::kNone, nullptr, nullptr}};
};

TEST_F(MissingNamesTest, SotwLogsAndCountsAMissingTargetOncePerStream) {
  MetricsRegistry registry;
  ServerMetrics metrics(&registry);
  StreamHarnessOptions options;
  options.metrics = &metrics;
  CapturedLog log;
  {
    StreamHarness h(cache_, "", nullptr, "node-a", 7, options);
    h.Send(Request(kLds, {"reviews:9080", "reviews.shop.svc.cluster.local:9080"}));
    std::vector<DiscoveryResponse> sent = h.Take();
    ASSERT_THAT(sent, SizeIs(1));
    EXPECT_THAT(NamesOf(sent[0]), ElementsAre("reviews.shop.svc.cluster.local:9080"));
    h.Send(Ack(sent[0], {"reviews:9080", "reviews.shop.svc.cluster.local:9080"}));
    // A new version computes the response again: the name is still missing, and not said again.
    ASSERT_OK(cache_.SetSnapshot("node-a", MustSnapshot("2", {ApiListener("reviews.shop.svc.cluster.local:9080", "r2"),
                                                              EdsCluster("c1"), Endpoints("c1", {80})})));
    sent = h.Take();
    ASSERT_THAT(sent, SizeIs(1));
    h.Send(Ack(sent[0], {"reviews:9080", "reviews.shop.svc.cluster.local:9080"}));
  }
  const std::vector<std::string> missing = log.LinesWith("MISSING");
  ASSERT_THAT(missing, SizeIs(1));
  EXPECT_THAT(missing[0], HasSubstr("MISSING stream=7 node=node-a type=" + kLds +
                                    " name=reviews:9080: subscribed, but not in the configuration served (a host "
                                    "without a domain: a short name?)"));
  EXPECT_THAT(missing[0], HasSubstr("[info]"));
  EXPECT_EQ(Metric(registry, "lds"), "1");
}

TEST_F(MissingNamesTest, DeltaLogsAMissingClusterAndTellsTheClientItDoesNotExist) {
  CapturedLog log;
  {
    DeltaHarness h(cache_, "node-a", 3);
    h.Send(DeltaRequest(kCds, {"c1", "outbound|80||nosuch.example.com"}));
    std::vector<DeltaDiscoveryResponse> sent = h.Take();
    ASSERT_THAT(sent, SizeIs(1));
    EXPECT_THAT(sent[0].removed_resources(), ElementsAre("outbound|80||nosuch.example.com"));
  }
  const std::vector<std::string> missing = log.LinesWith("MISSING");
  ASSERT_THAT(missing, SizeIs(1));
  EXPECT_THAT(missing[0], HasSubstr("stream=3 node=node-a type=" + kCds + " name=outbound|80||nosuch.example.com:"));
  EXPECT_THAT(missing[0], ::testing::Not(HasSubstr("short name"))) << "clusters get no listener hint";
}

// Endpoint and route names come from clusters and listeners: a proxy may still ask for one a
// moment after it went, so these are not said at info.
TEST_F(MissingNamesTest, DerivedTypesAreNotLoggedAtInfo) {
  CapturedLog log;
  {
    StreamHarness h(cache_, "", nullptr, "node-a", 1);
    h.Send(Request(kEds, {"c1", "gone"}));
    ASSERT_THAT(h.Take(), SizeIs(1));
  }
  EXPECT_THAT(log.LinesWith("MISSING"), IsEmpty());
}

// A hostile client naming endless missing resources gets at most kMaxMissingNamesNoted lines,
// then one saying that no more are logged.
TEST_F(MissingNamesTest, MissingNamesLoggedPerStreamAreBounded) {
  CapturedLog log;
  {
    StreamHarness h(cache_, "", nullptr, "node-a", 1);
    std::vector<std::string> names;
    for (int i = 0; i < 100; ++i) names.push_back("nosuch-" + std::to_string(i) + ".example.com:80");
    h.Send(Request(kLds, names));
    h.Take();
  }
  const std::vector<std::string> missing = log.LinesWith("MISSING");
  ASSERT_THAT(missing, SizeIs(StreamCore::kMaxMissingNamesNoted + 1));
  EXPECT_THAT(missing.back(), HasSubstr("more names than 32 are missing; no more are logged"));
}

}  // namespace
}  // namespace cxds
