// The ACK/NACK ledger (docs/protocol.md): feedback matched by (stream, type, nonce).
#include "server/ack_ledger.h"

#include "common/strings.h"
#include "fakes/test_resources.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

const std::string kEds = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
const absl::Time kT0 = absl::FromUnixSeconds(1000);

class AckLedgerTest : public ::testing::Test {
 protected:
  AckLedgerTest() {
    ledger_.OpenStream(3, kT0);
    ledger_.SetNode(3, "teaching-envoy");
  }
  FeedbackEvent Ack(int64_t stream, const std::string& nonce, const std::string& version) {
    return ledger_.RecordFeedback(stream, kEds, nonce, version, nullptr, 0, kT0 + absl::Seconds(1));
  }
  FeedbackEvent Nack(int64_t stream, const std::string& nonce, const std::string& version, const std::string& error) {
    return ledger_.RecordFeedback(stream, kEds, nonce, version, &error, 3, kT0 + absl::Seconds(2));
  }
  AckLedger ledger_;
};

// An ACK records the version of the matched response as accepted.
TEST_F(AckLedgerTest, AckRecordsTheMatchedVersion) {
  ledger_.RecordSent(3, kEds, "n1", "1", 1, kT0);
  FeedbackEvent event = Ack(3, "n1", "1");
  EXPECT_EQ(event.kind, FeedbackKind::kAck);
  EXPECT_EQ(event.sent_version, "1");
  EXPECT_EQ(event.node_id, "teaching-envoy");
  auto status = ledger_.GetStream(3);
  EXPECT_EQ(status->types[0].acked_version, "1");
  EXPECT_TRUE(status->types[0].synced());
}

// A NACK of version 2 reported with version_info 1 keeps 1 as accepted; 2 is never accepted.
TEST_F(AckLedgerTest, NackKeepsTheLastAcceptedVersion) {
  ledger_.RecordSent(3, kEds, "n1", "1", 1, kT0);
  Ack(3, "n1", "1");
  ledger_.RecordSent(3, kEds, "n2", "2", 1, kT0);
  FeedbackEvent event = Nack(3, "n2", "1", "bad port");
  EXPECT_EQ(event.kind, FeedbackKind::kNack);
  EXPECT_EQ(event.sent_version, "2");
  EXPECT_EQ(event.client_version, "1");
  EXPECT_EQ(event.error, "bad port");
  auto status = ledger_.GetStream(3)->types[0];
  EXPECT_EQ(status.acked_version, "1");
  EXPECT_FALSE(status.synced());
  ASSERT_TRUE(status.last_nack.has_value());
  EXPECT_EQ(status.last_nack->sent_version, "2");
  EXPECT_EQ(status.last_nack->accepted_version, "1");
}

// Feedback naming a nonce never sent on that stream and type is UNMATCHED, not an ACK.
TEST_F(AckLedgerTest, UnknownNonceIsUnmatched) {
  ledger_.RecordSent(3, kEds, "n1", "1", 1, kT0);
  EXPECT_EQ(Ack(3, "n-other", "1").kind, FeedbackKind::kUnmatched);
  EXPECT_EQ(ledger_.RecordFeedback(3, "type.googleapis.com/other", "n1", "1", nullptr, 0, kT0).kind,
            FeedbackKind::kUnmatched);
  EXPECT_TRUE(ledger_.GetStream(3)->types[0].acked_version.empty());
}

// The same nonce on another stream matches nothing there (nonces are per stream).
TEST_F(AckLedgerTest, SameNonceOnAnotherStreamIsUnmatched) {
  ledger_.OpenStream(4, kT0);
  ledger_.RecordSent(3, kEds, "1", "1", 1, kT0);
  EXPECT_EQ(Ack(4, "1", "1").kind, FeedbackKind::kUnmatched);
  EXPECT_EQ(Ack(3, "1", "1").kind, FeedbackKind::kAck);
}

