// ReplicasTest: two control planes in one process, each a MeshController with its own
// EtcdSource, ConfigStore, PushPipeline and XdsServer (nothing shared but the real etcd they
// read, test/fakes/etcd_process.h), serving the example mesh over real gRPC.
//  - For one proxy both serve byte-identical resources with identical versions, SotW version
//    strings included, and a change written to etcd reaches the clients of both.
//  - A Delta proxy that moves from replica A (shut down) to replica B and reports what it
//    holds in initial_resource_versions is sent no resource at all.
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/scheduler.h"
#include "common/status_matchers.h"
#include "config/etcd_source.h"
#include "config/yaml_loader.h"
#include "controller/mesh_controller.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "fakes/delta_ads_client.h"
#include "fakes/etcd_process.h"
#include "fakes/fake_xds_client.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "protocol/references.h"
#include "protocol/type_url.h"
#include "server/xds_server.h"

#ifndef CXDS_SOURCE_DIR
#error "CXDS_SOURCE_DIR must name the source tree (test/CMakeLists.txt)"
#endif

namespace cxds {
namespace {

using envoy::service::discovery::v3::DeltaDiscoveryResponse;
using envoy::service::discovery::v3::DiscoveryResponse;
using testing::DeltaAdsClient;
using testing::DeltaRequest;
using testing::DrainUntilProbe;
using ::testing::ElementsAre;
using testing::EtcdProcess;
using testing::FakeXdsClient;
using testing::HeldVersions;
using ::testing::MatchesRegex;

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);
const std::string kLds(kListenerType);
const std::string kRds(kRouteType);
constexpr absl::Duration kWait = absl::Seconds(10);
constexpr char kPrefix[] = "/mesh";
// An Envoy sidecar in namespace default: it sees the inventory service of the example mesh.
constexpr char kNode[] = "sidecar~127.0.0.1~app-1.default~default.svc.cluster.local";

// What `cxds apply -f examples/mesh` writes: each document's canonical YAML at its key.
std::vector<EtcdWrite> ExampleMeshWrites() {
  std::vector<EtcdWrite> writes;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(CXDS_SOURCE_DIR) + "/examples/mesh")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    ParsedFile parsed = ParseConfigFile(entry.path().string(), text.str());
    EXPECT_TRUE(parsed.errors.empty()) << entry.path();
    for (ConfigDocument& doc : parsed.documents) {
      writes.push_back({EtcdKeyFor(kPrefix, KeyOf(doc.object)), std::move(doc.canonical)});
    }
  }
  return writes;
}

class Replica {
 public:
  explicit Replica(const std::string& etcd_address) {
    EtcdSource::Options source_options;
    source_options.min_backoff = absl::Milliseconds(50);
    MeshController::Options options;
    options.debounce.debounce_after = absl::Milliseconds(10);
    controller_ = std::make_unique<MeshController>(
        options, std::make_unique<EtcdSource>(EtcdLocation{etcd_address, kPrefix}, source_options), scheduler_);
    status_ = controller_->Start();
    if (!status_.ok()) return;
    xds_ = std::make_unique<XdsServer>(controller_->pipeline(), XdsServer::Options{});
    absl::StatusOr<std::unique_ptr<grpc::Server>> server = xds_->Start("127.0.0.1:0", &port_);
    status_ = server.status();
    if (server.ok()) server_ = *std::move(server);
  }
  ~Replica() { Shutdown(); }

  // Ends every stream (a replica that goes away) and stops watching etcd.
  void Shutdown() {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_.reset();
    if (controller_ != nullptr) controller_->Stop();
  }

  const absl::Status& status() const { return status_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  MeshController& controller() { return *controller_; }
  SnapshotPtr View() { return controller_->pipeline().ProxyView(kNode); }

 private:
  RealScheduler scheduler_;
  std::unique_ptr<MeshController> controller_;
  std::unique_ptr<XdsServer> xds_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  absl::Status status_;
};

std::vector<std::string> NamesOf(const SnapshotPtr& view, const std::string& type_url) {
  std::vector<std::string> names;
  if (view == nullptr || view->resources(type_url) == nullptr) return names;
  for (const auto& [name, resource] : view->resources(type_url)->items) names.push_back(name);
  return names;
}

// What the proxy's listeners and clusters in `view` refer to (RDS and EDS names).
ResourceReferences ReferencesIn(const SnapshotPtr& view) {
  ResourceReferences refs;
  for (const std::string& type : {kLds, kCds}) {
    for (const std::string& name : NamesOf(view, type)) CollectReferences(*view->Find(type, name), &refs);
  }
  return refs;
}

std::vector<std::string> Sorted(const std::set<std::string>& names) { return {names.begin(), names.end()}; }

// The endpoint ports in a SotW EDS response.
std::set<uint32_t> Ports(const DiscoveryResponse& response) {
  std::set<uint32_t> ports;
  for (const auto& any : response.resources()) {
    envoy::config::endpoint::v3::ClusterLoadAssignment cla;
    if (!any.UnpackTo(&cla)) continue;
    for (const auto& locality : cla.endpoints()) {
      for (const auto& endpoint : locality.lb_endpoints()) {
        ports.insert(endpoint.endpoint().address().socket_address().port_value());
      }
    }
  }
  return ports;
}

class ReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.Start()) << etcd_.Log();
    EtcdClient client(etcd_.address());
    ASSERT_TRUE(client.Commit(ExampleMeshWrites()).ok());
    a_ = std::make_unique<Replica>(etcd_.address());
    b_ = std::make_unique<Replica>(etcd_.address());
    ASSERT_TRUE(a_->status().ok()) << a_->status();
    ASSERT_TRUE(b_->status().ok()) << b_->status();
  }

  EtcdProcess etcd_;
  std::unique_ptr<Replica> a_;
  std::unique_ptr<Replica> b_;
};

