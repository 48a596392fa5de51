// The push pipeline end to end in-process: ConfigUpdate -> debounce (simulated time) -> Push
// (full or incremental) -> PushDispatcher -> stream -> generators -> response -> ACK, with a
// faithful fake client (StreamHarness) per proxy.
#include "pipeline/push_pipeline.h"

#include <memory>
#include <vector>

#include "fakes/inline_dispatcher.h"
#include "fakes/stream_harness.h"
#include "fakes/test_model.h"
#include "gtest/gtest.h"
#include "pipeline/convergence_tracker.h"

namespace cxds::testing {
namespace {

PushRequest ServiceChange(const std::string& name) {
  PushRequest r;
  r.full = true;
  r.configs = {ServiceKey(name)};
  r.reasons = {{reason::kConfig, 1}};
  return r;
}

PushRequest EndpointChange(const std::string& name) {
  PushRequest r;
  r.configs = {EndpointsKey(name)};
  r.reasons = {{reason::kEndpoint, 1}};
  return r;
}

class PushPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_.SetService("a");
    model_.SetService("b");
    model_.SetEndpoints("a", {1001});
    model_.SetEndpoints("b", {1002});
    dispatcher_ = InlineDispatcher(100000, &tracker_, &metrics_, &scheduler_.clock());
    builder_ = std::make_shared<TestContextBuilder>(model_);
    pipeline_ = MakePipeline(builder_, nullptr);
  }

  std::unique_ptr<PushPipeline> MakePipeline(std::shared_ptr<PushContextBuilder> builder, ProxyFilter filter) {
    PushPipeline::Options options;
    options.scheduler = &scheduler_;
    options.metrics = &metrics_;
    options.observer = &tracker_;
    options.proxy_filter = std::move(filter);
    auto pipeline = std::make_unique<PushPipeline>(std::move(builder), options);
    pipeline->AddGenerator(std::string(kClusterType), clusters_);
    pipeline->AddGenerator(std::string(kEndpointType), endpoints_);
    return pipeline;
  }

  // Runs the debouncer's quiet period.
  void Settle() { scheduler_.AdvanceBy(absl::Milliseconds(100)); }

  std::unique_ptr<StreamHarness> Connect(const std::string& node_id, int64_t stream_id,
                                         PushPipeline* pipeline = nullptr) {
    StreamHarnessOptions options;
    options.dispatcher = dispatcher_.get();
    options.observer = &tracker_;
    options.clock = &scheduler_.clock();
    options.metrics = &server_metrics_;
    return std::make_unique<StreamHarness>(pipeline != nullptr ? *pipeline : *pipeline_, "", nullptr, node_id,
                                           stream_id, options);
  }

  // Subscribes like Envoy: CDS wildcard, then EDS for both services; ACKs everything.
  void Subscribe(StreamHarness& proxy) {
    proxy.Send(Request(std::string(kClusterType), {}));
    auto cds = proxy.Take();
    ASSERT_EQ(cds.size(), 1u);
    proxy.Send(Ack(cds[0], {}));
    proxy.Send(Request(std::string(kEndpointType), {"a", "b"}));
    auto eds = proxy.Take();
    ASSERT_EQ(eds.size(), 1u);
    proxy.Send(Ack(eds[0], {"a", "b"}));
  }

  SimulatedScheduler scheduler_;
  MetricsRegistry metrics_;
  ServerMetrics server_metrics_{&metrics_};
  ConvergenceTracker tracker_;
  TestModel model_;
  std::shared_ptr<TestClusterGenerator> clusters_ = std::make_shared<TestClusterGenerator>();
  std::shared_ptr<TestEndpointGenerator> endpoints_ = std::make_shared<TestEndpointGenerator>(model_);
  std::unique_ptr<PushDispatcher> dispatcher_;
  std::shared_ptr<TestContextBuilder> builder_;
  std::unique_ptr<PushPipeline> pipeline_;
};

