#include "model/mesh_model.h"

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/mesh_kinds.h"
#include "model/proxy.h"
#include "model/service_host.h"

namespace cxds {
namespace {

constexpr char kMesh[] = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: inventory}
spec:
  resolution: STATIC
  hosts: [inventory.mesh.local]
  ports: [{number: 8080, name: grpc, protocol: GRPC}]
  workloadSelector: {labels: {app: inventory}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: inventory-1}
spec: {address: 127.0.0.1, ports: {grpc: 18081}, labels: {app: inventory, version: v1}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: other}
spec: {address: 127.0.0.9, labels: {app: other}}
---
apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: shop}
spec:
  ports: [{name: http, port: 9080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: reviews-1, namespace: shop, labels: {kubernetes.io/service-name: reviews}}
addressType: IPv4
ports: [{name: http, port: 19080}]
endpoints:
- addresses: [127.0.0.2]
- addresses: [127.0.0.3]
  conditions: {ready: false}
)";

class MeshModelTest : public ::testing::Test {
 protected:
  void SetUp() override { Apply("mesh.yaml", kMesh); }
  PushRequest Apply(const std::string& file, const std::string& content) {
    const auto update = store_.ApplyFile(file, content);
    EXPECT_TRUE(update.errors.empty()) << update.errors.front().ToString();
    return model_.OnUpdate(update);
  }
  std::vector<EndpointInfo> Endpoints(const std::string& host, uint32_t port) {
    auto index = model_.endpoints();
    auto it = index->find(host);
    if (it == index->end()) return {};
    auto p = it->second->find(port);
    return p == it->second->end() ? std::vector<EndpointInfo>{} : p->second;
  }
  ConfigStore store_;
  MeshModel model_{store_, "cluster.local"};
};

TEST_F(MeshModelTest, EndpointsComeFromSelectedWorkloadEntriesAndReadySliceEndpoints) {
  auto inventory = Endpoints("inventory.mesh.local", 8080);
  ASSERT_EQ(inventory.size(), 1u) << "only the selected WorkloadEntry";
  EXPECT_EQ(inventory[0].address, "127.0.0.1");
  EXPECT_EQ(inventory[0].port, 18081u) << "the WorkloadEntry's port for the port name";
  EXPECT_EQ(inventory[0].labels.at("version"), "v1");
  auto reviews = Endpoints("reviews.shop.svc.cluster.local", 9080);
  ASSERT_EQ(reviews.size(), 1u) << "the endpoint that is not ready is left out";
  EXPECT_EQ(reviews[0].address, "127.0.0.2");
  EXPECT_EQ(reviews[0].port, 19080u);
}

TEST_F(MeshModelTest, MovingAWorkloadEntryIsAnEndpointOnlyPushForItsServices) {
  const std::string moved = std::string(kMesh).replace(std::string(kMesh).find("18081"), 5, "18082");
  PushRequest request = Apply("mesh.yaml", moved);
  EXPECT_TRUE(request.EndpointOnly());
  EXPECT_FALSE(request.full);
  ASSERT_EQ(request.configs.size(), 1u);
  EXPECT_EQ(*request.configs.begin(), (ConfigKey{kind::kEndpoints, "default", "inventory.mesh.local"}));
  EXPECT_EQ(Endpoints("inventory.mesh.local", 8080)[0].port, 18082u);
}

TEST_F(MeshModelTest, ChangingServicePortsOrRoutesIsAFullPush) {
  std::string changed = kMesh;
  changed.replace(changed.find("number: 8080"), 12, "number: 8081");
  PushRequest request = Apply("mesh.yaml", changed);
  EXPECT_TRUE(request.full);
  EXPECT_TRUE(request.configs.contains(ConfigKey{kind::kServiceEntry, "default", "inventory.mesh.local"}));
  request = Apply("vs.yaml",
                  "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec:\n  hosts: "
                  "[inventory.mesh.local]\n  http:\n  - route: [{destination: {host: inventory.mesh.local}}]\n");
  EXPECT_TRUE(request.full);
  EXPECT_TRUE(request.configs.contains(ConfigKey{"VirtualService", "default", "v"}));
}

// A ServiceEntry's addresses and subjectAltNames are in its clusters and routes: changing them
// is a full push, not an endpoint-only one.
TEST_F(MeshModelTest, ChangingServiceEntryAddressesOrSubjectAltNamesIsAFullPush) {
  const std::string entry = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api}
spec:
  hosts: [api.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.20}]
  EXTRA
)";
  Apply("api.yaml", absl::StrReplaceAll(entry, {{"EXTRA", "addresses: [127.0.0.21]"}}));
  // (Each step changes one field from the one before.)
  for (const char* extra : {"addresses: [127.0.0.22]", "addresses: [127.0.0.22]\n  subjectAltNames: [api.mesh.local]",
                            "addresses: [127.0.0.22]\n  subjectAltNames: [other.mesh.local]"}) {
    const PushRequest request = Apply("api.yaml", absl::StrReplaceAll(entry, {{"EXTRA", extra}}));
    EXPECT_TRUE(request.full) << extra;
    EXPECT_TRUE(request.configs.contains(ConfigKey{kind::kServiceEntry, "default", "api.mesh.local"})) << extra;
  }
}

TEST_F(MeshModelTest, AnUnrelatedWorkloadEntryPushesNothing) {
  std::string changed = kMesh;
  changed.replace(changed.find("127.0.0.9"), 9, "127.0.0.8");
  PushRequest request = Apply("mesh.yaml", changed);
  EXPECT_TRUE(request.configs.empty()) << "no ServiceEntry selects it";
}

// Bookinfo on Kubernetes: the reviews pods are v1/v2; subsets select their EndpointSlice
// endpoints by the labels of the Pods the endpoints stand for.
constexpr char kBookinfo[] = R"(apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: bookinfo}
spec:
  selector: {app: reviews}
  ports: [{name: http, port: 9080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: reviews-abc, namespace: bookinfo, labels: {kubernetes.io/service-name: reviews}}
addressType: IPv4
ports: [{name: http, port: 9080}]
endpoints:
- addresses: [127.0.0.11]
  targetRef: {kind: Pod, name: reviews-v1-7f9, namespace: bookinfo}
- addresses: [127.0.0.12]
- addresses: [127.0.0.13]
---
apiVersion: v1
kind: Pod
metadata: {name: reviews-v1-7f9, namespace: bookinfo, labels: {app: reviews, version: v1}}
spec: {containers: [{name: reviews, image: reviews:v1, ports: [{containerPort: 9080}]}]}
status: {phase: Running, podIP: 127.0.0.99}
---
apiVersion: v1
kind: Pod
metadata: {name: reviews-v2-c4d, namespace: bookinfo, labels: {app: reviews, version: v2}}
status: {podIP: 127.0.0.12, podIPs: [{ip: 127.0.0.12}]}
---
apiVersion: v1
kind: Pod
metadata: {name: reviews-v3-a, namespace: bookinfo, labels: {app: reviews, version: v3}}
status: {podIP: 127.0.0.13}
---
apiVersion: v1
kind: Pod
metadata: {name: reviews-v3-b, namespace: bookinfo, labels: {app: reviews, version: v3}}
status: {podIP: 127.0.0.13}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: reviews-vm, namespace: bookinfo}
spec: {address: 127.0.0.20, ports: {http: 19080}, labels: {app: reviews, version: vm}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: reviews-vm-elsewhere, namespace: other}
spec: {address: 127.0.0.21, labels: {app: reviews, version: vm}}
)";

std::map<std::string, std::string> VersionsByAddress(const std::vector<EndpointInfo>& endpoints) {
  std::map<std::string, std::string> out;
  for (const EndpointInfo& e : endpoints) {
    auto v = e.labels.find("version");
    out[e.address + ":" + std::to_string(e.port)] = v == e.labels.end() ? "" : v->second;
  }
  return out;
}

TEST_F(MeshModelTest, SliceEndpointsCarryTheirPodsLabelsAndTheSelectorAddsWorkloadEntries) {
  Apply("bookinfo.yaml", kBookinfo);
  EXPECT_EQ(VersionsByAddress(Endpoints("reviews.bookinfo.svc.cluster.local", 9080)),
            (std::map<std::string, std::string>{
                {"127.0.0.11:9080", "v1"},   // by targetRef, whatever the Pod's IP says
                {"127.0.0.12:9080", "v2"},   // no targetRef: the one Pod with that IP
                {"127.0.0.13:9080", ""},     // two Pods have that IP: neither is guessed
                {"127.0.0.20:19080", "vm"},  // the Service's selector selects the WorkloadEntry (its port by name)
            }))
      << "the WorkloadEntry in another namespace is not selected";
}

