// The xDS server over real gRPC with mTLS on 127.0.0.1: certificates made at test time with
// openssl (fakes/test_pki.h), SPIFFE identities checked by SpiffeAuthenticator, refusals with
// the status and message that name the claim, and rotation of the server's certificate while a
// stream stays open. Handshake outcomes are read from the channel's state, bounded in time.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "admin/admin_server.h"
#include "cache/snapshot_cache.h"
#include "common/scheduler.h"
#include "controller/mesh_controller.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb.h"
#include "envoy/service/status/v3/csds.grpc.pb.h"
#include "fakes/fake_xds_client.h"
#include "fakes/test_pki.h"
#include "fakes/test_resources.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "protocol/type_url.h"
#include "server/tls_credentials.h"
#include "server/xds_server.h"

namespace cxds {
namespace {

using ::testing::HasSubstr;
using namespace cxds::testing;  // NOLINT

const std::string kCds(kClusterType);
constexpr absl::Duration kWait = absl::Seconds(10);
// An Istio-style sidecar id: it claims namespace team-a.
const std::string kNodeA = "sidecar~127.0.0.1~app-1.team-a~team-a.svc.cluster.local";

class MtlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pki_.MakeCa("ca"));
    ASSERT_TRUE(pki_.MakeCa("other-ca"));
    ASSERT_TRUE(pki_.MakeLeaf("server", "ca", "IP:127.0.0.1,DNS:localhost"));
    ASSERT_TRUE(pki_.MakeLeaf("team-a", "ca", "URI:spiffe://cluster.local/ns/team-a/sa/app"));
    ASSERT_TRUE(pki_.MakeLeaf("foreign-domain", "ca", "URI:spiffe://example.org/ns/team-a/sa/app"));
    ASSERT_TRUE(pki_.MakeLeaf("other-ca-client", "other-ca", "URI:spiffe://cluster.local/ns/team-a/sa/app"));
    for (const std::string& node : {kNodeA, std::string("plain-node")}) {
      ASSERT_TRUE(cache_.SetSnapshot(node, MustSnapshot("1", {StaticCluster("c1")})).ok());
    }
    XdsSecurityOptions security;
    security.files = {pki_.Path("server.crt"), pki_.Path("server.key"), pki_.Path("ca.crt"), absl::Seconds(1)};
    absl::StatusOr<XdsSecurity> made = MakeXdsSecurity(security);
    ASSERT_TRUE(made.ok()) << made.status();
    security_ = *std::move(made);
    ASSERT_EQ(security_.mode, "mtls");
    XdsServer::Options options;
    options.credentials = security_.credentials;
    options.authenticator = security_.authenticator.get();
    xds_ = std::make_unique<XdsServer>(cache_, options);
    absl::StatusOr<std::unique_ptr<grpc::Server>> started = xds_->Start("127.0.0.1:0", &port_);
    ASSERT_TRUE(started.ok()) << started.status();
    grpc_ = *std::move(started);
  }
  void TearDown() override {
    if (grpc_ != nullptr) grpc_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }

  std::string Target() const { return absl::StrCat("127.0.0.1:", port_); }

  // TLS credentials trusting `server_ca`, presenting `client` (NAME.crt/.key) unless empty.
  std::shared_ptr<grpc::ChannelCredentials> Credentials(const std::string& client,
                                                        const std::string& server_ca = "ca") const {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pki_.Read(server_ca + ".crt");
    if (!client.empty()) {
      ssl.pem_private_key = pki_.Read(client + ".key");
      ssl.pem_cert_chain = pki_.Read(client + ".crt");
    }
    return grpc::SslCredentials(ssl);
  }

  // Whether a new connection with `credentials` completes its handshake within `deadline`.
  bool Handshakes(const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                  absl::Duration deadline = absl::Seconds(2)) const {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // a new connection, not a shared one
    std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(Target(), credentials, args);
    return channel->WaitForConnected(absl::ToChronoTime(absl::Now() + deadline));
  }

  // Opens a stream with `client`'s certificate, sends one CDS request for `node`, and returns
  // how the server ended the stream.
  grpc::Status Refusal(const std::string& client, const envoy::config::core::v3::Node& node) {
    FakeXdsClient xds(Target(), node.id(), FakeXdsClient::Service::kAggregated, kWait, Credentials(client));
    DiscoveryRequest request;
    *request.mutable_node() = node;
    request.set_type_url(kCds);
    xds.SendRaw(request);
    return xds.WaitForStreamEnd(kWait);
  }

  TestPki pki_;
  SnapshotCache cache_;
  XdsSecurity security_;
  std::unique_ptr<XdsServer> xds_;
  std::unique_ptr<grpc::Server> grpc_;
  int port_ = 0;
};

