// TTLs and heartbeats (docs/protocol-rules.md, R9, E59-E60), on simulated time: resources with a
// TTL carry it only to clients that declare support; heartbeats renew it without bodies.
#include "common/scheduler.h"
#include "common/status_matchers.h"
#include "fakes/delta_harness.h"
#include "fakes/stream_harness.h"
#include "fakes/test_resources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using ::testing::IsEmpty;
using namespace cxds::testing;  // NOLINT

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);
constexpr absl::Duration kInterval = absl::Seconds(10);
const std::vector<std::string> kSotwTtlFeatures = {kClientFeatureResourceTtl, kClientFeatureResourceInSotw};

ResourcePtr TtlEndpoints(const std::string& name, uint32_t port, absl::Duration ttl) {
  envoy::config::endpoint::v3::ClusterLoadAssignment cla;
  cla.set_cluster_name(name);
  cla.add_endpoints()
      ->add_lb_endpoints()
      ->mutable_endpoint()
      ->mutable_address()
      ->mutable_socket_address()
      ->set_port_value(port);
  auto resource = Resource::FromMessage(cla, ttl);
  EXPECT_TRUE(resource.ok());
  return *resource;
}

envoy::service::discovery::v3::Resource Unwrap(const google::protobuf::Any& any) {
  envoy::service::discovery::v3::Resource wrapper;
  EXPECT_EQ(any.type_url(), kResourceWrapperType);
  EXPECT_TRUE(any.UnpackTo(&wrapper));
  return wrapper;
}

class TtlTest : public ::testing::Test {
 protected:
  TtlTest() : cache_(SnapshotCache::Options{ConsistencyPolicy::kNone, nullptr, nullptr}) {}
  void SetUp() override {
    ASSERT_OK(cache_.SetSnapshot(
        "node-a", MustSnapshot("1", {TtlEndpoints("ttl", 1, absl::Seconds(30)), Endpoints("plain", {2})})));
  }
  SimulatedScheduler scheduler_;
  SnapshotCache cache_;
};

// E59: in SotW, only TTL'd resources are wrapped in a discovery Resource with their
// TTL, and only for clients declaring both features; others get the plain resource.
TEST_F(TtlTest, SotwWrapsOnlyTtlResourcesForCapableClients) {
  StreamHarness capable(cache_, "", nullptr, "node-a", 1, {nullptr, kInterval, kSotwTtlFeatures});
  capable.Send(Request(kEds, {"ttl", "plain"}));
  auto r = capable.Take();
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].resources_size(), 2);
  EXPECT_EQ(r[0].resources(0).type_url(), kEndpointType) << "plain is not wrapped";
  envoy::service::discovery::v3::Resource wrapped = Unwrap(r[0].resources(1));
  EXPECT_EQ(wrapped.name(), "ttl");
  EXPECT_EQ(wrapped.ttl().seconds(), 30);
  EXPECT_TRUE(wrapped.has_resource());

  StreamHarness only_ttl_feature(cache_, "", nullptr, "node-a", 2, {nullptr, kInterval, {kClientFeatureResourceTtl}});
  only_ttl_feature.Send(Request(kEds, {"ttl"}));
  auto plain = only_ttl_feature.Take();
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].resources(0).type_url(), kEndpointType) << "no resource-in-sotw support: not wrapped";
}

// R9: every interval a capable SotW client is sent a heartbeat: the TTL'd resources it holds,
// without bodies, at the version it holds; plain resources are not in it.
TEST_F(TtlTest, SotwHeartbeatRenewsTtlWithoutBodies) {
  StreamHarness h(cache_, "", nullptr, "node-a", 1, {&scheduler_, kInterval, kSotwTtlFeatures});
  h.Send(Request(kEds, {"ttl", "plain"}));
  auto r = h.Take();
  h.Send(Ack(r[0], {"ttl", "plain"}));
  scheduler_.AdvanceBy(kInterval - absl::Milliseconds(1));
  EXPECT_THAT(h.Take(), IsEmpty());
  scheduler_.AdvanceBy(absl::Milliseconds(1));
  auto beat = h.Take();
  ASSERT_EQ(beat.size(), 1u);
  EXPECT_EQ(beat[0].version_info(), "1");
  ASSERT_EQ(beat[0].resources_size(), 1);
  envoy::service::discovery::v3::Resource wrapper = Unwrap(beat[0].resources(0));
  EXPECT_EQ(wrapper.name(), "ttl");
  EXPECT_FALSE(wrapper.has_resource()) << "a heartbeat carries no body";
  EXPECT_EQ(wrapper.ttl().seconds(), 30);
  h.Send(Ack(beat[0], {"ttl", "plain"}));
  scheduler_.AdvanceBy(kInterval);
  EXPECT_EQ(h.Take().size(), 1u) << "and again next interval";
}

// A client without TTL support gets no heartbeats.
TEST_F(TtlTest, NoHeartbeatsWithoutSupport) {
  StreamHarness h(cache_, "", nullptr, "node-a", 1, {&scheduler_, kInterval, {}});
  h.Send(Request(kEds, {"ttl"}));
  h.Take();
  scheduler_.AdvanceBy(kInterval * 3);
  EXPECT_THAT(h.Take(), IsEmpty());
}

// R9 (delta): heartbeats are Resources with name, version and TTL and no body.
TEST_F(TtlTest, DeltaHeartbeatRenewsTtl) {
  DeltaHarness h(cache_, "node-a", 1, {kClientFeatureResourceTtl}, &scheduler_, kInterval);
  h.Send(DeltaRequest(kEds, {"ttl", "plain"}));
  h.Settle();
  scheduler_.AdvanceBy(kInterval);
  auto beat = h.Take();
  ASSERT_EQ(beat.size(), 1u);
  ASSERT_EQ(beat[0].resources_size(), 1);
  EXPECT_EQ(beat[0].resources(0).name(), "ttl");
  EXPECT_FALSE(beat[0].resources(0).has_resource());
  EXPECT_EQ(beat[0].resources(0).ttl().seconds(), 30);
  EXPECT_EQ(beat[0].resources(0).version(), cache_.GetSnapshot("node-a").value()->Find(kEds, "ttl")->content_version());
}

// E60: a heartbeat tick before any snapshot does nothing and breaks nothing; the first
// snapshot then answers normally.
TEST_F(TtlTest, HeartbeatBeforeAnySnapshotIsHarmless) {
  DeltaHarness h(cache_, "other-node", 1, {kClientFeatureResourceTtl}, &scheduler_, kInterval);
  h.Send(DeltaRequest(kEds, {"ttl"}));
  scheduler_.AdvanceBy(kInterval * 2);
  EXPECT_THAT(h.Take(), IsEmpty());
  ASSERT_OK(cache_.SetSnapshot("other-node", MustSnapshot("1", {TtlEndpoints("ttl", 1, absl::Seconds(30))})));
  EXPECT_EQ(h.Take().size(), 1u);
}

}  // namespace
}  // namespace cxds
