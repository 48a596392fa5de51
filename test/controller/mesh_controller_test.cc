// MeshController without gRPC and without sleeping: files from a fake ConfigSource become a
// ConfigUpdate, a push debounced on the simulated scheduler, and a response generated for a
// proxy on the fake transport. Refused files change nothing that is served.
#include "controller/mesh_controller.h"

#include <deque>

#include "absl/synchronization/notification.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "fakes/stream_harness.h"
#include "gtest/gtest.h"

namespace cxds::testing {
namespace {

constexpr char kMesh[] = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: inventory}
spec:
  resolution: STATIC
  hosts: [inventory.mesh.local]
  ports: [{number: 8080, name: grpc, protocol: GRPC}]
  workloadSelector: {labels: {app: inventory}}
)";

std::string Workload(int port) {
  return "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: inventory-1}\n"
         "spec: {address: 127.0.0.1, ports: {grpc: " +
         std::to_string(port) + "}, labels: {app: inventory}}\n";
}

FileRead Present(const std::string& path, const std::string& content) { return FileRead::Present(path, content); }

// What a directory or a store would deliver, under the test's control.
class FakeSource final : public ConfigSource {
 public:
  explicit FakeSource(absl::StatusOr<std::vector<FileRead>> initial) : initial_(std::move(initial)) {}
  std::string Describe() const override { return "fake"; }
  absl::StatusOr<std::vector<FileRead>> Load() override { return initial_; }
  absl::Status Start(OnBatch on_batch) override {
    *on_batch_ = std::move(on_batch);
    return absl::OkStatus();
  }
  void Stop() override { *stopped_ = true; }

  // Shared with the test, which keeps them after the controller owns the source.
  std::shared_ptr<OnBatch> on_batch_ = std::make_shared<OnBatch>();
  std::shared_ptr<bool> stopped_ = std::make_shared<bool>(false);

 private:
  absl::StatusOr<std::vector<FileRead>> initial_;
};

class MeshControllerTest : public ::testing::Test {
 protected:
  void Make(absl::StatusOr<std::vector<FileRead>> initial) {
    auto source = std::make_unique<FakeSource>(std::move(initial));
    deliver_ = source->on_batch_;
    stopped_ = source->stopped_;
    MeshController::Options options;
    options.metrics = &metrics_;
    controller_ = std::make_unique<MeshController>(options, std::move(source), scheduler_);
  }
  std::unique_ptr<StreamHarness> ConnectGrpc() {
    auto proxy = std::make_unique<StreamHarness>(controller_->pipeline(), "", nullptr, "grpc-client-1", 1);
    DiscoveryRequest first = Request(std::string(kEndpointType), {"outbound|8080||inventory.mesh.local"});
    first.mutable_node()->set_id("grpc-client-1");
    (*first.mutable_node()->mutable_metadata()->mutable_fields())["GENERATOR"].set_string_value("grpc");
    proxy->Send(first);
    return proxy;
  }
  static uint32_t PortOf(const DiscoveryResponse& response) {
    envoy::config::endpoint::v3::ClusterLoadAssignment cla;
    EXPECT_TRUE(response.resources(0).UnpackTo(&cla));
    return cla.endpoints(0).lb_endpoints(0).endpoint().address().socket_address().port_value();
  }
  double Gauge(const std::string& name) { return metrics_.GetGauge(name, "").value(); }

  SimulatedScheduler scheduler_;
  MetricsRegistry metrics_;
  std::unique_ptr<MeshController> controller_;
  std::shared_ptr<ConfigSource::OnBatch> deliver_;
  std::shared_ptr<bool> stopped_;
};

TEST_F(MeshControllerTest, ReadyOnlyAfterTheFirstFullPush) {
  Make(std::vector<FileRead>{Present("mesh.yaml", kMesh), Present("workload.yaml", Workload(18081))});
  EXPECT_FALSE(controller_->ready());
  ASSERT_TRUE(controller_->Start().ok());
  EXPECT_TRUE(controller_->ready());
  EXPECT_EQ(controller_->store().Snapshot()->size(), 2u);
  auto proxy = ConnectGrpc();
  auto responses = proxy->Take();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(PortOf(responses[0]), 18081u);
  controller_->Stop();
  EXPECT_TRUE(*stopped_);
}

// A resolver that answers only when the test lets it: DNS that does not answer.
class HeldResolver final : public NameResolver {
 public:
  absl::StatusOr<std::vector<std::string>> Resolve(const std::string& name) override {
    called.Notify();
    release.WaitForNotification();
    return std::vector<std::string>{"127.0.0.9"};
  }
  absl::Notification called, release;
};

// Start-up never waits on DNS: with the resolver stuck, the first push is made and the
// controller is ready; the name is resolved on the refresher's own thread.
TEST(MeshControllerDnsTest, StartDoesNotWaitForNamesToResolve) {
  HeldResolver resolver;
  SimulatedScheduler scheduler;
  MeshController::Options options;
  options.resolver = &resolver;
  auto source = std::make_unique<FakeSource>(std::vector<FileRead>{
      FileRead::Present("dns.yaml",
                        "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: api}\nspec:\n"
                        "  hosts: [api.example.com]\n  ports: [{number: 80, name: http}]\n  resolution: DNS\n")});
  {
    MeshController controller(options, std::move(source), scheduler);
    ASSERT_TRUE(controller.Start().ok());
    EXPECT_TRUE(controller.ready());
    resolver.called.WaitForNotification();  // on the refresher's thread, after Start returned
    resolver.release.Notify();
  }
}

