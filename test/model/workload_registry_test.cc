// Who a proxy is when the registry has its workload (istiod's SetWorkloadLabels and
// GetProxyWorkloadLabels): the registry's entries, the lookup by Pod name and by address, and
// what a change to them pushes.
#include "model/workload_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/strings.h"
#include "config/config_store.h"
#include "model/generators.h"
#include "model/mesh_kinds.h"
#include "model/mesh_model.h"
#include "model/proxy.h"

namespace cxds {
namespace {

constexpr char kWorkloads[] = R"(apiVersion: v1
kind: Pod
metadata: {name: reviews-v2-c4d, namespace: shop, labels: {app: reviews, version: v2, istio-locality: eu-west.zone-b}}
status: {podIP: 127.0.0.12}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1, namespace: shop}
spec: {address: 127.0.0.40, labels: {app: ratings, version: vm}, locality: us-east/zone-a/rack-3}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ratings, namespace: shop}
spec:
  hosts: [ratings.mesh.local]
  ports: [{number: 9080, name: http}]
  resolution: STATIC
  workloadSelector: {labels: {app: ratings}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: only-a-service-selects-me, namespace: shop}
spec: {address: 127.0.0.41, labels: {app: details}}
)";

class WorkloadRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override { Apply(kWorkloads); }
  PushRequest Apply(const std::string& content) {
    const auto update = store_.ApplyFile("workloads.yaml", content);
    EXPECT_TRUE(update.errors.empty()) << update.errors.front().ToString();
    return model_.OnUpdate(update);
  }
  // A node of Istio's id form, with metadata NAMESPACE (if given), LABELS and INSTANCE_IPS.
  static envoy::config::core::v3::Node Node(const std::string& id, const std::string& metadata_namespace,
                                            const LabelMap& labels = {}, const std::string& instance_ips = "") {
    envoy::config::core::v3::Node node;
    node.set_id(id);
    auto& fields = *node.mutable_metadata()->mutable_fields();
    if (!metadata_namespace.empty()) fields["NAMESPACE"].set_string_value(metadata_namespace);
    for (const auto& [k, v] : labels) {
      (*fields["LABELS"].mutable_struct_value()->mutable_fields())[k].set_string_value(v);
    }
    if (!instance_ips.empty()) fields["INSTANCE_IPS"].set_string_value(instance_ips);
    node.mutable_locality()->set_region("node-says");
    return node;
  }
  ProxyInfo Resolve(const envoy::config::core::v3::Node& node) {
    return ParseProxyInfo(node, model_.workloads().get());
  }
  ConfigStore store_;
  MeshModel model_{store_, "cluster.local"};
};

TEST_F(WorkloadRegistryTest, HoldsPodsByNameAndServiceEntryEndpointsByAddress) {
  const auto registry = model_.workloads();
  ASSERT_TRUE(registry->pods.contains({"shop", "reviews-v2-c4d"}));
  const WorkloadIdentity& pod = registry->pods.at({"shop", "reviews-v2-c4d"});
  EXPECT_EQ(pod.source, "Pod shop/reviews-v2-c4d");
  EXPECT_EQ(pod.labels, (LabelMap{{"app", "reviews"},
                                  {"version", "v2"},
                                  {"istio-locality", "eu-west.zone-b"},
                                  {"topology.kubernetes.io/region", "eu-west"},
                                  {"topology.kubernetes.io/zone", "zone-b"},
                                  {"topology.istio.io/cluster", "Kubernetes"}}))
      << "the Pod's locality and the registry's cluster added as topology labels, as istiod's AugmentLabels";
  ASSERT_TRUE(registry->by_address.contains("127.0.0.40"));
  ASSERT_EQ(registry->by_address.at("127.0.0.40").size(), 1u);
  EXPECT_EQ(registry->by_address.at("127.0.0.40")[0].source, "WorkloadEntry shop/vm-1");
  EXPECT_EQ(registry->by_address.at("127.0.0.40")[0].labels.at("topology.istio.io/subzone"), "rack-3");
  EXPECT_FALSE(registry->by_address.contains("127.0.0.41")) << "selected by no ServiceEntry";
  EXPECT_FALSE(registry->by_address.contains("127.0.0.12")) << "Pods are found by name only";
}

