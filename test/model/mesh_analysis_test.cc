// MeshAnalyzer through a real ConfigStore (issue 17, like `istioctl analyze`): each finding on
// the object and field it concerns, with istiod's code; new findings reported once; nothing
// refused; the kept list bounded while the counts stay exact.
#include "model/mesh_analysis.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/mesh_model.h"

namespace cxds {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

ConfigStore AnalyzedStore(size_t max_warnings = 1000) {
  return ConfigStore(ConfigStore::Options{.check_references = MeshReferenceCheck("cluster.local"),
                                          .analyze = MeshAnalyzer("cluster.local"),
                                          .max_warnings = max_warnings});
}

std::vector<std::string> Strings(const std::vector<ConfigError>& errors) {
  std::vector<std::string> out;
  for (const ConfigError& e : errors) out.push_back(e.ToString());
  return out;
}

// The warnings of analysis `code`, as strings.
std::vector<std::string> WarningsOf(const std::vector<ConfigError>& warnings, const std::string& code) {
  std::vector<std::string> out;
  for (const std::string& w : Strings(warnings)) {
    if (w.find(absl::StrCat("[", code, "]")) != std::string::npos) out.push_back(w);
  }
  return out;
}

constexpr char kMesh[] = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: inventory}
spec:
  hosts: [inventory.mesh.local]
  ports: [{number: 8080, name: grpc, protocol: GRPC}]
  resolution: STATIC
  workloadSelector: {labels: {app: inventory}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: inventory-1}
spec: {address: 127.0.0.1, labels: {app: inventory}}
---
apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: shop}
spec:
  ports: [{name: http, port: 9080}, {name: grpc, port: 9090}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: reviews-1, namespace: shop, labels: {kubernetes.io/service-name: reviews}}
addressType: IPv4
ports: [{name: http, port: 19080}]
endpoints: [{addresses: [127.0.0.2]}]
)";

TEST(MeshAnalysisTest, ACleanMeshHasNoFindingsAndAPortWithoutEndpointsIsOne) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("mesh.yaml", kMesh);
  EXPECT_THAT(update.errors, IsEmpty());
  EXPECT_THAT(Strings(update.warnings),
              ElementsAre("mesh.yaml:15: Service shop/reviews: spec.ports[1]: host reviews.shop.svc.cluster.local port "
                          "9090 has no endpoints (no ready endpoint in an EndpointSlice labelled "
                          "kubernetes.io/service-name: reviews or in Endpoints reviews with a port named \"grpc\") "
                          "[pilot_eds_no_instances]"));
  EXPECT_EQ(store.Snapshot()->size(), 4u) << "warnings refuse nothing";
  EXPECT_EQ(store.WarningCounts().at("pilot_eds_no_instances"), 1u);
  // The same state again: the warning stays in the status, and is not new.
  const ConfigStore::Update again = store.ApplyFile("other.yaml", "# nothing\n");
  EXPECT_THAT(again.warnings, IsEmpty());
  bool listed = false;
  for (const auto& status : store.Status())
    listed = listed || (status.path == "mesh.yaml" && status.warnings.size() == 1);
  EXPECT_TRUE(listed);
}

// A route to a host without ports (a ServiceEntry listing none, valid Istio) goes to no cluster:
// reported, and the entry's DNS names are not looked up.
TEST(MeshAnalysisTest, ARouteToAHostWithoutPortsIsReported) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("portless.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: portless, namespace: shop}
spec:
  hosts: [portless.example.com]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: to-portless, namespace: shop}
spec:
  hosts: [front.example.com]
  http: [{route: [{destination: {host: portless.example.com}}]}]
)");
  EXPECT_THAT(update.errors, IsEmpty());
  EXPECT_THAT(Strings(update.warnings),
              ::testing::Contains("portless.yaml:8: VirtualService shop/to-portless: spec.http[0].route[0].destination."
                                  "host: host portless.example.com has no ports, so it has no cluster: requests "
                                  "routed here fail [IST0101]"));
  EXPECT_THAT(NamesToResolve(*store.Snapshot()), IsEmpty()) << "an entry that serves nothing is not resolved";
}

TEST(MeshAnalysisTest, TheOldestVirtualServiceOfAHostIsServedAndTheOtherIsReported) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  // "a-new" sorts first by name, but "z-old" is older: Istio keeps the oldest.
  const ConfigStore::Update update = store.ApplyFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: a-new, creationTimestamp: "2026-12-01T00:00:00Z"}
spec:
  hosts: [inventory.mesh.local]
  http: [{route: [{destination: {host: inventory.mesh.local}}], timeout: 1s}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: z-old, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  hosts: [inventory.mesh.local]
  http: [{route: [{destination: {host: inventory.mesh.local}}], timeout: 2s}]
)");
  EXPECT_THAT(Strings(update.warnings),
              ElementsAre("vs.yaml:1: VirtualService default/a-new: spec.hosts[0]: host inventory.mesh.local is also a "
                          "host of VirtualService default/z-old, which is served for it instead (older, or first by "
                          "name, or exported more narrowly to the proxies' namespace); these routes are not "
                          "[pilot_vservice_dup_domain]"));
  MeshContext context("v", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  const std::vector<const VirtualService*> served = context.VirtualServicesFor("inventory.mesh.local");
  ASSERT_EQ(served.size(), 1u);
  EXPECT_EQ(served[0]->meta.name, "z-old");
}

// DestinationRules of one host are merged as istiod merges them (the oldest first; new subsets
// added; a traffic policy only where the oldest has none); a duplicate subset and a rule of
// another namespace are reported, and routes may name a subset only a merged-in rule defines.
TEST(MeshAnalysisTest, DestinationRulesOfOneHostAreMergedAndTheRestReported) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  const ConfigStore::Update update = store.ApplyFile("dr.yaml", R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: z-old, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  host: inventory.mesh.local
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: a-new, creationTimestamp: "2026-12-01T00:00:00Z"}
spec:
  host: inventory.mesh.local
  trafficPolicy: {loadBalancer: {simple: RANDOM}}
  subsets:
  - {name: v2, labels: {version: v2}}
  - {name: v1, labels: {version: other}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: inventory, namespace: shop}
spec:
  host: inventory.mesh.local
  subsets: [{name: v9, labels: {version: v9}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: inventory}
spec:
  hosts: [inventory.mesh.local]
  http: [{route: [{destination: {host: inventory.mesh.local, subset: v2}}]}]
)");
  EXPECT_THAT(Strings(update.errors), IsEmpty()) << "v2 is defined by the rule merged in";
  EXPECT_THAT(Strings(update.warnings),
              ::testing::Not(::testing::Contains(::testing::HasSubstr("a-new: spec.subsets[1].labels"))))
      << "a-new's v1 is not served (z-old's is): whether it selects endpoints does not matter";
  EXPECT_THAT(Strings(update.warnings),
              ::testing::Contains(::testing::HasSubstr(
                  "DestinationRule default/a-new: spec.subsets[1].name: subset \"v1\" of inventory.mesh.local is also "
                  "defined by default/z-old, whose definition is served; this one is not [pilot_destrule_subsets]")));
  EXPECT_THAT(Strings(update.warnings), ::testing::Not(::testing::Contains(::testing::HasSubstr("another namespace"))))
      << "a rule of another namespace is no conflict: it is that namespace's proxies' rule";

  MeshContext context("v", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  const DestinationRule* rule = context.DestinationRuleFor("inventory.mesh.local", "default");
  ASSERT_NE(rule, nullptr);
  ASSERT_EQ(rule->subsets.size(), 2u);
  EXPECT_EQ(rule->subsets[0].name, "v1");
  EXPECT_EQ(rule->subsets[0].labels.at("version"), "v1") << "the older rule's v1";
  EXPECT_EQ(rule->subsets[1].name, "v2");
  EXPECT_TRUE(rule->traffic_policy.has_value()) << "the oldest has none: the next one's";
  // Proxies of namespace shop get shop's own rule (Istio's lookup: the proxy's namespace
  // first); those of any other namespace the rule of the service's namespace, default.
  const DestinationRule* shop_rule = context.DestinationRuleFor("inventory.mesh.local", "shop");
  ASSERT_NE(shop_rule, nullptr);
  ASSERT_EQ(shop_rule->subsets.size(), 1u);
  EXPECT_EQ(shop_rule->subsets[0].name, "v9");
  const DestinationRule* web_rule = context.DestinationRuleFor("inventory.mesh.local", "web");
  ASSERT_NE(web_rule, nullptr);
  EXPECT_EQ(web_rule->meta.name, rule->meta.name) << "the same merge, from default's exported rules";
  EXPECT_EQ(web_rule->subsets.size(), rule->subsets.size());
  EXPECT_TRUE(context.rules_vary_by_namespace());

  // v9 is only in the rule of namespace shop: a route to it from a VirtualService of namespace
  // default, whose proxies get default's rule, is refused; one of namespace shop is accepted.
  const ConfigStore::Update refused = store.ApplyFile("vs9.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: nine}
spec:
  hosts: [nine.mesh.local]
  http: [{route: [{destination: {host: inventory.mesh.local, subset: v9}}]}]
)");
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_THAT(refused.errors[0].ToString(), ::testing::HasSubstr("subset \"v9\" is not defined by DestinationRule "
                                                                 "default/z-old (host inventory.mesh.local)"));
  const ConfigStore::Update accepted = store.ApplyFile("vs9.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: nine, namespace: shop}
spec:
  hosts: [nine.mesh.local]
  http: [{route: [{destination: {host: inventory.mesh.local, subset: v9}}]}]
)");
  EXPECT_THAT(Strings(accepted.errors), IsEmpty());
}

