// One test per State-of-the-World rule (R1.1-R8.3, C1-C5) and per SotW case (E1-E44, E61) of
// docs/protocol-rules.md, on a SotwStream driven through a fake transport.
#include "server/sotw_stream.h"

#include "common/status_matchers.h"
#include "envoy/config/route/v3/route_components.pb.h"
#include "envoy/config/route/v3/scoped_route.pb.h"
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
const std::string kLds(kListenerType);
const std::string kRds(kRouteType);
const std::string kSds(kSecretType);

// A consistent snapshot: listener l1 -> route r1 -> cluster c1 (EDS) -> CLA c1, plus c2.
SnapshotPtr BaseSnapshot(const std::string& version, uint32_t port = 8080) {
  return MustSnapshot(version, {HttpListener("l1", "r1"), Routes("r1", {"c1"}), EdsCluster("c1"), EdsCluster("c2"),
                                Endpoints("c1", {port}), Endpoints("c2", {9090})});
}

class SotwStreamTest : public ::testing::Test {
 protected:
  SotwStreamTest() : cache_(SnapshotCache::Options{ConsistencyPolicy::kNone, nullptr, nullptr}) {}
  void Set(SnapshotPtr snapshot, const std::string& key = "node-a") { ASSERT_OK(cache_.SetSnapshot(key, snapshot)); }
  // Subscribes to everything BaseSnapshot has, one type after the other.
  static void SubscribeToBase(StreamHarness& h) {
    h.Send(Request(kCds, {}));
    h.Send(Request(kEds, {"c1", "c2"}));
    h.Send(Request(kLds, {}));
    h.Send(Request(kRds, {"r1"}));
  }

  SnapshotCache cache_;
};

// R1.2 / E1: a first request without node.id ends the stream with InvalidArgument.
TEST_F(SotwStreamTest, FirstRequestWithoutNodeIsInvalidArgument) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.SendRaw(Request(kCds, {}));
  ASSERT_TRUE(h.transport().finished.has_value());
  EXPECT_EQ(h.transport().finished->code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_FALSE(cache_.GetStatus("").has_value()) << "no connection may be registered for it";
}

// R1.2 / E2: later requests may omit the node; the first one's identity is kept.
TEST_F(SotwStreamTest, LaterRequestsMayOmitNode) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kCds, {}));
  auto cds = h.Take();
  ASSERT_EQ(cds.size(), 1u);
  h.SendRaw(Request(kEds, {"c1"}));  // no node
  auto eds = h.Take();
  ASSERT_EQ(eds.size(), 1u);
  EXPECT_THAT(NamesOf(eds[0]), ElementsAre("c1"));
  EXPECT_FALSE(h.transport().finished.has_value());
}

// R1.2 decided: a later request naming another node.id ends the stream.
TEST_F(SotwStreamTest, NodeIdChangeOnStreamIsInvalidArgument) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kCds, {}));
  DiscoveryRequest other = Request(kEds, {"c1"});
  other.mutable_node()->set_id("node-b");
  h.SendRaw(other);
  ASSERT_TRUE(h.transport().finished.has_value());
  EXPECT_EQ(h.transport().finished->code(), absl::StatusCode::kInvalidArgument);
}

// E3: an ADS request without type_url ends the stream with InvalidArgument.
TEST_F(SotwStreamTest, AdsRequestWithoutTypeUrlIsInvalidArgument) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request("", {}));
  ASSERT_TRUE(h.transport().finished.has_value());
  EXPECT_EQ(h.transport().finished->code(), absl::StatusCode::kInvalidArgument);
}

// R1.1: a per-type service fills in an empty type_url and refuses another type.
TEST_F(SotwStreamTest, PerTypeServiceFillsTypeUrlAndRefusesOthers) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_, kCds);
  h.Send(Request("", {}));
  auto responses = h.Take();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].type_url(), kCds);
  h.Send(Request(kEds, {"c1"}));
  ASSERT_TRUE(h.transport().finished.has_value());
  EXPECT_EQ(h.transport().finished->code(), absl::StatusCode::kInvalidArgument);
}

// E10 / R4.2: the initial legacy-wildcard CDS request gets every cluster at once.
TEST_F(SotwStreamTest, InitialWildcardCdsGetsAllClusters) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kCds, {}));
  auto responses = h.Take();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].version_info(), "1");
  EXPECT_THAT(NamesOf(responses[0]), ElementsAre("c1", "c2"));
}