TEST_F(WorkloadRegistryTest, AProxyIsItsPodWhenItsIdAndNamespaceNameIt) {
  const auto node = Node("sidecar~127.0.0.12~reviews-v2-c4d.shop~shop.svc.cluster.local", "shop",
                         {{"version", "stale"}, {"extra", "x"}});
  const ProxyInfo proxy = Resolve(node);
  EXPECT_EQ(proxy.workload, "Pod shop/reviews-v2-c4d");
  EXPECT_EQ(proxy.labels.at("version"), "v2") << "the Pod's labels, not the node's";
  EXPECT_FALSE(proxy.labels.contains("extra")) << "the workload's labels replace the node's";
  const auto locality = ProxyLocality(node, proxy);
  EXPECT_EQ(locality.region(), "eu-west") << "the Pod's locality before the node's";
  EXPECT_EQ(locality.zone(), "zone-b");

  // Without the registry, or without metadata NAMESPACE (istiod compares the metadata alone),
  // the node's own labels and locality.
  EXPECT_EQ(ParseProxyInfo(node).labels.at("version"), "stale");
  const auto no_namespace =
      Node("sidecar~127.0.0.12~reviews-v2-c4d.shop~shop.svc.cluster.local", "", {{"version", "stale"}});
  EXPECT_EQ(Resolve(no_namespace).workload, "");
  EXPECT_EQ(ProxyLocality(no_namespace, Resolve(no_namespace)).region(), "node-says");
  // Another namespace in the metadata: not that Pod.
  EXPECT_EQ(Resolve(Node("sidecar~127.0.0.12~reviews-v2-c4d.shop~shop.svc.cluster.local", "web")).workload, "");
  // A proxy labelled istio.io/test-vm keeps its own labels, as istiod's IsVM.
  const ProxyInfo vm = Resolve(Node("sidecar~127.0.0.12~reviews-v2-c4d.shop~shop.svc.cluster.local", "shop",
                                    {{"istio.io/test-vm", "true"}, {"version", "mine"}}));
  EXPECT_EQ(vm.workload, "");
  EXPECT_EQ(vm.labels.at("version"), "mine");
}

// istiod's SetWorkloadLabels keeps the node's STATIC_LABELS (set by ISTIO_METAJSON_LABELS in its
// bootstrap) beside its workload's labels, the workload's winning where both name a label.
TEST_F(WorkloadRegistryTest, AWorkloadsLabelsGoOverTheNodesStaticLabels) {
  auto node = Node("sidecar~127.0.0.12~reviews-v2-c4d.shop~shop.svc.cluster.local", "shop",
                   {{"version", "stale"}, {"only-in-labels", "x"}});
  auto& fixed = *(*node.mutable_metadata()->mutable_fields())["STATIC_LABELS"].mutable_struct_value()->mutable_fields();
  fixed["team"].set_string_value("payments");
  fixed["version"].set_string_value("static");
  const ProxyInfo proxy = Resolve(node);
  ASSERT_EQ(proxy.workload, "Pod shop/reviews-v2-c4d");
  EXPECT_EQ(proxy.labels.at("team"), "payments") << "a static label the Pod does not have is kept";
  EXPECT_EQ(proxy.labels.at("version"), "v2") << "the Pod's label over the static one";
  EXPECT_FALSE(proxy.labels.contains("only-in-labels")) << "LABELS still give way to the workload";
  // Without a workload, the node's LABELS alone, as istiod: its bootstrap already merged the
  // static labels into them. So without the registry, for a proxy the registry does not have,
  // and for an istio.io/test-vm proxy.
  EXPECT_FALSE(ParseProxyInfo(node).labels.contains("team"));
  EXPECT_EQ(ParseProxyInfo(node).labels.at("version"), "stale");
  const auto with_static = [&](envoy::config::core::v3::Node other) {
    (*other.mutable_metadata()->mutable_fields())["STATIC_LABELS"] = node.metadata().fields().at("STATIC_LABELS");
    return Resolve(other);
  };
  const ProxyInfo nobody =
      with_static(Node("sidecar~127.0.0.99~nobody.shop~shop.svc.cluster.local", "shop", {{"version", "mine"}}));
  EXPECT_EQ(nobody.workload, "");
  EXPECT_EQ(nobody.labels, (LabelMap{{"version", "mine"}, {"topology.kubernetes.io/region", "node-says"}}))
      << "its own labels, and its node's locality (AugmentLabels)";
  const ProxyInfo vm = with_static(Node("sidecar~127.0.0.12~reviews-v2-c4d.shop~shop.svc.cluster.local", "shop",
                                        {{"istio.io/test-vm", "true"}, {"version", "mine"}}));
  EXPECT_EQ(vm.workload, "");
  EXPECT_EQ(
      vm.labels,
      (LabelMap{{"istio.io/test-vm", "true"}, {"version", "mine"}, {"topology.kubernetes.io/region", "node-says"}}));
}