envoy::config::core::v3::Node NodeWithId(const std::string& id) {
  envoy::config::core::v3::Node node;
  node.set_id(id);
  return node;
}

TEST_F(MtlsTest, AClientWithACertificateOfItsNamespaceIsServedAndShownByIdentity) {
  FakeXdsClient client(Target(), kNodeA, FakeXdsClient::Service::kAggregated, kWait, Credentials("team-a"));
  client.Subscribe(kCds, {});
  std::optional<DiscoveryResponse> cds = client.WaitForResponse(kCds, kWait);
  ASSERT_TRUE(cds.has_value());
  EXPECT_EQ(cds->version_info(), "1");
  std::optional<StreamSyncStatus> stream = xds_->ledger().GetStream(client.stream_id());
  ASSERT_TRUE(stream.has_value());
  EXPECT_EQ(stream->identity, "spiffe://cluster.local/ns/team-a/sa/app");
  client.Ack(*cds);
  EXPECT_TRUE(client.Finish().ok());
}

TEST_F(MtlsTest, ANodeClaimingAnotherNamespaceInItsMetadataIsRefusedNamingTheClaim) {
  envoy::config::core::v3::Node node = NodeWithId("plain-node");
  (*node.mutable_metadata()->mutable_fields())["NAMESPACE"].set_string_value("team-b");
  const grpc::Status status = Refusal("team-a", node);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("node.metadata.NAMESPACE claims namespace \"team-b\""));
  EXPECT_THAT(status.error_message(), HasSubstr("for namespace \"team-a\""));
}

TEST_F(MtlsTest, ANodeIdOfAnotherNamespaceIsRefusedNamingTheClaim) {
  const grpc::Status status = Refusal("team-a", NodeWithId("sidecar~127.0.0.1~app-1.team-b~team-b.svc.cluster.local"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("node.id claims namespace \"team-b\""));
}

TEST_F(MtlsTest, ACertificateFromAnotherTrustDomainIsRefused) {
  const grpc::Status status = Refusal("foreign-domain", NodeWithId(kNodeA));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("trust domain \"example.org\""));
  EXPECT_THAT(status.error_message(), HasSubstr("serves trust domain \"cluster.local\""));
}

TEST_F(MtlsTest, HandshakesFailWithoutAClientCertificateWithAnotherCaAndInPlaintext) {
  EXPECT_FALSE(Handshakes(Credentials("")));                     // no client certificate
  EXPECT_FALSE(Handshakes(Credentials("other-ca-client")));      // a CA the server does not trust
  EXPECT_FALSE(Handshakes(grpc::InsecureChannelCredentials()));  // plaintext to the TLS port
  EXPECT_TRUE(Handshakes(Credentials("team-a")));                // and the server still serves
  EXPECT_EQ(xds_->open_streams(), 0);
}

TEST_F(MtlsTest, ARotatedServerCertificateServesNewHandshakesWhileTheOpenStreamStays) {
  FakeXdsClient client(Target(), kNodeA, FakeXdsClient::Service::kAggregated, absl::Seconds(60), Credentials("team-a"));
  client.Subscribe(kCds, {});
  std::optional<DiscoveryResponse> v1 = client.WaitForResponse(kCds, kWait);
  ASSERT_TRUE(v1.has_value());
  client.Ack(*v1);

  // A new server certificate from a new CA: only clients trusting the new CA accept it.
  ASSERT_TRUE(pki_.MakeCa("ca2"));
  ASSERT_TRUE(pki_.MakeLeaf("server2", "ca2", "IP:127.0.0.1"));
  EXPECT_FALSE(Handshakes(Credentials("team-a", "ca2")));
  ASSERT_TRUE(pki_.Replace("server.key", "server2.key"));
  ASSERT_TRUE(pki_.Replace("server.crt", "server2.crt"));
  // The files are re-read every second: poll, bounded, for the first handshake with the new pair.
  bool rotated = false;
  for (absl::Time end = absl::Now() + kWait; !rotated && absl::Now() < end;) {
    rotated = Handshakes(Credentials("team-a", "ca2"), absl::Milliseconds(500));
  }
  EXPECT_TRUE(rotated) << "no handshake with the rotated certificate within " << kWait;
  EXPECT_FALSE(Handshakes(Credentials("team-a", "ca")));

  // The stream made before the rotation still gets pushes.
  ASSERT_TRUE(cache_.SetSnapshot(kNodeA, MustSnapshot("2", {StaticCluster("c1"), StaticCluster("c2")})).ok());
  std::optional<DiscoveryResponse> v2 = client.WaitForResponse(kCds, kWait);
  ASSERT_TRUE(v2.has_value());
  EXPECT_EQ(v2->version_info(), "2");
  client.Ack(*v2);
  EXPECT_TRUE(client.Finish().ok());
}

