// PushAccounting: which push each response belongs to, and which answers still count.
#include "server/push_accounting.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

const std::string kEds = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
const std::string kCds = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

// What the observer is told, as "sent NONCE" / "answered NONCE".
class Recorder final : public PushObserver {
 public:
  void OnSent(const PushTargetInfo&, const PushRequest&, const std::string&, const std::string&,
              const std::string& nonce, absl::Time) override {
    events.push_back("sent " + nonce);
  }
  void OnFeedback(const PushTargetInfo&, const PushRequest&, const std::string&, const std::string& nonce, bool,
                  const std::string&, absl::Time) override {
    events.push_back("answered " + nonce);
  }
  std::vector<std::string> events;
};

class PushAccountingTest : public ::testing::Test {
 protected:
  // One push carrying one response of `type` with `nonce`.
  void Push(const std::string& type, const std::string& nonce) {
    accounting_.Begin(std::make_shared<const PushRequest>());
    accounting_.Sent(type, "v-" + nonce, nonce);
    accounting_.Finish();
  }
  void Ack(const std::string& type, const std::string& nonce) {
    FeedbackEvent event;
    event.kind = FeedbackKind::kAck;
    event.type_url = type;
    event.nonce = nonce;
    event.time = clock_.Now();
    accounting_.Answered(event);
  }
  std::vector<std::string> Answered() {
    std::vector<std::string> out;
    for (const std::string& e : recorder_.events) {
      if (e.starts_with("answered ")) out.push_back(e.substr(9));
    }
    return out;
  }
  SimulatedClock clock_;
  ServerMetrics metrics_{nullptr};
  Recorder recorder_;
  PushAccounting accounting_{&metrics_, &recorder_, &clock_};
};

// A late ACK of an older response is still reported, for up to four unanswered responses of a
// type; the oldest beyond that is forgotten.
TEST_F(PushAccountingTest, UpToFourUnansweredResponsesPerTypeAreRemembered) {
  for (const char* nonce : {"1", "2", "3", "4", "5"}) Push(kEds, nonce);
  Ack(kEds, "1");
  Ack(kEds, "2");
  EXPECT_THAT(Answered(), ::testing::ElementsAre("2")) << "1 was the fifth back: forgotten";
}

// The client answers in order: an ACK of a response settles the older ones, whose answers then
// no longer count; another type's responses are kept apart.
TEST_F(PushAccountingTest, AnAnswerSettlesTheOlderResponsesOfItsTypeOnly) {
  Push(kEds, "1");
  Push(kCds, "c1");
  Push(kEds, "2");
  Push(kEds, "3");
  Ack(kEds, "2");
  Ack(kEds, "1");
  Ack(kCds, "c1");
  Ack(kEds, "3");
  Ack(kEds, "3");
  EXPECT_THAT(Answered(), ::testing::ElementsAre("2", "c1", "3"));
}

// With no push active a response is not accounted (a heartbeat), but it still supersedes the
// older ones, whose late answers are still reported.
TEST_F(PushAccountingTest, AResponseOutsideAPushIsNotAccounted) {
  Push(kEds, "1");
  accounting_.Sent(kEds, "v", "outside");
  Ack(kEds, "outside");
  Ack(kEds, "1");
  EXPECT_THAT(Answered(), ::testing::ElementsAre("1"));
}

// An ACK is logged at the level of the push it answers: an endpoint-only push's at debug (its
// sends too), any other's at info. Answered says which, as it forgets the response.
TEST_F(PushAccountingTest, AnAnswerKnowsWhetherItsPushChangedEndpointsOnly) {
  auto endpoints = std::make_shared<PushRequest>();
  endpoints->configs.insert(ConfigKey{kind::kEndpoints, "shop", "reviews.shop.svc.cluster.local"});
  auto config = std::make_shared<PushRequest>();
  config->configs.insert(ConfigKey{"VirtualService", "shop", "reviews"});
  accounting_.Begin(endpoints);
  accounting_.Sent(kEds, "v1", "e1");
  accounting_.Finish();
  accounting_.Begin(config);
  accounting_.Sent(kCds, "v2", "c1");
  accounting_.Finish();
  const auto answer = [](const std::string& type, const std::string& nonce) {
    FeedbackEvent event;
    event.kind = FeedbackKind::kAck;
    event.type_url = type;
    event.nonce = nonce;
    return event;
  };
  EXPECT_FALSE(accounting_.Answered(answer(kCds, "e1"))) << "another type's nonce";
  EXPECT_FALSE(accounting_.Answered(answer(kEds, "unknown")));
  FeedbackEvent unmatched = answer(kEds, "e1");
  unmatched.kind = FeedbackKind::kUnmatched;  // the ledger found no such response: ignored
  EXPECT_FALSE(accounting_.Answered(unmatched));
  EXPECT_TRUE(accounting_.Answered(answer(kEds, "e1")));
  EXPECT_FALSE(accounting_.Answered(answer(kEds, "e1"))) << "answered: forgotten";
  EXPECT_FALSE(accounting_.Answered(answer(kCds, "c1")));
  EXPECT_THAT(Answered(), ::testing::ElementsAre("e1", "c1"));  // each once
}

}  // namespace
}  // namespace cxds