TEST_F(PushPipelineTest, FullPushBuildsAContextAndIncrementalPushReusesIt) {
  pipeline_->ConfigUpdate(ServiceChange("a"));
  Settle();
  ASSERT_NE(pipeline_->context(), nullptr);
  const std::string v1 = pipeline_->context()->version();
  EXPECT_EQ(builder_->builds.load(), 1);
  auto proxy = Connect("envoy-1", 1);
  Subscribe(*proxy);

  // Endpoint-only: same context, EDS for `a` only, CDS not even generated into a response.
  model_.SetEndpoints("a", {1003});
  pipeline_->ConfigUpdate(EndpointChange("a"));
  Settle();
  EXPECT_EQ(builder_->builds.load(), 1) << "an incremental push builds no PushContext";
  EXPECT_EQ(pipeline_->context()->version(), v1);
  auto responses = proxy->Take();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].type_url(), kEndpointType);
  EXPECT_EQ(NamesOf(responses[0]), (std::vector<std::string>{"a"}));
  EXPECT_EQ(pipeline_->stats().incremental_pushes, 1u);

  // A new service: a full push, a new context version, CDS with three clusters.
  model_.SetService("c");
  pipeline_->ConfigUpdate(ServiceChange("c"));
  Settle();
  EXPECT_EQ(builder_->builds.load(), 2);
  EXPECT_NE(pipeline_->context()->version(), v1);
  responses = proxy->Take();
  ASSERT_GE(responses.size(), 1u);
  EXPECT_EQ(responses[0].type_url(), kClusterType);
  EXPECT_EQ(NamesOf(responses[0]), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(pipeline_->stats().full_pushes, 2u);
  const std::string text = metrics_.RenderPrometheus();
  EXPECT_NE(text.find("cxds_pushes{kind=\"full\"} 2"), std::string::npos) << text;
  EXPECT_NE(text.find("cxds_pushes{kind=\"incremental\"} 1"), std::string::npos) << text;
}

TEST_F(PushPipelineTest, EachResourceIsSerializedOncePerVersionWhateverTheNumberOfProxies) {
  pipeline_->ConfigUpdate(ServiceChange("a"));
  Settle();
  const uint64_t before = ResourceSerializationCount();
  std::vector<std::unique_ptr<StreamHarness>> proxies;
  for (int i = 0; i < 20; ++i) {
    proxies.push_back(Connect("envoy-" + std::to_string(i), i + 1));
    Subscribe(*proxies.back());
  }
  EXPECT_EQ(ResourceSerializationCount() - before, 4u) << "2 clusters + 2 assignments, for 20 proxies";

  const uint64_t before_change = ResourceSerializationCount();
  model_.SetEndpoints("b", {1009});
  pipeline_->ConfigUpdate(EndpointChange("b"));
  Settle();
  int got = 0;
  for (auto& proxy : proxies) {
    auto responses = proxy->Take();
    ASSERT_EQ(responses.size(), 1u);
    EXPECT_EQ(NamesOf(responses[0]), (std::vector<std::string>{"b"}));
    got++;
  }
  EXPECT_EQ(got, 20);
  EXPECT_EQ(ResourceSerializationCount() - before_change, 1u) << "one changed assignment, serialized once";
  EXPECT_GE(pipeline_->cache().stats().hits, 19u);
}

TEST_F(PushPipelineTest, TheProxyFilterKeepsPushesFromProxiesOutsideTheirScope) {
  // Only nodes named "*-sees-b" depend on service b.
  pipeline_ = MakePipeline(builder_,
                           [](const Proxy& proxy, const PushRequest& request, const PushContext&, const PushContext*) {
                             for (const ConfigKey& key : request.configs) {
                               if (key.name == "b" && proxy.id.find("sees-b") == std::string::npos) return false;
                             }
                             return true;
                           });
  pipeline_->ConfigUpdate(ServiceChange("a"));
  Settle();
  auto inside = Connect("envoy-sees-b", 1);
  auto outside = Connect("envoy-other", 2);
  Subscribe(*inside);
  Subscribe(*outside);
  model_.SetEndpoints("b", {2000});
  pipeline_->ConfigUpdate(EndpointChange("b"));
  Settle();
  EXPECT_EQ(inside->Take().size(), 1u);
  EXPECT_TRUE(outside->Take().empty()) << "a change outside the proxy's scope pushes nothing to it";
  EXPECT_EQ(pipeline_->stats().proxies_filtered_out, 1u);
  const auto change = tracker_.Get(tracker_.RecentIds().back());
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->proxies.size(), 1u);
  EXPECT_EQ(change->proxies.begin()->second.node_id, "envoy-sees-b");

  // A forced push reaches every proxy, whatever the filter says (edge 39).
  model_.SetEndpoints("b", {2001});
  PushRequest forced = EndpointChange("b");
  forced.forced = true;
  pipeline_->ConfigUpdate(forced);
  Settle();
  EXPECT_EQ(inside->Take().size(), 1u);
  EXPECT_EQ(outside->Take().size(), 1u);
}

