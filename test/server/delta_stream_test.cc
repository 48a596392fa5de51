// One test per Delta rule (R3.2, R7.3, R10.1-R10.8) and per Delta case (E46-E57) of
// docs/protocol-rules.md, on a DeltaStream driven through a fake transport with a client that
// keeps its state as the protocol describes.
#include "server/delta_stream.h"

#include "common/status_matchers.h"
#include "fakes/delta_harness.h"
#include "fakes/test_resources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/convergence_tracker.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using namespace cxds::testing;  // NOLINT

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);

std::vector<std::string> Names(const DeltaDiscoveryResponse& response) {
  std::vector<std::string> names;
  for (const auto& resource : response.resources()) names.push_back(resource.name());
  return names;
}
std::vector<std::string> Removed(const DeltaDiscoveryResponse& response) {
  return {response.removed_resources().begin(), response.removed_resources().end()};
}
std::vector<std::string> HeldNames(const HeldState& held) {
  std::vector<std::string> names;
  for (const auto& [name, resource] : held) names.push_back(name);
  return names;
}

class DeltaStreamTest : public ::testing::Test {
 protected:
  DeltaStreamTest() : cache_(SnapshotCache::Options{ConsistencyPolicy::kNone, nullptr, nullptr}) {}
  void Set(std::vector<ResourcePtr> resources, const std::string& version) {
    ASSERT_OK(cache_.SetSnapshot("node-a", MustSnapshot(version, std::move(resources))));
  }
  SnapshotCache cache_;
};

// E46 / R10.4: the initial legacy wildcard (both lists empty) gets every cluster.
TEST_F(DeltaStreamTest, LegacyWildcardInitialRequestGetsEverything) {
  Set({EdsCluster("a"), EdsCluster("b")}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kCds, {}));
  auto r = h.Take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_THAT(Names(r[0]), ElementsAre("a", "b"));
  EXPECT_EQ(r[0].system_version_info(), "1");  // R10.7
}

// E46: with no clusters, the wildcard request is still answered (Envoy initialises).
TEST_F(DeltaStreamTest, EmptyWildcardIsStillAnswered) {
  Set({Secret("s")}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kCds, {}));
  auto r = h.Take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].resources_size(), 0);
  EXPECT_EQ(r[0].removed_resources_size(), 0);
}

// R10.6: per-resource versions are content hashes; a new snapshot version with identical
// content sends nothing (E31).
TEST_F(DeltaStreamTest, VersionsAreContentHashesAndIdenticalContentSendsNothing) {
  auto a = EdsCluster("a");
  Set({a}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kCds, {}));
  auto r = h.Take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].resources(0).version(), a->content_version());
  h.Ack(r[0]);
  Set({EdsCluster("a")}, "2");  // new objects, same content
  EXPECT_THAT(h.Take(), IsEmpty());
}

// E47 / R7.3: a resource deleted during the session is listed in removed_resources.
TEST_F(DeltaStreamTest, DeletedResourceIsListedAsRemoved) {
  Set({EdsCluster("a"), EdsCluster("b")}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kCds, {}));
  h.Settle();
  Set({EdsCluster("a")}, "2");
  auto r = h.Take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_THAT(Names(r[0]), IsEmpty());
  EXPECT_THAT(Removed(r[0]), ElementsAre("b"));
  EXPECT_THAT(HeldNames(h.held(kCds)), ElementsAre("a"));
}

// E48 / R10.5: reconnecting with initial_resource_versions: unchanged a is not sent,
// changed b and new d are, deleted c is removed.
TEST_F(DeltaStreamTest, ReconnectSendsOnlyWhatChanged) {
  auto a = EdsCluster("a");
  Set({a, EdsCluster("b"), EdsCluster("c")}, "1");
  std::map<std::string, std::string> held;
  {
    DeltaHarness first(cache_);
    first.Send(DeltaRequest(kCds, {}));
    first.Settle();
    held = first.HeldVersions(kCds);
  }
  Set({a, EdsCluster("b", "", 9), EdsCluster("d")}, "2");
  DeltaHarness second(cache_, "node-a", 2);
  second.Send(DeltaRequest(kCds, {}, {}, "", held));
  auto r = second.Take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_THAT(Names(r[0]), ElementsAre("b", "d"));
  EXPECT_THAT(Removed(r[0]), ElementsAre("c"));
}