// The mesh behind mTLS: a proxy is scoped by the namespace its certificate proves. Namespace
// team-a has a Sidecar that limits egress to its own namespace; a node that claims no namespace
// (it would be "default", and see everything) is served as team-a.
constexpr char kTwoNamespaces[] = R"(apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: team-a}
spec:
  ports: [{name: http, port: 9080}]
---
apiVersion: v1
kind: Service
metadata: {name: payments, namespace: team-b}
spec:
  ports: [{name: http, port: 9090}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: team-a}
spec:
  egress: [{hosts: ["./*"]}]
)";

class StaticSource final : public ConfigSource {
 public:
  explicit StaticSource(std::string content = kTwoNamespaces) : content_(std::move(content)) {}
  std::string Describe() const override { return "static"; }
  absl::StatusOr<std::vector<FileRead>> Load() override {
    return std::vector{FileRead::Present("mesh.yaml", content_)};
  }
  absl::Status Start(OnBatch) override { return absl::OkStatus(); }
  void Stop() override {}

 private:
  const std::string content_;
};

TEST_F(MtlsTest, AProxyIsScopedByItsCertificatesNamespaceNotByWhatItClaims) {
  RealScheduler scheduler;
  MeshController controller({}, std::make_unique<StaticSource>(), scheduler);
  ASSERT_TRUE(controller.Start().ok());
  XdsServer::Options options;
  options.credentials = security_.credentials;
  options.authenticator = security_.authenticator.get();
  XdsServer mesh_xds(controller.pipeline(), options);
  int port = 0;
  absl::StatusOr<std::unique_ptr<grpc::Server>> server = mesh_xds.Start("127.0.0.1:0", &port);
  ASSERT_TRUE(server.ok()) << server.status();

  FakeXdsClient client(absl::StrCat("127.0.0.1:", port), "proxy-claiming-nothing", FakeXdsClient::Service::kAggregated,
                       kWait, Credentials("team-a"));
  client.Subscribe(kCds, {});
  std::optional<DiscoveryResponse> cds = client.WaitForResponse(kCds, kWait);
  ASSERT_TRUE(cds.has_value());
  std::vector<std::string> clusters;
  for (const auto& any : cds->resources()) {
    envoy::config::cluster::v3::Cluster cluster;
    ASSERT_TRUE(any.UnpackTo(&cluster));
    clusters.push_back(cluster.name());
  }
  EXPECT_THAT(clusters, ::testing::Contains(HasSubstr("reviews.team-a")));
  EXPECT_THAT(clusters, ::testing::Each(::testing::Not(HasSubstr("team-b")))) << "team-b is outside team-a's Sidecar";
  client.Ack(*cds);

  // The admin page of what the proxy is served names who it authenticated as.
  MetricsRegistry metrics;
  ConvergenceTracker tracker;
  AdminServer admin({&metrics, &mesh_xds.ledger(), &controller.pipeline(), &controller.store(), &tracker, nullptr});
  ASSERT_TRUE(admin.Start("127.0.0.1", 0).ok());
  httplib::Client http("127.0.0.1", admin.port());
  httplib::Result dump = http.Get("/debug/config_dump?proxy=proxy-claiming-nothing");
  ASSERT_TRUE(dump);
  EXPECT_EQ(dump->status, 200);
  EXPECT_THAT(dump->body, HasSubstr(R"({"@identities":["spiffe://cluster.local/ns/team-a/sa/app"],)"));
  admin.Stop();
  EXPECT_TRUE(client.Finish().ok());
  (*server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  controller.Stop();
}

#ifndef CXDS_BINARY_PATH
#error "CXDS_BINARY_PATH must name the cxds binary (test/CMakeLists.txt)"
#endif

// A loopback port that was free a moment ago (the kernel picked it; closed again).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

// The real daemon: `cxds serve` on examples/mesh with --tls-cert, --tls-key and --client-ca
// serves a client with a certificate, says security=mtls, and refuses a plaintext client.
TEST_F(MtlsTest, TheDaemonServesOverMtlsWithTheFlags) {
  const int xds_port = FreePort();
  const int admin_port = FreePort();
  ASSERT_GT(xds_port, 0);
  const std::string log = pki_.Path("serve.log");
  const std::string command =
      absl::StrCat("timeout -s KILL 60 ", CXDS_BINARY_PATH, " serve --config-dir ", CXDS_SOURCE_DIR, "/examples/mesh",
                   " --xds-address 127.0.0.1:", xds_port, " --admin-address 127.0.0.1:", admin_port, " --tls-cert ",
                   pki_.Path("server.crt"), " --tls-key ", pki_.Path("server.key"), " --client-ca ",
                   pki_.Path("ca.crt"), " </dev/null >", log, " 2>&1 & echo $!");
  FILE* spawned = popen(command.c_str(), "r");
  ASSERT_NE(spawned, nullptr);
  int pid = 0;
  ASSERT_EQ(fscanf(spawned, "%d", &pid), 1);
  pclose(spawned);
  bool ready = false;
  for (absl::Time end = absl::Now() + absl::Seconds(20); !ready && absl::Now() < end;) {
    ready = pki_.Read("serve.log").find("READY") != std::string::npos;
    if (!ready) absl::SleepFor(absl::Milliseconds(20));  // a log file has no event to wait on
  }
  ASSERT_TRUE(ready) << pki_.Read("serve.log");
  EXPECT_THAT(pki_.Read("serve.log"), HasSubstr("security=mtls"));
  EXPECT_THAT(pki_.Read("serve.log"), ::testing::Not(HasSubstr("PLAINTEXT")));

  const std::string target = absl::StrCat("127.0.0.1:", xds_port);
  {
    FakeXdsClient client(target, "mesh-proxy", FakeXdsClient::Service::kAggregated, kWait, Credentials("team-a"));
    client.Subscribe(kCds, {});
    std::optional<DiscoveryResponse> cds = client.WaitForResponse(kCds, kWait);
    ASSERT_TRUE(cds.has_value());
    EXPECT_GT(cds->resources_size(), 0);
    client.Ack(*cds);
    EXPECT_TRUE(client.Finish().ok());
  }
  grpc::ChannelArguments args;
  args.SetInt("grpc.use_local_subchannel_pool", 1);
  EXPECT_FALSE(grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args)
                   ->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(2))));
  EXPECT_THAT(pki_.Read("serve.log"), HasSubstr("identity=spiffe://cluster.local/ns/team-a/sa/app"));
  ::kill(pid, SIGTERM);
}

