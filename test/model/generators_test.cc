// The mesh translation through the real pipeline and stream (fake transport): what an Envoy
// node and a proxyless gRPC node are sent for a small mesh, scoping, and which pushes an
// endpoint move and a route change cause.
#include "model/generators.h"

#include <functional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/http/cors/v3/cors.pb.h"
#include "envoy/extensions/filters/http/fault/v3/fault.pb.h"
#include "envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.pb.h"
#include "envoy/extensions/retry/host/previous_hosts/v3/previous_hosts.pb.h"
#include "envoy/extensions/retry/priority/previous_priorities/v3/previous_priorities_config.pb.h"
#include "envoy/extensions/transport_sockets/proxy_protocol/v3/upstream_proxy_protocol.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb.h"
#include "envoy/extensions/upstreams/http/v3/http_protocol_options.pb.h"
#include "fakes/inline_dispatcher.h"
#include "fakes/pgv_check.h"
#include "fakes/stream_harness.h"
#include "fakes/test_pki.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/proxy.h"

namespace cxds::testing {
namespace {

// Labels `node` as an ingress gateway (istio: ingressgateway), which the Gateways of these tests
// select.
void LabelIngressGateway(envoy::config::core::v3::Node& node) {
  auto* labels = (*node.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value();
  (*labels->mutable_fields())["istio"].set_string_value("ingressgateway");
}

// A stream that proved namespace edge and service account ingress (a Secret reader in these tests).
PeerIdentity ProvenEdgeIngress() {
  PeerIdentity proven;
  proven.authenticated = true;
  proven.namespace_name = "edge";
  proven.service_account = "ingress";
  return proven;
}

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
metadata: {name: inventory-v1}
spec: {address: 127.0.0.1, ports: {grpc: 18081}, labels: {app: inventory, version: v1}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: inventory-v2}
spec: {address: 127.0.0.1, ports: {grpc: 18082}, labels: {app: inventory, version: v2}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: inventory}
spec:
  host: inventory.mesh.local
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
---
apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: shop}
spec:
  ports: [{name: http, port: 9080}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: shop}
spec:
  egress: [{hosts: ["./*"]}]
)";

// The head of a VirtualService for inventory.mesh.local, to which tests append `http` routes.
constexpr char kInventoryRoutesHead[] = R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: inventory}
spec:
  hosts: [inventory.mesh.local]
  http:
)";

const std::string kRoutes = std::string(kInventoryRoutesHead) + R"(  - match: [{headers: {x-canary: {exact: "yes"}}}]
    route: [{destination: {host: inventory.mesh.local, subset: v2}}]
  - route:
    - {destination: {host: inventory.mesh.local, subset: v1}, weight: 80}
    - {destination: {host: inventory.mesh.local, subset: v2}, weight: 20}
)";

// Every resource a test decodes is also checked against Envoy's PGV rules (fakes/pgv_check.h):
// what Envoy would refuse on load fails the test that generated it.
// A route configuration is also checked for what Envoy refuses beyond PGV: a domain named twice
// (in any case) across its virtual hosts.
template <typename M>
M Decode(const DiscoveryResponse& response, int i) {
  M message;
  EXPECT_TRUE(response.resources(i).UnpackTo(&message));
  EXPECT_THAT(PgvChecker().Check(message), ::testing::IsEmpty()) << message.DebugString();
  if constexpr (std::is_same_v<M, envoy::config::route::v3::RouteConfiguration>) {
    std::set<std::string> domains;
    for (const auto& vhost : message.virtual_hosts()) {
      for (const std::string& domain : vhost.domains()) {
        EXPECT_TRUE(domains.insert(absl::AsciiStrToLower(domain)).second)
            << "domain " << domain << " named twice in " << message.name();
      }
    }
  }
  return message;
}

// An HTTP ServiceEntry, shop.mesh.local port 8080, for tests to add routes and rules to.
const std::string kShopEntry = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: shop}
spec:
  resolution: STATIC
  hosts: [shop.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
---
)";

// The names of the routes of virtual host `vhost` in `config`.
std::vector<std::string> RouteNames(const envoy::config::route::v3::RouteConfiguration& config,
                                    const std::string& vhost) {
  std::vector<std::string> names;
  for (const auto& host : config.virtual_hosts()) {
    if (host.name() != vhost) continue;
    for (const auto& route : host.routes()) names.push_back(route.name());
  }
  return names;
}

class GeneratorsTest : public ::testing::Test {
 protected:
  // `cluster_id`: the model's (--cluster-id).
  explicit GeneratorsTest(std::string cluster_id = kDefaultClusterId) : cluster_id_(std::move(cluster_id)) {}
  void SetUp() override {
    Apply("mesh.yaml", kMesh);
    Apply("routes.yaml", kRoutes);
    PushPipeline::Options options;
    options.scheduler = &scheduler_;
    options.proxy_filter = MeshProxyFilter(model_);
    options.proxy_update = MeshProxyUpdate(model_);
    pipeline_ = std::make_unique<PushPipeline>(std::shared_ptr<PushContextBuilder>(&model_, [](auto*) {}), options);
    TranslationOptions translation;
    translation.secret_readers = {"edge/ingress", "shop/ingress"};  // gateways that may be sent Secrets
    AddMeshGenerators(*pipeline_, model_, translation);
    PushRequest initial;
    initial.full = true;
    initial.reasons[reason::kConfig] = 1;
    ASSERT_TRUE(pipeline_->Push(initial).ok());
  }
  void Apply(const std::string& file, const std::string& content) {
    auto update = store_.ApplyFile(file, content);
    ASSERT_TRUE(update.errors.empty()) << update.errors.front().ToString();
    last_request_ = model_.OnUpdate(update);
  }
  std::unique_ptr<StreamHarness> Connect(const std::string& id, bool grpc, const std::string& ns = "",
                                         const PeerIdentity& identity = {}) {
    StreamHarnessOptions options;
    options.dispatcher = dispatcher_.get();
    options.identity = identity;
    auto h = std::make_unique<StreamHarness>(*pipeline_, "", nullptr, id, next_stream_++, options);
    node_.set_id(id);
    node_.mutable_metadata()->Clear();
    if (grpc) (*node_.mutable_metadata()->mutable_fields())["GENERATOR"].set_string_value("grpc");
    if (!ns.empty()) (*node_.mutable_metadata()->mutable_fields())["NAMESPACE"].set_string_value(ns);
    return h;
  }
  // What a new stream of the Envoy gateway proxy `id` labelled istio=ingressgateway (and
  // `more_labels`), that proved `identity`, is sent when it first asks for `names` of `type`.
  std::vector<DiscoveryResponse> AskAsIngress(const std::string& id, const std::string& type,
                                              std::vector<std::string> names, const PeerIdentity& identity = {},
                                              const std::map<std::string, std::string>& more_labels = {}) {
    auto h = Connect(id, false, "", identity);
    LabelIngressGateway(node_);
    auto& labels = *(*node_.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value()->mutable_fields();
    for (const auto& [key, value] : more_labels) labels[key].set_string_value(value);
    h->Send(First(type, std::move(names)));
    return h->Take();
  }
  // What a stream of that gateway proxy, holding Secret `name` ACKed, is sent by the push of
  // `change` (which applies config).
  std::vector<DiscoveryResponse> SecretPushedAfter(const std::string& id, const PeerIdentity& identity,
                                                   const std::string& name, const std::function<void()>& change) {
    auto stream = Connect(id, false, "", identity);
    LabelIngressGateway(node_);
    stream->Send(First(std::string(kSecretType), {name}));
    std::vector<DiscoveryResponse> first = stream->Take();
    EXPECT_EQ(first.size(), 1u);
    if (first.size() != 1) return {};
    stream->Send(Ack(first[0], {name}));
    change();
    EXPECT_TRUE(pipeline_->Push(last_request_).ok());
    return stream->Take();
  }
  // The listeners (by name) a gateway proxy `id` labelled istio=ingressgateway is sent.
  std::map<std::string, envoy::config::listener::v3::Listener> IngressListeners(const std::string& id) {
    const auto responses = AskAsIngress(id, std::string(kListenerType), {});
    EXPECT_EQ(responses.size(), 1u);
    std::map<std::string, envoy::config::listener::v3::Listener> listeners;
    for (int i = 0; responses.size() == 1 && i < responses[0].resources_size(); ++i) {
      auto listener = Decode<envoy::config::listener::v3::Listener>(responses[0], i);
      listeners[listener.name()] = listener;
    }
    return listeners;
  }

  // The HTTP connection manager of port 8080's listener (an Envoy node's 127.0.0.1_8080, a gRPC
  // node's inventory.mesh.local:8080) that `proxy`, new, is sent when it asks for it; empty if none.
  envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager ManagerOf8080(
      StreamHarness& proxy, bool grpc) {
    envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
    const std::string listener_name = grpc ? "inventory.mesh.local:8080" : "127.0.0.1_8080";
    proxy.Send(First(std::string(kListenerType), {listener_name}));
    const auto lds = proxy.Take();
    EXPECT_EQ(lds.size(), 1u);
    for (int i = 0; lds.size() == 1 && i < lds[0].resources_size(); ++i) {
      const auto l = Decode<envoy::config::listener::v3::Listener>(lds[0], i);
      if (l.name() != listener_name) continue;
      EXPECT_TRUE(grpc ? l.api_listener().api_listener().UnpackTo(&hcm)
                       : l.filter_chains_size() > 0 && l.filter_chains(0).filters_size() > 0 &&
                             l.filter_chains(0).filters(0).typed_config().UnpackTo(&hcm));
    }
    return hcm;
  }
  DiscoveryRequest First(const std::string& type, std::vector<std::string> names) {
    DiscoveryRequest r = Request(type, std::move(names));
    *r.mutable_node() = node_;
    return r;
  }
  // The endpoint addresses, in order, a new proxyless gRPC client is sent for EDS `cluster`.
  std::vector<std::string> EndpointAddressesFor(const std::string& cluster) {
    auto h = Connect("grpc-client-1", true);
    h->Send(First(std::string(kEndpointType), {cluster}));
    auto eds = h->Take();
    std::vector<std::string> out;
    if (eds.size() != 1 || eds[0].resources_size() != 1) {
      ADD_FAILURE() << "no assignment for " << cluster;
      return out;
    }
    const auto cla = Decode<envoy::config::endpoint::v3::ClusterLoadAssignment>(eds[0], 0);
    for (const auto& locality : cla.endpoints()) {
      for (const auto& lb : locality.lb_endpoints()) out.push_back(lb.endpoint().address().socket_address().address());
    }
    return out;
  }
  // Every cluster, by name, as a new Envoy stream of node `id` receives them (CDS wildcard).
  std::map<std::string, envoy::config::cluster::v3::Cluster> ClustersFor(const std::string& id) {
    return WildcardFor<envoy::config::cluster::v3::Cluster>(id, std::string(kClusterType));
  }
  // The filter chains (ChainsOf) of listener `listener` as a new Envoy sidecar of namespace `ns`
  // labelled app=`app` gets it, or {"no listener"}.
  std::vector<std::string> SidecarChains(const std::string& ns, const std::string& app, const std::string& listener);
  // The config status notes of the gRPC node `id` for what it holds now, each "OBJECT | FIELD |
  // REASON", after "RESOURCE | " when `with_resource`.
  std::vector<std::string> GrpcNotesOf(const std::string& id, bool with_resource) {
    std::vector<std::string> notes;
    const SnapshotPtr view = pipeline_->ProxyView(id);
    const auto* mesh = dynamic_cast<const MeshContext*>(pipeline_->context().get());
    EXPECT_NE(view, nullptr);
    EXPECT_NE(mesh, nullptr);
    if (view == nullptr || mesh == nullptr) return notes;
    for (const ProxyConfigNote& n : GrpcConfigNotes(*mesh, *view, "default")) {
      notes.push_back(
          StrCat(with_resource ? StrCat(n.resource, " | ") : "", n.object, " | ", n.field, " | ", n.reason));
    }
    return notes;
  }
  // Every listener, by name, as a new Envoy stream of node `id` receives them (LDS wildcard).
  std::map<std::string, envoy::config::listener::v3::Listener> ListenersFor(const std::string& id) {
    return WildcardFor<envoy::config::listener::v3::Listener>(id, std::string(kListenerType));
  }
  // Every resource of a wildcard `type`, by name, as a new Envoy stream of node `id` gets them.
  template <typename Message>
  std::map<std::string, Message> WildcardFor(const std::string& id, const std::string& type) {
    auto h = Connect(id, false);
    h->Send(First(type, {}));
    auto responses = h->Take();
    EXPECT_EQ(responses.size(), 1u);
    std::map<std::string, Message> by_name;
    for (int i = 0; !responses.empty() && i < responses[0].resources_size(); ++i) {
      auto resource = Decode<Message>(responses[0], i);
      by_name[resource.name()] = resource;
    }
    return by_name;
  }
  // The route configuration `name` as a new stream of node `id` receives it.
  envoy::config::route::v3::RouteConfiguration RoutesFor(const std::string& id, bool grpc, const std::string& name) {
    auto h = Connect(id, grpc);
    h->Send(First(std::string(kRouteType), {name}));
    auto rds = h->Take();
    EXPECT_EQ(rds.size(), 1u);
    return rds.empty() ? envoy::config::route::v3::RouteConfiguration()
                       : Decode<envoy::config::route::v3::RouteConfiguration>(rds[0], 0);
  }

  // The cluster `name` as a new stream of the gRPC node grpc-client-1 receives it.
  envoy::config::cluster::v3::Cluster GrpcCluster(const std::string& name) {
    auto h = Connect("grpc-client-1", true);
    h->Send(First(std::string(kClusterType), {name}));
    auto cds = h->Take();
    EXPECT_EQ(cds.size(), 1u) << name;
    if (cds.size() != 1 || cds[0].resources_size() != 1) {
      ADD_FAILURE() << "no cluster " << name << " for the gRPC node";
      return {};
    }
    return Decode<envoy::config::cluster::v3::Cluster>(cds[0], 0);
  }

  // The one route of inventory.mesh.local port 8080 as a new Envoy (or gRPC) stream receives it.
  envoy::config::route::v3::Route OnlyInventoryRoute(bool grpc) {
    const auto config = grpc ? RoutesFor("grpc-client-1", true, "inventory.mesh.local:8080")
                             : RoutesFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false, "8080");
    EXPECT_EQ(config.virtual_hosts_size(), 1);
    if (config.virtual_hosts_size() != 1) return {};
    EXPECT_EQ(config.virtual_hosts(0).routes_size(), 1);
    return config.virtual_hosts(0).routes_size() == 1 ? config.virtual_hosts(0).routes(0)
                                                      : envoy::config::route::v3::Route();
  }

  SimulatedScheduler scheduler_;
  ConfigStore store_;
  const std::string cluster_id_;
  MeshModel model_{store_, "cluster.local", kRootNamespace, cluster_id_};
  std::unique_ptr<PushDispatcher> dispatcher_ = InlineDispatcher();
  std::unique_ptr<PushPipeline> pipeline_;
  PushRequest last_request_;
  envoy::config::core::v3::Node node_;
  int64_t next_stream_ = 1;
};

TEST_F(GeneratorsTest, EnvoyGetsIstioNamedClustersListenersAndRoutes) {
  auto envoy = Connect("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false);
  envoy->Send(First(std::string(kClusterType), {}));
  auto cds = envoy->Take();
  ASSERT_EQ(cds.size(), 1u);
  EXPECT_EQ(NamesOf(cds[0]),
            (std::vector<std::string>{"outbound|8080|v1|inventory.mesh.local", "outbound|8080|v2|inventory.mesh.local",
                                      "outbound|8080||inventory.mesh.local",
                                      "outbound|9080||reviews.shop.svc.cluster.local"}));
  envoy->Send(Request(std::string(kListenerType), {}));
  auto lds = envoy->Take();
  ASSERT_EQ(lds.size(), 1u);
  EXPECT_EQ(NamesOf(lds[0]), (std::vector<std::string>{"127.0.0.1_8080", "127.0.0.1_9080"}));
  const auto listener = Decode<envoy::config::listener::v3::Listener>(lds[0], 0);
  envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
  ASSERT_TRUE(listener.filter_chains(0).filters(0).typed_config().UnpackTo(&hcm));
  EXPECT_EQ(hcm.rds().route_config_name(), "8080");
  envoy->Send(Request(std::string(kRouteType), {"8080"}));
  auto rds = envoy->Take();
  ASSERT_EQ(rds.size(), 1u);
  const auto routes = Decode<envoy::config::route::v3::RouteConfiguration>(rds[0], 0);
  ASSERT_EQ(routes.virtual_hosts_size(), 1);
  const auto& vhost = routes.virtual_hosts(0);
  EXPECT_EQ(vhost.domains(0), "inventory.mesh.local");
  ASSERT_EQ(vhost.routes_size(), 2);
  EXPECT_EQ(vhost.routes(0).match().headers(0).name(), "x-canary");
  EXPECT_EQ(vhost.routes(0).match().headers(0).string_match().exact(), "yes");
  EXPECT_EQ(vhost.routes(0).route().cluster(), "outbound|8080|v2|inventory.mesh.local");
  const auto& split = vhost.routes(1).route().weighted_clusters();
  ASSERT_EQ(split.clusters_size(), 2);
  EXPECT_EQ(split.clusters(0).name(), "outbound|8080|v1|inventory.mesh.local");
  EXPECT_EQ(split.clusters(0).weight().value(), 80u);
  EXPECT_EQ(split.clusters(1).weight().value(), 20u);
}

TEST_F(GeneratorsTest, GrpcGetsApiListenersAndSubsetEndpoints) {
  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(First(std::string(kListenerType), {"inventory.mesh.local:8080"}));
  auto lds = grpc->Take();
  ASSERT_EQ(lds.size(), 1u);
  const auto listener = Decode<envoy::config::listener::v3::Listener>(lds[0], 0);
  EXPECT_EQ(listener.name(), "inventory.mesh.local:8080");
  envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
  ASSERT_TRUE(listener.api_listener().api_listener().UnpackTo(&hcm));
  EXPECT_EQ(hcm.rds().route_config_name(), "inventory.mesh.local:8080");
  grpc->Send(Request(std::string(kRouteType), {"inventory.mesh.local:8080"}));
  auto rds = grpc->Take();
  ASSERT_EQ(rds.size(), 1u);
  const auto routes = Decode<envoy::config::route::v3::RouteConfiguration>(rds[0], 0);
  EXPECT_EQ(routes.virtual_hosts(0).domains(0), "inventory.mesh.local:8080");
  grpc->Send(Request(std::string(kEndpointType), {"outbound|8080|v1|inventory.mesh.local"}));
  auto eds = grpc->Take();
  ASSERT_EQ(eds.size(), 1u);
  const auto cla = Decode<envoy::config::endpoint::v3::ClusterLoadAssignment>(eds[0], 0);
  ASSERT_EQ(cla.endpoints(0).lb_endpoints_size(), 1) << "only the v1 workload";
  EXPECT_EQ(cla.endpoints(0).lb_endpoints(0).endpoint().address().socket_address().port_value(), 18081u);
}

// The cluster of the first route of an RDS response's only virtual host.
std::string FirstRouteCluster(const DiscoveryResponse& rds) {
  const auto routes = Decode<envoy::config::route::v3::RouteConfiguration>(rds, 0);
  return routes.virtual_hosts_size() == 1 && routes.virtual_hosts(0).routes_size() > 0
             ? routes.virtual_hosts(0).routes(0).route().cluster()
             : std::string("(no route)");
}

// api.mesh.local, routed to api-canary.mesh.local for clients labelled track: canary, and the
// Pod client-1 (127.0.0.70) of namespace shop labelled track: TRACK.
std::string PodTrackConfig(const std::string& track) {
  return StrCat(R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api, namespace: shop}
spec:
  resolution: STATIC
  hosts: [api.mesh.local, api-canary.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: api, namespace: shop}
spec:
  hosts: [api.mesh.local]
  http:
  - match: [{sourceLabels: {track: canary}}]
    route: [{destination: {host: api-canary.mesh.local}}]
  - route: [{destination: {host: api.mesh.local}}]
---
apiVersion: v1
kind: Pod
metadata: {name: client-1, namespace: shop, labels: {track: )",
                track, R"(}}
status: {podIP: 127.0.0.70}
)");
}

// Who a proxy is comes from its Pod when the registry has it (istiod's SetWorkloadLabels): its
// routes follow the Pod's labels, not its node's. When the Pod's labels change, that proxy alone
// is pushed again, in full (istiod's ProxyUpdate), and gets the routes of its new labels; the
// push needs no new PushContext.
TEST_F(GeneratorsTest, AProxysPodGivesItsLabelsAndAChangeToItPushesThatProxyInFull) {
  Apply("api.yaml", PodTrackConfig("canary"));
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto pod_client = Connect("sidecar~127.0.0.70~client-1.shop~shop.svc.cluster.local", true, "shop");
  pod_client->Send(First(std::string(kRouteType), {"api.mesh.local:8080"}));
  auto rds = pod_client->Take();
  ASSERT_EQ(rds.size(), 1u);
  EXPECT_EQ(FirstRouteCluster(rds[0]), "outbound|8080||api-canary.mesh.local")
      << "the Pod's track, not the node's (none)";
  pod_client->Send(Ack(rds[0], {"api.mesh.local:8080"}));
  auto other_client = Connect("sidecar~127.0.0.71~client-2.shop~shop.svc.cluster.local", true, "shop");
  other_client->Send(First(std::string(kRouteType), {"api.mesh.local:8080"}));
  auto other_rds = other_client->Take();
  ASSERT_EQ(other_rds.size(), 1u);
  EXPECT_EQ(FirstRouteCluster(other_rds[0]), "outbound|8080||api.mesh.local") << "no Pod: the node's labels";
  other_client->Send(Ack(other_rds[0], {"api.mesh.local:8080"}));

  Apply("api.yaml", PodTrackConfig("stable"));
  EXPECT_THAT(last_request_.configs, ::testing::ElementsAre(ConfigKey{kind::kWorkload, "shop", "client-1"}));
  const uint64_t contexts_before = pipeline_->stats().contexts_built;
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  EXPECT_EQ(pipeline_->stats().contexts_built, contexts_before) << "endpoint-only: the context is reused";
  rds = pod_client->Take();
  ASSERT_EQ(rds.size(), 1u) << "the Pod's proxy is pushed its routes again";
  EXPECT_EQ(FirstRouteCluster(rds[0]), "outbound|8080||api.mesh.local");
  EXPECT_TRUE(other_client->Take().empty()) << "nothing changed for a proxy that is not that Pod";
}

// Every type of one generation reads who the proxy is once: a registry change landing between
// two types of a push (here made by a generator run between CDS and RDS) leaves the rest of
// that generation on the identity it started with; the Workload push that follows brings the
// new one, to every type. (Reading the registry per type, RDS would see the Pod relabelled back
// to what the client has, and send nothing.)
TEST_F(GeneratorsTest, OneGenerationReadsWhoTheProxyIsOnce) {
  // Stands in for EDS (pushed between CDS and RDS): when armed, relabels the Pod mid-generation.
  class RelabelOnce final : public Generator {
   public:
    explicit RelabelOnce(std::function<void()> relabel) : relabel_(std::move(relabel)) {}
    absl::StatusOr<std::optional<GeneratedResources>> Generate(const Proxy&, const WatchedResources&,
                                                               const PushRequest&, const GeneratorEnv&) override {
      if (armed) {
        armed = false;
        relabel_();
      }
      return std::nullopt;
    }
    bool armed = false;

   private:
    std::function<void()> relabel_;
  };
  Apply("api.yaml", PodTrackConfig("stable"));
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto relabel = std::make_shared<RelabelOnce>([&] { Apply("api.yaml", PodTrackConfig("stable")); });
  pipeline_->AddGenerator(std::string(kEndpointType), relabel);
  auto client = Connect("sidecar~127.0.0.70~client-1.shop~shop.svc.cluster.local", true, "shop");
  client->Send(First(std::string(kClusterType), {"outbound|8080||api.mesh.local"}));
  auto cds = client->Take();
  ASSERT_EQ(cds.size(), 1u);
  client->Send(Ack(cds[0], {"outbound|8080||api.mesh.local"}));
  client->Send(Request(std::string(kEndpointType), {"outbound|8080||api.mesh.local"}));
  EXPECT_TRUE(client->Take().empty());
  client->Send(Request(std::string(kRouteType), {"api.mesh.local:8080"}));
  auto rds = client->Take();
  ASSERT_EQ(rds.size(), 1u);
  ASSERT_EQ(FirstRouteCluster(rds[0]), "outbound|8080||api.mesh.local");
  client->Send(Ack(rds[0], {"api.mesh.local:8080"}));

  // The Pod becomes canary (its own push held back). A full push: CDS reads the proxy as
  // canary, then the stand-in relabels the Pod stable again, then RDS is generated.
  Apply("api.yaml", PodTrackConfig("canary"));
  relabel->armed = true;
  PushRequest full;
  full.full = true;
  full.forced = true;
  full.reasons[reason::kDebug] = 1;
  ASSERT_TRUE(pipeline_->Push(full).ok());
  EXPECT_FALSE(relabel->armed) << "the stand-in ran";
  bool saw_rds = false;
  for (const DiscoveryResponse& response : client->Take()) {
    if (response.type_url() != kRouteType) continue;
    saw_rds = true;
    EXPECT_EQ(FirstRouteCluster(response), "outbound|8080||api-canary.mesh.local")
        << "RDS of the generation whose CDS saw the Pod as canary";
    client->Send(Ack(response, {"api.mesh.local:8080"}));
  }
  EXPECT_TRUE(saw_rds) << "RDS generated for the canary Pod differs from what the client has";
  // The relabel's own push (a Workload key) then gives the proxy its new identity.
  EXPECT_THAT(last_request_.configs, ::testing::ElementsAre(ConfigKey{kind::kWorkload, "shop", "client-1"}));
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  rds.clear();
  for (const DiscoveryResponse& response : client->Take()) {
    if (response.type_url() == kRouteType) rds.push_back(response);
  }
  ASSERT_EQ(rds.size(), 1u);
  EXPECT_EQ(FirstRouteCluster(rds[0]), "outbound|8080||api.mesh.local");
}

// A proxy that subscribes by name (proxyless gRPC) gets only those generated: its view holds
// what it asked for, not one listener and one cluster per service of the mesh.
TEST_F(GeneratorsTest, GrpcSubscribedByNameIsGeneratedOnlyWhatItNames) {
  Apply("more.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: other}
spec:
  resolution: STATIC
  hosts: [other.mesh.local]
  ports: [{number: 9090, name: grpc, protocol: GRPC}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(First(std::string(kListenerType), {"inventory.mesh.local:8080", "nosuch.mesh.local:1", "no-port"}));
  auto lds = grpc->Take();
  ASSERT_EQ(lds.size(), 1u);
  EXPECT_THAT(NamesOf(lds[0]), ::testing::ElementsAre("inventory.mesh.local:8080"));
  grpc->Send(Ack(lds[0], {"inventory.mesh.local:8080", "nosuch.mesh.local:1", "no-port"}));
  grpc->Send(Request(std::string(kClusterType),
                     {"outbound|8080|v2|inventory.mesh.local", "outbound|8080|v9|inventory.mesh.local"}));
  auto cds = grpc->Take();
  ASSERT_EQ(cds.size(), 1u);
  EXPECT_THAT(NamesOf(cds[0]), ::testing::ElementsAre("outbound|8080|v2|inventory.mesh.local"))
      << "v9 is no subset of the DestinationRule";
  SnapshotPtr view = pipeline_->ProxyView("grpc-client-1");
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->resources(std::string(kListenerType))->items.size(), 1u) << "other.mesh.local:9090 was generated too";
  EXPECT_EQ(view->resources(std::string(kClusterType))->items.size(), 1u);

  // A later subscription adds to what it holds (generated narrowed, from the last push).
  grpc->Send(Ack(cds[0], {"outbound|8080|v2|inventory.mesh.local", "outbound|9090||other.mesh.local"}));
  auto more = grpc->Take();
  ASSERT_EQ(more.size(), 1u);
  EXPECT_THAT(NamesOf(more[0]),
              ::testing::ElementsAre("outbound|8080|v2|inventory.mesh.local", "outbound|9090||other.mesh.local"));
}

// Istio selects a port's protocol by appProtocol and name: an opaque port gets Envoy's TCP
// proxy to its service's cluster, not an HTTP connection manager; two opaque services on one
// port cannot both be told apart by one listener, so the first by host keeps it (and the other
// is logged as a conflict), and an HTTP service on that port takes it. gRPC nodes are sent
// none of them (gRPC speaks HTTP/2 only).
TEST_F(GeneratorsTest, OpaquePortsGetATcpProxyListenerForEnvoyAndNothingForGrpc) {
  Apply("tcp.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: mysql, namespace: shop}
spec:
  ports: [{name: tcp-mysql, port: 3306}, {name: admin, port: 9080, appProtocol: mongo}]
---
apiVersion: v1
kind: Service
metadata: {name: replica, namespace: shop}
spec:
  ports: [{name: mysql, port: 3306, appProtocol: tcp}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto context = std::dynamic_pointer_cast<const MeshContext>(pipeline_->context());
  ASSERT_NE(context, nullptr);
  ASSERT_EQ(context->OpaqueChains(3306).size(), 1u);
  EXPECT_EQ(context->OpaqueChains(3306)[0].host, "mysql.shop.svc.cluster.local");
  EXPECT_TRUE(context->OpaqueChains(3306)[0].server_names.empty()) << "TCP: every connection";
  EXPECT_TRUE(context->OpaqueChains(9080).empty()) << "reviews serves HTTP on 9080";
  std::vector<std::string> conflicts;
  for (const ConfigWarning& w : context->findings())
    conflicts.push_back(w.key.name + ": " + w.message + " [" + w.code + "]");
  EXPECT_THAT(conflicts,
              ::testing::ElementsAre("mysql: MONGO port 9080 of mysql.shop.svc.cluster.local is not served to Envoy "
                                     "proxies: an HTTP service has port 9080 "
                                     "[pilot_conflict_outbound_listener_tcp_over_current_http]",
                                     "replica: TCP port 3306 of replica.shop.svc.cluster.local is not served to Envoy "
                                     "proxies: mysql.shop.svc.cluster.local has port 3306 "
                                     "[pilot_conflict_outbound_listener_tcp_over_current_tcp]"));

  auto envoy = Connect("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false);
  envoy->Send(First(std::string(kListenerType), {}));
  auto lds = envoy->Take();
  ASSERT_EQ(lds.size(), 1u);
  ASSERT_EQ(NamesOf(lds[0]), (std::vector<std::string>{"127.0.0.1_3306", "127.0.0.1_8080", "127.0.0.1_9080"}));
  const auto tcp_listener = Decode<envoy::config::listener::v3::Listener>(lds[0], 0);
  const auto& filter = tcp_listener.filter_chains(0).filters(0);
  EXPECT_EQ(filter.name(), "envoy.filters.network.tcp_proxy");
  envoy::extensions::filters::network::tcp_proxy::v3::TcpProxy tcp;
  ASSERT_TRUE(filter.typed_config().UnpackTo(&tcp));
  EXPECT_EQ(tcp.cluster(), "outbound|3306||mysql.shop.svc.cluster.local");
  EXPECT_FALSE(tcp.stat_prefix().empty()) << "Envoy's PGV rule: stat_prefix min_len 1";
  envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
  EXPECT_TRUE(
      Decode<envoy::config::listener::v3::Listener>(lds[0], 2).filter_chains(0).filters(0).typed_config().UnpackTo(
          &hcm))
      << "9080 stays HTTP";

  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(First(std::string(kListenerType), {}));
  auto grpc_lds = grpc->Take();
  ASSERT_EQ(grpc_lds.size(), 1u);
  for (const std::string& name : NamesOf(grpc_lds[0])) {
    EXPECT_EQ(name.find("mysql"), std::string::npos) << name;
    EXPECT_EQ(name.find("replica"), std::string::npos) << name;
  }
}

// Service mysql of namespace shop (TCP port 3306 and `more_ports`) with subsets primary and
// replica.
std::string MysqlService(const std::string& more_ports) {
  return absl::StrReplaceAll(R"(apiVersion: v1
kind: Service
metadata: {name: mysql, namespace: shop}
spec:
  ports: [{name: tcp-mysql, port: 3306}PORTS]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: mysql, namespace: shop}
spec:
  host: mysql
  subsets: [{name: primary, labels: {role: primary}}, {name: replica, labels: {role: replica}}]
---
)",
                             {{"PORTS", more_ports}});
}

// tcp routes: the TCP proxy of the host's port goes to the route's destinations, weighted, as
// Istio's TCP routing; the first route matching the port wins.
TEST_F(GeneratorsTest, TcpRoutesWeightTheTcpProxyOfTheirPort) {
  Apply("tcp.yaml", MysqlService(", {name: tcp-admin, port: 3307}") + R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: mysql, namespace: shop}
spec:
  hosts: [mysql]
  tcp:
  - match: [{port: 3307}]
    route: [{destination: {host: mysql, subset: primary}}]
  - route:
    - {destination: {host: mysql, subset: primary}, weight: 70}
    - {destination: {host: mysql, subset: replica}, weight: 30}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto envoy = Connect("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false);
  envoy->Send(First(std::string(kListenerType), {}));
  auto lds = envoy->Take();
  ASSERT_EQ(lds.size(), 1u);
  ASSERT_EQ(NamesOf(lds[0]),
            (std::vector<std::string>{"127.0.0.1_3306", "127.0.0.1_3307", "127.0.0.1_8080", "127.0.0.1_9080"}));
  const auto tcp_of = [&](int i) {
    envoy::extensions::filters::network::tcp_proxy::v3::TcpProxy tcp;
    EXPECT_TRUE(
        Decode<envoy::config::listener::v3::Listener>(lds[0], i).filter_chains(0).filters(0).typed_config().UnpackTo(
            &tcp));
    return tcp;
  };
  const auto split = tcp_of(0);
  ASSERT_EQ(split.weighted_clusters().clusters_size(), 2);
  EXPECT_EQ(split.weighted_clusters().clusters(0).name(), "outbound|3306|primary|mysql.shop.svc.cluster.local");
  EXPECT_EQ(split.weighted_clusters().clusters(0).weight(), 70u);
  EXPECT_EQ(split.weighted_clusters().clusters(1).name(), "outbound|3306|replica|mysql.shop.svc.cluster.local");
  EXPECT_EQ(split.weighted_clusters().clusters(1).weight(), 30u);
  EXPECT_EQ(tcp_of(1).cluster(), "outbound|3307|primary|mysql.shop.svc.cluster.local") << "the route matching 3307";
}

// A TCP proxy takes from the DestinationRule its proxy gets for the destination's service what
// istiod's takes: the rule's own tcp idleTimeout and maxConnectionDuration (not a port's), a hash
// by source IP (unless the destination's subset has a loadBalancer of its own), and the tunnel, a
// single destination's subset's, else the rule's, a split's the rule's. A rule exported to its
// own namespace reaches its proxies only, which then do not share the listener with the others.
TEST_F(GeneratorsTest, TcpProxiesTakeTheirDestinationRulesTcpSettingsAndTunnel) {
  Apply("tcp.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: mysql, namespace: shop}
spec:
  ports: [{name: tcp-a, port: 3306}, {name: tcp-b, port: 3307}, {name: tcp-c, port: 3308}, {name: tcp-d, port: 3309}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: mysql, namespace: shop}
spec:
  host: mysql
  exportTo: ["."]
  trafficPolicy:
    connectionPool: {tcp: {idleTimeout: 30m, maxConnectionDuration: 2h}}
    loadBalancer: {consistentHash: {useSourceIp: true}}
    tunnel: {targetHost: egress.example.com, targetPort: 3128}
    portLevelSettings:
    - port: {number: 3306}
      connectionPool: {tcp: {idleTimeout: 1m}}
  subsets:
  - name: primary
    labels: {role: primary}
    trafficPolicy: {tunnel: {protocol: POST, targetHost: "::1", targetPort: 8443}}
  - name: replica
    labels: {role: replica}
    trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: mysql, namespace: shop}
spec:
  hosts: [mysql]
  tcp:
  - match: [{port: 3307}]
    route: [{destination: {host: mysql, subset: primary}}]
  - match: [{port: 3308}]
    route: [{destination: {host: mysql, subset: replica}}]
  - match: [{port: 3309}]
    route:
    - {destination: {host: mysql, subset: primary}, weight: 50}
    - {destination: {host: mysql, subset: replica}, weight: 50}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using envoy::extensions::filters::network::tcp_proxy::v3::TcpProxy;
  const auto proxies_of = [&](const std::string& id, const std::string& idle_timeout = "") {
    auto envoy = Connect(id, false);
    if (!idle_timeout.empty()) {
      (*node_.mutable_metadata()->mutable_fields())["IDLE_TIMEOUT"].set_string_value(idle_timeout);
    }
    envoy->Send(First(std::string(kListenerType), {}));
    auto lds = envoy->Take();
    std::map<uint32_t, TcpProxy> out;
    for (int i = 0; lds.size() == 1 && i < lds[0].resources_size(); ++i) {
      const auto listener = Decode<envoy::config::listener::v3::Listener>(lds[0], i);
      const uint32_t port = listener.address().socket_address().port_value();
      if (port < 3306 || port > 3309) continue;
      EXPECT_EQ(listener.filter_chains_size(), 1) << listener.name();
      TcpProxy tcp;
      EXPECT_TRUE(listener.filter_chains(0).filters(0).typed_config().UnpackTo(&tcp)) << listener.name();
      EXPECT_THAT(PgvChecker().Check(tcp), ::testing::IsEmpty()) << tcp.DebugString();
      out[port] = tcp;
    }
    EXPECT_EQ(out.size(), 4u);
    return out;
  };
  const auto hashes_by_source = [](const TcpProxy& tcp) {
    return tcp.hash_policy_size() == 1 && tcp.hash_policy(0).has_source_ip();
  };

  std::map<uint32_t, TcpProxy> shop = proxies_of("sidecar~127.0.0.6~app-2.shop~shop.svc.cluster.local");
  // 3306, the service's own chain: the rule's settings, its port's idle timeout not taken.
  EXPECT_EQ(shop[3306].cluster(), "outbound|3306||mysql.shop.svc.cluster.local");
  EXPECT_EQ(shop[3306].idle_timeout().seconds(), 1800);
  EXPECT_EQ(shop[3306].max_downstream_connection_duration().seconds(), 7200);
  EXPECT_TRUE(hashes_by_source(shop[3306]));
  EXPECT_EQ(shop[3306].tunneling_config().hostname(), "egress.example.com:3128");
  EXPECT_FALSE(shop[3306].tunneling_config().use_post());
  // 3307, to subset primary: its own tunnel (POST, an IPv6 target in brackets); no load balancer
  // of its own, so the rule's hash.
  EXPECT_EQ(shop[3307].cluster(), "outbound|3307|primary|mysql.shop.svc.cluster.local");
  EXPECT_EQ(shop[3307].tunneling_config().hostname(), "[::1]:8443");
  EXPECT_TRUE(shop[3307].tunneling_config().use_post());
  EXPECT_TRUE(hashes_by_source(shop[3307]));
  EXPECT_EQ(shop[3307].idle_timeout().seconds(), 1800);
  // 3308, to subset replica: a policy without a tunnel (the rule's is not inherited, as in
  // istiod) and a load balancer of its own (no hash).
  EXPECT_EQ(shop[3308].cluster(), "outbound|3308|replica|mysql.shop.svc.cluster.local");
  EXPECT_FALSE(shop[3308].has_tunneling_config());
  EXPECT_EQ(shop[3308].hash_policy_size(), 0);
  EXPECT_EQ(shop[3308].max_downstream_connection_duration().seconds(), 7200);
  // 3309, a split: the rule's tunnel and hash.
  EXPECT_EQ(shop[3309].weighted_clusters().clusters_size(), 2);
  EXPECT_EQ(shop[3309].tunneling_config().hostname(), "egress.example.com:3128");
  EXPECT_TRUE(hashes_by_source(shop[3309]));

  // A proxy of another namespace does not get the rule: none of it, and its listeners are its own.
  std::map<uint32_t, TcpProxy> other = proxies_of("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  for (const auto& [port, tcp] : other) {
    EXPECT_FALSE(tcp.has_tunneling_config()) << port;
    EXPECT_FALSE(tcp.has_idle_timeout()) << port;
    EXPECT_FALSE(tcp.has_max_downstream_connection_duration()) << port;
    EXPECT_EQ(tcp.hash_policy_size(), 0) << port;
  }

  // A proxy's IDLE_TIMEOUT (node metadata, a Go duration) where its rule gives no tcp idleTimeout,
  // as istiod's fallback; proxies of other values get listeners of their own.
  for (const auto& [port, tcp] : proxies_of("sidecar~127.0.0.4~app-3.default~default.svc.cluster.local", "1h30m")) {
    EXPECT_EQ(tcp.idle_timeout().seconds(), 5400) << port;
  }
  for (const auto& [port, tcp] : proxies_of("sidecar~127.0.0.3~app-4.default~default.svc.cluster.local", "soon")) {
    EXPECT_FALSE(tcp.has_idle_timeout()) << port << ": not a duration";
  }
  shop = proxies_of("sidecar~127.0.0.2~app-5.shop~shop.svc.cluster.local", "10s");
  EXPECT_EQ(shop[3306].idle_timeout().seconds(), 1800) << "the rule's first";
}

// tcp matches with sourceLabels and sourceNamespace, as Istio's sourceMatchTCP: a sidecar
// meeting them gets that route's TCP proxy, the others the next route; proxies meeting the
// same conditions share the listener.
TEST_F(GeneratorsTest, TcpRouteSourceConditionsChooseEachSidecarsTcpProxy) {
  Apply("tcp.yaml", MysqlService("") + R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: mysql, namespace: shop}
spec:
  hosts: [mysql]
  tcp:
  - match: [{sourceLabels: {app: writer}}, {sourceNamespace: admin}]
    route: [{destination: {host: mysql, subset: primary}}]
  - match: [{port: 3306, sourceLabels: {app: auditor}}, {port: 9999}]  # conditional on this port
    route: [{destination: {host: mysql}}]
  - match: [{sourceLabels: {app: x}}, {port: 3306}]  # a match for every proxy: the default
    route: [{destination: {host: mysql, subset: replica}}]
  - match: [{sourceLabels: {app: late}}]  # after the default: never chosen
    route: [{destination: {host: mysql, subset: primary}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  // The cluster of port 3306's TCP proxy as a sidecar of `ns` with label app=`app` gets it.
  const auto cluster_for = [&](const std::string& id, const std::string& ns, const std::string& app) {
    auto h = Connect(id, false, ns);
    auto* labels = (*node_.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value();
    (*labels->mutable_fields())["app"].set_string_value(app);
    h->Send(First(std::string(kListenerType), {}));
    auto lds = h->Take();
    for (int i = 0; lds.size() == 1 && i < lds[0].resources_size(); ++i) {
      const auto listener = Decode<envoy::config::listener::v3::Listener>(lds[0], i);
      if (listener.name() != "127.0.0.1_3306") continue;
      envoy::extensions::filters::network::tcp_proxy::v3::TcpProxy tcp;
      EXPECT_TRUE(listener.filter_chains(0).filters(0).typed_config().UnpackTo(&tcp));
      return tcp.cluster();
    }
    ADD_FAILURE() << "no listener for 3306";
    return std::string();
  };
  EXPECT_EQ(cluster_for("sidecar~127.0.0.5~w-1.shop~shop.svc.cluster.local", "shop", "writer"),
            "outbound|3306|primary|mysql.shop.svc.cluster.local");
  EXPECT_EQ(cluster_for("sidecar~127.0.0.6~r-1.shop~shop.svc.cluster.local", "shop", "reader"),
            "outbound|3306|replica|mysql.shop.svc.cluster.local");
  EXPECT_EQ(cluster_for("sidecar~127.0.0.7~a-1.admin~admin.svc.cluster.local", "admin", "reader"),
            "outbound|3306|primary|mysql.shop.svc.cluster.local")
      << "its namespace meets the second match";
  EXPECT_EQ(cluster_for("sidecar~127.0.0.8~w-2.shop~shop.svc.cluster.local", "shop", "writer"),
            "outbound|3306|primary|mysql.shop.svc.cluster.local")
      << "a second writer, as the first";
  EXPECT_EQ(cluster_for("sidecar~127.0.0.9~au-1.shop~shop.svc.cluster.local", "shop", "auditor"),
            "outbound|3306||mysql.shop.svc.cluster.local")
      << "a route conditional on this port (its other match is for another port)";
  EXPECT_EQ(cluster_for("sidecar~127.0.0.10~l-1.shop~shop.svc.cluster.local", "shop", "late"),
            "outbound|3306|replica|mysql.shop.svc.cluster.local")
      << "a route after the one for every proxy is never chosen, as in istiod";
}

template <typename Value>
std::vector<std::string> KeysOf(const std::map<std::string, Value>& by_name) {
  std::vector<std::string> keys;
  for (const auto& entry : by_name) keys.push_back(entry.first);
  return keys;
}

// The filter chains of an opaque listener, decoded: SNI names -> the TCP proxy's cluster, or
// "weighted:" its weighted clusters ("" names: the catch-all chain).
std::vector<std::string> ChainsOf(const envoy::config::listener::v3::Listener& listener) {
  std::vector<std::string> out;
  for (const auto& chain : listener.filter_chains()) {
    envoy::extensions::filters::network::tcp_proxy::v3::TcpProxy tcp;
    EXPECT_EQ(chain.filters_size(), 1);
    EXPECT_EQ(chain.filters(0).name(), "envoy.filters.network.tcp_proxy");
    EXPECT_TRUE(chain.filters(0).typed_config().UnpackTo(&tcp));
    std::string to = tcp.cluster();
    for (const auto& weighted : tcp.weighted_clusters().clusters()) {
      to += StrCat(to.empty() ? "weighted: " : ", ", weighted.name(), " ", weighted.weight());
    }
    out.push_back(StrCat(absl::StrJoin(chain.filter_chain_match().server_names(), ","), " -> ", to));
  }
  return out;
}

std::vector<std::string> GeneratorsTest::SidecarChains(const std::string& ns, const std::string& app,
                                                       const std::string& listener) {
  auto h = Connect(StrCat("sidecar~127.0.0.5~app-1.", ns, "~", ns, ".svc.cluster.local"), false, ns);
  auto* labels = (*node_.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value();
  (*labels->mutable_fields())["app"].set_string_value(app);
  h->Send(First(std::string(kListenerType), {}));
  auto lds = h->Take();
  for (int i = 0; lds.size() == 1 && i < lds[0].resources_size(); ++i) {
    const auto decoded = Decode<envoy::config::listener::v3::Listener>(lds[0], i);
    if (decoded.name() == listener) return ChainsOf(decoded);
  }
  return {"no listener"};
}

constexpr char kEgress[] = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: cdn, namespace: egress}
spec:
  hosts: ["*.cdn.example.com"]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.60}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: img, namespace: egress}
spec:
  hosts: [img.cdn.example.com]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.61}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: pay, namespace: egress}
spec:
  hosts: [pay.example.com]
  ports: [{number: 443, name: https, protocol: HTTPS}]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: search, namespace: egress}
spec:
  hosts: [search.example.com, maps.example.com]
  ports: [{number: 443, name: https, protocol: HTTPS}, {number: 8443, name: tls-alt, protocol: TLS}]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: maps, namespace: egress}
spec:
  host: maps.example.com
  subsets: [{name: v2, labels: {version: v2}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: search, namespace: egress}
spec:
  hosts: [search.example.com, maps.example.com]
  tls:
  - match: [{sniHosts: [search.example.com], port: 443}]
    route:
    - {destination: {host: search.example.com}, weight: 70}
    - {destination: {host: maps.example.com}, weight: 30}
  - match: [{sniHosts: [maps.example.com]}]
    route: [{destination: {host: maps.example.com, subset: v2}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: mail, namespace: shop}
spec:
  hosts: [mail.example.com]
  ports: [{number: 443, name: smtps, protocol: TCP}]
  resolution: DNS
)";

// A TLS ServiceEntry under kEgress's "*.cdn.example.com".
constexpr char kStaticCdn[] = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: static, namespace: egress}
spec:
  hosts: [static.cdn.example.com]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.62}]
)";

// Istio's sidecar outbound TLS: the listener of a port with TLS or HTTPS services reads the SNI
// name (TLS inspector) and has a filter chain per name: a service's own host (a wildcard host
// as Envoy's "*." server name) to its cluster, or its VirtualService's tls route matches for
// that port to their destinations, weighted; one other opaque service takes what no name
// matches. So several HTTPS ServiceEntries share 443. gRPC nodes get no opaque ports.
TEST_F(GeneratorsTest, TlsPortsGetAFilterChainPerSniNameAndTlsRoutesChooseTheirDestinations) {
  Apply("egress.yaml", kEgress);
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto context = std::dynamic_pointer_cast<const MeshContext>(pipeline_->context());
  ASSERT_NE(context, nullptr);
  EXPECT_TRUE(context->findings().empty()) << context->findings()[0].message;

  auto listeners = ListenersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  ASSERT_EQ(KeysOf(listeners),
            (std::vector<std::string>{"127.0.0.1_443", "127.0.0.1_8080", "127.0.0.1_8443", "127.0.0.1_9080"}));
  const auto& tls = listeners["127.0.0.1_443"];
  ASSERT_EQ(tls.listener_filters_size(), 1);
  EXPECT_EQ(tls.listener_filters(0).name(), "envoy.filters.listener.tls_inspector");
  EXPECT_TRUE(tls.listener_filters(0)
                  .typed_config()
                  .Is<envoy::extensions::filters::listener::tls_inspector::v3::TlsInspector>());
  EXPECT_TRUE(tls.continue_on_listener_filters_timeout()) << "the catch-all serves clients that send nothing first";
  EXPECT_THAT(ChainsOf(tls),
              ::testing::ElementsAre("*.cdn.example.com -> outbound|443||*.cdn.example.com",
                                     "img.cdn.example.com -> outbound|443||img.cdn.example.com",
                                     " -> outbound|443||mail.example.com",
                                     "search.example.com -> weighted: outbound|443||search.example.com 70, "
                                     "outbound|443||maps.example.com 30",
                                     "maps.example.com -> outbound|443|v2|maps.example.com",
                                     "pay.example.com -> outbound|443||pay.example.com"));
  // On 8443 only the match without a port applies; the VirtualService decides for both hosts
  // (as in istiod, search.example.com has no chain of its own there).
  EXPECT_THAT(ChainsOf(listeners["127.0.0.1_8443"]),
              ::testing::ElementsAre("maps.example.com -> outbound|8443|v2|maps.example.com"));

  // A Sidecar scoping the proxy to its namespace: only mail, the catch-all, and no inspector.
  auto scoped = ListenersFor("sidecar~127.0.0.6~web-1.shop~shop.svc.cluster.local");
  ASSERT_EQ(KeysOf(scoped), (std::vector<std::string>{"127.0.0.1_443", "127.0.0.1_9080"}));
  const auto& scoped_tls = scoped["127.0.0.1_443"];
  EXPECT_EQ(scoped_tls.listener_filters_size(), 0);
  EXPECT_THAT(ChainsOf(scoped_tls), ::testing::ElementsAre(" -> outbound|443||mail.example.com"));

  // The clusters the chains name exist for Envoy; gRPC nodes get none of it.
  std::map<std::string, envoy::config::cluster::v3::Cluster> clusters =
      ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  for (const char* name : {"outbound|443||*.cdn.example.com", "outbound|443||search.example.com",
                           "outbound|443|v2|maps.example.com", "outbound|8443|v2|maps.example.com"}) {
    EXPECT_TRUE(clusters.contains(name)) << name;
  }
  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(First(std::string(kListenerType), {"maps.example.com:443", "pay.example.com:443"}));
  auto grpc_lds = grpc->Take();
  ASSERT_EQ(grpc_lds.size(), 1u);
  EXPECT_EQ(grpc_lds[0].resources_size(), 0) << "opaque ports are Envoy-only";
}

// Two chains cannot match one SNI name (Envoy refuses the listener): the first by host keeps
// it, the other is a finding, like two TCP services on a port. A tls route match that applies
// to the port decides for its host, so the host's own name is not added beside it.
TEST_F(GeneratorsTest, AnSniNameTwoServicesClaimGoesToTheFirstByHost) {
  Apply("egress.yaml", std::string(kEgress) + R"(---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: cdn, namespace: egress}
spec:
  hosts: ["*.cdn.example.com"]
  tls:
  - match: [{sniHosts: [img.cdn.example.com, static.cdn.example.com, "*.cdn.example.com"]}]
    route: [{destination: {host: img.cdn.example.com}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: img, namespace: egress}
spec:
  hosts: [img.cdn.example.com]
  tls:
  - match: [{sniHosts: [img.cdn.example.com]}]
    route: [{destination: {host: img.cdn.example.com}}]
---
)" + std::string(kStaticCdn) +
                           R"(---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: relay, namespace: egress}
spec:
  hosts: [relay.example.com]
  ports: [{number: 443, name: tcp, protocol: TCP}]
  resolution: DNS
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto context = std::dynamic_pointer_cast<const MeshContext>(pipeline_->context());
  ASSERT_NE(context, nullptr);
  std::vector<std::string> conflicts;
  for (const ConfigWarning& w : context->findings()) {
    conflicts.push_back(StrCat(w.key.ToString(), " ", w.field, ": ", w.message, " [", w.code, "]"));
  }
  EXPECT_THAT(conflicts,
              ::testing::ElementsAre(
                  "VirtualService/egress/img spec.tls[0].match[0].sniHosts: SNI name img.cdn.example.com on port "
                  "443 is not routed by this match for Envoy proxies: *.cdn.example.com has it on port 443 "
                  "[pilot_conflict_outbound_listener_tcp_over_current_tcp]",
                  "ServiceEntry/egress/relay : TCP port 443 of relay.example.com is not served to Envoy proxies: "
                  "mail.example.com has port 443 [pilot_conflict_outbound_listener_tcp_over_current_tcp]",
                  "ServiceEntry/egress/static : TLS port 443 of static.cdn.example.com is not served to Envoy "
                  "proxies for SNI name static.cdn.example.com: *.cdn.example.com has it on port 443 "
                  "[pilot_conflict_outbound_listener_tcp_over_current_tcp]"));
  EXPECT_THAT(
      ChainsOf(ListenersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local")["127.0.0.1_443"]),
      ::testing::ElementsAre(
          "img.cdn.example.com,static.cdn.example.com,*.cdn.example.com -> outbound|443||img.cdn.example.com",
          " -> outbound|443||mail.example.com",
          "search.example.com -> weighted: outbound|443||search.example.com 70, "
          "outbound|443||maps.example.com 30",
          "maps.example.com -> outbound|443|v2|maps.example.com", "pay.example.com -> outbound|443||pay.example.com"));
}

// tls matches with sourceLabels and sourceNamespace, as Istio's matchTLS: a sidecar meeting them
// gets that match's chain, first for its names (a later host's chain for a name it has is left
// out for that sidecar, and is not a conflict); a host whose every match has conditions keeps its
// own chain for the sidecars meeting none; sidecars meeting the same conditions share listeners.
TEST_F(GeneratorsTest, TlsRouteSourceConditionsChooseEachSidecarsChains) {
  Apply("egress.yaml", std::string(kEgress) + R"(---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: pay, namespace: egress}
spec:
  hosts: [pay.example.com]
  tls:
  - match: [{sniHosts: [pay.example.com], sourceLabels: {app: billing}}]
    route: [{destination: {host: search.example.com}}]
  - match: [{sniHosts: [pay.example.com], sourceNamespace: ops}]
    route: [{destination: {host: maps.example.com, subset: v2}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: cdn, namespace: egress}
spec:
  hosts: ["*.cdn.example.com"]
  tls:
  - match: [{sniHosts: [static.cdn.example.com], sourceLabels: {app: billing}}]
    route: [{destination: {host: img.cdn.example.com}}]
---
)" + std::string(kStaticCdn));
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto context = std::dynamic_pointer_cast<const MeshContext>(pipeline_->context());
  ASSERT_NE(context, nullptr);
  EXPECT_TRUE(context->findings().empty()) << context->findings()[0].message;
  const auto chains = [&](const std::string& ns, const std::string& app) {
    return SidecarChains(ns, app, "127.0.0.1_443");
  };
  const std::string search =
      "search.example.com -> weighted: outbound|443||search.example.com 70, "
      "outbound|443||maps.example.com 30";
  const std::string maps = "maps.example.com -> outbound|443|v2|maps.example.com";
  EXPECT_THAT(chains("default", "web"),
              ::testing::ElementsAre("*.cdn.example.com -> outbound|443||*.cdn.example.com",
                                     "img.cdn.example.com -> outbound|443||img.cdn.example.com",
                                     " -> outbound|443||mail.example.com", search, maps,
                                     "pay.example.com -> outbound|443||pay.example.com",
                                     "static.cdn.example.com -> outbound|443||static.cdn.example.com"))
      << "meets no condition: each host's own chain";
  const std::vector<std::string> billing = {"static.cdn.example.com -> outbound|443||img.cdn.example.com",
                                            "img.cdn.example.com -> outbound|443||img.cdn.example.com",
                                            " -> outbound|443||mail.example.com",
                                            search,
                                            maps,
                                            "pay.example.com -> outbound|443||search.example.com"};
  EXPECT_EQ(chains("default", "billing"), billing)
      << "its matches first; no own chain for *.cdn.example.com or pay.example.com, nor static's after its match";
  EXPECT_EQ(chains("ops", "billing"), billing) << "meets both of pay's matches: the first";
  EXPECT_THAT(chains("ops", "web"), ::testing::Contains("pay.example.com -> outbound|443|v2|maps.example.com"));
  const uint64_t builds = pipeline_->cache().stats().builds;
  EXPECT_EQ(chains("team", "billing"), billing);
  EXPECT_EQ(pipeline_->cache().stats().builds, builds) << "the same conditions met: the same listener";
}

// A conditional tls match limited to one port is for that port alone, as Istio's matchTLS: a
// sidecar meeting its conditions gets it on that port, and the host's own chain on the others,
// where the host has no match for it (istiod's hasTLSMatch is per port).
TEST_F(GeneratorsTest, APortLimitedConditionalTlsMatchLeavesTheHostsOtherPortsAlone) {
  Apply("egress.yaml", std::string(kEgress) + R"(---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: dual, namespace: egress}
spec:
  hosts: [dual.example.com]
  ports: [{number: 443, name: tls, protocol: TLS}, {number: 8444, name: tls-b, protocol: TLS}]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: dual, namespace: egress}
spec:
  hosts: [dual.example.com]
  tls:
  - match: [{sniHosts: [dual.example.com], port: 8444, sourceLabels: {app: x}}]
    route: [{destination: {host: maps.example.com, port: {number: 8443}}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::string routed = "dual.example.com -> outbound|8443||maps.example.com";
  EXPECT_THAT(SidecarChains("default", "x", "127.0.0.1_8444"), ::testing::ElementsAre(routed));
  EXPECT_THAT(SidecarChains("default", "y", "127.0.0.1_8444"),
              ::testing::ElementsAre("dual.example.com -> outbound|8444||dual.example.com"));
  const std::vector<std::string> on_443 = SidecarChains("default", "x", "127.0.0.1_443");
  EXPECT_THAT(on_443, ::testing::Contains("dual.example.com -> outbound|443||dual.example.com"))
      << "no match of the host applies on 443: its own chain, even for a sidecar meeting the conditions";
  EXPECT_THAT(on_443, ::testing::Not(::testing::Contains(routed)));
}

// A Sidecar of namespace only-b: its sidecars see b.two.example.com alone.
constexpr char kOnlyBSidecar[] = R"(apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: only-b}
spec:
  egress: [{hosts: ["egress/b.two.example.com"]}]
)";

// A VirtualService of two TLS hosts: its match's chain is made once, and a sidecar that sees
// only the second host still gets it (and, meeting a conditional match of it, not that host's
// own chain), as istiod builds the chains per service.
TEST_F(GeneratorsTest, ATlsMatchOfAVirtualServiceOfSeveralHostsReachesASidecarSeeingAny) {
  Apply("egress.yaml", std::string(kEgress) + R"(---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: two, namespace: egress}
spec:
  hosts: [a.two.example.com, b.two.example.com]
  ports: [{number: 8444, name: tls, protocol: TLS}]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: two, namespace: egress}
spec:
  hosts: [a.two.example.com, b.two.example.com]
  tls:
  - match: [{sniHosts: [b.two.example.com], sourceLabels: {app: x}}]
    route: [{destination: {host: maps.example.com, port: {number: 8443}}}]
---
)" + std::string(kOnlyBSidecar));
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const auto chains = [&](const std::string& ns, const std::string& app) {
    return SidecarChains(ns, app, "127.0.0.1_8444");
  };
  const std::string routed = "b.two.example.com -> outbound|8443||maps.example.com";
  EXPECT_THAT(chains("default", "x"), ::testing::ElementsAre(routed))
      << "the match is a.two's too: meeting it, no own chain for either host, as istiod's hasTLSMatch";
  EXPECT_THAT(chains("only-b", "x"), ::testing::ElementsAre(routed)) << "the match's chain, made under a.two";
  EXPECT_THAT(chains("only-b", "y"), ::testing::ElementsAre("b.two.example.com -> outbound|8444||b.two.example.com"));
  EXPECT_THAT(chains("default", "y"), ::testing::ElementsAre("a.two.example.com -> outbound|8444||a.two.example.com",
                                                             "b.two.example.com -> outbound|8444||b.two.example.com"));
}

// A sidecar left with no chain on a port (it meets a match whose chain was dropped for a name
// another host has, so its host's own chain is not for it, as istiod's hasTLSMatch) gets no
// listener for the port: Envoy refuses a listener without filter chains.
TEST_F(GeneratorsTest, AnOpaquePortLeftWithNoChainForASidecarHasNoListener) {
  Apply("egress.yaml", std::string(kEgress) + R"(---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: wild, namespace: egress}
spec:
  hosts: ["*.two.example.com"]
  ports: [{number: 8444, name: tls, protocol: TLS}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.63}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: wild, namespace: egress}
spec:
  hosts: ["*.two.example.com"]
  tls:
  - match: [{sniHosts: [c.two.example.com]}]
    route: [{destination: {host: maps.example.com, port: {number: 8443}}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: b, namespace: egress}
spec:
  hosts: [b.two.example.com]
  ports: [{number: 8444, name: tls, protocol: TLS}]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: b, namespace: egress}
spec:
  hosts: [b.two.example.com, c.two.example.com]
  tls:
  - match: [{sniHosts: [c.two.example.com], sourceLabels: {app: x}}]
    route: [{destination: {host: search.example.com, port: {number: 8443}}}]
---
)" + std::string(kOnlyBSidecar));
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  EXPECT_THAT(SidecarChains("only-b", "y", "127.0.0.1_8444"),
              ::testing::ElementsAre("b.two.example.com -> outbound|8444||b.two.example.com"));
  EXPECT_THAT(SidecarChains("only-b", "x", "127.0.0.1_8444"), ::testing::ElementsAre("no listener"));
  EXPECT_THAT(SidecarChains("default", "x", "127.0.0.1_8444"),
              ::testing::ElementsAre("c.two.example.com -> outbound|8443||maps.example.com"))
      << "the wildcard host's match, which took the name; no own chains (each host has a match this sidecar meets)";
}

// A DestinationRule with a workloadSelector applies to the sidecars of its namespace it
// selects: their clusters and the hash policies of their routes follow it, the others' the rule
// without one; proxies meeting the same selectors share what they are sent.
TEST_F(GeneratorsTest, ARuleWithAWorkloadSelectorShapesTheSelectedProxiesOnly) {
  Apply("selector.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: api, namespace: shop}
spec:
  ports: [{name: http, port: 7000}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api, namespace: shop}
spec:
  host: api
  trafficPolicy: {loadBalancer: {simple: RANDOM}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api-canary, namespace: shop}
spec:
  host: api
  workloadSelector: {matchLabels: {app: canary}}
  trafficPolicy: {loadBalancer: {consistentHash: {httpHeaderName: x-user}}}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using envoy::config::cluster::v3::Cluster;
  const std::string cluster = "outbound|7000||api.shop.svc.cluster.local";
  // What a sidecar of shop labelled `app` is sent: the cluster's lb policy, and whether its
  // route to the cluster hashes.
  const auto sent = [&](const std::string& app) {
    const std::string id = StrCat("sidecar~127.0.0.5~", app, "-1.shop~shop.svc.cluster.local");
    const auto labelled = [&] {
      auto* labels = (*node_.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value();
      (*labels->mutable_fields())["app"].set_string_value(app);
    };
    auto cds_stream = Connect(id, false);
    labelled();
    cds_stream->Send(First(std::string(kClusterType), {}));
    Cluster::LbPolicy policy = Cluster::ROUND_ROBIN;
    for (const auto& response : cds_stream->Take()) {
      for (int i = 0; i < response.resources_size(); ++i) {
        const Cluster c = Decode<Cluster>(response, i);
        if (c.name() == cluster) policy = c.lb_policy();
      }
    }
    auto rds_stream = Connect(id, false);
    labelled();
    rds_stream->Send(First(std::string(kRouteType), {"7000"}));
    bool hashes = false;
    for (const auto& response : rds_stream->Take()) {
      for (int i = 0; i < response.resources_size(); ++i) {
        const auto config = Decode<envoy::config::route::v3::RouteConfiguration>(response, i);
        for (const auto& vhost : config.virtual_hosts()) {
          for (const auto& route : vhost.routes()) {
            hashes = hashes || (route.route().cluster() == cluster && route.route().hash_policy_size() > 0);
          }
        }
      }
    }
    return std::pair{policy, hashes};
  };
  EXPECT_EQ(sent("canary"), std::pair(Cluster::RING_HASH, true));
  EXPECT_EQ(sent("web"), std::pair(Cluster::RANDOM, false));
  EXPECT_EQ(sent("canary"), std::pair(Cluster::RING_HASH, true)) << "after the other, from the shared cache";
}

// proxyProtocol as istiod applies it on Envoy nodes: the cluster's transport socket (TLS, else
// plain bytes) wrapped in the upstream PROXY protocol socket; a subset's replaces the rule's;
// settings for a port, which have none, leave that port without it, as istiod's port-level copy
// does. gRPC nodes get none (analysis says so).
TEST_F(GeneratorsTest, ProxyProtocolWrapsTheUpstreamTransportSocket) {
  Apply("proxy.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec:
  ports: [{name: http, port: 7000}, {name: http-admin, port: 7001}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: db, namespace: shop}
spec:
  host: db
  trafficPolicy:
    proxyProtocol: {version: V2}
    portLevelSettings:
    - {port: {number: 7001}, tls: {mode: SIMPLE, caCertificates: /etc/ca.pem}}
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy: {proxyProtocol: {}}
  - name: tls
    labels: {version: v2}
    trafficPolicy: {tls: {mode: SIMPLE, caCertificates: /etc/ca.pem}}
  - name: v3
    labels: {version: v3}
    trafficPolicy:
      proxyProtocol: {}
      portLevelSettings: [{port: {number: 7000}, connectionPool: {tcp: {maxConnections: 5}}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using envoy::config::cluster::v3::Cluster;
  using envoy::extensions::transport_sockets::proxy_protocol::v3::ProxyProtocolUpstreamTransport;
  const auto proxy_protocol = [](const Cluster& cluster) {
    ProxyProtocolUpstreamTransport upstream;
    EXPECT_EQ(cluster.transport_socket().name(), "envoy.transport_sockets.upstream_proxy_protocol");
    EXPECT_TRUE(cluster.transport_socket().typed_config().UnpackTo(&upstream)) << cluster.DebugString();
    return upstream;
  };
  std::map<std::string, Cluster> clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  const ProxyProtocolUpstreamTransport plain = proxy_protocol(clusters["outbound|7000||db.shop.svc.cluster.local"]);
  EXPECT_EQ(plain.config().version(), envoy::config::core::v3::ProxyProtocolConfig::V2);
  EXPECT_EQ(plain.transport_socket().name(), "envoy.transport_sockets.raw_buffer");
  EXPECT_EQ(clusters["outbound|7001||db.shop.svc.cluster.local"].transport_socket().name(),
            "envoy.transport_sockets.tls")
      << "the port's settings (TLS) replace the rule's, PROXY protocol and all";
  const ProxyProtocolUpstreamTransport tls = proxy_protocol(clusters["outbound|7000|tls|db.shop.svc.cluster.local"]);
  EXPECT_EQ(tls.config().version(), envoy::config::core::v3::ProxyProtocolConfig::V2) << "the rule's";
  EXPECT_EQ(tls.transport_socket().name(), "envoy.transport_sockets.tls") << "TLS inside the PROXY header";
  const ProxyProtocolUpstreamTransport v1 = proxy_protocol(clusters["outbound|7000|v1|db.shop.svc.cluster.local"]);
  EXPECT_EQ(v1.config().version(), envoy::config::core::v3::ProxyProtocolConfig::V1) << "the subset's, V1 by default";
  // A subset's settings for the port replace its own policy there, not the rule's proxyProtocol
  // (istiod merges the port's copy, which has none, over the rule's); on another port the
  // subset's own applies, over the rule's settings for that port (TLS).
  const ProxyProtocolUpstreamTransport v3 = proxy_protocol(clusters["outbound|7000|v3|db.shop.svc.cluster.local"]);
  EXPECT_EQ(v3.config().version(), envoy::config::core::v3::ProxyProtocolConfig::V2) << "the rule's";
  EXPECT_EQ(v3.transport_socket().name(), "envoy.transport_sockets.raw_buffer");
  EXPECT_EQ(
      clusters["outbound|7000|v3|db.shop.svc.cluster.local"].circuit_breakers().thresholds(0).max_connections().value(),
      5u);
  const ProxyProtocolUpstreamTransport v3_admin =
      proxy_protocol(clusters["outbound|7001|v3|db.shop.svc.cluster.local"]);
  EXPECT_EQ(v3_admin.config().version(), envoy::config::core::v3::ProxyProtocolConfig::V1) << "the subset's";
  EXPECT_EQ(v3_admin.transport_socket().name(), "envoy.transport_sockets.tls") << "the rule's port settings";

  EXPECT_FALSE(GrpcCluster("outbound|7000||db.shop.svc.cluster.local").has_transport_socket())
      << "gRPC sends no PROXY header";
}

// Every Envoy cluster gets istiod's default circuit breaker thresholds, no limit on connections,
// pending requests, requests and retries (Envoy's own would limit retries to 3 at once), with
// a rule or without, and a connection pool's settings replace them one by one. gRPC nodes,
// which honour max_requests only, get thresholds only from a pool.
TEST_F(GeneratorsTest, EnvoyClustersGetIstiodsDefaultCircuitBreakers) {
  Apply("breakers.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec:
  ports: [{name: http, port: 7000}]
---
apiVersion: v1
kind: Service
metadata: {name: cache, namespace: shop}
spec:
  ports: [{name: http, port: 6379}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: db, namespace: shop}
spec:
  host: db
  trafficPolicy: {connectionPool: {http: {maxRetries: 7}}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: cache, namespace: shop}
spec:
  host: cache
  trafficPolicy:
    connectionPool: {tcp: {maxConnections: 0}, http: {maxRetries: 0, http1MaxPendingRequests: 0, http2MaxRequests: 0}}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using envoy::config::cluster::v3::Cluster;
  std::map<std::string, Cluster> clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  const Cluster& cache = clusters["outbound|6379||cache.shop.svc.cluster.local"];
  ASSERT_EQ(cache.circuit_breakers().thresholds_size(), 1) << "0, Istio's unset: the defaults alone";
  const auto& defaults = cache.circuit_breakers().thresholds(0);
  EXPECT_EQ(defaults.max_connections().value(), UINT32_MAX);
  EXPECT_EQ(defaults.max_pending_requests().value(), UINT32_MAX);
  EXPECT_EQ(defaults.max_requests().value(), UINT32_MAX);
  EXPECT_EQ(defaults.max_retries().value(), UINT32_MAX);
  const Cluster& db = clusters["outbound|7000||db.shop.svc.cluster.local"];
  ASSERT_EQ(db.circuit_breakers().thresholds_size(), 1) << "one set: the pool's fields over the defaults";
  EXPECT_EQ(db.circuit_breakers().thresholds(0).max_retries().value(), 7u);
  EXPECT_EQ(db.circuit_breakers().thresholds(0).max_requests().value(), UINT32_MAX);

  for (const char* name : {"outbound|6379||cache.shop.svc.cluster.local", "outbound|7000||db.shop.svc.cluster.local"}) {
    const Cluster grpc = GrpcCluster(name);
    for (const auto& thresholds : grpc.circuit_breakers().thresholds()) {
      EXPECT_FALSE(thresholds.has_max_retries()) << name << ": gRPC honours max_requests alone";
      EXPECT_FALSE(thresholds.has_max_connections()) << name;
    }
    if (std::string_view(name).find("cache") != std::string_view::npos) {
      EXPECT_FALSE(grpc.has_circuit_breakers()) << "a pool of nothing gRPC reads: no thresholds";
    }
  }
}

// retryBudget as istiod applies it on Envoy nodes: the cluster's circuit breaker thresholds get a
// retry budget (beside a connection pool's limits when there are some); a subset's replaces the
// rule's; settings for a port, which have none, leave that port without the rule's, and a
// subset's settings for the port keep what is above them, as proxyProtocol. gRPC nodes get none.
TEST_F(GeneratorsTest, RetryBudgetIsACircuitBreakerRetryBudget) {
  Apply("budget.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec:
  ports: [{name: http, port: 7000}, {name: http-admin, port: 7001}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: db, namespace: shop}
spec:
  host: db
  trafficPolicy:
    retryBudget: {percent: 25.5, minRetryConcurrency: 5}
    connectionPool: {http: {http2MaxRequests: 100}}
    portLevelSettings: [{port: {number: 7001}, connectionPool: {tcp: {maxConnections: 9}}}]
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy: {retryBudget: {}}
  - name: v2
    labels: {version: v2}
    trafficPolicy:
      retryBudget: {percent: 1}
      portLevelSettings: [{port: {number: 7000}, connectionPool: {tcp: {maxConnections: 5}}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using envoy::config::cluster::v3::Cluster;
  std::map<std::string, Cluster> clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  const auto thresholds = [&](const std::string& name) {
    const Cluster& cluster = clusters[name];
    EXPECT_EQ(cluster.circuit_breakers().thresholds_size(), 1) << name;
    return cluster.circuit_breakers().thresholds_size() > 0 ? cluster.circuit_breakers().thresholds(0)
                                                            : envoy::config::cluster::v3::CircuitBreakers::Thresholds();
  };
  const auto rule = thresholds("outbound|7000||db.shop.svc.cluster.local");
  EXPECT_EQ(rule.retry_budget().budget_percent().value(), 25.5);
  EXPECT_EQ(rule.retry_budget().min_retry_concurrency().value(), 5u);
  EXPECT_EQ(rule.max_requests().value(), 100u) << "in the same thresholds as the pool's limits";
  const auto port = thresholds("outbound|7001||db.shop.svc.cluster.local");
  EXPECT_FALSE(port.has_retry_budget()) << "the port's settings replace the rule's policy, budget and all";
  EXPECT_EQ(port.max_connections().value(), 9u);
  const auto v1 = thresholds("outbound|7000|v1|db.shop.svc.cluster.local");
  EXPECT_EQ(v1.retry_budget().budget_percent().value(), 20) << "istiod's defaults";
  EXPECT_EQ(v1.retry_budget().min_retry_concurrency().value(), 3u);
  const auto v2 = thresholds("outbound|7000|v2|db.shop.svc.cluster.local");
  EXPECT_EQ(v2.retry_budget().budget_percent().value(), 25.5) << "the rule's: the subset's port settings keep it";
  EXPECT_EQ(v2.max_connections().value(), 5u);
  const auto v2_admin = thresholds("outbound|7001|v2|db.shop.svc.cluster.local");
  EXPECT_EQ(v2_admin.retry_budget().budget_percent().value(), 1) << "the subset's own on its other port";
  EXPECT_EQ(v2_admin.max_connections().value(), 9u) << "over the rule's settings for that port";

  const Cluster grpc = GrpcCluster("outbound|7000||db.shop.svc.cluster.local");
  ASSERT_EQ(grpc.circuit_breakers().thresholds_size(), 1);
  EXPECT_FALSE(grpc.circuit_breakers().thresholds(0).has_retry_budget()) << "gRPC has no retry budget";
  EXPECT_EQ(grpc.circuit_breakers().thresholds(0).max_requests().value(), 100u);
}

// The load balancer as istiod applies it on Envoy nodes: LEAST_REQUEST unless the rule says
// otherwise (with no rule too), and warmup as slow start on LEAST_REQUEST and ROUND_ROBIN
// clusters only, the `warmup` form with istiod's aggression and minimum, the deprecated
// warmupDurationSecs with the window alone. gRPC nodes: round robin, no slow start.
TEST_F(GeneratorsTest, WarmupIsSlowStartOnLeastRequestAndRoundRobinClusters) {
  Apply("warmup.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: api, namespace: shop}
spec:
  ports: [{name: http, port: 7000}, {name: http-admin, port: 7001}, {name: http-debug, port: 7002}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api, namespace: shop}
spec:
  host: api
  trafficPolicy:
    loadBalancer: {warmup: {duration: 30s, minimumPercent: 20, aggression: 1.5}}
    portLevelSettings:
    - {port: {number: 7001}, loadBalancer: {simple: RANDOM, warmup: {duration: 5s}}}
    - {port: {number: 7002}, loadBalancer: {consistentHash: {httpHeaderName: x-user}, warmupDurationSecs: 5s}}
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN, warmupDurationSecs: 15s, warmup: {duration: 45s}}}
  - name: v2
    labels: {version: v2}
    trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN, warmupDurationSecs: 1.5s}}
  - name: v3
    labels: {version: v3}
    trafficPolicy: {loadBalancer: {}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: random, namespace: shop}
spec:
  host: random
  trafficPolicy: {loadBalancer: {simple: RANDOM}}
  subsets:
  - name: warm
    labels: {version: v1}
    trafficPolicy: {loadBalancer: {warmupDurationSecs: 5s}}
---
apiVersion: v1
kind: Service
metadata: {name: random, namespace: shop}
spec:
  ports: [{name: http, port: 7000}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using envoy::config::cluster::v3::Cluster;
  std::map<std::string, Cluster> clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  const Cluster& plain = clusters["outbound|7000||api.shop.svc.cluster.local"];
  EXPECT_EQ(plain.lb_policy(), Cluster::LEAST_REQUEST) << "no simple: istiod's default";
  ASSERT_TRUE(plain.least_request_lb_config().has_slow_start_config());
  const auto& slow = plain.least_request_lb_config().slow_start_config();
  EXPECT_EQ(slow.slow_start_window().seconds(), 30);
  EXPECT_DOUBLE_EQ(slow.aggression().default_value(), 1.5);
  EXPECT_FALSE(slow.aggression().runtime_key().empty()) << "Envoy requires a key";
  EXPECT_DOUBLE_EQ(slow.min_weight_percent().value(), 20);
  const Cluster& random = clusters["outbound|7001||api.shop.svc.cluster.local"];
  EXPECT_EQ(random.lb_policy(), Cluster::RANDOM);
  EXPECT_FALSE(random.has_least_request_lb_config()) << "RANDOM has no slow start, as in istiod";
  EXPECT_FALSE(random.has_round_robin_lb_config());
  const Cluster& hashed = clusters["outbound|7002||api.shop.svc.cluster.local"];
  EXPECT_EQ(hashed.lb_policy(), Cluster::RING_HASH);
  EXPECT_FALSE(hashed.has_least_request_lb_config()) << "a ring hash has no slow start, as in istiod";
  const Cluster& v1 = clusters["outbound|7000|v1|api.shop.svc.cluster.local"];
  EXPECT_EQ(v1.lb_policy(), Cluster::ROUND_ROBIN);
  ASSERT_TRUE(v1.round_robin_lb_config().has_slow_start_config());
  EXPECT_EQ(v1.round_robin_lb_config().slow_start_config().slow_start_window().seconds(), 45) << "warmup wins";
  EXPECT_DOUBLE_EQ(v1.round_robin_lb_config().slow_start_config().aggression().default_value(), 1) << "the default";
  EXPECT_DOUBLE_EQ(v1.round_robin_lb_config().slow_start_config().min_weight_percent().value(), 10) << "the default";
  const Cluster& v2 = clusters["outbound|7000|v2|api.shop.svc.cluster.local"];
  ASSERT_TRUE(v2.round_robin_lb_config().has_slow_start_config());
  const auto& deprecated = v2.round_robin_lb_config().slow_start_config();
  EXPECT_EQ(deprecated.slow_start_window().seconds(), 1);
  EXPECT_EQ(deprecated.slow_start_window().nanos(), 500000000);
  EXPECT_FALSE(deprecated.has_aggression()) << "warmupDurationSecs sets the window alone, as in istiod";
  EXPECT_FALSE(deprecated.has_min_weight_percent());
  // A subset's loadBalancer replaces the rule's whole, as istiod merges them, even an empty one.
  const Cluster& v3 = clusters["outbound|7000|v3|api.shop.svc.cluster.local"];
  EXPECT_EQ(v3.lb_policy(), Cluster::LEAST_REQUEST);
  EXPECT_FALSE(v3.has_least_request_lb_config()) << "the rule's warmup is replaced by the empty loadBalancer";
  EXPECT_EQ(clusters["outbound|7000||random.shop.svc.cluster.local"].lb_policy(), Cluster::RANDOM);
  const Cluster& warm = clusters["outbound|7000|warm|random.shop.svc.cluster.local"];
  EXPECT_EQ(warm.lb_policy(), Cluster::LEAST_REQUEST) << "the subset's warmup alone replaces the rule's RANDOM";
  EXPECT_EQ(warm.least_request_lb_config().slow_start_config().slow_start_window().seconds(), 5);

  auto grpc = Connect("grpc-client-1", /*grpc=*/true);
  grpc->Send(First(std::string(kClusterType), {"outbound|7000||api.shop.svc.cluster.local"}));
  auto cds = grpc->Take();
  ASSERT_EQ(cds.size(), 1u);
  ASSERT_EQ(cds[0].resources_size(), 1);
  const auto for_grpc = Decode<Cluster>(cds[0], 0);
  EXPECT_EQ(for_grpc.lb_policy(), Cluster::ROUND_ROBIN) << "gRPC 1.51's only simple policy";
  EXPECT_FALSE(for_grpc.has_least_request_lb_config());
  EXPECT_FALSE(for_grpc.has_round_robin_lb_config());
}

// Istio's policy merge: a port's settings replace the rule's policy whole; a subset's fields
// replace the merged ones they set; the subset's port settings replace all again.
TEST_F(GeneratorsTest, PortLevelAndSubsetPoliciesMergeAsIstioMergesThem) {
  Apply("ports.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: api, namespace: shop}
spec:
  ports: [{name: http, port: 7000}, {name: http-admin, port: 7001}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api, namespace: shop}
spec:
  host: api
  trafficPolicy:
    loadBalancer: {simple: RANDOM}
    connectionPool: {tcp: {maxConnections: 5, connectTimeout: 2s}}
    portLevelSettings:
    - port: {number: 7001}
      outlierDetection: {consecutive5xxErrors: 3, interval: 1.5s}
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy: {connectionPool: {http: {maxRetries: 4}}}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  std::map<std::string, envoy::config::cluster::v3::Cluster> clusters =
      ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  using Cluster = envoy::config::cluster::v3::Cluster;
  const Cluster& plain = clusters["outbound|7000||api.shop.svc.cluster.local"];
  EXPECT_EQ(plain.lb_policy(), Cluster::RANDOM);
  EXPECT_EQ(plain.circuit_breakers().thresholds(0).max_connections().value(), 5u);
  EXPECT_EQ(plain.connect_timeout().seconds(), 2);
  const Cluster& admin = clusters["outbound|7001||api.shop.svc.cluster.local"];
  EXPECT_EQ(admin.lb_policy(), Cluster::LEAST_REQUEST) << "port settings do not inherit: istiod's default";
  EXPECT_EQ(admin.circuit_breakers().thresholds(0).max_connections().value(), UINT32_MAX)
      << "istiod's default: the port's settings have no pool";
  EXPECT_EQ(admin.connect_timeout().seconds(), 10);
  EXPECT_EQ(admin.outlier_detection().consecutive_5xx().value(), 3u);
  EXPECT_EQ(admin.outlier_detection().interval().nanos(), 500000000) << "durations keep their fraction of a second";
  const Cluster& v1 = clusters["outbound|7000|v1|api.shop.svc.cluster.local"];
  EXPECT_EQ(v1.lb_policy(), Cluster::RANDOM) << "inherited: the subset does not set it";
  EXPECT_EQ(v1.circuit_breakers().thresholds(0).max_retries().value(), 4u);
  EXPECT_EQ(v1.circuit_breakers().thresholds(0).max_connections().value(), UINT32_MAX)
      << "the subset's pool replaces the rule's: istiod's default";
  const Cluster& v1_admin = clusters["outbound|7001|v1|api.shop.svc.cluster.local"];
  EXPECT_EQ(v1_admin.outlier_detection().consecutive_5xx().value(), 3u) << "the rule's port settings first";
  EXPECT_EQ(v1_admin.circuit_breakers().thresholds(0).max_retries().value(), 4u) << "then the subset's fields";
  EXPECT_EQ(v1_admin.lb_policy(), Cluster::LEAST_REQUEST);
}

// The upstream HTTP protocol as istiod chooses it, for Envoy: HTTP/2 to GRPC and HTTP2 ports
// and under h2UpgradePolicy UPGRADE (with maxConcurrentStreams), the client's protocol under
// useClientProtocol, else HTTP/1.1 with options only when the pool tunes connections (the idle
// timeout from http, else from tcp). gRPC nodes get no protocol options: gRPC is HTTP/2.
TEST_F(GeneratorsTest, UpstreamHttpProtocolFollowsThePortAndThePool) {
  Apply("shop.yaml", kShopEntry + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shop}
spec:
  host: shop.mesh.local
  trafficPolicy: {connectionPool: {tcp: {idleTimeout: 90s}, http: {useClientProtocol: true}}}
  subsets:
  - name: h2
    labels: {version: h2}
    trafficPolicy:
      connectionPool: {http: {h2UpgradePolicy: UPGRADE, maxConcurrentStreams: 64, useClientProtocol: true}}
  - name: tuned
    labels: {version: tuned}
    trafficPolicy: {connectionPool: {tcp: {idleTimeout: 90s}, http: {idleTimeout: 5s}}}
  - name: plain
    labels: {version: plain}
    trafficPolicy: {connectionPool: {http: {h2UpgradePolicy: DO_NOT_UPGRADE}}}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using envoy::extensions::upstreams::http::v3::HttpProtocolOptions;
  const auto options_of = [](const envoy::config::cluster::v3::Cluster& cluster) -> std::optional<HttpProtocolOptions> {
    const auto it =
        cluster.typed_extension_protocol_options().find("envoy.extensions.upstreams.http.v3.HttpProtocolOptions");
    if (it == cluster.typed_extension_protocol_options().end()) return std::nullopt;
    HttpProtocolOptions options;
    EXPECT_TRUE(it->second.UnpackTo(&options));
    return options;
  };
  auto clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");

  const auto grpc_port = options_of(clusters["outbound|8080||inventory.mesh.local"]);
  ASSERT_TRUE(grpc_port.has_value()) << "a GRPC port is HTTP/2 upstream";
  EXPECT_TRUE(grpc_port->explicit_http_config().has_http2_protocol_options());
  EXPECT_FALSE(grpc_port->explicit_http_config().http2_protocol_options().has_max_concurrent_streams());

  const auto client_protocol = options_of(clusters["outbound|8080||shop.mesh.local"]);
  ASSERT_TRUE(client_protocol.has_value());
  EXPECT_TRUE(client_protocol->use_downstream_protocol_config().has_http_protocol_options());
  EXPECT_TRUE(client_protocol->use_downstream_protocol_config().has_http2_protocol_options());
  EXPECT_EQ(client_protocol->common_http_protocol_options().idle_timeout().seconds(), 90) << "tcp.idleTimeout";

  const auto upgraded = options_of(clusters["outbound|8080|h2|shop.mesh.local"]);
  ASSERT_TRUE(upgraded.has_value());
  EXPECT_EQ(upgraded->explicit_http_config().http2_protocol_options().max_concurrent_streams().value(), 64u)
      << "UPGRADE wins over useClientProtocol, as in istiod";
  EXPECT_FALSE(upgraded->has_common_http_protocol_options()) << "the subset's pool replaces the rule's";

  const auto tuned = options_of(clusters["outbound|8080|tuned|shop.mesh.local"]);
  ASSERT_TRUE(tuned.has_value());
  EXPECT_TRUE(tuned->explicit_http_config().has_http_protocol_options());
  EXPECT_EQ(tuned->common_http_protocol_options().idle_timeout().seconds(), 5) << "http.idleTimeout before tcp's";

  EXPECT_FALSE(options_of(clusters["outbound|8080|plain|shop.mesh.local"]).has_value())
      << "HTTP/1.1 with nothing to tune: no options, as a cluster without them speaks HTTP/1.1";

  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(
      First(std::string(kClusterType), {"outbound|8080||inventory.mesh.local", "outbound|8080|h2|shop.mesh.local"}));
  auto cds = grpc->Take();
  ASSERT_EQ(cds.size(), 1u);
  ASSERT_EQ(cds[0].resources_size(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(Decode<envoy::config::cluster::v3::Cluster>(cds[0], i).typed_extension_protocol_options().empty());
  }
}

// ServiceEntry exportTo: a proxy sees a host only if the entry is exported to its namespace
// ("." its own, names, "*"; "~" none), in its clusters and its routes alike. That proxies of two
// namespaces get different cache keys is ProxyScopeTest's: this test passes without that.
TEST_F(GeneratorsTest, ExportToDecidesWhichNamespacesSeeAServiceEntry) {
  Apply("exports.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: partner}
spec:
  resolution: STATIC
  hosts: [partner.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  exportTo: ["."]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: billing}
spec:
  resolution: STATIC
  hosts: [billing.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  exportTo: [web]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: hidden}
spec:
  resolution: STATIC
  hosts: [hidden.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  exportTo: ["~"]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const auto sees = [&](const std::string& node) {
    std::set<std::string> hosts;
    for (const auto& [name, cluster] : ClustersFor(node)) {
      if (name.ends_with("partner.mesh.local") || name.ends_with("billing.mesh.local") ||
          name.ends_with("hidden.mesh.local")) {
        hosts.insert(name.substr(name.rfind('|') + 1));
      }
    }
    std::set<std::string> vhosts;
    const auto routes = RoutesFor(node, false, "8080");
    for (const auto& vhost : routes.virtual_hosts()) {
      if (vhost.name().find("partner") != std::string::npos || vhost.name().find("billing") != std::string::npos ||
          vhost.name().find("hidden") != std::string::npos) {
        vhosts.insert(vhost.name());
      }
    }
    EXPECT_EQ(hosts.size(), vhosts.size()) << node << ": clusters and routes agree";
    return hosts;
  };
  EXPECT_THAT(sees("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local"),
              ::testing::ElementsAre("partner.mesh.local"));
  EXPECT_THAT(sees("sidecar~127.0.0.7~app-3.web~web.svc.cluster.local"), ::testing::ElementsAre("billing.mesh.local"));
}

// Outlier detection as istiod translates it: ejection is enforced only for the error counts a
// rule sets, success-rate ejection is off, local-origin failures count apart only when split, and
// minHealthPercent becomes the panic threshold (0, no panic routing, when unset).
TEST_F(GeneratorsTest, OutlierDetectionEnforcesOnlyTheCountsItSets) {
  Apply("outlier.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: api, namespace: shop}
spec:
  ports: [{name: http, port: 7000}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api, namespace: shop}
spec:
  host: api
  trafficPolicy:
    outlierDetection:
      consecutiveGatewayErrors: 4
      splitExternalLocalOriginErrors: true
      consecutiveLocalOriginFailures: 6
      minHealthPercent: 30
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy: {outlierDetection: {consecutive5xxErrors: 2, maxEjectionPercent: 20}}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  std::map<std::string, envoy::config::cluster::v3::Cluster> clusters =
      ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  const auto& plain = clusters["outbound|7000||api.shop.svc.cluster.local"];
  const auto& od = plain.outlier_detection();
  EXPECT_EQ(od.consecutive_gateway_failure().value(), 4u);
  EXPECT_EQ(od.enforcing_consecutive_gateway_failure().value(), 100u);
  EXPECT_EQ(od.enforcing_consecutive_5xx().value(), 0u) << "5xx errors are not a rule's unless it sets them";
  EXPECT_TRUE(od.has_enforcing_success_rate());
  EXPECT_EQ(od.enforcing_success_rate().value(), 0u);
  EXPECT_TRUE(od.split_external_local_origin_errors());
  EXPECT_EQ(od.consecutive_local_origin_failure().value(), 6u);
  EXPECT_EQ(od.enforcing_consecutive_local_origin_failure().value(), 100u);
  EXPECT_FALSE(od.has_max_ejection_percent()) << "Envoy's default when unset";
  EXPECT_EQ(plain.common_lb_config().healthy_panic_threshold().value(), 30.0);

  const auto& v1 = clusters["outbound|7000|v1|api.shop.svc.cluster.local"];
  EXPECT_EQ(v1.outlier_detection().consecutive_5xx().value(), 2u)
      << "the subset's outlier detection replaces the rule's";
  EXPECT_EQ(v1.outlier_detection().enforcing_consecutive_5xx().value(), 100u);
  EXPECT_EQ(v1.outlier_detection().enforcing_consecutive_gateway_failure().value(), 0u);
  EXPECT_FALSE(v1.outlier_detection().split_external_local_origin_errors());
  EXPECT_EQ(v1.outlier_detection().max_ejection_percent().value(), 20u);
  EXPECT_TRUE(v1.common_lb_config().has_healthy_panic_threshold());
  EXPECT_EQ(v1.common_lb_config().healthy_panic_threshold().value(), 0.0);
}

// Retries as istiod converts them (retry.ConvertPolicy): a route without `retries` retries twice
// on Envoy, to hosts not tried yet unless it hashes to one; `attempts: 0` turns that off; given
// fields replace the default's, status codes in retryOn become retriable codes. gRPC nodes get
// a policy only where a route sets one, and only what gRPC reads (gRFC A44).
TEST_F(GeneratorsTest, RetriesAreIstiodsDefaultUnlessTheRouteSetsThem) {
  using envoy::config::route::v3::Route;
  const std::string envoy_node = "sidecar~127.0.0.5~app-1.default~default.svc.cluster.local";
  // A service without a VirtualService: its default route.
  Apply("plain.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: plain}
spec:
  resolution: STATIC
  hosts: [plain.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const auto plain_route = [&](bool grpc) {
    const auto config = RoutesFor(grpc ? "grpc-client-1" : envoy_node, grpc, grpc ? "plain.mesh.local:8080" : "8080");
    for (const auto& host : config.virtual_hosts()) {
      if (host.name() == "plain.mesh.local:8080" || grpc) {
        return host.routes_size() == 1 ? host.routes(0) : Route();
      }
    }
    return Route();
  };
  const Route plain = plain_route(false);
  ASSERT_TRUE(plain.has_route());
  const auto& by_default = plain.route().retry_policy();
  EXPECT_EQ(by_default.num_retries().value(), 2u);
  EXPECT_EQ(by_default.retry_on(), "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes");
  EXPECT_THAT(by_default.retriable_status_codes(), ::testing::ElementsAre(503u));
  EXPECT_EQ(by_default.host_selection_retry_max_attempts(), 5);
  ASSERT_EQ(by_default.retry_host_predicate_size(), 1);
  EXPECT_EQ(by_default.retry_host_predicate(0).name(), "envoy.retry_host_predicates.previous_hosts");
  EXPECT_TRUE(by_default.retry_host_predicate(0)
                  .typed_config()
                  .Is<envoy::extensions::retry::host::previous_hosts::v3::PreviousHostsPredicate>());
  const Route grpc_plain = plain_route(true);
  ASSERT_TRUE(grpc_plain.has_route());
  EXPECT_FALSE(grpc_plain.route().has_retry_policy()) << "no retries a gRPC application did not ask for";

  Apply("routes.yaml", kShopEntry + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shop}
spec:
  host: shop.mesh.local
  trafficPolicy: {loadBalancer: {consistentHash: {httpHeaderName: x-user}}}
---
)" + kInventoryRoutesHead + R"(  - match: [{headers: {x-retry: {exact: default}}}]
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - match: [{headers: {x-retry: {exact: "off"}}}]
    retries: {attempts: 0}
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - match: [{headers: {x-retry: {exact: set}}}]
    retries:
      attempts: 4
      retryOn: gateway-error,504
      perTryTimeout: 250ms
      backoff: 40ms
      retryRemoteLocalities: true
      retryIgnorePreviousHosts: false
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - retries: {attempts: 3, retryOn: unavailable}
    route: [{destination: {host: inventory.mesh.local, subset: v2}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const auto envoy_config = RoutesFor(envoy_node, false, "8080");
  std::map<std::string, std::vector<Route>> envoy_routes;
  for (const auto& host : envoy_config.virtual_hosts()) {
    envoy_routes[host.name()] = {host.routes().begin(), host.routes().end()};
  }
  ASSERT_EQ(envoy_routes["shop.mesh.local:8080"].size(), 1u);
  const auto& hashed = envoy_routes["shop.mesh.local:8080"][0].route();
  ASSERT_EQ(hashed.hash_policy_size(), 1);
  EXPECT_EQ(hashed.retry_policy().num_retries().value(), 2u);
  EXPECT_EQ(hashed.retry_policy().retry_host_predicate_size(), 0) << "a hashed request retries its own host";

  const std::vector<Route>& inventory = envoy_routes["inventory.mesh.local:8080"];
  ASSERT_EQ(inventory.size(), 4u);
  EXPECT_EQ(inventory[0].route().retry_policy().SerializeAsString(), by_default.SerializeAsString());
  EXPECT_FALSE(inventory[1].route().has_retry_policy()) << "attempts: 0";
  const auto& set = inventory[2].route().retry_policy();
  EXPECT_EQ(set.num_retries().value(), 4u);
  EXPECT_EQ(set.retry_on(), "gateway-error,retriable-status-codes");
  EXPECT_THAT(set.retriable_status_codes(), ::testing::ElementsAre(504u));
  EXPECT_EQ(set.per_try_timeout().nanos(), 250000000);
  EXPECT_EQ(set.retry_back_off().base_interval().nanos(), 40000000);
  EXPECT_EQ(set.retry_host_predicate_size(), 0) << "retryIgnorePreviousHosts: false";
  EXPECT_EQ(set.retry_priority().name(), "envoy.retry_priorities.previous_priorities");
  envoy::extensions::retry::priority::previous_priorities::v3::PreviousPrioritiesConfig priorities;
  ASSERT_TRUE(set.retry_priority().typed_config().UnpackTo(&priorities));
  EXPECT_EQ(priorities.update_frequency(), 2);
  const auto& unavailable = inventory[3].route().retry_policy();
  EXPECT_EQ(unavailable.retry_on(), "unavailable");
  EXPECT_THAT(unavailable.retriable_status_codes(), ::testing::IsEmpty()) << "retryOn replaces the default's codes";
  EXPECT_EQ(unavailable.retry_host_predicate_size(), 1);

  const auto grpc_config = RoutesFor("grpc-client-1", true, "inventory.mesh.local:8080");
  ASSERT_EQ(grpc_config.virtual_hosts_size(), 1);
  const auto& grpc_routes = grpc_config.virtual_hosts(0).routes();
  ASSERT_EQ(grpc_routes.size(), 4);
  EXPECT_FALSE(grpc_routes[0].route().has_retry_policy());
  EXPECT_FALSE(grpc_routes[1].route().has_retry_policy());
  const auto& grpc_set = grpc_routes[2].route().retry_policy();
  EXPECT_EQ(grpc_set.num_retries().value(), 4u);
  EXPECT_EQ(grpc_set.retry_on(), "gateway-error,retriable-status-codes");
  EXPECT_EQ(grpc_set.retry_back_off().base_interval().nanos(), 40000000);
  EXPECT_FALSE(grpc_set.has_per_try_timeout());
  EXPECT_EQ(grpc_set.retriable_status_codes_size(), 0);
  EXPECT_EQ(grpc_set.retry_host_predicate_size(), 0);
  EXPECT_FALSE(grpc_set.has_retry_priority());
  EXPECT_EQ(grpc_routes[3].route().retry_policy().num_retries().value(), 3u);
  EXPECT_EQ(grpc_routes[3].route().retry_policy().retry_on(), "unavailable");
}

// Every connection manager sent to Envoy has istiod's defaults: normalized paths, escaped slashes
// kept, WebSocket upgrades, no stream idle timeout, RDS awaited without a deadline, "100 Continue"
// passed on; proxyless gRPC's has none of them (nothing of them is gRPC's to apply).
TEST_F(GeneratorsTest, EnvoysConnectionManagersHaveIstiodsDefaults) {
  using envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
  for (const bool grpc : {false, true}) {
    SCOPED_TRACE(grpc ? "gRPC" : "Envoy");
    auto proxy = Connect(grpc ? "grpc-client-1" : "sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", grpc);
    const HttpConnectionManager hcm = ManagerOf8080(*proxy, grpc);
    ASSERT_TRUE(hcm.has_rds()) << "the listener was found";
    EXPECT_EQ(hcm.has_normalize_path() && hcm.normalize_path().value(), !grpc);
    EXPECT_EQ(hcm.path_with_escaped_slashes_action(),
              grpc ? HttpConnectionManager::IMPLEMENTATION_SPECIFIC_DEFAULT : HttpConnectionManager::KEEP_UNCHANGED);
    ASSERT_EQ(hcm.upgrade_configs_size(), grpc ? 0 : 1);
    if (!grpc) {
      EXPECT_EQ(hcm.upgrade_configs(0).upgrade_type(), "websocket");
    }
    EXPECT_EQ(hcm.has_stream_idle_timeout(), !grpc);
    EXPECT_EQ(hcm.stream_idle_timeout().seconds(), 0) << "0: none";
    EXPECT_EQ(hcm.stream_idle_timeout().nanos(), 0);
    EXPECT_EQ(hcm.proxy_100_continue(), !grpc);
    EXPECT_EQ(hcm.server_name(), "") << "a sidecar's outbound manager: Envoy's default, as istiod's";
    EXPECT_EQ(hcm.forward_client_cert_details(), HttpConnectionManager::SANITIZE) << "a sidecar's: Envoy's default";
    EXPECT_EQ(hcm.rds().config_source().has_initial_fetch_timeout(), !grpc);
    EXPECT_FALSE(hcm.has_common_http_protocol_options()) << "no IDLE_TIMEOUT given";
    EXPECT_THAT(PgvChecker().Check(hcm), ::testing::IsEmpty()) << hcm.DebugString();
    // istiod's virtual hosts tell upstreams the attempt number; gRPC has no such setting.
    const auto routes = grpc ? RoutesFor("grpc-client-2", true, "inventory.mesh.local:8080")
                             : RoutesFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false, "8080");
    ASSERT_GT(routes.virtual_hosts_size(), 0);
    for (const auto& vhost : routes.virtual_hosts()) {
      EXPECT_EQ(vhost.include_request_attempt_count(), !grpc) << vhost.name();
    }
  }
  // A node's IDLE_TIMEOUT is its connection managers' idle timeout, as istiod sets it (Envoy's
  // only); nodes of another value do not share its listener.
  for (const std::string idle : {"90s", "2m"}) {
    auto proxy = Connect(StrCat("sidecar~127.0.0.6~app-", idle, ".default~default.svc.cluster.local"), false);
    (*node_.mutable_metadata()->mutable_fields())["IDLE_TIMEOUT"].set_string_value(idle);
    const HttpConnectionManager hcm = ManagerOf8080(*proxy, false);
    EXPECT_EQ(hcm.common_http_protocol_options().idle_timeout().seconds(), idle == "90s" ? 90 : 120) << idle;
  }
}

// VirtualService fault injection as istiod translates it: the fault filter (empty) before the
// router in every HTTP connection manager, and each faulty route's own HTTPFault in
// typed_per_filter_config, percentages in parts per million. The same for Envoy and gRPC
// (gRPC implements the filter, gRFC A33).
TEST_F(GeneratorsTest, FaultsAreTheFaultFiltersPerRouteConfigForEnvoyAndGrpc) {
  Apply("routes.yaml", std::string(kInventoryRoutesHead) + R"(  - match: [{headers: {x-fault: {exact: delay}}}]
    fault: {delay: {fixedDelay: 1.5s, percentage: {value: 12.5}}}
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - match: [{headers: {x-fault: {exact: abort}}}]
    fault: {abort: {grpcStatus: UNAVAILABLE, percentage: {value: 100}}}
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - match: [{headers: {x-fault: {exact: http}}}]
    fault: {abort: {httpStatus: 503}, delay: {fixedDelay: 5ms}}
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - match: [{headers: {x-fault: {exact: whole}}}]
    fault: {delay: {fixedDelay: 2s, percent: 30}}
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - match: [{headers: {x-fault: {exact: long}}}]
    fault: {delay: {fixedDelay: 720h, percentage: {value: 100}}}
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - route: [{destination: {host: inventory.mesh.local, subset: v2}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using envoy::extensions::filters::http::fault::v3::HTTPFault;
  for (const bool grpc : {false, true}) {
    SCOPED_TRACE(grpc ? "gRPC" : "Envoy");
    auto proxy = Connect(grpc ? "grpc-client-1" : "sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", grpc);
    const auto hcm = ManagerOf8080(*proxy, grpc);
    // Envoy's lists the CORS filter first, as istiod's does; gRPC has none.
    const int fault_at = grpc ? 0 : 1;
    ASSERT_EQ(hcm.http_filters_size(), fault_at + 2);
    if (!grpc) {
      EXPECT_EQ(hcm.http_filters(0).name(), "envoy.filters.http.cors");
    }
    EXPECT_EQ(hcm.http_filters(fault_at).name(), "envoy.filters.http.fault");
    EXPECT_TRUE(hcm.http_filters(fault_at).typed_config().Is<HTTPFault>());
    EXPECT_EQ(hcm.http_filters(fault_at + 1).name(), "envoy.filters.http.router") << "the router is last";

    proxy->Send(Request(std::string(kRouteType), {grpc ? "inventory.mesh.local:8080" : "8080"}));
    auto rds = proxy->Take();
    ASSERT_EQ(rds.size(), 1u);
    const auto routes = Decode<envoy::config::route::v3::RouteConfiguration>(rds[0], 0);
    const auto& vhost = routes.virtual_hosts(0);
    ASSERT_EQ(vhost.routes_size(), 6);
    const auto fault_of = [&](int i) {
      HTTPFault fault;
      auto it = vhost.routes(i).typed_per_filter_config().find("envoy.filters.http.fault");
      EXPECT_NE(it, vhost.routes(i).typed_per_filter_config().end()) << "route " << i;
      if (it != vhost.routes(i).typed_per_filter_config().end()) {
        EXPECT_TRUE(it->second.UnpackTo(&fault));
      }
      return fault;
    };
    const HTTPFault delay = fault_of(0);
    EXPECT_EQ(delay.delay().fixed_delay().seconds(), 1);
    EXPECT_EQ(delay.delay().fixed_delay().nanos(), 500000000);
    EXPECT_EQ(delay.delay().percentage().numerator(), 125000u);
    EXPECT_EQ(delay.delay().percentage().denominator(), envoy::type::v3::FractionalPercent::MILLION);
    EXPECT_FALSE(delay.has_abort());
    const HTTPFault abort = fault_of(1);
    EXPECT_EQ(abort.abort().grpc_status(), 14u);
    EXPECT_EQ(abort.abort().percentage().numerator(), 1000000u);
    const HTTPFault both = fault_of(2);
    EXPECT_EQ(both.abort().http_status(), 503u);
    EXPECT_EQ(both.abort().percentage().numerator(), 0u) << "no percentage: no request aborted, as in Istio";
    EXPECT_TRUE(both.abort().has_percentage()) << "grpc-js refuses a fault without one";
    EXPECT_EQ(both.delay().fixed_delay().nanos(), 5000000);
    EXPECT_EQ(both.delay().percentage().numerator(), 0u) << "no percentage: no request delayed, as in Istio";
    EXPECT_EQ(both.delay().percentage().denominator(), envoy::type::v3::FractionalPercent::HUNDRED)
        << "istiod's form for a delay without percentage: the integer percent, 0";
    EXPECT_TRUE(both.delay().has_percentage()) << "grpc-js refuses a fault without one";
    const HTTPFault whole = fault_of(3);
    EXPECT_EQ(whole.delay().fixed_delay().seconds(), 2);
    EXPECT_EQ(whole.delay().percentage().numerator(), 30u) << "the deprecated integer percent, in hundredths";
    EXPECT_EQ(whole.delay().percentage().denominator(), envoy::type::v3::FractionalPercent::HUNDRED);
    // 30 days: Envoy waits that long; gRPC nodes get 2^31-1 ms, which grpc-js's timer can wait
    // (a longer one fires after 1 ms).
    EXPECT_EQ(fault_of(4).delay().fixed_delay().seconds(), grpc ? 2147483 : 30 * 24 * 3600);
    EXPECT_EQ(fault_of(4).delay().fixed_delay().nanos(), grpc ? 647000000 : 0);
    EXPECT_TRUE(vhost.routes(5).typed_per_filter_config().empty());
    // Config status says where the delay is cut, and of that route alone.
    if (grpc) {
      EXPECT_THAT(GrpcNotesOf("grpc-client-1", /*with_resource=*/true),
                  ::testing::ElementsAre("inventory.mesh.local:8080 | VirtualService default/inventory | "
                                         "spec.http[4].fault.delay.fixedDelay | sent to gRPC as 2147483647ms (about "
                                         "24.8 days): grpc-js waits with Node's setTimeout, which fires a longer "
                                         "delay after 1 ms"));
    }
  }
}

// consistentHash: a RING_HASH cluster for Envoy and gRPC, and the route hashing by the
// destination's key: a subset's policy over the rule's; gRPC hashes on headers only.
TEST_F(GeneratorsTest, ConsistentHashIsARingHashClusterAndTheRoutesHashPolicy) {
  std::string mesh = kMesh;
  const std::string rule =
      "  host: inventory.mesh.local\n  subsets:\n  - {name: v1, labels: {version: v1}}\n"
      "  - {name: v2, labels: {version: v2}}\n";
  ASSERT_NE(mesh.find(rule), std::string::npos);
  mesh.replace(mesh.find(rule), rule.size(), R"(  host: inventory.mesh.local
  trafficPolicy:
    loadBalancer: {consistentHash: {httpHeaderName: x-user, minimumRingSize: 256}}
  subsets:
  - {name: v1, labels: {version: v1}}
  - name: v2
    labels: {version: v2}
    trafficPolicy: {loadBalancer: {consistentHash: {httpCookie: {name: session, ttl: 1.5s}}}}
)");
  Apply("mesh.yaml", mesh);
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  for (const bool grpc : {false, true}) {
    SCOPED_TRACE(grpc ? "gRPC" : "Envoy");
    auto proxy = Connect(grpc ? "grpc-client-1" : "sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", grpc);
    proxy->Send(First(std::string(kClusterType), {}));
    auto cds = proxy->Take();
    ASSERT_EQ(cds.size(), 1u);
    for (int i = 0; i < cds[0].resources_size(); ++i) {
      const auto cluster = Decode<envoy::config::cluster::v3::Cluster>(cds[0], i);
      if (cluster.name().find("inventory") == std::string::npos) continue;
      EXPECT_EQ(cluster.lb_policy(), envoy::config::cluster::v3::Cluster::RING_HASH) << cluster.name();
      EXPECT_EQ(cluster.ring_hash_lb_config().minimum_ring_size().value(),
                cluster.name().find("|v2|") != std::string::npos ? 1024u : 256u)
          << cluster.name() << ": the subset's own policy, with Istio's default ring";
    }
    proxy->Send(Request(std::string(kRouteType), {grpc ? "inventory.mesh.local:8080" : "8080"}));
    auto rds = proxy->Take();
    ASSERT_EQ(rds.size(), 1u);
    const auto config = Decode<envoy::config::route::v3::RouteConfiguration>(rds[0], 0);
    const auto& routes = config.virtual_hosts(0).routes();
    ASSERT_EQ(routes.size(), 2);
    // Route 0 goes to v2 (cookie); route 1 splits v1 (header) and v2 (cookie).
    if (grpc) {
      EXPECT_EQ(routes[0].route().hash_policy_size(), 0) << "gRPC does not hash on cookies";
      ASSERT_EQ(routes[1].route().hash_policy_size(), 1);
      EXPECT_EQ(routes[1].route().hash_policy(0).header().header_name(), "x-user");
    } else {
      ASSERT_EQ(routes[0].route().hash_policy_size(), 1);
      EXPECT_EQ(routes[0].route().hash_policy(0).cookie().name(), "session");
      EXPECT_EQ(routes[0].route().hash_policy(0).cookie().ttl().nanos(), 500000000);
      ASSERT_EQ(routes[1].route().hash_policy_size(), 2);
      EXPECT_EQ(routes[1].route().hash_policy(0).header().header_name(), "x-user");
      EXPECT_EQ(routes[1].route().hash_policy(1).cookie().name(), "session");
    }
  }
}

constexpr char kEnvoyOnlyRoutes[] = R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: inventory}
spec:
  hosts: [inventory.mesh.local]
  http:
  - name: admin
    match:
    - {method: {exact: DELETE}, authority: {prefix: admin.}, scheme: {exact: https}, queryParams: {debug: {exact: "1"}}}
    route: [{destination: {host: inventory.mesh.local, subset: v2}}]
  - name: pseudo
    match: [{headers: {":path": {prefix: /internal/}}, withoutHeaders: {":method": {exact: GET}}}]
    route: [{destination: {host: inventory.mesh.local, subset: v2}}]
  - name: api
    match:
    - uri: {prefix: /API/}
      ignoreUriCase: true
      withoutHeaders: {x-legacy: {exact: "yes"}}
    rewrite: {uri: /v2/, authority: inventory.internal}
    headers:
      request: {set: {x-route: api}, add: {x-trace: a}, remove: [x-debug]}
      response: {remove: [server]}
    mirror: {host: inventory.mesh.local, subset: v1}
    mirrorPercentage: {value: 25}
    route:
    - destination: {host: inventory.mesh.local, subset: v1}
      weight: 90
      headers: {request: {set: {x-version: v1}}}
    - destination: {host: inventory.mesh.local, subset: v2}
      weight: 10
)";

// Envoy-only route features (gRFC A28 leaves them out of gRPC): Istio's translation for Envoy
// nodes (pseudo-headers matched by name, as istiod sends them); for gRPC nodes the routes that
// match pseudo-headers or the query are left out and the rest ignored.
TEST_F(GeneratorsTest, RouteMatchesRewritesHeadersAndMirrorsForEnvoyOnly) {
  Apply("routes.yaml", kEnvoyOnlyRoutes);
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const auto config = RoutesFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false, "8080");
  ASSERT_EQ(config.virtual_hosts_size(), 1);
  const auto& routes = config.virtual_hosts(0).routes();
  ASSERT_EQ(routes.size(), 3);
  const auto& admin = routes[0].match();
  ASSERT_EQ(admin.headers_size(), 3);
  EXPECT_EQ(admin.headers(0).name(), ":method");
  EXPECT_EQ(admin.headers(0).string_match().exact(), "DELETE");
  EXPECT_EQ(admin.headers(1).name(), ":authority");
  EXPECT_EQ(admin.headers(1).string_match().prefix(), "admin.");
  EXPECT_EQ(admin.headers(2).name(), ":scheme");
  ASSERT_EQ(admin.query_parameters_size(), 1);
  EXPECT_EQ(admin.query_parameters(0).name(), "debug");
  EXPECT_EQ(admin.query_parameters(0).string_match().exact(), "1");

  const auto& pseudo = routes[1].match();
  EXPECT_EQ(pseudo.prefix(), "/");
  ASSERT_EQ(pseudo.headers_size(), 2);
  EXPECT_EQ(pseudo.headers(0).name(), ":path");
  EXPECT_EQ(pseudo.headers(0).string_match().prefix(), "/internal/");
  EXPECT_FALSE(pseudo.headers(0).invert_match());
  EXPECT_EQ(pseudo.headers(1).name(), ":method");
  EXPECT_EQ(pseudo.headers(1).string_match().exact(), "GET");
  EXPECT_TRUE(pseudo.headers(1).invert_match());

  const auto& api = routes[2];
  EXPECT_EQ(api.match().prefix(), "/API/");
  EXPECT_FALSE(api.match().case_sensitive().value());
  ASSERT_EQ(api.match().headers_size(), 1);
  EXPECT_EQ(api.match().headers(0).name(), "x-legacy");
  EXPECT_TRUE(api.match().headers(0).invert_match()) << "withoutHeaders";
  EXPECT_EQ(api.route().prefix_rewrite(), "/v2/");
  EXPECT_EQ(api.route().host_rewrite_literal(), "inventory.internal");
  using Option = envoy::config::core::v3::HeaderValueOption;
  ASSERT_EQ(api.request_headers_to_add_size(), 2);
  EXPECT_EQ(api.request_headers_to_add(0).header().key(), "x-route");
  EXPECT_EQ(api.request_headers_to_add(0).append_action(), Option::OVERWRITE_IF_EXISTS_OR_ADD) << "set replaces";
  EXPECT_EQ(api.request_headers_to_add(1).header().key(), "x-trace");
  EXPECT_EQ(api.request_headers_to_add(1).append_action(), Option::APPEND_IF_EXISTS_OR_ADD) << "add appends";
  EXPECT_THAT(api.request_headers_to_remove(), ::testing::ElementsAre("x-debug"));
  EXPECT_THAT(api.response_headers_to_remove(), ::testing::ElementsAre("server"));
  ASSERT_EQ(api.route().request_mirror_policies_size(), 1);
  EXPECT_EQ(api.route().request_mirror_policies(0).cluster(), "outbound|8080|v1|inventory.mesh.local");
  EXPECT_EQ(api.route().request_mirror_policies(0).runtime_fraction().default_value().numerator(), 250000u);
  const auto& v1 = api.route().weighted_clusters().clusters(0);
  ASSERT_EQ(v1.request_headers_to_add_size(), 1) << "a destination's headers on its cluster weight";
  EXPECT_EQ(v1.request_headers_to_add(0).header().value(), "v1");
  EXPECT_EQ(api.route().weighted_clusters().clusters(1).request_headers_to_add_size(), 0);

  const auto grpc_config = RoutesFor("grpc-client-1", true, "inventory.mesh.local:8080");
  ASSERT_EQ(grpc_config.virtual_hosts_size(), 1);
  const auto& grpc_routes = grpc_config.virtual_hosts(0).routes();
  ASSERT_EQ(grpc_routes.size(), 1) << "the pseudo-header and query routes are left out for gRPC";
  EXPECT_EQ(grpc_routes[0].name(), "api");
  EXPECT_FALSE(grpc_routes[0].match().case_sensitive().value()) << "gRPC implements case-insensitive paths";
  EXPECT_TRUE(grpc_routes[0].match().headers(0).invert_match()) << "and inverted header matches";
  EXPECT_EQ(grpc_routes[0].request_headers_to_add_size(), 0);
  EXPECT_TRUE(grpc_routes[0].route().prefix_rewrite().empty());
  EXPECT_EQ(grpc_routes[0].route().request_mirror_policies_size(), 0);
}

// Header names are HTTP tokens as Istio takes them ("x.trace|id"): each reaches Envoy's matcher
// and header operations as written, within Envoy's rules, and gRPC's matcher too.
TEST_F(GeneratorsTest, HeaderNamesOfHttpTokensReachTheProxiesAsWritten) {
  Apply("routes.yaml", std::string(kInventoryRoutesHead) + R"(  - name: api
    match: [{headers: {"x.trace|id": {exact: a}}, withoutHeaders: {"x~b": {exact: b}}}]
    headers: {request: {set: {"x.set!": v}}, response: {remove: ["x'gone"]}}
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  for (const bool grpc : {false, true}) {
    const auto route = OnlyInventoryRoute(grpc);
    EXPECT_THAT(PgvChecker().Check(route), ::testing::IsEmpty()) << route.DebugString();
    ASSERT_EQ(route.match().headers_size(), 2) << route.DebugString();
    EXPECT_EQ(route.match().headers(0).name(), "x.trace|id");
    EXPECT_EQ(route.match().headers(1).name(), "x~b");
    EXPECT_TRUE(route.match().headers(1).invert_match());
    if (grpc) continue;  // gRPC has no header operations (GrpcIgnoredRouteFields)
    ASSERT_EQ(route.request_headers_to_add_size(), 1);
    EXPECT_EQ(route.request_headers_to_add(0).header().key(), "x.set!");
    EXPECT_THAT(route.response_headers_to_remove(), ::testing::ElementsAre("x'gone"));
  }
}

// rewrite.uriRegexRewrite is RouteAction.regex_rewrite; `mirrors` is one mirror policy each, as
// istiod writes it: a percentage in millionths, the default 100 in hundredths, none at 0%.
// Envoy only: gRPC implements neither (gRFC A28).
TEST_F(GeneratorsTest, RegexRewritesAndSeveralMirrorsForEnvoyOnly) {
  Apply("routes.yaml", std::string(kInventoryRoutesHead) + R"(  - name: api
    rewrite:
      uriRegexRewrite: {match: "^/service/([^/]+)(/.*)$", rewrite: "\\2/instance/\\1"}
    mirrors:
    - destination: {host: inventory.mesh.local, subset: v2}
      percentage: {value: 12.5}
    - destination: {host: inventory.mesh.local}
    - destination: {host: inventory.mesh.local, subset: v1}
      percentage: {value: 0}
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const auto route = OnlyInventoryRoute(false);
  const auto& action = route.route();
  EXPECT_EQ(action.regex_rewrite().pattern().regex(), "^/service/([^/]+)(/.*)$");
  EXPECT_EQ(action.regex_rewrite().substitution(), "\\2/instance/\\1");
  EXPECT_TRUE(action.prefix_rewrite().empty());
  ASSERT_EQ(action.request_mirror_policies_size(), 2);
  EXPECT_EQ(action.request_mirror_policies(0).cluster(), "outbound|8080|v2|inventory.mesh.local");
  EXPECT_EQ(action.request_mirror_policies(0).runtime_fraction().default_value().numerator(), 125000u);
  EXPECT_EQ(action.request_mirror_policies(0).runtime_fraction().default_value().denominator(),
            envoy::type::v3::FractionalPercent::MILLION);
  EXPECT_EQ(action.request_mirror_policies(1).cluster(), "outbound|8080||inventory.mesh.local");
  EXPECT_EQ(action.request_mirror_policies(1).runtime_fraction().default_value().numerator(), 100u);
  EXPECT_EQ(action.request_mirror_policies(1).runtime_fraction().default_value().denominator(),
            envoy::type::v3::FractionalPercent::HUNDRED);

  const auto grpc_route = OnlyInventoryRoute(true);
  EXPECT_FALSE(grpc_route.route().has_regex_rewrite());
  EXPECT_EQ(grpc_route.route().request_mirror_policies_size(), 0);
  EXPECT_EQ(grpc_route.route().cluster(), "outbound|8080|v1|inventory.mesh.local");
}

// corsPolicy is the route's typed_per_filter_config for Envoy's CORS filter (which every Envoy
// connection manager lists); gRPC nodes get neither.
TEST_F(GeneratorsTest, ACorsPolicyIsTheCorsFiltersPerRouteConfigForEnvoyOnly) {
  Apply("routes.yaml", std::string(kInventoryRoutesHead) + R"(  - name: api
    corsPolicy:
      allowOrigins: [{exact: "https://shop.example.com"}, {prefix: "https://dev."}]
      allowMethods: [GET, POST]
      allowHeaders: [x-custom]
      exposeHeaders: [x-trace, x-served-by]
      maxAge: 1.5h
      allowCredentials: false
      unmatchedPreflights: IGNORE
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const auto route = OnlyInventoryRoute(false);
  const auto& per_filter = route.typed_per_filter_config();
  ASSERT_TRUE(per_filter.contains("envoy.filters.http.cors"));
  envoy::extensions::filters::http::cors::v3::CorsPolicy cors;
  ASSERT_TRUE(per_filter.at("envoy.filters.http.cors").UnpackTo(&cors));
  ASSERT_EQ(cors.allow_origin_string_match_size(), 2);
  EXPECT_EQ(cors.allow_origin_string_match(0).exact(), "https://shop.example.com");
  EXPECT_EQ(cors.allow_origin_string_match(1).prefix(), "https://dev.");
  EXPECT_EQ(cors.allow_methods(), "GET,POST");
  EXPECT_EQ(cors.allow_headers(), "x-custom");
  EXPECT_EQ(cors.expose_headers(), "x-trace,x-served-by");
  EXPECT_EQ(cors.max_age(), "5400");
  ASSERT_TRUE(cors.has_allow_credentials());
  EXPECT_FALSE(cors.allow_credentials().value());
  ASSERT_TRUE(cors.has_forward_not_matching_preflights());
  EXPECT_FALSE(cors.forward_not_matching_preflights().value()) << "unmatchedPreflights: IGNORE";

  EXPECT_FALSE(OnlyInventoryRoute(true).typed_per_filter_config().contains("envoy.filters.http.cors"));
}

// What a gRPC node is generated without, per resource it holds, by the generators' rules: the
// route fields gRPC lacks (only routes that apply to its port), and the merged policy fields of
// each cluster's DestinationRule.
TEST_F(GeneratorsTest, AGrpcNodeIsToldPerResourceWhatItIsGeneratedWithout) {
  const std::string subsets =
      "  subsets:\n  - {name: v1, labels: {version: v1}}\n  - {name: v2, labels: {version: v2}}\n";
  Apply("mesh.yaml", absl::StrReplaceAll(std::string(kMesh), {{subsets, R"(  subsets:
  - {name: v1, labels: {version: v1}, trafficPolicy: {loadBalancer: {warmupDurationSecs: 5s}}}
  - name: v2
    labels: {version: v2}
    trafficPolicy:
      loadBalancer: {consistentHash: {useSourceIp: true}, warmup: {duration: 5s}}
      outlierDetection: {consecutive5xxErrors: 2}
)"}}));
  Apply("routes.yaml", std::string(kInventoryRoutesHead) + R"(  - name: browser
    corsPolicy: {allowOrigins: [{exact: "https://shop.example.com"}]}
    headers: {request: {set: {x-a: b}}}
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - name: other-port
    match: [{port: 9999, headers: {x-b: {exact: c}}}]
    rewrite: {authority: elsewhere}
    route: [{destination: {host: inventory.mesh.local, subset: v2}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(First(std::string(kRouteType), {"inventory.mesh.local:8080"}));
  ASSERT_EQ(grpc->Take().size(), 1u);
  grpc->Send(Request(std::string(kClusterType),
                     {"outbound|8080|v1|inventory.mesh.local", "outbound|8080|v2|inventory.mesh.local"}));
  ASSERT_EQ(grpc->Take().size(), 1u);
  const std::vector<std::string> notes = GrpcNotesOf("grpc-client-1", /*with_resource=*/true);
  EXPECT_THAT(
      notes,
      ::testing::ElementsAre(
          "inventory.mesh.local:8080 | VirtualService default/inventory | spec.http[0] | headers, corsPolicy: not "
          "implemented by proxyless gRPC clients (gRFC A28)",
          "outbound|8080|v1|inventory.mesh.local | DestinationRule default/inventory | spec.trafficPolicy and "
          "spec.subsets[0].trafficPolicy, merged | loadBalancer.warmup or warmupDurationSecs (gRPC has no slow start: "
          "a new endpoint gets its full share at once): not applied for gRPC",
          "outbound|8080|v2|inventory.mesh.local | DestinationRule default/inventory | spec.trafficPolicy and "
          "spec.subsets[1].trafficPolicy, merged | loadBalancer.consistentHash by other than httpHeaderName (gRPC "
          "hashes on headers only: the ring hash has no key and picks at random): not applied for gRPC",
          "outbound|8080|v2|inventory.mesh.local | DestinationRule default/inventory | spec.trafficPolicy and "
          "spec.subsets[1].trafficPolicy, merged | outlierDetection (gRPC ejects by success rate and failure "
          "percentage, not by the consecutive errors Istio sets): not applied for gRPC"))
      << "nothing for the port-9999 route, nor for v2's warmup, which its ring hash leaves out on Envoy too";
  const auto* mesh = dynamic_cast<const MeshContext*>(pipeline_->context().get());
  ASSERT_NE(mesh, nullptr);
  EXPECT_EQ(GrpcConfigNotes(*mesh, *pipeline_->ProxyView("grpc-client-1"), "default", /*limit=*/1).size(), 1u);
}

// The delegate VirtualService inventory-leaf, its routes to follow (after a route of
// kInventoryRoutesHead's delegating to it).
constexpr char kInventoryLeafHead[] = R"(---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: inventory-leaf}
spec:
  http:
)";

// A route merged from a delegate: config status says each gRPC-ignored field where it was
// written, the delegate's route or the delegating one.
TEST_F(GeneratorsTest, GrpcNotesOfADelegatedRouteNameWhereEachFieldWasWritten) {
  Apply("routes.yaml", std::string(kInventoryRoutesHead) + R"(  - name: root
    headers: {request: {set: {x-a: b}}}
    corsPolicy: {allowOrigins: [{exact: "https://shop.example.com"}]}
    retries: {attempts: 2, perTryTimeout: 1s}
    mirror: {host: inventory.mesh.local, subset: v1}
    mirrorPercentage: {value: 0}
    delegate: {name: inventory-leaf}
)" + std::string(kInventoryLeafHead) +
                           R"(  - name: leaf
    match: [{uri: {prefix: /leaf}}]
    rewrite: {authority: elsewhere}
    retries: {attempts: 1}
    route: [{destination: {host: inventory.mesh.local, subset: v2}}]
  - name: mirrored
    match: [{uri: {prefix: /mirrored}}]
    mirrorPercentage: {value: 50}
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - name: plain
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(First(std::string(kRouteType), {"inventory.mesh.local:8080"}));
  ASSERT_EQ(grpc->Take().size(), 1u);
  const std::vector<std::string> notes = GrpcNotesOf("grpc-client-1", /*with_resource=*/false);
  const std::string a28 = ": not implemented by proxyless gRPC clients (gRFC A28)";
  EXPECT_THAT(notes, ::testing::ElementsAre("VirtualService default/inventory-leaf | spec.http[0] | rewrite" + a28,
                                            "VirtualService default/inventory | spec.http[0] | headers, corsPolicy, "
                                            "retries.perTryTimeout" +
                                                a28,
                                            "VirtualService default/inventory-leaf | spec.http[1] | mirror" + a28))
      << "the delegating route said once, with what each merge took of it: its retries only where the delegate's "
         "route sets none; a mirror only the merge makes (the delegating route's at the delegate's 50%) is the "
         "delegate's";
}

// A fault delay cut for gRPC is said where it was written: a route merged from a delegate takes
// the delegating route's fault only where its own route has none.
TEST_F(GeneratorsTest, GrpcNotesOfACutFaultDelayNameWhereTheDelayWasWritten) {
  Apply("routes.yaml", std::string(kInventoryRoutesHead) + R"(  - name: root
    fault: {delay: {fixedDelay: 720h, percentage: {value: 100}}}
    delegate: {name: inventory-leaf}
)" + std::string(kInventoryLeafHead) +
                           R"(  - name: own
    match: [{uri: {prefix: /own}}]
    fault: {delay: {fixedDelay: 800h, percentage: {value: 50}}}
    route: [{destination: {host: inventory.mesh.local, subset: v2}}]
  - name: short
    match: [{uri: {prefix: /short}}]
    fault: {delay: {fixedDelay: 1s, percentage: {value: 50}}}
    route: [{destination: {host: inventory.mesh.local, subset: v2}}]
  - name: taken
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(First(std::string(kRouteType), {"inventory.mesh.local:8080"}));
  ASSERT_EQ(grpc->Take().size(), 1u);
  const std::string cut =
      " | spec.http[0].fault.delay.fixedDelay | sent to gRPC as 2147483647ms (about 24.8 days): grpc-js waits with "
      "Node's setTimeout, which fires a longer delay after 1 ms";
  EXPECT_THAT(
      GrpcNotesOf("grpc-client-1", /*with_resource=*/false),
      ::testing::ElementsAre("VirtualService default/inventory" + cut, "VirtualService default/inventory-leaf" + cut))
      << "the delegating route's, taken by the route without a fault of its own; the delegate's own first route's; "
         "nothing for the route with a short delay of its own";
}

// Subsets select endpoints by their labels as istiod's registries give them (AugmentLabels):
// their locality as topology labels, the cluster (--cluster-id, over a label written on the Pod)
// and a Pod's node, for EDS and for the names of a DNS ServiceEntry's cluster alike.
TEST_F(GeneratorsTest, SubsetsSelectEndpointsByTheTopologyLabelsIstiodGivesThem) {
  Apply("topology.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: kube, namespace: default}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: v1
kind: Pod
metadata: {name: kube-1, namespace: default, labels: {istio-locality: ap-south.ap-south-1c, topology.istio.io/cluster: written}}
spec: {nodeName: node-a, containers: [{name: app, image: app}]}
status: {podIP: 127.0.0.65}
---
apiVersion: v1
kind: Pod
metadata: {name: kube-2, namespace: default, labels: {istio-locality: eu-west.eu-west-1b}}
spec: {nodeName: node-b}
status: {podIP: 127.0.0.66}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: kube-1, namespace: default, labels: {kubernetes.io/service-name: kube}}
addressType: IPv4
ports: [{name: http, port: 18080}]
endpoints:
- {addresses: [127.0.0.65], targetRef: {kind: Pod, name: kube-1}}
- {addresses: [127.0.0.66], targetRef: {kind: Pod, name: kube-2}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: kube}
spec:
  host: kube
  subsets:
  - {name: south, labels: {topology.kubernetes.io/region: ap-south}}
  - {name: on-b, labels: {kubernetes.io/hostname: node-b}}
  - {name: here, labels: {topology.istio.io/cluster: Kubernetes}}
  - {name: written, labels: {topology.istio.io/cluster: written}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: geo}
spec:
  resolution: STATIC
  hosts: [geo.mesh.local]
  ports: [{number: 8080, name: http}]
  endpoints:
  - {address: 127.0.0.61, locality: us-east/us-east-1a}
  - {address: 127.0.0.63, locality: eu-west/eu-west-1b/rack-7}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: geo}
spec:
  host: geo.mesh.local
  subsets: [{name: rack, labels: {topology.istio.io/subzone: rack-7}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: names}
spec:
  hosts: [names.example.com]
  ports: [{number: 8443, name: http}]
  resolution: DNS
  endpoints:
  - {address: us.names.example.com, locality: us-east/us-east-1a}
  - {address: eu.names.example.com, labels: {istio-locality: eu-west.eu-west-1b}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: names}
spec:
  host: names.example.com
  subsets: [{name: eu, labels: {topology.kubernetes.io/zone: eu-west-1b}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using Addresses = std::vector<std::string>;
  EXPECT_EQ(EndpointAddressesFor("outbound|8080|south|kube.default.svc.cluster.local"), Addresses{"127.0.0.65"})
      << "the Pod's istio-locality label as topology.kubernetes.io/region";
  EXPECT_EQ(EndpointAddressesFor("outbound|8080|on-b|kube.default.svc.cluster.local"), Addresses{"127.0.0.66"})
      << "the Pod's spec.nodeName as kubernetes.io/hostname";
  EXPECT_EQ(EndpointAddressesFor("outbound|8080|here|kube.default.svc.cluster.local"),
            (Addresses{"127.0.0.65", "127.0.0.66"}))
      << "every endpoint is of the registry's cluster";
  EXPECT_EQ(EndpointAddressesFor("outbound|8080|written|kube.default.svc.cluster.local"), Addresses{})
      << "the cluster goes over a label of that name, as in istiod";
  EXPECT_EQ(EndpointAddressesFor("outbound|8080|rack|geo.mesh.local"), Addresses{"127.0.0.63"})
      << "a ServiceEntry endpoint's locality";
  auto clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  const auto& eu = clusters["outbound|8443|eu|names.example.com"].load_assignment();
  ASSERT_EQ(eu.endpoints_size(), 1);
  ASSERT_EQ(eu.endpoints(0).lb_endpoints_size(), 1);
  EXPECT_EQ(eu.endpoints(0).lb_endpoints(0).endpoint().address().socket_address().address(), "eu.names.example.com")
      << "a DNS ServiceEntry's names are selected alike";
}

// The model's cluster (--cluster-id) is the one subsets see: for EDS, for a DNS ServiceEntry's
// names, and for WorkloadEntries a ServiceEntry selects by it.
class GeneratorsWestTest : public GeneratorsTest {
 protected:
  GeneratorsWestTest() : GeneratorsTest("west") {}
};

TEST_F(GeneratorsWestTest, SubsetsAndSelectorsSeeTheModelsCluster) {
  Apply("west.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: geo}
spec:
  resolution: STATIC
  hosts: [geo.mesh.local]
  ports: [{number: 8080, name: http}]
  endpoints: [{address: 127.0.0.61}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: vms}
spec:
  resolution: STATIC
  hosts: [vms.mesh.local]
  ports: [{number: 8080, name: http}]
  workloadSelector: {labels: {topology.istio.io/cluster: west, vm: "yes"}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: vms-k8s}
spec:
  resolution: STATIC
  hosts: [vms-k8s.mesh.local]
  ports: [{number: 8080, name: http}]
  workloadSelector: {labels: {topology.istio.io/cluster: Kubernetes, vm: "yes"}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1}
spec: {address: 127.0.0.71, labels: {vm: "yes"}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: names}
spec:
  hosts: [names.example.com]
  ports: [{number: 8443, name: http}]
  resolution: DNS
  endpoints: [{address: a.names.example.com}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: geo}
spec:
  host: geo.mesh.local
  subsets: [{name: west, labels: {topology.istio.io/cluster: west}}, {name: k8s, labels: {topology.istio.io/cluster: Kubernetes}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: names}
spec:
  host: names.example.com
  subsets: [{name: west, labels: {topology.istio.io/cluster: west}}, {name: k8s, labels: {topology.istio.io/cluster: Kubernetes}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  EXPECT_EQ(EndpointAddressesFor("outbound|8080|west|geo.mesh.local").size(), 1u);
  EXPECT_EQ(EndpointAddressesFor("outbound|8080|k8s|geo.mesh.local").size(), 0u)
      << "the model's cluster, not the default";
  EXPECT_EQ(EndpointAddressesFor("outbound|8080||vms.mesh.local").size(), 1u)
      << "the WorkloadEntry is selected by its cluster";
  EXPECT_EQ(EndpointAddressesFor("outbound|8080||vms-k8s.mesh.local").size(), 0u);
  auto clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  EXPECT_EQ(clusters["outbound|8443|west|names.example.com"].load_assignment().endpoints(0).lb_endpoints_size(), 1);
  EXPECT_EQ(clusters["outbound|8443|k8s|names.example.com"].load_assignment().endpoints(0).lb_endpoints_size(), 0);
}

// A proxy's added topology labels decide what it gets where labels choose: here the
// sourceLabels of a route, met by node metadata CLUSTER_ID alone.
TEST_F(GeneratorsTest, AProxysClusterMetadataIsALabelRoutesMayMatch) {
  Apply("by-cluster.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api}
spec:
  resolution: STATIC
  hosts: [api.mesh.local]
  ports: [{number: 8080, name: http}]
  endpoints: [{address: 127.0.0.81}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api-east}
spec:
  resolution: STATIC
  hosts: [api-east.mesh.local]
  ports: [{number: 8080, name: http}]
  endpoints: [{address: 127.0.0.82}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: api}
spec:
  hosts: [api.mesh.local]
  http:
  - match: [{sourceLabels: {topology.istio.io/cluster: east}}]
    route: [{destination: {host: api-east.mesh.local}}]
  - route: [{destination: {host: api.mesh.local}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const auto first_cluster = [&](const std::string& cluster_metadata) {
    auto h = Connect("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false);
    if (!cluster_metadata.empty()) {
      (*node_.mutable_metadata()->mutable_fields())["CLUSTER_ID"].set_string_value(cluster_metadata);
    }
    h->Send(First(std::string(kRouteType), {"8080"}));
    auto rds = h->Take();
    if (rds.size() != 1) return std::string("(no response)");
    const auto routes = Decode<envoy::config::route::v3::RouteConfiguration>(rds[0], 0);
    for (const auto& vhost : routes.virtual_hosts()) {
      if (vhost.domains(0) == "api.mesh.local") return vhost.routes(0).route().cluster();
    }
    return std::string("(no virtual host)");
  };
  EXPECT_EQ(first_cluster("east"), "outbound|8080||api-east.mesh.local");
  EXPECT_EQ(first_cluster("west"), "outbound|8080||api.mesh.local");
  EXPECT_EQ(first_cluster(""), "outbound|8080||api.mesh.local");
}

// A route's destination may name a ServiceEntry's wildcard host, as Istio takes it: the route
// goes to that host's cluster, outbound|PORT||*.HOST, which the entry's endpoints make.
TEST_F(GeneratorsTest, ARouteMayGoToAWildcardHost) {
  Apply("eu.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: eu}
spec:
  hosts: ["*.eu.example.com"]
  ports: [{number: 80, name: http}]
  resolution: DNS
  endpoints: [{address: eu-lb.example.com}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: reviews}
spec:
  hosts: [reviews.example.com]
  ports: [{number: 80, name: http}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.5}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews}
spec:
  hosts: [reviews.example.com]
  http:
  - route: [{destination: {host: "*.eu.example.com"}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::string sidecar = "sidecar~127.0.0.5~app-1.default~default.svc.cluster.local";
  const auto config = RoutesFor(sidecar, false, "80");
  const envoy::config::route::v3::VirtualHost* reviews = nullptr;
  for (const auto& vhost : config.virtual_hosts()) {
    if (vhost.name() == "reviews.example.com:80") reviews = &vhost;
  }
  ASSERT_NE(reviews, nullptr) << config.DebugString();
  ASSERT_EQ(reviews->routes_size(), 1);
  EXPECT_EQ(reviews->routes(0).route().cluster(), "outbound|80||*.eu.example.com");
  std::map<std::string, envoy::config::cluster::v3::Cluster> clusters = ClustersFor(sidecar);
  ASSERT_TRUE(clusters.contains("outbound|80||*.eu.example.com"));
  EXPECT_EQ(clusters["outbound|80||*.eu.example.com"].type(), envoy::config::cluster::v3::Cluster::STRICT_DNS);
}

// A ServiceEntry without ports (valid Istio) serves nothing, as in istiod: no cluster, and the
// push goes on for the rest.
TEST_F(GeneratorsTest, AServiceEntryWithoutPortsServesNothing) {
  Apply("portless.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: portless}
spec:
  hosts: [portless.example.com]
  addresses: [127.0.0.40]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: portless}
spec:
  hosts: [portless.example.com]
  http: [{route: [{destination: {host: portless.example.com}}]}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::map<std::string, envoy::config::cluster::v3::Cluster> clusters =
      ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  EXPECT_FALSE(clusters.empty()) << "the rest of the mesh is served";
  for (const auto& [name, cluster] : clusters) EXPECT_EQ(name.find("portless"), std::string::npos) << name;
}

// A DNS ServiceEntry is a STRICT_DNS cluster (DNS_ROUND_ROBIN: LOGICAL_DNS) holding the names
// Envoy resolves, a subset's only those it selects; without endpoints, the host itself.
TEST_F(GeneratorsTest, DnsServiceEntriesAreClustersOfNamesForEnvoyOnly) {
  Apply("dns.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api}
spec:
  hosts: [api.example.com]
  ports: [{number: 8443, name: http-api, targetPort: 9443}]
  resolution: DNS
  endpoints:
  - {address: us.api.example.com, labels: {region: us}, ports: {http-api: 7443}}
  - {address: eu.api.example.com, labels: {region: eu}, weight: 3}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api}
spec:
  host: api.example.com
  subsets: [{name: eu, labels: {region: eu}}, {name: none, labels: {region: mars}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db}
spec:
  hosts: [db.example.com]
  ports: [{number: 8080, name: http}]
  resolution: DNS_ROUND_ROBIN
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: db}
spec:
  host: db.example.com
  subsets: [{name: all}, {name: v1, labels: {version: v1}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using Cluster = envoy::config::cluster::v3::Cluster;
  std::map<std::string, Cluster> clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  const Cluster& api = clusters["outbound|8443||api.example.com"];
  EXPECT_EQ(api.type(), Cluster::STRICT_DNS);
  EXPECT_FALSE(api.has_eds_cluster_config());
  EXPECT_TRUE(api.respect_dns_ttl());
  const auto& all = api.load_assignment().endpoints(0).lb_endpoints();
  ASSERT_EQ(all.size(), 2);
  EXPECT_EQ(all[0].endpoint().address().socket_address().address(), "us.api.example.com");
  EXPECT_EQ(all[0].endpoint().address().socket_address().port_value(), 7443u) << "the endpoint's own port";
  EXPECT_EQ(all[1].endpoint().address().socket_address().port_value(), 9443u) << "else the targetPort";
  EXPECT_EQ(all[1].load_balancing_weight().value(), 3u);
  const auto& eu = clusters["outbound|8443|eu|api.example.com"].load_assignment().endpoints(0).lb_endpoints();
  ASSERT_EQ(eu.size(), 1);
  EXPECT_EQ(eu[0].endpoint().address().socket_address().address(), "eu.api.example.com");
  EXPECT_EQ(clusters["outbound|8443|none|api.example.com"].load_assignment().endpoints(0).lb_endpoints_size(), 0);
  const Cluster& db = clusters["outbound|8080||db.example.com"];
  EXPECT_EQ(db.type(), Cluster::LOGICAL_DNS);
  ASSERT_EQ(db.load_assignment().endpoints(0).lb_endpoints_size(), 1);
  EXPECT_EQ(db.load_assignment().endpoints(0).lb_endpoints(0).endpoint().address().socket_address().address(),
            "db.example.com")
      << "without endpoints, the host itself";
  const auto& all_of_db = clusters["outbound|8080|all|db.example.com"].load_assignment();
  ASSERT_EQ(all_of_db.endpoints_size(), 1);
  EXPECT_EQ(all_of_db.endpoints(0).lb_endpoints_size(), 1) << "a subset without labels selects the host too";
  EXPECT_EQ(clusters["outbound|8080|v1|db.example.com"].load_assignment().endpoints(0).lb_endpoints_size(), 0)
      << "the host itself has no labels for a subset to select, as in istiod";

  // gRPC nodes: an EDS cluster of what cxds resolved the names to (DnsRefresher), each address
  // with its endpoint's port, labels and weight.
  model_.SetResolvedNames(
      {{"eu.api.example.com", {"127.0.0.61", "127.0.0.62"}}, {"us.api.example.com", {"127.0.0.63"}}});
  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(First(std::string(kClusterType), {"outbound|8443|eu|api.example.com"}));
  auto cds = grpc->Take();
  ASSERT_EQ(cds.size(), 1u);
  ASSERT_EQ(cds[0].resources_size(), 1);
  EXPECT_EQ(Decode<Cluster>(cds[0], 0).type(), Cluster::EDS);
  grpc->Send(Request(std::string(kEndpointType), {"outbound|8443|eu|api.example.com"}));
  auto eds = grpc->Take();
  ASSERT_EQ(eds.size(), 1u);
  const auto cla = Decode<envoy::config::endpoint::v3::ClusterLoadAssignment>(eds[0], 0);
  ASSERT_EQ(cla.endpoints(0).lb_endpoints_size(), 2) << "the eu name's two addresses";
  EXPECT_EQ(cla.endpoints(0).lb_endpoints(0).endpoint().address().socket_address().address(), "127.0.0.61");
  EXPECT_EQ(cla.endpoints(0).lb_endpoints(0).endpoint().address().socket_address().port_value(), 9443u);
  EXPECT_EQ(cla.endpoints(0).lb_endpoints(1).load_balancing_weight().value(), 3u);
}

// connectionPool's connection tuning: TCP keepalive on the cluster's upstream sockets and the
// upstream HttpProtocolOptions (HTTP/2 here: inventory's port is GRPC). Envoy only.
TEST_F(GeneratorsTest, ConnectionTuningIsKeepaliveAndUpstreamHttpOptionsForEnvoyOnly) {
  // The mesh's own rule for inventory, with a traffic policy.
  const std::string subsets =
      "  subsets:\n  - {name: v1, labels: {version: v1}}\n  - {name: v2, labels: {version: v2}}\n";
  const std::string mesh(kMesh);
  ASSERT_NE(mesh.find(subsets), std::string::npos);
  Apply("mesh.yaml", absl::StrReplaceAll(mesh, {{subsets, R"(  trafficPolicy:
    connectionPool:
      tcp:
        maxConnectionDuration: 30m
        tcpKeepalive: {probes: 3, time: 7200s, interval: 1500ms}
      http: {maxRequestsPerConnection: 10, idleTimeout: 90s}
  subsets:
  - name: v1
    labels: {version: v1}
  - name: v2
    labels: {version: v2}
    trafficPolicy: {connectionPool: {http: {maxRequestsPerConnection: 0}}}
)"}}));

  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using Cluster = envoy::config::cluster::v3::Cluster;
  std::map<std::string, Cluster> clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  const Cluster& plain = clusters["outbound|8080||inventory.mesh.local"];
  const auto& keepalive = plain.upstream_connection_options().tcp_keepalive();
  EXPECT_EQ(keepalive.keepalive_probes().value(), 3u);
  EXPECT_EQ(keepalive.keepalive_time().value(), 7200u);
  EXPECT_EQ(keepalive.keepalive_interval().value(), 1u) << "whole seconds, rounded down";
  constexpr char kOptions[] = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";
  ASSERT_TRUE(plain.typed_extension_protocol_options().contains(kOptions));
  envoy::extensions::upstreams::http::v3::HttpProtocolOptions options;
  ASSERT_TRUE(plain.typed_extension_protocol_options().at(kOptions).UnpackTo(&options));
  EXPECT_TRUE(options.explicit_http_config().has_http2_protocol_options()) << "inventory's port is GRPC: HTTP/2";
  EXPECT_EQ(options.common_http_protocol_options().max_requests_per_connection().value(), 10u);
  EXPECT_EQ(options.common_http_protocol_options().idle_timeout().seconds(), 90);
  EXPECT_EQ(options.common_http_protocol_options().max_connection_duration().seconds(), 1800);
  EXPECT_TRUE(clusters["outbound|8080|v1|inventory.mesh.local"].typed_extension_protocol_options().contains(kOptions))
      << "inherited by a subset without a pool of its own";
  const Cluster& v2 = clusters["outbound|8080|v2|inventory.mesh.local"];
  envoy::extensions::upstreams::http::v3::HttpProtocolOptions v2_options;
  ASSERT_TRUE(v2.typed_extension_protocol_options().at(kOptions).UnpackTo(&v2_options));
  EXPECT_FALSE(v2_options.has_common_http_protocol_options())
      << "the subset's pool replaces the rule's; 0 requests per connection is Istio's unlimited";
  EXPECT_FALSE(v2.upstream_connection_options().has_tcp_keepalive());

  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(First(std::string(kClusterType), {"outbound|8080||inventory.mesh.local"}));
  auto cds = grpc->Take();
  ASSERT_EQ(cds.size(), 1u);
  ASSERT_EQ(cds[0].resources_size(), 1);
  const auto grpc_cluster = Decode<Cluster>(cds[0], 0);
  EXPECT_FALSE(grpc_cluster.has_upstream_connection_options());
  EXPECT_TRUE(grpc_cluster.typed_extension_protocol_options().empty());
}

constexpr char kAnswerRoutes[] = R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: inventory}
spec:
  hosts: [inventory.mesh.local]
  http:
  - name: moved
    match: [{uri: {prefix: /old/}}]
    redirect: {uri: /new/, authority: shop.mesh.local, port: 8443, scheme: https, redirectCode: 308}
  - name: maintenance
    match: [{uri: {exact: /health}}]
    directResponse: {status: 503, body: {string: "down for maintenance"}}
    headers: {response: {set: {retry-after: "60"}}}
  - name: teapot
    match: [{uri: {exact: /tea}}]
    directResponse: {status: 418, body: {bytes: "aGVsbG8="}}
  - name: same-port
    match: [{uri: {prefix: /v1/}, statPrefix: v1-moves}]
    redirect: {uri: /v2/, derivePort: FROM_REQUEST_PORT}
  - name: default-port
    match: [{uri: {prefix: /plain/}}]
    redirect: {scheme: https, derivePort: FROM_PROTOCOL_DEFAULT}
  - name: rest
    route: [{destination: {host: inventory.mesh.local}}]
)";

// redirect and directResponse: the proxy answers, nothing goes upstream (Envoy nodes). gRPC
// routes only to clusters, so those routes are left out for gRPC nodes, and the rest stays.
TEST_F(GeneratorsTest, RedirectsAndDirectResponsesForEnvoyOnly) {
  Apply("routes.yaml", kAnswerRoutes);
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const auto config = RoutesFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false, "8080");
  ASSERT_EQ(config.virtual_hosts_size(), 1);
  const auto& routes = config.virtual_hosts(0).routes();
  ASSERT_EQ(routes.size(), 6);
  ASSERT_TRUE(routes[0].has_redirect());
  const auto& redirect = routes[0].redirect();
  EXPECT_EQ(routes[0].match().prefix(), "/old/");
  EXPECT_EQ(redirect.path_redirect(), "/new/");
  EXPECT_EQ(redirect.host_redirect(), "shop.mesh.local");
  EXPECT_EQ(redirect.port_redirect(), 8443u);
  EXPECT_EQ(redirect.scheme_redirect(), "https");
  EXPECT_EQ(redirect.response_code(), envoy::config::route::v3::RedirectAction::PERMANENT_REDIRECT);
  ASSERT_TRUE(routes[1].has_direct_response());
  EXPECT_EQ(routes[1].direct_response().status(), 503u);
  EXPECT_EQ(routes[1].direct_response().body().inline_bytes(), "down for maintenance");
  ASSERT_EQ(routes[1].response_headers_to_add_size(), 1);
  EXPECT_EQ(routes[1].response_headers_to_add(0).header().key(), "retry-after");
  EXPECT_EQ(routes[2].direct_response().status(), 418u);
  EXPECT_EQ(routes[2].direct_response().body().inline_bytes(), "hello") << "bytes are base64 in YAML";
  EXPECT_EQ(routes[3].redirect().port_redirect(), 8080u) << "FROM_REQUEST_PORT: the port these routes are for";
  EXPECT_EQ(routes[3].stat_prefix(), "v1-moves");
  EXPECT_EQ(routes[4].redirect().scheme_redirect(), "https");
  EXPECT_EQ(routes[4].redirect().port_redirect(), 0u) << "FROM_PROTOCOL_DEFAULT: no port, the scheme's default";
  EXPECT_TRUE(routes[4].stat_prefix().empty());
  EXPECT_EQ(routes[5].route().cluster(), "outbound|8080||inventory.mesh.local");

  const auto grpc_config = RoutesFor("grpc-client-1", true, "inventory.mesh.local:8080");
  ASSERT_EQ(grpc_config.virtual_hosts_size(), 1);
  ASSERT_EQ(grpc_config.virtual_hosts(0).routes_size(), 1);
  EXPECT_EQ(grpc_config.virtual_hosts(0).routes(0).name(), "rest");
}

// match.port: a match applies to the routes of that port of the host only.
TEST_F(GeneratorsTest, AMatchOnAPortIsInThatPortsRoutesOnly) {
  Apply("shop.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: shop}
spec:
  resolution: STATIC
  hosts: [shop.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}, {number: 8081, name: http-admin, protocol: HTTP}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop}
spec:
  hosts: [shop.mesh.local]
  http:
  - name: admin-only
    match: [{port: 8081, uri: {prefix: /admin}}]
    route: [{destination: {host: shop.mesh.local, port: {number: 8081}}}]
  - name: rest
    route: [{destination: {host: shop.mesh.local, port: {number: 8080}}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  for (bool grpc : {false, true}) {
    SCOPED_TRACE(grpc ? "gRPC" : "Envoy");
    const std::string node = grpc ? "grpc-client-1" : "sidecar~127.0.0.5~app-1.default~default.svc.cluster.local";
    const auto names_of = [&](uint32_t port) {
      return RouteNames(RoutesFor(node, grpc, grpc ? StrCat("shop.mesh.local:", port) : StrCat(port)),
                        StrCat("shop.mesh.local:", port));
    };
    EXPECT_THAT(names_of(8080), ::testing::ElementsAre("rest"));
    EXPECT_THAT(names_of(8081), ::testing::ElementsAre("admin-only", "rest"));
  }
}

// sourceLabels and sourceNamespace choose, per client proxy, which matches its routes have (as
// istiod's sourceMatchHTTP): the others are left out; `gateways: [mesh]` makes Istio ignore the
// source conditions. Proxies meeting the same conditions share one serialized configuration.
TEST_F(GeneratorsTest, SourceLabelsAndNamespaceChooseTheMatchesPerClient) {
  Apply("shop.yaml", kShopEntry + R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop}
spec:
  hosts: [shop.mesh.local]
  http:
  - name: from-canary
    match: [{sourceLabels: {app: web, track: canary}}]
    route: [{destination: {host: shop.mesh.local}}]
  - name: from-ops
    match: [{sourceNamespace: ops}, {uri: {prefix: /admin}, sourceLabels: {app: admin}}]
    route: [{destination: {host: shop.mesh.local}}]
  - name: mesh-wide
    match: [{gateways: [mesh], sourceLabels: {app: nobody}}]
    route: [{destination: {host: shop.mesh.local}}]
  - name: rest
    route: [{destination: {host: shop.mesh.local}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  struct Client {
    LabelMap labels;
    std::string ns;
    std::vector<std::string> routes;
  };
  const std::vector<Client> clients = {
      {{}, "default", {"mesh-wide", "rest"}},
      {{{"app", "web"}}, "default", {"mesh-wide", "rest"}},
      {{{"app", "web"}, {"track", "canary"}, {"version", "v2"}}, "default", {"from-canary", "mesh-wide", "rest"}},
      {{}, "ops", {"from-ops", "mesh-wide", "rest"}},
      {{{"app", "admin"}}, "default", {"from-ops", "mesh-wide", "rest"}},
      {{{"app", "admin"}}, "ops", {"from-ops", "from-ops", "mesh-wide", "rest"}},
  };
  for (bool grpc : {false, true}) {
    for (const Client& client : clients) {
      SCOPED_TRACE(StrCat(grpc ? "gRPC" : "Envoy", " ns ", client.ns, " labels ", client.labels.size()));
      const std::string name = grpc ? "shop.mesh.local:8080" : "8080";
      auto h = Connect(grpc ? "grpc-client-1" : "sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", grpc,
                       client.ns);
      auto* labels = (*node_.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value();
      for (const auto& [key, value] : client.labels) (*labels->mutable_fields())[key].set_string_value(value);
      h->Send(First(std::string(kRouteType), {name}));
      auto rds = h->Take();
      ASSERT_EQ(rds.size(), 1u);
      EXPECT_EQ(RouteNames(Decode<envoy::config::route::v3::RouteConfiguration>(rds[0], 0), "shop.mesh.local:8080"),
                client.routes);
    }
  }
  // Same conditions met, same bytes: two canary web proxies of other names share the resource.
  std::vector<std::string> bytes;
  for (const char* pod : {"web-1", "web-2"}) {
    auto h = Connect(StrCat("sidecar~127.0.0.7~", pod, ".default~default.svc.cluster.local"), false);
    auto* labels = (*node_.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value();
    (*labels->mutable_fields())["app"].set_string_value("web");
    (*labels->mutable_fields())["track"].set_string_value("canary");
    (*labels->mutable_fields())["pod"].set_string_value(pod);  // a label no condition names
    h->Send(First(std::string(kRouteType), {"8080"}));
    auto rds = h->Take();
    ASSERT_EQ(rds.size(), 1u);
    bytes.push_back(rds[0].resources(0).value());
  }
  EXPECT_EQ(bytes[0], bytes[1]);
}

// VirtualService and DestinationRule exportTo, end to end through the generators: a sidecar or
// gRPC client of namespace web gets web's private VirtualService, one of another namespace the
// public one; a gateway proxy sees only VirtualServices exported to its own namespace; a rule
// exported to "." shapes only its namespace's clusters.
TEST_F(GeneratorsTest, ExportToDecidesWhichProxiesGetVirtualServicesAndDestinationRules) {
  Apply("exports.yaml", kShopEntry + R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop, namespace: default}
spec:
  hosts: [shop.mesh.local]
  http: [{name: public, route: [{destination: {host: shop.mesh.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop-for-web, namespace: web}
spec:
  hosts: [shop.mesh.local]
  exportTo: ["."]
  http: [{name: web-only, route: [{destination: {host: shop.mesh.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shop-in-web, namespace: web}
spec:
  host: shop.mesh.local
  exportTo: ["."]
  trafficPolicy: {loadBalancer: {simple: RANDOM}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shop-own, namespace: default}
spec:
  host: shop.mesh.local
  exportTo: ["."]
  trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shop-for-ops, namespace: default}
spec:
  host: shop.mesh.local
  exportTo: [ops]
  trafficPolicy: {loadBalancer: {consistentHash: {useSourceIp: true}}}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*/*.example.com"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: private-site, namespace: default}
spec:
  hosts: [private.example.com]
  gateways: [edge/ingress]
  exportTo: ["."]
  http: [{name: private, route: [{destination: {host: shop.mesh.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: edge-site, namespace: default}
spec:
  hosts: [edge.example.com]
  gateways: [edge/ingress]
  exportTo: [edge]
  http: [{name: edge, route: [{destination: {host: shop.mesh.local}}]}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  for (bool grpc : {false, true}) {
    for (const std::string ns : {"web", "default", "other"}) {
      SCOPED_TRACE(StrCat(grpc ? "gRPC " : "Envoy ", ns));
      auto h = Connect(grpc ? "grpc-client-1" : "sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", grpc, ns);
      h->Send(First(std::string(kRouteType), {grpc ? "shop.mesh.local:8080" : "8080"}));
      auto rds = h->Take();
      ASSERT_EQ(rds.size(), 1u);
      EXPECT_THAT(RouteNames(Decode<envoy::config::route::v3::RouteConfiguration>(rds[0], 0), "shop.mesh.local:8080"),
                  ::testing::ElementsAre(ns == "web" ? "web-only" : "public"));
    }
  }
  // The rule exported to "." reaches web's proxies only.
  const auto lb_of = [&](const std::string& ns) {
    auto h = Connect("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false, ns);
    h->Send(First(std::string(kClusterType), {}));
    auto responses = h->Take();
    EXPECT_EQ(responses.size(), 1u);
    for (int i = 0; !responses.empty() && i < responses[0].resources_size(); ++i) {
      const auto cluster = Decode<envoy::config::cluster::v3::Cluster>(responses[0], i);
      if (cluster.name() == "outbound|8080||shop.mesh.local") return cluster.lb_policy();
    }
    ADD_FAILURE() << "no cluster for shop.mesh.local";
    return envoy::config::cluster::v3::Cluster::ROUND_ROBIN;
  };
  // Two rules of one namespace (default) for one host reach different namespaces: each proxy
  // gets its own, whichever connected first (the cache keys the rule, not its namespace).
  EXPECT_EQ(lb_of("web"), envoy::config::cluster::v3::Cluster::RANDOM);
  EXPECT_EQ(lb_of("default"), envoy::config::cluster::v3::Cluster::ROUND_ROBIN);
  EXPECT_EQ(lb_of("ops"), envoy::config::cluster::v3::Cluster::RING_HASH);
  EXPECT_EQ(lb_of("other"), envoy::config::cluster::v3::Cluster::LEAST_REQUEST) << "no rule: istiod's default";
  EXPECT_EQ(lb_of("default"), envoy::config::cluster::v3::Cluster::ROUND_ROBIN);
  // Gateway proxies of namespace edge see edge-site (exported to edge), never private-site.
  const auto gateway_domains = [&](const std::string& id, const std::string& ns) {
    auto h = Connect(id, false, ns);
    LabelIngressGateway(node_);
    h->Send(First(std::string(kRouteType), {"http.8080"}));
    auto rds = h->Take();
    std::vector<std::string> names;
    if (rds.size() != 1) {
      ADD_FAILURE() << "no route configuration";
      return names;
    }
    const auto config = Decode<envoy::config::route::v3::RouteConfiguration>(rds[0], 0);
    for (const auto& vhost : config.virtual_hosts()) names.push_back(vhost.name());
    return names;
  };
  EXPECT_THAT(gateway_domains("router~127.0.0.9~ingress-1.edge~edge.svc.cluster.local", "edge"),
              ::testing::ElementsAre("edge.example.com:8080"));
  EXPECT_THAT(gateway_domains("router~127.0.0.9~ingress-1.default~default.svc.cluster.local", "default"),
              ::testing::ElementsAre("private.example.com:8080"));
}

// Endpoints carry their locality (a ServiceEntry endpoint's or WorkloadEntry's `locality`, a
// Pod's `istio-locality` label) and EDS groups them by it as istiod does: one locality per
// region/zone/subzone, in order, weighted by the sum of its endpoints' weights (gRPC picks a
// locality by these weights first), endpoints of no locality under the empty locality, apart
// from those of a region named "local" and those of a zone alone ("/zone-x", as istiod reads it). A label longer than
// any locality (Kubernetes refuses one over 63 characters) gives none.
TEST_F(GeneratorsTest, EndpointsAreGroupedByLocalityWeightedByTheirEndpoints) {
  Apply("localities.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: geo}
spec:
  resolution: STATIC
  hosts: [geo.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  endpoints:
  - {address: 127.0.0.61, locality: us-east/us-east-1a, weight: 3}
  - {address: 127.0.0.62, locality: us-east/us-east-1a}
  - {address: 127.0.0.63, locality: eu-west/eu-west-1b/rack/7}
  - {address: 127.0.0.64}
  - {address: 127.0.0.67, locality: local}
  - {address: 127.0.0.68, locality: /zone-x}
  - {address: 127.0.0.66, labels: {istio-locality: )" +
                               std::string(300, 'r') + R"(}}
---
apiVersion: v1
kind: Service
metadata: {name: kube, namespace: default}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: v1
kind: Pod
metadata: {name: kube-1, namespace: default, labels: {istio-locality: ap-south.ap-south-1c}}
status: {podIP: 127.0.0.65}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: kube-1, namespace: default, labels: {kubernetes.io/service-name: kube}}
addressType: IPv4
ports: [{name: http, port: 18080}]
endpoints: [{addresses: [127.0.0.65], targetRef: {kind: Pod, name: kube-1}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  struct Group {
    std::string region, zone, sub_zone;
    uint32_t weight;
    std::vector<std::string> addresses;
    bool operator==(const Group&) const = default;
  };
  const auto groups_of = [&](bool grpc, const std::string& cluster) {
    auto h = Connect(grpc ? "grpc-client-1" : "sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", grpc);
    h->Send(First(std::string(kEndpointType), {cluster}));
    auto eds = h->Take();
    std::vector<Group> out;
    if (eds.size() != 1 || eds[0].resources_size() != 1) {
      ADD_FAILURE() << "no assignment for " << cluster;
      return out;
    }
    const auto cla = Decode<envoy::config::endpoint::v3::ClusterLoadAssignment>(eds[0], 0);
    for (const auto& locality : cla.endpoints()) {
      Group group{locality.locality().region(),
                  locality.locality().zone(),
                  locality.locality().sub_zone(),
                  locality.load_balancing_weight().value(),
                  {}};
      for (const auto& lb : locality.lb_endpoints()) {
        group.addresses.push_back(lb.endpoint().address().socket_address().address());
      }
      out.push_back(std::move(group));
    }
    return out;
  };
  for (bool grpc : {false, true}) {
    SCOPED_TRACE(grpc ? "gRPC" : "Envoy");
    EXPECT_EQ(groups_of(grpc, "outbound|8080||geo.mesh.local"),
              (std::vector<Group>{{"", "", "", 2, {"127.0.0.64", "127.0.0.66"}},
                                  {"", "zone-x", "", 1, {"127.0.0.68"}},
                                  {"eu-west", "eu-west-1b", "rack", 1, {"127.0.0.63"}},
                                  {"local", "", "", 1, {"127.0.0.67"}},
                                  {"us-east", "us-east-1a", "", 4, {"127.0.0.61", "127.0.0.62"}}}));
    EXPECT_EQ(groups_of(grpc, "outbound|8080||kube.default.svc.cluster.local"),
              (std::vector<Group>{{"ap-south", "ap-south-1c", "", 1, {"127.0.0.65"}}}));
  }
}

// localityLbSetting, applied per proxy in EDS as istiod does: with outlier detection, priorities
// by how much of the proxy's locality an endpoint shares (failover rules pushing other regions
// back), renumbered without gaps; `distribute` re-weighs localities for proxies of its `from`
// (Envoy's clusters get locality_weighted_lb_config for it, and for failover rules under
// outlier detection, as istiod sets it); a rule without outlier detection gives the endpoints
// as they are; a proxy of no locality is of the empty one, as in istiod.
TEST_F(GeneratorsTest, LocalityLbSettingShapesEachProxysEndpoints) {
  const std::string entry = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: geo}
spec:
  resolution: STATIC
  hosts: [geo.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  endpoints:
  - {address: 127.0.0.61, locality: us-east/a}
  - {address: 127.0.0.66, locality: us-east/a/s2}
  - {address: 127.0.0.62, locality: us-east/b}
  - {address: 127.0.0.63, locality: eu-west/a}
  - {address: 127.0.0.65, locality: eu-west/c, weight: 3}
  - {address: 127.0.0.64, locality: ap-south/a, weight: 3}
---
)";
  Apply("geo.yaml", entry + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: geo}
spec:
  host: geo.mesh.local
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 3}
    loadBalancer:
      localityLbSetting:
        failover: [{from: us-east, to: eu-west}]
  subsets:
  - name: spread
    labels: {}
    trafficPolicy:
      loadBalancer:
        localityLbSetting:
          distribute:
          - from: us-east/*
            to: {us-east/a: 60, "eu-west/*": 40}
  - name: "off"
    labels: {}
    trafficPolicy: {loadBalancer: {localityLbSetting: {enabled: false}}}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  // region/zone/subzone -> (priority, weight, endpoint count), as a proxy of `locality` gets them.
  using Shape = std::map<std::string, std::tuple<uint32_t, uint32_t, int>>;
  const auto shape_with = [&](bool grpc, const std::vector<std::string>& locality, const std::string& cluster,
                              const LabelMap& labels) {
    auto h = Connect(grpc ? "grpc-client-1" : "sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", grpc);
    auto* node_labels = (*node_.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value();
    for (const auto& [k, v] : labels) (*node_labels->mutable_fields())[k].set_string_value(v);
    node_.mutable_locality()->set_region(locality[0]);
    node_.mutable_locality()->set_zone(locality[1]);
    node_.mutable_locality()->set_sub_zone(locality[2]);
    h->Send(First(std::string(kEndpointType), {cluster}));
    node_.clear_locality();
    auto eds = h->Take();
    Shape out;
    if (eds.size() != 1 || eds[0].resources_size() != 1) {
      ADD_FAILURE() << "no assignment";
      return out;
    }
    const auto cla = Decode<envoy::config::endpoint::v3::ClusterLoadAssignment>(eds[0], 0);
    for (const auto& l : cla.endpoints()) {
      out[StrCat(l.locality().region(), "/", l.locality().zone(), "/", l.locality().sub_zone())] = {
          l.priority(), l.load_balancing_weight().value(), l.lb_endpoints_size()};
    }
    return out;
  };
  const auto shape = [&](bool grpc, const std::vector<std::string>& locality, const std::string& cluster) {
    return shape_with(grpc, locality, cluster, {});
  };
  const std::string all = "outbound|8080||geo.mesh.local";
  const Shape as_they_are = {{"us-east/a/", {0, 1, 1}}, {"us-east/a/s2", {0, 1, 1}}, {"us-east/b/", {0, 1, 1}},
                             {"eu-west/a/", {0, 1, 1}}, {"eu-west/c/", {0, 3, 1}},   {"ap-south/a/", {0, 3, 1}}};
  for (bool grpc : {false, true}) {
    SCOPED_TRACE(grpc ? "gRPC" : "Envoy");
    // us-east/a: its subzone 0, its zone 1, its region 2, the failover region 3, the rest 4.
    EXPECT_EQ(shape(grpc, {"us-east", "a", ""}, all), (Shape{{"us-east/a/", {0, 1, 1}},
                                                             {"us-east/a/s2", {1, 1, 1}},
                                                             {"us-east/b/", {2, 1, 1}},
                                                             {"eu-west/a/", {3, 1, 1}},
                                                             {"eu-west/c/", {3, 3, 1}},
                                                             {"ap-south/a/", {4, 3, 1}}}));
    // eu-west/a: no failover rule for its region; priorities 0, 2 and 3 renumbered 0, 1, 2.
    EXPECT_EQ(shape(grpc, {"eu-west", "a", ""}, all), (Shape{{"us-east/a/", {2, 1, 1}},
                                                             {"us-east/a/s2", {2, 1, 1}},
                                                             {"us-east/b/", {2, 1, 1}},
                                                             {"eu-west/a/", {0, 1, 1}},
                                                             {"eu-west/c/", {1, 3, 1}},
                                                             {"ap-south/a/", {2, 3, 1}}}));
    // Localities no endpoint shares: one shape (and one cache entry), whatever they are called.
    EXPECT_EQ(shape(grpc, {"mars", "x", ""}, all), shape(grpc, {"venus", "y", "z"}, all));
    EXPECT_EQ(shape(grpc, {"", "", ""}, all), as_they_are) << "no locality";
    EXPECT_EQ(shape(grpc, {"us-east", "a", ""}, "outbound|8080|off|geo.mesh.local"), as_they_are) << "enabled: false";
    // The subset distributes from us-east: us-east/a's 60 split between its two subzones, 40
    // over eu-west by their weights (1 and 3), the rest emptied (weight 1, no endpoint).
    EXPECT_EQ(shape(grpc, {"us-east", "b", ""}, "outbound|8080|spread|geo.mesh.local"),
              (Shape{{"us-east/a/", {0, 30, 1}},
                     {"us-east/a/s2", {0, 30, 1}},
                     {"us-east/b/", {0, 1, 0}},
                     {"eu-west/a/", {0, 10, 1}},
                     {"eu-west/c/", {0, 30, 1}},
                     {"ap-south/a/", {0, 1, 0}}}));
    EXPECT_EQ(shape(grpc, {"eu-west", "a", ""}, "outbound|8080|spread|geo.mesh.local"), as_they_are)
        << "no distribute rule from eu-west";
  }
  const auto clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  ASSERT_TRUE(clusters.contains("outbound|8080|spread|geo.mesh.local"));
  EXPECT_TRUE(clusters.at("outbound|8080|spread|geo.mesh.local").common_lb_config().has_locality_weighted_lb_config());
  EXPECT_TRUE(clusters.at(all).common_lb_config().has_locality_weighted_lb_config())
      << "failover rules under outlier detection: istiod weighs localities too";

  // Without outlier detection, failover would never happen: no priorities.
  Apply("geo.yaml", entry + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: geo}
spec:
  host: geo.mesh.local
  trafficPolicy: {loadBalancer: {localityLbSetting: {failover: [{from: us-east, to: eu-west}]}}}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  for (bool grpc : {false, true}) EXPECT_EQ(shape(grpc, {"us-east", "a", ""}, all), as_they_are);

  // A proxy that gives no locality is of the empty one, as istiod takes it: under failover the
  // endpoints of no locality come first (the same empty locality), and a distribute rule from
  // "*" applies to it. An endpoint of no locality is in no region, not even one called "local",
  // and proxies share an entry only where their results are the same.
  Apply("geo.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: geo}
spec:
  resolution: STATIC
  hosts: [geo.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  endpoints:
  - {address: 127.0.0.61, locality: us-east/a}
  - {address: 127.0.0.63, locality: eu-west/b}
  - {address: 127.0.0.62}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: geo}
spec:
  host: geo.mesh.local
  trafficPolicy: {outlierDetection: {consecutive5xxErrors: 3}}
  subsets:
  - name: spread
    labels: {}
    trafficPolicy:
      loadBalancer: {localityLbSetting: {distribute: [{from: "*", to: {us-east/a: 80, "eu-west/*": 20}}]}}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  for (bool grpc : {false, true}) {
    SCOPED_TRACE(grpc ? "gRPC" : "Envoy");
    const Shape unlocated = {{"us-east/a/", {0, 1, 1}}, {"eu-west/b/", {0, 1, 1}}, {"//", {0, 1, 1}}};
    // A proxy of a made-up region first, so that a shared entry would be found by the next.
    EXPECT_EQ(shape(grpc, {"mars", "x", ""}, all), unlocated) << "no endpoint in its region: as they are";
    EXPECT_EQ(shape(grpc, {"local", "", ""}, all), unlocated) << "no endpoint is in a region called local";
    EXPECT_EQ(shape(grpc, {std::string(300, 'r'), "", ""}, all), unlocated)
        << "an overlong region is still a region no endpoint is in, not the empty locality";
    EXPECT_EQ(shape(grpc, {"us-east", std::string(300, 'z'), ""}, all),
              (Shape{{"us-east/a/", {0, 1, 1}}, {"eu-west/b/", {1, 1, 1}}, {"//", {1, 1, 1}}}))
        << "an overlong zone: its region still ranks first";
    EXPECT_EQ(shape(grpc, {"", "", ""}, all),
              (Shape{{"us-east/a/", {1, 1, 1}}, {"eu-west/b/", {1, 1, 1}}, {"//", {0, 1, 1}}}));
    EXPECT_EQ(shape(grpc, {"us-east", "a", ""}, all),
              (Shape{{"us-east/a/", {0, 1, 1}}, {"eu-west/b/", {1, 1, 1}}, {"//", {1, 1, 1}}}));
    EXPECT_EQ(shape(grpc, {"", "", ""}, "outbound|8080|spread|geo.mesh.local"),
              (Shape{{"us-east/a/", {0, 80, 1}}, {"eu-west/b/", {0, 20, 1}}, {"//", {0, 1, 0}}}));
    // The proxy's labels before its node's locality, as istiod's setTopologyLabels reads a proxy
    // its registry has no workload for: the topology labels, else the locality label.
    const Shape eu_first = {{"us-east/a/", {1, 1, 1}}, {"eu-west/b/", {0, 1, 1}}, {"//", {1, 1, 1}}};
    EXPECT_EQ(shape_with(grpc, {"us-east", "a", ""}, all,
                         {{"topology.kubernetes.io/region", "eu-west"}, {"topology.kubernetes.io/zone", "b"}}),
              eu_first);
    EXPECT_EQ(shape_with(grpc, {"us-east", "a", ""}, all, {{"istio-locality", "eu-west/b"}}), eu_first);
    EXPECT_EQ(shape_with(grpc, {"", "", ""}, all, {{"topology.istio.io/locality", "eu-west/b"}}), eu_first);
    EXPECT_EQ(shape_with(grpc, {"eu-west", "b", ""}, all, {{"app", "geo"}}), eu_first)
        << "no locality label: the node's";
    EXPECT_EQ(shape_with(grpc, {"us-east", "a", ""}, all,
                         {{"topology.kubernetes.io/zone", "b"}, {"topology.istio.io/locality", "us-east/a"}}),
              (Shape{{"us-east/a/", {1, 1, 1}}, {"eu-west/b/", {1, 1, 1}}, {"//", {0, 1, 1}}}))
        << "a topology label wins over the locality label: region \"\", zone b, the region of the endpoints of "
           "no locality";
    EXPECT_EQ(shape_with(grpc, {"us-east", "a", ""}, all,
                         {{"topology.istio.io/locality", "eu-west/b"}, {"istio-locality", "us-east/a"}}),
              eu_first);
    EXPECT_EQ(
        shape_with(grpc, {"eu-west", "b", ""}, all, {{"topology.istio.io/locality", ""}, {"istio-locality", "x"}}),
        eu_first)
        << "the first locality label given, empty: the node's";
    EXPECT_EQ(shape_with(grpc, {"us-east", "a", ""}, all, {{"topology.kubernetes.io/region", std::string(300, 'r')}}),
              unlocated)
        << "an overlong label region is still the proxy's (not the node's): a region no endpoint is in";
    EXPECT_EQ(shape_with(grpc, {"us-east", "a", ""}, all, {{"istio-locality", "eu-west.b"}}), unlocated)
        << "as written: region \"eu-west.b\", which no endpoint is in";
  }
}

// failoverPriority, as istiod's applyFailoverPriorities: each locality split by how many of the
// labels, in order, an endpoint shares with the proxy (its own labels, with AugmentLabels' topology
// labels; "label=value" gives the proxy's value), priorities made contiguous; a first network label
// puts the proxy's network first; with `failover` rules, by locality too within each; a proxy
// without labels gets none; only under outlier detection.
TEST_F(GeneratorsTest, FailoverPriorityOrdersEndpointsByTheLabelsTheyShareWithTheProxy) {
  const std::string entry = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: geo}
spec:
  resolution: STATIC
  hosts: [geo.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  endpoints:
  - {address: 127.0.0.71, locality: us-east/a, labels: {version: v1, topology.istio.io/network: n1}}
  - {address: 127.0.0.72, locality: us-east/a, labels: {version: v2, topology.istio.io/network: n2}}
  - {address: 127.0.0.73, locality: us-east/b, labels: {version: v1, topology.istio.io/network: n2}, weight: 4}
  - {address: 127.0.0.74, locality: us-east/b, labels: {version: v2, topology.istio.io/network: n1}}
  - {address: 127.0.0.75, locality: eu-west/a, labels: {version: v1, topology.istio.io/network: n1}}
---
)";
  const auto rule = [&](const std::string& setting, bool outlier = true) {
    Apply("geo.yaml", entry + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: geo}
spec:
  host: geo.mesh.local
  trafficPolicy:
)" + std::string(outlier ? "    outlierDetection: {consecutive5xxErrors: 3}\n" : "") +
                          "    loadBalancer: {localityLbSetting: " + setting + "}\n");
    ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  };
  // Each LocalityLbEndpoints in order: "zone priority weight: last address bytes".
  const std::string all = "outbound|8080||geo.mesh.local";
  const auto shape = [&](bool grpc, const std::string& region, const std::string& zone, const LabelMap& labels) {
    auto h = Connect(grpc ? "grpc-client-1" : "sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", grpc);
    auto* node_labels = (*node_.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value();
    for (const auto& [k, v] : labels) (*node_labels->mutable_fields())[k].set_string_value(v);
    node_.mutable_locality()->set_region(region);
    node_.mutable_locality()->set_zone(zone);
    h->Send(First(std::string(kEndpointType), {all}));
    node_.clear_locality();
    auto eds = h->Take();
    std::vector<std::string> out;
    if (eds.size() != 1 || eds[0].resources_size() != 1) {
      ADD_FAILURE() << "no assignment";
      return out;
    }
    const auto cla = Decode<envoy::config::endpoint::v3::ClusterLoadAssignment>(eds[0], 0);
    for (const auto& l : cla.endpoints()) {
      std::string line = StrCat(l.locality().region(), "/", l.locality().zone(), " ", l.priority(), " ",
                                l.load_balancing_weight().value(), ":");
      for (const auto& lb : l.lb_endpoints()) {
        const std::string& address = lb.endpoint().address().socket_address().address();
        line += StrCat(" ", address.substr(address.rfind('.') + 1));
      }
      out.push_back(line);
    }
    return out;
  };
  using Lines = std::vector<std::string>;
  const LabelMap v1_n1 = {{"version", "v1"}, {"topology.istio.io/network", "n1"}};
  for (bool grpc : {false, true}) {
    SCOPED_TRACE(grpc ? "gRPC" : "Envoy");
    // version, then zone (the endpoints' from their locality, the proxy's from its node): 0 both
    // shared, 1 the version only, 2 not the version. eu-west/a shares zone "a".
    rule("{failoverPriority: [version, topology.kubernetes.io/zone]}");
    const Lines by_version_then_zone = {"eu-west/a 0 1: 75", "us-east/a 0 1: 71", "us-east/a 2 1: 72",
                                        "us-east/b 1 4: 73", "us-east/b 2 1: 74"};
    EXPECT_EQ(shape(grpc, "us-east", "a", {{"version", "v1"}}), by_version_then_zone);
    EXPECT_EQ(shape(grpc, "us-east", "b", {{"version", "v2"}}),
              (Lines{"eu-west/a 2 1: 75", "us-east/a 1 1: 72", "us-east/a 2 1: 71", "us-east/b 0 1: 74",
                     "us-east/b 2 4: 73"}))
        << "v2 in zone b: 0; v2 elsewhere: 1; v1: 2";
    EXPECT_EQ(shape(grpc, "", "", {{"version", "v2"}}),
              (Lines{"eu-west/a 1 1: 75", "us-east/a 0 1: 72", "us-east/a 1 1: 71", "us-east/b 0 1: 74",
                     "us-east/b 1 4: 73"}))
        << "no zone: priorities 1 and 2 renumbered 0 and 1";
    // A value no endpoint has decides as any other such value: the same shape for both.
    EXPECT_EQ(shape(grpc, "us-east", "a", {{"version", "v9"}}), shape(grpc, "us-east", "a", {{"version", "v8"}}));
    // ... and shares its cache entry, as does one of another zone: no endpoint gets past the version.
    const uint64_t builds = pipeline_->cache().stats().builds;
    shape(grpc, "us-east", "b", {{"version", "v7"}});
    EXPECT_EQ(pipeline_->cache().stats().builds, builds) << "labels no endpoint gets to are not in the key";
    EXPECT_EQ(shape(grpc, "", "", {}), (Lines{"eu-west/a 0 1: 75", "us-east/a 0 2: 71 72", "us-east/b 0 5: 73 74"}))
        << "a proxy without labels: none applied, as istiod";
    // A value no endpoint has at the last label that decides (the zone, after a version some
    // endpoints share) is "?" in the key too: made-up zones share one entry.
    const Lines v1_no_zone = {"eu-west/a 0 1: 75", "us-east/a 0 1: 71", "us-east/a 1 1: 72", "us-east/b 0 4: 73",
                              "us-east/b 1 1: 74"};
    EXPECT_EQ(shape(grpc, "us-east", "z9", {{"version", "v1"}}), v1_no_zone) << "v1: 1, v2: 2, renumbered";
    const uint64_t builds_z9 = pipeline_->cache().stats().builds;
    EXPECT_EQ(shape(grpc, "us-east", "z8", {{"version", "v1"}}), v1_no_zone);
    EXPECT_EQ(pipeline_->cache().stats().builds, builds_z9) << "a zone no endpoint has is \"?\" in the key";
    EXPECT_NE(shape(grpc, "us-east", "b", {{"version", "v1"}}), v1_no_zone) << "a zone some endpoint has decides";

    // "version=v2": the proxy is taken to be v2 whatever its label says.
    rule("{failoverPriority: [version=v2, topology.kubernetes.io/zone]}");
    EXPECT_EQ(shape(grpc, "us-east", "b", {{"version", "v1"}}),
              (Lines{"eu-west/a 2 1: 75", "us-east/a 1 1: 72", "us-east/a 2 1: 71", "us-east/b 0 1: 74",
                     "us-east/b 2 4: 73"}));

    // An override applies to every entry of its label, as istiod's map of them.
    rule("{failoverPriority: [version, topology.kubernetes.io/zone, version=v2]}");
    EXPECT_EQ(shape(grpc, "us-east", "a", {{"version", "v1"}}),
              (Lines{"eu-west/a 2 1: 75", "us-east/a 0 1: 72", "us-east/a 2 1: 71", "us-east/b 1 1: 74",
                     "us-east/b 2 4: 73"}));
    // distribute wins; enabled: false turns it all off.
    rule("{failoverPriority: [version], distribute: [{from: us-east/a, to: {us-east/a: 100}}]}");
    EXPECT_EQ(shape(grpc, "us-east", "a", {{"version", "v2"}}),
              (Lines{"eu-west/a 0 1:", "us-east/a 0 100: 71 72", "us-east/b 0 1:"}));
    rule("{failoverPriority: [version], enabled: false}");
    EXPECT_EQ(shape(grpc, "us-east", "a", {{"version", "v2"}}),
              (Lines{"eu-west/a 0 1: 75", "us-east/a 0 2: 71 72", "us-east/b 0 5: 73 74"}));

    // The network first: another network's endpoints after all of the proxy's, ordered alike.
    rule("{failoverPriority: [topology.istio.io/network, version]}");
    EXPECT_EQ(shape(grpc, "us-east", "a", v1_n1), (Lines{"eu-west/a 0 1: 75", "us-east/a 0 1: 71", "us-east/a 3 1: 72",
                                                         "us-east/b 1 1: 74", "us-east/b 2 4: 73"}))
        << "n1 v1: 0, n1 v2: 1, n2 v1: 2, n2 v2: 3; in a locality by priority";
    // A network no endpoint is on: every endpoint is of another network, ordered by version
    // alone, and made-up networks (and versions past them) share one entry.
    const Lines other_network_v1 = {"eu-west/a 0 1: 75", "us-east/a 0 1: 71", "us-east/a 1 1: 72", "us-east/b 0 4: 73",
                                    "us-east/b 1 1: 74"};
    EXPECT_EQ(shape(grpc, "us-east", "a", {{"version", "v1"}, {"topology.istio.io/network", "n9"}}), other_network_v1);
    const uint64_t builds_n9 = pipeline_->cache().stats().builds;
    EXPECT_EQ(shape(grpc, "us-east", "b", {{"version", "v1"}, {"topology.istio.io/network", "n8"}}), other_network_v1);
    shape(grpc, "us-east", "a", {{"version", "v9"}, {"topology.istio.io/network", "n7"}});
    shape(grpc, "us-east", "a", {{"version", "v8"}, {"topology.istio.io/network", "n6"}});
    EXPECT_EQ(pipeline_->cache().stats().builds, builds_n9 + 1)
        << "network first: networks and versions no endpoint has are \"?\" in the key (one entry for each version "
           "state)";
    rule("{failoverPriority: [version, topology.istio.io/network]}");
    EXPECT_EQ(shape(grpc, "us-east", "a", v1_n1), (Lines{"eu-west/a 0 1: 75", "us-east/a 0 1: 71", "us-east/a 2 1: 72",
                                                         "us-east/b 1 4: 73", "us-east/b 2 1: 74"}))
        << "network second: no special case";

    // With failover rules, by locality within each label priority (five ways, then contiguous).
    rule("{failoverPriority: [version], failover: [{from: us-east, to: eu-west}]}");
    EXPECT_EQ(shape(grpc, "us-east", "a", {{"version", "v1"}}),
              (Lines{"eu-west/a 2 1: 75", "us-east/a 0 1: 71", "us-east/a 3 1: 72", "us-east/b 1 4: 73",
                     "us-east/b 4 1: 74"}));
    // ... where versions and zones no endpoint has share entries as well.
    const Lines failover_no_version = {"eu-west/a 2 1: 75", "us-east/a 0 2: 71 72", "us-east/b 1 5: 73 74"};
    EXPECT_EQ(shape(grpc, "us-east", "a", {{"version", "v9"}}), failover_no_version) << "by locality alone";
    const uint64_t builds_failover = pipeline_->cache().stats().builds;
    EXPECT_EQ(shape(grpc, "us-east", "a", {{"version", "v8"}}), failover_no_version);
    EXPECT_EQ(pipeline_->cache().stats().builds, builds_failover) << "a version no endpoint has";
    const Lines failover_no_zone = {"eu-west/a 1 1: 75", "us-east/a 0 1: 71", "us-east/a 2 1: 72", "us-east/b 0 4: 73",
                                    "us-east/b 2 1: 74"};
    EXPECT_EQ(shape(grpc, "us-east", "z9", {{"version", "v1"}}), failover_no_zone);
    const uint64_t builds_failover_zone = pipeline_->cache().stats().builds;
    EXPECT_EQ(shape(grpc, "us-east", "z8", {{"version", "v1"}}), failover_no_zone);
    EXPECT_EQ(pipeline_->cache().stats().builds, builds_failover_zone) << "a zone no endpoint has";

    // Without outlier detection nothing fails over: no priorities.
    rule("{failoverPriority: [version]}", /*outlier=*/false);
    EXPECT_EQ(shape(grpc, "us-east", "a", {{"version", "v2"}}),
              (Lines{"eu-west/a 0 1: 75", "us-east/a 0 2: 71 72", "us-east/b 0 5: 73 74"}));
  }
  rule("{failoverPriority: [version]}");
  const auto clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  ASSERT_TRUE(clusters.contains(all));
  EXPECT_TRUE(clusters.at(all).common_lb_config().has_locality_weighted_lb_config())
      << "failoverPriority under outlier detection: istiod weighs localities";
}

// A Gateway, and VirtualServices bound to it, as istiod translates them for a gateway proxy
// (router~ node): a listener and route configuration http.PORT per server port, a virtual host
// per VirtualService host the server's hosts admit (routes of several merged, oldest first),
// HTTPS redirects, istiod's blackhole where nothing is bound, no Sidecar scoping; and a
// VirtualService bound only to a Gateway does not route the mesh.
TEST_F(GeneratorsTest, AGatewayProxyGetsTheServersAndRoutesOfTheGatewaysThatPickIt) {
  Apply("gateway.yaml", kShopEntry + R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8080, name: http, protocol: HTTP}
    hosts: [shop.example.com, "*/*.example.org"]
  - port: {number: 8081, name: http-redirect, protocol: HTTP}
    hosts: ["*"]
    tls: {httpsRedirect: true}
  - port: {number: 8082, name: http-edge-only, protocol: HTTP}
    hosts: ["./*"]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress-2, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: [shop.example.com]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: storefront, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  hosts: [shop.example.com, other.example.net]
  gateways: [edge/ingress, edge/ingress-2]
  http:
  - name: api
    match: [{uri: {prefix: /api}}]
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - name: gateway-only
    match: [{gateways: [edge/ingress], uri: {prefix: /gw}}]
    route: [{destination: {host: shop.mesh.local}}]
  - name: mesh-only
    match: [{gateways: [mesh]}]
    route: [{destination: {host: shop.mesh.local}}]
  - name: second-only
    match: [{gateways: [edge/ingress-2], uri: {prefix: /second}}]
    route: [{destination: {host: shop.mesh.local}}]
  - name: rest
    route: [{destination: {host: shop.mesh.local, port: {number: 8080}}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: later, creationTimestamp: "2026-02-01T00:00:00Z"}
spec:
  hosts: [shop.example.com, shop.mesh.local]
  gateways: [edge/ingress]
  http:
  - name: later-api
    match: [{uri: {prefix: /later}}]
    route: [{destination: {host: shop.mesh.local}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: docs}
spec:
  hosts: [docs.example.org]
  gateways: [edge/ingress, mesh]
  http:
  - name: docs
    route: [{destination: {host: shop.mesh.local}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::string router = "router~127.0.0.9~ingress-1.shop~shop.svc.cluster.local";
  const auto with_gateway_labels = [&] { LabelIngressGateway(node_); };
  const auto gateway_request = [&](const std::string& type, std::vector<std::string> names) {
    auto h = Connect(router, false);
    with_gateway_labels();
    h->Send(First(type, std::move(names)));
    auto responses = h->Take();
    EXPECT_EQ(responses.size(), 1u);
    return responses.empty() ? DiscoveryResponse() : responses[0];
  };

  // One listener per server port, nothing outbound.
  const DiscoveryResponse lds = gateway_request(std::string(kListenerType), {});
  std::vector<std::string> listeners;
  for (int i = 0; i < lds.resources_size(); ++i) {
    const auto listener = Decode<envoy::config::listener::v3::Listener>(lds, i);
    listeners.push_back(listener.name());
    ASSERT_EQ(listener.filter_chains_size(), 1);
    envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
    ASSERT_TRUE(listener.filter_chains(0).filters(0).typed_config().UnpackTo(&hcm));
    EXPECT_EQ(hcm.rds().route_config_name(), StrCat("http.", listener.address().socket_address().port_value()));
    EXPECT_TRUE(hcm.use_remote_address().value());
  }
  EXPECT_THAT(listeners, ::testing::UnorderedElementsAre("127.0.0.1_8080", "127.0.0.1_8081", "127.0.0.1_8082"));

  const auto routes_of = [&](const std::string& name) {
    const DiscoveryResponse rds = gateway_request(std::string(kRouteType), {name});
    return rds.resources_size() == 1 ? Decode<envoy::config::route::v3::RouteConfiguration>(rds, 0)
                                     : envoy::config::route::v3::RouteConfiguration();
  };
  const auto vhosts_of = [](const envoy::config::route::v3::RouteConfiguration& config) {
    std::vector<std::string> names;
    for (const auto& vhost : config.virtual_hosts()) names.push_back(vhost.name());
    return names;
  };
  // Port 8080: shop.example.com from both VirtualServices, merged oldest first, then the
  // catch-all last as istiod sorts them (mesh-only is left out; second-only is for
  // ingress-2, which picks this proxy too), docs.example.org under *.example.org;
  // other.example.net is no server's host.
  const auto http8080 = routes_of("http.8080");
  EXPECT_THAT(vhosts_of(http8080), ::testing::ElementsAre("docs.example.org:8080", "shop.example.com:8080"));
  EXPECT_THAT(RouteNames(http8080, "shop.example.com:8080"),
              ::testing::ElementsAre("api", "gateway-only", "second-only", "later-api", "rest"));
  for (const auto& vhost : http8080.virtual_hosts()) {
    if (vhost.name() != "shop.example.com:8080") continue;
    EXPECT_THAT(vhost.domains(), ::testing::ElementsAre("shop.example.com", "shop.example.com:8080"));
    EXPECT_EQ(vhost.require_tls(), envoy::config::route::v3::VirtualHost::NONE);
    EXPECT_EQ(vhost.routes(0).route().cluster(), "outbound|8080|v1|inventory.mesh.local");
  }
  // Port 8081 admits every host and redirects to HTTPS, hosts no VirtualService has too (the
  // server's own "*"); a destination without a port goes to its service's only port, not the
  // gateway's.
  const auto http8081 = routes_of("http.8081");
  EXPECT_THAT(vhosts_of(http8081), ::testing::ElementsAre("*:8081", "docs.example.org:8081", "other.example.net:8081",
                                                          "shop.example.com:8081", "shop.mesh.local:8081"));
  for (const auto& vhost : http8081.virtual_hosts()) {
    EXPECT_EQ(vhost.require_tls(), envoy::config::route::v3::VirtualHost::ALL) << vhost.name();
    if (vhost.name() == "other.example.net:8081") {
      EXPECT_EQ(vhost.routes(0).route().cluster(), "outbound|8080|v1|inventory.mesh.local");
    }
  }
  // Port 8082 admits only VirtualServices of the Gateway's namespace: none, so istiod's 404.
  const auto http8082 = routes_of("http.8082");
  ASSERT_EQ(http8082.virtual_hosts_size(), 1);
  EXPECT_EQ(http8082.virtual_hosts(0).name(), "blackhole:8082");
  EXPECT_THAT(http8082.virtual_hosts(0).domains(), ::testing::ElementsAre("*"));
  EXPECT_EQ(http8082.virtual_hosts(0).routes(0).direct_response().status(), 404u);

  // The shop namespace's Sidecar ("./*") does not scope a gateway: it sees every cluster.
  const DiscoveryResponse cds = gateway_request(std::string(kClusterType), {});
  std::vector<std::string> clusters;
  for (int i = 0; i < cds.resources_size(); ++i) {
    clusters.push_back(Decode<envoy::config::cluster::v3::Cluster>(cds, i).name());
  }
  EXPECT_THAT(clusters, ::testing::Contains("outbound|8080|v1|inventory.mesh.local"));
  EXPECT_THAT(clusters, ::testing::Contains("outbound|8080||shop.mesh.local"));

  // A router no Gateway picks gets no listeners.
  {
    auto h = Connect("router~127.0.0.10~other-1.edge~edge.svc.cluster.local", false);
    h->Send(First(std::string(kListenerType), {}));
    auto responses = h->Take();
    ASSERT_EQ(responses.size(), 1u);
    EXPECT_EQ(responses[0].resources_size(), 0);
  }
  // In the mesh, shop.mesh.local keeps its default route: `later` names it but is bound only to
  // the Gateway; docs is bound to both, and docs.example.org is no service of the mesh.
  const auto sidecar = RoutesFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false, "8080");
  ASSERT_THAT(RouteNames(sidecar, "shop.mesh.local:8080"), ::testing::ElementsAre(""));
  for (const auto& vhost : sidecar.virtual_hosts()) {
    if (vhost.name() == "shop.mesh.local:8080") {
      EXPECT_EQ(vhost.routes(0).route().cluster(), "outbound|8080||shop.mesh.local");
    }
  }
}

// A DestinationRule's tls SIMPLE or MUTUAL: Envoy clusters get an UpstreamTlsContext reading
// the certificate files named (the system CA bundle when caCertificates is unset), SNI as given
// or else istiod's auto SNI; a subset's tls replaces the rule's. gRPC, which takes certificates
// only from its bootstrap, is not given such a cluster at all, and its config status says why.
TEST_F(GeneratorsTest, DestinationRuleTlsOriginatesTlsFromCertificateFilesOnEnvoyAndIsLeftOutForGrpc) {
  Apply("tls.yaml", kShopEntry + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shop-tls}
spec:
  host: shop.mesh.local
  trafficPolicy:
    tls: {mode: SIMPLE, caCrl: /etc/certs/system.crl}
  subsets:
  - name: mutual
    labels: {version: v1}
    trafficPolicy:
      tls:
        mode: MUTUAL
        clientCertificate: /etc/certs/client.pem
        privateKey: /etc/certs/client-key.pem
        caCertificates: /etc/certs/ca.pem
        caCrl: /etc/certs/ca.crl
        sni: shop.example.com
        subjectAltNames: [shop.example.com, "spiffe://cluster.local/ns/shop/sa/shop", 127.0.0.1]
      connectionPool: {http: {h2UpgradePolicy: UPGRADE}}
  - name: plain
    labels: {version: v2}
    trafficPolicy: {tls: {mode: DISABLE}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop-split}
spec:
  hosts: [shop.mesh.local]
  http:
  - match: [{uri: {prefix: /all}}]
    route: [{destination: {host: shop.mesh.local}}]
  - route:
    - {destination: {host: shop.mesh.local, subset: mutual}, weight: 50}
    - {destination: {host: shop.mesh.local, subset: plain}, weight: 50}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  const auto context_of = [&](const std::string& name) {
    envoy::extensions::transport_sockets::tls::v3::UpstreamTlsContext context;
    const auto& cluster = clusters[name];
    EXPECT_EQ(cluster.transport_socket().name(), "envoy.transport_sockets.tls") << name;
    EXPECT_TRUE(cluster.transport_socket().typed_config().UnpackTo(&context)) << name;
    EXPECT_THAT(PgvChecker().Check(context), ::testing::IsEmpty()) << context.DebugString();
    return context;
  };
  const auto simple = context_of("outbound|8080||shop.mesh.local");
  EXPECT_TRUE(simple.sni().empty());
  EXPECT_EQ(simple.common_tls_context().tls_certificates_size(), 0);
  EXPECT_EQ(simple.common_tls_context().validation_context().trusted_ca().filename(),
            "/etc/ssl/certs/ca-certificates.crt");
  envoy::extensions::upstreams::http::v3::HttpProtocolOptions options;
  ASSERT_TRUE(clusters["outbound|8080||shop.mesh.local"]
                  .typed_extension_protocol_options()
                  .at("envoy.extensions.upstreams.http.v3.HttpProtocolOptions")
                  .UnpackTo(&options));
  EXPECT_TRUE(options.upstream_http_protocol_options().auto_sni()) << "no sni: the request's host";
  EXPECT_TRUE(options.upstream_http_protocol_options().auto_san_validation());

  const auto mutual = context_of("outbound|8080|mutual|shop.mesh.local");
  EXPECT_EQ(mutual.sni(), "shop.example.com");
  ASSERT_EQ(mutual.common_tls_context().tls_certificates_size(), 1);
  EXPECT_EQ(mutual.common_tls_context().tls_certificates(0).certificate_chain().filename(), "/etc/certs/client.pem");
  EXPECT_EQ(mutual.common_tls_context().tls_certificates(0).private_key().filename(), "/etc/certs/client-key.pem");
  const auto& validation = mutual.common_tls_context().validation_context();
  EXPECT_EQ(validation.trusted_ca().filename(), "/etc/certs/ca.pem");
  EXPECT_EQ(validation.crl().filename(), "/etc/certs/ca.crl") << "caCrl, as istiod sets it";
  EXPECT_EQ(simple.common_tls_context().validation_context().crl().filename(), "/etc/certs/system.crl")
      << "with the system bundle too, as istiod";
  ASSERT_EQ(validation.match_typed_subject_alt_names_size(), 3);
  EXPECT_EQ(validation.match_typed_subject_alt_names(2).san_type(),
            envoy::extensions::transport_sockets::tls::v3::SubjectAltNameMatcher::IP_ADDRESS);
  EXPECT_THAT(mutual.common_tls_context().alpn_protocols(), ::testing::ElementsAre("h2")) << "an HTTP/2 upstream";
  EXPECT_THAT(simple.common_tls_context().alpn_protocols(), ::testing::IsEmpty());
  EXPECT_EQ(validation.match_typed_subject_alt_names(0).san_type(),
            envoy::extensions::transport_sockets::tls::v3::SubjectAltNameMatcher::DNS);
  EXPECT_EQ(validation.match_typed_subject_alt_names(1).san_type(),
            envoy::extensions::transport_sockets::tls::v3::SubjectAltNameMatcher::URI);
  EXPECT_EQ(validation.match_typed_subject_alt_names(1).matcher().exact(), "spiffe://cluster.local/ns/shop/sa/shop");
  EXPECT_FALSE(clusters["outbound|8080|plain|shop.mesh.local"].has_transport_socket()) << "DISABLE replaces SIMPLE";

  // gRPC: the TLS clusters are not sent, the plaintext subset's is.
  auto grpc = Connect("grpc-client", true);
  grpc->Send(First(std::string(kClusterType), {"outbound|8080||shop.mesh.local", "outbound|8080|mutual|shop.mesh.local",
                                               "outbound|8080|plain|shop.mesh.local"}));
  std::vector<DiscoveryResponse> cds = grpc->Take();
  ASSERT_EQ(cds.size(), 1u);
  ASSERT_EQ(cds[0].resources_size(), 1);
  const auto plain = Decode<envoy::config::cluster::v3::Cluster>(cds[0], 0);
  EXPECT_EQ(plain.name(), "outbound|8080|plain|shop.mesh.local");
  EXPECT_FALSE(plain.has_transport_socket());
  // Its config status names the clusters left out and why.
  const auto* mesh = dynamic_cast<const MeshContext*>(pipeline_->context().get());
  ASSERT_NE(mesh, nullptr);
  // The route configuration the gRPC node holds: the clusters its routes name.
  auto grpc_routes = Connect("grpc-client", true);
  grpc_routes->Send(First(std::string(kRouteType), {"shop.mesh.local:8080"}));
  std::vector<DiscoveryResponse> rds = grpc_routes->Take();
  ASSERT_EQ(rds.size(), 1u);
  ASSERT_EQ(rds[0].resources_size(), 1);
  absl::StatusOr<SnapshotPtr> held =
      Snapshot::Create("1", {*Resource::FromMessage(Decode<envoy::config::route::v3::RouteConfiguration>(rds[0], 0))});
  ASSERT_TRUE(held.ok()) << held.status();
  std::vector<std::string> notes;
  for (const ProxyConfigNote& note : GrpcConfigNotes(*mesh, **held, "default")) {
    notes.push_back(StrCat(note.resource, " ", note.field));
  }
  EXPECT_THAT(notes,
              ::testing::ElementsAre("outbound|8080|mutual|shop.mesh.local tls", "outbound|8080||shop.mesh.local tls"))
      << "the split's TLS subset too; the plain one is served";
}

// Termination with certificate files on the gateway (Envoy reads them), and OPTIONAL_MUTUAL: a
// client certificate asked for and checked when presented, not required.
TEST_F(GeneratorsTest, GatewayServersTerminateWithFilesAndOptionalMutual) {
  Apply("gateway.yaml", kShopEntry + R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8443, name: https-files, protocol: HTTPS}
    hosts: [files.example.com]
    tls:
      mode: MUTUAL
      serverCertificate: /etc/gw/cert.pem
      privateKey: /etc/gw/key.pem
      caCertificates: /etc/gw/ca.pem
      caCrl: /etc/gw/ca.crl
      subjectAltNames: [client.example.com, spiffe://cluster.local/ns/web/sa/client]
      verifyCertificateHash: [DF6FF72FE9116521268F6F2DD4966F51DF479883FE7037B39F75916AC3049D1A]
      ecdhCurves: [X25519]
  - port: {number: 8443, name: https-optional, protocol: HTTPS}
    hosts: [optional.example.com]
    tls:
      mode: OPTIONAL_MUTUAL
      credentialName: optional-cert
      verifyCertificateSpki: [uLfQkXmtUdOLjShp4ksuBsKKyQyHb5ypeq2FhBsPsHQ=]
      insecureSkipVerify: true
  - port: {number: 8443, name: https-several, protocol: HTTPS}
    hosts: [several.example.com]
    tls: {mode: MUTUAL, credentialNames: [rsa-cert, ec-cert]}
  - port: {number: 8443, name: https-pairs, protocol: HTTPS}
    hosts: [pairs.example.com]
    tls:
      mode: MUTUAL
      caCertificates: /etc/gw/clients.pem
      tlsCertificates:
      - {serverCertificate: /etc/gw/rsa.pem, privateKey: /etc/gw/rsa.key}
      - {serverCertificate: /etc/gw/ec.pem, privateKey: /etc/gw/ec.key}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::string router = "router~127.0.0.9~ingress-1.edge~edge.svc.cluster.local";
  auto listeners = IngressListeners(router);
  ASSERT_EQ(listeners["127.0.0.1_8443"].filter_chains_size(), 4);
  const auto context_of = [&](int i) {
    envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext context;
    EXPECT_TRUE(listeners["127.0.0.1_8443"].filter_chains(i).transport_socket().typed_config().UnpackTo(&context));
    EXPECT_THAT(PgvChecker().Check(context), ::testing::IsEmpty()) << context.DebugString();
    return context;
  };
  const auto files = context_of(0);
  ASSERT_EQ(files.common_tls_context().tls_certificates_size(), 1);
  EXPECT_EQ(files.common_tls_context().tls_certificates(0).certificate_chain().filename(), "/etc/gw/cert.pem");
  EXPECT_EQ(files.common_tls_context().tls_certificates(0).private_key().filename(), "/etc/gw/key.pem");
  EXPECT_EQ(files.common_tls_context().validation_context().trusted_ca().filename(), "/etc/gw/ca.pem");
  EXPECT_EQ(files.common_tls_context().validation_context().crl().filename(), "/etc/gw/ca.crl") << "caCrl";
  EXPECT_EQ(files.common_tls_context().tls_certificate_sds_secret_configs_size(), 0);
  EXPECT_TRUE(files.require_client_certificate().value());
  const auto optional = context_of(1);
  EXPECT_EQ(optional.common_tls_context().combined_validation_context().validation_context_sds_secret_config().name(),
            "kubernetes://optional-cert-cacert");
  EXPECT_TRUE(optional.has_require_client_certificate());
  EXPECT_FALSE(optional.require_client_certificate().value());
  // What the client's certificate is checked for beyond the CA, where the CA is (the files' or the
  // credential's default context), and the curves offered.
  using Validation = envoy::extensions::transport_sockets::tls::v3::CertificateValidationContext;
  const Validation& by_files = files.common_tls_context().validation_context();
  ASSERT_EQ(by_files.match_typed_subject_alt_names_size(), 2);
  EXPECT_EQ(by_files.match_typed_subject_alt_names(0).san_type(),
            envoy::extensions::transport_sockets::tls::v3::SubjectAltNameMatcher::DNS);
  EXPECT_EQ(by_files.match_typed_subject_alt_names(0).matcher().exact(), "client.example.com");
  EXPECT_EQ(by_files.match_typed_subject_alt_names(1).san_type(),
            envoy::extensions::transport_sockets::tls::v3::SubjectAltNameMatcher::URI);
  EXPECT_EQ(by_files.match_typed_subject_alt_names(1).matcher().exact(), "spiffe://cluster.local/ns/web/sa/client");
  EXPECT_THAT(by_files.verify_certificate_hash(),
              ::testing::ElementsAre("DF6FF72FE9116521268F6F2DD4966F51DF479883FE7037B39F75916AC3049D1A"));
  EXPECT_EQ(by_files.trust_chain_verification(), Validation::VERIFY_TRUST_CHAIN);
  EXPECT_THAT(files.common_tls_context().tls_params().ecdh_curves(), ::testing::ElementsAre("X25519"));
  const Validation& by_credential =
      optional.common_tls_context().combined_validation_context().default_validation_context();
  EXPECT_THAT(by_credential.verify_certificate_spki(),
              ::testing::ElementsAre("uLfQkXmtUdOLjShp4ksuBsKKyQyHb5ypeq2FhBsPsHQ="));
  EXPECT_EQ(by_credential.match_typed_subject_alt_names_size(), 0);
  EXPECT_EQ(by_credential.trust_chain_verification(), Validation::ACCEPT_UNTRUSTED) << "insecureSkipVerify";
  EXPECT_FALSE(optional.common_tls_context().has_tls_params());
  // Several certificates (credentialNames: the first's CA; tlsCertificates: each file pair).
  const auto several = context_of(2);
  ASSERT_EQ(several.common_tls_context().tls_certificate_sds_secret_configs_size(), 2);
  EXPECT_EQ(several.common_tls_context().tls_certificate_sds_secret_configs(0).name(), "kubernetes://rsa-cert");
  EXPECT_EQ(several.common_tls_context().tls_certificate_sds_secret_configs(1).name(), "kubernetes://ec-cert");
  EXPECT_EQ(several.common_tls_context().combined_validation_context().validation_context_sds_secret_config().name(),
            "kubernetes://rsa-cert-cacert");
  const auto pairs = context_of(3);
  ASSERT_EQ(pairs.common_tls_context().tls_certificates_size(), 2);
  EXPECT_EQ(pairs.common_tls_context().tls_certificates(0).certificate_chain().filename(), "/etc/gw/rsa.pem");
  EXPECT_EQ(pairs.common_tls_context().tls_certificates(1).certificate_chain().filename(), "/etc/gw/ec.pem");
  EXPECT_EQ(pairs.common_tls_context().tls_certificates(0).private_key().filename(), "/etc/gw/rsa.key");
  EXPECT_EQ(pairs.common_tls_context().tls_certificates(1).private_key().filename(), "/etc/gw/ec.key");
  EXPECT_EQ(pairs.common_tls_context().validation_context().trusted_ca().filename(), "/etc/gw/clients.pem")
      << "the server's CA for every pair";
  // Only the credential's names are Secrets to send; the files are the gateway's own.
  const auto* mesh = dynamic_cast<const MeshContext*>(pipeline_->context().get());
  ASSERT_NE(mesh, nullptr);
  envoy::config::core::v3::Node node;
  node.set_id(router);
  LabelIngressGateway(node);
  std::vector<std::string> names;
  for (const auto& [name, use] : UsedSecretNames(*mesh, ParseProxyInfo(node))) names.push_back(name);
  EXPECT_THAT(names, ::testing::ElementsAre("kubernetes://ec-cert", "kubernetes://optional-cert",
                                            "kubernetes://optional-cert-cacert", "kubernetes://rsa-cert",
                                            "kubernetes://rsa-cert-cacert"));
}

// Notes as "RESOURCE FIELD: REASON", to compare whole.
std::vector<std::string> DescribeNotes(const std::vector<ProxyConfigNote>& notes) {
  std::vector<std::string> out;
  for (const ProxyConfigNote& note : notes) out.push_back(StrCat(note.resource, " ", note.field, ": ", note.reason));
  return out;
}

// A PEM text as a YAML block scalar under a Secret's stringData key.
std::string PemBlock(const std::string& pem) {
  std::string out = "|\n";
  for (absl::string_view line : absl::StrSplit(pem, '\n', absl::SkipEmpty())) absl::StrAppend(&out, "    ", line, "\n");
  return out;
}

// A DestinationRule's tls credentialName applies at gateways, as in Istio (TLS origination at an
// egress gateway): the cluster takes the Secret's certificate and CA over SDS, and the gateway
// is sent them when its stream proved it may read them; a sidecar keeps to files, and without
// any checks the server against the system bundle.
TEST_F(GeneratorsTest, DestinationRuleCredentialNameOriginatesTlsAtGatewaysWithSdsSecrets) {
  testing::TestPki pki;
  ASSERT_TRUE(pki.MakeCa("ca"));
  ASSERT_TRUE(pki.MakeLeaf("egress", "ca", "DNS:egress.example.com"));
  Apply("secret.yaml", StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: egress-cert, namespace: edge}\n",
                              "stringData:\n  cert: ", PemBlock(pki.Read("egress.crt")),
                              "  key: ", PemBlock(pki.Read("egress.key")), "  cacert: ", PemBlock(pki.Read("ca.crt"))));
  Apply("tls.yaml", kShopEntry + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shop-tls, namespace: istio-system}
spec:
  host: shop.mesh.local
  trafficPolicy:
    tls: {mode: MUTUAL, credentialName: egress-cert, sni: shop.example.com}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::string router = "router~127.0.0.9~egress-1.edge~edge.svc.cluster.local";
  const auto context_of = [](const envoy::config::cluster::v3::Cluster& cluster) {
    envoy::extensions::transport_sockets::tls::v3::UpstreamTlsContext context;
    EXPECT_TRUE(cluster.transport_socket().typed_config().UnpackTo(&context)) << cluster.name();
    EXPECT_THAT(PgvChecker().Check(context), ::testing::IsEmpty()) << context.DebugString();
    return context;
  };
  const auto gateway = context_of(ClustersFor(router)["outbound|8080||shop.mesh.local"]);
  ASSERT_EQ(gateway.common_tls_context().tls_certificate_sds_secret_configs_size(), 1);
  EXPECT_EQ(gateway.common_tls_context().tls_certificate_sds_secret_configs(0).name(), "kubernetes://egress-cert");
  EXPECT_EQ(gateway.common_tls_context().combined_validation_context().validation_context_sds_secret_config().name(),
            "kubernetes://egress-cert-cacert");
  EXPECT_EQ(gateway.common_tls_context().tls_certificates_size(), 0);
  EXPECT_EQ(gateway.sni(), "shop.example.com");
  const auto sidecar = context_of(
      ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local")["outbound|8080||shop.mesh.local"]);
  EXPECT_EQ(sidecar.common_tls_context().tls_certificate_sds_secret_configs_size(), 0);
  EXPECT_EQ(sidecar.common_tls_context().tls_certificates_size(), 0);
  EXPECT_EQ(sidecar.common_tls_context().validation_context().trusted_ca().filename(),
            "/etc/ssl/certs/ca-certificates.crt");

  // The gateway's SDS: both names, to a stream that proved a reader of edge (edge/ingress).
  PeerIdentity proven = ProvenEdgeIngress();
  auto h = Connect(router, false, "", proven);
  h->Send(First(std::string(kSecretType), {"kubernetes://egress-cert", "kubernetes://egress-cert-cacert"}));
  const auto sds = h->Take();
  ASSERT_EQ(sds.size(), 1u);
  std::map<std::string, envoy::extensions::transport_sockets::tls::v3::Secret> served;
  for (int i = 0; i < sds[0].resources_size(); ++i) {
    auto secret = Decode<envoy::extensions::transport_sockets::tls::v3::Secret>(sds[0], i);
    served[secret.name()] = secret;
  }
  ASSERT_EQ(served.size(), 2u);
  EXPECT_EQ(served["kubernetes://egress-cert"].tls_certificate().certificate_chain().inline_bytes(),
            pki.Read("egress.crt"));
  EXPECT_EQ(served["kubernetes://egress-cert-cacert"].validation_context().trusted_ca().inline_bytes(),
            pki.Read("ca.crt"));
  // A proven gateway of another namespace gets that namespace's Secret of the name (none here),
  // a sidecar none at all.
  PeerIdentity shop = proven;
  shop.namespace_name = "shop";
  auto other = Connect("router~127.0.0.10~egress-1.shop~shop.svc.cluster.local", false, "", shop);
  other->Send(First(std::string(kSecretType), {"kubernetes://egress-cert", "kubernetes://egress-cert-cacert"}));
  EXPECT_TRUE(other->Take().empty());
  PeerIdentity app = proven;
  app.service_account = "app";
  auto sidecar_stream = Connect("sidecar~127.0.0.5~app-1.edge~edge.svc.cluster.local", false, "", app);
  sidecar_stream->Send(First(std::string(kSecretType), {"kubernetes://egress-cert"}));
  EXPECT_TRUE(sidecar_stream->Take().empty());
  // Without the proof, nothing, and the gateway's config status says why.
  auto plain = Connect(router, false);
  plain->Send(First(std::string(kSecretType), {"kubernetes://egress-cert"}));
  EXPECT_TRUE(plain->Take().empty());
  const auto* mesh = dynamic_cast<const MeshContext*>(pipeline_->context().get());
  ASSERT_NE(mesh, nullptr);
  envoy::config::core::v3::Node node;
  node.set_id(router);
  std::vector<std::string> notes;
  for (const ProxyConfigNote& note : GatewayConfigNotes(*mesh, ParseProxyInfo(node), PeerIdentity{}, {})) {
    notes.push_back(StrCat(note.resource, " ", note.object, " ", note.field));
  }
  EXPECT_THAT(notes, ::testing::ElementsAre(
                         "kubernetes://egress-cert DestinationRule istio-system/shop-tls tls.credentialName",
                         "kubernetes://egress-cert-cacert DestinationRule istio-system/shop-tls tls.credentialName"));
}

// A rule's credentialName whose SDS name a Gateway server of the proxy (which comes first) or an
// earlier rule (by host) uses for another Secret: Envoy is sent the first use's Secret under it,
// and the gateway's config status says so on the rule's field, once per rule and name.
TEST_F(GeneratorsTest, RuleCredentialNameUnderAnotherSecretsSdsNameIsSaidPerProxy) {
  testing::TestPki pki;
  ASSERT_TRUE(pki.MakeCa("ca"));
  ASSERT_TRUE(pki.MakeLeaf("edge", "ca", "DNS:a.example.com"));
  Apply("secret.yaml", StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: egress-cert-cacert, namespace: edge}\n",
                              "type: kubernetes.io/tls\nstringData:\n  tls.crt: ", PemBlock(pki.Read("edge.crt")),
                              "  tls.key: ", PemBlock(pki.Read("edge.key"))));
  Apply("tls.yaml", kShopEntry + R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: more}
spec:
  resolution: STATIC
  hosts: [api.mesh.local, web.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: a, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [a.example.com]
    tls: {mode: SIMPLE, credentialName: egress-cert-cacert}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: a, namespace: edge}
spec:
  hosts: [a.example.com]
  gateways: [a]
  http:
  - route: [{destination: {host: shop.mesh.local}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shop-tls, namespace: istio-system}
spec:
  host: shop.mesh.local
  trafficPolicy:
    tls: {mode: MUTUAL, credentialName: egress-cert}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api-tls, namespace: istio-system}
spec:
  host: api.mesh.local
  trafficPolicy:
    tls: {mode: MUTUAL, credentialName: web-cacert}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web-tls, namespace: istio-system}
spec:
  host: web.mesh.local
  trafficPolicy:
    tls: {mode: SIMPLE, credentialName: web}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::string router = "router~127.0.0.9~ingress-1.edge~edge.svc.cluster.local";
  const PeerIdentity proven = ProvenEdgeIngress();
  // Under kubernetes://egress-cert-cacert the gateway's certificate, not the rule's CA.
  const std::vector<DiscoveryResponse> sds =
      AskAsIngress(router, std::string(kSecretType), {"kubernetes://egress-cert-cacert"}, proven);
  ASSERT_EQ(sds.size(), 1u);
  ASSERT_EQ(sds[0].resources_size(), 1);
  const auto secret = Decode<envoy::extensions::transport_sockets::tls::v3::Secret>(sds[0], 0);
  EXPECT_EQ(secret.tls_certificate().certificate_chain().inline_bytes(), pki.Read("edge.crt"));
  EXPECT_FALSE(secret.has_validation_context());

  const auto* mesh = dynamic_cast<const MeshContext*>(pipeline_->context().get());
  ASSERT_NE(mesh, nullptr);
  envoy::config::core::v3::Node node;
  node.set_id(router);
  LabelIngressGateway(node);
  std::vector<std::string> clashes;
  for (const ProxyConfigNote& note : GatewayConfigNotes(*mesh, ParseProxyInfo(node), proven, {"edge/ingress"})) {
    if (note.reason.find("as meant") != std::string::npos) {
      clashes.push_back(StrCat(note.resource, " ", note.object, " ", note.field, ": ", note.reason));
    }
  }
  EXPECT_THAT(clashes,
              ::testing::ElementsAre(
                  "kubernetes://egress-cert-cacert DestinationRule istio-system/shop-tls tls.credentialName: not "
                  "served as meant: its CA of Secret egress-cert is sent under this name, which a Gateway server of "
                  "this proxy already uses for the certificate of Secret egress-cert-cacert: Envoy is sent that one",
                  "kubernetes://web-cacert DestinationRule istio-system/web-tls tls.credentialName: not served as "
                  "meant: its CA of Secret web is sent under this name, which DestinationRule istio-system/api-tls "
                  "already uses for the certificate of Secret web-cacert: Envoy is sent that one"));
}

// An HTTPS Gateway server terminates TLS as istiod builds it for a credentialName: a filter
// chain per server matching its SNI names, the certificate over SDS on the ADS stream
// (kubernetes://NAME; MUTUAL: a client certificate required, checked against
// kubernetes://NAME-cacert), routes https.PORT.PORT_NAME.GATEWAY.NS. The Secret itself is
// served only to a gateway proxy whose stream proved the Secret's namespace, only for names its
// servers use, and never shown whole in debug output.
TEST_F(GeneratorsTest, HttpsGatewayServersTerminateTlsWithSecretsServedOnlyToTheirProvenNamespace) {
  testing::TestPki pki;
  ASSERT_TRUE(pki.MakeCa("ca"));
  ASSERT_TRUE(pki.MakeLeaf("shop", "ca", "DNS:shop.example.com"));
  const std::string cert = pki.Read("shop.crt"), key = pki.Read("shop.key"), ca = pki.Read("ca.crt");
  const auto secrets = [&](const std::string& cert, const std::string& key) {
    return StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: shop-cert, namespace: edge}\n",
                  "type: kubernetes.io/tls\nstringData:\n  tls.crt: ", PemBlock(cert), "  tls.key: ", PemBlock(key),
                  "  ca.crt: ", PemBlock(ca),
                  "---\napiVersion: v1\nkind: Secret\nmetadata: {name: unused, namespace: edge}\n",
                  "stringData:\n  cert: ", PemBlock(cert), "  key: ", PemBlock(key));
  };
  Apply("secrets.yaml", secrets(cert, key));
  Apply("gateway.yaml", kShopEntry + R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8443, name: https, protocol: HTTPS}
    hosts: [shop.example.com]
    tls: {mode: SIMPLE, credentialName: shop-cert, minProtocolVersion: TLSV1_2}
  - port: {number: 8443, name: https-partner, protocol: HTTPS}
    hosts: ["*.partner.example.com", "shop.example.com"]
    tls: {mode: MUTUAL, credentialName: shop-cert}
  - port: {number: 8443, name: https-again, protocol: HTTPS}
    hosts: [shop.example.com]
    tls: {mode: SIMPLE, credentialName: shop-cert}
  - port: {number: 8443, name: http-plain, protocol: HTTP}
    hosts: [plain.example.com]
  - port: {number: 8080, name: http, protocol: HTTP}
    hosts: [shop.example.com]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: storefront, namespace: edge}
spec:
  hosts: [shop.example.com, api.partner.example.com]
  gateways: [ingress]
  http:
  - name: shop
    route: [{destination: {host: shop.mesh.local}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::string router = "router~127.0.0.9~ingress-1.edge~edge.svc.cluster.local";
  PeerIdentity proven = ProvenEdgeIngress();
  proven.spiffe_id = "spiffe://cluster.local/ns/edge/sa/ingress";
  const auto ask = [&](const std::string& id, const PeerIdentity& identity, const std::string& type,
                       std::vector<std::string> names) -> std::optional<DiscoveryResponse> {
    // Nothing of what a named subscription asks for exists for it: no response at all.
    auto responses = AskAsIngress(id, type, std::move(names), identity);
    EXPECT_LE(responses.size(), 1u);
    if (responses.empty()) return std::nullopt;
    EXPECT_GT(responses[0].resources_size(), 0) << "an empty answer to a named subscription";
    return responses[0];
  };

  // The TLS port: one chain per server that has a name of its own; the third server's only name
  // and the plain server are left out (one name matched twice, or plain HTTP on a TLS listener,
  // would make Envoy refuse the listener).
  const DiscoveryResponse lds = ask(router, proven, std::string(kListenerType), {}).value_or(DiscoveryResponse());
  std::map<std::string, envoy::config::listener::v3::Listener> listeners;
  for (int i = 0; i < lds.resources_size(); ++i) {
    auto listener = Decode<envoy::config::listener::v3::Listener>(lds, i);
    listeners[listener.name()] = listener;
  }
  ASSERT_TRUE(listeners.contains("127.0.0.1_8443"));
  ASSERT_TRUE(listeners.contains("127.0.0.1_8080"));
  const auto& tls_listener = listeners["127.0.0.1_8443"];
  ASSERT_EQ(tls_listener.listener_filters_size(), 1);
  EXPECT_EQ(tls_listener.listener_filters(0).name(), "envoy.filters.listener.tls_inspector");
  ASSERT_EQ(tls_listener.filter_chains_size(), 2);
  const auto context_of = [](const envoy::config::listener::v3::FilterChain& chain) {
    envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext context;
    EXPECT_EQ(chain.transport_socket().name(), "envoy.transport_sockets.tls");
    EXPECT_TRUE(chain.transport_socket().typed_config().UnpackTo(&context));
    EXPECT_THAT(PgvChecker().Check(context), ::testing::IsEmpty()) << context.DebugString();
    return context;
  };
  const auto route_of = [](const envoy::config::listener::v3::FilterChain& chain) {
    envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
    EXPECT_TRUE(chain.filters(0).typed_config().UnpackTo(&hcm));
    EXPECT_TRUE(hcm.use_remote_address().value());
    return hcm.rds().route_config_name();
  };
  const auto& simple = tls_listener.filter_chains(0);
  EXPECT_THAT(simple.filter_chain_match().server_names(), ::testing::ElementsAre("shop.example.com"));
  EXPECT_EQ(route_of(simple), "https.8443.https.ingress.edge");
  const auto simple_context = context_of(simple);
  EXPECT_FALSE(simple_context.require_client_certificate().value());
  ASSERT_EQ(simple_context.common_tls_context().tls_certificate_sds_secret_configs_size(), 1);
  EXPECT_EQ(simple_context.common_tls_context().tls_certificate_sds_secret_configs(0).name(), "kubernetes://shop-cert");
  EXPECT_TRUE(simple_context.common_tls_context().tls_certificate_sds_secret_configs(0).sds_config().has_ads());
  EXPECT_THAT(simple_context.common_tls_context().alpn_protocols(), ::testing::ElementsAre("h2", "http/1.1"));
  EXPECT_EQ(simple_context.common_tls_context().tls_params().tls_minimum_protocol_version(),
            envoy::extensions::transport_sockets::tls::v3::TlsParameters::TLSv1_2);
  EXPECT_FALSE(simple_context.common_tls_context().has_combined_validation_context());
  const auto& mutual = tls_listener.filter_chains(1);
  EXPECT_THAT(mutual.filter_chain_match().server_names(), ::testing::ElementsAre("*.partner.example.com"));
  EXPECT_EQ(route_of(mutual), "https.8443.https-partner.ingress.edge");
  const auto mutual_context = context_of(mutual);
  EXPECT_TRUE(mutual_context.require_client_certificate().value());
  EXPECT_EQ(
      mutual_context.common_tls_context().combined_validation_context().validation_context_sds_secret_config().name(),
      "kubernetes://shop-cert-cacert");
  // The plain port is as before.
  EXPECT_EQ(route_of(listeners["127.0.0.1_8080"].filter_chains(0)), "http.8080");
  EXPECT_FALSE(listeners["127.0.0.1_8080"].filter_chains(0).has_transport_socket());

  // A TLS server's routes are its own hosts' only.
  const DiscoveryResponse rds = ask(router, proven, std::string(kRouteType), {"https.8443.https-partner.ingress.edge"})
                                    .value_or(DiscoveryResponse());
  ASSERT_EQ(rds.resources_size(), 1);
  const auto partner = Decode<envoy::config::route::v3::RouteConfiguration>(rds, 0);
  std::vector<std::string> vhosts;
  for (const auto& vhost : partner.virtual_hosts()) vhosts.push_back(vhost.name());
  EXPECT_THAT(vhosts, ::testing::ElementsAre("api.partner.example.com:8443", "shop.example.com:8443"));
  EXPECT_FALSE(ask(router, proven, std::string(kRouteType), {"https.8443.https-again.ingress.edge"}).has_value())
      << "a server left out has no routes";

  // SDS: the certificate with its key, and the CA, to the proven gateway of edge; never a
  // Secret no server of its Gateways names (unused), nor one of a name it made up.
  const std::vector<std::string> wanted = {"kubernetes://shop-cert", "kubernetes://shop-cert-cacert",
                                           "kubernetes://unused", "kubernetes://nothing"};
  const DiscoveryResponse sds = ask(router, proven, std::string(kSecretType), wanted).value_or(DiscoveryResponse());
  std::map<std::string, envoy::extensions::transport_sockets::tls::v3::Secret> served;
  for (int i = 0; i < sds.resources_size(); ++i) {
    auto secret = Decode<envoy::extensions::transport_sockets::tls::v3::Secret>(sds, i);
    served[secret.name()] = secret;
  }
  ASSERT_EQ(served.size(), 2u);
  EXPECT_EQ(served["kubernetes://shop-cert"].tls_certificate().certificate_chain().inline_bytes(), cert);
  EXPECT_EQ(served["kubernetes://shop-cert"].tls_certificate().private_key().inline_bytes(), key);
  EXPECT_EQ(served["kubernetes://shop-cert-cacert"].validation_context().trusted_ca().inline_bytes(), ca);
  EXPECT_FALSE(served["kubernetes://shop-cert-cacert"].validation_context().has_crl());
  // A Secret NAME-cacert with a CA is preferred for the CA (istiod's order), with its
  // revocation list.
  ASSERT_TRUE(pki.MakeCa("ca2"));
  ASSERT_TRUE(pki.MakeLeaf("revoked", "ca2", "DNS:client.example.com"));
  ASSERT_TRUE(pki.MakeCrl("ca2", "ca2", "revoked"));
  Apply("ca-secret.yaml",
        StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: shop-cert-cacert, namespace: edge}\n",
               "stringData:\n  cacert: ", PemBlock(pki.Read("ca2.crt")), "  crl: ", PemBlock(pki.Read("ca2.crl"))));
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::optional<DiscoveryResponse> ca_sds =
      ask(router, proven, std::string(kSecretType), {"kubernetes://shop-cert-cacert"});
  ASSERT_TRUE(ca_sds.has_value());
  const auto ca_secret = Decode<envoy::extensions::transport_sockets::tls::v3::Secret>(*ca_sds, 0);
  EXPECT_EQ(ca_secret.validation_context().trusted_ca().inline_bytes(), pki.Read("ca2.crt"));
  EXPECT_EQ(ca_secret.validation_context().crl().inline_bytes(), pki.Read("ca2.crl"));

  // Debug output shows the certificate, never the key.
  const ResourcePtr resource = *Resource::FromMessage(served["kubernetes://shop-cert"]);
  std::unique_ptr<google::protobuf::Message> holder;
  const auto& shown =
      dynamic_cast<const envoy::extensions::transport_sockets::tls::v3::Secret&>(MessageForDisplay(*resource, holder));
  EXPECT_EQ(shown.tls_certificate().private_key().inline_string(), "[redacted]");
  EXPECT_EQ(shown.tls_certificate().certificate_chain().inline_bytes(), cert);
  EXPECT_EQ(SerializedForDisplay(*resource).find(key.substr(40, 20)), std::string::npos);

  // A rotated certificate reaches the gateway's open stream on the next push.
  {
    ASSERT_TRUE(pki.MakeLeaf("shop-2", "ca", "DNS:shop.example.com"));
    const std::vector<DiscoveryResponse> rotated = SecretPushedAfter(router, proven, "kubernetes://shop-cert", [&] {
      Apply("secrets.yaml", secrets(pki.Read("shop-2.crt"), pki.Read("shop-2.key")));
    });
    ASSERT_EQ(rotated.size(), 1u);
    ASSERT_EQ(rotated[0].resources_size(), 1);
    EXPECT_EQ(Decode<envoy::extensions::transport_sockets::tls::v3::Secret>(rotated[0], 0)
                  .tls_certificate()
                  .certificate_chain()
                  .inline_bytes(),
              pki.Read("shop-2.crt"));
  }

  // Nothing to a stream that proved nothing (plaintext), that proved another namespace than the
  // node claims, or to a sidecar.
  EXPECT_FALSE(ask(router, PeerIdentity{}, std::string(kSecretType), wanted).has_value());
  PeerIdentity other = proven;
  other.namespace_name = "shop";
  EXPECT_FALSE(ask(router, other, std::string(kSecretType), wanted).has_value());
  EXPECT_FALSE(
      ask("sidecar~127.0.0.5~app-1.edge~edge.svc.cluster.local", proven, std::string(kSecretType), wanted).has_value());
  // Any workload of edge can claim to be a gateway (router~, the labels); its certificate's
  // service account is what decides, and app is not among the readers.
  PeerIdentity workload = proven;
  workload.service_account = "app";
  EXPECT_FALSE(ask(router, workload, std::string(kSecretType), wanted).has_value());
  // A gateway of shop, proven, gets shop's Secret of that name, never edge's.
  ASSERT_TRUE(pki.MakeLeaf("shop-ns", "ca", "DNS:shop.example.com"));
  Apply("shop-secrets.yaml",
        StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: shop-cert, namespace: shop}\n",
               "type: kubernetes.io/tls\nstringData:\n  tls.crt: ", PemBlock(pki.Read("shop-ns.crt")),
               "  tls.key: ", PemBlock(pki.Read("shop-ns.key"))));
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  PeerIdentity shop = proven;
  shop.namespace_name = "shop";
  const std::optional<DiscoveryResponse> shop_sds =
      ask("router~127.0.0.9~ingress-1.shop~shop.svc.cluster.local", shop, std::string(kSecretType), wanted);
  ASSERT_TRUE(shop_sds.has_value());
  ASSERT_EQ(shop_sds->resources_size(), 1) << "shop has no CA for the MUTUAL server";
  EXPECT_EQ(Decode<envoy::extensions::transport_sockets::tls::v3::Secret>(*shop_sds, 0)
                .tls_certificate()
                .certificate_chain()
                .inline_bytes(),
            pki.Read("shop-ns.crt"));

  // A Secret's change reaches the gateway proxies of its namespace, no one else.
  const ProxyFilter filter = MeshProxyFilter(model_);
  PushRequest change;
  change.configs.insert(ConfigKey{"Secret", "edge", "shop-cert"});
  const auto context = pipeline_->context();
  envoy::config::core::v3::Node gateway_node, sidecar_node, other_gateway;
  gateway_node.set_id(router);
  sidecar_node.set_id("sidecar~127.0.0.5~app-1.edge~edge.svc.cluster.local");
  other_gateway.set_id("router~127.0.0.9~ingress-1.shop~shop.svc.cluster.local");
  EXPECT_TRUE(filter(Proxy{router, gateway_node, proven}, change, *context, context.get()));
  EXPECT_FALSE(filter(Proxy{sidecar_node.id(), sidecar_node, proven}, change, *context, context.get()));
  EXPECT_FALSE(filter(Proxy{other_gateway.id(), other_gateway, proven}, change, *context, context.get()));

  // /debug/config_status's account for the gateway: the servers left out, and with no proven
  // namespace, every secret its TLS servers need, said as not served and why.
  const auto* mesh = dynamic_cast<const MeshContext*>(context.get());
  ASSERT_NE(mesh, nullptr);
  envoy::config::core::v3::Node labelled = gateway_node;
  LabelIngressGateway(labelled);
  const ProxyInfo info = ParseProxyInfo(labelled);
  const auto describe = DescribeNotes;
  const std::vector<std::string> left_out = {
      "listener port 8443 spec.servers[2]: every SNI name of it on port 8443 is already served by an earlier server "
      "(Envoy matches each name once)",
      "listener port 8443 spec.servers[3]: port 8443 already serves TLS for an earlier server; cxds serves one kind "
      "of server (plain HTTP, plain TCP or TLS) per port",
      "listener port 8443 spec.servers[1].hosts: SNI names shop.example.com not matched by this server: an earlier "
      "server of the port has them"};
  const std::vector<std::string> readers = {"edge/ingress"};
  EXPECT_THAT(describe(GatewayConfigNotes(*mesh, info, proven, readers)), ::testing::ElementsAreArray(left_out));
  const std::vector<std::string> unproven = describe(GatewayConfigNotes(*mesh, info, PeerIdentity{}, readers));
  ASSERT_EQ(unproven.size(), 6u);
  EXPECT_EQ(unproven[2],
            "kubernetes://shop-cert spec.servers[0].tls.credentialName: not served: this proxy's stream proved no "
            "identity (plaintext xDS); cxds sends private keys only to a gateway whose client certificate names it "
            "(serve xDS with mTLS)");
  EXPECT_THAT(unproven[5], ::testing::StartsWith("kubernetes://shop-cert-cacert spec.servers[1].tls.credentialName"));
  const std::vector<std::string> not_a_reader = describe(GatewayConfigNotes(*mesh, info, proven, {"edge/other"}));
  ASSERT_EQ(not_a_reader.size(), 6u);
  EXPECT_THAT(not_a_reader[2], ::testing::HasSubstr("service account edge/ingress may not read Secrets"));
}

// caCertCredentialName: a MUTUAL server checks clients against the CA of the Secret it names
// (kubernetes://NAME-cacert, read from NAME-cacert, else NAME), not its certificate's Secret's;
// until that Secret exists, /debug/config_status says which field names it.
TEST_F(GeneratorsTest, GatewayServersCheckClientsAgainstTheCaOfTheSecretNamed) {
  testing::TestPki pki;
  ASSERT_TRUE(pki.MakeCa("ca"));
  ASSERT_TRUE(pki.MakeCa("partners-ca"));
  ASSERT_TRUE(pki.MakeLeaf("shop", "ca", "DNS:shop.example.com"));
  Apply("secrets.yaml",
        StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: shop-cert, namespace: edge}\n",
               "type: kubernetes.io/tls\nstringData:\n  tls.crt: ", PemBlock(pki.Read("shop.crt")),
               "  tls.key: ", PemBlock(pki.Read("shop.key")), "  ca.crt: ", PemBlock(pki.Read("ca.crt"))));
  Apply("gateway.yaml", kShopEntry + R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8443, name: https, protocol: HTTPS}
    hosts: [shop.example.com]
    tls: {mode: MUTUAL, credentialName: shop-cert, caCertCredentialName: partners}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: storefront, namespace: edge}
spec:
  hosts: [shop.example.com]
  gateways: [ingress]
  http:
  - route: [{destination: {host: shop.mesh.local}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::string router = "router~127.0.0.9~ingress-1.edge~edge.svc.cluster.local";
  PeerIdentity proven = ProvenEdgeIngress();
  const auto ask = [&](const std::string& type, std::vector<std::string> names) {
    return AskAsIngress(router, type, std::move(names), proven);
  };

  const std::vector<DiscoveryResponse> lds = ask(std::string(kListenerType), {});
  ASSERT_EQ(lds.size(), 1u);
  ASSERT_EQ(lds[0].resources_size(), 1);
  const auto listener = Decode<envoy::config::listener::v3::Listener>(lds[0], 0);
  ASSERT_EQ(listener.filter_chains_size(), 1);
  envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext context;
  ASSERT_TRUE(listener.filter_chains(0).transport_socket().typed_config().UnpackTo(&context));
  EXPECT_THAT(PgvChecker().Check(context), ::testing::IsEmpty()) << context.DebugString();
  EXPECT_EQ(context.common_tls_context().tls_certificate_sds_secret_configs(0).name(), "kubernetes://shop-cert");
  EXPECT_EQ(context.common_tls_context().combined_validation_context().validation_context_sds_secret_config().name(),
            "kubernetes://partners-cacert");

  // No Secret partners yet: nothing is served for the CA, and the gateway's account says why, on
  // the field that names it.
  const std::vector<std::string> wanted = {"kubernetes://shop-cert", "kubernetes://partners-cacert",
                                           "kubernetes://shop-cert-cacert"};
  std::vector<DiscoveryResponse> sds = ask(std::string(kSecretType), wanted);
  ASSERT_EQ(sds.size(), 1u);
  ASSERT_EQ(sds[0].resources_size(), 1) << "the certificate's own CA is not what checks clients here";
  EXPECT_EQ(Decode<envoy::extensions::transport_sockets::tls::v3::Secret>(sds[0], 0).name(), "kubernetes://shop-cert");
  envoy::config::core::v3::Node node;
  node.set_id(router);
  LabelIngressGateway(node);
  const auto notes = [&]() {
    const auto* mesh = dynamic_cast<const MeshContext*>(pipeline_->context().get());
    EXPECT_NE(mesh, nullptr);
    return mesh == nullptr ? std::vector<std::string>{}
                           : DescribeNotes(GatewayConfigNotes(*mesh, ParseProxyInfo(node), proven, {"edge/ingress"}));
  };
  EXPECT_THAT(notes(), ::testing::ElementsAre("kubernetes://partners-cacert spec.servers[0].tls.caCertCredentialName: "
                                              "not served: no Secret partners-cacert with a CA, and Secret partners "
                                              "has none, in namespace edge"));

  // A CA-only Secret partners gives it.
  Apply("partners.yaml", StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: partners, namespace: edge}\n",
                                "stringData:\n  ca.crt: ", PemBlock(pki.Read("partners-ca.crt"))));
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  sds = ask(std::string(kSecretType), wanted);
  ASSERT_EQ(sds.size(), 1u);
  ASSERT_EQ(sds[0].resources_size(), 2);
  std::map<std::string, envoy::extensions::transport_sockets::tls::v3::Secret> served;
  for (int i = 0; i < 2; ++i) {
    auto secret = Decode<envoy::extensions::transport_sockets::tls::v3::Secret>(sds[0], i);
    served[secret.name()] = secret;
  }
  ASSERT_TRUE(served.contains("kubernetes://partners-cacert"));
  EXPECT_EQ(served["kubernetes://partners-cacert"].validation_context().trusted_ca().inline_bytes(),
            pki.Read("partners-ca.crt"));
  EXPECT_THAT(notes(), ::testing::IsEmpty());

  // A new CA in Secret partners reaches the gateway's open stream on the next push.
  {
    ASSERT_TRUE(pki.MakeCa("partners-ca-2"));
    const std::vector<DiscoveryResponse> rotated =
        SecretPushedAfter(router, proven, "kubernetes://partners-cacert", [&] {
          Apply("partners.yaml", StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: partners, namespace: edge}\n",
                                        "stringData:\n  ca.crt: ", PemBlock(pki.Read("partners-ca-2.crt"))));
        });
    ASSERT_EQ(rotated.size(), 1u);
    ASSERT_EQ(rotated[0].resources_size(), 1);
    EXPECT_EQ(Decode<envoy::extensions::transport_sockets::tls::v3::Secret>(rotated[0], 0)
                  .validation_context()
                  .trusted_ca()
                  .inline_bytes(),
              pki.Read("partners-ca-2.crt"));
  }

  // A later server (by port) taking the same SDS name as a certificate gets what the first
  // server meant by it, and the account says so.
  Apply("gateway-2.yaml", R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: partner-edge, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 9443, name: https, protocol: HTTPS}
    hosts: [shop.example.com]
    tls: {mode: SIMPLE, credentialName: partners-cacert}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  EXPECT_THAT(notes(), ::testing::ElementsAre("kubernetes://partners-cacert spec.servers[0].tls.credentialName: not "
                                              "served as meant: an earlier server of this proxy uses the name for "
                                              "the CA of Secret partners, which is what Envoy is sent"));
}

// Which proxies a change reaches (MeshProxyFilter): those that see its host, in the new context
// or in the one before (a proxy that loses a host must be told). shop's Sidecar keeps its proxies
// to shop's hosts; without it (and with no narrow exportTo) every proxy sees every host; a
// narrower exportTo reaches the proxies that saw the host, not those that never did.
TEST_F(GeneratorsTest, AChangeReachesTheProxiesThatSeeItsHostOrSawIt) {
  const ProxyFilter filter = MeshProxyFilter(model_);
  const std::string shop_proxy = "sidecar~127.0.0.5~reviews-1.shop~shop.svc.cluster.local";
  const std::string default_proxy = "sidecar~127.0.0.6~app-1.default~default.svc.cluster.local";
  const std::string web_proxy = "sidecar~127.0.0.7~app-1.web~web.svc.cluster.local";
  std::shared_ptr<const PushContext> before;
  // Applies `mesh` and pushes; whether its change reaches the proxy `id`.
  std::map<std::string, bool> reached;
  const auto apply = [&](const std::string& mesh) {
    before = pipeline_->context();
    Apply("mesh.yaml", mesh);
    ASSERT_TRUE(pipeline_->Push(last_request_).ok());
    for (const std::string& id : {shop_proxy, default_proxy, web_proxy}) {
      envoy::config::core::v3::Node node;
      node.set_id(id);
      reached[id] = filter(Proxy{id, node, PeerIdentity{}}, last_request_, *pipeline_->context(), before.get());
    }
  };
  PushRequest endpoints;
  endpoints.configs.insert(ConfigKey{kind::kEndpoints, "default", "inventory.mesh.local"});
  const auto endpoint_change_reaches = [&](const std::string& id) {
    envoy::config::core::v3::Node node;
    node.set_id(id);
    const auto context = pipeline_->context();
    return filter(Proxy{id, node, PeerIdentity{}}, endpoints, *context, context.get());
  };
  EXPECT_FALSE(endpoint_change_reaches(shop_proxy)) << "shop's Sidecar leaves inventory out";
  EXPECT_TRUE(endpoint_change_reaches(default_proxy));

  std::string unscoped = kMesh;
  unscoped.erase(unscoped.find("---\napiVersion: networking.istio.io/v1\nkind: Sidecar"));
  apply(unscoped);
  EXPECT_TRUE(reached[shop_proxy]) << "the Sidecar's removal concerns shop's proxies";
  EXPECT_TRUE(endpoint_change_reaches(shop_proxy));
  EXPECT_TRUE(endpoint_change_reaches(web_proxy));

  std::string narrow = unscoped;
  narrow.replace(narrow.find("  resolution: STATIC\n  hosts: [inventory"), 0, "  exportTo: [\".\", web]\n");
  apply(narrow);
  EXPECT_TRUE(last_request_.full) << "exportTo is not an endpoint change: the context is rebuilt";
  EXPECT_TRUE(reached[shop_proxy]) << "shop saw inventory before: it must be told it is gone";
  EXPECT_TRUE(reached[default_proxy]);
  EXPECT_TRUE(reached[web_proxy]);
  EXPECT_FALSE(endpoint_change_reaches(shop_proxy)) << "inventory is exported to default and web only";
  EXPECT_TRUE(endpoint_change_reaches(default_proxy));
  EXPECT_TRUE(endpoint_change_reaches(web_proxy));

  std::string narrower = unscoped;
  narrower.replace(narrower.find("  resolution: STATIC\n  hosts: [inventory"), 0, "  exportTo: [\".\"]\n");
  apply(narrower);
  EXPECT_FALSE(reached[shop_proxy]) << "shop neither saw inventory nor sees it";
  EXPECT_TRUE(reached[web_proxy]) << "web saw inventory: it must be told it is gone";
  EXPECT_TRUE(reached[default_proxy]);
}

// A proxy that does not see a host (shop's Sidecar keeps its proxies to shop's hosts) is not
// served its endpoints even when it asks for them by name, as it is not served its cluster.
TEST_F(GeneratorsTest, EndpointsOfAHostTheProxyDoesNotSeeAreNotServed) {
  const auto endpoints_for = [&](const std::string& id) {
    auto h = Connect(id, false);
    h->Send(First(std::string(kEndpointType), {"outbound|8080|v1|inventory.mesh.local"}));
    int served = 0;
    for (const DiscoveryResponse& response : h->Take()) served += response.resources_size();
    return served;
  };
  EXPECT_EQ(endpoints_for("sidecar~127.0.0.6~app-1.default~default.svc.cluster.local"), 1);
  EXPECT_EQ(endpoints_for("sidecar~127.0.0.5~reviews-1.shop~shop.svc.cluster.local"), 0);
}

// Gateway edge/ingress: a TCP server on 31400 admitting every host, for gateway proxies labelled
// istio=ingressgateway.
constexpr char kEdgeTcpGateway[] = R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 31400, name: tcp, protocol: TCP}
    hosts: ["*"]
)";

// A gateway's TCP proxy takes the fields of the DestinationRule its own proxy gets: gateway
// proxies of two namespaces that get different rules get different listeners. A tcp match's
// source conditions do not apply at a Gateway, as istiod ignores them there.
TEST_F(GeneratorsTest, AGatewaysTcpProxyFollowsTheDestinationRuleItsProxyGets) {
  Apply("gateway.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: data}
spec:
  resolution: STATIC
  hosts: [db.mesh.local]
  ports: [{number: 5432, name: tcp-db, protocol: TCP}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: db, namespace: edge}
spec:
  host: db.mesh.local
  exportTo: ["."]
  trafficPolicy: {tunnel: {targetHost: egress.mesh.local, targetPort: 3128}}
---
)" + std::string(kEdgeTcpGateway) +
                            R"(---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: tcp-edge, namespace: edge}
spec:
  hosts: [db.example.com]
  gateways: [ingress]
  tcp:
  - match: [{sourceLabels: {app: nobody}, sourceNamespace: nowhere}]
    route: [{destination: {host: db.mesh.local}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  // (The match's source conditions have no effect at a Gateway, as in istiod: it applies to
  // every gateway proxy.)
  const auto tunnel_of = [&](const std::string& id) -> std::string {
    auto listeners = IngressListeners(id);
    const auto& listener = listeners["127.0.0.1_31400"];
    if (listener.filter_chains_size() != 1 || listener.filter_chains(0).filters_size() != 1) return "no TCP proxy";
    envoy::extensions::filters::network::tcp_proxy::v3::TcpProxy tcp;
    EXPECT_TRUE(listener.filter_chains(0).filters(0).typed_config().UnpackTo(&tcp));
    EXPECT_EQ(tcp.cluster(), "outbound|5432||db.mesh.local");
    return tcp.has_tunneling_config() ? tcp.tunneling_config().hostname() : "none";
  };
  EXPECT_EQ(tunnel_of("router~127.0.0.9~ingress-1.edge~edge.svc.cluster.local"), "egress.mesh.local:3128");
  EXPECT_EQ(tunnel_of("router~127.0.0.10~ingress-2.edge2~edge2.svc.cluster.local"), "none")
      << "edge's rule is exported to edge alone";
  EXPECT_EQ(tunnel_of("router~127.0.0.11~ingress-3.edge~edge.svc.cluster.local"), "egress.mesh.local:3128");
}

// One tcp match with sourceLabels for the mesh and a Gateway: sidecars meeting the labels get
// its route and the others the service's own cluster, while at the Gateway, where istiod ignores
// the labels, every gateway proxy gets the route.
TEST_F(GeneratorsTest, ATcpMatchsSourceLabelsChooseSidecarsButNotGatewayProxies) {
  Apply("gateway.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: data}
spec:
  resolution: STATIC
  hosts: [db.mesh.local, echo.mesh.local]
  ports: [{number: 5432, name: tcp-db, protocol: TCP}]
---
)" + std::string(kEdgeTcpGateway) +
                            R"(---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: db, namespace: edge}
spec:
  hosts: [db.mesh.local]
  gateways: [mesh, ingress]
  tcp:
  - match: [{sourceLabels: {app: writer}}]
    route: [{destination: {host: echo.mesh.local, port: {number: 5432}}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  EXPECT_THAT(SidecarChains("default", "writer", "127.0.0.1_5432"),
              ::testing::Contains(" -> outbound|5432||echo.mesh.local"));
  EXPECT_THAT(SidecarChains("default", "reader", "127.0.0.1_5432"),
              ::testing::Contains(" -> outbound|5432||db.mesh.local"));
  const std::string ingress = "router~127.0.0.9~ingress-1.edge~edge.svc.cluster.local";
  auto listeners = IngressListeners(ingress);
  EXPECT_THAT(ChainsOf(listeners["127.0.0.1_31400"]), ::testing::ElementsAre(" -> outbound|5432||echo.mesh.local"))
      << "the gateway proxy's labels (istio: ingressgateway) do not include app: writer; the match applies all the "
         "same";
  // A gateway proxy that meets the condition gets the listener built for the one that does not:
  // the cache builds nothing for it.
  const uint64_t builds = pipeline_->cache().stats().builds;
  const auto writer = AskAsIngress("router~127.0.0.10~ingress-2.edge~edge.svc.cluster.local",
                                   std::string(kListenerType), {}, {}, {{"app", "writer"}});
  ASSERT_EQ(writer.size(), 1u);
  EXPECT_EQ(writer[0].resources_size(), 1);
  EXPECT_EQ(pipeline_->cache().stats().builds, builds) << "one resource for both gateway proxies";
}

// TCP and TLS Gateway servers, as istiod builds them: a TCP server proxies to the first tcp route
// that applies at the Gateway, a passthrough server gets a chain per tls route match (its
// sniHosts narrowed to the server's names), a TLS server that terminates proxies its tcp route
// behind the TLS context; what no route takes, or another chain has, is left out and said.
TEST_F(GeneratorsTest, TcpAndTlsGatewayServersProxyTheirTcpAndTlsRoutes) {
  Apply("gateway.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: backends}
spec:
  resolution: STATIC
  hosts: [db.mesh.local]
  ports: [{number: 5432, name: tcp-db, protocol: TCP}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: echo}
spec:
  resolution: STATIC
  hosts: [echo.mesh.local]
  ports: [{number: 9000, name: tcp-echo, protocol: TCP}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: tls-backends}
spec:
  resolution: STATIC
  hosts: [nginx.mesh.local, api.mesh.local]
  ports: [{number: 443, name: tls, protocol: TLS}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 31400, name: tcp, protocol: TCP}
    hosts: ["*"]
  - port: {number: 31400, name: tcp-other, protocol: TCP}
    hosts: [db.example.com]
  - port: {number: 443, name: tls, protocol: TLS}
    hosts: [nginx.example.com, "*.api.example.com"]
    tls: {mode: PASSTHROUGH}
  - port: {number: 443, name: tls-x, protocol: TLS}
    hosts: [x.api.example.com]
    tls: {mode: PASSTHROUGH}
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [shop.example.com]
    tls: {mode: SIMPLE, credentialName: shop-cert}
  - port: {number: 9443, name: tls-db, protocol: TLS}
    hosts: [db.example.com]
    tls: {mode: SIMPLE, credentialName: db-cert}
  - port: {number: 9444, name: tls-none, protocol: TLS}
    hosts: [none.example.com]
    tls: {mode: PASSTHROUGH}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: tcp-edge, namespace: edge}
spec:
  hosts: [db.example.com]
  gateways: [ingress]
  tcp:
  - match: [{port: 31400}]
    route: [{destination: {host: db.mesh.local}}]
  - match: [{port: 9443}]
    route:
    - {destination: {host: db.mesh.local}, weight: 80}
    - {destination: {host: echo.mesh.local}, weight: 20}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: tls-edge, namespace: edge}
spec:
  hosts: [nginx.example.com, "*.api.example.com"]
  gateways: [ingress, mesh]
  tls:
  - match: [{sniHosts: [nginx.example.com], port: 443}]
    route: [{destination: {host: nginx.mesh.local}}]
  - match: [{sniHosts: ["*.api.example.com"], gateways: [edge/ingress]}]
    route: [{destination: {host: api.mesh.local}}]
  - match: [{sniHosts: [x.api.example.com]}]
    route: [{destination: {host: nginx.mesh.local}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: db, namespace: edge}
spec:
  hosts: [db.mesh.local]
  gateways: [ingress, mesh]
  tcp:
  - match: [{port: 5432, gateways: [edge/ingress]}]
    route: [{destination: {host: echo.mesh.local}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: nginx-mesh, namespace: edge}
spec:
  hosts: [nginx.mesh.local]
  gateways: [ingress, mesh]
  tls:
  - match: [{sniHosts: [nginx.mesh.local], gateways: [edge/ingress]}]
    route: [{destination: {host: api.mesh.local}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::string router = "router~127.0.0.9~ingress-1.edge~edge.svc.cluster.local";
  const auto ask = [&](const std::string& type, std::vector<std::string> names) {
    return AskAsIngress(router, type, std::move(names));
  };
  auto listeners = IngressListeners(router);
  // 9444's server has no route: no listener (Envoy refuses one without chains).
  EXPECT_THAT(listeners,
              ::testing::UnorderedElementsAre(::testing::Key("127.0.0.1_31400"), ::testing::Key("127.0.0.1_443"),
                                              ::testing::Key("127.0.0.1_9443")));
  using envoy::extensions::filters::network::tcp_proxy::v3::TcpProxy;
  const auto proxy_of = [](const envoy::config::listener::v3::FilterChain& chain) {
    TcpProxy tcp;
    EXPECT_EQ(chain.filters_size(), 1);
    EXPECT_EQ(chain.filters(0).name(), "envoy.filters.network.tcp_proxy");
    EXPECT_TRUE(chain.filters(0).typed_config().UnpackTo(&tcp));
    EXPECT_THAT(PgvChecker().Check(tcp), ::testing::IsEmpty()) << tcp.DebugString();
    return tcp;
  };
  const auto names_of = [](const envoy::config::listener::v3::FilterChain& chain) {
    return std::vector<std::string>(chain.filter_chain_match().server_names().begin(),
                                    chain.filter_chain_match().server_names().end());
  };

  // Plain TCP: one chain for every connection, to the first tcp route for the port; the second
  // TCP server of the port is left out.
  const auto& tcp_listener = listeners["127.0.0.1_31400"];
  EXPECT_EQ(tcp_listener.listener_filters_size(), 0);
  ASSERT_EQ(tcp_listener.filter_chains_size(), 1);
  EXPECT_FALSE(tcp_listener.filter_chains(0).has_filter_chain_match());
  EXPECT_FALSE(tcp_listener.filter_chains(0).has_transport_socket());
  const TcpProxy to_db = proxy_of(tcp_listener.filter_chains(0));
  EXPECT_EQ(to_db.cluster(), "outbound|5432||db.mesh.local") << "the destination's only port";
  EXPECT_EQ(to_db.stat_prefix(), "outbound|5432||db.mesh.local");

  // Port 443: the passthrough servers' chains per tls route match, then the HTTPS server's.
  const auto& tls_listener = listeners["127.0.0.1_443"];
  ASSERT_EQ(tls_listener.listener_filters_size(), 1);
  EXPECT_EQ(tls_listener.listener_filters(0).name(), "envoy.filters.listener.tls_inspector");
  ASSERT_EQ(tls_listener.filter_chains_size(), 4);
  std::vector<std::pair<std::vector<std::string>, std::string>> chains;
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(tls_listener.filter_chains(i).has_transport_socket()) << "passthrough: TLS goes through untouched";
    chains.emplace_back(names_of(tls_listener.filter_chains(i)), proxy_of(tls_listener.filter_chains(i)).cluster());
  }
  using Chain = std::pair<std::vector<std::string>, std::string>;
  EXPECT_THAT(chains, ::testing::ElementsAre(Chain{{"nginx.example.com"}, "outbound|443||nginx.mesh.local"},
                                             Chain{{"*.api.example.com"}, "outbound|443||api.mesh.local"},
                                             Chain{{"x.api.example.com"}, "outbound|443||api.mesh.local"}))
      << "x.api.example.com belongs to the second server: the third match's route for it is not served";
  const auto& https = tls_listener.filter_chains(3);
  EXPECT_THAT(names_of(https), ::testing::ElementsAre("shop.example.com"));
  EXPECT_EQ(https.transport_socket().name(), "envoy.transport_sockets.tls");
  envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
  ASSERT_TRUE(https.filters(0).typed_config().UnpackTo(&hcm));
  EXPECT_EQ(hcm.rds().route_config_name(), "https.443.https.ingress.edge");
  // As istiod's gateways: the client certificate the gateway saw replaces the client's XFCC.
  EXPECT_EQ(hcm.forward_client_cert_details(),
            envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager::SANITIZE_SET);
  EXPECT_TRUE(hcm.set_current_client_cert_details().subject().value());
  EXPECT_TRUE(hcm.set_current_client_cert_details().cert());
  EXPECT_TRUE(hcm.set_current_client_cert_details().dns());
  EXPECT_TRUE(hcm.set_current_client_cert_details().uri());
  EXPECT_TRUE(hcm.proxy_100_continue());
  EXPECT_EQ(hcm.server_name(), "istio-envoy") << "istiod's gateways' Server header";

  // A TLS server that terminates: its certificate over SDS, then its tcp route (a split).
  const auto& db_listener = listeners["127.0.0.1_9443"];
  ASSERT_EQ(db_listener.filter_chains_size(), 1);
  const auto& db_chain = db_listener.filter_chains(0);
  EXPECT_THAT(names_of(db_chain), ::testing::ElementsAre("db.example.com"));
  envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext context;
  ASSERT_TRUE(db_chain.transport_socket().typed_config().UnpackTo(&context));
  EXPECT_THAT(PgvChecker().Check(context), ::testing::IsEmpty()) << context.DebugString();
  ASSERT_EQ(context.common_tls_context().tls_certificate_sds_secret_configs_size(), 1);
  EXPECT_EQ(context.common_tls_context().tls_certificate_sds_secret_configs(0).name(), "kubernetes://db-cert");
  const TcpProxy split = proxy_of(db_chain);
  ASSERT_EQ(split.weighted_clusters().clusters_size(), 2);
  EXPECT_EQ(split.weighted_clusters().clusters(0).name(), "outbound|5432||db.mesh.local");
  EXPECT_EQ(split.weighted_clusters().clusters(0).weight(), 80u);
  EXPECT_EQ(split.weighted_clusters().clusters(1).name(), "outbound|9000||echo.mesh.local");
  EXPECT_EQ(split.stat_prefix(), "outbound_127.0.0.1_9443");

  // Route configurations exist for the HTTPS server only; the Secrets it may be sent are those
  // of both terminating servers, HTTPS and TLS.
  EXPECT_EQ(ask(std::string(kRouteType), {"https.443.https.ingress.edge"}).size(), 1u);
  EXPECT_TRUE(ask(std::string(kRouteType), {"https.9443.tls-db.ingress.edge"}).empty());

  // What is left out, for /debug/config_status.
  const auto* mesh = dynamic_cast<const MeshContext*>(pipeline_->context().get());
  ASSERT_NE(mesh, nullptr);
  envoy::config::core::v3::Node labelled;
  labelled.set_id(router);
  LabelIngressGateway(labelled);
  std::vector<std::string> secret_names;
  for (const auto& [name, use] : UsedSecretNames(*mesh, ParseProxyInfo(labelled))) secret_names.push_back(name);
  EXPECT_THAT(secret_names, ::testing::ElementsAre("kubernetes://db-cert", "kubernetes://shop-cert"));
  std::vector<std::string> notes;
  for (const ProxyConfigNote& note : GatewayConfigNotes(*mesh, ParseProxyInfo(labelled), PeerIdentity{}, {})) {
    if (note.resource.starts_with("listener port")) {
      notes.push_back(StrCat(note.resource, " ", note.object, " ", note.field, ": ", note.reason));
    }
  }
  EXPECT_THAT(
      notes,
      ::testing::ElementsAre(
          "listener port 443 VirtualService edge/tls-edge spec.tls[2].match[0].sniHosts: SNI names x.api.example.com "
          "not routed at Gateway edge/ingress port 443: another server of the port or an earlier tls route match "
          "has them",
          "listener port 9444 Gateway edge/ingress spec.servers[6]: takes no connections: no tls route match of a "
          "VirtualService bound to the Gateway names an SNI host this server admits on port 9444",
          "listener port 31400 Gateway edge/ingress spec.servers[1]: port 31400 already serves plain TCP for server "
          "spec.servers[0] of Gateway edge/ingress; Envoy cannot tell plain TCP connections apart"));

  // In the mesh, db.mesh.local and nginx.mesh.local keep their own clusters: the tcp route and
  // the tls route match are for the Gateway alone.
  {
    auto h = Connect("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false);
    h->Send(First(std::string(kListenerType), {}));
    auto responses = h->Take();
    ASSERT_EQ(responses.size(), 1u);
    std::map<std::string, std::string> cluster_by_chain;
    for (int i = 0; i < responses[0].resources_size(); ++i) {
      const auto listener = Decode<envoy::config::listener::v3::Listener>(responses[0], i);
      if (listener.name() != "127.0.0.1_5432" && listener.name() != "127.0.0.1_443") continue;
      for (const auto& chain : listener.filter_chains()) {
        cluster_by_chain[StrCat(listener.name(), " ", absl::StrJoin(names_of(chain), ","))] = proxy_of(chain).cluster();
      }
    }
    EXPECT_EQ(cluster_by_chain["127.0.0.1_5432 "], "outbound|5432||db.mesh.local");
    EXPECT_EQ(cluster_by_chain["127.0.0.1_443 nginx.mesh.local"], "outbound|443||nginx.mesh.local");
  }
}

// Passthrough servers by the namespace part of their hosts, a catch-all one on an HTTPS port,
// and names: a server no route applies to takes no connections and holds no SNI name, so a
// later server of the port gets it.
TEST_F(GeneratorsTest, PassthroughServersRouteOnlyTheirNamespacesHostsAndUnroutedServersHoldNoNames) {
  Apply("gateway.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: tls-backends}
spec:
  resolution: STATIC
  hosts: [a.mesh.local, b.mesh.local]
  ports: [{number: 443, name: tls, protocol: TLS}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8443, name: tls-teams, protocol: TLS}
    hosts: [team-a/a.example.com, team-b/b.example.com]
    tls: {mode: PASSTHROUGH}
  - port: {number: 9443, name: tls-unrouted, protocol: TLS}
    hosts: [c.example.com]
    tls: {mode: PASSTHROUGH}
  - port: {number: 9443, name: https-c, protocol: HTTPS}
    hosts: [c.example.com]
    tls: {mode: SIMPLE, credentialName: c-cert}
  - port: {number: 10443, name: https-any, protocol: HTTPS}
    hosts: ["*"]
    tls: {mode: PASSTHROUGH}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: b, namespace: team-b}
spec:
  hosts: [a.example.com, b.example.com, "*.example.org"]
  gateways: [edge/ingress]
  tls:
  - match: [{sniHosts: [a.example.com], port: 8443}]
    route: [{destination: {host: a.mesh.local}}]
  - match: [{sniHosts: [b.example.com], port: 8443}]
    route: [{destination: {host: b.mesh.local}}]
  - match: [{sniHosts: ["*.example.org"], port: 10443}]
    route: [{destination: {host: b.mesh.local}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: c, namespace: edge}
spec:
  hosts: [c.example.com]
  gateways: [ingress]
  http: [{route: [{destination: {host: a.mesh.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: any, namespace: edge}
spec:
  hosts: ["*"]
  gateways: [ingress]
  tls:
  - match: [{sniHosts: ["*"], port: 10443}]
    route: [{destination: {host: a.mesh.local}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto listeners = IngressListeners("router~127.0.0.9~ingress-1.edge~edge.svc.cluster.local");
  ASSERT_EQ(listeners.size(), 3u);
  // a.example.com is kept for team-a's VirtualServices: team-b's match for it routes nothing.
  const auto& teams = listeners["127.0.0.1_8443"];
  ASSERT_EQ(teams.filter_chains_size(), 1);
  EXPECT_THAT(teams.filter_chains(0).filter_chain_match().server_names(), ::testing::ElementsAre("b.example.com"));
  // The unrouted passthrough server holds no name: the HTTPS server of the port terminates c.
  const auto& c = listeners["127.0.0.1_9443"];
  ASSERT_EQ(c.filter_chains_size(), 1);
  EXPECT_THAT(c.filter_chains(0).filter_chain_match().server_names(), ::testing::ElementsAre("c.example.com"));
  EXPECT_EQ(c.filter_chains(0).transport_socket().name(), "envoy.transport_sockets.tls");
  // An HTTPS server passing TLS through, for every name: a catch-all chain (sniHosts "*",
  // VirtualService any, older by name) and the wildcard of team-b's match, no TLS context.
  const auto& any = listeners["127.0.0.1_10443"];
  ASSERT_EQ(any.filter_chains_size(), 2);
  std::vector<std::pair<std::string, std::string>> chains;
  for (const auto& chain : any.filter_chains()) {
    EXPECT_FALSE(chain.has_transport_socket());
    envoy::extensions::filters::network::tcp_proxy::v3::TcpProxy tcp;
    EXPECT_TRUE(chain.filters(0).typed_config().UnpackTo(&tcp));
    chains.emplace_back(absl::StrJoin(chain.filter_chain_match().server_names(), ","), tcp.cluster());
  }
  EXPECT_THAT(chains, ::testing::ElementsAre(::testing::Pair("", "outbound|443||a.mesh.local"),
                                             ::testing::Pair("*.example.org", "outbound|443||b.mesh.local")));
}

// Which DestinationRule a proxy gets depends on its namespace, as istiod chooses: its own
// namespace's rule for the host, else the service's namespace's, else the root namespace's
// (istio-system). Clusters, routes (hash policies) and subset endpoints follow, and proxies of
// one namespace share them.
TEST_F(GeneratorsTest, TheDestinationRuleOfAProxysNamespaceComesFirstThenTheServicesThenTheRoot) {
  const std::string rules = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: store}
spec:
  resolution: STATIC
  hosts: [store.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  endpoints: [{address: 127.0.0.2, labels: {version: v2}}, {address: 127.0.0.3, labels: {version: v3}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: pay}
spec:
  resolution: STATIC
  hosts: [pay.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  endpoints: [{address: 127.0.0.4}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: store}
spec:
  host: store.mesh.local
  trafficPolicy: {loadBalancer: {simple: RANDOM}}
  subsets: [{name: canary, labels: {version: v2}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: store, namespace: ops}
spec:
  host: store.mesh.local
  trafficPolicy: {loadBalancer: {consistentHash: {httpHeaderName: x-user}}}
  subsets: [{name: canary, labels: {version: v3}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: mesh-wide, namespace: istio-system}
spec:
  host: "*.mesh.local"
  trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}
)";
  Apply("rules.yaml", rules);
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using envoy::config::cluster::v3::Cluster;
  const auto node = [](const std::string& ns, const std::string& pod) {
    return StrCat("sidecar~127.0.0.5~", pod, ".", ns, "~", ns, ".svc.cluster.local");
  };
  const auto lb = [&](const std::string& ns, const std::string& cluster) {
    const auto clusters = ClustersFor(node(ns, "app-1"));
    auto it = clusters.find(cluster);
    return it == clusters.end() ? Cluster::LbPolicy_MAX : it->second.lb_policy();
  };
  EXPECT_EQ(lb("default", "outbound|8080||store.mesh.local"), Cluster::RANDOM) << "the service's namespace's";
  EXPECT_EQ(lb("web", "outbound|8080||store.mesh.local"), Cluster::RANDOM) << "web has none: the service's";
  EXPECT_EQ(lb("ops", "outbound|8080||store.mesh.local"), Cluster::RING_HASH) << "ops has its own";
  EXPECT_EQ(lb("ops", "outbound|8080||pay.mesh.local"), Cluster::ROUND_ROBIN) << "the root namespace's";
  EXPECT_EQ(lb("default", "outbound|8080||pay.mesh.local"), Cluster::ROUND_ROBIN);
  EXPECT_EQ(lb("ops", "outbound|8080||inventory.mesh.local"), Cluster::LEAST_REQUEST)
      << "inventory's own rule, of its service's namespace, comes before the root's wildcard";
  EXPECT_EQ(lb("istio-system", "outbound|8080||store.mesh.local"), Cluster::RANDOM)
      << "a proxy of the root namespace gets the service's rule before the root's";
  EXPECT_EQ(lb("istio-system", "outbound|8080||pay.mesh.local"), Cluster::ROUND_ROBIN);

  // The route of an ops proxy hashes by x-user (its rule's consistent hash); a default proxy's does not.
  const auto hashes = [&](const std::string& ns) {
    const auto config = RoutesFor(node(ns, "app-1"), false, "8080");
    for (const auto& vhost : config.virtual_hosts()) {
      if (vhost.name() == "store.mesh.local:8080") return vhost.routes(0).route().hash_policy_size();
    }
    return -1;
  };
  EXPECT_EQ(hashes("ops"), 1);
  EXPECT_EQ(hashes("default"), 0);

  // The subset canary is v2 for default's proxies and v3 for ops's.
  const auto canary = [&](const std::string& ns, const std::string& pod) {
    auto h = Connect(node(ns, pod), false);
    h->Send(First(std::string(kEndpointType), {"outbound|8080|canary|store.mesh.local"}));
    auto eds = h->Take();
    EXPECT_EQ(eds.size(), 1u);
    if (eds.empty() || eds[0].resources_size() != 1) return std::string("none");
    const auto cla = Decode<envoy::config::endpoint::v3::ClusterLoadAssignment>(eds[0], 0);
    return cla.endpoints(0).lb_endpoints(0).endpoint().address().socket_address().address();
  };
  EXPECT_EQ(canary("default", "app-1"), "127.0.0.2");
  EXPECT_EQ(canary("ops", "app-1"), "127.0.0.3");
  EXPECT_EQ(canary("ops", "app-2"), "127.0.0.3");
  EXPECT_EQ(canary("web", "app-1"), "127.0.0.2");

  // Editing the wildcard rule reaches the clusters of every host under it.
  Apply("rules.yaml", absl::StrReplaceAll(rules, {{"simple: ROUND_ROBIN", "simple: RANDOM"}}));
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  EXPECT_EQ(lb("ops", "outbound|8080||pay.mesh.local"), Cluster::RANDOM);
  EXPECT_EQ(lb("default", "outbound|8080||pay.mesh.local"), Cluster::RANDOM);
}

// A DestinationRule for "*.mesh.local" applies to every host under it that has no rule of its
// own (the most specific host wins), and its subsets can be routed to.
TEST_F(GeneratorsTest, AWildcardDestinationRuleAppliesWhereNoOwnRuleDoes) {
  Apply("shop.yaml", kShopEntry + R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: everything}
spec:
  host: "*.mesh.local"
  trafficPolicy: {loadBalancer: {simple: RANDOM}}
  subsets: [{name: blue, labels: {color: blue}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop}
spec:
  hosts: [shop.mesh.local]
  http: [{route: [{destination: {host: shop.mesh.local, subset: blue}}]}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  std::map<std::string, envoy::config::cluster::v3::Cluster> clusters =
      ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  using Cluster = envoy::config::cluster::v3::Cluster;
  ASSERT_TRUE(clusters.contains("outbound|8080||shop.mesh.local"));
  EXPECT_EQ(clusters["outbound|8080||shop.mesh.local"].lb_policy(), Cluster::RANDOM);
  EXPECT_TRUE(clusters.contains("outbound|8080|blue|shop.mesh.local")) << "the wildcard rule's subset";
  ASSERT_TRUE(clusters.contains("outbound|8080|v1|inventory.mesh.local"));
  EXPECT_EQ(clusters["outbound|8080||inventory.mesh.local"].lb_policy(), Cluster::LEAST_REQUEST)
      << "inventory.mesh.local has a rule of its own, which wins";
  EXPECT_FALSE(clusters.contains("outbound|8080|blue|inventory.mesh.local"));
}

TEST_F(GeneratorsTest, MovingAWorkloadEntryPushesOnlyItsAssignment) {
  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(First(std::string(kClusterType), {}));
  auto cds = grpc->Take();
  grpc->Send(Ack(cds[0], {}));
  grpc->Send(Request(std::string(kEndpointType),
                     {"outbound|8080|v1|inventory.mesh.local", "outbound|8080|v2|inventory.mesh.local"}));
  auto eds = grpc->Take();
  ASSERT_EQ(eds.size(), 1u);
  grpc->Send(Ack(eds[0], {"outbound|8080|v1|inventory.mesh.local", "outbound|8080|v2|inventory.mesh.local"}));
  std::string moved = kMesh;
  moved.replace(moved.find("18082"), 5, "18092");
  Apply("mesh.yaml", moved);
  ASSERT_TRUE(last_request_.EndpointOnly());
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  auto update = grpc->Take();
  ASSERT_EQ(update.size(), 1u) << "EDS only, no CDS";
  EXPECT_EQ(update[0].type_url(), kEndpointType);
  EXPECT_EQ(NamesOf(update[0]), (std::vector<std::string>{"outbound|8080|v2|inventory.mesh.local"}));
  EXPECT_EQ(pipeline_->stats().incremental_pushes, 1u);
}

TEST_F(GeneratorsTest, ASidecarScopesWhatAProxySeesAndWhichPushesReachIt) {
  auto scoped = Connect("sidecar~127.0.0.6~web-1.shop~shop.svc.cluster.local", false);
  scoped->Send(First(std::string(kClusterType), {}));
  auto cds = scoped->Take();
  ASSERT_EQ(cds.size(), 1u);
  EXPECT_EQ(NamesOf(cds[0]), (std::vector<std::string>{"outbound|9080||reviews.shop.svc.cluster.local"}));
  scoped->Send(Ack(cds[0], {}));
  std::string moved = kMesh;
  moved.replace(moved.find("18081"), 5, "18091");
  Apply("mesh.yaml", moved);
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  EXPECT_TRUE(scoped->Take().empty()) << "inventory is outside the shop Sidecar's egress";
  EXPECT_EQ(pipeline_->stats().proxies_filtered_out, 1u);
}

// The checker the tests above rely on finds what Envoy refuses: a rule on a string, a required
// message, a numeric bound inside a wrapper, and rules inside an Any.
TEST(PgvCheckerTest, FindsViolationsThroughMessagesWrappersAndAny) {
  envoy::config::route::v3::RouteConfiguration config;
  auto* vhost = config.add_virtual_hosts();                // no name (min_len 1), no domains (min_items 1)
  vhost->add_routes()->mutable_route()->set_cluster("c");  // no match (required)
  auto* weighted = vhost->add_routes();
  weighted->mutable_match()->set_prefix("/");
  weighted->mutable_route()->mutable_weighted_clusters();  // no clusters (min_items 1)
  std::vector<std::string> found = PgvChecker().Check(config);
  EXPECT_THAT(found, ::testing::Contains(::testing::HasSubstr("virtual_hosts[0].name: string min_len")));
  EXPECT_THAT(found, ::testing::Contains(::testing::HasSubstr("virtual_hosts[0].domains: repeated min_items")));
  EXPECT_THAT(found, ::testing::Contains(::testing::HasSubstr("routes[0].match: message required")));
  EXPECT_THAT(found, ::testing::Contains(::testing::HasSubstr("weighted_clusters.clusters: repeated min_items")));

  envoy::config::listener::v3::Listener listener;
  listener.set_name("l");
  listener.mutable_address()->mutable_socket_address()->set_address("127.0.0.1");
  listener.mutable_address()->mutable_socket_address()->set_port_value(70000);  // lte 65535
  envoy::extensions::filters::network::tcp_proxy::v3::TcpProxy tcp;             // no stat_prefix
  tcp.set_cluster("c");
  auto* filter = listener.add_filter_chains()->add_filters();
  filter->set_name("envoy.filters.network.tcp_proxy");
  filter->mutable_typed_config()->PackFrom(tcp);
  found = PgvChecker().Check(listener);
  EXPECT_THAT(found, ::testing::Contains(::testing::HasSubstr("socket_address.port_value: lte (70000)")));
  EXPECT_THAT(found, ::testing::Contains(::testing::HasSubstr(
                         "typed_config<envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy>.stat_prefix: string "
                         "min_len")));
}

TEST(ProxyInfoTest, ParsesIstioNodeIdsAndMetadata) {
  envoy::config::core::v3::Node node;
  node.set_id("sidecar~10.1.2.3~reviews-v1-abc.shop~shop.svc.cluster.local");
  auto* labels = (*node.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value();
  (*labels->mutable_fields())["app"].set_string_value("reviews");
  ProxyInfo info = ParseProxyInfo(node);
  EXPECT_EQ(info.type, "sidecar");
  EXPECT_EQ(info.ip, "10.1.2.3");
  EXPECT_EQ(info.namespace_name, "shop");
  EXPECT_EQ(info.labels.at("app"), "reviews");
  EXPECT_FALSE(info.grpc);
  node.set_id("plain");
  (*node.mutable_metadata()->mutable_fields())["GENERATOR"].set_string_value("grpc");
  info = ParseProxyInfo(node);
  EXPECT_EQ(info.namespace_name, "default");
  EXPECT_TRUE(info.grpc);
}

// localityLbSetting on a DNS ServiceEntry's cluster (STRICT_DNS: its load assignment names
// the endpoints), as istiod applies it there: failover priorities for the proxy's locality with
// outlier detection, distribute's weights, the cluster weighing localities; a proxy of no
// locality is of the empty one, as istiod takes it: the names of no locality first.
TEST_F(GeneratorsTest, LocalityLbSettingAppliesToDnsClustersForTheProxysLocality) {
  Apply("dns.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: geo-dns}
spec:
  hosts: [geo-dns.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: DNS
  endpoints:
  - {address: a.geo.example.com, locality: r-a/z1}
  - {address: b.geo.example.com, locality: r-b/z1}
  - {address: c.geo.example.com, labels: {istio-locality: r-c.z1}}
  - {address: d.geo.example.com}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: geo-dns}
spec:
  host: geo-dns.mesh.local
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 3}
    loadBalancer: {localityLbSetting: {failover: [{from: r-a, to: r-c}]}}
  subsets:
  - name: spread
    labels: {}
    trafficPolicy:
      loadBalancer:
        localityLbSetting:
          distribute: [{from: "r-a/*", to: {"r-b/*": 100}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  // region -> (priority, weight, endpoint count) of cluster `name` as a proxy of `region` gets it.
  using Shape = std::map<std::string, std::tuple<uint32_t, uint32_t, int>>;
  const auto shape = [&](const std::string& region, const std::string& name, bool* weighs,
                         const std::string& region_label = "") {
    auto h = Connect("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false);
    if (!region.empty()) node_.mutable_locality()->set_region(region);
    if (!region_label.empty()) {
      auto* labels = (*node_.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value();
      (*labels->mutable_fields())["topology.kubernetes.io/region"].set_string_value(region_label);
    }
    h->Send(First(std::string(kClusterType), {}));
    node_.clear_locality();
    auto cds = h->Take();
    Shape out;
    for (int i = 0; cds.size() == 1 && i < cds[0].resources_size(); ++i) {
      const auto cluster = Decode<envoy::config::cluster::v3::Cluster>(cds[0], i);
      if (cluster.name() != name) continue;
      EXPECT_EQ(cluster.type(), envoy::config::cluster::v3::Cluster::STRICT_DNS);
      *weighs = cluster.common_lb_config().has_locality_weighted_lb_config();
      for (const auto& l : cluster.load_assignment().endpoints()) {
        out[l.locality().region()] = {l.priority(), l.load_balancing_weight().value(), l.lb_endpoints_size()};
      }
    }
    return out;
  };
  bool weighs = false;
  EXPECT_EQ(shape("r-a", "outbound|8080||geo-dns.mesh.local", &weighs),
            (Shape{{"r-a", {0, 1, 1}}, {"r-c", {1, 1, 1}}, {"r-b", {2, 1, 1}}, {"", {2, 1, 1}}}))
      << "its region first, then the failover region (an endpoint's by its locality label), then the rest";
  EXPECT_TRUE(weighs) << "failover rules with outlier detection: istiod weighs localities";
  EXPECT_EQ(shape("r-b", "outbound|8080||geo-dns.mesh.local", &weighs, "r-a"),
            shape("r-a", "outbound|8080||geo-dns.mesh.local", &weighs))
      << "the proxy's topology label before its node's locality";
  EXPECT_EQ(shape("r-b", "outbound|8080||geo-dns.mesh.local", &weighs),
            (Shape{{"r-a", {1, 1, 1}}, {"r-b", {0, 1, 1}}, {"r-c", {1, 1, 1}}, {"", {1, 1, 1}}}));
  EXPECT_EQ(shape("", "outbound|8080||geo-dns.mesh.local", &weighs),
            (Shape{{"r-a", {1, 1, 1}}, {"r-b", {1, 1, 1}}, {"r-c", {1, 1, 1}}, {"", {0, 1, 1}}}))
      << "no locality: the names of no locality first";
  EXPECT_EQ(shape("r-a", "outbound|8080|spread|geo-dns.mesh.local", &weighs),
            (Shape{{"r-a", {0, 1, 0}}, {"r-b", {0, 100, 1}}, {"r-c", {0, 1, 0}}, {"", {0, 1, 0}}}))
      << "distribute: r-b takes all, the others emptied";
  EXPECT_TRUE(weighs);
}

// failoverPriority on a STRICT_DNS cluster, as istiod applies it to a DNS cluster's load
// assignment: the names split by the labels they share with the proxy, within their locality.
TEST_F(GeneratorsTest, FailoverPriorityAppliesToDnsClusters) {
  // Three names, a and b in r-a and c in r-b, labelled `version` v1, v2, v2 and `track` `tracks`.
  const auto pin_dns = [&](const std::vector<std::string>& tracks, const std::string& priority) {
    std::string yaml = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: pin-dns}
spec:
  hosts: [pin-dns.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: DNS
  endpoints:
)";
    const char* const names[] = {"a", "b", "c"};
    const char* const versions[] = {"v1", "v2", "v2"};
    for (size_t i = 0; i < 3; ++i) {
      yaml += StrCat("  - {address: ", names[i], ".pin.example.com, locality: r-", i < 2 ? "a" : "b",
                     ", labels: {version: ", versions[i], tracks.empty() ? "" : StrCat(", track: ", tracks[i]), "}}\n");
    }
    Apply("dns.yaml", yaml + R"(---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: pin-dns}
spec:
  host: pin-dns.mesh.local
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 3}
    loadBalancer: {localityLbSetting: {failoverPriority: )" +
                          priority + "}}\n");
    ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  };
  pin_dns({}, "[version]");
  // "type region priority: names' first letters" of the cluster of `host`, as a proxy labelled
  // `version` gets it.
  const auto shape = [&](const std::string& version, const std::string& host = "pin-dns.mesh.local",
                         const std::string& track = "") {
    auto h = Connect("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false);
    auto* labels = (*node_.mutable_metadata()->mutable_fields())["LABELS"].mutable_struct_value();
    (*labels->mutable_fields())["version"].set_string_value(version);
    if (!track.empty()) (*labels->mutable_fields())["track"].set_string_value(track);
    h->Send(First(std::string(kClusterType), {}));
    auto cds = h->Take();
    std::vector<std::string> out;
    for (int i = 0; cds.size() == 1 && i < cds[0].resources_size(); ++i) {
      const auto cluster = Decode<envoy::config::cluster::v3::Cluster>(cds[0], i);
      if (cluster.name() != "outbound|8080||" + host) continue;
      EXPECT_TRUE(cluster.common_lb_config().has_locality_weighted_lb_config());
      for (const auto& l : cluster.load_assignment().endpoints()) {
        std::string line = StrCat(envoy::config::cluster::v3::Cluster::DiscoveryType_Name(cluster.type()), " ",
                                  l.locality().region(), " ", l.priority(), ":");
        for (const auto& lb : l.lb_endpoints())
          line += StrCat(" ", lb.endpoint().address().socket_address().address().substr(0, 1));
        out.push_back(line);
      }
    }
    return out;
  };
  using Lines = std::vector<std::string>;
  EXPECT_EQ(shape("v1"), (Lines{"STRICT_DNS r-a 0: a", "STRICT_DNS r-a 1: b", "STRICT_DNS r-b 1: c"}));
  EXPECT_EQ(shape("v2"), (Lines{"STRICT_DNS r-a 0: b", "STRICT_DNS r-a 1: a", "STRICT_DNS r-b 0: c"}))
      << "in a locality by priority";
  EXPECT_EQ(shape("v3"), (Lines{"STRICT_DNS r-a 0: a b", "STRICT_DNS r-b 0: c"})) << "shares none: one priority";
  // The cluster's key is cut where no endpoint gets further: with a second label, proxies of a
  // version no endpoint has share one cluster whatever their second label says.
  pin_dns({"t1", "t1", "t2"}, "[version, track]");
  EXPECT_EQ(shape("v2", "pin-dns.mesh.local", "t2"),
            (Lines{"STRICT_DNS r-a 1: b", "STRICT_DNS r-a 2: a", "STRICT_DNS r-b 0: c"}))
      << "v2 t2: 0, v2 t1: 1, v1: 2";
  EXPECT_EQ(shape("v3", "pin-dns.mesh.local", "t1"), (Lines{"STRICT_DNS r-a 0: a b", "STRICT_DNS r-b 0: c"}));
  const uint64_t builds = pipeline_->cache().stats().builds;
  EXPECT_EQ(shape("v4", "pin-dns.mesh.local", "t2"), (Lines{"STRICT_DNS r-a 0: a b", "STRICT_DNS r-b 0: c"}));
  EXPECT_EQ(shape("v5", "pin-dns.mesh.local", "t9"), (Lines{"STRICT_DNS r-a 0: a b", "STRICT_DNS r-b 0: c"}));
  EXPECT_EQ(pipeline_->cache().stats().builds, builds)
      << "labels past the furthest any endpoint gets are not in the key";

  // DNS_ROUND_ROBIN: one name, so one priority, 0, whatever it shares with the proxy.
  Apply("rr.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: rr-dns}
spec:
  hosts: [rr-dns.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: DNS_ROUND_ROBIN
  endpoints: [{address: a.rr.example.com, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: rr-dns}
spec:
  host: rr-dns.mesh.local
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 3}
    loadBalancer: {localityLbSetting: {failoverPriority: [version]}}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  EXPECT_EQ(shape("v2", "rr-dns.mesh.local"), (Lines{"LOGICAL_DNS  0: a"}));
}

// A VirtualService with no route for a proxy and port (its only route delegates to nothing, or
// is for other clients) leaves the host its default route, as istiod builds no virtual host from
// it; a route left out for gRPC alone (a redirect) does not.
TEST_F(GeneratorsTest, AVirtualServiceWithNoRouteForAProxyLeavesTheDefaultRoute) {
  for (const std::string& routes :
       {std::string("  - delegate: {name: missing}\n"),
        std::string("  - match: [{sourceLabels: {app: other}}]\n"
                    "    route: [{destination: {host: inventory.mesh.local, subset: v2}}]\n")}) {
    Apply("routes.yaml", std::string(kInventoryRoutesHead) + routes);
    ASSERT_TRUE(pipeline_->Push(last_request_).ok());
    for (const bool grpc : {false, true}) {
      const auto route = OnlyInventoryRoute(grpc);
      EXPECT_EQ(route.match().prefix(), "/") << routes;
      EXPECT_EQ(route.route().cluster(), "outbound|8080||inventory.mesh.local") << routes;
    }
  }
  Apply("routes.yaml", std::string(kInventoryRoutesHead) + "  - redirect: {uri: /elsewhere}\n");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  EXPECT_EQ(OnlyInventoryRoute(false).redirect().path_redirect(), "/elsewhere");
  const auto config = RoutesFor("grpc-client-1", true, "inventory.mesh.local:8080");
  ASSERT_EQ(config.virtual_hosts_size(), 1);
  EXPECT_EQ(config.virtual_hosts(0).routes_size(), 0) << "not routed where Envoy would redirect";
}

// A ServiceEntry's addresses are domains of its HTTP virtual hosts (an IPv6 one in brackets),
// the first host claiming each; its subjectAltNames are what a DestinationRule's SIMPLE tls
// without subjectAltNames checks the server for (istiod's auto SAN check still on, as the
// rule names none), and a rule's own subjectAltNames replace them.
TEST_F(GeneratorsTest, ServiceEntryAddressesAreDomainsAndItsSubjectAltNamesAreCheckedUnderTls) {
  Apply("payments.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: payments}
spec:
  hosts: [payments.example.com, pay.example.com]
  addresses: [127.0.0.50, "::1"]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.51}]
  subjectAltNames: ["spiffe://example.com/payments", payments.example.com]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: payments}
spec:
  host: payments.example.com
  trafficPolicy: {tls: {mode: SIMPLE}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: pay}
spec:
  host: pay.example.com
  trafficPolicy: {tls: {mode: SIMPLE, subjectAltNames: [pay.example.com]}}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const auto config = RoutesFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false, "8080");
  std::map<std::string, std::vector<std::string>> domains;
  for (const auto& vhost : config.virtual_hosts()) {
    domains[vhost.name()].assign(vhost.domains().begin(), vhost.domains().end());
  }
  EXPECT_THAT(domains["pay.example.com:8080"],
              ::testing::ElementsAre("pay.example.com", "pay.example.com:8080", "127.0.0.50", "127.0.0.50:8080",
                                     "[::1]", "[::1]:8080"));
  EXPECT_THAT(domains["payments.example.com:8080"],
              ::testing::ElementsAre("payments.example.com", "payments.example.com:8080"))
      << "the addresses are pay.example.com's, first by host: Envoy refuses a domain named twice";

  auto clusters = ClustersFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local");
  const auto sans_of = [&](const std::string& name) {
    envoy::extensions::transport_sockets::tls::v3::UpstreamTlsContext context;
    EXPECT_TRUE(clusters[name].transport_socket().typed_config().UnpackTo(&context)) << name;
    std::vector<std::string> sans;
    for (const auto& m : context.common_tls_context().validation_context().match_typed_subject_alt_names()) {
      sans.push_back(StrCat(static_cast<int>(m.san_type()), ":", m.matcher().exact()));
    }
    return sans;
  };
  using Matcher = envoy::extensions::transport_sockets::tls::v3::SubjectAltNameMatcher;
  EXPECT_THAT(sans_of("outbound|8080||payments.example.com"),
              ::testing::ElementsAre(StrCat(static_cast<int>(Matcher::URI), ":spiffe://example.com/payments"),
                                     StrCat(static_cast<int>(Matcher::DNS), ":payments.example.com")));
  EXPECT_THAT(sans_of("outbound|8080||pay.example.com"),
              ::testing::ElementsAre(StrCat(static_cast<int>(Matcher::DNS), ":pay.example.com")))
      << "the rule's own subjectAltNames";
  envoy::extensions::upstreams::http::v3::HttpProtocolOptions options;
  ASSERT_TRUE(clusters["outbound|8080||payments.example.com"]
                  .typed_extension_protocol_options()
                  .at("envoy.extensions.upstreams.http.v3.HttpProtocolOptions")
                  .UnpackTo(&options));
  EXPECT_TRUE(options.upstream_http_protocol_options().auto_san_validation()) << "as istiod: the rule names none";
}

// An address that is another host's name, or another entry's address (however spelled), is not
// a second domain: Envoy refuses a route configuration naming one twice. Analysis says which
// host keeps it.
TEST_F(GeneratorsTest, AnAddressAnotherHostHasIsNotNamedTwice) {
  Apply("clash.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: by-ip}
spec:
  hosts: [127.0.0.70]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.71}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: named}
spec:
  hosts: [a.example.com, b.example.com]
  addresses: [127.0.0.70, "0:0:0:0:0:0:0:1", 127.0.0.72]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.73}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: other}
spec:
  hosts: [0-first.example.com]
  addresses: ["::1"]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.74}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const auto config = RoutesFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false, "8080");
  std::map<std::string, std::vector<std::string>> domains;
  for (const auto& vhost : config.virtual_hosts()) {
    domains[vhost.name()].assign(vhost.domains().begin(), vhost.domains().end());
  }
  EXPECT_THAT(domains["0-first.example.com:8080"],
              ::testing::ElementsAre("0-first.example.com", "0-first.example.com:8080", "[::1]", "[::1]:8080"));
  EXPECT_THAT(domains["a.example.com:8080"],
              ::testing::ElementsAre("a.example.com", "a.example.com:8080", "127.0.0.72", "127.0.0.72:8080"))
      << "127.0.0.70 is a host's name; ::1 is 0-first's";
  EXPECT_THAT(domains["127.0.0.70:8080"], ::testing::ElementsAre("127.0.0.70", "127.0.0.70:8080"));
}

// Route timeouts as istiod sets them: on Envoy nodes every route has one, the VirtualService's
// or 0s, none (Envoy's own 15 s default would cut long requests), and the same as the most a
// grpc-timeout header may ask for, never max_stream_duration (with which Envoy would ignore the
// timeout); gRPC nodes read max_stream_duration alone (gRFC A31) and get it where the
// VirtualService sets a timeout.
TEST_F(GeneratorsTest, RouteTimeoutsAreIstiodsOnEnvoyAndMaxStreamDurationOnGrpc) {
  Apply("routes.yaml", std::string(kInventoryRoutesHead) + R"(  - match: [{headers: {x-slow: {exact: "1"}}}]
    timeout: 2.5s
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - route: [{destination: {host: inventory.mesh.local, subset: v1}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: plain}
spec:
  hosts: [plain.mesh.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.90}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  using envoy::config::route::v3::Route;
  const auto routes_of = [&](bool grpc, const std::string& host) {
    const auto config = grpc ? RoutesFor("grpc-client-1", true, host + ":8080")
                             : RoutesFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false, "8080");
    for (const auto& vhost : config.virtual_hosts()) {
      if (std::find(vhost.domains().begin(), vhost.domains().end(), host) != vhost.domains().end()) {
        return std::vector<Route>(vhost.routes().begin(), vhost.routes().end());
      }
    }
    ADD_FAILURE() << "no virtual host for " << host;
    return std::vector<Route>();
  };
  const std::vector<Route> envoy = routes_of(false, "inventory.mesh.local");
  ASSERT_EQ(envoy.size(), 2u);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // max_grpc_timeout, which istiod sends
  EXPECT_EQ(envoy[0].route().timeout().seconds(), 2);
  EXPECT_EQ(envoy[0].route().timeout().nanos(), 500000000);
  EXPECT_EQ(envoy[0].route().max_grpc_timeout().seconds(), 2);
  EXPECT_EQ(envoy[0].route().max_grpc_timeout().nanos(), 500000000);
  ASSERT_TRUE(envoy[1].route().has_timeout()) << "none given: 0s, no timeout";
  EXPECT_EQ(envoy[1].route().timeout().seconds(), 0);
  ASSERT_TRUE(envoy[1].route().has_max_grpc_timeout()) << "0s: a grpc-timeout header is honoured without bound";
  EXPECT_EQ(envoy[1].route().max_grpc_timeout().seconds(), 0);
  const std::vector<Route> plain = routes_of(false, "plain.mesh.local");
  ASSERT_EQ(plain.size(), 1u);
  ASSERT_TRUE(plain[0].route().has_timeout()) << "the default route too";
  EXPECT_EQ(plain[0].route().timeout().seconds(), 0);
  EXPECT_TRUE(plain[0].route().has_max_grpc_timeout());
#pragma GCC diagnostic pop
  for (const Route& route : {envoy[0], envoy[1], plain[0]}) {
    EXPECT_FALSE(route.route().has_max_stream_duration()) << "Envoy would ignore `timeout` with it";
  }

  const std::vector<Route> grpc = routes_of(true, "inventory.mesh.local");
  ASSERT_EQ(grpc.size(), 2u);
  EXPECT_EQ(grpc[0].route().max_stream_duration().max_stream_duration().seconds(), 2);
  EXPECT_EQ(grpc[0].route().max_stream_duration().max_stream_duration().nanos(), 500000000);
  EXPECT_FALSE(grpc[0].route().max_stream_duration().has_grpc_timeout_header_max());
  EXPECT_FALSE(grpc[1].route().has_max_stream_duration()) << "the application's deadline, as it is";
  const std::vector<Route> grpc_plain = routes_of(true, "plain.mesh.local");
  ASSERT_EQ(grpc_plain.size(), 1u);
  EXPECT_FALSE(grpc_plain[0].route().has_max_stream_duration());
}

// A route that delegates is served as the delegate's routes merged into it, to Envoy and gRPC
// nodes alike; a change of the delegate alone (no hosts of its own) reaches the proxies.
TEST_F(GeneratorsTest, DelegatedRoutesAreServedMergedAndTheDelegatesChangesArePushed) {
  const std::string root = std::string(kInventoryRoutesHead) + R"(  - name: canary
    match: [{headers: {x-canary: {exact: "yes"}}}]
    delegate: {name: inventory-canary, namespace: team}
    timeout: 3s
  - route: [{destination: {host: inventory.mesh.local, subset: v1}}]
---
)";
  const std::string delegate = R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: inventory-canary, namespace: team}
spec:
  http:
  - name: v2
    match: [{uri: {prefix: /inventory.Inventory/}}]
    route: [{destination: {host: inventory.mesh.local, subset: SUBSET}}]
)";
  Apply("routes.yaml", root + absl::StrReplaceAll(delegate, {{"SUBSET", "v2"}}));
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  for (const bool grpc : {false, true}) {
    const auto config = grpc ? RoutesFor("grpc-client-1", true, "inventory.mesh.local:8080")
                             : RoutesFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false, "8080");
    ASSERT_EQ(config.virtual_hosts_size(), 1) << (grpc ? "grpc" : "envoy");
    const auto& routes = config.virtual_hosts(0).routes();
    ASSERT_EQ(routes.size(), 2);
    EXPECT_EQ(routes[0].name(), "canary-v2");
    EXPECT_EQ(routes[0].match().prefix(), "/inventory.Inventory/");
    ASSERT_EQ(routes[0].match().headers_size(), 1);
    EXPECT_EQ(routes[0].match().headers(0).name(), "x-canary");
    EXPECT_EQ(routes[0].route().cluster(), "outbound|8080|v2|inventory.mesh.local");
    EXPECT_EQ(routes[0].route().timeout().seconds(), 3) << "the root's timeout";
    EXPECT_EQ(routes[1].route().cluster(), "outbound|8080|v1|inventory.mesh.local");
  }

  auto envoy = Connect("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false);
  envoy->Send(First(std::string(kRouteType), {"8080"}));
  auto rds = envoy->Take();
  ASSERT_EQ(rds.size(), 1u);
  envoy->Send(Ack(rds[0], {"8080"}));
  EXPECT_TRUE(envoy->Take().empty());
  Apply("routes.yaml", root + absl::StrReplaceAll(delegate, {{"SUBSET", "v1"}}));
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  rds = envoy->Take();
  ASSERT_EQ(rds.size(), 1u) << "the delegate changed: the proxy is pushed";
  const auto config = Decode<envoy::config::route::v3::RouteConfiguration>(rds[0], 0);
  ASSERT_EQ(config.virtual_hosts_size(), 1);
  EXPECT_EQ(config.virtual_hosts(0).routes(0).route().cluster(), "outbound|8080|v1|inventory.mesh.local");
}

// The deprecated integer mirrorPercent is sent in hundredths, as istiod sends it; at 0 no policy.
TEST_F(GeneratorsTest, AWholeMirrorPercentIsSentInHundredthsAndZeroIsNoMirror) {
  for (const auto& [percent, policies] : {std::pair{"5", 1}, std::pair{"0", 0}}) {
    Apply("routes.yaml", std::string(kInventoryRoutesHead) + R"(  - mirror: {host: inventory.mesh.local, subset: v2}
    mirrorPercent: )" + percent +
                             R"(
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
)");
    ASSERT_TRUE(pipeline_->Push(last_request_).ok());
    const auto action = OnlyInventoryRoute(false).route();
    ASSERT_EQ(action.request_mirror_policies_size(), policies) << percent;
    if (policies == 0) continue;
    EXPECT_EQ(action.request_mirror_policies(0).runtime_fraction().default_value().numerator(), 5u);
    EXPECT_EQ(action.request_mirror_policies(0).runtime_fraction().default_value().denominator(),
              envoy::type::v3::FractionalPercent::HUNDRED);
  }
}

// As istiod merges them: a delegate's redirect takes the delegating route's fault (the fault
// filter runs before the redirect); a delegate's mirror without a percentage takes the
// delegating route's; a delegate's percentage alone applies to the delegating route's mirror,
// and at 0% no mirror policy is sent.
TEST_F(GeneratorsTest, ADelegatesRedirectTakesTheRootsFaultAndItsMirrorTheRootsPercentage) {
  Apply("routes.yaml", std::string(kInventoryRoutesHead) + R"(  - name: root
    delegate: {name: inventory-team, namespace: team}
    fault: {abort: {httpStatus: 503, percentage: {value: 5}}}
    mirror: {host: inventory.mesh.local, subset: v2}
    mirrorPercentage: {value: 20}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: inventory-team, namespace: team}
spec:
  http:
  - name: moved
    match: [{uri: {prefix: /old}}]
    redirect: {uri: /new}
  - name: shadow
    match: [{uri: {prefix: /shadow}}]
    mirror: {host: inventory.mesh.local, subset: v1}
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
  - name: "off"
    match: [{uri: {prefix: /off}}]
    mirrorPercentage: {value: 0}
    route: [{destination: {host: inventory.mesh.local, subset: v1}}]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const auto config = RoutesFor("sidecar~127.0.0.5~app-1.default~default.svc.cluster.local", false, "8080");
  ASSERT_EQ(config.virtual_hosts_size(), 1);
  const auto& routes = config.virtual_hosts(0).routes();
  ASSERT_GE(routes.size(), 3);
  EXPECT_EQ(routes[0].name(), "root-moved");
  EXPECT_EQ(routes[0].redirect().path_redirect(), "/new");
  ASSERT_TRUE(routes[0].typed_per_filter_config().contains("envoy.filters.http.fault")) << "the root's fault";
  envoy::extensions::filters::http::fault::v3::HTTPFault fault;
  ASSERT_TRUE(routes[0].typed_per_filter_config().at("envoy.filters.http.fault").UnpackTo(&fault));
  EXPECT_EQ(fault.abort().http_status(), 503u);

  EXPECT_EQ(routes[1].name(), "root-shadow");
  ASSERT_EQ(routes[1].route().request_mirror_policies_size(), 1);
  EXPECT_EQ(routes[1].route().request_mirror_policies(0).cluster(), "outbound|8080|v1|inventory.mesh.local")
      << "its own mirror";
  EXPECT_EQ(routes[1].route().request_mirror_policies(0).runtime_fraction().default_value().numerator(), 200000u)
      << "at the root's 20%";

  EXPECT_EQ(routes[2].name(), "root-off");
  EXPECT_EQ(routes[2].route().request_mirror_policies_size(), 0) << "the root's mirror at its own 0%: none";
}

// "NAME: DOMAINS -> CLUSTERS" for each virtual host of `config`: its domains joined by ',', the
// clusters of its routes in order, joined by ' ', a weighted route's joined by '+'.
std::vector<std::string> VirtualHostsOf(const envoy::config::route::v3::RouteConfiguration& config) {
  std::vector<std::string> out;
  for (const auto& vhost : config.virtual_hosts()) {
    std::vector<std::string> clusters;
    for (const auto& route : vhost.routes()) {
      std::vector<std::string> weighted;
      for (const auto& w : route.route().weighted_clusters().clusters()) weighted.push_back(w.name());
      clusters.push_back(weighted.empty() ? route.route().cluster() : absl::StrJoin(weighted, "+"));
    }
    out.push_back(
        StrCat(vhost.name(), ": ", absl::StrJoin(vhost.domains(), ","), " -> ", absl::StrJoin(clusters, " ")));
  }
  return out;
}

// ExternalName Services are aliases of the hosts they name, as istiod serves them: no cluster or
// listener of their own; the host's virtual host answers to the alias's names (for proxies that
// see the alias), or, where a VirtualService names the alias, a virtual host of the alias routes
// by it; a route to an alias goes to its host's cluster; a proxyless client dialling an alias gets
// the host's routes under the alias's name; a TLS host's chain takes its aliases' SNI names.
TEST_F(GeneratorsTest, ExternalNameServicesAreServedAsAliasesOfTheirHosts) {
  Apply("aliases.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: catalog, namespace: web}
spec: {type: ExternalName, externalName: reviews.shop.svc.cluster.local}
---
apiVersion: v1
kind: Service
metadata: {name: old-catalog, namespace: web}
spec: {type: ExternalName, externalName: catalog.web.svc.cluster.local}
---
apiVersion: v1
kind: Service
metadata: {name: stock, namespace: shop}
spec: {type: ExternalName, externalName: inventory.mesh.local}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: catalog, namespace: web}
spec:
  hosts: [catalog]
  http: [{match: [{uri: {prefix: /one}}], route: [{destination: {host: old-catalog}}]}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: secure}
spec:
  hosts: [secure.mesh.local]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.9}]
---
apiVersion: v1
kind: Service
metadata: {name: vault, namespace: shop}
spec: {type: ExternalName, externalName: secure.mesh.local}
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::string envoy = "sidecar~127.0.0.5~app-1.default~default.svc.cluster.local";
  EXPECT_THAT(VirtualHostsOf(RoutesFor(envoy, false, "9080")),
              ::testing::ElementsAre("reviews.shop.svc.cluster.local:9080: reviews.shop.svc.cluster.local,"
                                     "reviews.shop.svc.cluster.local:9080,old-catalog.web.svc.cluster.local,"
                                     "old-catalog.web.svc.cluster.local:9080 -> "
                                     "outbound|9080||reviews.shop.svc.cluster.local",
                                     "catalog.web.svc.cluster.local:9080: catalog.web.svc.cluster.local,"
                                     "catalog.web.svc.cluster.local:9080 -> "
                                     "outbound|9080||reviews.shop.svc.cluster.local"));
  EXPECT_THAT(VirtualHostsOf(RoutesFor("sidecar~127.0.0.6~app-2.shop~shop.svc.cluster.local", false, "9080")),
              ::testing::ElementsAre("reviews.shop.svc.cluster.local:9080: reviews.shop.svc.cluster.local,"
                                     "reviews.shop.svc.cluster.local:9080 -> "
                                     "outbound|9080||reviews.shop.svc.cluster.local"))
      << "shop's Sidecar imports ./* only: web's aliases are not its names (cxds's rule, stricter than istiod's)";
  const auto clusters = ClustersFor(envoy);
  ASSERT_TRUE(clusters.contains("outbound|9080||reviews.shop.svc.cluster.local"));
  for (const auto& [name, cluster] : clusters) {
    EXPECT_THAT(name, ::testing::Not(::testing::AnyOf(::testing::HasSubstr("catalog"), ::testing::HasSubstr("stock"),
                                                      ::testing::HasSubstr("vault"))));
  }
  EXPECT_THAT(
      SidecarChains("default", "x", "127.0.0.1_443"),
      ::testing::ElementsAre("secure.mesh.local,vault.shop.svc.cluster.local -> outbound|443||secure.mesh.local"));

  // A proxyless client dialling xds:///stock.shop.svc.cluster.local:8080.
  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(
      First(std::string(kListenerType), {"stock.shop.svc.cluster.local:8080", "stock.shop.svc.cluster.local:9"}));
  const auto lds = grpc->Take();
  ASSERT_EQ(lds.size(), 1u);
  ASSERT_EQ(lds[0].resources_size(), 1) << "port 9 is not a port of inventory.mesh.local";
  const auto listener = Decode<envoy::config::listener::v3::Listener>(lds[0], 0);
  EXPECT_EQ(listener.name(), "stock.shop.svc.cluster.local:8080");
  envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
  ASSERT_TRUE(listener.api_listener().api_listener().UnpackTo(&hcm));
  EXPECT_EQ(hcm.rds().route_config_name(), "stock.shop.svc.cluster.local:8080");
  EXPECT_THAT(VirtualHostsOf(RoutesFor("grpc-client-2", true, "stock.shop.svc.cluster.local:8080")),
              ::testing::ElementsAre("stock.shop.svc.cluster.local:8080: stock.shop.svc.cluster.local:8080,"
                                     "stock.shop.svc.cluster.local -> outbound|8080|v2|inventory.mesh.local "
                                     "outbound|8080|v1|inventory.mesh.local+outbound|8080|v2|inventory.mesh.local"))
      << "inventory's VirtualService routes its alias";
  EXPECT_THAT(VirtualHostsOf(RoutesFor("grpc-client-3", true, "catalog.web.svc.cluster.local:9080")),
              ::testing::ElementsAre("catalog.web.svc.cluster.local:9080: catalog.web.svc.cluster.local:9080,"
                                     "catalog.web.svc.cluster.local -> outbound|9080||reviews.shop.svc.cluster.local"))
      << "the alias's own VirtualService";
}

constexpr char kStockAlias[] = R"(apiVersion: v1
kind: Service
metadata: {name: stock, namespace: shop}
spec: {type: ExternalName, externalName: inventory.mesh.local}
)";

// The listener responses among what `stream` was sent since it was last read.
std::vector<DiscoveryResponse> ListenerResponses(StreamHarness& stream) {
  std::vector<DiscoveryResponse> out;
  for (DiscoveryResponse& r : stream.Take()) {
    if (r.type_url() == kListenerType) out.push_back(std::move(r));
  }
  return out;
}

// A proxyless client that dials an alias before its Service exists is pushed the listener when
// the ExternalName Service comes, and told it is gone when the Service goes.
TEST_F(GeneratorsTest, AnAliasComingAndGoingIsPushedToTheClientDiallingIt) {
  const std::string target = "stock.shop.svc.cluster.local:8080";
  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(First(std::string(kListenerType), {target}));
  const auto before = grpc->Take();
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].resources_size(), 0) << "no such host yet";
  grpc->Send(Ack(before[0], {target}));
  Apply("alias.yaml", kStockAlias);
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::vector<DiscoveryResponse> came = ListenerResponses(*grpc);
  ASSERT_EQ(came.size(), 1u);
  ASSERT_EQ(came[0].resources_size(), 1);
  EXPECT_EQ(Decode<envoy::config::listener::v3::Listener>(came[0], 0).name(), target);
  grpc->Send(Ack(came[0], {target}));

  const ConfigStore::Update removed = store_.ApplyFile("alias.yaml", std::nullopt);
  ASSERT_TRUE(removed.errors.empty());
  ASSERT_TRUE(pipeline_->Push(model_.OnUpdate(removed)).ok());
  const std::vector<DiscoveryResponse> went = ListenerResponses(*grpc);
  ASSERT_EQ(went.size(), 1u);
  EXPECT_EQ(went[0].resources_size(), 0) << "the alias is gone: so is its listener";
}

// A ServiceEntry taking an alias's host, exported where a client that dialled the alias cannot
// see it: that client is pushed too, and loses the listener (the alias is no longer served).
TEST_F(GeneratorsTest, AClientThatDialledAnAliasIsPushedWhenAnEntryTakesItsHost) {
  Apply("alias.yaml", kStockAlias);
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::string target = "stock.shop.svc.cluster.local:8080";
  auto grpc = Connect("grpc-client-1", true);
  grpc->Send(First(std::string(kListenerType), {target}));
  const auto first = grpc->Take();
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].resources_size(), 1);
  grpc->Send(Ack(first[0], {target}));
  Apply("entry.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: stock, namespace: shop}
spec:
  hosts: [stock.shop.svc.cluster.local]
  ports: [{number: 8080, name: grpc, protocol: GRPC}]
  resolution: STATIC
  exportTo: ["."]
)");
  ASSERT_TRUE(pipeline_->Push(last_request_).ok());
  const std::vector<DiscoveryResponse> pushed = ListenerResponses(*grpc);
  ASSERT_EQ(pushed.size(), 1u) << "the client had the alias: pushed";
  EXPECT_EQ(pushed[0].resources_size(), 0);
}

}  // namespace
}  // namespace cxds::testing