// v1 Endpoints give a Service without a selector its endpoints, as the slices Kubernetes mirrors
// from them do (ready addresses, the Pod their targetRef names, the port by name); a change of
// them is an endpoint push. Those of a Service with a selector, those labelled skip-mirror, and
// those whose mirrored slices are written out too give none (each once, not twice).
TEST_F(MeshModelTest, V1EndpointsServeAServiceWithoutASelectorAsTheirMirroredSlicesWould) {
  Apply("bookinfo.yaml", kBookinfo);
  const std::string db = R"(apiVersion: v1
kind: Service
metadata: {name: db, namespace: bookinfo}
spec:
  ports: [{name: sql, port: 5432}, {name: admin, port: 8080}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: db, namespace: bookinfo}
subsets:
- addresses: [{ip: 127.0.0.70, targetRef: {kind: Pod, name: reviews-v2-c4d, namespace: bookinfo}}]
  notReadyAddresses: [{ip: 127.0.0.71}]
  ports: [{name: sql, port: 15432}, {name: admin, port: 18080}]
- addresses: [{ip: ADDRESS}]
  ports: [{name: sql, port: 25432}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: reviews, namespace: bookinfo}
subsets: [{addresses: [{ip: 127.0.0.80}], ports: [{name: http, port: 9080}]}]
)";
  Apply("db.yaml", absl::StrReplaceAll(db, {{"ADDRESS", "127.0.0.72"}}));
  const std::string host = "db.bookinfo.svc.cluster.local";
  EXPECT_EQ(VersionsByAddress(Endpoints(host, 5432)),
            (std::map<std::string, std::string>{{"127.0.0.70:15432", "v2"}, {"127.0.0.72:25432", ""}}))
      << "ready addresses only; the Pod's labels";
  EXPECT_EQ(VersionsByAddress(Endpoints(host, 8080)), (std::map<std::string, std::string>{{"127.0.0.70:18080", "v2"}}));
  EXPECT_FALSE(VersionsByAddress(Endpoints("reviews.bookinfo.svc.cluster.local", 9080)).contains("127.0.0.80:9080"))
      << "reviews has a selector: Kubernetes mirrors nothing";

  PushRequest moved = Apply("db.yaml", absl::StrReplaceAll(db, {{"ADDRESS", "127.0.0.73"}}));
  EXPECT_TRUE(moved.EndpointOnly());
  EXPECT_THAT(moved.configs, ::testing::ElementsAre(ConfigKey{kind::kEndpoints, "bookinfo", host}));
  EXPECT_TRUE(VersionsByAddress(Endpoints(host, 5432)).contains("127.0.0.73:25432"));

  // The Pod its targetRef names is relabelled: an endpoint push for db too.
  std::string relabelled = kBookinfo;
  relabelled.replace(relabelled.find("version: v2}"), 11, "version: v9");
  EXPECT_THAT(Apply("bookinfo.yaml", relabelled).configs,
              ::testing::Contains(ConfigKey{kind::kEndpoints, "bookinfo", host}));
  EXPECT_EQ(VersionsByAddress(Endpoints(host, 8080)).at("127.0.0.70:18080"), "v9");

  // The slice Kubernetes mirrored from them written out beside them: served once.
  Apply("mirror.yaml", R"(apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: db-mirror
  namespace: bookinfo
  labels: {kubernetes.io/service-name: db, endpointslice.kubernetes.io/managed-by: endpointslicemirroring-controller.k8s.io}
addressType: IPv4
ports: [{name: sql, port: 15432}]
endpoints: [{addresses: [127.0.0.70]}]
)");
  EXPECT_EQ(Endpoints(host, 5432).size(), 1u) << "the mirrored slice alone";
  store_.ApplyFile("mirror.yaml", std::nullopt);
  Apply("db.yaml", absl::StrReplaceAll(absl::StrReplaceAll(db, {{"ADDRESS", "127.0.0.73"}}),
                                       {{"metadata: {name: db, namespace: bookinfo}\nsubsets",
                                         "metadata: {name: db, namespace: bookinfo, labels: "
                                         "{endpointslice.kubernetes.io/skip-mirror: \"true\"}}\nsubsets"}}));
  EXPECT_THAT(Endpoints(host, 5432), ::testing::IsEmpty()) << "skip-mirror";
}

TEST_F(MeshModelTest, APodLabelChangeIsAnEndpointOnlyPushForTheServicesOfItsSlices) {
  Apply("bookinfo.yaml", kBookinfo);
  std::string relabelled = kBookinfo;
  relabelled.replace(relabelled.find("version: v2}"), 11, "version: v9");
  PushRequest request = Apply("bookinfo.yaml", relabelled);
  EXPECT_TRUE(request.EndpointOnly());
  // The Pod is also a workload a proxy may be: its proxy is pushed in full (Workload key).
  EXPECT_THAT(request.configs,
              ::testing::ElementsAre(ConfigKey{kind::kEndpoints, "bookinfo", "reviews.bookinfo.svc.cluster.local"},
                                     ConfigKey{kind::kWorkload, "bookinfo", "reviews-v2-c4d"}));
  EXPECT_EQ(VersionsByAddress(Endpoints("reviews.bookinfo.svc.cluster.local", 9080))["127.0.0.12:9080"], "v9");

  // The VM moves: the Service that selects it gets an endpoint push (no Workload key: a
  // WorkloadEntry only a Service selects is not one, as in istiod).
  std::string moved = relabelled;
  moved.replace(moved.find("127.0.0.20"), 10, "127.0.0.30");
  request = Apply("bookinfo.yaml", moved);
  EXPECT_THAT(request.configs,
              ::testing::ElementsAre(ConfigKey{kind::kEndpoints, "bookinfo", "reviews.bookinfo.svc.cluster.local"}));
  EXPECT_FALSE(request.full);
  // A Pod no slice stands for pushes no endpoints: only its own proxy, if connected.
  request = Apply("lonely.yaml",
                  "apiVersion: v1\nkind: Pod\nmetadata: {name: lonely, namespace: bookinfo}\n"
                  "status: {podIP: 127.0.0.50}\n");
  EXPECT_THAT(request.configs, ::testing::ElementsAre(ConfigKey{kind::kWorkload, "bookinfo", "lonely"}));
  EXPECT_TRUE(request.EndpointOnly());
}

// Every field of every endpoint of `index`, a line each, for comparing whole indexes.
std::vector<std::string> DescribeIndex(const EndpointIndex& index) {
  std::vector<std::string> out;
  for (const auto& [host, ports] : index) {
    for (const auto& [port, endpoints] : *ports) {
      for (const EndpointInfo& e : endpoints) {
        std::vector<std::string> labels;
        for (const auto& [k, v] : e.labels) labels.push_back(StrCat(k, "=", v));
        out.push_back(StrCat(host, ":", port, " ", e.address, ":", e.port, " w", e.weight, e.bare ? " bare" : "", " [",
                             absl::StrJoin(labels, ","), "] ", e.locality, " ", e.node_name));
      }
    }
  }
  return out;
}

// An update of endpoint objects alone rebuilds only the hosts whose endpoints it pushes: the
// other hosts keep their entries (the same pointers), and the index is the one a whole build
// gives, through a slice added, changed, moved to another Service and removed, WorkloadEntries
// moved and a Pod relabelled.
TEST_F(MeshModelTest, AnEndpointChangeRebuildsItsHostsAloneAndMatchesAWholeBuild) {
  Apply("bookinfo.yaml", kBookinfo);
  Apply("ratings.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: ratings, namespace: bookinfo}
spec:
  ports: [{name: http, port: 9080}]
)");
  const std::string slice = R"(apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: extra, namespace: bookinfo, labels: {kubernetes.io/service-name: SERVICE}}
addressType: IPv4
ports: [{name: http, port: 9080}]
endpoints:
- addresses: [ADDRESS]
  targetRef: {kind: Pod, name: reviews-v2-c4d, namespace: bookinfo}
)";
  const auto slice_of = [&](const std::string& service, const std::string& address) {
    return absl::StrReplaceAll(slice, {{"SERVICE", service}, {"ADDRESS", address}});
  };
  const std::string reviews = "reviews.bookinfo.svc.cluster.local";
  const std::string ratings = "ratings.bookinfo.svc.cluster.local";
  const std::string inventory = "inventory.mesh.local";
  // Kubernetes names Services by DNS labels, but a name with dots is read too: its host's
  // namespace is the label before ".svc.".
  const std::string dotted = R"(apiVersion: v1