// CSDS on an mTLS port: a caller sees only the proxies of its own namespace, and a caller the
// authenticator refuses gets nothing.
TEST_F(MtlsTest, CsdsShowsACallerOnlyTheProxiesOfItsNamespace) {
  ASSERT_TRUE(pki_.MakeLeaf("team-b", "ca", "URI:spiffe://cluster.local/ns/team-b/sa/app"));
  const std::string node_b = "sidecar~127.0.0.1~app-1.team-b~team-b.svc.cluster.local";
  ASSERT_TRUE(cache_.SetSnapshot(node_b, MustSnapshot("1", {StaticCluster("c1")})).ok());
  std::vector<std::unique_ptr<FakeXdsClient>> proxies;
  for (const auto& [client, node] : {std::pair<std::string, std::string>{"team-a", kNodeA}, {"team-b", node_b}}) {
    proxies.push_back(std::make_unique<FakeXdsClient>(Target(), node, FakeXdsClient::Service::kAggregated, kWait,
                                                      Credentials(client)));
    proxies.back()->Subscribe(kCds, {});
    std::optional<DiscoveryResponse> cds = proxies.back()->WaitForResponse(kCds, kWait);
    ASSERT_TRUE(cds.has_value()) << client;
    proxies.back()->Ack(*cds);
  }
  const auto fetch = [&](const std::string& client, grpc::Status* status) {
    auto stub = envoy::service::status::v3::ClientStatusDiscoveryService::NewStub(
        grpc::CreateChannel(Target(), Credentials(client)));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    envoy::service::status::v3::ClientStatusResponse response;
    *status = stub->FetchClientStatus(&context, {}, &response);
    std::vector<std::string> nodes;
    for (const auto& config : response.config()) nodes.push_back(config.node().id());
    return nodes;
  };
  grpc::Status status;
  EXPECT_EQ(fetch("team-a", &status), std::vector<std::string>{kNodeA});
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(fetch("team-b", &status), std::vector<std::string>{node_b});
  EXPECT_TRUE(fetch("foreign-domain", &status).empty());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

// A gateway's TLS certificate over real gRPC: a gateway proxy whose client certificate names
// its namespace gets the Secret of its HTTPS server (kubernetes://NAME, with the private key);
// CSDS shows what it was sent with the key redacted.
TEST_F(MtlsTest, AGatewayProvenByItsCertificateGetsItsServersSecretAndCsdsRedactsTheKey) {
  ASSERT_TRUE(pki_.MakeLeaf("shop", "ca", "DNS:shop.example.com"));
  const std::string cert = pki_.Read("shop.crt"), key = pki_.Read("shop.key");
  std::string config = absl::StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: shop-cert, namespace: team-a}\n",
                                    "type: kubernetes.io/tls\ndata:\n  tls.crt: ", absl::Base64Escape(cert),
                                    "\n  tls.key: ", absl::Base64Escape(key), R"(
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: team-a}
spec:
  servers:
  - port: {number: 8443, name: https, protocol: HTTPS}
    hosts: [shop.example.com]
    tls: {mode: SIMPLE, credentialName: shop-cert}
)");
  RealScheduler scheduler;
  MeshController::Options controller_options;
  controller_options.translation.secret_readers = {"team-a/app"};  // the service account of team-a.crt
  MeshController controller(controller_options, std::make_unique<StaticSource>(config), scheduler);
  ASSERT_TRUE(controller.Start().ok());
  XdsServer::Options options;
  options.credentials = security_.credentials;
  options.authenticator = security_.authenticator.get();
  XdsServer mesh_xds(controller.pipeline(), options);
  int port = 0;
  absl::StatusOr<std::unique_ptr<grpc::Server>> server = mesh_xds.Start("127.0.0.1:0", &port);
  ASSERT_TRUE(server.ok()) << server.status();

  const std::string gateway = "router~127.0.0.1~ingress-1.team-a~team-a.svc.cluster.local";
  const std::string sds(kSecretType);
  {
    FakeXdsClient client(absl::StrCat("127.0.0.1:", port), gateway, FakeXdsClient::Service::kAggregated, kWait,
                         Credentials("team-a"));
    client.Subscribe(sds, {"kubernetes://shop-cert"});
    std::optional<DiscoveryResponse> response = client.WaitForResponse(sds, kWait);
    ASSERT_TRUE(response.has_value());
    ASSERT_EQ(response->resources_size(), 1);
    envoy::extensions::transport_sockets::tls::v3::Secret secret;
    ASSERT_TRUE(response->resources(0).UnpackTo(&secret));
    EXPECT_EQ(secret.name(), "kubernetes://shop-cert");
    EXPECT_EQ(secret.tls_certificate().certificate_chain().inline_bytes(), cert);
    EXPECT_EQ(secret.tls_certificate().private_key().inline_bytes(), key);
    client.Ack(*response);

    auto stub = envoy::service::status::v3::ClientStatusDiscoveryService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), Credentials("team-a")));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    envoy::service::status::v3::ClientStatusResponse status;
    ASSERT_TRUE(stub->FetchClientStatus(&context, {}, &status).ok());
    int shown = 0;
    for (const auto& client_config : status.config()) {
      for (const auto& xds : client_config.generic_xds_configs()) {
        if (xds.type_url() != sds) continue;
        envoy::extensions::transport_sockets::tls::v3::Secret dumped;
        ASSERT_TRUE(xds.xds_config().UnpackTo(&dumped));
        EXPECT_EQ(dumped.tls_certificate().private_key().inline_string(), "[redacted]");
        EXPECT_EQ(dumped.tls_certificate().certificate_chain().inline_bytes(), cert);
        ++shown;
      }
    }
    EXPECT_EQ(shown, 1);
    EXPECT_TRUE(client.Finish().ok());
  }
  (*server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  controller.Stop();
}

}  // namespace
}  // namespace cxds
