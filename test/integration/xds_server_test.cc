// XdsServer over real gRPC on 127.0.0.1: Envoy-like and proxyless-gRPC-like clients
// (FakeXdsClient) against a SnapshotCache, checking what reaches the wire, the ACK/NACK ledger,
// the callbacks, stream independence and concurrent configuration changes.
//
// "No response" is checked with FakeXdsClient::ExpectNoResponse (a probe answered in order,
// proved by the nonce sequence), never by sleeping. The only polls are bounded ones on state
// that has no event to wait on (XdsServer::open_streams() and the ledger).
#include "server/xds_server.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cache/snapshot_cache.h"
#include "common/mutex.h"
#include "common/status_matchers.h"
#include "envoy/service/cluster/v3/cds.grpc.pb.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "fakes/fake_xds_client.h"
#include "fakes/stream_harness.h"
#include "fakes/test_resources.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"
#include "server/callbacks.h"

namespace cxds {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
using namespace cxds::testing;  // NOLINT

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);
const std::string kLds(kListenerType);
const std::string kRds(kRouteType);
const std::string kSds(kSecretType);

constexpr absl::Duration kWait = absl::Seconds(5);

// A snapshot whose core types are all at `version` and whose SDS holds only the probe secret
// at a version that never changes (so the probe subscription is never pushed).
SnapshotPtr Versioned(const std::string& version, std::vector<ResourcePtr> resources) {
  resources.push_back(ProbeSecret());
  auto snapshot = Snapshot::CreateWithTypeVersions(
      {{kCds, version}, {kEds, version}, {kLds, version}, {kRds, version}, {kSds, "probe"}}, std::move(resources));
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  return snapshot.ok() ? *snapshot : nullptr;
}

// A route configuration every client rejects: its route's match has no path specifier.
ResourcePtr RoutesWithoutPathSpecifier(const std::string& name, const std::string& cluster) {
  envoy::config::route::v3::RouteConfiguration config;
  config.set_name(name);
  auto* vhost = config.add_virtual_hosts();
  vhost->set_name("all");
  vhost->add_domains("*");
  auto* route = vhost->add_routes();
  route->mutable_match();  // no prefix, path, safe_regex...
  route->mutable_route()->set_cluster(cluster);
  return MustResource(config);
}

std::optional<TypeSyncStatus> TypeStatusOf(const AckLedger& ledger, int64_t stream_id, const std::string& type_url) {
  std::optional<StreamSyncStatus> stream = ledger.GetStream(stream_id);
  if (!stream.has_value()) return std::nullopt;
  for (const TypeSyncStatus& type : stream->types) {
    if (type.type_url == type_url) return type;
  }
  return std::nullopt;
}