// Node metadata IDLE_TIMEOUT read as Go's ParseDuration reads it (istiod's parseDuration), kept
// only when it is a finite duration of at least zero.
TEST(ProxyInfoTest, IdleTimeoutIsAGoDuration) {
  const auto idle = [](const std::string& value) {
    envoy::config::core::v3::Node node;
    node.set_id("sidecar~127.0.0.1~a.default~default.svc.cluster.local");
    (*node.mutable_metadata()->mutable_fields())["IDLE_TIMEOUT"].set_string_value(value);
    return ParseProxyInfo(node).node_idle_timeout;
  };
  EXPECT_EQ(idle("1h30m"), absl::Minutes(90));
  EXPECT_EQ(idle("1.5s"), absl::Milliseconds(1500));
  EXPECT_EQ(idle("0"), absl::ZeroDuration());
  EXPECT_EQ(idle("250ms"), absl::Milliseconds(250));
  EXPECT_EQ(idle("5µs"), absl::Microseconds(5)) << "Go's spelling of us";
  EXPECT_EQ(idle("2562047h"), absl::Hours(2562047)) << "Go's longest";
  for (const std::string bad : {"", "10", "soon", "-1s", "inf", "2562048h"}) {
    EXPECT_EQ(idle(bad), std::nullopt) << bad;
  }
  envoy::config::core::v3::Node none;
  none.set_id("sidecar~127.0.0.1~a.default~default.svc.cluster.local");
  EXPECT_EQ(ParseProxyInfo(none).node_idle_timeout, std::nullopt);
}

// istiod's AugmentLabels: the locality's parts, the cluster and the node over labels of their
// names when given; the network only where no network label is.
TEST(AugmentLabelsTest, AddsTopologyLabelsAsIstiod) {
  const LabelMap given{{"app", "a"},
                       {"topology.kubernetes.io/zone", "written"},
                       {"topology.istio.io/cluster", "written"},
                       {"topology.istio.io/network", "written"}};
  EXPECT_EQ(AugmentLabels(given, "east", "r1/z1/s1/ignored", "node-a", "net-2"),
            (LabelMap{{"app", "a"},
                      {"topology.kubernetes.io/region", "r1"},
                      {"topology.kubernetes.io/zone", "z1"},
                      {"topology.istio.io/subzone", "s1"},
                      {"topology.istio.io/cluster", "east"},
                      {"kubernetes.io/hostname", "node-a"},
                      {"topology.istio.io/network", "written"}}));
  // Nothing given: the labels as they are; a part left empty leaves its label alone.
  EXPECT_EQ(AugmentLabels(given, "", "", "", ""), given);
  EXPECT_EQ(AugmentLabels(given, "", "r1//s1", "", "net-2").at("topology.kubernetes.io/zone"), "written");
  EXPECT_EQ(AugmentLabels({{"app", "a"}}, "", "", "", "net-2").at("topology.istio.io/network"), "net-2");
}