// A host two ServiceEntries define is served from the last in key order (namespace b here), so
// the rule proxies get for it is b's or the root's, never a's: a route to a subset only a's rule
// defines is refused, as it would reach a cluster no proxy is given.
TEST(MeshAnalysisTest, TheCrossObjectRuleTakesTheServedDefinitionsNamespace) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("api.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api, namespace: a}
spec: {hosts: [api.example.com], ports: [{number: 80, name: http, protocol: HTTP}], resolution: STATIC}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api, namespace: b}
spec: {hosts: [api.example.com], ports: [{number: 80, name: http, protocol: HTTP}], resolution: STATIC}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api, namespace: a}
spec: {host: api.example.com, subsets: [{name: v1, labels: {version: v1}}]}
)");
  ASSERT_THAT(Strings(update.errors), IsEmpty());
  const ConfigStore::Update refused = store.ApplyFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: api, namespace: c}
spec:
  hosts: [api.example.com]
  http: [{route: [{destination: {host: api.example.com, subset: v1}}]}]
)");
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_THAT(refused.errors[0].ToString(),
              ::testing::HasSubstr("no DestinationRule for the host applies to proxies of namespace c"));
}

TEST(MeshAnalysisTest, WithoutTimestampsTheFirstByNameIsServed) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  const std::string vs = R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: NAME}
spec:
  hosts: [inventory.mesh.local]
  http: [{route: [{destination: {host: inventory.mesh.local}}]}]
)";
  store.ApplyFile("b.yaml", std::string(vs).replace(vs.find("NAME"), 4, "b"));
  store.ApplyFile("a.yaml", std::string(vs).replace(vs.find("NAME"), 4, "a"));
  MeshContext context("v", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  ASSERT_EQ(context.VirtualServicesFor("inventory.mesh.local").size(), 1u);
  EXPECT_EQ(context.VirtualServicesFor("inventory.mesh.local")[0]->meta.name, "a");
  EXPECT_EQ(store.WarningCounts().at("pilot_vservice_dup_domain"), 1u);
}

TEST(MeshAnalysisTest, RoutesToUnknownHostsOrPortsAndDuplicateHostsAreReported) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  const ConfigStore::Update update = store.ApplyFile("more.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: shop}
spec:
  hosts: [reviews]
  http:
  - route:
    - {destination: {host: ratings}, weight: 50}
    - {destination: {host: reviews, port: {number: 7000}}, weight: 50}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: inventory-copy}
spec:
  hosts: [inventory.mesh.local]
  ports: [{number: 8080, name: grpc, protocol: GRPC}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.3}]
)");
  EXPECT_THAT(update.errors, IsEmpty()) << "valid config: warned about, not refused";
  std::map<std::string, size_t> counts = store.WarningCounts();
  EXPECT_EQ(counts["IST0101"], 2u);
  EXPECT_EQ(counts["pilot_duplicate_envoy_clusters"], 1u);
  const std::vector<std::string> warnings = Strings(update.warnings);
  EXPECT_THAT(warnings, ::testing::Contains(
                            "more.yaml:1: VirtualService shop/web: spec.http[0].route[0].destination.host: host "
                            "ratings.shop.svc.cluster.local is not defined by any Service or ServiceEntry: requests "
                            "routed here fail [IST0101]"));
  EXPECT_THAT(warnings, ::testing::Contains("more.yaml:1: VirtualService shop/web: "
                                            "spec.http[0].route[1].destination.port.number: port 7000 is not a port "
                                            "of reviews.shop.svc.cluster.local: requests routed here fail [IST0101]"));
  EXPECT_THAT(warnings, ::testing::Contains("mesh.yaml:1: ServiceEntry default/inventory: host inventory.mesh.local is "
                                            "also defined by ServiceEntry default/inventory-copy, which is served for "
                                            "it [pilot_duplicate_envoy_clusters]"));
}

// Service db of `ns`, exported to its own namespace only, with one endpoint.
std::string DbExportedToItsNamespace(const std::string& ns) {
  return absl::StrReplaceAll(R"(apiVersion: v1
kind: Service
metadata:
  name: db
  namespace: NS
  annotations: {networking.istio.io/exportTo: "."}
spec:
  ports: [{name: http, port: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: db-1, namespace: NS, labels: {kubernetes.io/service-name: db}}
addressType: IPv4
ports: [{name: http, port: 18080}]
endpoints: [{addresses: [127.0.0.2]}]
---
)",
                             {{"NS", ns}});
}

// A route to a service that is not exported to the VirtualService's namespace, nor to any its
// exportTo names, is IST0101 as `istioctl analyze` says it: the proxies that get the route do
// not see the cluster. Exported to a namespace that does see it, or in the service's own, it is
// no finding.
TEST(MeshAnalysisTest, RoutesToAServiceNotExportedWhereTheyAreServedAreReported) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update =
      store.ApplyFile("mesh.yaml", DbExportedToItsNamespace("backend") + R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: from-frontend, namespace: frontend}
spec:
  hosts: [web.frontend.svc.cluster.local]
  http: [{route: [{destination: {host: db.backend.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: exported-to-backend, namespace: frontend}
spec:
  hosts: [api.frontend.svc.cluster.local]
  exportTo: [".", backend]
  http: [{route: [{destination: {host: db.backend.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: local, namespace: backend}
spec:
  hosts: [db]
  http: [{route: [{destination: {host: db}}]}]
)");
  EXPECT_THAT(update.errors, IsEmpty()) << "valid config: warned about, not refused";
  EXPECT_EQ(store.WarningCounts()["IST0101"], 1u);
  EXPECT_THAT(Strings(update.warnings),
              ::testing::Contains("mesh.yaml:17: VirtualService frontend/from-frontend: "
                                  "spec.http[0].route[0].destination.host: host db.backend.svc.cluster.local is not "
                                  "exported to namespace frontend (its exportTo: .), so proxies there do not see it: "
                                  "requests routed here fail [IST0101]"));
}

// Where routes are served decides what they must see: a VirtualService exported to another
// namespace only is judged from there, a delegate from where its delegators are served.
TEST(MeshAnalysisTest, ExportChecksFollowWhereRoutesAreServedDelegatesIncluded) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update =
      store.ApplyFile("mesh.yaml", DbExportedToItsNamespace("frontend") + R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: for-backend, namespace: frontend}
spec:
  hosts: [web.frontend.svc.cluster.local]
  exportTo: [backend]
  http: [{route: [{destination: {host: db}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: root, namespace: backend}
spec:
  hosts: [api.backend.svc.cluster.local]
  http: [{delegate: {name: routes, namespace: frontend}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: routes, namespace: frontend}
spec:
  http: [{route: [{destination: {host: db}}]}]
)");
  EXPECT_THAT(update.errors, IsEmpty());
  const std::vector<std::string> warnings = Strings(update.warnings);
  EXPECT_THAT(warnings, ::testing::Contains(::testing::HasSubstr(
                            "VirtualService frontend/for-backend: spec.http[0].route[0].destination.host: host "
                            "db.frontend.svc.cluster.local is not exported to namespace backend")));
  EXPECT_THAT(warnings, ::testing::Contains(::testing::HasSubstr(
                            "VirtualService frontend/routes: spec.http[0].route[0].destination.host: host "
                            "db.frontend.svc.cluster.local is not exported to namespace backend")));
  EXPECT_EQ(store.WarningCounts()["IST0101"], 2u);
}

// A VirtualService whose http routes delegate is served as a merged copy: its tls routes are
// still judged (by name, not by the object served).
TEST(MeshAnalysisTest, TlsRoutesOfADelegatingVirtualServiceAreStillJudged) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("mesh.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web}
spec:
  hosts: [web.example.com]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.3}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web}
spec:
  hosts: [web.example.com]
  http: [{delegate: {name: web-routes}}]
  tls: [{match: [{sniHosts: [web.example.com]}], route: [{destination: {host: web.example.com}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web-routes}
spec:
  http: [{route: [{destination: {host: web.example.com}}]}]
)");
  EXPECT_THAT(update.errors, IsEmpty());
  EXPECT_EQ(store.WarningCounts()["cxds_tls_route_unused"], 1u);
}

// A ServiceEntry with addresses and opaque ports: cxds's listeners never see the address a
// client dialled, so those ports are not told apart by it; said once, where the addresses are.
TEST(MeshAnalysisTest, AddressesOfAServiceEntryWithOpaquePortsAreReported) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("db.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db}
spec:
  hosts: [db.example.com]
  addresses: [127.0.0.60]
  ports: [{number: 5432, name: tcp, protocol: TCP}, {number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.61}]
)");
  EXPECT_THAT(update.errors, IsEmpty());
  EXPECT_THAT(Strings(update.warnings),
              ElementsAre("db.yaml:1: ServiceEntry default/db: spec.addresses: ports 5432 (TCP) are not told apart "
                          "from other services' by these addresses: cxds's Envoy listeners bind their own addresses "
                          "and never see the one a client dialled (HTTP ports answer to the addresses as domains) "
                          "[cxds_addresses_unused]"));
}

// An address another host's routes answer to already: which host keeps it, said where it is.
TEST(MeshAnalysisTest, AnAddressAnotherHostKeepsIsReported) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("addr.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: first}
spec:
  hosts: [a.example.com]
  addresses: [127.0.0.80]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.81}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: second}
spec:
  hosts: [b.example.com, c.example.com]
  addresses: [127.0.0.82, 127.0.0.80]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.83}]
)");
  EXPECT_THAT(update.errors, IsEmpty());
  EXPECT_THAT(Strings(update.warnings),
              ElementsAre("addr.yaml:11: ServiceEntry default/second: spec.addresses[1]: address 127.0.0.80 of "
                          "b.example.com is a domain of a.example.com (every namespace) on port 8080 (a host of that "
                          "name, or first in host order): where a proxy sees both, Envoy's routes answer to it for the "
                          "first of those hosts it sees, not for b.example.com [pilot_vservice_dup_domain]"))
      << "and nothing for a ServiceEntry whose own hosts share its addresses";
}

// A ServiceEntry NAME.example.com in namespace `ns` with the address 127.0.0.80 on HTTP port
// `port`, exported to `export_to` (YAML flow items).
std::string EntryOfAddress80(const std::string& name, const std::string& ns, const std::string& export_to,
                             uint32_t port = 8080) {
  return absl::StrReplaceAll(R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: NAME, namespace: NS}
spec:
  hosts: [NAME.example.com]
  addresses: [127.0.0.80]
  exportTo: [EXPORT]
  ports: [{number: PORT, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.81}]
)",
                             {{"NAME", name}, {"NS", ns}, {"EXPORT", export_to}, {"PORT", absl::StrCat(port)}});
}