// E10 / R6.4: a wildcard CDS request is answered even when there are no clusters.
TEST_F(SotwStreamTest, InitialWildcardCdsAnsweredWhenEmpty) {
  Set(MustSnapshot("1", {Secret("s")}));
  StreamHarness h(cache_);
  h.Send(Request(kCds, {}));
  auto responses = h.Take();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].resources_size(), 0);
  EXPECT_EQ(responses[0].version_info(), "1");
}

// E11 / C4: a plain ACK is recorded and gets no response.
TEST_F(SotwStreamTest, PlainAckGetsNoResponse) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c1"}));
  auto first = h.Take();
  ASSERT_EQ(first.size(), 1u);
  h.Send(Ack(first[0], {"c1"}));
  EXPECT_THAT(h.Take(), IsEmpty());
  auto status = h.ledger().GetStream(1);
  ASSERT_TRUE(status.has_value());
  ASSERT_EQ(status->types.size(), 1u);
  EXPECT_EQ(status->types[0].acked_version, "1");
  EXPECT_TRUE(status->types[0].synced());
}

// E12 / C1 / R5.2: a NACK is recorded with the client's accepted version and never
// causes the same content to be sent again; new content is sent when it exists.
TEST_F(SotwStreamTest, NackIsRecordedAndNeverResent) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c1"}));
  auto v1 = h.Take();
  h.Send(Ack(v1[0], {"c1"}));
  Set(BaseSnapshot("2", 8081));
  auto v2 = h.Take();
  ASSERT_EQ(v2.size(), 1u);
  h.Send(Nack(v2[0], {"c1"}, "1", "bad endpoint"));
  EXPECT_THAT(h.Take(), IsEmpty()) << "a NACK must not trigger a resend";
  auto status = h.ledger().GetStream(1);
  ASSERT_TRUE(status->types[0].last_nack.has_value());
  EXPECT_EQ(status->types[0].last_nack->sent_version, "2");
  EXPECT_EQ(status->types[0].last_nack->accepted_version, "1");
  EXPECT_EQ(status->types[0].acked_version, "1") << "the NACK's version_info is not a new acceptance";
  // The same request again (the client retrying its NACK) still gets nothing.
  h.Send(Nack(v2[0], {"c1"}, "1", "bad endpoint"));
  EXPECT_THAT(h.Take(), IsEmpty());
  Set(BaseSnapshot("3", 8082));
  auto v3 = h.Take();
  ASSERT_EQ(v3.size(), 1u);
  EXPECT_EQ(v3[0].version_info(), "3");
}

// E12: a NACK of the newest response that also changes the names applies the change.
TEST_F(SotwStreamTest, NackWithNameChangeAppliesIt) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c1"}));
  auto v1 = h.Take();
  h.Send(Nack(v1[0], {"c1", "c2"}, "", "rejected"));
  auto responses = h.Take();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_THAT(NamesOf(responses[0]), ElementsAre("c2"));
}

// E13 / C3 / R3.1: a request with a stale nonce gets no response.
TEST_F(SotwStreamTest, StaleNonceIsIgnored) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c1"}));
  auto v1 = h.Take();
  Set(BaseSnapshot("2", 8081));
  auto v2 = h.Take();
  ASSERT_EQ(v2.size(), 1u);
  // The client changes its names while ACKing the old response: stale, dropped (R3.1 hazard).
  h.Send(Ack(v1[0], {"c1", "c2"}));
  EXPECT_THAT(h.Take(), IsEmpty());
  // Its ACK of the newest response carries the change and is answered.
  h.Send(Ack(v2[0], {"c1", "c2"}));
  auto added = h.Take();
  ASSERT_EQ(added.size(), 1u);
  EXPECT_THAT(NamesOf(added[0]), ElementsAre("c2"));
}

// E14 / C5 / R4.1: an ACK adding a name gets that name at the unchanged version.
TEST_F(SotwStreamTest, AckAddingNameSendsIt) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c1"}));
  auto v1 = h.Take();
  h.Send(Ack(v1[0], {"c1", "c2"}));
  auto responses = h.Take();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].version_info(), "1");
  EXPECT_THAT(NamesOf(responses[0]), ElementsAre("c2"));
}

// E15: removing a name gets no response, and re-adding it sends it again.
TEST_F(SotwStreamTest, RemovedNameIsSentAgainWhenResubscribed) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c1", "c2"}));
  auto v1 = h.Take();
  h.Send(Ack(v1[0], {"c1"}));
  EXPECT_THAT(h.Take(), IsEmpty());
  h.Send(Ack(v1[0], {"c1", "c2"}));
  auto responses = h.Take();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_THAT(NamesOf(responses[0]), ElementsAre("c2"));
}