// E49 / R10.4: a wildcard reconnect (subscribe empty, initial versions set) is a
// wildcard; the keys of initial_resource_versions are not explicit subscriptions.
TEST_F(DeltaStreamTest, WildcardReconnectKeysAreNotSubscriptions) {
  Set({EdsCluster("a"), EdsCluster("b")}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kCds, {}, {}, "", {{"a", EdsCluster("a")->content_version()}}));
  auto r = h.Take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_THAT(Names(r[0]), ElementsAre("b")) << "a is held at its current version";
  h.Ack(r[0], {}, {"*"});  // leave the wildcard: nothing was named, so everything goes
  auto gone = h.Take();
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_THAT(Removed(gone[0]), UnorderedElementsAre("a", "b"));
}

// E50 / R10.4: legacy wildcard, then subscribe a (still wildcard), then unsubscribe
// "*": only a remains.
TEST_F(DeltaStreamTest, LegacyWildcardSurvivesNamesUntilStarIsUnsubscribed) {
  Set({EdsCluster("a"), EdsCluster("b")}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kCds, {}));
  auto r1 = h.Take();
  h.Ack(r1[0], {"a"});
  auto r2 = h.Take();
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_THAT(Names(r2[0]), ElementsAre("a")) << "a subscribed by name is sent again (R10.2)";
  Set({EdsCluster("a"), EdsCluster("b"), EdsCluster("c")}, "2");
  auto r3 = h.Take();
  ASSERT_EQ(r3.size(), 1u);
  EXPECT_THAT(Names(r3[0]), ElementsAre("c")) << "still wildcard";
  h.Ack(r3[0], {}, {"*"});
  auto r4 = h.Take();
  ASSERT_EQ(r4.size(), 1u);
  EXPECT_THAT(Removed(r4[0]), ElementsAre("b", "c"));
  EXPECT_THAT(HeldNames(h.held(kCds)), ElementsAre("a"));
}

// E51 / R10.3: with "*" and an explicit name, unsubscribing the name is answered: the
// resource if the wildcard covers it, its removal if it does not exist.
TEST_F(DeltaStreamTest, WildcardPlusExplicitUnsubscribeIsAnswered) {
  Set({EdsCluster("a")}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kCds, {"*", "a", "ghost"}));
  auto r1 = h.Take();
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_THAT(Names(r1[0]), ElementsAre("a"));
  EXPECT_THAT(Removed(r1[0]), ElementsAre("ghost"));
  h.Ack(r1[0], {}, {"a"});
  auto r2 = h.Take();
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_THAT(Names(r2[0]), ElementsAre("a"));
  h.Ack(r2[0], {}, {"ghost"});  // still wildcard; ghost does not exist: its removal
  auto r3 = h.Take();
  ASSERT_EQ(r3.size(), 1u);
  EXPECT_THAT(Names(r3[0]), IsEmpty());
  EXPECT_THAT(Removed(r3[0]), ElementsAre("ghost"));
}

// E52 / R10.3: unsubscribing a name that is not subscribed is ignored quietly.
TEST_F(DeltaStreamTest, UnsubscribingUnknownNameIsIgnored) {
  Set({EdsCluster("a"), Endpoints("a", {1})}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kEds, {"a"}));
  auto r = h.Take();
  h.Ack(r[0], {}, {"never-subscribed"});
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_FALSE(h.transport().finished.has_value());
  EXPECT_TRUE(h.ledger().GetStream(1)->types[0].synced());
}

// E53 / R7.3: a subscribed name that does not exist is reported removed, once; it is
// sent as soon as it appears.
TEST_F(DeltaStreamTest, MissingSubscribedNameIsReportedThenSentWhenItAppears) {
  Set({EdsCluster("a"), Endpoints("a", {1})}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kEds, {"a", "later"}));
  auto r1 = h.Take();
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_THAT(Names(r1[0]), ElementsAre("a"));
  EXPECT_THAT(Removed(r1[0]), ElementsAre("later"));
  h.Ack(r1[0]);
  Set({EdsCluster("a"), Endpoints("a", {2})}, "2");
  auto r2 = h.Take();
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_THAT(Removed(r2[0]), IsEmpty()) << "reported once";
  h.Ack(r2[0]);
  Set({EdsCluster("a"), Endpoints("a", {2}), Endpoints("later", {3})}, "3");
  auto r3 = h.Take();
  ASSERT_EQ(r3.size(), 1u);
  EXPECT_THAT(Names(r3[0]), ElementsAre("later"));
}