// Hosts with one address that no proxy sees together (exported to different namespaces) never
// meet in a route configuration: nothing is said of them; of a host that meets earlier ones, the
// message names each with the namespaces seeing both.
TEST(MeshAnalysisTest, AnAddressIsReportedOnlyWhereProxiesSeeBothHosts) {
  ConfigStore store = AnalyzedStore();
  const auto of = [&](const std::string& name, const std::string& export_to) {
    return EntryOfAddress80(name, "ops", export_to);
  };
  const ConfigStore::Update update =
      store.ApplyFile("addr.yaml", of("a", "\".\"") + "---\n" + of("b", "web") + "---\n" + of("c", "\".\", web, shop"));
  EXPECT_THAT(update.errors, IsEmpty());
  EXPECT_THAT(Strings(update.warnings),
              ElementsAre("addr.yaml:23: ServiceEntry ops/c: spec.addresses[0]: address 127.0.0.80 of c.example.com "
                          "is a domain of a.example.com (namespace ops), b.example.com (namespace web) on port 8080 "
                          "(a host of that name, or first in host order): where a proxy sees both, Envoy's routes "
                          "answer to it for the first of those hosts it sees, not for c.example.com "
                          "[pilot_vservice_dup_domain]"))
      << "a (ops) and b (web) never meet; c meets a in ops and b in web, not in shop";
}

// Many hosts may share one address: a message names the first five hosts a proxy sees with the
// one at hand and says there are others, and hosts exported to other namespaces are not among
// them however many there are (the analysis keeps only the claimants it can name: a bound on
// hostile config, measured in the issue with thousands of entries).
TEST(MeshAnalysisTest, ManyHostsOfOneAddressAreNamedUpToFive) {
  ConfigStore store = AnalyzedStore();
  std::string file;
  const auto add = [&](const std::string& name, const std::string& ns, const std::string& export_to, uint32_t port) {
    if (!file.empty()) file += "---\n";
    file += EntryOfAddress80(name, ns, export_to, port);
  };
  // In host order: a0..a9 each seen only in its own namespace; b0..b6 everywhere; c0 seen in
  // ns-a3 alone; d0 on another port, where it is the first.
  for (int i = 0; i < 10; ++i) add(absl::StrCat("a", i), absl::StrCat("ns-a", i), "\".\"", 8080);
  for (int i = 0; i < 7; ++i) add(absl::StrCat("b", i), "ops", "\"*\"", 8080);
  add("c0", "ns-a3", "\".\"", 8080);
  add("d0", "ops", "\"*\"", 9090);
  // On port 7070, g1 meets g0 in two namespaces: named once. On 6060, one entry of eight hosts
  // (never reported for its own hosts), then i0.
  add("g0", "ops", "west, east", 7070);
  add("g1", "ops", "east, west", 7070);
  file += R"(---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: h, namespace: ops}
spec:
  hosts: [h0.example.com, h1.example.com, h2.example.com, h3.example.com, h4.example.com, h5.example.com,
          h6.example.com, h7.example.com]
  addresses: [127.0.0.80]
  ports: [{number: 6060, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.81}]
)";
  add("i0", "ops", "\"*\"", 6060);
  const ConfigStore::Update update = store.ApplyFile("addr.yaml", file);
  EXPECT_THAT(Strings(update.errors), IsEmpty());
  std::map<std::string, std::string> owners;  // entry -> the hosts its message names
  for (const std::string& warning : Strings(update.warnings)) {
    ASSERT_THAT(warning, HasSubstr("[pilot_vservice_dup_domain]"));
    const size_t name = warning.find('/') + 1, from = warning.find(" is a domain of ") + 16,
                 to = warning.find(" on port ");
    owners[warning.substr(name, warning.find(':', name) - name)] = warning.substr(from, to - from);
  }
  EXPECT_EQ(owners.count("a9"), 0u) << "no a meets another a";
  EXPECT_EQ(owners.count("d0"), 0u) << "alone on its port";
  EXPECT_EQ(owners["b0"],
            "a0.example.com (namespace ns-a0), a1.example.com (namespace ns-a1), a2.example.com (namespace ns-a2), "
            "a3.example.com (namespace ns-a3), a4.example.com (namespace ns-a4) and other hosts");
  EXPECT_EQ(owners["c0"],
            "a3.example.com (namespace ns-a3), b0.example.com (namespace ns-a3), b1.example.com (namespace ns-a3), "
            "b2.example.com (namespace ns-a3), b3.example.com (namespace ns-a3) and other hosts")
      << "of the a hosts, only a3 is seen in ns-a3";
  EXPECT_EQ(owners["g1"], "g0.example.com (namespaces east, west)");
  EXPECT_EQ(owners["i0"],
            "h0.example.com (every namespace), h1.example.com (every namespace), h2.example.com (every namespace), "
            "h3.example.com (every namespace), h4.example.com (every namespace) and other hosts");
  EXPECT_EQ(owners.size(), 10u) << "b0..b6, c0, g1 and i0";
}

// A VirtualService bound to a Gateway that does not exist (IST0101), or whose hosts no server
// of its Gateway admits (IST0132), reaches no gateway proxy: both are said where they are.
TEST(MeshAnalysisTest, GatewayBindingsThatReachNoGatewayAreReported) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  const ConfigStore::Update update = store.ApplyFile("edge.yaml", R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8080, name: http, protocol: HTTP}
    hosts: ["*.example.com", "edge/*.example.org"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: shop}