kind: Service
metadata: {name: web.v2, namespace: bookinfo}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-v2, namespace: bookinfo, labels: {kubernetes.io/service-name: web.v2}}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints:
- addresses: [ADDRESS]
)";
  const auto dotted_at = [&](const std::string& address) {
    return absl::StrReplaceAll(dotted, {{"ADDRESS", address}});
  };
  Apply("dotted.yaml", dotted_at("127.0.0.60"));
  const std::string web = "web.v2.bookinfo.svc.cluster.local";
  const auto endpoints_of = [](const std::string& service, const std::string& address) {
    return StrCat("apiVersion: v1\nkind: Endpoints\nmetadata: {name: ", service,
                  ", namespace: bookinfo}\nsubsets: [{addresses: [{ip: ", address,
                  "}], ports: [{name: http, port: 9080}]}]\n");
  };
  std::string vm_moved = kBookinfo;
  vm_moved.replace(vm_moved.find("127.0.0.20"), 10, "127.0.0.30");
  std::string pod_relabelled = vm_moved;
  pod_relabelled.replace(pod_relabelled.find("version: v2}"), 11, "version: v9");
  std::string inventory_moved = kMesh;
  inventory_moved.replace(inventory_moved.find("127.0.0.1,"), 10, "127.0.0.8,");
  struct Step {
    std::string what;
    std::string file;
    std::optional<std::string> content;  // nullopt: removed
    std::set<std::string> rebuilt;
  };
  const std::vector<Step> steps = {
      {"slice added", "extra.yaml", slice_of("reviews", "127.0.0.40"), {reviews}},
      {"slice changed", "extra.yaml", slice_of("reviews", "127.0.0.41"), {reviews}},
      {"slice moved to ratings", "extra.yaml", slice_of("ratings", "127.0.0.41"), {reviews, ratings}},
      {"slice removed", "extra.yaml", std::nullopt, {ratings}},
      {"a WorkloadEntry the reviews Service selects moved", "bookinfo.yaml", vm_moved, {reviews}},
      {"a Pod a reviews slice stands for relabelled", "bookinfo.yaml", pod_relabelled, {reviews}},
      {"a WorkloadEntry a ServiceEntry selects moved", "mesh.yaml", inventory_moved, {inventory}},
      {"a slice of a Service with a dotted name changed", "dotted.yaml", dotted_at("127.0.0.61"), {web}},
      {"v1 Endpoints of ratings added", "ratings-ep.yaml", endpoints_of("ratings", "127.0.0.70"), {ratings}},
      {"v1 Endpoints of ratings changed", "ratings-ep.yaml", endpoints_of("ratings", "127.0.0.71"), {ratings}},
      {"v1 Endpoints moved to reviews (a selector: not mirrored)",
       "ratings-ep.yaml",
       endpoints_of("reviews", "127.0.0.71"),
       {ratings, reviews}},
      {"v1 Endpoints removed", "ratings-ep.yaml", std::nullopt, {reviews}},
  };
  for (const Step& step : steps) {
    SCOPED_TRACE(step.what);
    const std::shared_ptr<const EndpointIndex> before = model_.endpoints();
    const auto update = store_.ApplyFile(step.file, step.content);
    ASSERT_TRUE(update.errors.empty());
    ASSERT_FALSE(update.changed.empty());
    model_.OnUpdate(update);
    const std::shared_ptr<const EndpointIndex> after = model_.endpoints();
    EXPECT_EQ(DescribeIndex(*after), DescribeIndex(BuildEndpointIndex(*store_.Snapshot(), "cluster.local")));
    for (const auto& [host, entry] : *before) {
      if (step.rebuilt.contains(host) || !after->contains(host)) continue;
      EXPECT_EQ(after->at(host), entry) << host << " was rebuilt, or copied";
    }
    for (const std::string& host : step.rebuilt) {
      if (before->contains(host) && after->contains(host)) {
        EXPECT_NE(after->at(host), before->at(host)) << host;
      }
    }
  }
  EXPECT_THAT(VersionsByAddress(Endpoints(ratings, 9080)), ::testing::IsEmpty());
  EXPECT_EQ(VersionsByAddress(Endpoints(reviews, 9080))["127.0.0.12:9080"], "v9");
  EXPECT_EQ(Endpoints(inventory, 8080).at(0).address, "127.0.0.8");
  ASSERT_EQ(Endpoints(web, 80).size(), 1u);
  EXPECT_EQ(Endpoints(web, 80)[0].address, "127.0.0.61");
  // Anything else changing rebuilds the whole index.
  const std::shared_ptr<const EndpointIndex> before = model_.endpoints();
  Apply("ratings.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: ratings, namespace: bookinfo}
spec:
  ports: [{name: http, port: 9081}]
)");
  EXPECT_NE(model_.endpoints()->at(inventory), before->at(inventory));
}

// The tracker analysis keeps: given whole states, it finds what changed by comparing them, and
// rebuilds the hosts of changed EndpointSlices and WorkloadEntries alone; anything else
// changing, the whole index.
TEST_F(MeshModelTest, TheEndpointIndexTrackerRebuildsTheHostsOfChangedSlicesAlone) {
  Apply("bookinfo.yaml", kBookinfo);
  EndpointIndexTracker tracker("cluster.local", kDefaultClusterId);
  const auto whole = [&]() { return DescribeIndex(BuildEndpointIndex(*store_.Snapshot(), "cluster.local")); };
  std::shared_ptr<const EndpointIndex> index = tracker.Update(*store_.Snapshot());
  EXPECT_EQ(DescribeIndex(*index), whole());
  EXPECT_EQ(tracker.Update(*store_.Snapshot()), index) << "nothing changed: the same index";
  const std::string reviews = "reviews.bookinfo.svc.cluster.local";
  const std::string inventory = "inventory.mesh.local";
  // A slice changes: reviews is rebuilt, inventory kept.
  std::string moved = kBookinfo;
  moved.replace(moved.find("127.0.0.13"), 10, "127.0.0.14");
  Apply("bookinfo.yaml", moved);
  std::shared_ptr<const EndpointIndex> next = tracker.Update(*store_.Snapshot());
  EXPECT_EQ(DescribeIndex(*next), whole());
  EXPECT_EQ(next->at(inventory), index->at(inventory));
  EXPECT_NE(next->at(reviews), index->at(reviews));
  EXPECT_THAT(VersionsByAddress(next->at(reviews)->at(9080)), ::testing::Contains(::testing::Key("127.0.0.14:9080")));
  // A slice removed with its file, and one added: both hosts rebuilt.
  Apply("extra.yaml", R"(apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: extra, namespace: shop, labels: {kubernetes.io/service-name: reviews}}
addressType: IPv4
ports: [{name: http, port: 19080}]
endpoints:
- addresses: [127.0.0.7]
)");
  index = next;
  next = tracker.Update(*store_.Snapshot());
  EXPECT_EQ(DescribeIndex(*next), whole());
  EXPECT_EQ(next->at(inventory), index->at(inventory));
  EXPECT_EQ(next->at(reviews), index->at(reviews)) << "another namespace's reviews";
  EXPECT_NE(next->at("reviews.shop.svc.cluster.local"), index->at("reviews.shop.svc.cluster.local"));
  store_.ApplyFile("extra.yaml", std::nullopt);
  next = tracker.Update(*store_.Snapshot());
  EXPECT_EQ(DescribeIndex(*next), whole());
  // v1 Endpoints of shop's reviews (no selector) come: that host alone is rebuilt.
  index = next;
  Apply("ep.yaml",
        "apiVersion: v1\nkind: Endpoints\nmetadata: {name: reviews, namespace: shop}\n"
        "subsets: [{addresses: [{ip: 127.0.0.8}], ports: [{name: http, port: 19080}]}]\n");
  next = tracker.Update(*store_.Snapshot());
  EXPECT_EQ(DescribeIndex(*next), whole());
  EXPECT_EQ(next->at(inventory), index->at(inventory));
  EXPECT_NE(next->at("reviews.shop.svc.cluster.local"), index->at("reviews.shop.svc.cluster.local"));
  EXPECT_EQ(next->at("reviews.shop.svc.cluster.local")->at(9080).size(), 2u) << "the slice's and the Endpoints'";
  store_.ApplyFile("ep.yaml", std::nullopt);
  next = tracker.Update(*store_.Snapshot());
  EXPECT_EQ(DescribeIndex(*next), whole());
  // A WorkloadEntry the inventory ServiceEntry selects moves, then leaves its selector: inventory
  // alone is rebuilt (by the state before for the second).
  std::string inventory_moved = kMesh;
  inventory_moved.replace(inventory_moved.find("127.0.0.1,"), 10, "127.0.0.8,");
  std::string inventory_left = inventory_moved;
  inventory_left.replace(inventory_left.find("{app: inventory, version: v1}"), 29, "{app: gone, version: v1}");
  for (const std::string& mesh : {inventory_moved, inventory_left}) {
    Apply("mesh.yaml", mesh);
    index = next;
    next = tracker.Update(*store_.Snapshot());
    EXPECT_EQ(DescribeIndex(*next), whole());
    EXPECT_EQ(next->at(reviews), index->at(reviews));
  }
  EXPECT_FALSE(next->contains(inventory)) << "no endpoint left";
  Apply("mesh.yaml", kMesh);
  next = tracker.Update(*store_.Snapshot());
  ASSERT_TRUE(next->contains(inventory));
  // A Pod's labels change: not a slice or WorkloadEntry, so the whole index is built anew.
  index = next;
  std::string relabelled = moved;
  relabelled.replace(relabelled.find("version: v2}"), 11, "version: v9");
  Apply("bookinfo.yaml", relabelled);
  next = tracker.Update(*store_.Snapshot());
  EXPECT_EQ(DescribeIndex(*next), whole());
  EXPECT_NE(next->at(inventory), index->at(inventory));
  EXPECT_EQ(VersionsByAddress(next->at(reviews)->at(9080))["127.0.0.12:9080"], "v9");
}

// What subsets see of an endpoint beyond its own labels (AugmentLabels) changes with its Pod's
// node and a WorkloadEntry's locality: such a change is an endpoint push for the services
// concerned, and a ServiceEntry selecting by a topology label follows a WorkloadEntry's locality.
TEST_F(MeshModelTest, ANodeOrLocalityChangeIsAnEndpointPushForTheServicesConcerned) {
  const std::string config = R"(apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}}
spec: {nodeName: node-a}
status: {podIP: 127.0.0.31}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [127.0.0.31], targetRef: {kind: Pod, name: web-1}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: east-vms, namespace: shop}
spec:
  resolution: STATIC
  hosts: [east-vms.mesh.local]
  ports: [{number: 8080, name: http}]
  workloadSelector: {labels: {topology.kubernetes.io/region: east}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1, namespace: shop}