// The filter is given the context the proxy was last shown, not merely the push before: a proxy
// kept out of one push is judged on the next against what it holds (istiod's PrevSidecarScope);
// one let in, against what the push before showed it.
TEST_F(PushPipelineTest, TheProxyFilterComparesWithWhatTheProxyWasLastShown) {
  std::map<std::string, std::vector<const PushContext*>> previous_of;  // by node id, push by push
  pipeline_ = MakePipeline(
      builder_, [&](const Proxy& proxy, const PushRequest&, const PushContext&, const PushContext* previous) {
        previous_of[proxy.id].push_back(previous);
        return proxy.id != "envoy-kept-out";
      });
  pipeline_->ConfigUpdate(ServiceChange("a"));
  Settle();
  const std::shared_ptr<const PushContext> shown = pipeline_->context();
  auto kept_out = Connect("envoy-kept-out", 1);
  Subscribe(*kept_out);  // generated from `shown`
  auto other = Connect("envoy-other", 2);
  other->Send(Request(std::string(kListenerType), {}));  // answered from `shown` (no listeners)
  pipeline_->ConfigUpdate(ServiceChange("b"));
  Settle();
  const std::shared_ptr<const PushContext> second = pipeline_->context();
  ASSERT_NE(second, shown);
  pipeline_->ConfigUpdate(ServiceChange("a"));
  Settle();
  ASSERT_EQ(previous_of["envoy-kept-out"].size(), 2u);
  EXPECT_EQ(previous_of["envoy-kept-out"][0], shown.get());
  EXPECT_EQ(previous_of["envoy-kept-out"][1], shown.get()) << "kept out of the second push: it still holds the first";
  ASSERT_EQ(previous_of["envoy-other"].size(), 2u);
  EXPECT_EQ(previous_of["envoy-other"][0], shown.get());
  EXPECT_EQ(previous_of["envoy-other"][1], second.get()) << "let into the second push: shown it";
}