spec:
  hosts: [www.example.com, docs.example.org]
  gateways: [edge/ingress, edge/missing]
  http: [{route: [{destination: {host: reviews}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: docs, namespace: edge}
spec:
  hosts: [docs.example.org]
  gateways: [ingress]
  http: [{route: [{destination: {host: reviews.shop.svc.cluster.local, port: {number: 9080}}}]}]
)");
  EXPECT_THAT(update.errors, IsEmpty()) << "valid config: warned about, not refused";
  std::map<std::string, size_t> counts = store.WarningCounts();
  EXPECT_EQ(counts["IST0101"], 2u);
  EXPECT_EQ(counts["IST0132"], 1u) << "edge/docs is admitted: its namespace is the one the server host names";
  const std::vector<std::string> warnings = Strings(update.warnings);
  EXPECT_THAT(warnings, ::testing::Contains("edge.yaml:10: VirtualService shop/web: spec.gateways[1]: gateway "
                                            "edge/missing is not defined by any Gateway: these routes reach no "
                                            "gateway proxy [IST0101]"));
  EXPECT_THAT(warnings, ::testing::Contains("edge.yaml:10: VirtualService shop/web: spec.gateways[0]: no server of "
                                            "gateway edge/ingress admits host docs.example.org of this "
                                            "VirtualService (server hosts, and their namespace part): no gateway "
                                            "proxy serves routes for it [IST0132]"));
  EXPECT_THAT(warnings, ::testing::Contains("edge.yaml:10: VirtualService shop/web: "
                                            "spec.http[0].route[0].destination.port: no port.number: at gateway "
                                            "edge/ingress requests go to the gateway's port (8080), which "
                                            "reviews.shop.svc.cluster.local does not have (it has several ports, so "
                                            "give the one to route to) [IST0101]"));
}

// HTTPS servers whose credentialName Secret is missing, or lacks the CA MUTUAL needs, and servers
// a Gateway's listeners leave out, are said on the server; nothing is refused.
TEST(MeshAnalysisTest, GatewaySecretsThatDoNotExistAndServersLeftOutAreReported) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  const ConfigStore::Update update = store.ApplyFile("edge.yaml", R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [a.example.com]
    tls: {mode: SIMPLE, credentialNames: [missing-cert, missing-ec]}
  - port: {number: 443, name: https-b, protocol: HTTPS}
    hosts: [a.example.com]
    tls: {mode: MUTUAL, credentialName: missing-cert}
  - port: {number: 443, name: http, protocol: HTTP}
    hosts: [b.example.com]
  - port: {number: 8443, name: https-c, protocol: HTTPS}
    hosts: [c.example.com]
    tls: {mode: OPTIONAL_MUTUAL, credentialName: missing-cert, caCertCredentialName: missing-ca-cacert}
)");
  EXPECT_THAT(update.errors, IsEmpty()) << "valid config: warned about, not refused";
  EXPECT_THAT(
      Strings(update.warnings),
      ElementsAre("edge.yaml:1: Gateway edge/ingress: spec.servers[0].tls.credentialNames: no Secret "
                  "missing-cert with a certificate and key (tls.crt and tls.key) in any namespace: gateway "
                  "proxies wait for it, and Envoy serves none of the listener's chains meanwhile [IST0101]",
                  "edge.yaml:1: Gateway edge/ingress: spec.servers[0].tls.credentialNames: no Secret "
                  "missing-ec with a certificate and key (tls.crt and tls.key) in any namespace: gateway "
                  "proxies wait for it, and Envoy serves none of the listener's chains meanwhile [IST0101]",
                  "edge.yaml:1: Gateway edge/ingress: spec.servers[1].tls.credentialName: no Secret "
                  "missing-cert with a certificate and key (tls.crt and tls.key) in any namespace: gateway "
                  "proxies wait for it, and Envoy serves none of the listener's chains meanwhile [IST0101]",
                  "edge.yaml:1: Gateway edge/ingress: spec.servers[3].tls.credentialName: no Secret "
                  "missing-cert with a certificate and key (tls.crt and tls.key) in any namespace: gateway "
                  "proxies wait for it, and Envoy serves none of the listener's chains meanwhile [IST0101]",
                  "edge.yaml:1: Gateway edge/ingress: spec.servers[3].tls.caCertCredentialName: mode "
                  "OPTIONAL_MUTUAL needs a CA: no Secret missing-ca-cacert, and Secret missing-ca has no ca.crt (or "
                  "cacert): gateway proxies wait for it [IST0101]",
                  "edge.yaml:1: Gateway edge/ingress: spec.servers[1]: not served: every SNI name of it on "
                  "port 443 is already served by an earlier server (Envoy matches each name once) "
                  "[cxds_gateway_server_left_out]",
                  "edge.yaml:1: Gateway edge/ingress: spec.servers[2]: not served: port 443 already serves "
                  "TLS for an earlier server; cxds serves one kind of server (plain HTTP, plain TCP or TLS) per port "
                  "[cxds_gateway_server_left_out]"));
  EXPECT_EQ(store.WarningCounts()["cxds_gateway_server_left_out"], 2u);
}

// ServiceEntries and Services exported to no namespace are valid and served to no proxy: said
// once each. (VirtualServices and DestinationRules may not be, as Istio validates.)
TEST(MeshAnalysisTest, ServicesExportedToNoNamespaceAreReported) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("hidden.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: hidden, namespace: shop}
spec:
  hosts: [hidden.mesh.local]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.70}]
  exportTo: ["~"]
---
apiVersion: v1
kind: Service
metadata:
  name: quiet
  namespace: shop
  annotations: {networking.istio.io/exportTo: "~"}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: shown, namespace: shop}
spec:
  hosts: [shown.mesh.local]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.71}]
  exportTo: ["."]
)");
  EXPECT_THAT(update.errors, IsEmpty()) << "valid config: warned about, not refused";
  const std::vector<std::string> none = WarningsOf(update.warnings, "cxds_exported_to_none");
  EXPECT_THAT(none, ::testing::UnorderedElementsAre(
                        "hidden.yaml:1: ServiceEntry shop/hidden: spec.exportTo: exported to no namespace (~): no "
                        "proxy gets its hosts, as in Istio [cxds_exported_to_none]",
                        "hidden.yaml:11: Service shop/quiet: metadata.annotations[networking.istio.io/exportTo]: "
                        "exported to no namespace (~): no proxy gets its hosts, as in Istio [cxds_exported_to_none]"));
}

// TLS fields Istio accepts and istiod ignores (a passthrough server's certificates, an HTTP
// server's TLS besides httpsRedirect) are said on the field, not refused.
TEST(MeshAnalysisTest, GatewayTlsFieldsIstiodIgnoresAreReported) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  const ConfigStore::Update update = store.ApplyFile("edge.yaml", R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  servers:
  - port: {number: 443, name: tls, protocol: TLS}
    hosts: [a.example.com]
    tls: {mode: PASSTHROUGH, caCrl: /etc/crl.pem}
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: [b.example.com]
    tls: {httpsRedirect: true, credentialName: c}
)");
  EXPECT_THAT(update.errors, IsEmpty()) << "valid Istio config: warned about, not refused";
  const std::vector<std::string> warnings = Strings(update.warnings);
  EXPECT_THAT(warnings, ::testing::Contains("edge.yaml:1: Gateway edge/ingress: spec.servers[0].tls.caCrl: has no "
                                            "effect with mode PASSTHROUGH, where the gateway does not terminate "
                                            "TLS: ignored, as istiod ignores it [cxds_gateway_tls_ignored]"));
  EXPECT_THAT(warnings, ::testing::Contains("edge.yaml:1: Gateway edge/ingress: spec.servers[1].tls.credentialName: "
                                            "has no effect on a plain-text server of protocol HTTP: ignored, as "
                                            "istiod ignores it [cxds_gateway_tls_ignored]"));
  EXPECT_EQ(store.WarningCounts()["cxds_gateway_tls_ignored"], 2u);
}

// sourceLabels and sourceNamespace of tcp and tls matches that apply at a Gateway are said to
// have no effect there (istiod ignores them); a match for the mesh alone, or naming a Gateway the
// VirtualService is not bound to, is not mentioned.
TEST(MeshAnalysisTest, L4SourceConditionsAtAGatewayAreSaidToHaveNoEffect) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  const ConfigStore::Update update = store.ApplyFile("edge.yaml", R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  servers:
  - port: {number: 31400, name: tcp, protocol: TCP}
    hosts: [db.example.com]
  - port: {number: 443, name: tls, protocol: TLS}
    hosts: [db.example.com]
    tls: {mode: PASSTHROUGH}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: db, namespace: edge}
spec:
  hosts: [db.example.com]
  gateways: [ingress, mesh]
  tcp:
  - match: [{sourceNamespace: shop, gateways: [mesh]}, {sourceLabels: {app: web}}]
    route: [{destination: {host: inventory.mesh.local}}]
  - match: [{sourceLabels: {app: x}, gateways: [edge/other]}]
    route: [{destination: {host: inventory.mesh.local}}]
  tls:
  - match: [{sniHosts: [db.example.com], sourceNamespace: shop, gateways: [ingress]}]
    route: [{destination: {host: inventory.mesh.local}}]
)");
  EXPECT_THAT(update.errors, IsEmpty()) << "valid Istio config: warned about, not refused";
  const std::vector<std::string> ignored = WarningsOf(update.warnings, "cxds_gateway_source_ignored");
  EXPECT_THAT(ignored,
              ::testing::ElementsAre(
                  "edge.yaml:12: VirtualService edge/db: spec.tcp[0].match[1]: sourceLabels has no effect at "
                  "Gateway edge/ingress, where istiod ignores it on tcp matches: there the match applies to "
                  "every gateway proxy [cxds_gateway_source_ignored]",
                  "edge.yaml:12: VirtualService edge/db: spec.tls[0].match[0]: sourceNamespace has no effect at "
                  "Gateway edge/ingress, where istiod ignores it on tls matches: there the match applies to "
                  "every gateway proxy [cxds_gateway_source_ignored]"))
      << "nothing for tcp[1], whose Gateway the VirtualService is not bound to";
}

// Two Gateways that can pick one proxy (one selector within the other) share its listeners: a
// server only that pairing leaves out is said, naming the other Gateway; Gateways that cannot
// meet on a proxy are not compared.
TEST(MeshAnalysisTest, ServersTwoGatewaysLeaveOutTogetherAreReported) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  const ConfigStore::Update update = store.ApplyFile("edge.yaml", R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: a, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: [a.example.com]}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: b, namespace: edge}
spec:
  selector: {istio: ingressgateway, team: web}
  servers: [{port: {number: 8080, name: tcp, protocol: TCP}, hosts: [b.example.com]}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: c, namespace: edge}
spec:
  selector: {istio: egressgateway}
  servers: [{port: {number: 8080, name: tcp, protocol: TCP}, hosts: [b.example.com]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: b, namespace: edge}
spec:
  hosts: [b.example.com]
  gateways: [b, c]
  tcp: [{route: [{destination: {host: reviews.shop.svc.cluster.local, port: {number: 9080}}}]}]
)");
  EXPECT_THAT(update.errors, IsEmpty());
  EXPECT_THAT(Strings(update.warnings),
              ElementsAre("edge.yaml:8: Gateway edge/b: spec.servers[0]: not served on gateway proxies that Gateway "
                          "edge/a also picks: port 8080 already serves plain HTTP for an earlier server; cxds serves "
                          "one kind of server (plain HTTP, plain TCP or TLS) per port [cxds_gateway_server_left_out]"));
}