// A subset's selector over an endpoint matches what it would over the endpoint's augmented
// labels, without building them.
TEST(AugmentLabelsTest, AugmentedMatchAgreesWithMatchingTheAugmentedLabels) {
  const LabelMap labels{{"app", "a"}, {"topology.kubernetes.io/zone", "written"}, {"kubernetes.io/hostname", "raw"}};
  const std::vector<LabelMap> selectors = {
      {},
      {{"app", "a"}},
      {{"app", "b"}},
      {{"topology.kubernetes.io/region", "r1"}},
      {{"topology.kubernetes.io/zone", "z1"}},
      {{"topology.kubernetes.io/zone", "written"}},
      {{"topology.istio.io/subzone", "s1"}},
      {{"topology.istio.io/cluster", "east"}},
      {{"topology.istio.io/cluster", "west"}},
      {{"kubernetes.io/hostname", "node-a"}},
      {{"kubernetes.io/hostname", "raw"}},
      {{"app", "a"}, {"topology.kubernetes.io/region", "r1"}, {"topology.istio.io/cluster", "east"}},
      {{"app", "a"}, {"topology.kubernetes.io/region", "r2"}},
  };
  struct Given {
    std::string cluster, locality, node;
  };
  for (const Given& given : {Given{"east", "r1/z1/s1", "node-a"}, Given{"", "", ""}, Given{"east", "r1", ""},
                             Given{"", "/z1", "node-a"}, Given{"west", "r2/z2", ""}}) {
    const LabelMap augmented = AugmentLabels(labels, given.cluster, given.locality, given.node, "");
    for (const LabelMap& selector : selectors) {
      EXPECT_EQ(AugmentedLabelsMatch(selector, labels, given.cluster, given.locality, given.node),
                LabelsMatch(selector, augmented))
          << ::testing::PrintToString(selector) << " over cluster " << given.cluster << ", locality " << given.locality
          << ", node " << given.node;
    }
  }
  EXPECT_TRUE(AugmentedLabelsMatch({{"topology.kubernetes.io/zone", "z1"}}, labels, "", "r1/z1", ""));
  EXPECT_FALSE(AugmentedLabelsMatch({{"topology.kubernetes.io/zone", "written"}}, labels, "", "r1/z1", ""))
      << "the locality's zone over the label written";
}