TEST_F(PushPipelineTest, ConvergenceStagesAreRecordedInOrderForEachProxyUpToTheAck) {
  pipeline_->ConfigUpdate(ServiceChange("a"));
  Settle();
  auto p1 = Connect("envoy-1", 1);
  auto p2 = Connect("envoy-2", 2);
  Subscribe(*p1);
  Subscribe(*p2);

  model_.SetEndpoints("a", {4000});
  pipeline_->ConfigUpdate(EndpointChange("a"));
  const uint64_t id = tracker_.RecentIds().back();
  scheduler_.AdvanceBy(absl::Milliseconds(100));
  auto r1 = p1->Take();
  auto r2 = p2->Take();
  ASSERT_EQ(r1.size(), 1u);
  ASSERT_EQ(r2.size(), 1u);
  scheduler_.simulated_clock().Advance(absl::Milliseconds(7));
  p1->Send(Ack(r1[0], {"a", "b"}));
  p2->Send(Nack(r2[0], {"a", "b"}, "v-old", "bad endpoint"));

  const auto change = tracker_.Get(id);
  ASSERT_TRUE(change.has_value());
  ASSERT_TRUE(change->debounced.has_value());
  ASSERT_TRUE(change->push_started.has_value());
  EXPECT_EQ(change->push_number, 2u) << "the second debounced push (after the initial one)";
  EXPECT_FALSE(change->full);
  EXPECT_LE(change->received, *change->debounced);
  EXPECT_LE(*change->debounced, *change->push_started);
  ASSERT_EQ(change->proxies.size(), 2u);
  for (const auto& [stream_id, proxy] : change->proxies) {
    ASSERT_TRUE(proxy.queued.has_value()) << stream_id;
    ASSERT_TRUE(proxy.dequeued.has_value());
    ASSERT_TRUE(proxy.done.has_value());
    ASSERT_EQ(proxy.types.size(), 1u);
    EXPECT_LE(*change->push_started, *proxy.queued);
    EXPECT_LE(*proxy.queued, *proxy.dequeued);
    EXPECT_LE(*proxy.dequeued, proxy.types[0].sent);
    ASSERT_TRUE(proxy.types[0].answered.has_value());
    EXPECT_EQ(*proxy.types[0].answered - proxy.types[0].sent, absl::Milliseconds(7));
    EXPECT_EQ(proxy.types[0].type_url, kEndpointType);
  }
  EXPECT_TRUE(change->proxies.at(1).types[0].accepted);
  EXPECT_FALSE(change->proxies.at(1).rejected());
  EXPECT_FALSE(change->proxies.at(2).types[0].accepted);
  EXPECT_EQ(change->proxies.at(2).types[0].error, "bad endpoint");
  EXPECT_TRUE(change->proxies.at(2).rejected());
  const std::string text = metrics_.RenderPrometheus();
  // Only the ACKed proxy converged; the NACK counts as a reject.
  EXPECT_NE(text.find("pilot_total_xds_rejects{type=\"eds\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("pilot_proxy_convergence_time_count"), std::string::npos) << text;
}

// Requests are processed before write completions, so a fast client's ACK can be handled
// before the stream learns its response was written: convergence is still recorded, once.
TEST_F(PushPipelineTest, ConvergenceIsRecordedWhenTheAckIsHandledBeforeTheWriteCompletion) {
  pipeline_->ConfigUpdate(ServiceChange("a"));
  Settle();
  auto proxy = Connect("envoy-1", 1);
  Subscribe(*proxy);
  model_.SetEndpoints("a", {5000});
  pipeline_->ConfigUpdate(EndpointChange("a"));
  Settle();
  ASSERT_TRUE(proxy->transport().write_in_flight);
  const DiscoveryResponse update = proxy->transport().writes.back();
  scheduler_.simulated_clock().Advance(absl::Milliseconds(3));
  proxy->Send(Ack(update, {"a", "b"}));  // the ACK first
  EXPECT_EQ(metrics_.RenderPrometheus().find("pilot_proxy_convergence_time_count 1"), std::string::npos)
      << "not converged while the write is still outstanding";
  proxy->CompleteWrite();  // then the write completion
  const std::string text = metrics_.RenderPrometheus();
  EXPECT_NE(text.find("pilot_proxy_convergence_time_count 1\n"), std::string::npos) << text;
  auto written = proxy->Take();
  ASSERT_EQ(written.size(), 1u) << "only the update itself";
  EXPECT_EQ(written[0].nonce(), update.nonce());
}

TEST_F(PushPipelineTest, VersionsDeriveFromContentAndNoncesStartWithTheVersion) {
  pipeline_->ConfigUpdate(ServiceChange("a"));
  Settle();
  auto proxy = Connect("envoy-1", 1);
  proxy->Send(Request(std::string(kClusterType), {}));
  auto first = proxy->Take();
  ASSERT_EQ(first.size(), 1u);

  // A second, independent pipeline over the same configuration (another replica, or a restart).
  SimulatedScheduler other_scheduler;
  PushPipeline::Options options;
  options.scheduler = &other_scheduler;
  PushPipeline other(std::make_shared<TestContextBuilder>(model_), options);
  other.AddGenerator(std::string(kClusterType), clusters_);
  other.ConfigUpdate(ServiceChange("a"));
  other_scheduler.AdvanceBy(absl::Milliseconds(100));
  EXPECT_EQ(other.context()->version(), pipeline_->context()->version());
  auto other_proxy = Connect("envoy-1", 7, &other);
  other_proxy->Send(Request(std::string(kClusterType), {}));
  auto second = other_proxy->Take();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].version_info(), first[0].version_info());
  EXPECT_EQ(first[0].nonce().rfind(first[0].version_info(), 0), 0u) << first[0].nonce();
  EXPECT_NE(first[0].nonce(), second[0].nonce()) << "nonces are unique per stream";
}