// One SDS name for two Secrets: the certificate of Secret "shop-cacert" and the CA of Secret "shop"
// are both kubernetes://shop-cacert, and Envoy is sent the first server's. Said of one Gateway's
// servers, and of two Gateways that pick one proxy; each clash once (not again for a pair where the
// Gateway alone, or an earlier pair, has it).
TEST(MeshAnalysisTest, SecretsSentUnderOneSdsNameAreReported) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("edge.yaml", R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: a, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [a.example.com]
    tls: {mode: SIMPLE, credentialName: shop-cacert}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: b, namespace: edge}
spec:
  selector: {istio: ingressgateway, team: web}
  servers:
  - port: {number: 8443, name: https, protocol: HTTPS}
    hosts: [b.example.com]
    tls: {mode: MUTUAL, credentialName: shop}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: c, namespace: edge}
spec:
  selector: {istio: egressgateway}
  servers:
  - port: {number: 8443, name: https, protocol: HTTPS}
    hosts: [c.example.com]
    tls: {mode: MUTUAL, credentialName: shop}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: d, namespace: edge}
spec:
  selector: {app: other}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [d.example.com]
    tls: {mode: SIMPLE, credentialName: web-cacert}
  - port: {number: 9443, name: https-mutual, protocol: HTTPS}
    hosts: [d.example.com]
    tls: {mode: OPTIONAL_MUTUAL, credentialName: web-cert, caCertCredentialName: web}
  - port: {number: 9444, name: https-same, protocol: HTTPS}
    hosts: [e.example.com]
    tls: {mode: SIMPLE, credentialName: web-cacert}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: e, namespace: edge}
spec:
  selector: {istio: ingressgateway, team: web}
  servers:
  - port: {number: 7443, name: https, protocol: HTTPS}
    hosts: [f.example.com]
    tls: {mode: SIMPLE, credentialName: shop-cacert}
  - port: {number: 9443, name: https-mutual, protocol: HTTPS}
    hosts: [f.example.com]
    tls: {mode: OPTIONAL_MUTUAL, credentialName: web2, caCertCredentialName: shop}
)");
  EXPECT_THAT(update.errors, IsEmpty()) << "valid config: warned about, not refused";
  const std::vector<std::string> clashes = WarningsOf(update.warnings, "cxds_gateway_sds_name_clash");
  EXPECT_THAT(clashes,
              ElementsAre("edge.yaml:31: Gateway edge/d: spec.servers[1].tls.caCertCredentialName: not served as "
                          "meant: its CA of Secret web is sent as kubernetes://web-cacert, which Gateway edge/d "
                          "spec.servers[0] already uses for the certificate of Secret web-cacert: Envoy is sent that "
                          "one [cxds_gateway_sds_name_clash]",
                          "edge.yaml:47: Gateway edge/e: spec.servers[1].tls.caCertCredentialName: not served as "
                          "meant: its CA of Secret shop is sent as kubernetes://shop-cacert, which Gateway edge/e "
                          "spec.servers[0] already uses for the certificate of Secret shop-cacert: Envoy is sent that "
                          "one [cxds_gateway_sds_name_clash]",
                          "edge.yaml:11: Gateway edge/b: spec.servers[0].tls.credentialName: not served as meant on "
                          "gateway proxies that both Gateways pick: its CA of Secret shop is sent as "
                          "kubernetes://shop-cacert, which Gateway edge/a spec.servers[0] already uses for the "
                          "certificate of Secret shop-cacert: Envoy is sent that one [cxds_gateway_sds_name_clash]"))
      << "e's clash is said once, alone, not again with a; b's once, with a, not again with e";
  EXPECT_EQ(store.WarningCounts()["cxds_gateway_sds_name_clash"], 3u);
}

// A DestinationRule credentialName's SDS names meet a Gateway server's (which a proxy takes
// first) or another rule's used for another Secret: said on the rule's field, against any
// Gateway's served servers. The same Secret under one name, no CA asked for (insecureSkipVerify),
// or a server left out, is no clash.
TEST(MeshAnalysisTest, RuleCredentialNamesSentUnderAnotherSecretsSdsNameAreReported) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("edge.yaml", R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: a, namespace: edge}
spec:
  selector: {istio: egressgateway}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [a.example.com]
    tls: {mode: SIMPLE, credentialName: shop-cacert}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: r1, namespace: edge}
spec:
  host: shop.example.com
  trafficPolicy:
    tls: {mode: SIMPLE, credentialName: shop}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: r2, namespace: edge}
spec:
  host: web.example.com
  trafficPolicy:
    portLevelSettings:
    - port: {number: 443}
      tls: {mode: MUTUAL, credentialName: web-cacert}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: r3, namespace: edge}
spec:
  host: api.example.com
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy:
      tls: {mode: SIMPLE, credentialName: web}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: r4, namespace: edge}
spec:
  host: db.example.com
  trafficPolicy:
    tls: {mode: SIMPLE, credentialName: shop, insecureSkipVerify: true}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: r5, namespace: edge}
spec:
  host: cache.example.com
  trafficPolicy:
    tls: {mode: SIMPLE, credentialName: web-cacert}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: b, namespace: edge}
spec:
  selector: {istio: egressgateway}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [b.example.com]
    tls: {mode: MUTUAL, credentialName: zed}
  - port: {number: 443, name: https-left-out, protocol: HTTPS}
    hosts: [b.example.com]
    tls: {mode: SIMPLE, credentialName: web2-cacert}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: c, namespace: edge}
spec:
  selector: {istio: other}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [c.example.com]
    tls: {mode: SIMPLE, credentialName: zed-cacert}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: r6, namespace: edge}
spec:
  host: six.example.com
  trafficPolicy:
    tls: {mode: SIMPLE, credentialName: web2}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: r7, namespace: edge}
spec:
  host: seven.example.com
  trafficPolicy:
    tls: {mode: SIMPLE, credentialName: zed}
)");
  EXPECT_THAT(update.errors, IsEmpty()) << "valid config: warned about, not refused";
  const std::vector<std::string> clashes = WarningsOf(update.warnings, "cxds_gateway_sds_name_clash");
  EXPECT_THAT(clashes,
              ElementsAre("edge.yaml:11: DestinationRule edge/r1: spec.trafficPolicy.tls.credentialName: not served "
                          "as meant on gateway proxies that Gateway edge/a spec.servers[0] is of: its CA of Secret "
                          "shop is sent as kubernetes://shop-cacert, which that server already uses for the "
                          "certificate of Secret shop-cacert: Envoy is sent that one [cxds_gateway_sds_name_clash]",
                          "edge.yaml:29: DestinationRule edge/r3: spec.subsets[0].trafficPolicy.tls.credentialName: "
                          "its CA of Secret web is sent as kubernetes://web-cacert, which DestinationRule edge/r2 "
                          "spec.trafficPolicy.portLevelSettings[0].tls.credentialName uses for the certificate of "
                          "Secret web-cacert: a gateway proxy with clusters of both rules is sent one of the two "
                          "(/debug/config_status says which, per proxy) [cxds_gateway_sds_name_clash]",
                          "edge.yaml:87: DestinationRule edge/r7: spec.trafficPolicy.tls.credentialName: not served "
                          "as meant on gateway proxies that Gateway edge/c spec.servers[0] is of: its CA of Secret "
                          "zed is sent as kubernetes://zed-cacert, which that server already uses for the "
                          "certificate of Secret zed-cacert: Envoy is sent that one [cxds_gateway_sds_name_clash]"))
      << "r6 meets only a server left out (which sends nothing); r7 agrees with Gateway b, not with c";
}

// A TCP or passthrough server no route applies to takes no connections, and a tls route match
// whose SNI name another server of the port owns is not routed: both said, on the object.
TEST(MeshAnalysisTest, GatewayTcpAndTlsServersWithoutRoutesAreReported) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  const ConfigStore::Update update = store.ApplyFile("edge.yaml", R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  servers:
  - port: {number: 31400, name: tcp, protocol: TCP}
    hosts: [db.example.com]
  - port: {number: 443, name: tls, protocol: TLS}
    hosts: ["*.example.com"]
    tls: {mode: PASSTHROUGH}
  - port: {number: 443, name: tls-b, protocol: TLS}
    hosts: [b.example.com]
    tls: {mode: PASSTHROUGH}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: edge-tls, namespace: edge}
spec:
  hosts: ["*.example.com"]
  gateways: [ingress]
  tcp:
  - match: [{port: 9999}]
    route: [{destination: {host: reviews.shop.svc.cluster.local, port: {number: 9080}}}]
  tls:
  - match: [{sniHosts: [b.example.com]}]
    route: [{destination: {host: reviews.shop.svc.cluster.local, port: {number: 9080}}}]
  - match: [{sniHosts: [a.example.com, b.example.com]}]
    route: [{destination: {host: reviews.shop.svc.cluster.local, port: {number: 9080}}}]
)");
  EXPECT_THAT(update.errors, IsEmpty()) << "valid config: warned about, not refused";
  // b.example.com of the first match is routed by the second server's chain; the second match
  // finds it taken by then.
  EXPECT_THAT(Strings(update.warnings),
              ElementsAre("edge.yaml:15: VirtualService edge/edge-tls: spec.tls[1].match[0].sniHosts: not served: SNI "
                          "names b.example.com not routed at Gateway edge/ingress port 443: another server of the "
                          "port or an earlier tls route match has them [cxds_gateway_server_left_out]",
                          "edge.yaml:1: Gateway edge/ingress: spec.servers[0]: not served: takes no connections: no "
                          "tcp route of a VirtualService bound to the Gateway, with a host this server admits, "
                          "applies to port 31400 [cxds_gateway_server_left_out]"));
}

