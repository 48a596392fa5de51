// A stream served by a ProxyGenerator (server/proxy_generator.h): the generator only announces
// a push; the stream generates when it takes the push, keeps the views it gets back, and looks
// only at the names the generator says changed. No Snapshot is read back from the generator.
#include "server/proxy_generator.h"

#include <deque>

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
using ::testing::IsEmpty;
using ::testing::SizeIs;
using namespace cxds::testing;  // NOLINT

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);
const std::string kLds(kListenerType);

Snapshot::TypeResourcesPtr View(const std::string& version, std::vector<ResourcePtr> resources) {
  auto view = std::make_shared<Snapshot::TypeResources>();
  view->version = version;
  view->version_covers_all = false;  // as the pipeline's views
  for (ResourcePtr& resource : resources) view->items[resource->name()] = std::move(resource);
  return view;
}

GeneratedConfig One(const std::string& type_url, Snapshot::TypeResourcesPtr view, std::vector<std::string> changed) {
  GeneratedConfig config;
  config[type_url] = GeneratedType{std::move(view), std::make_shared<const std::vector<std::string>>(changed)};
  return config;
}

// Answers Subscribe and Generate from scripts, and counts the calls.
class ScriptedGenerator final : public ProxyGenerator {
 public:
  class ScriptedSession final : public Session {
   public:
    explicit ScriptedSession(ScriptedGenerator* owner) : owner_(owner) {}
    ~ScriptedSession() override { owner_->on_push_ = nullptr; }
    GeneratedConfig Subscribe(const std::string& type_url, bool wildcard, const SubscribedNames& names) override {
      owner_->subscribes_++;
      return Next(owner_->subscribe_results_);
    }
    GeneratedConfig Generate(const PushRequest& push) override {
      owner_->generated_pushes_.push_back(push.push_sequence);
      return Next(owner_->generate_results_);
    }

   private:
    static GeneratedConfig Next(std::deque<GeneratedConfig>& script) {
      if (script.empty()) return {};
      GeneratedConfig next = std::move(script.front());
      script.pop_front();
      return next;
    }
    ScriptedGenerator* const owner_;
  };

  std::unique_ptr<Session> Open(const envoy::config::core::v3::Node& node,
                                absl::AnyInvocable<void(PushRequestPtr)> on_push,
                                const PeerIdentity& /*identity*/ = PeerIdentity{}) override {
    opened_node_ = node.id();
    on_push_ = std::move(on_push);
    return std::make_unique<ScriptedSession>(this);
  }

  // What the pipeline's Push does for this proxy: announce, nothing more. `endpoints`: a push of
  // an endpoint change only.
  void Announce(uint64_t sequence, bool endpoints = false) {
    auto push = std::make_shared<PushRequest>();
    push->push_sequence = sequence;
    push->reasons[endpoints ? reason::kEndpoint : reason::kConfig] = 1;
    if (endpoints) push->configs.insert(ConfigKey{kind::kEndpoints, "shop", "a"});
    ASSERT_TRUE(on_push_ != nullptr) << "no session open";
    on_push_(std::move(push));
  }

  std::deque<GeneratedConfig> subscribe_results_;
  std::deque<GeneratedConfig> generate_results_;
  std::vector<uint64_t> generated_pushes_;  // push_sequence of each Generate call
  int subscribes_ = 0;
  std::string opened_node_;
  absl::AnyInvocable<void(PushRequestPtr)> on_push_;
};

TEST(ProxyGeneratorStreamTest, APushIsGeneratedOnceWhenTheStreamTakesItAndItsViewIsSent) {
  ScriptedGenerator generator;
  generator.subscribe_results_.push_back(One(kCds, View("v1", {EdsCluster("a")}), {"a"}));
  StreamHarness proxy(generator, "", nullptr, "envoy-1");
  proxy.Send(Request(kCds, {}));
  EXPECT_EQ(generator.opened_node_, "envoy-1");
  auto first = proxy.Take();
  ASSERT_EQ(first.size(), 1u) << "the view Subscribe returned is served at once (the request path)";
  EXPECT_EQ(first[0].version_info(), "v1");
  EXPECT_THAT(generator.generated_pushes_, IsEmpty());
  proxy.Send(Ack(first[0], {}));

  generator.generate_results_.push_back(One(kCds, View("v2", {EdsCluster("a", "svc-a"), EdsCluster("b")}), {"a", "b"}));
  generator.Announce(7);
  EXPECT_THAT(generator.generated_pushes_, ElementsAre(7u)) << "generated when delivered, once";
  auto second = proxy.Take();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].version_info(), "v2");
  EXPECT_THAT(NamesOf(second[0]), ElementsAre("a", "b"));
  EXPECT_EQ(generator.subscribes_, 1) << "an ACK that changes nothing asks the generator nothing";
}