TEST_F(PushPipelineTest, AFailedContextBuildKeepsTheLastGoodContextServing) {
  pipeline_->ConfigUpdate(ServiceChange("a"));
  Settle();
  auto proxy = Connect("envoy-1", 1);
  Subscribe(*proxy);
  const std::string good = pipeline_->context()->version();
  builder_->fail = true;
  model_.SetService("broken");
  pipeline_->ConfigUpdate(ServiceChange("broken"));
  Settle();
  EXPECT_EQ(pipeline_->context()->version(), good);
  EXPECT_EQ(pipeline_->stats().context_errors, 1u);
  EXPECT_TRUE(proxy->Take().empty());
}

TEST_F(PushPipelineTest, NewlySubscribedNamesAreGeneratedNarrowly) {
  pipeline_->ConfigUpdate(ServiceChange("a"));
  Settle();
  auto proxy = Connect("envoy-1", 1);
  proxy->Send(Request(std::string(kEndpointType), {"a"}));
  auto first = proxy->Take();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(endpoints_->last_watched(), (std::set<std::string>{"a"}));
  proxy->Send(Ack(first[0], {"a"}));
  proxy->Send(Request(std::string(kEndpointType), {"a", "b"}, first[0].version_info(), first[0].nonce()));
  auto second = proxy->Take();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(endpoints_->last_watched(), (std::set<std::string>{"b"})) << "only the new name is generated";
  EXPECT_EQ(NamesOf(second[0]), (std::vector<std::string>{"b"}));
}

// The snapshot cache's updates take the same path: PushQueue and throttle.
TEST_F(PushPipelineTest, SnapshotCacheUpdatesGoThroughTheSameQueueAndThrottle) {
  auto throttled = InlineDispatcher(1, &tracker_, nullptr, &scheduler_.clock());
  SnapshotCache cache;
  StreamHarnessOptions options;
  options.dispatcher = throttled.get();
  StreamHarness first(cache, "", nullptr, "node-1", 1, options);
  StreamHarness second(cache, "", nullptr, "node-1", 2, options);
  first.Send(Request(std::string(kClusterType), {}));
  second.Send(Request(std::string(kClusterType), {}));
  ASSERT_TRUE(cache.SetSnapshot("node-1", MustSnapshot("v1", {StaticCluster("x")})).ok());
  // One slot: the streams take their pushes one after the other, and each passes the slot on
  // once its push is computed and its write started, so neither waits for the other's write.
  EXPECT_EQ(first.transport().writes.size(), 1u);
  EXPECT_EQ(second.transport().writes.size(), 1u);
  EXPECT_EQ(throttled->max_in_flight_seen(), 1);
  EXPECT_EQ(throttled->in_flight(), 0);
  EXPECT_EQ(throttled->queue().Processing(), 2u) << "both pushes stay in progress until written";
  first.CompleteWrite();
  second.CompleteWrite();
  EXPECT_EQ(throttled->queue().Processing(), 0u);
  EXPECT_EQ(throttled->in_flight(), 0);
  const auto change = tracker_.Get(tracker_.RecentIds().back());
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->proxies.size(), 2u) << "snapshot changes are tracked per stream too";
}

// New streams are admitted at a bounded rate: a stream's first read waits for its turn, and a
// stream that would wait longer than the limit is refused.
TEST(StreamAdmissionTest, NewStreamsStartAtTheAdmissionRate) {
  SimulatedScheduler scheduler;
  AdmissionLimiter limiter(1, absl::Seconds(1), scheduler.clock());
  SnapshotCache cache;
  StreamHarnessOptions options;
  options.scheduler = &scheduler;
  options.admission = &limiter;
  StreamHarness first(cache, "", nullptr, "n", 1, options);
  StreamHarness second(cache, "", nullptr, "n", 2, options);
  StreamHarness third(cache, "", nullptr, "n", 3, options);
  EXPECT_EQ(first.transport().reads_requested, 1);
  EXPECT_EQ(second.transport().reads_requested, 0) << "waits for its turn";
  ASSERT_TRUE(third.transport().finished.has_value());
  EXPECT_EQ(third.transport().finished->code(), absl::StatusCode::kResourceExhausted);
  scheduler.AdvanceBy(absl::Milliseconds(999));
  EXPECT_EQ(second.transport().reads_requested, 0);
  scheduler.AdvanceBy(absl::Milliseconds(1));
  EXPECT_EQ(second.transport().reads_requested, 1);
}

