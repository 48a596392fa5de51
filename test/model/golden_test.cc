// Golden files: the whole xDS the mesh generators give an Envoy node and a proxyless gRPC node
// for test/golden/mesh.yaml (one of each translated feature), as text protos with every Any
// expanded and map entries sorted, so that a review sees exactly what a translation change does
// to what proxies receive. Every resource is also checked against Envoy's PGV rules
// (fakes/pgv_check.h): what Envoy would refuse on load fails here.
//
// CXDS_UPDATE_GOLDEN=1 rewrites the files instead of comparing (then review `git diff`).
#include <cstdlib>
#include <fstream>
#include <set>

#include "common/files.h"
#include "common/line_diff.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "fakes/inline_dispatcher.h"
#include "fakes/pgv_check.h"
#include "fakes/stream_harness.h"
#include "gmock/gmock.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "model/generators.h"
#include "protocol/type_url.h"

namespace cxds::testing {
namespace {

const std::string kGoldenDir = std::string(CXDS_SOURCE_DIR) + "/test/golden/";

class GoldenTest : public ::testing::Test {
 protected:
  // The config files served, by path.
  virtual std::vector<std::string> Files() const { return {kGoldenDir + "mesh.yaml"}; }

  void SetUp() override {
    for (const std::string& path : Files()) {
      absl::StatusOr<std::string> content = ReadSmallFile(path, 1 << 20, "mesh config");
      ASSERT_TRUE(content.ok()) << content.status();
      const ConfigStore::Update update = store_.ApplyFile(path.substr(path.rfind('/') + 1), *content);
      ASSERT_TRUE(update.errors.empty()) << update.errors.front().ToString();
      model_.OnUpdate(update);
    }
    PushPipeline::Options options;
    options.scheduler = &scheduler_;
    options.proxy_filter = MeshProxyFilter(model_);
    options.proxy_update = MeshProxyUpdate(model_);
    pipeline_ = std::make_unique<PushPipeline>(std::shared_ptr<PushContextBuilder>(&model_, [](auto*) {}), options);
    AddMeshGenerators(*pipeline_, model_);
    PushRequest initial;
    initial.full = true;
    ASSERT_TRUE(pipeline_->Push(initial).ok());
  }

  std::unique_ptr<StreamHarness> Connect(const std::string& id, bool grpc) {
    StreamHarnessOptions options;
    options.dispatcher = dispatcher_.get();
    node_.set_id(id);
    node_.mutable_metadata()->Clear();
    if (grpc) (*node_.mutable_metadata()->mutable_fields())["GENERATOR"].set_string_value("grpc");
    (*node_.mutable_metadata()->mutable_fields())["NAMESPACE"].set_string_value("web");
    return std::make_unique<StreamHarness>(*pipeline_, "", nullptr, id, 1, options);
  }