// The generator diffs against the proxy's previous view; the stream does not diff the whole view
// again: a Delta client is sent only what the generator named.
TEST(ProxyGeneratorStreamTest, ADeltaStreamLooksOnlyAtTheNamesTheGeneratorSaysChanged) {
  ScriptedGenerator generator;
  generator.subscribe_results_.push_back(One(kEds, View("v1", {Endpoints("a", {1}), Endpoints("b", {1})}), {"a", "b"}));
  DeltaHarness proxy(generator, "grpc-1");
  proxy.Send(DeltaRequest(kEds, {"a", "b"}));
  proxy.Settle();
  ASSERT_EQ(proxy.held(kEds).size(), 2u);

  // Both differ from what the client holds, but the generator names only a.
  generator.generate_results_.push_back(One(kEds, View("v2", {Endpoints("a", {2}), Endpoints("b", {2})}), {"a"}));
  generator.Announce(2);
  auto responses = proxy.Take();
  ASSERT_EQ(responses.size(), 1u);
  ASSERT_EQ(responses[0].resources_size(), 1);
  EXPECT_EQ(responses[0].resources(0).name(), "a");
  EXPECT_EQ(responses[0].system_version_info(), "v2");
}

// The sends and ACKs of an endpoint-only push are logged at debug (a line per proxy at info would
// flood the log at every endpoint change); those of the subscription and of other pushes at info.
TEST(ProxyGeneratorStreamTest, AnEndpointOnlyPushIsSentAndAckedAtDebugLevel) {
  ScriptedGenerator generator;
  generator.subscribe_results_.push_back(One(kEds, View("v1", {Endpoints("a", {1})}), {"a"}));
  CapturedLog log;
  StreamHarness proxy(generator, "", nullptr, "envoy-1");
  const auto answer = [&proxy](const std::string& version) {
    auto sent = proxy.Take();
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].version_info(), version);
    proxy.Send(Ack(sent[0], {"a"}));
  };
  proxy.Send(Request(kEds, {"a"}));
  answer("v1");
  EXPECT_THAT(log.LinesWith("ACK stream="), SizeIs(1));
  EXPECT_THAT(log.LinesWith("SENT stream="), SizeIs(1));

  generator.generate_results_.push_back(One(kEds, View("v2", {Endpoints("a", {2})}), {"a"}));
  generator.Announce(2, /*endpoints=*/true);
  answer("v2");
  EXPECT_THAT(log.LinesWith("ACK stream="), SizeIs(1)) << "the endpoint-only push's ACK: at debug";
  EXPECT_THAT(log.LinesWith("SENT stream="), SizeIs(1));

  generator.generate_results_.push_back(One(kEds, View("v3", {Endpoints("a", {3})}), {"a"}));
  generator.Announce(3);
  answer("v3");
  EXPECT_THAT(log.LinesWith("ACK stream="), SizeIs(2)) << "a config push's ACK: at info";
  EXPECT_THAT(log.LinesWith("SENT stream="), SizeIs(2));
}

// A type generated for the first time with nothing in it is still news: a SotW LDS/CDS client is
// told its state is empty.
TEST(ProxyGeneratorStreamTest, AFirstViewWithNothingInItIsAnswered) {
  ScriptedGenerator generator;  // Subscribe generates nothing: no push yet
  StreamHarness proxy(generator, "", nullptr, "envoy-1");
  proxy.Send(Request(kLds, {}));
  EXPECT_THAT(proxy.Take(), IsEmpty()) << "no configuration of the type yet: nothing is sent";

  generator.generate_results_.push_back(One(kLds, View("v1", {}), {}));
  generator.Announce(1);
  auto responses = proxy.Take();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].version_info(), "v1");
  EXPECT_EQ(responses[0].resources_size(), 0);
}

// When Subscribe narrows a view, the stream lets go of the larger map, so a proxy's view stays
// the size of what it wants.
TEST(ProxyGeneratorStreamTest, TheStreamLetsGoOfAViewThatSubscribeNarrowed) {
  ScriptedGenerator generator;
  Snapshot::TypeResourcesPtr both = View("v1", {Endpoints("a", {1}), Endpoints("b", {1})});
  std::weak_ptr<const Snapshot::TypeResources> watched_both = both;
  generator.subscribe_results_.push_back(One(kEds, std::move(both), {"a", "b"}));
  generator.subscribe_results_.push_back(One(kEds, View("v1", {Endpoints("a", {1})}), {}));
  StreamHarness proxy(generator, "", nullptr, "envoy-1");
  proxy.Send(Request(kEds, {"a", "b"}));
  auto first = proxy.Take();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_THAT(NamesOf(first[0]), ElementsAre("a", "b"));
  proxy.Send(Ack(first[0], {"a"}));
  EXPECT_EQ(generator.subscribes_, 2);
  EXPECT_TRUE(watched_both.expired()) << "the stream still holds the view with b";
  EXPECT_THAT(proxy.Take(), IsEmpty()) << "dropping a name is no news for EDS";
}

TEST(ProxyGeneratorStreamTest, ClosingTheStreamClosesTheSession) {
  ScriptedGenerator generator;
  {
    StreamHarness proxy(generator, "", nullptr, "envoy-1");
    proxy.Send(Request(kCds, {}));
    EXPECT_TRUE(generator.on_push_ != nullptr);
  }
  EXPECT_TRUE(generator.on_push_ == nullptr) << "the session outlived its stream";
}

}  // namespace
}  // namespace cxds