// Until the first full load, new streams end with UNAVAILABLE rather than get an empty
// configuration (docs/protocol-rules.md, "Readiness").
TEST(StreamReadinessTest, StreamsAreRefusedWithUnavailableUntilReady) {
  SnapshotCache cache;
  bool ready = false;
  StreamHarnessOptions options;
  options.ready = [&ready] { return ready; };
  StreamHarness early(cache, "", nullptr, "n", 1, options);
  ASSERT_TRUE(early.transport().finished.has_value());
  EXPECT_EQ(early.transport().finished->code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(early.transport().reads_requested, 0);
  ready = true;
  StreamHarness later(cache, "", nullptr, "n", 2, options);
  EXPECT_FALSE(later.transport().finished.has_value());
  EXPECT_EQ(later.transport().reads_requested, 1);
}

// /debug/push_status is bounded: at most kMaxPushRecords pushes, each naming at most
// kMaxChangeIdsNamed change ids (the newest) and counting them all.
TEST_F(PushPipelineTest, PushRecordsAreBounded) {
  for (size_t i = 0; i < PushPipeline::kMaxPushRecords + 5; ++i) {
    PushRequest request = ServiceChange("a");
    for (uint64_t id = 1; id <= 100; ++id) request.change_ids.insert(1000 * (i + 1) + id);
    ASSERT_TRUE(pipeline_->Push(request).ok());
  }
  const std::vector<PushPipeline::PushRecord> records = pipeline_->RecentPushes();
  ASSERT_EQ(records.size(), PushPipeline::kMaxPushRecords);
  const PushPipeline::PushRecord& last = records.back();
  EXPECT_EQ(last.change_ids_total, 100u);
  ASSERT_EQ(last.change_ids.size(), PushPipeline::kMaxChangeIdsNamed);
  EXPECT_EQ(last.change_ids.back(), 1000 * (PushPipeline::kMaxPushRecords + 5) + 100);
}

// A typed generator checks the kind of the push context it is given (issue 12): another
// model's context is an error for the push, never a wrong downcast.
class OtherContext final : public PushContext {
 public:
  OtherContext() : PushContext("other", 1, absl::UnixEpoch()) {}
};

class OtherContextGenerator final : public TypedGenerator<OtherContext> {
 public:
  int calls = 0;

 protected:
  absl::StatusOr<std::optional<GeneratedResources>> GenerateFor(const Proxy&, const WatchedResources&,
                                                                const PushRequest&, const OtherContext& context,
                                                                const GeneratorEnv&) override {
    calls++;
    EXPECT_EQ(context.version(), "other");
    return GeneratedResources{};
  }
};

TEST(TypedGeneratorTest, AContextOfAnotherKindIsAnErrorNotADowncast) {
  OtherContextGenerator generator;
  ResourceCache cache;
  WatchedResources watched;
  watched.type_url = std::string(kClusterType);
  const PushContext plain("plain", 1, absl::UnixEpoch());
  Generator& untyped = generator;
  absl::StatusOr<std::optional<GeneratedResources>> wrong =
      untyped.Generate(Proxy{}, watched, PushRequest{}, GeneratorEnv{plain, cache});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition) << wrong.status();
  EXPECT_EQ(generator.calls, 0);
  const OtherContext right;
  absl::StatusOr<std::optional<GeneratedResources>> generated =
      untyped.Generate(Proxy{}, watched, PushRequest{}, GeneratorEnv{right, cache});
  ASSERT_TRUE(generated.ok()) << generated.status();
  EXPECT_EQ(generator.calls, 1);
}

}  // namespace
}  // namespace cxds::testing