// The defect of issue 17: Bookinfo's reviews split by subset over Kubernetes Services, with
// EndpointSlices whose endpoints no Pod labels: every subset cluster is empty. Said, per
// subset; and once the Pods are there, only the subset that still selects nothing.
TEST(MeshAnalysisTest, SubsetsThatSelectNoneOfTheirHostsEndpointsAreReported) {
  ConfigStore store = AnalyzedStore();
  const std::string service = R"(apiVersion: v1
kind: Service
metadata: {name: reviews}
spec:
  selector: {app: reviews}
  ports: [{name: http, port: 9080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: reviews-1, labels: {kubernetes.io/service-name: reviews}}
addressType: IPv4
ports: [{name: http, port: 9080}]
endpoints:
- {addresses: [127.0.0.11], targetRef: {kind: Pod, name: reviews-v1}}
- {addresses: [127.0.0.12], targetRef: {kind: Pod, name: reviews-v2}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews}
spec:
  host: reviews
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
  - {name: v3, labels: {version: v3}}
)";
  ConfigStore::Update update = store.ApplyFile("reviews.yaml", service);
  EXPECT_THAT(update.errors, IsEmpty());
  EXPECT_EQ(store.WarningCounts()["pilot_eds_no_instances"], 3u) << ::testing::PrintToString(Strings(update.warnings));
  EXPECT_THAT(Strings(update.warnings),
              ::testing::Contains("reviews.yaml:17: DestinationRule default/reviews: spec.subsets[0].labels: subset "
                                  "\"v1\" of reviews.default.svc.cluster.local port 9080 selects none of its 2 "
                                  "endpoints (EndpointSlice endpoints carry the labels of the Pod their targetRef "
                                  "names; WorkloadEntries and ServiceEntry endpoints their own; with their "
                                  "locality, cluster and node as topology labels) [pilot_eds_no_instances]"));
  update = store.ApplyFile("pods.yaml", R"(apiVersion: v1
kind: Pod
metadata: {name: reviews-v1, labels: {app: reviews, version: v1}}
status: {podIP: 127.0.0.11}
---
apiVersion: v1
kind: Pod
metadata: {name: reviews-v2, labels: {app: reviews, version: v2}}
status: {podIP: 127.0.0.12}
)");
  EXPECT_EQ(store.WarningCounts()["pilot_eds_no_instances"], 1u);
  bool only_v3 = false;
  for (const auto& status : store.Status()) {
    if (status.path != "reviews.yaml") continue;
    only_v3 = status.warnings.size() == 1 && status.warnings[0].field == "spec.subsets[2].labels";
  }
  EXPECT_TRUE(only_v3) << "v1 and v2 select their Pods now; v3 still nothing";
}

// The analysis judges subsets by the labels endpoints are served with (AugmentLabels): a
// subset of a zone, node or cluster selects its Pods though they carry no such label, and the
// cluster is the one --cluster-id names.
TEST(MeshAnalysisTest, SubsetsSelectByTheTopologyLabelsEndpointsAreGiven) {
  const std::string config = R"(apiVersion: v1
kind: Service
metadata: {name: reviews}
spec:
  ports: [{name: http, port: 9080}]
---
apiVersion: v1
kind: Pod
metadata: {name: reviews-v1, labels: {app: reviews, istio-locality: eu-west.eu-west-1b}}
spec: {nodeName: node-a}
status: {podIP: 127.0.0.11}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: reviews-1, labels: {kubernetes.io/service-name: reviews}}
addressType: IPv4
ports: [{name: http, port: 9080}]
endpoints: [{addresses: [127.0.0.11], targetRef: {kind: Pod, name: reviews-v1}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews}
spec:
  host: reviews
  subsets:
  - {name: zone, labels: {topology.kubernetes.io/zone: eu-west-1b}}
  - {name: node, labels: {kubernetes.io/hostname: node-a}}
  - {name: default-cluster, labels: {topology.istio.io/cluster: Kubernetes}}
  - {name: west, labels: {topology.istio.io/cluster: west}}
)";
  const auto flagged = [&](const std::string& cluster_id) {
    ConfigStore store(ConfigStore::Options{.check_references = MeshReferenceCheck("cluster.local"),
                                           .analyze = MeshAnalyzer("cluster.local", kRootNamespace, cluster_id)});
    const ConfigStore::Update update = store.ApplyFile("reviews.yaml", config);
    EXPECT_THAT(update.errors, IsEmpty());
    std::vector<std::string> fields;
    for (const ConfigError& warning : update.warnings) {
      if (warning.message.find("[pilot_eds_no_instances]") != std::string::npos) fields.push_back(warning.field);
    }
    return fields;
  };
  EXPECT_THAT(flagged(kDefaultClusterId), ElementsAre("spec.subsets[3].labels"));
  EXPECT_THAT(flagged("west"), ElementsAre("spec.subsets[2].labels"));
}

// A DNS ServiceEntry's subsets select among its names (Envoy resolves them); without names,
// its host has no labels, so only a subset without labels selects it.
TEST(MeshAnalysisTest, SubsetsOfDnsServiceEntriesThatSelectNoNameAreReported) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("dns.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db}
spec:
  hosts: [db.example.com]
  ports: [{number: 5432, name: tcp, protocol: TCP}]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: db}
spec:
  host: db.example.com
  subsets: [{name: all}, {name: v1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api}
spec:
  hosts: [api.example.com]
  ports: [{number: 443, name: https, protocol: TLS}]
  resolution: DNS
  endpoints: [{address: eu.api.example.com, locality: eu-west/eu-west-1b}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api}
spec:
  host: api.example.com
  subsets:
  - {name: eu, labels: {topology.kubernetes.io/region: eu-west}}
  - {name: us, labels: {topology.kubernetes.io/region: us-east}}
)");
  EXPECT_THAT(update.errors, IsEmpty());
  std::vector<std::string> flagged;
  for (const ConfigError& warning : update.warnings) {
    if (warning.message.find("[pilot_eds_no_instances]") != std::string::npos) {
      flagged.push_back(warning.object + " " + warning.field);
    }
  }
  EXPECT_THAT(flagged, ::testing::UnorderedElementsAre("DestinationRule default/db spec.subsets[1].labels",
                                                       "DestinationRule default/api spec.subsets[1].labels"));
}

TEST(MeshAnalysisTest, HashKeysProxylessGrpcDoesNotImplementAreReported) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  const ConfigStore::Update update = store.ApplyFile("dr.yaml", R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: inventory}
spec:
  host: inventory.mesh.local
  trafficPolicy: {loadBalancer: {consistentHash: {httpHeaderName: x-user}}}
  subsets:
  - {name: v1, labels: {app: inventory}, trafficPolicy: {loadBalancer: {consistentHash: {useSourceIp: true}}}}
)");
  EXPECT_THAT(Strings(update.warnings),
              ElementsAre("dr.yaml:1: DestinationRule default/inventory: "
                          "spec.subsets[0].trafficPolicy.loadBalancer.consistentHash.useSourceIp: useSourceIp is not "
                          "implemented by proxyless gRPC clients, which hash on headers only: Envoy nodes hash by it, "
                          "gRPC nodes get the ring hash without a key and pick at random [cxds_grpc_ignores]"))
      << "the header hash is honoured by both";
}

// Applies the mesh, then dr.yaml: a DestinationRule for inventory.mesh.local with a subset v1
// and `policies` (its trafficPolicy, then the subset's) as written.
std::vector<std::string> InventoryRuleWarnings(const std::string& policies) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  return Strings(store
                     .ApplyFile("dr.yaml", R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: inventory}
spec:
  host: inventory.mesh.local
)" + policies)
                     .warnings);
}

// A retry budget is Envoy's alone: reported where it is written, the rule's and a subset's.
TEST(MeshAnalysisTest, ARetryBudgetProxylessGrpcDoesNotImplementIsReported) {
  const std::string tail =
      ".retryBudget: a retry budget is not implemented by proxyless gRPC clients: Envoy nodes limit concurrent "
      "retries to the budget, gRPC nodes retry as the route's retry policy says [cxds_grpc_ignores]";
  EXPECT_THAT(InventoryRuleWarnings(R"(  trafficPolicy: {retryBudget: {percent: 10}}
  subsets:
  - {name: v1, labels: {app: inventory}, trafficPolicy: {retryBudget: {}}}
)"),
              ElementsAre("dr.yaml:1: DestinationRule default/inventory: spec.trafficPolicy" + tail,
                          "dr.yaml:1: DestinationRule default/inventory: spec.subsets[0].trafficPolicy" + tail));
}