// E16 / R4.1: an empty EDS name list unsubscribes; a later request is answered.
TEST_F(SotwStreamTest, EmptyEdsNamesUnsubscribes) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c1"}));
  auto v1 = h.Take();
  h.Send(Ack(v1[0], {}));
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_TRUE(h.ledger().GetStream(1)->types.empty()) << "the type leaves the sync status";
  Set(BaseSnapshot("2", 8081));
  EXPECT_THAT(h.Take(), IsEmpty()) << "nothing is pushed to an unsubscribed type";
  h.Send(Request(kEds, {"c1"}, "1", v1[0].nonce()));
  auto again = h.Take();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_THAT(NamesOf(again[0]), ElementsAre("c1"));
}

// E17 / C2 / R1.3: on a new stream, a nonce from the old stream is meaningless and
// the request is initial.
TEST_F(SotwStreamTest, ReconnectWithOldNonceIsInitial) {
  Set(BaseSnapshot("1"));
  std::string old_nonce;
  {
    StreamHarness first(cache_);
    first.Send(Request(kEds, {"c1"}));
    old_nonce = first.Take()[0].nonce();
  }
  StreamHarness second(cache_, "", nullptr, "node-a", /*stream_id=*/2);
  second.Send(Request(kEds, {"c1"}, "1", old_nonce));
  auto responses = second.Take();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_THAT(NamesOf(responses[0]), ElementsAre("c1"));
}

// E18 / R8.3: after a reconnect where EDS came before CDS, the next EDS request that
// looks like an ACK is still answered (Envoy's clusters would stay warming otherwise).
TEST_F(SotwStreamTest, EdsAckAfterNewCdsSubscriptionIsAnswered) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c1"}, "1", ""));
  auto eds = h.Take();
  ASSERT_EQ(eds.size(), 1u);
  h.Send(Request(kCds, {}, "1", ""));
  auto cds = h.Take();
  ASSERT_EQ(cds.size(), 1u);
  h.Send(Ack(eds[0], {"c1"}));
  auto answered = h.Take();
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_EQ(answered[0].type_url(), kEds);
  h.Send(Ack(answered[0], {"c1"}));
  EXPECT_THAT(h.Take(), IsEmpty()) << "only the first ACK after the CDS subscription is answered";
}

// E19: a type the configuration does not have keeps the ADS stream open, unanswered.
TEST_F(SotwStreamTest, UnknownTypeKeepsStreamOpen) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request("type.googleapis.com/example.Unknown", {"x"}));
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_FALSE(h.transport().finished.has_value());
  h.Send(Request(kCds, {}));
  EXPECT_EQ(h.Take().size(), 1u);
}

// E20 / R6.1: two requests for a type before the reply: one reply, for the latest.
TEST_F(SotwStreamTest, OnlyLatestRequestOfTypeIsAnswered) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kCds, {}));  // its response stays in flight
  ASSERT_TRUE(h.transport().write_in_flight);
  h.Send(Request(kEds, {"c1"}));
  h.Send(Request(kEds, {"c2"}));  // the client changed its mind (no nonce yet)
  auto responses = h.Take();
  ASSERT_EQ(responses.size(), 2u);
  EXPECT_EQ(responses[0].type_url(), kCds);
  EXPECT_EQ(responses[1].type_url(), kEds);
  EXPECT_THAT(NamesOf(responses[1]), ElementsAre("c2"));
}

// E21 / R4.2: CDS [] -> wildcard; ["*","A"] -> wildcard + A; ["A"] -> A only;
// [] -> nothing at all (not wildcard again).
TEST_F(SotwStreamTest, CdsWildcardTransitions) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kCds, {}));
  auto r1 = h.Take();
  EXPECT_THAT(NamesOf(r1[0]), ElementsAre("c1", "c2"));
  h.Send(Ack(r1[0], {"*", "c1"}));
  EXPECT_THAT(h.Take(), IsEmpty()) << "nothing new is wanted";
  h.Send(Ack(r1[0], {"c1"}));
  EXPECT_THAT(h.Take(), IsEmpty()) << "a removal needs no response";
  Set(BaseSnapshot("2", 8081));
  auto r2 = h.Take();
  std::vector<DiscoveryResponse> cds2;
  for (auto& r : r2) {
    if (r.type_url() == kCds) cds2.push_back(r);
  }
  ASSERT_EQ(cds2.size(), 1u);
  EXPECT_THAT(NamesOf(cds2[0]), ElementsAre("c1")) << "wildcard dropped: only A";
  h.Send(Ack(cds2[0], {}));
  Set(BaseSnapshot("3", 8082));
  for (auto& r : h.Take()) {
    if (r.type_url() == kCds) {
      EXPECT_EQ(r.resources_size(), 0) << "[] after names means nothing";
    }
  }
}