// Polls `done` until it holds or `deadline` passes; for state that has no event to wait on.
bool PollUntil(const std::function<bool()>& done, absl::Duration deadline = kWait) {
  const absl::Time end = absl::Now() + deadline;
  while (!done()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

// Records every callback per stream; lets a test wait for streams to close.
class RecordingCallbacks final : public ServerCallbacks {
 public:
  struct Stream {
    int opens = 0;
    std::string type_url;
    int requests = 0;
    std::vector<ResponseInfo> responses;
    std::vector<FeedbackEvent> feedback;
    int closes = 0;
    std::string closed_node_id;
  };

  absl::Status OnStreamOpen(int64_t stream_id, std::string_view type_url) override {
    MutexLock lock(&mu_);
    Stream& stream = streams_[stream_id];
    stream.opens++;
    stream.type_url = std::string(type_url);
    return absl::OkStatus();
  }
  absl::Status OnStreamRequest(int64_t stream_id,
                               const envoy::service::discovery::v3::DiscoveryRequest& request) override {
    MutexLock lock(&mu_);
    streams_[stream_id].requests++;
    return absl::OkStatus();
  }
  void OnStreamResponse(int64_t stream_id, const ResponseInfo& response) override {
    MutexLock lock(&mu_);
    streams_[stream_id].responses.push_back(response);
  }
  void OnFeedback(const FeedbackEvent& event) override {
    MutexLock lock(&mu_);
    streams_[event.stream_id].feedback.push_back(event);
  }
  void OnStreamClosed(int64_t stream_id, const envoy::config::core::v3::Node& node) override {
    MutexLock lock(&mu_);
    Stream& stream = streams_[stream_id];
    stream.closes++;
    stream.closed_node_id = node.id();
    closes_++;
  }

  // Waits until `count` stream closes have been seen in total.
  bool WaitForCloses(int count, absl::Duration deadline = kWait) {
    MutexLock lock(&mu_);
    auto reached = [this, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closes_ >= count; };
    return mu_.AwaitWithTimeout(reached, deadline);
  }
  bool WaitForClosed(int64_t stream_id, absl::Duration deadline = kWait) {
    MutexLock lock(&mu_);
    auto closed = [this, stream_id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      auto it = streams_.find(stream_id);
      return it != streams_.end() && it->second.closes > 0;
    };
    return mu_.AwaitWithTimeout(closed, deadline);
  }
  std::map<int64_t, Stream> streams() const {
    MutexLock lock(&mu_);
    return streams_;
  }

 private:
  mutable Mutex mu_;
  std::map<int64_t, Stream> streams_ ABSL_GUARDED_BY(mu_);
  int closes_ ABSL_GUARDED_BY(mu_) = 0;
};

class XdsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    XdsServer::Options options;
    options.callbacks = &callbacks_;
    xds_ = std::make_unique<XdsServer>(cache_, options);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    xds_->RegisterServices(builder);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
    target_ = absl::StrCat("127.0.0.1:", port_);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    server_.reset();
    xds_.reset();
  }

  void Set(SnapshotPtr snapshot, const std::string& key = "node-a") {
    ASSERT_OK(cache_.SetSnapshot(key, std::move(snapshot)));
  }

  std::unique_ptr<FakeXdsClient> Connect(const std::string& node_id = "node-a",
                                         FakeXdsClient::Service service = FakeXdsClient::Service::kAggregated) {
    return std::make_unique<FakeXdsClient>(target_, node_id, service);
  }

  SnapshotCache cache_;  // kConsistent
  RecordingCallbacks callbacks_;
  std::unique_ptr<XdsServer> xds_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string target_;
};

// Listener l1 -> route r1 -> cluster c1 (EDS), plus cluster c2.
std::vector<ResourcePtr> EnvoyResources(int cluster_timeout_s, uint32_t c1_port, ResourcePtr routes) {
  return {HttpListener("l1", "r1"), std::move(routes),          EdsCluster("c1", "", cluster_timeout_s),
          EdsCluster("c2"),         Endpoints("c1", {c1_port}), Endpoints("c2", {9090})};
}