spec: {address: 127.0.0.32, labels: {app: vm}, locality: east/east-1a}
)";
  Apply("topology.yaml", config);
  ASSERT_EQ(Endpoints("east-vms.mesh.local", 8080).size(), 1u) << "selected by the region of its locality";
  ASSERT_EQ(Endpoints("web.shop.svc.cluster.local", 8080).size(), 1u);
  EXPECT_EQ(Endpoints("web.shop.svc.cluster.local", 8080)[0].node_name, "node-a");

  std::string moved_node = config;
  moved_node.replace(moved_node.find("node-a"), 6, "node-b");
  PushRequest request = Apply("topology.yaml", moved_node);
  EXPECT_TRUE(request.EndpointOnly());
  EXPECT_TRUE(request.configs.contains(ConfigKey{kind::kEndpoints, "shop", "web.shop.svc.cluster.local"}));
  EXPECT_EQ(Endpoints("web.shop.svc.cluster.local", 8080)[0].node_name, "node-b");

  std::string moved_vm = moved_node;
  moved_vm.replace(moved_vm.find("east/east-1a"), 12, "west/west-1a");
  request = Apply("topology.yaml", moved_vm);
  EXPECT_TRUE(request.EndpointOnly());
  EXPECT_TRUE(request.configs.contains(ConfigKey{kind::kEndpoints, "shop", "east-vms.mesh.local"}))
      << "the ServiceEntry that selected it by its old locality";
  EXPECT_TRUE(Endpoints("east-vms.mesh.local", 8080).empty());
}

TEST_F(MeshModelTest, ContextHasServicesByHostAndAContentVersion) {
  auto built = model_.Build(nullptr, {}, 1, absl::UnixEpoch());
  ASSERT_TRUE(built.ok());
  const auto& context = static_cast<const MeshContext&>(**built);
  EXPECT_NE(context.FindService("inventory.mesh.local"), nullptr);
  EXPECT_NE(context.FindService("reviews.shop.svc.cluster.local"), nullptr);
  // Another store with the same content (a replica, or a restart) gets the same version.
  ConfigStore other_store;
  other_store.ApplyFile("elsewhere.yaml", std::string("# comment\n") + kMesh);
  MeshModel other(other_store, "cluster.local");
  auto again = other.Build(nullptr, {}, 7, absl::UnixEpoch());
  EXPECT_EQ((*again)->version(), context.version());
  // Endpoint-only objects do not change the context version.
  std::string moved = kMesh;
  moved.replace(moved.find("18081"), 5, "18089");
  Apply("mesh.yaml", moved);
  EXPECT_EQ((*model_.Build(nullptr, {}, 2, absl::UnixEpoch()))->version(), context.version());
}

// The scope key (what routes and listeners are cached by) carries the proxy's namespace once a
// ServiceEntry is exported to fewer than every namespace, and only then: proxies of two
// namespaces see different hosts then, and must not share what was built for the other.
TEST(ProxyScopeTest, TheKeyCarriesTheNamespaceOnlyWhenExportsAreRestricted) {
  const auto keys = [](const std::string& export_to) {
    ConfigStore store;
    store.ApplyFile("se.yaml", StrCat(R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: partner}
spec:
  resolution: STATIC
  hosts: [partner.mesh.local]
  ports: [{number: 8080, name: http}]
  exportTo: )",
                                      export_to, "\n"));
    EXPECT_EQ(store.error_count(), 0u);
    const MeshContext mesh("v1", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
    std::vector<std::string> out;
    for (const std::string ns : {"default", "web"}) {
      ProxyInfo proxy;
      proxy.namespace_name = ns;
      out.push_back(ProxyScope(proxy, mesh).key());
    }
    return out;
  };
  EXPECT_THAT(keys("[\"*\"]"), ::testing::ElementsAre("all", "all"));
  EXPECT_THAT(keys("[\".\"]"), ::testing::ElementsAre("all|ns:default", "all|ns:web"));
}

// A Kubernetes Service's annotation networking.istio.io/exportTo, as istiod reads it (entries
// separated by commas, spaces dropped, any mix; "*" wins, then "~"): which namespaces' proxies
// see its host.
TEST(ProxyScopeTest, AServicesExportToAnnotationDecidesWhoSeesIt) {
  const auto visible_in = [](const std::string& annotation) {
    ConfigStore store;
    store.ApplyFile("svc.yaml", StrCat(R"(apiVersion: v1
kind: Service
metadata:
  name: a
  namespace: web
  annotations: {networking.istio.io/exportTo: ")",
                                       annotation, R"("}
spec: {ports: [{name: http, port: 8080}]}
)"));
    EXPECT_EQ(store.error_count(), 0u) << annotation;
    const MeshContext mesh("v1", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
    std::vector<std::string> out;
    for (const std::string ns : {"web", "shop", "other"}) {
      ProxyInfo proxy;
      proxy.namespace_name = ns;
      if (ProxyScope(proxy, mesh).VisibleHost("a.web.svc.cluster.local")) out.push_back(ns);
    }
    return out;
  };
  EXPECT_THAT(visible_in("*"), ::testing::ElementsAre("web", "shop", "other"));
  EXPECT_THAT(visible_in(""), ::testing::ElementsAre("web", "shop", "other")) << "empty: the default, everywhere";
  EXPECT_THAT(visible_in("."), ::testing::ElementsAre("web"));
  EXPECT_THAT(visible_in("~"), ::testing::IsEmpty());
  EXPECT_THAT(visible_in(" shop , ., "), ::testing::ElementsAre("web", "shop"));
  EXPECT_THAT(visible_in("shop,*"), ::testing::ElementsAre("web", "shop", "other")) << "* among them: everywhere";
  EXPECT_THAT(visible_in("~,shop"), ::testing::IsEmpty()) << "~ without *: nowhere (istiod ignores the rest)";
  EXPECT_THAT(visible_in("not a namespace"), ::testing::IsEmpty()) << "names no namespace: seen by none";
  EXPECT_THAT(visible_in(","), ::testing::IsEmpty()) << "empty entries name no namespace";
  EXPECT_THAT(visible_in(" "), ::testing::IsEmpty());
}

// Services a.web and b.shop, for the scope tests below (YAML documents, the last followed by ---).
const std::string kServicesAB = R"(apiVersion: v1
kind: Service
metadata: {name: a, namespace: web}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: b, namespace: shop}
spec: {ports: [{name: http, port: 8080}]}
---
)";

// A namespace without a Sidecar gets the root namespace's default one (istiod's
// meshRootSidecarConfig: the oldest without a selector, not the first by name), whose "./"
// hosts then mean the proxy's own namespace; a namespace
// with a Sidecar of its own keeps it, a root Sidecar with a workloadSelector is no default, and
// gateway proxies are never scoped.
TEST(ProxyScopeTest, TheRootNamespacesSidecarIsTheDefaultOfNamespacesWithoutOne) {
  ConfigStore store;
  store.ApplyFile("mesh.yaml", kServicesAB + R"(apiVersion: v1
kind: Service
metadata: {name: telemetry, namespace: istio-system}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: by-label, namespace: istio-system}
spec:
  workloadSelector: {labels: {app: nothing}}
  egress: [{hosts: ["*/*"]}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: istio-system, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  egress: [{hosts: ["./*", "istio-system/*"]}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: a-newer-default, namespace: istio-system, creationTimestamp: "2026-06-01T00:00:00Z"}
spec:
  egress: [{hosts: ["*/*"]}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: own, namespace: shop}
spec:
  egress: [{hosts: ["web/*"]}]
)");
  ASSERT_EQ(store.error_count(), 0u);
  const MeshContext mesh("v1", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  const auto seen = [&](const std::string& ns, const std::string& type = "sidecar") {
    ProxyInfo proxy;
    proxy.type = type;
    proxy.namespace_name = ns;
    const ProxyScope scope(proxy, mesh);
    std::vector<std::string> out{scope.key()};
    for (const auto& [host, service] : mesh.services()) {
      if (scope.Visible(service)) out.push_back(host);
    }
    return out;
  };
  EXPECT_THAT(seen("web"), ::testing::ElementsAre("sidecar:istio-system/default@web", "a.web.svc.cluster.local",
                                                  "telemetry.istio-system.svc.cluster.local"));
  EXPECT_THAT(seen("other"),
              ::testing::ElementsAre("sidecar:istio-system/default@other", "telemetry.istio-system.svc.cluster.local"));
  EXPECT_THAT(seen("shop"), ::testing::ElementsAre("sidecar:shop/own", "a.web.svc.cluster.local"));
  // In the root namespace it is the namespace's own Sidecar.
  EXPECT_THAT(seen("istio-system"),
              ::testing::ElementsAre("sidecar:istio-system/default", "telemetry.istio-system.svc.cluster.local"));
  EXPECT_THAT(seen("web", "router"),
              ::testing::ElementsAre("all", "a.web.svc.cluster.local", "b.shop.svc.cluster.local",
                                     "telemetry.istio-system.svc.cluster.local"));
}

// The root namespace is Istio's meshConfig.rootNamespace, istio-system unless set: its
// DestinationRules and its selector-less Sidecar are the defaults, and the cross-object rule
// looks up subsets the same way.
TEST(ProxyScopeTest, TheRootNamespaceIsConfigurable) {
  const std::string mesh_yaml = kServicesAB + R"(apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: mesh-root}
spec:
  egress: [{hosts: ["./*"]}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: all-b, namespace: mesh-root}
spec:
  host: b.shop.svc.cluster.local
  subsets: [{name: v1, labels: {version: v1}}]
)";
  const std::string route_yaml = R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: to-b, namespace: web}