  // The one response to `request`, its resources appended to `out` in name order.
  DiscoveryResponse Ask(StreamHarness& proxy, DiscoveryRequest request, bool first, std::string& out) {
    if (first) *request.mutable_node() = node_;
    const std::string type = request.type_url();
    proxy.Send(std::move(request));
    std::vector<DiscoveryResponse> responses = proxy.Take();
    EXPECT_EQ(responses.size(), 1u) << type;
    if (responses.empty()) return {};
    std::map<std::string, std::string> by_name;
    for (const auto& any : responses[0].resources()) {
      const std::string full_name(any.type_url().substr(any.type_url().rfind('/') + 1));
      const google::protobuf::Descriptor* descriptor =
          google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(full_name);
      EXPECT_NE(descriptor, nullptr) << full_name;
      if (descriptor == nullptr) continue;
      std::unique_ptr<google::protobuf::Message> message(
          google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
      EXPECT_TRUE(message->ParseFromString(any.value()));
      EXPECT_THAT(PgvChecker().Check(*message), ::testing::IsEmpty()) << message->DebugString();
      google::protobuf::TextFormat::Printer printer;
      printer.SetExpandAny(true);
      std::string text;
      printer.PrintToString(*message, &text);
      const google::protobuf::FieldDescriptor* name_field = descriptor->FindFieldByName("name");
      if (name_field == nullptr) name_field = descriptor->FindFieldByName("cluster_name");
      const std::string name =
          name_field != nullptr ? message->GetReflection()->GetString(*message, name_field) : std::string("?");
      by_name[name] = StrCat("# ", full_name, " ", name, "\n", text);
    }
    for (const auto& [name, text] : by_name) out += text;
    return responses[0];
  }

  void ExpectGolden(const std::string& file, const std::string& actual) {
    const std::string path = kGoldenDir + file;
    if (const char* update = std::getenv("CXDS_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << actual;
      GTEST_SKIP() << "wrote " << path;
    }
    absl::StatusOr<std::string> expected = ReadSmallFile(path, 4 << 20, "golden file");
    ASSERT_TRUE(expected.ok()) << expected.status() << " (CXDS_UPDATE_GOLDEN=1 writes it)";
    EXPECT_EQ(UnifiedLineDiff(*expected, actual, path, "generated now"), "")
        << "the generated xDS differs from " << path << "; if the change is meant, rerun with CXDS_UPDATE_GOLDEN=1";
  }

  SimulatedScheduler scheduler_;
  ConfigStore store_;
  MeshModel model_{store_, "cluster.local"};
  std::unique_ptr<PushDispatcher> dispatcher_ = InlineDispatcher();
  std::unique_ptr<PushPipeline> pipeline_;
  envoy::config::core::v3::Node node_;
};

// Names in a response's resources, decoded as `M`.
template <typename M>
std::vector<M> Decoded(const DiscoveryResponse& response) {
  std::vector<M> out;
  for (const auto& any : response.resources()) {
    M message;
    if (any.UnpackTo(&message)) out.push_back(std::move(message));
  }
  return out;
}

// The route configurations the listeners of an LDS response name.
std::set<std::string> RouteConfigNames(const DiscoveryResponse& lds) {
  std::set<std::string> routes;
  for (const auto& listener : Decoded<envoy::config::listener::v3::Listener>(lds)) {
    for (const auto& chain : listener.filter_chains()) {
      for (const auto& filter : chain.filters()) {
        envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
        if (filter.typed_config().UnpackTo(&hcm)) routes.insert(hcm.rds().route_config_name());
      }
    }
  }
  return routes;
}

// An Envoy sidecar of namespace web: every cluster and listener (wildcard), the route
// configurations its listeners name, the endpoints of every EDS cluster.
TEST_F(GoldenTest, EnvoySidecar) {
  auto proxy = Connect("sidecar~127.0.0.5~app-1.web~web.svc.cluster.local", false);
  std::string out;
  const DiscoveryResponse cds = Ask(*proxy, Request(std::string(kClusterType), {}), true, out);
  std::vector<std::string> clusters;
  for (const auto& c : Decoded<envoy::config::cluster::v3::Cluster>(cds)) clusters.push_back(c.name());
  Ask(*proxy, Request(std::string(kEndpointType), clusters), false, out);
  const DiscoveryResponse lds = Ask(*proxy, Request(std::string(kListenerType), {}), false, out);
  const std::set<std::string> routes = RouteConfigNames(lds);
  ASSERT_FALSE(routes.empty());
  Ask(*proxy, Request(std::string(kRouteType), {routes.begin(), routes.end()}), false, out);
  ExpectGolden("envoy_sidecar.txtpb", out);
}

// A gateway proxy picked by the Gateway web/ingress: its listeners (wildcard: two plain HTTP
// ones, a TLS passthrough one and a TCP one), their route configurations http.PORT. Its clusters
// are every service's, as the sidecar's above.
TEST_F(GoldenTest, EnvoyGateway) {
  auto proxy = Connect("router~127.0.0.9~ingress-1.edge~edge.svc.cluster.local", false);
  (*(*node_.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value()->mutable_fields())["istio"]
      .set_string_value("ingressgateway");
  std::string out;
  const DiscoveryResponse lds = Ask(*proxy, Request(std::string(kListenerType), {}), true, out);
  const std::set<std::string> routes = RouteConfigNames(lds);
  ASSERT_EQ(routes, (std::set<std::string>{"http.8088", "http.8089"}));
  Ask(*proxy, Request(std::string(kRouteType), {routes.begin(), routes.end()}), false, out);
  ExpectGolden("envoy_gateway.txtpb", out);
}

// A proxyless gRPC client of namespace web, asking by name as gRPC does: the API listeners of
// both HTTP services, their route configurations, the clusters those name, their endpoints.
TEST_F(GoldenTest, ProxylessGrpcClient) {
  auto proxy = Connect("grpc-client-1", true);
  std::string out;
  const std::vector<std::string> targets = {"payments.example.internal:9443", "shop.web.svc.cluster.local:8080"};
  Ask(*proxy, Request(std::string(kListenerType), targets), true, out);
  const DiscoveryResponse rds = Ask(*proxy, Request(std::string(kRouteType), targets), false, out);
  std::set<std::string> clusters;
  for (const auto& config : Decoded<envoy::config::route::v3::RouteConfiguration>(rds)) {
    for (const auto& vhost : config.virtual_hosts()) {
      for (const auto& route : vhost.routes()) {
        if (!route.route().cluster().empty()) clusters.insert(route.route().cluster());
        for (const auto& weighted : route.route().weighted_clusters().clusters()) clusters.insert(weighted.name());
      }
    }
  }
  ASSERT_FALSE(clusters.empty());
  Ask(*proxy, Request(std::string(kClusterType), {clusters.begin(), clusters.end()}), false, out);
  Ask(*proxy, Request(std::string(kEndpointType), {clusters.begin(), clusters.end()}), false, out);
  ExpectGolden("proxyless_grpc.txtpb", out);
}

// examples/bookinfo as `make run-bookinfo` serves it: what its README says a gateway proxy is
// sent for gateway.yaml.
class BookinfoExampleTest : public GoldenTest {
 protected:
  std::vector<std::string> Files() const override {
    const std::string dir = std::string(CXDS_SOURCE_DIR) + "/examples/bookinfo/";
    std::vector<std::string> files;
    for (const char* name : {"services.yaml", "endpoints.yaml", "pods.yaml", "details.yaml", "ratings-vm.yaml",
                             "routing.yaml", "gateway.yaml"}) {
      files.push_back(dir + name);
    }
    return files;
  }
};

TEST_F(BookinfoExampleTest, TheIngressGatewayServesTheRoutesItsReadmeNames) {
  auto proxy = Connect("router~127.0.0.30~ingress-1.bookinfo~bookinfo.svc.cluster.local", false);
  (*(*node_.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value()->mutable_fields())["istio"]
      .set_string_value("ingressgateway");
  std::string out;
  const DiscoveryResponse lds = Ask(*proxy, Request(std::string(kListenerType), {}), true, out);
  std::vector<std::string> listeners;
  for (const auto& listener : Decoded<envoy::config::listener::v3::Listener>(lds)) listeners.push_back(listener.name());
  EXPECT_THAT(listeners, ::testing::ElementsAre("127.0.0.1_8080"));
  ASSERT_EQ(RouteConfigNames(lds), (std::set<std::string>{"http.8080"}));
  const DiscoveryResponse rds = Ask(*proxy, Request(std::string(kRouteType), {"http.8080"}), false, out);
  const auto configs = Decoded<envoy::config::route::v3::RouteConfiguration>(rds);
  ASSERT_EQ(configs.size(), 1u);
  ASSERT_EQ(configs[0].virtual_hosts_size(), 1);
  const auto& vhost = configs[0].virtual_hosts(0);
  EXPECT_EQ(vhost.name(), "bookinfo.example.com:8080");
  std::vector<std::string> clusters;
  for (const auto& route : vhost.routes()) clusters.push_back(route.route().cluster());
  EXPECT_THAT(clusters, ::testing::ElementsAre("outbound|9080|v1|reviews.bookinfo.svc.cluster.local",
                                               "outbound|9080||ratings.bookinfo.svc.cluster.local"));
}

}  // namespace
}  // namespace cxds::testing