// The Envoy ADS sequence: CDS wildcard, EDS by name, LDS wildcard, RDS by name, each ACKed
// and none of the ACKs answered; a change goes out in the order CDS, EDS, LDS, RDS; a NACK of
// RDS is recorded and not answered; the next version goes out.
TEST_F(XdsServerTest, EnvoyLikeAdsFlowWithPushOrderAndNack) {
  Set(Versioned("1", EnvoyResources(1, 8080, Routes("r1", {"c1"}))));
  auto envoy = Connect();

  ASSERT_TRUE(envoy->Subscribe(kCds, {}));
  auto cds = envoy->WaitForResponse(kCds, kWait);
  ASSERT_TRUE(cds.has_value());
  EXPECT_EQ(cds->version_info(), "1");
  EXPECT_THAT(NamesOf(*cds), ElementsAre("c1", "c2"));

  // Envoy asks for the clusters' endpoints before it ACKs CDS.
  ASSERT_TRUE(envoy->Subscribe(kEds, {"c1", "c2"}));
  auto eds = envoy->WaitForResponse(kEds, kWait);
  ASSERT_TRUE(eds.has_value());
  EXPECT_THAT(NamesOf(*eds), ElementsAre("c1", "c2"));
  envoy->Ack(*cds);
  envoy->Ack(*eds);

  ASSERT_TRUE(envoy->Subscribe(kLds, {}));
  auto lds = envoy->WaitForResponse(kLds, kWait);
  ASSERT_TRUE(lds.has_value());
  EXPECT_THAT(NamesOf(*lds), ElementsAre("l1"));
  ASSERT_TRUE(envoy->Subscribe(kRds, {"r1"}));
  auto rds = envoy->WaitForResponse(kRds, kWait);
  ASSERT_TRUE(rds.has_value());
  EXPECT_THAT(NamesOf(*rds), ElementsAre("r1"));
  envoy->Ack(*lds);
  envoy->Ack(*rds);
  ASSERT_TRUE(envoy->ExpectNoResponse(kWait)) << "ACKs must not be answered";

  const int64_t id = envoy->stream_id();
  for (const std::string& type : {kCds, kEds, kLds, kRds}) {
    auto status = TypeStatusOf(xds_->ledger(), id, type);
    ASSERT_TRUE(status.has_value()) << type;
    EXPECT_EQ(status->acked_version, "1") << type;
    EXPECT_TRUE(status->synced()) << type;
  }

  // v2: c1's cluster and endpoints change, and the route configuration is one Envoy rejects.
  Set(Versioned("2", EnvoyResources(2, 8081, RoutesWithoutPathSpecifier("r1", "c1"))));
  std::vector<DiscoveryResponse> v2;
  for (int i = 0; i < 4; i++) {
    auto response = envoy->WaitForResponse(kWait);
    ASSERT_TRUE(response.has_value()) << "response " << i << " of v2";
    v2.push_back(*response);
  }
  std::vector<std::string> order;
  for (const auto& response : v2) {
    order.push_back(response.type_url());
    EXPECT_EQ(response.version_info(), "2");
  }
  EXPECT_THAT(order, ElementsAre(kCds, kEds, kLds, kRds));
  EXPECT_THAT(NamesOf(v2[0]), ElementsAre("c1", "c2"));
  EXPECT_THAT(NamesOf(v2[1]), ElementsAre("c1", "c2"));
  envoy->Ack(v2[0]);
  envoy->Ack(v2[1]);
  envoy->Ack(v2[2]);
  const std::string kRejection = "Invalid route path specifier specified.";
  envoy->Nack(v2[3], kRejection);
  ASSERT_TRUE(envoy->ExpectNoResponse(kWait)) << "a NACK must not be answered with the same content";

  auto rds_status = TypeStatusOf(xds_->ledger(), id, kRds);
  ASSERT_TRUE(rds_status.has_value());
  EXPECT_EQ(rds_status->sent_version, "2");
  EXPECT_EQ(rds_status->acked_version, "1") << "the NACK's version_info is not a new acceptance";
  EXPECT_EQ(rds_status->nacks, 1u);
  EXPECT_FALSE(rds_status->synced());
  ASSERT_TRUE(rds_status->last_nack.has_value());
  EXPECT_EQ(rds_status->last_nack->sent_version, "2");
  EXPECT_EQ(rds_status->last_nack->accepted_version, "1");
  EXPECT_EQ(rds_status->last_nack->nonce, v2[3].nonce());
  EXPECT_EQ(rds_status->last_nack->error, kRejection);
  for (const std::string& type : {kCds, kEds, kLds}) {
    auto status = TypeStatusOf(xds_->ledger(), id, type);
    ASSERT_TRUE(status.has_value()) << type;
    EXPECT_EQ(status->acked_version, "2") << type;
    EXPECT_TRUE(status->synced()) << type;
  }

  // v3 fixes the route configuration; it goes out and is accepted.
  Set(Versioned("3", EnvoyResources(2, 8081, Routes("r1", {"c1", "c2"}))));
  std::vector<std::string> v3_order;
  for (int i = 0; i < 4; i++) {
    auto response = envoy->WaitForResponse(kWait);
    ASSERT_TRUE(response.has_value()) << "response " << i << " of v3";
    EXPECT_EQ(response->version_info(), "3");
    v3_order.push_back(response->type_url());
    if (response->type_url() == kRds) {
      EXPECT_THAT(NamesOf(*response), ElementsAre("r1"));
    }
    envoy->Ack(*response);
  }
  EXPECT_THAT(v3_order, ElementsAre(kCds, kEds, kLds, kRds));
  ASSERT_TRUE(envoy->ExpectNoResponse(kWait));
  rds_status = TypeStatusOf(xds_->ledger(), id, kRds);
  ASSERT_TRUE(rds_status.has_value());
  EXPECT_EQ(rds_status->acked_version, "3");
  EXPECT_TRUE(rds_status->synced());

  grpc::Status finished = envoy->Finish();
  EXPECT_TRUE(finished.ok()) << finished.error_message();
}