// Slow start is Envoy's alone: each warmup is reported where it is written, in either form.
TEST(MeshAnalysisTest, AWarmupProxylessGrpcDoesNotImplementIsReported) {
  const std::string tail =
      ": slow start is not implemented by proxyless gRPC clients: Envoy nodes ramp a new endpoint's share up, gRPC "
      "nodes send it its full share at once [cxds_grpc_ignores]";
  EXPECT_THAT(InventoryRuleWarnings(R"(  trafficPolicy:
    loadBalancer: {warmup: {duration: 30s}}
    portLevelSettings: [{port: {number: 8080}, loadBalancer: {warmupDurationSecs: 10s}}]
  subsets:
  - {name: v1, labels: {app: inventory}}
)"),
              ElementsAre("dr.yaml:1: DestinationRule default/inventory: spec.trafficPolicy.loadBalancer.warmup" + tail,
                          "dr.yaml:1: DestinationRule default/inventory: "
                          "spec.trafficPolicy.portLevelSettings[0].loadBalancer.warmupDurationSecs" +
                              tail));
  // Where Envoy has no slow start either (RANDOM, a ring hash), gRPC ignores nothing Envoy does.
  EXPECT_THAT(InventoryRuleWarnings(R"(  trafficPolicy:
    loadBalancer: {simple: RANDOM, warmup: {duration: 30s}}
    portLevelSettings: [{port: {number: 8080}, loadBalancer: {consistentHash: {httpHeaderName: x}, warmupDurationSecs: 1s}}]
  subsets:
  - {name: v1, labels: {app: inventory}}
)"),
              ::testing::IsEmpty());
}

// A tls credentialName serves gateways only: said where it is, on each policy that has one.
TEST(MeshAnalysisTest, ACredentialNameThatSidecarsIgnoreIsReported) {
  EXPECT_THAT(InventoryRuleWarnings(R"(  trafficPolicy:
    portLevelSettings: [{port: {number: 8080}, tls: {mode: MUTUAL, credentialName: egress-cert}}]
  subsets:
  - {name: v1, labels: {app: inventory}, trafficPolicy: {tls: {mode: DISABLE, credentialName: unused}}}
)"),
              ElementsAre("dr.yaml:1: DestinationRule default/inventory: "
                          "spec.trafficPolicy.portLevelSettings[0].tls.credentialName: applies at gateway proxies "
                          "only, as in Istio: sidecars connect without its certificate and check the server against "
                          "their system CA bundle [cxds_gateway_only]"))
      << "under DISABLE it means nothing";
}

// Failover with no outlier detection would never happen: said where it is written, judged with
// the outlier detection the policy gets as merged.
TEST(MeshAnalysisTest, FailoverWithoutOutlierDetectionIsReported) {
  const std::string tail =
      " without outlierDetection: no endpoint is ever ejected, so no proxy fails over where this policy applies; no "
      "priorities are given there, as in istiod [cxds_failover_without_outlier_detection]";
  const std::string at = "dr.yaml:1: DestinationRule default/inventory: ";
  EXPECT_THAT(
      InventoryRuleWarnings(R"(  trafficPolicy:
    loadBalancer: {localityLbSetting: {failoverPriority: [version]}}
    portLevelSettings:
    - {port: {number: 8080}, loadBalancer: {localityLbSetting: {failover: [{from: a, to: b}]}}}
    - {port: {number: 9090}, outlierDetection: {consecutive5xxErrors: 1}, loadBalancer: {localityLbSetting: {failover: [{from: a, to: b}]}}}
  subsets:
  - {name: v1, labels: {app: inventory}, trafficPolicy: {loadBalancer: {localityLbSetting: {failoverPriority: [x], enabled: false}}}}
)"),
      ElementsAre(at + "spec.trafficPolicy.loadBalancer.localityLbSetting: failoverPriority" + tail,
                  at + "spec.trafficPolicy.portLevelSettings[0].loadBalancer.localityLbSetting: failover" + tail))
      << "port settings replace the rule's outlier detection; disabled: nothing to say";
  // A subset's failover under the rule's outlier detection fails over; without any, it does not.
  EXPECT_THAT(InventoryRuleWarnings(R"(  trafficPolicy: {outlierDetection: {consecutive5xxErrors: 1}}
  subsets:
  - {name: v1, labels: {app: inventory}, trafficPolicy: {loadBalancer: {localityLbSetting: {failoverPriority: [x]}}}}
)"),
              ::testing::IsEmpty());
  EXPECT_THAT(
      InventoryRuleWarnings(R"(  subsets:
  - {name: v1, labels: {app: inventory}, trafficPolicy: {loadBalancer: {localityLbSetting: {failoverPriority: [x]}}}}
)"),
      ElementsAre(at + "spec.subsets[0].trafficPolicy.loadBalancer.localityLbSetting: failoverPriority" + tail));

  // Rules merged into the oldest: a newer rule's subset gets the oldest's outlier detection, and a
  // newer rule's own policy is dropped when the oldest has one (so is its outlier detection).
  const auto merged = [](const std::string& old_policy, const std::string& new_policy) {
    ConfigStore store = AnalyzedStore();
    store.ApplyFile("mesh.yaml", kMesh);
    return Strings(store
                       .ApplyFile("dr.yaml", R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: z-old, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  host: inventory.mesh.local
)" + (old_policy.empty() ? "" : "  trafficPolicy: " + old_policy + "\n") +
                                                 R"(---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: a-new, creationTimestamp: "2026-12-01T00:00:00Z"}
spec:
  host: inventory.mesh.local
  trafficPolicy: )" + new_policy + R"(
  subsets:
  - {name: v1, labels: {app: inventory}, trafficPolicy: {loadBalancer: {localityLbSetting: {failoverPriority: [x]}}}}
)")
                       .warnings);
  };
  EXPECT_THAT(merged("{outlierDetection: {consecutive5xxErrors: 1}}", "{connectionPool: {tcp: {maxConnections: 5}}}"),
              IsEmpty())
      << "the subset fails over under the oldest rule's outlier detection";
  EXPECT_THAT(merged("{connectionPool: {tcp: {maxConnections: 5}}}", "{outlierDetection: {consecutive5xxErrors: 1}}"),
              ElementsAre("dr.yaml:8: DestinationRule default/a-new: "
                          "spec.subsets[0].trafficPolicy.loadBalancer.localityLbSetting: failoverPriority" +
                          tail))
      << "the newer rule's outlier detection is not served";
  // The oldest rule has no policy: the merge takes the newer one's, said where it is written.
  EXPECT_THAT(merged("", "{loadBalancer: {localityLbSetting: {failoverPriority: [x]}}}"),
              ElementsAre("dr.yaml:7: DestinationRule default/a-new: "
                          "spec.trafficPolicy.loadBalancer.localityLbSetting: failoverPriority" +
                              tail,
                          "dr.yaml:7: DestinationRule default/a-new: "
                          "spec.subsets[0].trafficPolicy.loadBalancer.localityLbSetting: failoverPriority" +
                              tail));
}

// Applies the mesh, then vs.yaml: a VirtualService for inventory.mesh.local with `http` routes.
ConfigStore::Update ApplyInventoryRoutes(ConfigStore& store, const std::string& http) {
  store.ApplyFile("mesh.yaml", kMesh);
  return store.ApplyFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: inventory}
spec:
  hosts: [inventory.mesh.local]
  http:
)" + http);
}

TEST(MeshAnalysisTest, RoutesProxylessGrpcCannotTakeAreReported) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update =
      ApplyInventoryRoutes(store, R"(  - {match: [{uri: {prefix: /old}}], redirect: {uri: /new}}
  - route: [{destination: {host: inventory.mesh.local}}]
)");
  EXPECT_THAT(Strings(update.warnings),
              ElementsAre("vs.yaml:1: VirtualService default/inventory: spec.http[0]: redirect (the route is left out "
                          "for gRPC): not implemented by proxyless gRPC clients (gRFC A28); Envoy nodes get them, gRPC "
                          "nodes do without [cxds_grpc_ignores]"));
}

// A mirror at 0% is sent to no node, so gRPC nodes miss nothing of it.
TEST(MeshAnalysisTest, AMirrorAtZeroPercentIsNotReportedAsIgnoredByGrpc) {
  for (const auto& [percent, warned] : {std::pair{"5", true}, std::pair{"0", false}}) {
    ConfigStore store = AnalyzedStore();
    const ConfigStore::Update update = ApplyInventoryRoutes(store,
                                                            std::string(R"(  - mirror: {host: inventory.mesh.local}
    mirrorPercentage: {value: )") + percent + R"(}
    route: [{destination: {host: inventory.mesh.local}}]
)");
    EXPECT_EQ(::testing::Matches(::testing::Contains(::testing::HasSubstr("spec.http[0]: mirror: not implemented by "
                                                                          "proxyless gRPC")))(Strings(update.warnings)),
              warned)
        << percent << ": " << ::testing::PrintToString(Strings(update.warnings));
  }
}

// `mirrors` entries are destinations like any other: a missing host is said at its own entry.
TEST(MeshAnalysisTest, AMirrorsEntryToAMissingHostIsReportedWhereItIs) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update =
      ApplyInventoryRoutes(store, R"(  - route: [{destination: {host: inventory.mesh.local}}]
    mirrors:
    - destination: {host: inventory.mesh.local}
    - destination: {host: shadow.mesh.local}
)");
  const std::vector<std::string> warnings = Strings(update.warnings);
  EXPECT_THAT(warnings, ::testing::Contains(::testing::HasSubstr(
                            "spec.http[0].mirrors[1].destination.host: host shadow.mesh.local is not defined")))
      << ::testing::PrintToString(warnings);
  EXPECT_THAT(warnings, ::testing::Not(::testing::Contains(::testing::HasSubstr("mirrors[0]"))));
  EXPECT_THAT(warnings, ::testing::Contains(::testing::HasSubstr(
                            "spec.http[0]: mirrors: not implemented by proxyless gRPC clients (gRFC A28)")));
}