// An ACK that crosses a newer response is matched but does not move "accepted" backwards.
TEST_F(AckLedgerTest, LateAckOfOlderResponseDoesNotRegress) {
  ledger_.RecordSent(3, kEds, "n1", "1", 1, kT0);
  ledger_.RecordSent(3, kEds, "n2", "2", 1, kT0);
  EXPECT_EQ(Ack(3, "n2", "2").kind, FeedbackKind::kAck);
  FeedbackEvent late = Ack(3, "n1", "1");
  EXPECT_EQ(late.kind, FeedbackKind::kAck);
  EXPECT_TRUE(late.stale);
  EXPECT_EQ(ledger_.GetStream(3)->types[0].acked_version, "2");
}

// Only the most recent responses can be matched; older feedback becomes UNMATCHED.
TEST_F(AckLedgerTest, OnlyRecentResponsesAreRemembered) {
  for (size_t i = 0; i <= AckLedger::kRememberedResponses; ++i) {
    ledger_.RecordSent(3, kEds, "n" + std::to_string(i), std::to_string(i), 1, kT0);
  }
  EXPECT_EQ(Ack(3, "n0", "0").kind, FeedbackKind::kUnmatched);
  EXPECT_EQ(Ack(3, "n1", "1").kind, FeedbackKind::kAck);
}

// Closing a stream drops its entries; forgetting a type drops that type only.
TEST_F(AckLedgerTest, EntriesAreDroppedWithTheStream) {
  ledger_.RecordSent(3, kEds, "n1", "1", 1, kT0);
  ledger_.RecordSent(3, "type.googleapis.com/x", "n2", "1", 1, kT0);
  ledger_.ForgetType(3, kEds);
  EXPECT_EQ(ledger_.GetStream(3)->types.size(), 1u);
  ledger_.CloseStream(3);
  EXPECT_FALSE(ledger_.GetStream(3).has_value());
  EXPECT_TRUE(ledger_.AllStreams().empty());
  EXPECT_EQ(Ack(3, "n1", "1").kind, FeedbackKind::kUnmatched);
}

// A stream records through its handle, and the ledger reads what it recorded; the handle of
// a closed stream still takes records (a write completing late) without bringing it back.
TEST_F(AckLedgerTest, AStreamRecordsThroughItsHandle) {
  AckLedger::StreamHandle stream = ledger_.OpenStream(5, kT0);
  ledger_.SetNode(5, "handle-node");
  ledger_.RecordSent(*stream, kEds, "n1", "1", 1, kT0);
  EXPECT_EQ(ledger_.RecordFeedback(*stream, kEds, "n1", "1", nullptr, 0, kT0).kind, FeedbackKind::kAck);
  EXPECT_EQ(Ack(5, "n1", "1").kind, FeedbackKind::kAck) << "the id and the handle name one record";
  auto status = ledger_.GetStream(5);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->node_id, "handle-node");
  EXPECT_EQ(status->types[0].acked_version, "1");
  EXPECT_EQ(status->types[0].acks, 2u);
  EXPECT_EQ(ledger_.OpenStream(5, kT0 + absl::Seconds(1)), stream) << "an id open is one record";
  ledger_.CloseStream(5);
  ledger_.RecordSent(*stream, kEds, "n2", "2", 1, kT0);
  EXPECT_EQ(ledger_.RecordFeedback(*stream, kEds, "n2", "2", nullptr, 0, kT0).kind, FeedbackKind::kAck);
  EXPECT_FALSE(ledger_.GetStream(5).has_value());
  EXPECT_EQ(ledger_.AllStreams().size(), 1u);  // stream 3 of the fixture
}

// Issue 15 (CSDS): what the client holds. A SotW response replaces the type's set; Delta
// responses add and replace by name and drop what they remove; the set is bounded.
std::vector<std::string> HeldNames(const AckLedger& ledger, int64_t stream, bool* incremental = nullptr) {
  std::vector<std::string> names;
  for (const HeldResources& held : ledger.Held(stream)) {
    for (const ResourcePtr& resource : held.resources)
      names.push_back(resource->name() + "@" + resource->content_version().substr(0, 4));
    if (incremental != nullptr) *incremental = held.incremental;
  }
  return names;
}