// A proxyless gRPC API listener `svc` and an unrelated listener the client never asks for.
std::vector<ResourcePtr> GrpcResources(uint32_t port) {
  return {ApiListener("svc.example", "r-svc"),
          Routes("r-svc", {"c-svc"}),
          EdsCluster("c-svc"),
          Endpoints("c-svc", {port}),
          HttpListener("other", "r-other"),
          Routes("r-other", {"c-other"}),
          EdsCluster("c-other"),
          Endpoints("c-other", {9999})};
}

// The proxyless gRPC sequence: LDS [target], then RDS, CDS and EDS by name, each after ACKing
// the previous type; only the named resources are sent, ACKs are not answered, and an
// endpoint-only change pushes EDS alone.
TEST_F(XdsServerTest, GrpcLikeNamedFlowLdsRdsCdsEds) {
  Set(Versioned("1", GrpcResources(50051)), "grpc-node");
  auto grpc_client = Connect("grpc-node");

  struct Step {
    std::string type_url;
    std::string name;
  };
  const std::vector<Step> steps = {{kLds, "svc.example"}, {kRds, "r-svc"}, {kCds, "c-svc"}, {kEds, "c-svc"}};
  for (const Step& step : steps) {
    ASSERT_TRUE(grpc_client->Subscribe(step.type_url, {step.name}));
    auto response = grpc_client->WaitForResponse(step.type_url, kWait);
    ASSERT_TRUE(response.has_value()) << step.type_url;
    EXPECT_EQ(response->version_info(), "1");
    EXPECT_THAT(NamesOf(*response), ElementsAre(step.name)) << step.type_url;
    ASSERT_TRUE(grpc_client->Ack(*response));
  }
  ASSERT_TRUE(grpc_client->ExpectNoResponse(kWait)) << "ACKs must not be answered";
  for (const Step& step : steps) {
    auto status = TypeStatusOf(xds_->ledger(), grpc_client->stream_id(), step.type_url);
    ASSERT_TRUE(status.has_value()) << step.type_url;
    EXPECT_TRUE(status->synced()) << step.type_url;
    EXPECT_EQ(status->acked_version, "1") << step.type_url;
  }

  // Only the endpoints change (only the EDS version moves): EDS alone is pushed.
  std::vector<ResourcePtr> moved_endpoints = GrpcResources(50052);
  moved_endpoints.push_back(ProbeSecret());
  ASSERT_OK_AND_ASSIGN(
      SnapshotPtr endpoints_only,
      Snapshot::CreateWithTypeVersions({{kCds, "1"}, {kEds, "2"}, {kLds, "1"}, {kRds, "1"}, {kSds, "probe"}},
                                       std::move(moved_endpoints)));
  Set(endpoints_only, "grpc-node");
  const uint64_t before = grpc_client->last_seq();
  auto eds = grpc_client->WaitForResponse(kEds, kWait);
  ASSERT_TRUE(eds.has_value());
  EXPECT_EQ(ParseNonce(eds->nonce())->seq, before + 1) << "nothing may precede the EDS push";
  EXPECT_EQ(eds->version_info(), "2");
  EXPECT_THAT(NamesOf(*eds), ElementsAre("c-svc"));
  grpc_client->Ack(*eds);
  ASSERT_TRUE(grpc_client->ExpectNoResponse(kWait));

  grpc::Status finished = grpc_client->Finish();
  EXPECT_TRUE(finished.ok()) << finished.error_message();
}