// tls routes are checked as the other routes are: a destination no object defines is IST0101,
// a subset no DestinationRule defines is refused; and an SNI name another service's Envoy
// filter chain already matches is reported on the match that does not get it.
TEST(MeshAnalysisTest, TlsRouteDestinationsAndSniNameConflictsAreChecked) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  const std::string egress = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api, namespace: egress}
spec:
  hosts: [api.example.com, "*.example.com"]
  ports: [{number: 443, name: https, protocol: HTTPS}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.70}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: wide, namespace: egress}
spec:
  hosts: ["*.example.com"]
  tls:
  - match: [{sniHosts: [api.example.com, "*.example.com"]}]
    route: [{destination: {host: api.example.com}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: api, namespace: egress}
spec:
  hosts: [api.example.com]
  tls:
  - match: [{sniHosts: [api.example.com]}]
    route: [{destination: {host: gone.example.com)";
  const ConfigStore::Update update = store.ApplyFile("egress.yaml", egress + "}}]\n");
  EXPECT_THAT(update.errors, IsEmpty());
  const std::vector<std::string> warnings = Strings(update.warnings);
  EXPECT_THAT(warnings, ::testing::Contains(
                            "egress.yaml:19: VirtualService egress/api: spec.tls[0].route[0].destination.host: host "
                            "gone.example.com is not defined by any Service or ServiceEntry: requests routed here "
                            "fail [IST0101]"))
      << ::testing::PrintToString(warnings);
  EXPECT_THAT(warnings, ::testing::Contains(
                            "egress.yaml:19: VirtualService egress/api: spec.tls[0].match[0].sniHosts: SNI name "
                            "api.example.com on port 443 is not routed by this match for Envoy proxies: "
                            "*.example.com has it on port 443 [pilot_conflict_outbound_listener_tcp_over_current_tcp]"))
      << ::testing::PrintToString(warnings);
  EXPECT_EQ(store.WarningCounts().at("pilot_conflict_outbound_listener_tcp_over_current_tcp"), 1u);

  const ConfigStore::Update subset =
      store.ApplyFile("egress.yaml", egress.substr(0, egress.rfind("gone")) + "api.example.com, subset: v9}}]\n");
  ASSERT_EQ(subset.errors.size(), 1u) << Strings(subset.errors)[0];
  EXPECT_EQ(subset.errors[0].field, "spec.tls[0].route[0].destination.subset");
  EXPECT_EQ(subset.errors[0].message,
            "subset \"v9\" of api.example.com is not defined: no DestinationRule has host api.example.com; this "
            "version is refused and the last good one keeps serving");
}

// tls routes apply to TLS and HTTPS ports only: a match that none of the hosts' ports takes
// (a ServiceEntry port without a protocol is HTTP) is said, not silently unused.
TEST(MeshAnalysisTest, TlsRouteMatchesNoTlsPortTakesAreReported) {
  ConfigStore store = AnalyzedStore();
  store.ApplyFile("mesh.yaml", kMesh);
  const ConfigStore::Update update = store.ApplyFile("egress.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api}
spec:
  hosts: [api.example.com, web.example.com]
  ports: [{number: 443, name: https, protocol: HTTPS}, {number: 80, name: http}]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: api}
spec:
  hosts: [api.example.com]
  tls:
  - match: [{sniHosts: [api.example.com]}, {sniHosts: [api.example.com], port: 80}]
    route: [{destination: {host: api.example.com}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: plain}
spec:
  hosts: [inventory.mesh.local]
  tls:
  - match: [{sniHosts: [inventory.mesh.local]}]
    route: [{destination: {host: inventory.mesh.local}}]
)");
  EXPECT_THAT(update.errors, IsEmpty());
  std::vector<std::string> unused;
  for (const std::string& w : Strings(update.warnings)) {
    if (w.find("cxds_tls_route_unused") != std::string::npos) unused.push_back(w);
  }
  EXPECT_THAT(unused,
              ElementsAre("egress.yaml:9: VirtualService default/api: spec.tls[0].match[1]: port 80 is not a TLS or "
                          "HTTPS port of its hosts (tls routes apply to those only; a ServiceEntry port without a "
                          "protocol is HTTP): Envoy proxies never use this match [cxds_tls_route_unused]",
                          "egress.yaml:18: VirtualService default/plain: spec.tls[0].match[0]: no port of its hosts is "
                          "a TLS or HTTPS port (tls routes apply to those only; a ServiceEntry port without a protocol "
                          "is HTTP): Envoy proxies never use this match [cxds_tls_route_unused]"));
}

// A DNS ServiceEntry has its endpoints in its names: not pilot_eds_no_instances.
TEST(MeshAnalysisTest, ADnsServiceEntryIsNotAServiceWithoutEndpoints) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("se.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api}
spec:
  hosts: [api.example.com]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: DNS
)");
  EXPECT_THAT(Strings(update.warnings), ::testing::IsEmpty());
}

TEST(MeshAnalysisTest, KeptWarningsAreBoundedButCountedInFull) {
  ConfigStore store = AnalyzedStore(/*max_warnings=*/3);
  std::string many;
  for (int i = 0; i < 10; ++i) {
    many += "apiVersion: v1\nkind: Service\nmetadata: {name: s" + std::to_string(i) +
            "}\nspec: {ports: [{name: http, port: 80}]}\n---\n";
  }
  const ConfigStore::Update update = store.ApplyFile("many.yaml", many);
  EXPECT_EQ(update.warnings.size(), 3u);
  EXPECT_EQ(store.WarningCounts().at("pilot_eds_no_instances"), 10u);
}

// v1 Endpoints that serve nothing, in istiod as in cxds (of a Service with a selector, which
// Kubernetes does not mirror, or of an ExternalName one, an alias): said; those served are not.
TEST(MeshAnalysisTest, V1EndpointsKubernetesDoesNotMirrorAreSaid) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("ep.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}, ports: [{name: http, port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec: {ports: [{name: sql, port: 5432}]}
---
apiVersion: v1
kind: Service
metadata: {name: alias, namespace: shop}
spec: {type: ExternalName, externalName: db.shop.svc.cluster.local}
---
apiVersion: v1
kind: Endpoints
metadata: {name: web, namespace: shop}
subsets: [{addresses: [{ip: 127.0.0.5}], ports: [{name: http, port: 8080}]}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: db, namespace: shop}
subsets: [{addresses: [{ip: 127.0.0.6}], ports: [{name: sql, port: 5432}]}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: alias, namespace: shop}
subsets: [{addresses: [{ip: 127.0.0.7}], ports: [{port: 5432}]}]
)");
  EXPECT_THAT(update.errors, IsEmpty());
  EXPECT_THAT(
      Strings(update.warnings),
      ::testing::UnorderedElementsAre(
          "ep.yaml:26: Endpoints shop/alias: Service shop/alias is of type ExternalName, an alias of "
          "db.shop.svc.cluster.local with no endpoints of its own: istiod serves none of these addresses, and "
          "neither does cxds [cxds_endpoints_not_mirrored]",
          "ep.yaml:16: Endpoints shop/web: Service shop/web has a selector: Kubernetes does not mirror these Endpoints "
          "to EndpointSlices, so istiod (which reads the slices) serves none of their addresses, and neither does "
          "cxds (the endpoints of web.shop.svc.cluster.local are its slices') [cxds_endpoints_not_mirrored]",
          "ep.yaml:1: Service shop/web: spec.ports[0]: host web.shop.svc.cluster.local port 80 has no endpoints (no "
          "ready endpoint in an EndpointSlice labelled kubernetes.io/service-name: web with a port named \"http\", "
          "and its selector selects no WorkloadEntry in its namespace) [pilot_eds_no_instances]"))
      << "db's Endpoints serve it: no pilot_eds_no_instances for db";
}

// A route to an ExternalName Service that is not served (its target outside the mesh) is said as
// that, beside the alias's own warning, not as a host no Service defines.
TEST(MeshAnalysisTest, ARouteToAnUnservedAliasSaysWhatItIs) {
  ConfigStore store = AnalyzedStore();
  const ConfigStore::Update update = store.ApplyFile("alias.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec: {type: ExternalName, externalName: db.example.com}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: front, namespace: shop}
spec:
  hosts: [front.example.com]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: front, namespace: shop}
spec:
  hosts: [front.example.com]
  http: [{route: [{destination: {host: db, port: {number: 5432}}}]}]
)");
  EXPECT_THAT(update.errors, IsEmpty());
  EXPECT_THAT(Strings(update.warnings),
              ::testing::UnorderedElementsAre(
                  "alias.yaml:1: Service shop/db: spec.externalName: externalName db.example.com is not a host any "
                  "Service or ServiceEntry defines: cxds serves nothing for the alias db.shop.svc.cluster.local "
                  "(clients resolve the name by DNS, outside the mesh's routes) [cxds_alias_unserved]",
                  "alias.yaml:14: VirtualService shop/front: spec.http[0].route[0].destination.host: host "
                  "db.shop.svc.cluster.local is an ExternalName Service that is not served (its cxds_alias_unserved "
                  "warning says why): requests routed here fail [IST0101]"));
}

}  // namespace
}  // namespace cxds