// As istiod's setTopologyLabels, every proxy, in the registry or not, gets its locality (its
// workload's, else its labels', else its node's) and its node metadata's CLUSTER_ID, NODE_NAME
// and NETWORK as labels; a workload found carries the registry's cluster, and a node of another
// cluster is not looked up.
TEST_F(WorkloadRegistryTest, EveryProxyGetsItsTopologyLabels) {
  const auto with = [](envoy::config::core::v3::Node node, const std::map<std::string, std::string>& metadata) {
    for (const auto& [k, v] : metadata) (*node.mutable_metadata()->mutable_fields())[k].set_string_value(v);
    return node;
  };
  // Not in the registry: the node's locality, and its metadata.
  auto stranger = Node("sidecar~127.0.0.99~web-1.web~web.svc.cluster.local", "web", {{"app", "web"}});
  stranger.mutable_locality()->set_zone("node-zone");
  ProxyInfo proxy = Resolve(with(stranger, {{"CLUSTER_ID", "east"}, {"NODE_NAME", "node-7"}, {"NETWORK", "net-1"}}));
  EXPECT_EQ(proxy.workload, "");
  EXPECT_EQ(proxy.labels, (LabelMap{{"app", "web"},
                                    {"topology.kubernetes.io/region", "node-says"},
                                    {"topology.kubernetes.io/zone", "node-zone"},
                                    {"topology.istio.io/cluster", "east"},
                                    {"kubernetes.io/hostname", "node-7"},
                                    {"topology.istio.io/network", "net-1"}}));
  // A network label the proxy has is kept; no metadata, no cluster or node label.
  proxy = Resolve(
      with(Node("sidecar~127.0.0.99~web-1.web~web.svc.cluster.local", "web", {{"topology.istio.io/network", "mine"}}),
           {{"NETWORK", "net-1"}}));
  EXPECT_EQ(proxy.labels.at("topology.istio.io/network"), "mine");
  EXPECT_FALSE(proxy.labels.contains("topology.istio.io/cluster"));
  EXPECT_FALSE(proxy.labels.contains("kubernetes.io/hostname"));
  // Its Pod: the Pod's locality over the node's, the registry's cluster unless CLUSTER_ID says.
  const auto pod_node = Node("sidecar~127.0.0.12~reviews-v2-c4d.shop~shop.svc.cluster.local", "shop");
  proxy = Resolve(with(pod_node, {{"NODE_NAME", "node-3"}}));
  ASSERT_EQ(proxy.workload, "Pod shop/reviews-v2-c4d");
  EXPECT_EQ(proxy.labels.at("topology.kubernetes.io/region"), "eu-west");
  EXPECT_EQ(proxy.labels.at("topology.istio.io/cluster"), "Kubernetes");
  EXPECT_EQ(proxy.labels.at("kubernetes.io/hostname"), "node-3");
  EXPECT_EQ(Resolve(with(pod_node, {{"CLUSTER_ID", "Kubernetes"}})).workload, "Pod shop/reviews-v2-c4d");
  // A node of another cluster is not looked up in this one's registry, as istiod searches only
  // the registries of the proxy's cluster: its own labels, and its cluster.
  const ProxyInfo elsewhere = Resolve(with(pod_node, {{"CLUSTER_ID", "east"}}));
  EXPECT_EQ(elsewhere.workload, "");
  EXPECT_FALSE(elsewhere.labels.contains("app"));
  EXPECT_EQ(elsewhere.labels.at("topology.istio.io/cluster"), "east");
  // A registry of another cluster (--cluster-id) labels its workloads with it.
  ConfigStore store;
  MeshModel model(store, "cluster.local", kRootNamespace, "west");
  model.OnUpdate(store.ApplyFile("workloads.yaml", kWorkloads));
  const ProxyInfo in_west = ParseProxyInfo(pod_node, model.workloads().get());
  EXPECT_EQ(in_west.labels.at("topology.istio.io/cluster"), "west");
  EXPECT_EQ(ParseProxyInfo(with(pod_node, {{"CLUSTER_ID", "west"}}), model.workloads().get()).workload,
            "Pod shop/reviews-v2-c4d");
  EXPECT_EQ(ParseProxyInfo(with(pod_node, {{"CLUSTER_ID", "Kubernetes"}}), model.workloads().get()).workload, "");
  EXPECT_EQ(model.workloads()->by_address.at("127.0.0.40")[0].labels.at("topology.istio.io/cluster"), "west");
}