// A reconnecting gRPC client asks for all four types at once, with its accepted version and
// empty nonces: each is answered on the new stream, and the ACKs are not.
TEST_F(XdsServerTest, GrpcLikeReconnectRequestsAllTypesAtOnce) {
  Set(Versioned("1", GrpcResources(50051)), "grpc-node");
  auto client = Connect("grpc-node");
  const std::map<std::string, std::string> names = {
      {kLds, "svc.example"}, {kRds, "r-svc"}, {kCds, "c-svc"}, {kEds, "c-svc"}};
  for (const auto& [type_url, name] : names) {
    ASSERT_TRUE(client->Send(Request(type_url, {name}, /*version=*/"1", /*nonce=*/"")));
  }
  std::vector<std::string> types;
  for (size_t i = 0; i < names.size(); i++) {
    auto response = client->WaitForResponse(kWait);
    ASSERT_TRUE(response.has_value()) << "response " << i;
    types.push_back(response->type_url());
    EXPECT_EQ(response->version_info(), "1");
    EXPECT_THAT(NamesOf(*response), ElementsAre(names.at(response->type_url())));
    client->Ack(*response, std::vector<std::string>{names.at(response->type_url())});
  }
  EXPECT_THAT(types, UnorderedElementsAre(kLds, kRds, kCds, kEds));
  ASSERT_TRUE(client->ExpectNoResponse(kWait));
  EXPECT_TRUE(client->Finish().ok());
}

// The per-type ClusterDiscoveryService serves CDS on its own stream, pushes included.
TEST_F(XdsServerTest, PerTypeClusterServiceStreams) {
  Set(Versioned("1", EnvoyResources(1, 8080, Routes("r1", {"c1"}))));
  auto client = Connect("node-a", FakeXdsClient::Service::kClusters);
  ASSERT_TRUE(client->Subscribe(kCds, {}));
  auto v1 = client->WaitForResponse(kCds, kWait);
  ASSERT_TRUE(v1.has_value());
  EXPECT_EQ(v1->version_info(), "1");
  EXPECT_THAT(NamesOf(*v1), ElementsAre("c1", "c2"));
  client->Ack(*v1);
  // The probe needs ADS; here the push that follows the ACK must be the next response.
  ASSERT_TRUE(PollUntil([&] {
    auto status = TypeStatusOf(xds_->ledger(), client->stream_id(), kCds);
    return status.has_value() && status->acked_version == "1";
  }));

  Set(Versioned("2", EnvoyResources(2, 8080, Routes("r1", {"c1"}))));
  auto v2 = client->WaitForResponse(kCds, kWait);
  ASSERT_TRUE(v2.has_value());
  EXPECT_EQ(v2->version_info(), "2");
  EXPECT_EQ(ParseNonce(v2->nonce())->seq, 2u) << "the ACK of v1 must not have been answered";
  client->Ack(*v2);
  ASSERT_TRUE(PollUntil([&] {
    auto status = TypeStatusOf(xds_->ledger(), client->stream_id(), kCds);
    return status.has_value() && status->acked_version == "2";
  }));
  grpc::Status finished = client->Finish();
  EXPECT_TRUE(finished.ok()) << finished.error_message();
}

// Delta ADS is served over real gRPC (the delta rules have unit tests of their own); Fetch is
// refused with UNIMPLEMENTED and opens no xDS stream.
TEST_F(XdsServerTest, DeltaAdsServesAndFetchIsUnimplemented) {
  Set(Versioned("1", EnvoyResources(1, 8080, Routes("r1", {"c1"}))));
  auto channel = grpc::CreateChannel(target_, grpc::InsecureChannelCredentials());
  {
    auto stub = envoy::service::discovery::v3::AggregatedDiscoveryService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kWait));
    auto stream = stub->DeltaAggregatedResources(&context);
    envoy::service::discovery::v3::DeltaDiscoveryRequest request;
    request.mutable_node()->set_id("node-a");
    request.set_type_url(kCds);
    ASSERT_TRUE(stream->Write(request));
    envoy::service::discovery::v3::DeltaDiscoveryResponse response;
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.type_url(), kCds);
    EXPECT_FALSE(response.nonce().empty());
    EXPECT_GT(response.resources_size(), 0);
    for (const auto& resource : response.resources()) {
      EXPECT_FALSE(resource.name().empty());
      EXPECT_EQ(resource.version().size(), 32u) << "content hash";
    }
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  ASSERT_TRUE(callbacks_.WaitForCloses(1));
  {
    auto stub = envoy::service::cluster::v3::ClusterDiscoveryService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kWait));
    DiscoveryResponse response;
    DiscoveryRequest request = Request(kCds, {});
    request.mutable_node()->set_id("node-a");
    grpc::Status status = stub->FetchClusters(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << status.error_message();
  }
  EXPECT_EQ(callbacks_.streams().size(), 1u) << "only the delta stream opened; Fetch opens none";
}