spec:
  hosts: [b.shop.svc.cluster.local]
  http: [{route: [{destination: {host: b.shop.svc.cluster.local, subset: v1}}]}]
)";
  for (const std::string root : {"istio-system", "mesh-root"}) {
    SCOPED_TRACE(root);
    const bool configured = root == "mesh-root";
    ConfigStore store(ConfigStore::Options{.check_references = MeshReferenceCheck("cluster.local", root)});
    store.ApplyFile("mesh.yaml", mesh_yaml);
    ASSERT_EQ(store.error_count(), 0u);
    store.ApplyFile("route.yaml", route_yaml);
    EXPECT_EQ(store.error_count(), configured ? 0u : 1u) << "the subset is defined only in mesh-root";
    const MeshContext mesh("v1", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local", root);
    EXPECT_EQ(mesh.root_namespace(), root);
    const DestinationRule* rule = mesh.DestinationRuleFor("b.shop.svc.cluster.local", "web");
    EXPECT_EQ(rule != nullptr, configured);
    ProxyInfo proxy;
    proxy.type = "sidecar";
    proxy.namespace_name = "web";
    const ProxyScope scope(proxy, mesh);
    EXPECT_EQ(scope.key(), configured ? "sidecar:mesh-root/default@web" : "all");
    EXPECT_EQ(scope.VisibleHost("b.shop.svc.cluster.local"), !configured);
    EXPECT_TRUE(scope.VisibleHost("a.web.svc.cluster.local"));
  }
}

// The subset names of the DestinationRule proxies of `ns` get for `host` (none: empty).
std::vector<std::string> SubsetsServed(const MeshContext& mesh, const std::string& host, const std::string& ns) {
  std::vector<std::string> names;
  if (const DestinationRule* rule = mesh.DestinationRuleFor(host, ns); rule != nullptr) {
    for (const auto& subset : rule->subsets) names.push_back(subset.name);
  }
  return names;
}