// E54 / R10.2: subscribing to a name the client should already hold sends it anyway.
TEST_F(DeltaStreamTest, SubscribeAlwaysSendsEvenIfHeld) {
  Set({EdsCluster("a"), Endpoints("a", {1})}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kEds, {"a"}));
  auto r1 = h.Take();
  h.Ack(r1[0], {"a"});  // re-subscribe without unsubscribing (client dropped it)
  auto r2 = h.Take();
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_THAT(Names(r2[0]), ElementsAre("a"));
}

// E55 / R3.2: a request with a stale nonce still applies its subscription change.
TEST_F(DeltaStreamTest, StaleNonceStillAppliesSubscriptionChanges) {
  Set({EdsCluster("a"), Endpoints("a", {1}), Endpoints("x", {5})}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kEds, {"a"}));
  auto r1 = h.Take();
  Set({EdsCluster("a"), Endpoints("a", {2}), Endpoints("x", {5})}, "2");
  auto r2 = h.Take();
  ASSERT_EQ(r2.size(), 1u);
  h.Ack(r1[0], {"x"});  // crosses r2: stale nonce, but the subscription must not be lost
  auto r3 = h.Take();
  ASSERT_EQ(r3.size(), 1u);
  EXPECT_THAT(Names(r3[0]), ElementsAre("x"));
}

// E56 / R10.8: a NACK is recorded, causes no resend, and its subscription changes
// still apply.
TEST_F(DeltaStreamTest, NackIsRecordedWithoutResendAndAppliesChanges) {
  Set({EdsCluster("a"), Endpoints("a", {1}), Endpoints("b", {2})}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kEds, {"a"}));
  auto r1 = h.Take();
  h.Nack(r1[0], "rejected a");
  EXPECT_THAT(h.Take(), IsEmpty()) << "no resend of the rejected content";
  auto status = h.ledger().GetStream(1)->types[0];
  ASSERT_TRUE(status.last_nack.has_value());
  EXPECT_EQ(status.last_nack->error, "rejected a");
  DeltaDiscoveryRequest nack_with_change = DeltaRequest(kEds, {"b"}, {}, r1[0].nonce());
  nack_with_change.mutable_error_detail()->set_message("still rejected");
  h.Send(nack_with_change);
  auto r2 = h.Take();
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_THAT(Names(r2[0]), ElementsAre("b"));
}

// "Sent" is not "accepted", and an ACK is an ACK even when late: a client that ACKs a response
// after the next response of its type was already sent (a saturated server reads it late) is
// still reported as having accepted that change.
TEST_F(DeltaStreamTest, LateAckOfASupersededResponseIsStillReportedForItsChange) {
  Set({EdsCluster("a"), Endpoints("a", {1})}, "1");
  ConvergenceTracker tracker{16};
  DeltaHarness h(cache_, "node-a", 1, {}, nullptr, absl::ZeroDuration(), &tracker);
  h.Send(DeltaRequest(kEds, {"a"}));
  h.Settle();
  Set({EdsCluster("a"), Endpoints("a", {2})}, "2");
  auto r2 = h.Take();
  Set({EdsCluster("a"), Endpoints("a", {3})}, "3");
  auto r3 = h.Take();
  ASSERT_EQ(r2.size(), 1u);
  ASSERT_EQ(r3.size(), 1u);
  h.Ack(r2[0]);  // after r3 went out
  h.Ack(r3[0]);
  EXPECT_THAT(h.Take(), IsEmpty());
  std::vector<uint64_t> ids = tracker.RecentIds();
  std::sort(ids.begin(), ids.end());
  ASSERT_GE(ids.size(), 2u);
  for (uint64_t id : {ids[ids.size() - 2], ids[ids.size() - 1]}) {
    std::optional<ChangeSummary> summary = tracker.Summarize(id);
    ASSERT_TRUE(summary.has_value()) << id;
    EXPECT_EQ(summary->proxies, 1) << id;
    EXPECT_EQ(summary->proxies_acked, 1) << "change " << id;
    EXPECT_EQ(summary->proxies_nacked, 0) << id;
  }
}

// E57: a CDS response is followed by EDS for its clusters, even when the endpoints
// did not change (Envoy keeps the clusters warming otherwise).
TEST_F(DeltaStreamTest, CdsResponseIsFollowedByEds) {
  Set({EdsCluster("a"), Endpoints("a", {1})}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kEds, {"a"}));
  h.Send(DeltaRequest(kCds, {}));
  h.Settle();
  Set({EdsCluster("a", "", 7), Endpoints("a", {1})}, "2");  // cluster changed, endpoints not
  auto r = h.Take();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].type_url(), kCds);
  EXPECT_EQ(r[1].type_url(), kEds);
  EXPECT_THAT(Names(r[1]), ElementsAre("a"));
}