// E1 (docs/protocol-rules.md): a first request without a node ends the stream with
// INVALID_ARGUMENT and nothing is sent.
TEST_F(XdsServerTest, FirstRequestWithoutNodeIsInvalidArgument) {
  Set(Versioned("1", EnvoyResources(1, 8080, Routes("r1", {"c1"}))));
  auto client = Connect();
  ASSERT_TRUE(client->SendRaw(Request(kCds, {})));
  grpc::Status status = client->WaitForStreamEnd(kWait);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_FALSE(client->WaitForResponse(absl::ZeroDuration()).has_value());
  ASSERT_TRUE(callbacks_.WaitForCloses(1));
  ASSERT_TRUE(PollUntil([&] { return xds_->open_streams() == 0; }));
}

// E6: two streams of one node id are independent; closing one drops only its state
// and pushes keep reaching the other.
TEST_F(XdsServerTest, TwoStreamsOfOneNodeAreIndependent) {
  Set(Versioned("1", EnvoyResources(1, 8080, Routes("r1", {"c1"}))));
  auto old_stream = Connect("node-a");
  auto new_stream = Connect("node-a");
  for (FakeXdsClient* client : {old_stream.get(), new_stream.get()}) {
    ASSERT_TRUE(client->Subscribe(kCds, {}));
    auto cds = client->WaitForResponse(kCds, kWait);
    ASSERT_TRUE(cds.has_value());
    client->Ack(*cds);
    ASSERT_TRUE(client->ExpectNoResponse(kWait));
  }
  const int64_t old_id = old_stream->stream_id();
  const int64_t new_id = new_stream->stream_id();
  ASSERT_NE(old_id, new_id);
  EXPECT_EQ(xds_->open_streams(), 2);
  EXPECT_EQ(cache_.GetStatus("node-a")->open_watches, 2);

  grpc::Status finished = old_stream->Finish();
  EXPECT_TRUE(finished.ok()) << finished.error_message();
  ASSERT_TRUE(callbacks_.WaitForClosed(old_id));
  ASSERT_TRUE(PollUntil([&] { return xds_->open_streams() == 1; })) << xds_->open_streams();
  EXPECT_FALSE(xds_->ledger().GetStream(old_id).has_value());
  ASSERT_TRUE(xds_->ledger().GetStream(new_id).has_value());
  EXPECT_EQ(xds_->ledger().AllStreams().size(), 1u);
  EXPECT_EQ(cache_.GetStatus("node-a")->open_watches, 1);

  Set(Versioned("2", EnvoyResources(2, 8080, Routes("r1", {"c1"}))));
  auto pushed = new_stream->WaitForResponse(kCds, kWait);
  ASSERT_TRUE(pushed.has_value());
  EXPECT_EQ(pushed->version_info(), "2");
  new_stream->Ack(*pushed);
  ASSERT_TRUE(new_stream->ExpectNoResponse(kWait));
  EXPECT_EQ(TypeStatusOf(xds_->ledger(), new_id, kCds)->acked_version, "2");
  EXPECT_TRUE(new_stream->Finish().ok());
}