// E22: explicit "*" from the start stays wildcard until a request leaves it out.
TEST_F(SotwStreamTest, ExplicitWildcardFromStart) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kCds, {"*"}));
  auto r1 = h.Take();
  EXPECT_THAT(NamesOf(r1[0]), ElementsAre("c1", "c2"));
  h.Send(Ack(r1[0], {"*", "c1"}));
  EXPECT_THAT(h.Take(), IsEmpty());
  h.Send(Ack(r1[0], {}));
  EXPECT_THAT(h.Take(), IsEmpty());
  h.Send(Ack(r1[0], {"*"}));
  auto again = h.Take();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_THAT(NamesOf(again[0]), ElementsAre("c1", "c2"));
}

// E23 / R4.3: a named LDS/CDS subscription gets every subscribed resource in each
// response, even when only one changed.
TEST_F(SotwStreamTest, NamedCdsResponsesCarryFullState) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kCds, {"c1", "c2"}));
  auto r1 = h.Take();
  h.Send(Ack(r1[0], {"c1", "c2"}));
  Set(MustSnapshot("2", {HttpListener("l1", "r1"), Routes("r1", {"c1"}), EdsCluster("c1", "", 5), EdsCluster("c2"),
                         Endpoints("c1", {8080}), Endpoints("c2", {9090})}));
  auto r2 = h.Take();
  ASSERT_FALSE(r2.empty());
  EXPECT_EQ(r2[0].type_url(), kCds);
  EXPECT_THAT(NamesOf(r2[0]), ElementsAre("c1", "c2"));
}

// E24 / R7.1 / R6.4: deleting the last cluster sends an empty CDS response.
TEST_F(SotwStreamTest, LastClusterDeletedSendsEmptyCds) {
  Set(MustSnapshot("1", {StaticCluster("only")}));
  StreamHarness h(cache_);
  h.Send(Request(kCds, {}));
  auto r1 = h.Take();
  h.Send(Ack(r1[0], {}));
  Set(MustSnapshot("2", {}));
  auto r2 = h.Take();
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r2[0].type_url(), kCds);
  EXPECT_EQ(r2[0].resources_size(), 0);
}

// E25 / R7.2: a CLA deleted while subscribed gets no EDS response (SotW cannot say it).
TEST_F(SotwStreamTest, DeletedClaSendsNoEdsResponse) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c2"}));
  auto r1 = h.Take();
  h.Send(Ack(r1[0], {"c2"}));
  Set(MustSnapshot("2", {EdsCluster("c1"), Endpoints("c1", {8080})}));
  EXPECT_THAT(h.Take(), IsEmpty());
}

// E26 / R6.3: EDS for a cluster that does not exist yet is remembered and pushed as
// soon as it appears, without another request.
TEST_F(SotwStreamTest, MissingResourceIsPushedWhenItAppears) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"later"}));
  EXPECT_THAT(h.Take(), IsEmpty());
  Set(MustSnapshot("2", {EdsCluster("later"), Endpoints("later", {7070})}));
  auto r = h.Take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_THAT(NamesOf(r[0]), ElementsAre("later"));
}

// E27: a request naming fewer resources than the snapshot has is answered (no
// go-control-plane "superset" check).
TEST_F(SotwStreamTest, SubsetRequestIsAnswered) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c1"}));
  auto r = h.Take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_THAT(NamesOf(r[0]), ElementsAre("c1"));
}

// E28 / R4.1: a first EDS request with no names is not a wildcard.
TEST_F(SotwStreamTest, FirstEmptyEdsRequestIsNotWildcard) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {}));
  EXPECT_THAT(h.Take(), IsEmpty());
  Set(BaseSnapshot("2", 8081));
  EXPECT_THAT(h.Take(), IsEmpty());
}

