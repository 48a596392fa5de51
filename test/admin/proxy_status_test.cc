// Proxy status (issue 15): the classification of each type from the ledger, and `cxds
// proxy-status` (the real binary) against a real admin server while a real gRPC client holds
// CDS ACKed, LDS unanswered and EDS NACKed.
#include "admin/proxy_status.h"

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "admin/admin_server.h"
#include "cache/snapshot_cache.h"
#include "common/scheduler.h"
#include "config/config_source.h"
#include "controller/mesh_controller.h"
#include "fakes/fake_xds_client.h"
#include "fakes/test_resources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/convergence_tracker.h"
#include "protocol/type_url.h"
#include "server/xds_server.h"

#ifndef CXDS_BINARY_PATH
#error "CXDS_BINARY_PATH must name the cxds binary (test/CMakeLists.txt)"
#endif
#ifndef CXDS_SOURCE_DIR
#error "CXDS_SOURCE_DIR must name the source tree (test/CMakeLists.txt)"
#endif

namespace cxds {
namespace {

using envoy::service::discovery::v3::DiscoveryResponse;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

const std::string kCds(kClusterType);
const std::string kLds(kListenerType);
const std::string kEds(kEndpointType);
const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

TEST(ClassifyTypeTest, FollowsTheNewestResponse) {
  AckLedger ledger;
  ledger.OpenStream(1, kT0);
  ledger.SetNode(1, "proxy-a");
  const auto cell = [&](const std::string& type, absl::Time now) {
    const std::optional<StreamSyncStatus> stream = ledger.GetStream(1);
    for (const TypeSyncStatus& t : stream->types) {
      if (t.type_url == type) return ClassifyType(t, now);
    }
    return TypeStatusCell{};
  };
  EXPECT_EQ(cell(kCds, kT0).state, TypeState::kNotSent);

  ledger.RecordSent(1, kCds, "n1", "v1", 3, kT0);
  TypeStatusCell stale = cell(kCds, kT0 + absl::Seconds(7));
  EXPECT_EQ(stale.state, TypeState::kStale);
  EXPECT_EQ(stale.age, absl::Seconds(7));
  EXPECT_EQ(stale.sent_version, "v1");

  ledger.RecordFeedback(1, kCds, "n1", "v1", nullptr, 0, kT0 + absl::Seconds(1));
  EXPECT_EQ(cell(kCds, kT0 + absl::Seconds(8)).state, TypeState::kSynced);

  // A newer response not answered yet: STALE again, whatever was ACKed before.
  ledger.RecordSent(1, kCds, "n2", "v2", 3, kT0 + absl::Seconds(10));
  EXPECT_EQ(cell(kCds, kT0 + absl::Seconds(11)).state, TypeState::kStale);

  const std::string error = "cluster 'x': bad\nsecond line";
  ledger.RecordFeedback(1, kCds, "n2", "v1", &error, 3, kT0 + absl::Seconds(12));
  TypeStatusCell nack = cell(kCds, kT0 + absl::Seconds(13));
  EXPECT_EQ(nack.state, TypeState::kNacked);
  EXPECT_EQ(nack.error, "cluster 'x': bad");  // the first line
  EXPECT_EQ(nack.accepted, "v1");

  // An ACK of an older response does not make the newest one accepted.
  ledger.RecordSent(1, kCds, "n3", "v3", 3, kT0 + absl::Seconds(20));
  ledger.RecordFeedback(1, kCds, "n2", "v2", nullptr, 0, kT0 + absl::Seconds(21));
  EXPECT_EQ(cell(kCds, kT0 + absl::Seconds(22)).state, TypeState::kStale);

  const std::vector<ProxyStatusRow> rows = ProxyStatusRows(ledger.AllStreams(), kT0 + absl::Seconds(22));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].node, "proxy-a");
  EXPECT_EQ(rows[0].types[0].state, TypeState::kStale);    // CDS
  EXPECT_EQ(rows[0].types[1].state, TypeState::kNotSent);  // LDS
  EXPECT_THAT(ProxyStatusJson(rows, "pv1"),
              HasSubstr(R"("proxies":[{"node":"proxy-a","stream":1,"identity":"none","CDS":{"state":"STALE",)"
                        R"("sent_version":"v3","age_ms":2000,"error":"","accepted":""},"LDS":{"state":"NOT SENT")"));
}

// The example mesh, read once.
class ExampleMeshSource final : public ConfigSource {
 public:
  std::string Describe() const override { return "examples/mesh"; }
  absl::StatusOr<std::vector<FileRead>> Load() override {
    std::vector<FileRead> files;
    for (const char* name : {"inventory.yaml", "routing.yaml", "workloads.yaml", "shop.yaml"}) {
      const std::string path = StrCat(CXDS_SOURCE_DIR, "/examples/mesh/", name);
      std::FILE* f = std::fopen(path.c_str(), "r");
      if (f == nullptr) return absl::NotFoundError(path);
      std::string text;
      char buffer[4096];
      for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), f)) > 0;) text.append(buffer, n);
      std::fclose(f);
      files.push_back(FileRead::Present(path, std::move(text)));
    }
    return files;
  }
  absl::Status Start(OnBatch) override { return absl::OkStatus(); }
  void Stop() override {}
};