// E7 / callbacks contract: open, request, response and feedback are reported for
// what happened, and close exactly once per stream (including a stream refused for its node).
TEST_F(XdsServerTest, CallbacksSeeEveryEventAndCloseOncePerStream) {
  Set(Versioned("1", EnvoyResources(1, 8080, Routes("r1", {"c1"}))));

  auto ads = Connect("node-a");
  ASSERT_TRUE(ads->Subscribe(kCds, {}));
  auto v1 = ads->WaitForResponse(kCds, kWait);
  ASSERT_TRUE(v1.has_value());
  ads->Ack(*v1);
  Set(Versioned("2", EnvoyResources(2, 8080, Routes("r1", {"c1"}))));
  auto v2 = ads->WaitForResponse(kCds, kWait);
  ASSERT_TRUE(v2.has_value());
  ads->Nack(*v2, "cluster rejected");
  EXPECT_TRUE(ads->Finish().ok());  // the server reads every request before the end of stream
  const int64_t ads_id = ads->stream_id();

  auto cds = Connect("node-b", FakeXdsClient::Service::kClusters);
  Set(Versioned("1", EnvoyResources(1, 8080, Routes("r1", {"c1"}))), "node-b");
  ASSERT_TRUE(cds->Subscribe(kCds, {}));
  auto cds_v1 = cds->WaitForResponse(kCds, kWait);
  ASSERT_TRUE(cds_v1.has_value());
  EXPECT_TRUE(cds->Finish().ok());
  const int64_t cds_id = cds->stream_id();

  auto anonymous = Connect("unused");
  ASSERT_TRUE(anonymous->SendRaw(Request(kCds, {})));
  EXPECT_EQ(anonymous->WaitForStreamEnd(kWait).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  ASSERT_TRUE(callbacks_.WaitForCloses(3));
  ASSERT_TRUE(PollUntil([&] { return xds_->open_streams() == 0; }));
  const auto streams = callbacks_.streams();
  ASSERT_EQ(streams.size(), 3u);
  for (const auto& [id, stream] : streams) {
    EXPECT_EQ(stream.opens, 1) << "stream " << id;
    EXPECT_EQ(stream.closes, 1) << "stream " << id;
  }

  const RecordingCallbacks::Stream& a = streams.at(ads_id);
  EXPECT_EQ(a.type_url, "");
  EXPECT_EQ(a.requests, 3);  // subscribe, ACK, NACK
  ASSERT_EQ(a.responses.size(), 2u);
  EXPECT_EQ(a.responses[0].nonce, v1->nonce());
  EXPECT_EQ(a.responses[0].node_id, "node-a");
  EXPECT_THAT(a.responses[0].resource_names, ElementsAre("c1", "c2"));
  EXPECT_EQ(a.responses[1].nonce, v2->nonce());
  EXPECT_EQ(a.responses[1].version, "2");
  ASSERT_EQ(a.feedback.size(), 2u);
  EXPECT_EQ(a.feedback[0].kind, FeedbackKind::kAck);
  EXPECT_EQ(a.feedback[0].sent_version, "1");
  EXPECT_EQ(a.feedback[0].node_id, "node-a");
  EXPECT_EQ(a.feedback[1].kind, FeedbackKind::kNack);
  EXPECT_EQ(a.feedback[1].sent_version, "2");
  EXPECT_EQ(a.feedback[1].client_version, "1");
  EXPECT_EQ(a.feedback[1].error, "cluster rejected");
  EXPECT_EQ(a.closed_node_id, "node-a");

  const RecordingCallbacks::Stream& b = streams.at(cds_id);
  EXPECT_EQ(b.type_url, kCds);
  EXPECT_EQ(b.requests, 1);
  EXPECT_EQ(b.responses.size(), 1u);
  EXPECT_TRUE(b.feedback.empty());
  EXPECT_EQ(b.closed_node_id, "node-b");

  for (const auto& [id, stream] : streams) {
    if (id == ads_id || id == cds_id) continue;
    EXPECT_EQ(stream.requests, 0) << "a request refused for its node is not reported";
    EXPECT_TRUE(stream.responses.empty());
    EXPECT_EQ(stream.closed_node_id, "");
  }
}

// The "no response" check of FakeXdsClient itself: a request that is answered before the
// probe makes ExpectNoResponse fail (so its passing elsewhere means something).
TEST_F(XdsServerTest, ExpectNoResponseDetectsAResponse) {
  Set(Versioned("1", EnvoyResources(1, 8080, Routes("r1", {"c1"}))));
  auto client = Connect();
  ASSERT_TRUE(client->Subscribe(kCds, {}));
  auto cds = client->WaitForResponse(kCds, kWait);
  ASSERT_TRUE(cds.has_value());
  client->Ack(*cds);
  ASSERT_TRUE(client->ExpectNoResponse(kWait));

  // Subscribing to endpoints is answered, so "no response" must not hold.
  ASSERT_TRUE(client->Subscribe(kEds, {"c1"}));
  ::testing::TestPartResultArray failures;
  bool held = true;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    held = client->ExpectNoResponse(kWait);
  }
  EXPECT_FALSE(held);
  ASSERT_EQ(failures.size(), 1);
  EXPECT_THAT(failures.GetTestPartResult(0).message(),
              ::testing::HasSubstr("expected no response, but the server sent [EDS"));
  EXPECT_TRUE(client->Finish().ok());
}