// E29: a snapshot that changes one type's version answers only that type.
TEST_F(SotwStreamTest, OnlyTypesWhoseVersionChangedAreSent) {
  auto resources = [](uint32_t port) { return std::vector<ResourcePtr>{EdsCluster("c1"), Endpoints("c1", {port})}; };
  ASSERT_OK_AND_ASSIGN(SnapshotPtr s1, Snapshot::CreateWithTypeVersions({{kCds, "c1"}, {kEds, "e1"}}, resources(1)));
  Set(s1);
  StreamHarness h(cache_);
  h.Send(Request(kCds, {}));
  h.Send(Request(kEds, {"c1"}));
  auto first = h.Take();
  ASSERT_EQ(first.size(), 2u);
  h.Send(Ack(first[0], {}));
  h.Send(Ack(first[1], {"c1"}));
  ASSERT_OK_AND_ASSIGN(SnapshotPtr s2, Snapshot::CreateWithTypeVersions({{kCds, "c1"}, {kEds, "e2"}}, resources(2)));
  Set(s2);
  auto second = h.Take();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].type_url(), kEds);
  EXPECT_EQ(second[0].version_info(), "e2");
}

// EA2 with E29: over a cache that keeps unchanged types, a snapshot versioned as a whole whose
// only change is an endpoint answers EDS alone; every type changing answers every type.
TEST(SotwStreamKeepUnchangedTest, AWholeSnapshotVersionResendsOnlyTheChangedTypes) {
  SnapshotCache::Options options;
  options.consistency = ConsistencyPolicy::kNone;
  options.keep_unchanged_types = true;
  SnapshotCache cache(options);
  ASSERT_OK(cache.SetSnapshot("node-a", BaseSnapshot("1")));
  StreamHarness h(cache);
  h.Send(Request(kCds, {}));
  h.Send(Request(kEds, {"c1", "c2"}));
  h.Send(Request(kLds, {}));
  h.Send(Request(kRds, {"r1"}));
  auto first = h.Take();
  ASSERT_EQ(first.size(), 4u);
  h.Send(Ack(first[0], {}));
  h.Send(Ack(first[1], {"c1", "c2"}));
  h.Send(Ack(first[2], {}));
  h.Send(Ack(first[3], {"r1"}));
  ASSERT_OK(cache.SetSnapshot("node-a", BaseSnapshot("2", 8081)));
  auto second = h.Take();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].type_url(), kEds);
  EXPECT_EQ(second[0].version_info(), "2");
  h.Send(Ack(second[0], {"c1", "c2"}));
  ASSERT_OK(cache.SetSnapshot(
      "node-a", MustSnapshot("3", {HttpListener("l1", "r1", 10001), Routes("r1", {"c2"}), EdsCluster("c1", "", 2),
                                   EdsCluster("c2"), Endpoints("c1", {8082}), Endpoints("c2", {9090})})));
  auto third = h.Take();
  std::set<std::string> types;
  for (const auto& response : third) {
    EXPECT_EQ(response.version_info(), "3");
    types.insert(response.type_url());
  }
  EXPECT_EQ(types, (std::set<std::string>{kCds, kEds, kLds, kRds}));
}

// E30 / R1.3: every response on a stream has a new nonce.
TEST_F(SotwStreamTest, NoncesAreUnique) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  SubscribeToBase(h);
  std::set<std::string> nonces;
  auto responses = h.Take();
  for (int v = 2; v <= 4; ++v) {
    Set(BaseSnapshot(std::to_string(v), 8000 + v));
    for (auto& r : h.Take()) responses.push_back(r);
  }
  for (const auto& r : responses) EXPECT_TRUE(nonces.insert(r.nonce()).second) << r.nonce();
  EXPECT_EQ(nonces.size(), 16u);
}

// E33 / R1.3: staleness is judged per type: an EDS ACK with the newest EDS nonce is an
// ACK even though a CDS response went out after it.
TEST_F(SotwStreamTest, NoncesAreTrackedPerType) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c1"}));
  auto eds = h.Take();
  h.Send(Request(kLds, {}));
  ASSERT_EQ(h.Take().size(), 1u);  // a newer nonce, of another type
  h.Send(Ack(eds[0], {"c1", "c2"}));
  auto added = h.Take();
  ASSERT_EQ(added.size(), 1u) << "not stale: the name added in the ACK is served";
  EXPECT_THAT(NamesOf(added[0]), ElementsAre("c2"));
  EXPECT_EQ(h.ledger().GetStream(1)->types.size(), 2u);
}