TEST_F(ReplicasTest, SameConfigSameBytesAndVersionsAndChangesReachBoth) {
  // SotW: the same CDS from both, to the version string and the bytes.
  FakeXdsClient on_a(a_->address(), kNode);
  FakeXdsClient on_b(b_->address(), kNode);
  on_a.Subscribe(kCds, {});
  on_b.Subscribe(kCds, {});
  std::optional<DiscoveryResponse> cds_a = on_a.WaitForResponse(kCds, kWait);
  std::optional<DiscoveryResponse> cds_b = on_b.WaitForResponse(kCds, kWait);
  ASSERT_TRUE(cds_a.has_value() && cds_b.has_value());
  EXPECT_GT(cds_a->resources_size(), 0);
  EXPECT_EQ(cds_a->version_info(), cds_b->version_info());
  ASSERT_EQ(cds_a->resources_size(), cds_b->resources_size());
  for (int i = 0; i < cds_a->resources_size(); ++i) {
    EXPECT_EQ(cds_a->resources(i).value(), cds_b->resources(i).value()) << "cluster " << i;
  }
  on_a.Ack(*cds_a);
  on_b.Ack(*cds_b);

  // Every resource of the proxy's view, of every type: same names, same serialized bytes.
  SnapshotPtr view_a = a_->View();
  SnapshotPtr view_b = b_->View();
  ASSERT_NE(view_a, nullptr);
  ASSERT_NE(view_b, nullptr);
  for (const std::string& type : {kCds, kEds, kLds, kRds}) {
    ASSERT_EQ(NamesOf(view_a, type), NamesOf(view_b, type)) << type;
    for (const std::string& name : NamesOf(view_a, type)) {
      EXPECT_EQ(view_a->Find(type, name)->serialized(), view_b->Find(type, name)->serialized()) << type << " " << name;
      EXPECT_EQ(view_a->Find(type, name)->content_version(), view_b->Find(type, name)->content_version());
    }
  }
  EXPECT_EQ(a_->controller().pipeline().RecentPushes().back().version,
            b_->controller().pipeline().RecentPushes().back().version);

  // EDS of the inventory cluster on both, then a port change written to etcd reaches both.
  std::vector<std::string> clusters = Sorted(ReferencesIn(view_a).load_assignments);
  ASSERT_FALSE(clusters.empty());
  on_a.Subscribe(kEds, clusters);
  on_b.Subscribe(kEds, clusters);
  std::optional<DiscoveryResponse> eds_a = on_a.WaitForResponse(kEds, kWait);
  std::optional<DiscoveryResponse> eds_b = on_b.WaitForResponse(kEds, kWait);
  ASSERT_TRUE(eds_a.has_value() && eds_b.has_value());
  EXPECT_EQ(eds_a->version_info(), eds_b->version_info());
  EXPECT_THAT(Ports(*eds_a), ::testing::Contains(18082u));
  on_a.Ack(*eds_a);
  on_b.Ack(*eds_b);

  std::vector<EtcdWrite> change;
  for (EtcdWrite& write : ExampleMeshWrites()) {
    if (write.key != EtcdKeyFor(kPrefix, {"WorkloadEntry", "default", "inventory-v2"})) continue;
    const size_t at = write.value->find("18082");
    ASSERT_NE(at, std::string::npos) << *write.value;
    write.value->replace(at, 5, "18092");
    change.push_back(std::move(write));
  }
  ASSERT_EQ(change.size(), 1u);
  ASSERT_TRUE(EtcdClient(etcd_.address()).Commit(change).ok());
  std::optional<DiscoveryResponse> moved_a = on_a.WaitForResponse(kEds, kWait);
  std::optional<DiscoveryResponse> moved_b = on_b.WaitForResponse(kEds, kWait);
  ASSERT_TRUE(moved_a.has_value() && moved_b.has_value());
  EXPECT_THAT(Ports(*moved_a), ::testing::Contains(18092u));
  EXPECT_EQ(Ports(*moved_a), Ports(*moved_b));
  EXPECT_EQ(moved_a->version_info(), moved_b->version_info());
  EXPECT_NE(moved_a->version_info(), eds_a->version_info());
  on_a.Ack(*moved_a);
  on_b.Ack(*moved_b);
}