TEST_F(AckLedgerTest, SotwResponsesReplaceWhatTheClientHolds) {
  const std::vector<ResourcePtr> first = {testing::Endpoints("a", {1}), testing::Endpoints("b", {1})};
  ledger_.RecordSent(3, kEds, "n1", "v1", first.size(), kT0, SentResources{&first});
  const std::vector<ResourcePtr> second = {testing::Endpoints("b", {2})};
  ledger_.RecordSent(3, kEds, "n2", "v2", second.size(), kT0, SentResources{&second});
  bool incremental = true;
  const std::vector<std::string> held = HeldNames(ledger_, 3, &incremental);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0], "b@" + second[0]->content_version().substr(0, 4));
  EXPECT_FALSE(incremental);
  // A heartbeat (no resources given) changes nothing held.
  ledger_.RecordSent(3, kEds, "n3", "v2", 1, kT0);
  EXPECT_EQ(HeldNames(ledger_, 3).size(), 1u);
  EXPECT_TRUE(ledger_.Held(99).empty());
}

// A SotW EDS response may carry only the ClusterLoadAssignment that changed (the client keeps
// the others): what the full response before it carried is still held.
TEST_F(AckLedgerTest, APartialSotwResponseKeepsWhatTheFullOneBeforeItCarried) {
  const std::vector<ResourcePtr> full = {testing::Endpoints("a", {1}), testing::Endpoints("b", {1})};
  ledger_.RecordSent(3, kEds, "n1", "v1", full.size(), kT0, SentResources{&full});
  const std::vector<ResourcePtr> changed = {testing::Endpoints("b", {2})};
  ledger_.RecordSent(3, kEds, "n2", "v2", changed.size(), kT0, SentResources{&changed, nullptr, true});
  EXPECT_EQ(HeldNames(ledger_, 3), (std::vector<std::string>{"a@" + full[0]->content_version().substr(0, 4),
                                                             "b@" + changed[0]->content_version().substr(0, 4)}));
  // The next full response replaces the set again.
  const std::vector<ResourcePtr> again = {testing::Endpoints("c", {1})};
  ledger_.RecordSent(3, kEds, "n3", "v3", again.size(), kT0, SentResources{&again});
  EXPECT_EQ(HeldNames(ledger_, 3), (std::vector<std::string>{"c@" + again[0]->content_version().substr(0, 4)}));
}

TEST_F(AckLedgerTest, DeltaResponsesAccumulateAndRemoveByName) {
  const std::vector<ResourcePtr> first = {testing::Endpoints("a", {1}), testing::Endpoints("b", {1})};
  ledger_.RecordSent(3, kEds, "n1", "", first.size(), kT0, SentResources{&first, nullptr, true});
  const std::vector<ResourcePtr> second = {testing::Endpoints("c", {1}), testing::Endpoints("b", {2})};
  const std::vector<std::string> removed = {"a"};
  ledger_.RecordSent(3, kEds, "n2", "", second.size(), kT0, SentResources{&second, &removed, true});
  bool incremental = false;
  EXPECT_EQ(HeldNames(ledger_, 3, &incremental),
            (std::vector<std::string>{"b@" + second[1]->content_version().substr(0, 4),
                                      "c@" + second[0]->content_version().substr(0, 4)}));
  EXPECT_TRUE(incremental);
}

TEST_F(AckLedgerTest, WhatIsHeldIsBounded) {
  std::vector<ResourcePtr> many;
  for (size_t i = 0; i <= AckLedger::kMaxHeldResources; ++i) many.push_back(testing::Endpoints(StrCat("c", i), {1}));
  ledger_.RecordSent(3, kEds, "n1", "v1", many.size(), kT0, SentResources{&many});
  std::vector<HeldResources> held = ledger_.Held(3);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].resources.size(), AckLedger::kMaxHeldResources);
  EXPECT_TRUE(held[0].truncated);
  ledger_.RecordSent(3, kEds, "n2", "", many.size(), kT0, SentResources{&many, nullptr, true});
  held = ledger_.Held(3);
  EXPECT_EQ(held[0].resources.size(), AckLedger::kMaxHeldResources);
  EXPECT_TRUE(held[0].truncated);
}

}  // namespace
}  // namespace cxds
