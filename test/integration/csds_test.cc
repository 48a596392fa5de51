// CSDS over real gRPC (issue 15): a SotW proxy that ACKed CDS and NACKed EDS, and a Delta proxy
// that ACKed CDS, on one XdsServer; ClientStatusDiscoveryService on the same port reports each
// resource each holds with its version and status, filters by node id, and refuses what it does
// not evaluate.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "cache/snapshot_cache.h"
#include "common/status_matchers.h"
#include "envoy/service/status/v3/csds.grpc.pb.h"
#include "fakes/delta_ads_client.h"
#include "fakes/fake_xds_client.h"
#include "fakes/test_resources.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"
#include "server/xds_server.h"

namespace cxds {
namespace {

using envoy::admin::v3::ClientResourceStatus;
using envoy::service::discovery::v3::DiscoveryResponse;
using envoy::service::status::v3::ClientConfig;
using envoy::service::status::v3::ClientStatusDiscoveryService;
using envoy::service::status::v3::ClientStatusRequest;
using envoy::service::status::v3::ClientStatusResponse;
using envoy::service::status::v3::ConfigStatus;
using ::testing::HasSubstr;

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);
constexpr absl::Duration kWait = absl::Seconds(10);

class CsdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    xds_ = std::make_unique<XdsServer>(cache_, XdsServer::Options{});
    absl::StatusOr<std::unique_ptr<grpc::Server>> server = xds_->Start("127.0.0.1:0", &port_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    target_ = absl::StrCat("127.0.0.1:", port_);
    snapshot_ = testing::MustSnapshot("v1", {testing::EdsCluster("c1"), testing::EdsCluster("c2"),
                                             testing::Endpoints("c1", {8080}), testing::Endpoints("c2", {8081})});
    for (const char* node : {"sotw-proxy", "delta-proxy"}) ASSERT_OK(cache_.SetSnapshot(node, snapshot_));
    csds_ = ClientStatusDiscoveryService::NewStub(grpc::CreateChannel(target_, grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }

  ClientStatusResponse Fetch(const ClientStatusRequest& request, grpc::Status* status = nullptr) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    ClientStatusResponse response;
    grpc::Status result = csds_->FetchClientStatus(&context, request, &response);
    if (status != nullptr) *status = result;
    return response;
  }

  // Waits until the server's ledger says what the test made the proxies do.
  ClientStatusResponse FetchWhen(const std::function<bool(const ClientStatusResponse&)>& done) {
    ClientStatusResponse response;
    for (const absl::Time deadline = absl::Now() + kWait; absl::Now() < deadline;) {
      response = Fetch({});
      if (done(response)) break;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return response;
  }

  SnapshotCache cache_;
  std::unique_ptr<XdsServer> xds_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string target_;
  SnapshotPtr snapshot_;
  std::unique_ptr<ClientStatusDiscoveryService::Stub> csds_;
};

const ClientConfig* ConfigOf(const ClientStatusResponse& response, const std::string& node) {
  for (const ClientConfig& config : response.config()) {
    if (config.node().id() == node) return &config;
  }
  return nullptr;
}

// "TYPE name version config_status client_status [error]" per resource.
std::vector<std::string> Lines(const ClientConfig* config) {
  std::vector<std::string> out;
  if (config == nullptr) return out;
  for (const auto& xds : config->generic_xds_configs()) {
    out.push_back(absl::StrCat(std::string(ShortTypeName(xds.type_url())), " ", xds.name(), " ", xds.version_info(),
                               " ", ConfigStatus_Name(xds.config_status()), " ",
                               ClientResourceStatus_Name(xds.client_status()),
                               xds.has_error_state() ? absl::StrCat(" ", xds.error_state().details()) : ""));
  }
  return out;
}

TEST_F(CsdsTest, ReportsWhatEachProxyHoldsAndWhatItSaidOfIt) {
  testing::FakeXdsClient sotw(target_, "sotw-proxy");
  sotw.Subscribe(kCds, {});
  std::optional<DiscoveryResponse> cds = sotw.WaitForResponse(kCds, kWait);
  ASSERT_TRUE(cds.has_value());
  sotw.Ack(*cds);
  sotw.Subscribe(kEds, {"c1", "c2"});
  std::optional<DiscoveryResponse> eds = sotw.WaitForResponse(kEds, kWait);
  ASSERT_TRUE(eds.has_value());
  sotw.Nack(*eds, "endpoint c2 refused\nsecond line");

  testing::DeltaAdsClient delta(target_, "delta-proxy");
  ASSERT_TRUE(delta.Send(testing::DeltaRequest(kCds, {})));
  std::optional<testing::DeltaDiscoveryResponse> delta_cds = delta.Next(absl::Now() + kWait);
  ASSERT_TRUE(delta_cds.has_value());
  ASSERT_TRUE(delta.Ack(*delta_cds));

  const ClientStatusResponse all = FetchWhen([](const ClientStatusResponse& r) {
    const std::vector<std::string> sotw_lines = Lines(ConfigOf(r, "sotw-proxy"));
    const std::vector<std::string> delta_lines = Lines(ConfigOf(r, "delta-proxy"));
    return sotw_lines.size() == 4 && sotw_lines.back().find("NACKED") != std::string::npos && delta_lines.size() == 2 &&
           delta_lines.back().find("ACKED") != std::string::npos;
  });
  const std::string c1 = snapshot_->Find(kCds, "c1")->content_version();
  const std::string c2 = snapshot_->Find(kCds, "c2")->content_version();
  EXPECT_EQ(Lines(ConfigOf(all, "sotw-proxy")),
            (std::vector<std::string>{"CDS c1 v1 SYNCED ACKED", "CDS c2 v1 SYNCED ACKED",
                                      "EDS c1 v1 ERROR NACKED endpoint c2 refused\nsecond line",
                                      "EDS c2 v1 ERROR NACKED endpoint c2 refused\nsecond line"}));
  // Delta: each resource's own version.
  EXPECT_EQ(Lines(ConfigOf(all, "delta-proxy")),
            (std::vector<std::string>{absl::StrCat("CDS c1 ", c1, " SYNCED ACKED"),
                                      absl::StrCat("CDS c2 ", c2, " SYNCED ACKED")}));
  // The resource itself, as sent.
  const auto& first = ConfigOf(all, "sotw-proxy")->generic_xds_configs(0);
  EXPECT_EQ(first.xds_config().value(), snapshot_->Find(kCds, "c1")->serialized());
  EXPECT_GT(first.last_updated().seconds(), 0);
  EXPECT_EQ(ConfigOf(all, "sotw-proxy")->generic_xds_configs(2).error_state().version_info(), "v1");

  // Node matchers and exclude_resource_contents.
  ClientStatusRequest exact;
  exact.add_node_matchers()->mutable_node_id()->set_exact("delta-proxy");
  exact.set_exclude_resource_contents(true);
  const ClientStatusResponse only = Fetch(exact);
  ASSERT_EQ(only.config_size(), 1);
  EXPECT_EQ(only.config(0).node().id(), "delta-proxy");
  EXPECT_FALSE(only.config(0).generic_xds_configs(0).has_xds_config());
  ClientStatusRequest prefix;
  prefix.add_node_matchers()->mutable_node_id()->set_prefix("SOTW-");
  EXPECT_EQ(Fetch(prefix).config_size(), 0);
  prefix.mutable_node_matchers(0)->mutable_node_id()->set_ignore_case(true);
  EXPECT_EQ(Fetch(prefix).config_size(), 1);

  ClientStatusRequest regex;
  regex.add_node_matchers()->mutable_node_id()->mutable_safe_regex()->set_regex("sotw.*");
  grpc::Status status;
  Fetch(regex, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("supported by cxds"));

  // The stream variant answers each request.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = csds_->StreamClientStatus(&context);
  ClientStatusResponse answer;
  ASSERT_TRUE(stream->Write(exact));
  ASSERT_TRUE(stream->Read(&answer));
  EXPECT_EQ(answer.config_size(), 1);
  ASSERT_TRUE(stream->Write(ClientStatusRequest()));
  ASSERT_TRUE(stream->Read(&answer));
  EXPECT_EQ(answer.config_size(), 2);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace cxds
