// The generating pipeline behind the real gRPC server on 127.0.0.1: one XdsServer sharing the
// pipeline's PushDispatcher, real scheduler and clock, a FakeXdsClient per proxy. Checks that
// a full push, an incremental (endpoint-only) push and the convergence record reach the wire
// and the ACK.
#include <memory>

#include "fakes/fake_xds_client.h"
#include "fakes/test_model.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "pipeline/convergence_tracker.h"
#include "pipeline/push_pipeline.h"
#include "server/xds_server.h"

namespace cxds::testing {
namespace {

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);
constexpr absl::Duration kWait = absl::Seconds(10);

class PipelineServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_.SetService("a");
    model_.SetService("b");
    model_.SetEndpoints("a", {1001});
    model_.SetEndpoints("b", {1002});
    PushDispatcher::Options dispatch;
    dispatch.worker_threads = 2;
    dispatch.metrics = &metrics_;
    dispatch.observer = &tracker_;
    dispatcher_ = std::make_unique<PushDispatcher>(dispatch);
    PushPipeline::Options options;
    options.scheduler = &scheduler_;
    options.debounce.debounce_after = absl::Milliseconds(10);
    options.metrics = &metrics_;
    options.observer = &tracker_;
    pipeline_ = std::make_unique<PushPipeline>(std::make_shared<TestContextBuilder>(model_), options);
    pipeline_->AddGenerator(kCds, std::make_shared<TestClusterGenerator>());
    pipeline_->AddGenerator(kEds, std::make_shared<TestEndpointGenerator>(model_));
    ASSERT_TRUE(pipeline_->Push(ServiceChange()).ok());

    XdsServer::Options server_options;
    server_options.dispatcher = dispatcher_.get();
    server_options.metrics = &metrics_;
    server_options.observer = &tracker_;
    xds_ = std::make_unique<XdsServer>(*pipeline_, server_options);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    xds_->RegisterServices(builder);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    server_->Shutdown();
    server_.reset();
    xds_.reset();
  }
  static PushRequest ServiceChange() {
    PushRequest r;
    r.full = true;
    r.configs = {ServiceKey("a"), ServiceKey("b")};
    r.reasons = {{reason::kConfig, 1}};
    return r;
  }
  std::string Target() const { return "127.0.0.1:" + std::to_string(port_); }

  RealScheduler scheduler_;
  MetricsRegistry metrics_;
  ConvergenceTracker tracker_;
  TestModel model_;
  std::unique_ptr<PushDispatcher> dispatcher_;
  std::unique_ptr<PushPipeline> pipeline_;
  std::unique_ptr<XdsServer> xds_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(PipelineServerTest, EndpointChangeIsAnIncrementalEdsPushAckedOverRealGrpc) {
  FakeXdsClient client(Target(), "envoy-1");
  ASSERT_TRUE(client.Subscribe(kCds, {}));
  auto cds = client.WaitForResponse(kCds, kWait);
  ASSERT_TRUE(cds.has_value());
  EXPECT_EQ(cds->resources_size(), 2);
  ASSERT_TRUE(client.Ack(*cds));
  ASSERT_TRUE(client.Subscribe(kEds, {"a", "b"}));
  auto eds = client.WaitForResponse(kEds, kWait);
  ASSERT_TRUE(eds.has_value());
  EXPECT_EQ(eds->resources_size(), 2);
  ASSERT_TRUE(client.Ack(*eds));

  model_.SetEndpoints("a", {1005});
  PushRequest change;
  change.configs = {EndpointsKey("a")};
  change.reasons = {{reason::kEndpoint, 1}};
  pipeline_->ConfigUpdate(change);
  // The next response is EDS with only `a` (no CDS response: its generator has nothing).
  auto update = client.WaitForResponse(kWait);
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(update->type_url(), kEds);
  ASSERT_EQ(update->resources_size(), 1);
  ASSERT_TRUE(client.Ack(*update));

  const uint64_t id = tracker_.RecentIds().back();
  // The ACK arrives on a gRPC thread, and the write's completion (which ends the push) on
  // another; either may come first. Convergence is recorded at the later of the two, before
  // the tracker hears of it, so wait (bounded) until the tracker has both.
  const absl::Time give_up = absl::Now() + kWait;
  std::optional<ChangeStages> stages;
  for (;;) {
    stages = tracker_.Get(id);
    if ((stages.has_value() && !stages->proxies.empty() && stages->proxies.begin()->second.answered() &&
         stages->proxies.begin()->second.done.has_value() && !stages->proxies.begin()->second.types.empty()) ||
        absl::Now() > give_up) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_TRUE(stages.has_value());
  ASSERT_EQ(stages->proxies.size(), 1u);
  const ProxyStages& proxy = stages->proxies.begin()->second;
  EXPECT_EQ(proxy.node_id, "envoy-1");
  ASSERT_EQ(proxy.types.size(), 1u);
  EXPECT_EQ(proxy.types[0].nonce, update->nonce());
  EXPECT_TRUE(proxy.types[0].accepted);
  EXPECT_TRUE(proxy.done.has_value());
  EXPECT_FALSE(stages->full);
  EXPECT_EQ(pipeline_->stats().incremental_pushes, 1u);
  const std::string text = metrics_.RenderPrometheus();
  EXPECT_NE(text.find("pilot_proxy_convergence_time_count 1"), std::string::npos) << text;
  EXPECT_NE(text.find("pilot_xds{version=\"unknown\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("pilot_push_triggers{type=\"endpoint\"} 1"), std::string::npos) << text;
}

}  // namespace
}  // namespace cxds::testing