// Runs `cxds ARGS`; its standard output and exit code.
std::pair<std::string, int> RunCxds(const std::string& args) {
  std::FILE* pipe = popen(StrCat(CXDS_BINARY_PATH, " ", args, " 2>&1").c_str(), "r");
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
  const int status = pclose(pipe);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

// cxds serving the example mesh over real gRPC, with its admin server.
class ProxyStatusCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(controller_.Start().ok());
    absl::StatusOr<std::unique_ptr<grpc::Server>> server = xds_.Start("127.0.0.1:0", &port_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_TRUE(admin_.Start("127.0.0.1", 0).ok());
  }
  void TearDown() override {
    admin_.Stop();
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }

  RealScheduler scheduler_;
  MeshController controller_{{}, std::make_unique<ExampleMeshSource>(), scheduler_};
  XdsServer xds_{controller_.pipeline(), XdsServer::Options{}};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  MetricsRegistry metrics_;
  ConvergenceTracker tracker_;
  AdminServer admin_{{&metrics_, &xds_.ledger(), &controller_.pipeline(), &controller_.store(), &tracker_, nullptr}};
};

TEST_F(ProxyStatusCliTest, ShowsWhatEachProxyAcceptedNotWhatWasPushed) {
  const std::string node = "sidecar~127.0.0.1~app-1.default~default.svc.cluster.local";
  testing::FakeXdsClient client(StrCat("127.0.0.1:", port_), node);
  client.Subscribe(kCds, {});
  std::optional<DiscoveryResponse> cds = client.WaitForResponse(kCds, absl::Seconds(10));
  ASSERT_TRUE(cds.has_value());
  client.Ack(*cds);
  client.Subscribe(kLds, {});  // answered by the server, never by the client: STALE
  ASSERT_TRUE(client.WaitForResponse(kLds, absl::Seconds(10)).has_value());
  client.Subscribe(kEds, {"outbound|8080||inventory.mesh.local"});
  std::optional<DiscoveryResponse> eds = client.WaitForResponse(kEds, absl::Seconds(10));
  ASSERT_TRUE(eds.has_value());
  client.Nack(*eds, "endpoint port 18081 refused\nmore detail");
  // Wait until the server has recorded the NACK (the CLI reads what the ledger says).
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10); absl::Now() < deadline;) {
    const auto [json, code] = RunCxds(StrCat("proxy-status --admin 127.0.0.1:", admin_.port(), " -o json"));
    if (json.find("\"EDS\":{\"state\":\"NACK\"") != std::string::npos) break;
    absl::SleepFor(absl::Milliseconds(50));
  }

  const auto [table, code] = RunCxds(StrCat("proxy-status --admin 127.0.0.1:", admin_.port()));
  EXPECT_EQ(code, 0) << table;
  // Not a terminal: no colour codes.
  EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
  EXPECT_THAT(table,
              MatchesRegex("NAME +REPLICA +CDS +LDS +EDS +RDS +IDENTITY +VERSION *\n"
                           "sidecar~127\\.0\\.0\\.1~app-1\\.default~default\\.svc\\.cluster\\.local +"
                           "127\\.0\\.0\\.1:[0-9]+ +SYNCED +STALE \\([0-9]+s\\) +"
                           "NACK: endpoint port 18081 refused +NOT SENT +none +[0-9a-f]+ \\(cxds [0-9.]+\\) *\n"));

  const auto [json, json_code] = RunCxds(StrCat("proxy-status --admin 127.0.0.1:", admin_.port(), " -o json ", node));
  EXPECT_EQ(json_code, 0);
  EXPECT_THAT(json, HasSubstr(R"("CDS":{"state":"SYNCED")"));
  EXPECT_THAT(json, HasSubstr(R"("EDS":{"state":"NACK","age_ms":0,"error":"endpoint port 18081 refused"})"));

  const auto [missing, missing_code] =
      RunCxds(StrCat("proxy-status --admin 127.0.0.1:", admin_.port(), " no-such-proxy"));
  EXPECT_EQ(missing_code, 1);
  EXPECT_THAT(missing, HasSubstr("no proxy \"no-such-proxy\" is connected"));

  // proxy-config: what was last sent, per type, with its state.
  const auto [clusters, clusters_code] =
      RunCxds(StrCat("proxy-config clusters ", node, " --admin 127.0.0.1:", admin_.port()));
  EXPECT_EQ(clusters_code, 0) << clusters;
  EXPECT_THAT(clusters, MatchesRegex("NAME +TYPE +EDS SERVICE +VERSION +STATE *\n"
                                     "(outbound\\|[0-9]+\\|[a-z0-9]*\\|[a-z0-9.-]+ +EDS +- +[0-9a-f]+ +SYNCED *\n)+"));
  const auto [endpoints, endpoints_code] =
      RunCxds(StrCat("proxy-config endpoints ", node, " --admin 127.0.0.1:", admin_.port()));
  EXPECT_EQ(endpoints_code, 0);
  EXPECT_THAT(endpoints, MatchesRegex("CLUSTER +ENDPOINTS +VERSION +STATE *\n"
                                      "outbound\\|8080\\|\\|inventory\\.mesh\\.local +127\\.0\\.0\\.1:18081 "
                                      "127\\.0\\.0\\.1:18082 +[0-9a-f]+ +NACK *\n"));
  const auto [listeners, listeners_code] =
      RunCxds(StrCat("proxy-config listeners ", node, " --admin 127.0.0.1:", admin_.port()));
  EXPECT_THAT(listeners, HasSubstr("STALE"));
  const auto [routes, routes_code] =
      RunCxds(StrCat("proxy-config routes ", node, " --admin 127.0.0.1:", admin_.port()));
  EXPECT_THAT(routes, HasSubstr("(nothing sent)"));
  const auto [raw, raw_code] =
      RunCxds(StrCat("proxy-config endpoints ", node, " --admin 127.0.0.1:", admin_.port(), " -o json"));
  EXPECT_EQ(raw_code, 0);
  EXPECT_THAT(raw, HasSubstr(R"("config":{"clusterName":"outbound|8080||inventory.mesh.local")"));
  EXPECT_THAT(raw, Not(HasSubstr("Cluster\"")));  // one type only
  const auto [yaml, yaml_code] =
      RunCxds(StrCat("proxy-config clusters ", node, " --admin 127.0.0.1:", admin_.port(), " -o yaml"));
  EXPECT_THAT(yaml, HasSubstr("\n    state: SYNCED\n"));
  EXPECT_EQ(RunCxds(StrCat("proxy-config all nobody --admin 127.0.0.1:", admin_.port())).second, 1);

  // A replica that cannot be reached is named; exit 3.
  const auto [down, down_code] = RunCxds("proxy-status --admin 127.0.0.1:1");
  EXPECT_EQ(down_code, 3);
  EXPECT_THAT(down, HasSubstr("127.0.0.1:1"));
}