TEST_F(WorkloadRegistryTest, AProxyIsAServiceEntryEndpointAtOneOfItsAddresses) {
  // The node id's IP, in the entry's namespace.
  const auto by_id = Node("sidecar~127.0.0.40~vm-1.shop~shop.svc.cluster.local", "shop", {{"version", "stale"}});
  const ProxyInfo proxy = Resolve(by_id);
  EXPECT_EQ(proxy.workload, "WorkloadEntry shop/vm-1");
  EXPECT_EQ(proxy.labels.at("version"), "vm");
  const auto locality = ProxyLocality(by_id, proxy);
  EXPECT_EQ(locality.region(), "us-east");
  EXPECT_EQ(locality.sub_zone(), "rack-3");
  // INSTANCE_IPS come before the id's IP; any namespace when the metadata names none.
  EXPECT_EQ(Resolve(Node("sidecar~127.0.0.99~x.shop~shop.svc.cluster.local", "", {}, "10.9.9.9,127.0.0.40")).workload,
            "WorkloadEntry shop/vm-1");
  EXPECT_EQ(Resolve(Node("sidecar~127.0.0.40~x.web~web.svc.cluster.local", "web")).workload, "")
      << "an entry of another namespace";
  EXPECT_EQ(Resolve(Node("sidecar~127.0.0.41~x.shop~shop.svc.cluster.local", "shop")).workload, "");
  EXPECT_EQ(Resolve(Node("plain-node-id", "shop")).workload, "") << "no id form, no addresses";
  // As istiod: INSTANCE_IPS only when every entry is an IP address, else the id's IP if it is one.
  EXPECT_EQ(
      Resolve(Node("sidecar~127.0.0.40~x.shop~shop.svc.cluster.local", "shop", {}, "127.0.0.40,not-an-ip")).workload,
      "WorkloadEntry shop/vm-1")
      << "the node id's IP, the list having an entry that is no IP";
  EXPECT_EQ(Resolve(Node("sidecar~not-an-ip~x.shop~shop.svc.cluster.local", "shop", {}, "x,127.0.0.40")).workload, "");
  // A hostile node's list is read up to 16 addresses, not whole.
  std::string fifteen;
  for (int i = 0; i < 15; ++i) fifteen += StrCat("10.0.0.", i, ",");
  EXPECT_EQ(Resolve(Node("plain", "shop", {}, fifteen + "127.0.0.40")).workload, "WorkloadEntry shop/vm-1");
  EXPECT_EQ(Resolve(Node("plain", "shop", {}, fifteen + "10.0.1.1,127.0.0.40")).workload, "")
      << "the 17th address is not read";
}

TEST_F(WorkloadRegistryTest, AChangedWorkloadIsAWorkloadKeyOfAnEndpointOnlyPush) {
  std::string relabelled = kWorkloads;
  relabelled.replace(relabelled.find("version: vm"), 11, "version: v7");
  PushRequest request = Apply(relabelled);
  EXPECT_THAT(request.configs, ::testing::Contains(ConfigKey{kind::kWorkload, "", "127.0.0.40"}));
  EXPECT_TRUE(request.EndpointOnly()) << "who a proxy is needs no new PushContext";
  EXPECT_FALSE(request.full);
  EXPECT_EQ(model_.workloads()->by_address.at("127.0.0.40")[0].labels.at("version"), "v7");

  // Moved: both addresses. The same text again: nothing.
  std::string moved = relabelled;
  moved.replace(moved.find("127.0.0.40"), 10, "127.0.0.42");
  request = Apply(moved);
  EXPECT_THAT(request.configs, ::testing::Contains(ConfigKey{kind::kWorkload, "", "127.0.0.40"}));
  EXPECT_THAT(request.configs, ::testing::Contains(ConfigKey{kind::kWorkload, "", "127.0.0.42"}));
  EXPECT_TRUE(Apply(moved).configs.empty());

  // Which proxies such a push names (the pipeline pushes them in full).
  PushRequest pod_changed;
  pod_changed.configs.insert(ConfigKey{kind::kWorkload, "shop", "reviews-v2-c4d"});
  EXPECT_TRUE(NamesProxyWorkload(Node("sidecar~127.0.0.12~reviews-v2-c4d.shop~shop.svc.cluster.local", "shop"),
                                 pod_changed, kDefaultClusterId));
  EXPECT_FALSE(NamesProxyWorkload(Node("sidecar~127.0.0.12~reviews-v2-c4d.shop~shop.svc.cluster.local", ""),
                                  pod_changed, kDefaultClusterId));
  EXPECT_FALSE(NamesProxyWorkload(Node("sidecar~127.0.0.13~reviews-v1.shop~shop.svc.cluster.local", "shop"),
                                  pod_changed, kDefaultClusterId));
  PushRequest address_changed;
  address_changed.configs.insert(ConfigKey{kind::kWorkload, "", "127.0.0.42"});
  EXPECT_TRUE(NamesProxyWorkload(Node("sidecar~127.0.0.99~x.shop~shop.svc.cluster.local", "", {}, "127.0.0.42"),
                                 address_changed, kDefaultClusterId));
  EXPECT_FALSE(NamesProxyWorkload(
      Node("sidecar~127.0.0.42~x.shop~shop.svc.cluster.local", "shop", {{"istio.io/test-vm", "yes"}}), address_changed,
      kDefaultClusterId))
      << "a VM-labelled proxy is never its registry's";
  // A node of another cluster is not looked up in this registry (ParseProxyInfo): its workload
  // changing is not its own.
  auto of_cluster = [&](const std::string& cluster) {
    auto node = Node("sidecar~127.0.0.12~reviews-v2-c4d.shop~shop.svc.cluster.local", "shop");
    (*node.mutable_metadata()->mutable_fields())["CLUSTER_ID"].set_string_value(cluster);
    return node;
  };
  EXPECT_FALSE(NamesProxyWorkload(of_cluster("west"), pod_changed, kDefaultClusterId));
  EXPECT_TRUE(NamesProxyWorkload(of_cluster("west"), pod_changed, "west"));
  EXPECT_TRUE(NamesProxyWorkload(of_cluster(kDefaultClusterId), pod_changed, kDefaultClusterId));
}