// Many streams subscribe while the configuration changes 50 times: every stream ends up
// having ACKed the final version, with nothing lost or crashed (also a ThreadSanitizer test).
TEST_F(XdsServerTest, ConcurrentSubscribersConvergeOnFinalVersion) {
  constexpr int kStreams = 20;
  constexpr int kVersions = 50;
  const std::string final_version = absl::StrCat(kVersions);
  auto resources = [](int i) {
    return std::vector<ResourcePtr>{EdsCluster("c1", "", 1 + i % 2),
                                    Endpoints("c1", {static_cast<uint32_t>(10000 + i)})};
  };
  Set(Versioned("0", resources(0)));

  std::vector<std::unique_ptr<FakeXdsClient>> clients;
  for (int i = 0; i < kStreams; i++) clients.push_back(Connect("node-a"));

  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; i++) {
    threads.emplace_back([&, client = clients[i].get()] {
      while (!go.load()) std::this_thread::yield();
      EXPECT_TRUE(client->Subscribe(kCds, {}));
      EXPECT_TRUE(client->Subscribe(kEds, {"c1"}));
      std::string cds_version;
      std::string eds_version;
      while (cds_version != final_version || eds_version != final_version) {
        auto response = client->WaitForResponse(kWait);
        if (!response.has_value()) {
          ADD_FAILURE() << "stream " << client->stream_id() << " stuck at CDS " << cds_version << " EDS "
                        << eds_version;
          return;
        }
        (response->type_url() == kCds ? cds_version : eds_version) = response->version_info();
        client->Ack(*response);
      }
      // The server may still owe this stream a response at the final version: an EDS that
      // follows a changed cluster (R8.2) when EDS v50 overtook CDS v50. Take and ACK it.
      for (int round = 0; round < 3; round++) {
        auto owed = client->DrainUntilProbe(kWait);
        if (!owed.has_value() || owed->empty()) break;
        for (const DiscoveryResponse& response : *owed) {
          EXPECT_EQ(response.version_info(), final_version) << response.nonce();
          client->Ack(response);
        }
      }
    });
  }
  threads.emplace_back([&] {
    while (!go.load()) std::this_thread::yield();
    for (int v = 1; v <= kVersions; v++) {
      EXPECT_OK(cache_.SetSnapshot("node-a", Versioned(absl::StrCat(v), resources(v))));
    }
  });
  const absl::Time start = absl::Now();
  go.store(true);
  for (std::thread& thread : threads) thread.join();

  // Every ACK of the final version reaches the ledger.
  for (const auto& client : clients) {
    EXPECT_TRUE(PollUntil([&] {
      for (const std::string& type : {kCds, kEds}) {
        auto status = TypeStatusOf(xds_->ledger(), client->stream_id(), type);
        if (!status.has_value() || status->acked_version != final_version || !status->synced()) return false;
      }
      return true;
    })) << "stream "
        << client->stream_id() << " did not ACK version " << final_version;
  }
  EXPECT_EQ(xds_->open_streams(), kStreams);
  for (const auto& client : clients) EXPECT_TRUE(client->Finish().ok());
  EXPECT_TRUE(callbacks_.WaitForCloses(kStreams));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace cxds