// E40 / R8.1: one snapshot change goes out in the order CDS, EDS, LDS, RDS, SDS.
TEST_F(SotwStreamTest, AdsPushOrderIsCdsEdsLdsRdsSds) {
  auto snapshot = [](const std::string& v, int t) {
    return MustSnapshot(v, {HttpListener("l1", "r1", 10000 + t), Routes("r1", {"c1"}), EdsCluster("c1", "", t),
                            Endpoints("c1", {static_cast<uint32_t>(8000 + t)}), Secret("s1")});
  };
  Set(snapshot("1", 1));
  StreamHarness h(cache_);
  // Subscribe in reverse order.
  h.Send(Request(kSds, {"s1"}));
  h.Send(Request(kRds, {"r1"}));
  h.Send(Request(kLds, {}));
  h.Send(Request(kEds, {"c1"}));
  h.Send(Request(kCds, {}));
  for (auto& r : h.Take())
    h.Send(Ack(r, r.type_url() == kCds || r.type_url() == kLds ? std::vector<std::string>{} : NamesOf(r)));
  Set(snapshot("2", 2));
  std::vector<std::string> order;
  for (auto& r : h.Take()) order.push_back(std::string(ShortTypeName(r.type_url())));
  EXPECT_THAT(order, ElementsAre("CDS", "EDS", "LDS", "RDS", "SDS"));
}

// E40: types beyond the five follow them in type URL order, though the stream keeps its types
// ordered by length (TypeUrlMap): ScopedRouteConfiguration (longer) before VirtualHost.
TEST_F(SotwStreamTest, OtherTypesFollowInTypeUrlOrder) {
  const std::string scoped = "type.googleapis.com/envoy.config.route.v3.ScopedRouteConfiguration";
  const std::string vhost = "type.googleapis.com/envoy.config.route.v3.VirtualHost";
  ASSERT_LT(vhost.size(), scoped.size());  // what makes the map's order differ from the wire's
  auto snapshot = [](const std::string& v, int t) {
    envoy::config::route::v3::ScopedRouteConfiguration scope;
    scope.set_name("scope-1");
    scope.set_route_configuration_name(StrCat("r", t));
    envoy::config::route::v3::VirtualHost host;
    host.set_name("vhost-1");
    host.add_domains(StrCat("v", t, ".example.com"));
    return MustSnapshot(v, {MustResource(scope), MustResource(host)});
  };
  Set(snapshot("1", 1));
  StreamHarness h(cache_);
  h.Send(Request(vhost, {"vhost-1"}));
  h.Send(Request(scoped, {"scope-1"}));
  for (auto& r : h.Take()) h.Send(Ack(r, NamesOf(r)));
  Set(snapshot("2", 2));
  std::vector<std::string> order;
  for (auto& r : h.Take()) order.push_back(r.type_url());
  EXPECT_THAT(order, ElementsAre(scoped, vhost));
}

// E41 / R8.2: a cluster whose content changed is followed by EDS for it, even when
// the endpoints (and the EDS version) did not change.
TEST_F(SotwStreamTest, ChangedClusterIsFollowedByItsEds) {
  auto resources = [](int timeout) {
    return std::vector<ResourcePtr>{EdsCluster("c1", "", timeout), Endpoints("c1", {8080})};
  };
  ASSERT_OK_AND_ASSIGN(SnapshotPtr s1, Snapshot::CreateWithTypeVersions({{kCds, "c1"}, {kEds, "e1"}}, resources(1)));
  Set(s1);
  StreamHarness h(cache_);
  h.Send(Request(kCds, {}));
  h.Send(Request(kEds, {"c1"}));
  for (auto& r : h.Take()) h.Send(Ack(r, r.type_url() == kCds ? std::vector<std::string>{} : NamesOf(r)));
  ASSERT_OK_AND_ASSIGN(SnapshotPtr s2, Snapshot::CreateWithTypeVersions({{kCds, "c2"}, {kEds, "e1"}}, resources(2)));
  Set(s2);
  auto pushed = h.Take();
  ASSERT_EQ(pushed.size(), 2u);
  EXPECT_EQ(pushed[0].type_url(), kCds);
  EXPECT_EQ(pushed[1].type_url(), kEds);
  EXPECT_EQ(pushed[1].version_info(), "e1");
  EXPECT_THAT(NamesOf(pushed[1]), ElementsAre("c1"));
}