// A round, as in SotW: the CDS response and the EDS that follows it are written back to back,
// the first saying that one more follows (gRPC's buffer hint), so both leave in one TCP write.
TEST_F(DeltaStreamTest, ARoundIsWrittenWithAllButItsLastHinted) {
  Set({EdsCluster("a"), Endpoints("a", {1})}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kEds, {"a"}));
  h.Send(DeltaRequest(kCds, {}));
  h.Settle();
  const size_t before = h.transport().writes.size();
  Set({EdsCluster("a", "", 7), Endpoints("a", {2})}, "2");
  ASSERT_EQ(h.Take().size(), 2u);
  std::vector<bool> hints(h.transport().more_follows_flags.begin() + before, h.transport().more_follows_flags.end());
  EXPECT_THAT(hints, ElementsAre(true, false));
}

// R10.1 / R10.3: an unsubscribe-only request needs no reply; the client drops the resource.
TEST_F(DeltaStreamTest, UnsubscribeOnlyNeedsNoReply) {
  Set({EdsCluster("a"), Endpoints("a", {1}), Endpoints("b", {2})}, "1");
  DeltaHarness h(cache_);
  h.Send(DeltaRequest(kEds, {"a", "b"}));
  auto r1 = h.Take();
  h.Ack(r1[0], {}, {"b"});
  EXPECT_THAT(h.Take(), IsEmpty());
  Set({EdsCluster("a"), Endpoints("a", {1}), Endpoints("b", {3})}, "2");
  EXPECT_THAT(h.Take(), IsEmpty()) << "b is no longer wanted";
}

// Truly incremental: changing one of many resources serializes one resource and sends one
// resource to each of N subscribers, whatever the number of unchanged resources.
TEST_F(DeltaStreamTest, OneChangeCostsOneResourcePerSubscriber) {
  std::vector<ResourcePtr> clusters;
  for (int i = 0; i < 200; ++i) clusters.push_back(EdsCluster("c" + std::to_string(i)));
  Set(clusters, "1");
  std::vector<std::unique_ptr<DeltaHarness>> clients;
  for (int i = 0; i < 10; ++i) {
    clients.push_back(std::make_unique<DeltaHarness>(cache_, "node-a", i + 1));
    clients.back()->Send(DeltaRequest(kCds, {}));
    clients.back()->Settle();
  }
  const uint64_t serialized_before = ResourceSerializationCount();
  std::vector<size_t> bytes_before;
  for (auto& client : clients) bytes_before.push_back(client->transport().resource_bytes);
  auto changed = EdsCluster("c7", "", 42);
  clusters[7] = changed;
  Set(clusters, "2");
  EXPECT_EQ(ResourceSerializationCount() - serialized_before, 1u) << "only the changed resource";
  for (size_t i = 0; i < clients.size(); ++i) {
    auto r = clients[i]->Take();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_THAT(Names(r[0]), ElementsAre("c7"));
    EXPECT_EQ(clients[i]->transport().resource_bytes - bytes_before[i], changed->serialized().size());
  }
}

// R9 (delta): resources carry their TTL only to clients that declare TTL support.
TEST_F(DeltaStreamTest, TtlIsSentOnlyToClientsThatSupportIt) {
  envoy::config::cluster::v3::Cluster cluster;
  cluster.set_name("ttl-cluster");
  ASSERT_OK_AND_ASSIGN(ResourcePtr with_ttl, Resource::FromMessage(cluster, absl::Seconds(30)));
  Set({with_ttl}, "1");
  DeltaHarness plain(cache_, "node-a", 1);
  plain.Send(DeltaRequest(kCds, {}));
  auto r1 = plain.Take();
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_FALSE(r1[0].resources(0).has_ttl());
  DeltaHarness capable(cache_, "node-a", 2, {kClientFeatureResourceTtl});
  capable.Send(DeltaRequest(kCds, {}));
  auto r2 = capable.Take();
  ASSERT_EQ(r2.size(), 1u);
  ASSERT_TRUE(r2[0].resources(0).has_ttl());
  EXPECT_EQ(r2[0].resources(0).ttl().seconds(), 30);
}

}  // namespace
}  // namespace cxds