// A document written to etcd past `cxds apply` (which would refuse it) is refused by each
// replica under its key, as a file would be, and the object's last good version serves on.
TEST_F(ReplicasTest, AnInvalidDocumentInEtcdIsRefusedUnderItsKeyAndTheLastGoodVersionServes) {
  const std::string key = EtcdKeyFor(kPrefix, {"WorkloadEntry", "default", "inventory-v2"});
  const std::string broken =
      "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: inventory-v2, namespace: default}\n"
      "spec:\n  address: 127.0.0.1\n  ports: {grpc: 99999}\n";
  ASSERT_OK_AND_ASSIGN(int64_t revision, EtcdClient(etcd_.address()).Commit({{key, broken}}));
  for (Replica* replica : {a_.get(), b_.get()}) {
    for (const absl::Time deadline = absl::Now() + kWait;
         replica->controller().source().status().revision < revision && absl::Now() < deadline;) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    std::vector<std::string> errors;
    for (const ConfigStore::FileStatus& file : replica->controller().store().Status()) {
      for (const ConfigError& error : file.errors) errors.push_back(error.ToString());
    }
    EXPECT_THAT(errors, ElementsAre(MatchesRegex(
                            "/mesh/WorkloadEntry/default/inventory-v2:[0-9]+: WorkloadEntry default/inventory-v2: "
                            "spec\\.ports\\.grpc: .*")));
    // The last good version (port 18082) is still the one served.
    const auto served = replica->controller().store().Snapshot()->find({"WorkloadEntry", "default", "inventory-v2"});
    ASSERT_NE(served, replica->controller().store().Snapshot()->end());
    EXPECT_EQ(std::get<WorkloadEntry>(served->second->object).spec.ports.at("grpc"), 18082u);
  }
}

TEST_F(ReplicasTest, ADeltaProxyThatMovesToAnotherReplicaIsSentNothing) {
  HeldVersions held;
  {
    DeltaAdsClient client(a_->address(), kNode);
    ASSERT_TRUE(client.Send(DeltaRequest(kLds, {})));
    ASSERT_TRUE(client.Send(DeltaRequest(kCds, {})));
    ASSERT_TRUE(DrainUntilProbe(client, "probe", held, kWait).has_value());
    // The names the proxy's listeners and clusters refer to, as the server resolved them.
    SnapshotPtr view = a_->View();
    ASSERT_NE(view, nullptr);
    const ResourceReferences refs = ReferencesIn(view);
    ASSERT_TRUE(client.Send(DeltaRequest(kRds, Sorted(refs.route_configurations))));
    ASSERT_TRUE(client.Send(DeltaRequest(kEds, Sorted(refs.load_assignments))));
    ASSERT_TRUE(DrainUntilProbe(client, "probe-2", held, kWait).has_value());
    for (const std::string& type : {kCds, kEds, kLds, kRds}) {
      EXPECT_FALSE(held[type].empty()) << type << " holds nothing from replica A";
    }
    a_->Shutdown();  // replica A goes away with the stream open
    EXPECT_TRUE(client.WaitForEnd(kWait)) << "the stream outlived replica A";
  }

  DeltaAdsClient client(b_->address(), kNode);
  const auto names = [&](const std::string& type) {
    std::vector<std::string> out;
    for (const auto& [name, version] : held[type]) out.push_back(name);
    return out;
  };
  ASSERT_TRUE(client.Send(DeltaRequest(kLds, {}, {}, "", held[kLds])));
  ASSERT_TRUE(client.Send(DeltaRequest(kCds, {}, {}, "", held[kCds])));
  ASSERT_TRUE(client.Send(DeltaRequest(kRds, names(kRds), {}, "", held[kRds])));
  ASSERT_TRUE(client.Send(DeltaRequest(kEds, names(kEds), {}, "", held[kEds])));
  const HeldVersions before = held;
  std::optional<std::vector<DeltaDiscoveryResponse>> reconnect = DrainUntilProbe(client, "probe", held, kWait);
  ASSERT_TRUE(reconnect.has_value()) << "replica B did not answer the probe";
  size_t bodies = 0;
  size_t removed = 0;
  for (const DeltaDiscoveryResponse& response : *reconnect) {
    bodies += response.resources_size();
    removed += response.removed_resources_size();
  }
  EXPECT_EQ(bodies, 0u) << "replica B resent resources the proxy already held";
  EXPECT_EQ(removed, 1u) << "only the probe is removed";
  EXPECT_EQ(held, before);
}

}  // namespace
}  // namespace cxds