// E44: a push pending for a type whose names were just unsubscribed is not sent. Pending: the
// EDS change came while a round (here CDS alone) was being written, so it waits for the next
// round, and the unsubscribe is taken before that round is computed.
TEST_F(SotwStreamTest, PendingPushForUnsubscribedNameIsNotSent) {
  auto snapshot = [](std::vector<std::string> clusters, uint32_t port) {
    std::vector<ResourcePtr> resources;
    for (const std::string& name : clusters) resources.push_back(EdsCluster(name));
    resources.push_back(Endpoints("c1", {port}));
    return resources;
  };
  ASSERT_OK_AND_ASSIGN(SnapshotPtr s1,
                       Snapshot::CreateWithTypeVersions({{kCds, "c1"}, {kEds, "e1"}}, snapshot({"c1"}, 8080)));
  Set(s1);
  StreamHarness h(cache_);
  h.Send(Request(kCds, {}));
  h.Send(Request(kEds, {"c1"}));
  auto first = h.Take();
  ASSERT_EQ(first.size(), 2u);
  h.Send(Ack(first[0], {}));
  h.Send(Ack(first[1], {"c1"}));
  // A new cluster; c1 is unchanged, so no EDS follows it: the round is CDS alone.
  ASSERT_OK_AND_ASSIGN(SnapshotPtr s2,
                       Snapshot::CreateWithTypeVersions({{kCds, "c2"}, {kEds, "e1"}}, snapshot({"c1", "c2"}, 8080)));
  Set(s2);
  ASSERT_TRUE(h.transport().write_in_flight);
  ASSERT_EQ(h.transport().more_follows_flags.back(), false);
  ASSERT_OK_AND_ASSIGN(SnapshotPtr s3,
                       Snapshot::CreateWithTypeVersions({{kCds, "c2"}, {kEds, "e2"}}, snapshot({"c1", "c2"}, 8081)));
  Set(s3);                             // EDS is due, after CDS's write
  h.Send(Ack(first[1], {}));           // stale nonce: ignored, EDS still wanted
  h.Send(Request(kEds, {}, "1", ""));  // empty nonce: unsubscribe from every CLA
  auto pushed = h.Take();
  ASSERT_EQ(pushed.size(), 1u);
  EXPECT_EQ(pushed[0].type_url(), kCds);
}

// The responses due at one moment form a round: written back to back, each but the last
// saying that more follow (gRPC's buffer hint), and no request is taken between them, so the
// round goes out as it was computed.
TEST_F(SotwStreamTest, ARoundIsWrittenWholeWithAllButItsLastHinted) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  SubscribeToBase(h);
  std::string eds_nonce;
  for (auto& r : h.Take()) {
    if (r.type_url() == kEds) eds_nonce = r.nonce();
    h.Send(Ack(r, r.type_url() == kCds || r.type_url() == kLds ? std::vector<std::string>{} : NamesOf(r)));
  }
  const size_t before = h.transport().writes.size();
  Set(BaseSnapshot("2", 8081));  // a new snapshot version: all four types are due
  ASSERT_TRUE(h.transport().write_in_flight);
  // A request that comes during the round waits for its last write (each taken request
  // starts the next read).
  const int reads = h.transport().reads_requested;
  h.Send(Request(kEds, {"c2"}, "1", eds_nonce));
  std::vector<std::string> order;
  std::vector<bool> hints;
  std::vector<int> reads_seen;
  while (h.transport().write_in_flight) {
    order.push_back(std::string(ShortTypeName(h.transport().writes.back().type_url())));
    hints.push_back(h.transport().more_follows_flags.back());
    reads_seen.push_back(h.transport().reads_requested - reads);
    h.CompleteWrite();
  }
  EXPECT_THAT(order, ElementsAre("CDS", "EDS", "LDS", "RDS"));
  EXPECT_THAT(hints, ElementsAre(true, true, true, false));
  EXPECT_THAT(reads_seen, ElementsAre(0, 0, 0, 1));
  EXPECT_EQ(h.transport().writes.size(), before + 4);
}

// E7: an open-callback error ends the stream; the closed callback runs once.
TEST_F(SotwStreamTest, OpenCallbackErrorEndsStreamAndClosedRunsOnce) {
  struct Refuse : ServerCallbacks {
    absl::Status OnStreamOpen(int64_t, std::string_view) override { return absl::PermissionDeniedError("no"); }
    void OnStreamClosed(int64_t, const envoy::config::core::v3::Node&) override { closed++; }
    int closed = 0;
  } callbacks;
  {
    StreamHarness h(cache_, "", &callbacks);
    ASSERT_TRUE(h.transport().finished.has_value());
    EXPECT_EQ(h.transport().finished->code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(h.transport().reads_requested, 0);
  }
  EXPECT_EQ(callbacks.closed, 1);
}

// E8: a failed write ends the stream.
TEST_F(SotwStreamTest, WriteFailureEndsStream) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kCds, {}));
  ASSERT_TRUE(h.transport().write_in_flight);
  h.CompleteWrite(/*ok=*/false);
  ASSERT_TRUE(h.transport().finished.has_value());
  EXPECT_EQ(h.transport().finished->code(), absl::StatusCode::kUnavailable);
}