// Issue 15: `cxds proxy-status PROXY` compares what the proxy was sent (the ledger) with what
// its replica would send it now (generated afresh from the current push context). A proxy
// that ACKed everything matches; a ledger that says it was sent an older cluster, a cluster
// that no longer exists and not one that does, is shown as istioctl does, with a diff.
TEST_F(ProxyStatusCliTest, AProxyIsComparedWithWhatItWouldBeSentNow) {
  const std::string node = "sidecar~127.0.0.1~app-2.default~default.svc.cluster.local";
  testing::FakeXdsClient client(StrCat("127.0.0.1:", port_), node);
  client.Subscribe(kCds, {"outbound|8080|v1|inventory.mesh.local", "outbound|8080|v2|inventory.mesh.local"});
  std::optional<DiscoveryResponse> cds = client.WaitForResponse(kCds, absl::Seconds(10));
  ASSERT_TRUE(cds.has_value());
  ASSERT_EQ(cds->resources_size(), 2);
  client.Ack(*cds);
  client.Subscribe(kEds, {"outbound|8080||inventory.mesh.local"});
  std::optional<DiscoveryResponse> eds = client.WaitForResponse(kEds, absl::Seconds(10));
  ASSERT_TRUE(eds.has_value());
  client.Ack(*eds);
  std::pair<std::string, int> shown;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10); absl::Now() < deadline;) {
    shown = RunCxds(StrCat("proxy-status --admin 127.0.0.1:", admin_.port(), " ", node));
    if (shown.first.find("Endpoints Match") != std::string::npos) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(shown.second, 0) << shown.first;
  EXPECT_THAT(shown.first, HasSubstr(StrCat(node, " on 127.0.0.1:", admin_.port(), " (stream ")));
  // Named, as gRPC asks: what would be sent is what is subscribed (2 of the 4 clusters), not
  // everything generated for the proxy.
  EXPECT_THAT(shown.first, HasSubstr("\nClusters Match (2 resources, SYNCED)\n"));
  EXPECT_THAT(shown.first, HasSubstr("\nEndpoints Match (1 resources, SYNCED)\n"));
  EXPECT_THAT(shown.first, Not(HasSubstr("Don't Match")));

  // A ledger that disagrees with what would be sent now: the first cluster as it was with a
  // longer connect timeout, one that is gone, and none of the others.
  std::vector<ResourcePtr> clusters;
  for (const HeldResources& held : xds_.ledger().Held(xds_.ledger().AllStreams().front().stream_id)) {
    if (held.type_url == kCds) clusters = held.resources;
  }
  ASSERT_GE(clusters.size(), 2u);
  envoy::config::cluster::v3::Cluster older;
  older.CopyFrom(clusters[0]->message());
  older.mutable_connect_timeout()->set_seconds(older.connect_timeout().seconds() + 7);
  const std::vector<ResourcePtr> sent = {testing::MustResource(older),
                                         testing::StaticCluster("outbound|9999||gone.local")};
  AckLedger stale;
  stale.OpenStream(41, absl::Now());
  stale.SetNode(41, node);
  stale.RecordSent(41, kCds, "n1", "v-old", sent.size(), absl::Now(), SentResources{&sent});
  AdminServer stale_admin({&metrics_, &stale, &controller_.pipeline(), &controller_.store(), &tracker_, nullptr});
  ASSERT_TRUE(stale_admin.Start("127.0.0.1", 0).ok());
  const auto [diff, diff_code] = RunCxds(StrCat("proxy-status --admin 127.0.0.1:", stale_admin.port(), " ", node));
  EXPECT_EQ(diff_code, 0) << diff;
  EXPECT_THAT(diff,
              HasSubstr(StrCat("Clusters Don't Match (STALE; sent 2 resources, would send ", clusters.size(), ")")));
  EXPECT_THAT(diff, HasSubstr("  - outbound|9999||gone.local (sent, gone now)\n"));
  EXPECT_THAT(diff, HasSubstr(StrCat("  + ", clusters[1]->name(), " (new, not sent)\n")));
  EXPECT_THAT(diff, HasSubstr(StrCat("  ~ ", clusters[0]->name(), " (changed)\n    --- sent ", clusters[0]->name())));
  EXPECT_THAT(diff, MatchesRegex(StrCat("(.|\n)*\n    - *\"connectTimeout\": \"", older.connect_timeout().seconds(),
                                        "s\",?\n    \\+ *\"connectTimeout\": \"", older.connect_timeout().seconds() - 7,
                                        "s\",?\n(.|\n)*")));
  // Endpoints were subscribed to and never sent in this ledger.
  EXPECT_THAT(diff, HasSubstr("Endpoints Don't Match (NOT SENT; sent 0 resources, would send 1)"));
  const auto [json, json_code] =
      RunCxds(StrCat("proxy-status -o json --admin 127.0.0.1:", stale_admin.port(), " ", node));
  EXPECT_EQ(json_code, 0);
  EXPECT_THAT(json, HasSubstr(R"("only_sent":["outbound|9999||gone.local"])"));
  EXPECT_THAT(json, HasSubstr(R"("match":false)"));
  stale_admin.Stop();
}