// VirtualService exportTo, as istiod indexes it: a proxy gets, for a host, the oldest of its
// own namespace's VirtualServices exported to it ("." or the namespace's name), else of those
// other namespaces export to it by name, else of those exported everywhere; "~" reaches no
// one. Only VirtualServices exported alike shadow each other (pilot_vservice_dup_domain).
TEST(MeshContextTest, VirtualServiceExportToDecidesWhichNamespacesGetItsRoutes) {
  ConfigStore store;
  store.ApplyFile("mesh.yaml", kServicesAB + R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: public, namespace: shop, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  hosts: [b.shop.svc.cluster.local]
  http: [{route: [{destination: {host: b.shop.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: for-web, namespace: shop, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  hosts: [b.shop.svc.cluster.local]
  exportTo: [web]
  http: [{route: [{destination: {host: b.shop.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: own, namespace: web, creationTimestamp: "2026-01-03T00:00:00Z"}
spec:
  hosts: [b.shop.svc.cluster.local]
  exportTo: ["."]
  http: [{route: [{destination: {host: b.shop.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: hidden, namespace: shop}
spec:
  hosts: [a.web.svc.cluster.local]
  exportTo: [nowhere]
  http: [{route: [{destination: {host: a.web.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: later-public, namespace: web, creationTimestamp: "2026-01-04T00:00:00Z"}
spec:
  hosts: [b.shop.svc.cluster.local]
  http: [{route: [{destination: {host: b.shop.svc.cluster.local}}]}]
)");
  ASSERT_EQ(store.error_count(), 0u);
  const MeshContext mesh("v1", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  EXPECT_TRUE(mesh.virtual_services_vary_by_namespace());
  const auto served = [&](const std::string& host, const std::string& ns) {
    std::vector<std::string> names;
    for (const VirtualService* vs : mesh.VirtualServicesFor(host, ns)) names.push_back(vs->meta.name);
    return names;
  };
  const std::string b = "b.shop.svc.cluster.local";
  EXPECT_THAT(served(b, "web"), ::testing::ElementsAre("own"));  // private first, though newest
  EXPECT_THAT(served(b, "shop"), ::testing::ElementsAre("public"));
  EXPECT_THAT(served(b, "other"), ::testing::ElementsAre("public"));
  EXPECT_THAT(served(b, ""), ::testing::ElementsAre("public"));
  EXPECT_THAT(served("a.web.svc.cluster.local", "shop"), ::testing::IsEmpty());
  EXPECT_THAT(served("a.web.svc.cluster.local", "web"), ::testing::IsEmpty());
  // later-public is never served (public is exported everywhere too, and older), nor is for-web
  // (web, the one namespace it is exported to, gets its own); own is.
  std::vector<std::string> duplicates;
  for (const ConfigWarning& finding : mesh.findings()) {
    if (finding.code == "pilot_vservice_dup_domain") duplicates.push_back(finding.key.name);
  }
  EXPECT_THAT(duplicates, ::testing::UnorderedElementsAre("for-web", "later-public"));
  // Routes differ by namespace, so the route key carries it.
  ProxyInfo web;
  web.namespace_name = "web";
  ProxyInfo shop;
  shop.namespace_name = "shop";
  EXPECT_NE(ProxyScope(web, mesh).route_key(), ProxyScope(shop, mesh).route_key());
  EXPECT_EQ(ProxyScope(web, mesh).key(), "all") << "listeners and clusters do not depend on VirtualService exports";
}

// DestinationRule exportTo, as istiod looks rules up: the proxy's namespace's own rules
// exported to it (".", "*", its name); then the service's namespace's, then the root
// namespace's, that are exported to the proxy's namespace. A proxy of the root namespace looks
// at the root's "." rules first. Rules exported differently are not merged.
TEST(MeshContextTest, DestinationRuleExportToDecidesWhichNamespacesGetTheRule) {
  ConfigStore store;
  store.ApplyFile("mesh.yaml", kServicesAB + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: private, namespace: shop, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  exportTo: ["."]
  subsets: [{name: mine, labels: {v: "1"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: for-web, namespace: shop, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  exportTo: [web]
  subsets: [{name: web, labels: {v: "2"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: also-for-web, namespace: shop, creationTimestamp: "2026-01-03T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  exportTo: [web]
  subsets: [{name: web2, labels: {v: "3"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: mesh-default, namespace: istio-system}
spec:
  host: "*.cluster.local"
  subsets: [{name: root, labels: {v: "4"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: root-only, namespace: istio-system}
spec:
  host: b.shop.svc.cluster.local
  exportTo: ["."]
  subsets: [{name: gateway, labels: {v: "5"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: nobody, namespace: web}
spec:
  host: a.web.svc.cluster.local
  exportTo: [nowhere]
  subsets: [{name: none, labels: {v: "6"}}]
)");
  ASSERT_EQ(store.error_count(), 0u);
  const MeshContext mesh("v1", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  EXPECT_TRUE(mesh.rules_vary_by_namespace());
  const std::string b = "b.shop.svc.cluster.local";
  EXPECT_THAT(SubsetsServed(mesh, b, "shop"), ::testing::ElementsAre("mine"));
  EXPECT_THAT(SubsetsServed(mesh, b, "web"), ::testing::ElementsAre("web", "web2")) << "merged: exported alike";
  EXPECT_THAT(SubsetsServed(mesh, b, "other"), ::testing::ElementsAre("root")) << "shop exports nothing to it";
  EXPECT_THAT(SubsetsServed(mesh, b, "istio-system"), ::testing::ElementsAre("gateway"));
  EXPECT_THAT(SubsetsServed(mesh, "a.web.svc.cluster.local", "web"), ::testing::ElementsAre("root"))
      << "a rule exported to another namespace alone reaches not even its own";
}

// Several rules of one host in one namespace, exported differently, as istiod's enhanced merge
// keeps them: merged only into earlier rules exported alike (or to a subset of where they are);
// a proxy gets the last rule that applies to it; an exact host's rules that reach no proxy of a
// namespace end the search in that namespace (a wildcard rule there does not step in).
TEST(MeshContextTest, RulesExportedDifferentlyStayApartAndTheLastApplies) {
  ConfigStore store;
  store.ApplyFile("mesh.yaml", kServicesAB + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: everyone, namespace: shop, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  subsets: [{name: v1, labels: {v: "1"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: own, namespace: shop, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  exportTo: ["."]
  subsets: [{name: v2, labels: {v: "2"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: for-web, namespace: shop, creationTimestamp: "2026-01-03T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  exportTo: [web]
  subsets: [{name: v3, labels: {v: "3"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web-and-ops, namespace: shop, creationTimestamp: "2026-01-04T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  exportTo: [web, ops]
  subsets: [{name: v4, labels: {v: "4"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: hidden, namespace: web}
spec:
  host: a.web.svc.cluster.local
  exportTo: [nowhere]
  subsets: [{name: h, labels: {v: "5"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: wide, namespace: web}
spec:
  host: "*.web.svc.cluster.local"
  subsets: [{name: w, labels: {v: "6"}}]
)");
  ASSERT_EQ(store.error_count(), 0u);
  const MeshContext mesh("v1", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  const std::string b = "b.shop.svc.cluster.local";
  // shop's own index: everyone (no exportTo) and own (".") stay apart; the last applies.
  EXPECT_THAT(SubsetsServed(mesh, b, "shop"), ::testing::ElementsAre("v2"));
  // Exported: everyone, for-web (web-and-ops, exported more widely, merged into it and, being
  // last to meet it, not kept on its own, as istiod does): the last exported to the proxy's.
  EXPECT_THAT(SubsetsServed(mesh, b, "web"), ::testing::ElementsAre("v3", "v4"));
  EXPECT_THAT(SubsetsServed(mesh, b, "ops"), ::testing::ElementsAre("v1"));
  EXPECT_THAT(SubsetsServed(mesh, b, "other"), ::testing::ElementsAre("v1"));
  // a.web: the exact host's one rule reaches nobody, so namespace web gives other namespaces
  // nothing (not its wildcard rule); web's own proxies look at their index, where it is not.
  EXPECT_THAT(SubsetsServed(mesh, "a.web.svc.cluster.local", "shop"), ::testing::IsEmpty());
  EXPECT_THAT(SubsetsServed(mesh, "a.web.svc.cluster.local", "web"), ::testing::ElementsAre("w"));
}

// DestinationRules with a workloadSelector, as istiod's sidecar scope chooses: in the proxy's
// namespace the first rule whose selector its labels include (those with a selector sorted
// first, then oldest), else the last without one, else none, the search ending there even when
// the service's namespace exports a rule; never to other namespaces. Rules with the same
// selector merge; a rule without one exported to "." alone merges into one with a selector, as
// istiod's merge does.
TEST(MeshContextTest, RulesWithAWorkloadSelectorApplyToTheWorkloadsTheySelect) {
  ConfigStore store;
  store.ApplyFile("mesh.yaml", kServicesAB + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: all, namespace: shop, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  subsets: [{name: all, labels: {v: "1"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: canary, namespace: shop, creationTimestamp: "2026-01-03T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  workloadSelector: {matchLabels: {app: canary}}
  subsets: [{name: canary, labels: {v: "2"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: canary-more, namespace: shop, creationTimestamp: "2026-01-04T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  workloadSelector: {matchLabels: {app: canary}}
  subsets: [{name: more, labels: {v: "3"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: beta, namespace: shop, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  workloadSelector: {matchLabels: {track: beta}}
  subsets: [{name: beta, labels: {v: "4"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: only-selected, namespace: web}
spec:
  host: b.shop.svc.cluster.local
  workloadSelector: {matchLabels: {app: web-canary}}
  subsets: [{name: web-canary, labels: {v: "5"}}]
)");
  ASSERT_EQ(store.error_count(), 0u);
  const MeshContext mesh("v1", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  EXPECT_TRUE(mesh.has_rule_selectors());
  EXPECT_TRUE(mesh.rules_vary_by_namespace());
  const std::string b = "b.shop.svc.cluster.local";
  const auto subsets = [&](const std::string& ns, const LabelMap& labels) {
    std::vector<std::string> names;
    if (const DestinationRule* rule = mesh.DestinationRuleFor(b, ns, &labels); rule != nullptr) {
      for (const auto& subset : rule->subsets) names.push_back(subset.name);
    }
    return names;
  };
  EXPECT_THAT(subsets("shop", {}), ::testing::ElementsAre("all"));
  EXPECT_THAT(subsets("shop", {{"app", "canary"}, {"x", "y"}}), ::testing::ElementsAre("canary", "more"))
      << "the same selector: merged, the older first";
  EXPECT_THAT(subsets("shop", {{"track", "beta"}}), ::testing::ElementsAre("beta"));
  EXPECT_THAT(subsets("shop", {{"app", "canary"}, {"track", "beta"}}), ::testing::ElementsAre("beta"))
      << "both select it: the older rule";
  EXPECT_THAT(subsets("other", {{"app", "canary"}}), ::testing::ElementsAre("all"))
      << "a selector applies in its own namespace only";
  EXPECT_THAT(subsets("web", {{"app", "web-canary"}}), ::testing::ElementsAre("web-canary"));
  EXPECT_THAT(subsets("web", {}), ::testing::IsEmpty())
      << "web has a rule for the host: the search ends there, as in istiod, though shop exports one";
  EXPECT_EQ(mesh.RuleSelectorKey("shop", {{"app", "canary"}}), mesh.RuleSelectorKey("shop", {{"app", "canary"}}));
  EXPECT_NE(mesh.RuleSelectorKey("shop", {{"app", "canary"}}), mesh.RuleSelectorKey("shop", {}));
  EXPECT_EQ(mesh.RuleSelectorKey("other", {{"app", "canary"}}), "") << "no selector there";
  EXPECT_EQ(mesh.RuleSelectorKey("shop", {}), "s") << "none met: the key does not grow with the rules";
  EXPECT_THAT(mesh.RuleSelectorKey("shop", {{"app", "canary"}, {"track", "beta"}}),
              ::testing::MatchesRegex("s[0-9]+,[0-9]+"))
      << "the indices of the selectors met";

  // A rule without a selector exported to "." alone, as istiod's merge takes it: merged into the
  // earlier rule with a selector (exported alike, "."), and not kept on its own.
  ConfigStore quirk;
  quirk.ApplyFile("mesh.yaml", kServicesAB + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: selected, namespace: shop}
spec:
  host: b.shop.svc.cluster.local
  workloadSelector: {matchLabels: {app: canary}}
  subsets: [{name: canary, labels: {v: "2"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: private, namespace: shop}
spec:
  host: b.shop.svc.cluster.local
  exportTo: ["."]
  subsets: [{name: private, labels: {v: "3"}}]
)");
  ASSERT_EQ(quirk.error_count(), 0u);
  const MeshContext merged("v1", 1, absl::UnixEpoch(), quirk.Snapshot(), "cluster.local");
  const LabelMap canary = {{"app", "canary"}}, none;
  const DestinationRule* selected = merged.DestinationRuleFor(b, "shop", &canary);
  ASSERT_NE(selected, nullptr);
  EXPECT_EQ(selected->subsets.size(), 2u);
  EXPECT_EQ(merged.DestinationRuleFor(b, "shop", &none), nullptr);
}

// The subset check with workload selectors: a subset a rule with a selector defines passes (its
// proxies route there); removing that rule, or the subset from it, is refused as the change that
// breaks the route; a rule every proxy of which an earlier selector takes is no proxy's.
TEST(MeshContextTest, SubsetsOfRulesWithAWorkloadSelectorAreChecked) {
  ConfigStore store(ConfigStore::Options{.check_references = MeshReferenceCheck("cluster.local", "istio-system")});
  // The rule without a selector (with subsets v1 and `all_more`), and one for app=canary
  // defining `canary_subset`.
  const auto rules = [](const std::string& canary_subset, const std::string& all_more = "v0") {
    return StrCat(kServicesAB, R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: all, namespace: shop}
spec:
  host: b.shop.svc.cluster.local
  subsets: [{name: v1, labels: {v: "1"}}, {name: )",
                  all_more, R"(, labels: {v: "0"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: canary, namespace: shop}
spec:
  host: b.shop.svc.cluster.local
  workloadSelector: {matchLabels: {app: canary}}
  subsets: [{name: )",
                  canary_subset, R"(, labels: {v: "2"}}]
---
)");
  };
  store.ApplyFile("mesh.yaml", rules("v2") + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shadowed, namespace: shop}
spec:
  host: b.shop.svc.cluster.local
  workloadSelector: {matchLabels: {app: canary, track: beta}}
  subsets: [{name: v3, labels: {v: "3"}}]
)");
  ASSERT_EQ(store.error_count(), 0u);
  const auto vs = [](const std::string& subset) {
    return StrCat(R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: to-b, namespace: shop}
spec:
  hosts: [b.shop.svc.cluster.local]
  exportTo: ["."]
  http: [{route: [{destination: {host: b.shop.svc.cluster.local, subset: )",
                  subset, "}}]}]\n");
  };
  EXPECT_THAT(store.ApplyFile("vs.yaml", vs("v2")).errors, ::testing::IsEmpty());
  const ConfigStore::Update shadowed = store.ApplyFile("vs.yaml", vs("v3"));
  ASSERT_EQ(shadowed.errors.size(), 1u);
  EXPECT_THAT(shadowed.errors[0].message,
              ::testing::HasSubstr("subset \"v3\" of b.shop.svc.cluster.local is not defined by any DestinationRule "
                                   "proxies of namespace shop get (shop/canary, shop/all: by their workload "
                                   "selectors, else the last)"));
  // Taking the subset away from the rule that defines it is what is refused.
  // ... even when another rule of the host is edited in the same step, which is accepted.
  const ConfigStore::Update narrowed = store.ApplyFile("mesh.yaml", rules("other", "v9"));
  ASSERT_EQ(narrowed.errors.size(), 1u);
  EXPECT_EQ(narrowed.errors[0].object, "DestinationRule shop/canary") << narrowed.errors[0].ToString();
  const MeshContext mesh("v1", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  const LabelMap canary = {{"app", "canary"}};
  const DestinationRule* served = mesh.DestinationRuleFor("b.shop.svc.cluster.local", "shop", &canary);
  ASSERT_NE(served, nullptr);
  EXPECT_EQ(served->subsets.front().name, "v2") << "the last good version keeps serving";
  const DestinationRule* all = mesh.DestinationRuleFor("b.shop.svc.cluster.local", "shop");
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(all->subsets.back().name, "v9") << "the other edit is served";

  // An empty selector takes every proxy of the namespace: none gets the rule without one.
  ConfigStore every(ConfigStore::Options{.check_references = MeshReferenceCheck("cluster.local", "istio-system")});
  every.ApplyFile("mesh.yaml", rules("v2") + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: everyone, namespace: shop}
spec:
  host: b.shop.svc.cluster.local
  workloadSelector: {}
  subsets: [{name: v4, labels: {v: "4"}}]
)");
  ASSERT_EQ(every.error_count(), 0u);
  EXPECT_THAT(every.ApplyFile("vs.yaml", vs("v4")).errors, ::testing::IsEmpty());
  const ConfigStore::Update unreached = every.ApplyFile("vs.yaml", vs("v1"));
  ASSERT_EQ(unreached.errors.size(), 1u) << "v1 is the rule no proxy gets";
  EXPECT_THAT(unreached.errors[0].message,
              ::testing::HasSubstr("get (shop/canary, shop/everyone: by their workload selectors)"));

  // Only rules with selectors: a proxy none of them picks gets no rule.
  ConfigStore selected(ConfigStore::Options{.check_references = MeshReferenceCheck("cluster.local", "istio-system")});
  selected.ApplyFile("mesh.yaml", StrCat(kServicesAB, R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: canary, namespace: shop}
spec:
  host: b.shop.svc.cluster.local
  workloadSelector: {matchLabels: {app: canary}}
  subsets: [{name: v2, labels: {v: "2"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: beta, namespace: shop}
spec:
  host: b.shop.svc.cluster.local
  workloadSelector: {matchLabels: {track: beta}}
  subsets: [{name: v3, labels: {v: "3"}}]
)"));
  ASSERT_EQ(selected.error_count(), 0u);
  const ConfigStore::Update missing = selected.ApplyFile("vs.yaml", vs("v9"));
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_THAT(missing.errors[0].message,
              ::testing::HasSubstr("get (shop/beta, shop/canary: by their workload selectors, or none)"));
  // Checked where the VirtualService is exported, and the message says why that namespace.
  ASSERT_EQ(selected
                .ApplyFile("web.yaml", R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web-canary, namespace: web}
spec:
  host: b.shop.svc.cluster.local
  workloadSelector: {matchLabels: {app: canary}}
  subsets: [{name: v2, labels: {v: "2"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web-beta, namespace: web}
spec:
  host: b.shop.svc.cluster.local
  workloadSelector: {matchLabels: {track: beta}}
  subsets: [{name: v2, labels: {v: "2"}}]
)")
                .errors.size(),
            0u);
  const ConfigStore::Update exported = selected.ApplyFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: to-b, namespace: shop}
spec:
  hosts: [b.shop.svc.cluster.local]
  exportTo: [web]
  http: [{route: [{destination: {host: b.shop.svc.cluster.local, subset: v3}}]}]
)");
  ASSERT_EQ(exported.errors.size(), 1u);
  EXPECT_THAT(exported.errors[0].message,
              ::testing::HasSubstr("proxies of namespace web get (web/web-beta, web/web-canary: by their workload "
                                   "selectors, or none); this VirtualService is exported to that namespace"));
}

// A VirtualService's subsets are checked against the rule of each namespace it is exported to:
// one exported only to web may route to a subset only web's proxies get.
TEST(MeshContextTest, SubsetsAreCheckedWhereTheVirtualServiceIsExported) {
  ConfigStore store(ConfigStore::Options{.check_references = MeshReferenceCheck("cluster.local", "istio-system")});
  store.ApplyFile("mesh.yaml", kServicesAB + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: own, namespace: shop}
spec:
  host: b.shop.svc.cluster.local
  exportTo: ["."]
  subsets: [{name: v1, labels: {v: "1"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: for-web, namespace: shop}
spec:
  host: b.shop.svc.cluster.local
  exportTo: [web]
  subsets: [{name: v2, labels: {v: "2"}}]
)");
  ASSERT_EQ(store.error_count(), 0u);
  const auto errors_of = [&](const std::string& export_to) {
    const ConfigStore::Update update = store.ApplyFile("vs.yaml", StrCat(R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: to-b, namespace: shop}
spec:
  hosts: [b.shop.svc.cluster.local]
  exportTo: )",
                                                                         export_to, R"(
  http: [{route: [{destination: {host: b.shop.svc.cluster.local, subset: v2}}]}]
)"));
    std::string out;
    for (const auto& error : update.errors) out += error.ToString() + "\n";
    return out;
  };
  EXPECT_EQ(errors_of("[web]"), "");
  EXPECT_THAT(errors_of("[\".\"]"),
              ::testing::HasSubstr("subset \"v2\" is not defined by DestinationRule shop/own (host "
                                   "b.shop.svc.cluster.local)"));
  EXPECT_THAT(errors_of("[web, ops]"),
              ::testing::HasSubstr("subset \"v2\" of b.shop.svc.cluster.local is not defined: no DestinationRule for "
                                   "the host applies to proxies of namespace ops"));
  EXPECT_THAT(errors_of("[\"~\"]"), ::testing::HasSubstr("is allowed for a ServiceEntry only"))
      << "Istio refuses it for a VirtualService";
}

// A narrowly exported VirtualService bound only to a Gateway splits gateway proxies' routes by
// namespace, not every sidecar's.
TEST(MeshContextTest, AGatewayOnlyNarrowExportLeavesSidecarRoutesShared) {
  ConfigStore store;
  store.ApplyFile("mesh.yaml", kServicesAB + R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: edge, namespace: web}
spec:
  hosts: [edge.example.com]
  gateways: [web/ingress]
  exportTo: ["."]
  http: [{route: [{destination: {host: a.web.svc.cluster.local}}]}]
)");
  ASSERT_EQ(store.error_count(), 0u);
  const MeshContext mesh("v1", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  EXPECT_FALSE(mesh.virtual_services_vary_by_namespace());
  EXPECT_TRUE(mesh.gateway_virtual_services_vary_by_namespace());
  ProxyInfo web;
  web.namespace_name = "web";
  ProxyInfo shop;
  shop.namespace_name = "shop";
  EXPECT_EQ(ProxyScope(web, mesh).route_key(), ProxyScope(shop, mesh).route_key());
  EXPECT_EQ(mesh.VirtualServicesOfGateway("web/ingress", "web").size(), 1u);
  EXPECT_TRUE(mesh.VirtualServicesOfGateway("web/ingress", "shop").empty());
}

// When a change leaves a VirtualService's subset undefined, the change is what is refused: a
// newer rule served in place of the one defining it, or the defining rule narrowed away.
TEST(MeshContextTest, ASubsetErrorRefusesTheRuleThatChanged) {
  ConfigStore store(ConfigStore::Options{.check_references = MeshReferenceCheck("cluster.local", "istio-system")});
  const std::string rule = R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: r1, namespace: shop, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  subsets: [{name: v1, labels: {v: "1"}}]
)";
  store.ApplyFile("mesh.yaml", kServicesAB + rule + R"(---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: to-b, namespace: shop}
spec:
  hosts: [b.shop.svc.cluster.local]
  http: [{route: [{destination: {host: b.shop.svc.cluster.local, subset: v1}}]}]
)");
  ASSERT_EQ(store.error_count(), 0u);
  const ConfigKey r1{"DestinationRule", "shop", "r1"};
  const ConfigKey r2{"DestinationRule", "shop", "r2"};
  // A newer rule exported to "." alone would be served to shop's proxies instead: it is refused.
  ConfigStore::Update update = store.ApplyFile("r2.yaml", R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: r2, namespace: shop, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  host: b.shop.svc.cluster.local
  exportTo: ["."]
  subsets: [{name: v2, labels: {v: "2"}}]
)");
  ASSERT_EQ(update.errors.size(), 1u);
  EXPECT_THAT(update.errors[0].ToString(), ::testing::HasSubstr("DestinationRule shop/r2"));
  EXPECT_FALSE(store.Snapshot()->contains(r2));
  // Narrowing r1 away from shop is refused; r1 keeps serving as it was.
  update = store.ApplyFile("mesh.yaml", kServicesAB +
                                            absl::StrReplaceAll(rule, {{"spec:\n", "spec:\n  exportTo: [web]\n"}}) +
                                            R"(---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: to-b, namespace: shop}
spec:
  hosts: [b.shop.svc.cluster.local]
  http: [{route: [{destination: {host: b.shop.svc.cluster.local, subset: v1}}]}]
)");
  ASSERT_FALSE(update.errors.empty());
  const auto snapshot = store.Snapshot();
  const auto served = snapshot->find(r1);
  ASSERT_NE(served, snapshot->end());
  EXPECT_TRUE(std::get<DestinationRule>(served->second->object).export_to.empty()) << "the last good version";
}

// ExternalName Services are aliases of the host they name, resolved through other aliases as
// istiod resolves them; one that loops, names a host the mesh does not define, or whose own host
// another object defines is served as nothing, and the context says why.
TEST(MeshAliasTest, ExternalNameServicesAreAliasesResolvedThroughChains) {
  ConfigStore store(ConfigStore::Options{.check_references = MeshReferenceCheck("cluster.local")});
  const std::string mesh = R"(apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: shop}
spec: {ports: [{name: http, port: 9080}]}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: shop}
spec:
  host: reviews
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: v1
kind: Service
metadata: {name: catalog, namespace: web}
spec: {type: ExternalName, externalName: reviews.shop.svc.cluster.local}
---
apiVersion: v1
kind: Service
metadata: {name: old-catalog, namespace: shop}
spec: {type: ExternalName, externalName: catalog.web.svc.cluster.local}
---
apiVersion: v1
kind: Service
metadata: {name: ping, namespace: shop}
spec: {type: ExternalName, externalName: pong.shop.svc.cluster.local}
---
apiVersion: v1
kind: Service
metadata: {name: pong, namespace: shop}
spec: {type: ExternalName, externalName: ping.shop.svc.cluster.local}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec: {type: ExternalName, externalName: db.example.com}
---
apiVersion: v1
kind: Service
metadata: {name: taken, namespace: shop}
spec: {type: ExternalName, externalName: reviews.shop.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: taken, namespace: shop}
spec:
  hosts: [taken.shop.svc.cluster.local]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.7}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: catalog, namespace: web}
spec:
  hosts: [catalog]
  http: [{route: [{destination: {host: old-catalog.shop.svc.cluster.local, subset: SUBSET}}]}]
)";
  const ConfigStore::Update good = store.ApplyFile("mesh.yaml", absl::StrReplaceAll(mesh, {{"SUBSET", "v1"}}));
  ASSERT_TRUE(good.errors.empty()) << good.errors.front().ToString();

  const std::map<std::string, std::string> resolved = ResolveServiceAliases(*store.Snapshot(), "cluster.local");
  EXPECT_THAT(resolved, ::testing::UnorderedElementsAre(
                            ::testing::Pair("catalog.web.svc.cluster.local", "reviews.shop.svc.cluster.local"),
                            ::testing::Pair("old-catalog.shop.svc.cluster.local", "reviews.shop.svc.cluster.local"),
                            ::testing::Pair("db.shop.svc.cluster.local", "db.example.com"),
                            ::testing::Pair("taken.shop.svc.cluster.local", "reviews.shop.svc.cluster.local")))
      << "ping and pong loop: left out";

  const MeshContext context("v1", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  EXPECT_EQ(context.FindService("catalog.web.svc.cluster.local"), nullptr) << "an alias is not a service";
  ASSERT_NE(context.FindAlias("old-catalog.shop.svc.cluster.local"), nullptr);
  EXPECT_EQ(context.ConcreteHost("old-catalog.shop.svc.cluster.local"), "reviews.shop.svc.cluster.local");
  EXPECT_EQ(context.ConcreteHost("reviews.shop.svc.cluster.local"), "reviews.shop.svc.cluster.local");
  EXPECT_EQ(context.ConcreteHost("db.shop.svc.cluster.local"), "db.shop.svc.cluster.local") << "not served";
  std::vector<std::string> aliases;
  for (const ServiceAlias* alias : context.AliasesOf("reviews.shop.svc.cluster.local")) {
    aliases.push_back(alias->alias.host);
  }
  EXPECT_THAT(aliases, ::testing::ElementsAre("old-catalog.shop.svc.cluster.local", "catalog.web.svc.cluster.local"))
      << "by namespace, then host; taken's host is the ServiceEntry's";
  EXPECT_NE(context.FindService("taken.shop.svc.cluster.local"), nullptr);

  std::map<std::string, std::string> unserved;  // Service name -> finding
  for (const ConfigWarning& w : context.findings()) {
    if (w.code == "cxds_alias_unserved") unserved[w.key.name] = w.message;
  }
  EXPECT_THAT(unserved,
              ::testing::UnorderedElementsAre(
                  ::testing::Pair("ping", ::testing::HasSubstr("leads into a loop of ExternalName Services")),
                  ::testing::Pair("pong", ::testing::HasSubstr("leads into a loop")),
                  ::testing::Pair("db", ::testing::HasSubstr("externalName db.example.com is not a host any "
                                                             "Service or ServiceEntry defines")),
                  ::testing::Pair("taken", ::testing::HasSubstr("is also defined by ServiceEntry shop/taken"))));

  const ConfigStore::Update bad = store.ApplyFile("mesh.yaml", absl::StrReplaceAll(mesh, {{"SUBSET", "v9"}}));
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_THAT(bad.errors[0].ToString(),
              ::testing::HasSubstr("subset \"v9\" is not defined by DestinationRule shop/reviews (host "
                                   "reviews.shop.svc.cluster.local)"));

  // The alias in the middle of the chain retargeted to a host without the subset: that Service's
  // change is what is refused, and the route keeps its host.
  const std::string retargeted =
      absl::StrReplaceAll(mesh, {{"SUBSET", "v1"},
                                 {"spec: {type: ExternalName, externalName: reviews.shop.svc.cluster.local}\n---\n"
                                  "apiVersion: v1\nkind: Service\nmetadata: {name: old-catalog, namespace: shop}",
                                  "spec: {type: ExternalName, externalName: db.shop.svc.cluster.local}\n---\n"
                                  "apiVersion: v1\nkind: Service\nmetadata: {name: old-catalog, namespace: shop, "
                                  "labels: {team: a}}"}});
  ASSERT_NE(retargeted, absl::StrReplaceAll(mesh, {{"SUBSET", "v1"}}));
  const ConfigStore::Update moved = store.ApplyFile("mesh.yaml", retargeted);
  ASSERT_EQ(moved.errors.size(), 1u);
  EXPECT_THAT(moved.errors[0].ToString(),
              ::testing::HasSubstr("Service web/catalog: this change is refused and the last good version keeps "
                                   "serving: VirtualService web/catalog"));
  const auto catalog = store.Snapshot()->find(ConfigKey{kind::kService, "web", "catalog"});
  ASSERT_NE(catalog, store.Snapshot()->end());
  EXPECT_EQ(std::get<K8sService>(catalog->second->object).external_name, "reviews.shop.svc.cluster.local");
  const auto old_catalog = store.Snapshot()->find(ConfigKey{kind::kService, "shop", "old-catalog"});
  ASSERT_NE(old_catalog, store.Snapshot()->end());
  EXPECT_EQ(std::get<K8sService>(old_catalog->second->object).meta.labels.at("team"), "a")
      << "the other alias of the chain changed only its labels: taken";

  // A ServiceEntry taking the alias's own host moves the route to it: the entry is refused.
  const ConfigStore::Update entry = store.ApplyFile("entry.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: old-catalog, namespace: shop}
spec:
  hosts: [old-catalog.shop.svc.cluster.local]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.8}]
)");
  ASSERT_EQ(entry.errors.size(), 1u);
  EXPECT_THAT(entry.errors[0].ToString(),
              ::testing::HasSubstr("ServiceEntry shop/old-catalog: this change is refused and the last good version "
                                   "keeps serving: VirtualService web/catalog"));

  // A route to an alias whose own host a ServiceEntry defines goes to that entry, so its subsets
  // are the entry's rule's (none here), as served.
  const ConfigStore::Update shadowed = store.ApplyFile("taken.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: to-taken, namespace: shop}
spec:
  hosts: [front.example.com]
  http: [{route: [{destination: {host: taken, subset: v1}}]}]
)");
  ASSERT_EQ(shadowed.errors.size(), 1u);
  EXPECT_THAT(shadowed.errors[0].ToString(),
              ::testing::HasSubstr("subset \"v1\" of taken.shop.svc.cluster.local is not defined"));
}

TEST(ServiceHostTest, AServiceHostIsReadBackIntoItsNameAndNamespace) {
  using NameAndNamespace = std::pair<std::string_view, std::string_view>;
  EXPECT_EQ(ServiceNameOfHost("reviews.shop.svc.cluster.local", "cluster.local"), NameAndNamespace("reviews", "shop"));
  EXPECT_EQ(ServiceNameOfHost("web.v2.shop.svc.cluster.local", "cluster.local"), NameAndNamespace("web.v2", "shop"))
      << "a name may hold dots; a namespace is one label";
  EXPECT_EQ(ServiceNameOfHost("shop.svc.cluster.local", "cluster.local"), std::nullopt) << "no name";
  EXPECT_EQ(ServiceNameOfHost("reviews.shop.svc.example.org", "cluster.local"), std::nullopt) << "another suffix";
  EXPECT_EQ(ServiceNameOfHost("reviews.shopsvc.cluster.local", "cluster.local"), std::nullopt);
  EXPECT_EQ(ServiceNameOfHost("inventory.mesh.local", "cluster.local"), std::nullopt);
}

}  // namespace
}  // namespace cxds