// E9: closing releases the watch and the ledger entries; later changes reach nobody.
TEST_F(SotwStreamTest, CloseReleasesWatchAndLedger) {
  Set(BaseSnapshot("1"));
  auto h = std::make_unique<StreamHarness>(cache_);
  h->Send(Request(kCds, {}));
  h->Take();
  EXPECT_EQ(cache_.GetStatus("node-a")->open_watches, 1);
  h->Close();
  EXPECT_EQ(cache_.GetStatus("node-a")->open_watches, 0);
  EXPECT_FALSE(h->ledger().GetStream(1).has_value());
  const size_t writes = h->transport().writes.size();
  Set(BaseSnapshot("2", 8081));
  EXPECT_EQ(h->transport().writes.size(), writes);
}

// E4 (partial): with no snapshot for the node nothing is sent, never an empty state;
// the first snapshot then answers the waiting subscriptions.
TEST_F(SotwStreamTest, NoSnapshotSendsNothingUntilOneArrives) {
  StreamHarness h(cache_);
  h.Send(Request(kLds, {}));
  h.Send(Request(kCds, {}));
  EXPECT_THAT(h.Take(), IsEmpty());
  Set(BaseSnapshot("1"));
  auto r = h.Take();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].type_url(), kCds);
  EXPECT_EQ(r[1].type_url(), kLds);
}

// E61: clearing the snapshot sends nothing; the next snapshot reaches the stream.
TEST_F(SotwStreamTest, ClearedSnapshotThenNewOneReachesStream) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kCds, {}));
  auto r1 = h.Take();
  h.Send(Ack(r1[0], {}));
  cache_.ClearSnapshot("node-a");
  EXPECT_THAT(h.Take(), IsEmpty());
  Set(BaseSnapshot("2", 8081));
  EXPECT_EQ(h.Take().size(), 1u);
}

// Regression (found by the differential test): unsubscribing from everything with an empty
// nonce, before any response, forgets the type without touching its freed state.
TEST_F(SotwStreamTest, EmptyNamesWithoutNonceBeforeAnyResponseUnsubscribes) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"ghost"}));
  EXPECT_THAT(h.Take(), IsEmpty());
  h.Send(Request(kEds, {}));
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_FALSE(h.transport().finished.has_value());
  h.Send(Request(kEds, {"c1"}));
  auto r = h.Take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_THAT(NamesOf(r[0]), ElementsAre("c1"));
}

// Regression (found by the differential test): after an unsubscribe from everything, the
// client's last nonce is not stale for the fresh subscription: nothing newer was sent.
TEST_F(SotwStreamTest, NonceFromBeforeUnsubscribeAllIsNotStale) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c1"}));
  auto r1 = h.Take();
  ASSERT_EQ(r1.size(), 1u);
  h.Send(Ack(r1[0], {"c1"}));
  h.Send(Ack(r1[0], {}));         // unsubscribe from everything
  h.Send(Ack(r1[0], {"ghost"}));  // a fresh subscription to a name that does not exist
  EXPECT_THAT(h.Take(), IsEmpty());
  h.Send(Ack(r1[0], {"c1", "ghost"}));  // same nonce: still the latest the client has seen
  auto r2 = h.Take();
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_THAT(NamesOf(r2[0]), ElementsAre("c1"));
}

// Seed 003: the ledger matches feedback by (stream, type, nonce); the NACK keeps the client's
// last accepted version and never records the NACK's version as accepted.
TEST_F(SotwStreamTest, LedgerShowsSentAckedAndNackedVersions) {
  Set(BaseSnapshot("1"));
  StreamHarness h(cache_);
  h.Send(Request(kEds, {"c1"}));
  auto v1 = h.Take();
  h.Send(Ack(v1[0], {"c1"}));
  Set(BaseSnapshot("2", 8081));
  auto v2 = h.Take();
  h.Send(Nack(v2[0], {"c1"}, "1", "endpoint rejected"));
  auto status = h.ledger().GetStream(1);
  ASSERT_TRUE(status.has_value());
  const TypeSyncStatus& eds = status->types[0];
  EXPECT_EQ(eds.sent_version, "2");
  EXPECT_EQ(eds.acked_version, "1");
  EXPECT_FALSE(eds.synced());
  ASSERT_TRUE(eds.last_nack.has_value());
  EXPECT_EQ(eds.last_nack->error, "endpoint rejected");
  EXPECT_EQ(eds.acks, 1u);
  EXPECT_EQ(eds.nacks, 1u);
}

}  // namespace
}  // namespace cxds