// proxy-config reads whatever the ledger holds: a STATIC cluster (no EDS service) and a type
// with fields absent are shown with "-", not refused as a malformed page.
TEST(ProxyConfigCliTest, ResourcesWithoutOptionalFieldsAreShown) {
  SnapshotCache cache;
  ASSERT_TRUE(cache.SetSnapshot("static-proxy", testing::MustSnapshot("v1", {testing::StaticCluster("s1")})).ok());
  XdsServer xds(cache, XdsServer::Options{});
  int port = 0;
  absl::StatusOr<std::unique_ptr<grpc::Server>> server = xds.Start("127.0.0.1:0", &port);
  ASSERT_TRUE(server.ok()) << server.status();
  MetricsRegistry metrics;
  ConvergenceTracker tracker;
  AdminServer admin({&metrics, &xds.ledger(), nullptr, nullptr, &tracker, nullptr});
  ASSERT_TRUE(admin.Start("127.0.0.1", 0).ok());
  testing::FakeXdsClient client(StrCat("127.0.0.1:", port), "static-proxy");
  client.Subscribe(kCds, {});
  std::optional<DiscoveryResponse> cds = client.WaitForResponse(kCds, absl::Seconds(10));
  ASSERT_TRUE(cds.has_value());
  client.Ack(*cds);
  std::pair<std::string, int> shown;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10); absl::Now() < deadline;) {
    shown = RunCxds(StrCat("proxy-config clusters static-proxy --admin 127.0.0.1:", admin.port()));
    if (shown.first.find("SYNCED") != std::string::npos) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(shown.second, 0) << shown.first;
  EXPECT_THAT(shown.first, MatchesRegex("NAME +TYPE +EDS SERVICE +VERSION +STATE *\ns1 +STATIC +- +v1 +SYNCED *\n"));
  admin.Stop();
  server->get()->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

}  // namespace
}  // namespace cxds