// A push that only changes a workload concerns the proxies that are it (pushed in full through
// the pipeline's proxy_update), not every proxy of a mesh where every proxy sees every host.
TEST_F(WorkloadRegistryTest, AWorkloadOnlyPushPassesTheFilterForNoOneAndTheUpdateForItsProxy) {
  auto context = model_.Build(nullptr, {}, 1, absl::UnixEpoch());
  ASSERT_TRUE(context.ok()) << context.status();
  PushRequest workload_only;
  workload_only.configs.insert(ConfigKey{kind::kWorkload, "shop", "reviews-v2-c4d"});
  const Proxy pod_proxy{"pod", Node("sidecar~127.0.0.12~reviews-v2-c4d.shop~shop.svc.cluster.local", "shop"), {}};
  const Proxy other{"other", Node("sidecar~127.0.0.13~reviews-v1.shop~shop.svc.cluster.local", "shop"), {}};
  const ProxyFilter filter = MeshProxyFilter(model_);
  EXPECT_FALSE(filter(other, workload_only, **context, nullptr));
  EXPECT_FALSE(filter(pod_proxy, workload_only, **context, nullptr)) << "the update check, not the filter, takes it";
  const ProxyUpdateCheck update = MeshProxyUpdate(model_);
  EXPECT_TRUE(update(pod_proxy, workload_only));
  EXPECT_FALSE(update(other, workload_only));
  // With an endpoint change beside it, every proxy (all see every host) gets the endpoints.
  workload_only.configs.insert(ConfigKey{kind::kEndpoints, "shop", "ratings.mesh.local"});
  EXPECT_TRUE(filter(other, workload_only, **context, nullptr));
}

TEST(ChangedWorkloadsTest, ComparesBothSidesByKey) {
  WorkloadRegistry before;
  before.pods[{"a", "one"}] = WorkloadIdentity{"a", {{"v", "1"}}, "Pod a/one"};
  before.pods[{"a", "two"}] = WorkloadIdentity{"a", {}, "Pod a/two"};
  before.by_address["127.0.0.1"] = {WorkloadIdentity{"a", {}, "WorkloadEntry a/w"}};
  WorkloadRegistry after = before;
  EXPECT_TRUE(ChangedWorkloads(before, after).empty());
  after.pods[{"a", "one"}].labels["v"] = "2";
  after.pods.erase({"a", "two"});
  after.pods[{"b", "three"}] = WorkloadIdentity{"b", {}, "Pod b/three"};
  after.by_address["127.0.0.1"].push_back(WorkloadIdentity{"a", {}, "ServiceEntry a/s"});
  EXPECT_THAT(
      ChangedWorkloads(before, after),
      ::testing::ElementsAre(ConfigKey{kind::kWorkload, "", "127.0.0.1"}, ConfigKey{kind::kWorkload, "a", "one"},
                             ConfigKey{kind::kWorkload, "a", "two"}, ConfigKey{kind::kWorkload, "b", "three"}));
}

}  // namespace
}  // namespace cxds