TEST_F(MeshControllerTest, AnUnreadableSourceIsAnErrorAndNothingIsServed) {
  Make(absl::NotFoundError("config directory /nowhere does not exist"));
  absl::Status status = controller_->Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("/nowhere"), std::string::npos);
  EXPECT_FALSE(controller_->ready());
}

TEST_F(MeshControllerTest, AFileChangeIsDebouncedThenPushedToTheProxy) {
  Make(std::vector<FileRead>{Present("mesh.yaml", kMesh), Present("workload.yaml", Workload(18081))});
  ASSERT_TRUE(controller_->Start().ok());
  auto proxy = ConnectGrpc();
  auto first = proxy->Take();
  ASSERT_EQ(first.size(), 1u);
  proxy->Send(Ack(first[0], {"outbound|8080||inventory.mesh.local"}));

  ASSERT_TRUE(*deliver_);
  (*deliver_)({Present("workload.yaml", Workload(18092))});
  EXPECT_TRUE(proxy->Take().empty()) << "nothing before the debounce period ends";
  scheduler_.AdvanceBy(MeshController::Options{}.debounce.debounce_after);
  auto update = proxy->Take();
  ASSERT_EQ(update.size(), 1u);
  EXPECT_EQ(update[0].type_url(), kEndpointType);
  EXPECT_EQ(PortOf(update[0]), 18092u);
  EXPECT_NE(update[0].version_info(), first[0].version_info());
}

TEST_F(MeshControllerTest, ARefusedFileKeepsTheLastGoodConfigAndPushesNothing) {
  Make(std::vector<FileRead>{Present("mesh.yaml", kMesh), Present("workload.yaml", Workload(18081))});
  ASSERT_TRUE(controller_->Start().ok());
  auto proxy = ConnectGrpc();
  auto first = proxy->Take();
  ASSERT_EQ(first.size(), 1u);
  proxy->Send(Ack(first[0], {"outbound|8080||inventory.mesh.local"}));

  const uint64_t change = controller_->ApplyBatch(
      {Present("workload.yaml",
               "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\n"
               "metadata: {name: inventory-1}\nspec: {address: not-an-ip, ports: {grpc: 1}}\n")});
  EXPECT_EQ(change, 0u) << "a refused file changes nothing that is served";
  scheduler_.AdvanceBy(absl::Seconds(11));
  EXPECT_TRUE(proxy->Take().empty());
  EXPECT_EQ(Gauge("cxds_config_errors"), 1);
  EXPECT_EQ(controller_->store().Snapshot()->size(), 2u) << "the last good WorkloadEntry stays";

  // Fixed: the error clears and the change is pushed.
  EXPECT_NE(controller_->ApplyBatch({Present("workload.yaml", Workload(18093))}), 0u);
  scheduler_.AdvanceBy(absl::Milliseconds(100));
  auto update = proxy->Take();
  ASSERT_EQ(update.size(), 1u);
  EXPECT_EQ(PortOf(update[0]), 18093u);
  EXPECT_EQ(Gauge("cxds_config_errors"), 0);
}

// A Gateway is config like any other: added, it reaches the gateway proxy it picks through
// debounce and a full push (a listener for its server); removed, the listener is withdrawn.
TEST_F(MeshControllerTest, AGatewayAddedOrRemovedIsPushedToTheGatewayProxy) {
  Make(std::vector<FileRead>{Present("mesh.yaml", kMesh), Present("workload.yaml", Workload(18081))});
  ASSERT_TRUE(controller_->Start().ok());
  auto router = std::make_unique<StreamHarness>(controller_->pipeline(), "", nullptr, "router-1", 2);
  DiscoveryRequest first = Request(std::string(kListenerType), {});
  first.mutable_node()->set_id("router~127.0.0.9~ingress-1.edge~edge.svc.cluster.local");
  (*(*first.mutable_node()->mutable_metadata()->mutable_fields())["LABELS"]
        .mutable_struct_value()
        ->mutable_fields())["istio"]
      .set_string_value("ingressgateway");
  router->Send(first);
  auto none = router->Take();
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].resources_size(), 0) << "no Gateway picks it yet";
  router->Send(Ack(none[0], {}));

  const std::string gateway = R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*"]}]
)";
  ASSERT_NE(controller_->ApplyBatch({Present("gateway.yaml", gateway)}), 0u);
  scheduler_.AdvanceBy(MeshController::Options{}.debounce.debounce_after);
  auto added = router->Take();
  ASSERT_EQ(added.size(), 1u);
  ASSERT_EQ(added[0].resources_size(), 1);
  envoy::config::listener::v3::Listener listener;
  ASSERT_TRUE(added[0].resources(0).UnpackTo(&listener));
  EXPECT_EQ(listener.name(), "127.0.0.1_8080");
  router->Send(Ack(added[0], {}));

  ASSERT_NE(controller_->ApplyBatch({FileRead::Removed("gateway.yaml")}), 0u);
  scheduler_.AdvanceBy(MeshController::Options{}.debounce.debounce_after);
  auto removed = router->Take();
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].resources_size(), 0) << "State of the World: the listener is gone";
}

}  // namespace
}  // namespace cxds::testing
