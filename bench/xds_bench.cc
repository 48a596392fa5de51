// Micro-benchmarks of realistic xDS resources and of the snapshot cache, each beside a baseline
// run in the same process (bench/README.md lists them):
//
//   Serialize       one resource: protobuf SerializeAsString (the baseline), cxds's
//                   Resource::FromMessage (what cxds pays once per version: copy, deterministic
//                   bytes, content hash, pre-encoded Any entry) and a plain copy of the bytes.
//   Fanout          one resource pushed to N connections: cxds builds it once and every
//                   connection's response references the same bytes (EncodeSotwResponse),
//                   against packing and serializing a DiscoveryResponse per connection.
//   SetSnapshot     with 0..10,000 open watches on one node key, or one watch on each of
//                   1,000/10,000 node keys (one node updated, or all of them), against
//                   Snapshot::Create alone and SetSnapshot with no watches.
//   BuildPushContext  the daemon's full push context (MeshModel::Build) for 1,000 and 10,000
//                   services of 10 endpoints each, the shape of bench/gen_mesh.py: the ratio of
//                   the two rows, against the 10x of their size, says whether it grows linearly.
//   ParseProxyInfo  who a proxy is, with and without a registry of Pods, against reading the
//                   node's labels alone.
//
// The resources come from cxds's own mesh generators (the PushPipeline run on a synthetic mesh
// of Kubernetes Services, EndpointSlices, DestinationRules and VirtualServices), so they have
// the names and structure cxds really serves. Clusters and assignments then get the few fields
// Istio also sends and cxds does not generate (see IstioCluster, IstioAssignment), so their size
// is that of an istiod resource. Loopback addresses only; nothing here opens a socket.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "cache/snapshot_cache.h"
#include "common/logging.h"
#include "common/scheduler.h"
#include "common/strings.h"
#include "config/config_store.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "google/protobuf/struct.pb.h"
#include "grpc/grpc.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "model/generators.h"
#include "model/mesh_analysis.h"
#include "model/mesh_model.h"
#include "model/proxy.h"
#include "model/workload_registry.h"
#include "pipeline/push_pipeline.h"
#include "protocol/resource.h"
#include "protocol/type_url.h"
#include "server/ack_ledger.h"
#include "server/response_encoding.h"

namespace cxds {
namespace {

using envoy::config::cluster::v3::Cluster;
using envoy::config::endpoint::v3::ClusterLoadAssignment;
using envoy::service::discovery::v3::DiscoveryResponse;

constexpr int kServices = 50;  // one virtual host each in route configuration "8080"
constexpr char kNamespace[] = "ns";
constexpr char kProxyId[] = "sidecar~127.0.0.5~app-1.ns~ns.svc.cluster.local";

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "xds_bench: %s\n", message.c_str());
  std::exit(1);
}

std::string ServiceName(int i) { return StrCat("svc-", i < 10 ? "0" : "", i); }
std::string Host(int i) { return StrCat(ServiceName(i), ".", kNamespace, ".svc.cluster.local"); }
// svc-00 has 10 endpoints and svc-01 100 (the two assignments measured); the others 3.
int EndpointCount(int i) { return i == 0 ? 10 : i == 1 ? 100 : 3; }

// The synthetic mesh, as the YAML a user would write: per service a Service on port 8080, its
// EndpointSlice (127.0.0.x only), a DestinationRule (least request, connection pool, outlier
// detection, subsets v1/v2) and a VirtualService (header and URI matches, an 80/20 split,
// timeouts, retries).
std::string MeshYaml() {
  std::string yaml;
  for (int i = 0; i < kServices; ++i) {
    const std::string name = ServiceName(i);
    const std::string host = Host(i);
    yaml += StrCat("---\napiVersion: v1\nkind: Service\nmetadata: {name: ", name, ", namespace: ", kNamespace,
                   "}\nspec:\n  selector: {app: ", name, "}\n  ports: [{name: http, port: 8080, appProtocol: http}]\n");
    yaml += StrCat("---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: ", name,
                   "-1\n  namespace: ", kNamespace, "\n  labels: {kubernetes.io/service-name: ", name,
                   "}\naddressType: IPv4\nports: [{name: http, port: 18080}]\nendpoints:\n");
    for (int e = 1; e <= EndpointCount(i); ++e) yaml += StrCat("- addresses: [127.0.0.", e, "]\n");
    yaml += StrCat("---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: ", name,
                   ", namespace: ", kNamespace, "}\nspec:\n  host: ", host,
                   "\n  trafficPolicy:\n"
                   "    loadBalancer: {simple: LEAST_REQUEST}\n"
                   "    connectionPool:\n"
                   "      tcp: {maxConnections: 1024}\n"
                   "      http: {http1MaxPendingRequests: 1024, http2MaxRequests: 1024}\n"
                   "    outlierDetection: {consecutive5xxErrors: 5, interval: 10s, baseEjectionTime: 30s, "
                   "maxEjectionPercent: 50}\n"
                   "  subsets:\n  - {name: v1, labels: {version: v1}}\n  - {name: v2, labels: {version: v2}}\n");
    yaml += StrCat("---\napiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: ", name,
                   ", namespace: ", kNamespace, "}\nspec:\n  hosts: [", host,
                   "]\n  http:\n"
                   "  - name: canary\n"
                   "    match:\n"
                   "    - headers: {x-canary: {exact: \"yes\"}}\n"
                   "    - uri: {prefix: /api/v2}\n      headers: {x-user: {prefix: test-}}\n"
                   "    route: [{destination: {host: ",
                   host,
                   ", subset: v2}}]\n"
                   "    timeout: 2s\n"
                   "  - name: split\n"
                   "    route:\n"
                   "    - {destination: {host: ",
                   host,
                   ", subset: v1}, weight: 80}\n"
                   "    - {destination: {host: ",
                   host,
                   ", subset: v2}, weight: 20}\n"
                   "    timeout: 5s\n"
                   "    retries: {attempts: 3, perTryTimeout: 1500ms, retryOn: \"5xx,reset\"}\n");
  }
  return yaml;
}

// What the Envoy sidecar kProxyId is served for the mesh: CDS and LDS by wildcard, EDS for
// every cluster, RDS "8080". Generated through the real pipeline (request path), then the
// pipeline is discarded: the snapshot owns its resources.
SnapshotPtr GenerateMeshView() {
  ConfigStore store;
  ConfigStore::Update update = store.ApplyFile("mesh.yaml", MeshYaml());
  if (!update.errors.empty()) Die(update.errors.front().ToString());
  MeshModel model(store, "cluster.local");
  model.OnUpdate(update);
  SimulatedScheduler scheduler;
  PushPipeline::Options options;
  options.scheduler = &scheduler;
  options.proxy_filter = MeshProxyFilter(model);
  options.proxy_update = MeshProxyUpdate(model);
  PushPipeline pipeline(std::shared_ptr<PushContextBuilder>(&model, [](auto*) {}), options);
  AddMeshGenerators(pipeline, model);
  PushRequest initial;
  initial.full = true;
  initial.reasons[reason::kConfig] = 1;
  if (!pipeline.Push(initial).ok()) Die("the initial push failed");

  envoy::config::core::v3::Node node;
  node.set_id(kProxyId);
  auto session = pipeline.Open(node, [](PushRequestPtr) {});
  std::map<std::string, Snapshot::TypeResourcesPtr> types;
  auto subscribe = [&](const std::string& type_url, bool wildcard, absl::flat_hash_set<std::string> names) {
    const SubscribedNames shared = std::make_shared<const absl::flat_hash_set<std::string>>(std::move(names));
    for (auto& [type, generated] : session->Subscribe(type_url, wildcard, shared)) types[type] = generated.view;
  };
  subscribe(std::string(kClusterType), true, {});
  subscribe(std::string(kListenerType), true, {});
  subscribe(std::string(kRouteType), false, {"8080"});
  if (!types.contains(std::string(kClusterType))) Die("no clusters generated");
  absl::flat_hash_set<std::string> clusters;
  for (const auto& [name, resource] : types[std::string(kClusterType)]->items) clusters.insert(name);
  subscribe(std::string(kEndpointType), false, clusters);
  absl::StatusOr<SnapshotPtr> view = Snapshot::FromTypes(std::move(types));
  if (!view.ok()) Die("the generated view is not a snapshot");
  return *view;
}

const Snapshot& MeshView() {
  static const SnapshotPtr* view = new SnapshotPtr(GenerateMeshView());
  return **view;
}

template <typename M>
M Generated(std::string_view type_url, const std::string& name) {
  ResourcePtr resource = MeshView().Find(std::string(type_url), name);
  if (resource == nullptr) Die(StrCat("not generated: ", name));
  M message;
  message.CopyFrom(resource->message());
  return message;
}

void SetString(google::protobuf::Struct* s, const std::string& key, const std::string& value) {
  (*s->mutable_fields())[key].set_string_value(value);
}

// An istiod outbound cluster carries, beyond what cxds generates: the EDS service name and
// initial fetch timeout, locality-weighted load balancing, the retry budget and remaining-count
// tracking of its circuit breaker, and its Istio metadata (services, original port). Not added:
// typed_extension_protocol_options (HttpProtocolOptions is not in cxds's generated API subset),
// transport socket matches and filters (mTLS, metadata exchange).
Cluster IstioCluster(int service) {
  Cluster cluster = Generated<Cluster>(kClusterType, ClusterName(8080, "", Host(service)));
  cluster.mutable_eds_cluster_config()->set_service_name(cluster.name());
  cluster.mutable_eds_cluster_config()->mutable_eds_config()->mutable_initial_fetch_timeout();
  cluster.mutable_common_lb_config()->mutable_locality_weighted_lb_config();
  if (cluster.circuit_breakers().thresholds_size() == 0) Die("the DestinationRule gave no circuit breaker");
  auto* thresholds = cluster.mutable_circuit_breakers()->mutable_thresholds(0);
  thresholds->mutable_max_retries()->set_value(4294967295u);
  thresholds->set_track_remaining(true);
  google::protobuf::Struct& istio = (*cluster.mutable_metadata()->mutable_filter_metadata())["istio"];
  google::protobuf::Struct* svc =
      (*istio.mutable_fields())["services"].mutable_list_value()->add_values()->mutable_struct_value();
  SetString(svc, "host", Host(service));
  SetString(svc, "name", ServiceName(service));
  SetString(svc, "namespace", kNamespace);
  (*istio.mutable_fields())["default_original_port"].set_number_value(8080);
  return cluster;
}

// An istiod assignment also has the zone of each locality, and per endpoint its health status,
// its workload metadata and the transport socket match label.
ClusterLoadAssignment IstioAssignment(int service) {
  auto cla = Generated<ClusterLoadAssignment>(kEndpointType, ClusterName(8080, "", Host(service)));
  for (auto& locality : *cla.mutable_endpoints()) {
    locality.mutable_locality()->set_zone("local-a");
    int e = 0;
    for (auto& lb : *locality.mutable_lb_endpoints()) {
      lb.set_health_status(envoy::config::core::v3::HEALTHY);
      auto& metadata = *lb.mutable_metadata()->mutable_filter_metadata();
      SetString(&metadata["envoy.transport_socket_match"], "tlsMode", "istio");
      SetString(
          &metadata["istio"], "workload",
          StrCat(ServiceName(service), "-7d4b9c-", e++, ";", kNamespace, ";", ServiceName(service), ";v1;Kubernetes"));
    }
  }
  if (cla.endpoints_size() == 0 || cla.endpoints(0).lb_endpoints_size() != EndpointCount(service)) {
    Die(StrCat("unexpected endpoints for ", cla.cluster_name()));
  }
  return cla;
}

// The messages measured, by label.
struct Sample {
  std::string label;
  std::string type_url;
  std::shared_ptr<const google::protobuf::Message> message;
};

std::vector<Sample> Samples() {
  using envoy::config::listener::v3::Listener;
  using envoy::config::route::v3::RouteConfiguration;
  std::vector<Sample> samples;
  samples.push_back({"cluster", std::string(kClusterType), std::make_shared<Cluster>(IstioCluster(0))});
  samples.push_back({"listener", std::string(kListenerType),
                     std::make_shared<Listener>(Generated<Listener>(kListenerType, "127.0.0.1_8080"))});
  auto routes = std::make_shared<RouteConfiguration>(Generated<RouteConfiguration>(kRouteType, "8080"));
  if (routes->virtual_hosts_size() != kServices || routes->virtual_hosts(0).routes_size() != 3 ||
      !routes->virtual_hosts(0).routes(2).route().has_weighted_clusters()) {
    Die("route configuration 8080 is not the expected 50 virtual hosts of 3 routes");
  }
  samples.push_back({StrCat("routes_", kServices, "vh"), std::string(kRouteType), routes});
  samples.push_back(
      {"cla_10ep", std::string(kEndpointType), std::make_shared<ClusterLoadAssignment>(IstioAssignment(0))});
  samples.push_back(
      {"cla_100ep", std::string(kEndpointType), std::make_shared<ClusterLoadAssignment>(IstioAssignment(1))});
  return samples;
}

void SetSizeCounters(benchmark::State& state, size_t bytes, int64_t per_iteration) {
  state.counters["bytes"] = benchmark::Counter(static_cast<double>(bytes));
  state.SetBytesProcessed(state.iterations() * per_iteration * static_cast<int64_t>(bytes));
}

// Baseline: the protobuf encoding of the message.
void BM_SerializeAsString(benchmark::State& state, const Sample& sample) {
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out = sample.message->SerializeAsString();
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  SetSizeCounters(state, bytes, 1);
}

// cxds's once-per-version cost: Resource::FromMessage (copy, deterministic encoding, SHA-256
// content version, the pre-encoded Any entry).
void BM_ResourceFromMessage(benchmark::State& state, const Sample& sample) {
  size_t bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<ResourcePtr> resource = Resource::FromMessage(*sample.message);
    bytes = (*resource)->serialized().size();
    benchmark::DoNotOptimize(resource);
  }
  SetSizeCounters(state, bytes, 1);
}

// The floor: copying bytes that already exist (what a per-connection copy of shared bytes
// would cost; cxds does not even copy them).
void BM_CopySerializedBytes(benchmark::State& state, const Sample& sample) {
  const std::string bytes = sample.message->SerializeAsString();
  for (auto _ : state) {
    std::string copy = bytes;
    benchmark::DoNotOptimize(copy.data());
  }
  SetSizeCounters(state, bytes.size(), 1);
}

// Per-stream response fields, the same for both fan-out paths.
struct Connection {
  std::string nonce;
};

std::vector<Connection> Connections(int n) {
  std::vector<Connection> connections(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) connections[static_cast<size_t>(i)].nonce = StrCat("7-", i, "-1");
  return connections;
}

// cxds: one push of a new version of the resource to N connections. It is serialized once
// (Resource::FromMessage, inside the loop: every push is a new version) and each connection's
// DiscoveryResponse is a gRPC buffer of a small header and trailer around a slice that
// references the resource's bytes, or, for a response below kOneSliceBelowBytes (the Cluster
// and the Listener here), one slice with a copy of them.
void BM_FanoutSharedBytes(benchmark::State& state, const Sample& sample) {
  const std::vector<Connection> connections = Connections(static_cast<int>(state.range(0)));
  const uint64_t serializations_before = ResourceSerializationCount();
  size_t wire = 0;
  for (auto _ : state) {
    ResourcePtr resource = *Resource::FromMessage(*sample.message);
    for (const Connection& c : connections) {
      grpc::ByteBuffer buffer = EncodeSotwResponse(OutgoingResponse{sample.type_url, "7", c.nonce, {resource}}, "cxds");
      wire = buffer.Length();
      benchmark::DoNotOptimize(buffer);
    }
  }
  state.counters["serializations_per_push"] = benchmark::Counter(
      static_cast<double>(ResourceSerializationCount() - serializations_before) / state.iterations());
  SetSizeCounters(state, wire, state.range(0));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// The same push in Delta: each connection's DeltaDiscoveryResponse around the resource's shared
// encoding (one slice of its own when small: kOneSliceBelowBytes).
void BM_FanoutDeltaBytes(benchmark::State& state, const Sample& sample) {
  const std::vector<Connection> connections = Connections(static_cast<int>(state.range(0)));
  size_t wire = 0;
  for (auto _ : state) {
    ResourcePtr resource = *Resource::FromMessage(*sample.message);
    for (const Connection& c : connections) {
      OutgoingDeltaResponse response{sample.type_url, "7", c.nonce, {resource}};
      grpc::ByteBuffer buffer = EncodeDeltaResponse(response, "cxds");
      wire = buffer.Length();
      benchmark::DoNotOptimize(buffer);
    }
  }
  SetSizeCounters(state, wire, state.range(0));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// Baseline: every connection packs the message into its own DiscoveryResponse, which gRPC's
// protobuf serialization turns into a buffer (a server that keeps messages, not bytes).
void BM_FanoutSerializePerConnection(benchmark::State& state, const Sample& sample) {
  const std::vector<Connection> connections = Connections(static_cast<int>(state.range(0)));
  size_t wire = 0;
  for (auto _ : state) {
    for (const Connection& c : connections) {
      DiscoveryResponse response;
      response.set_version_info("7");
      response.add_resources()->PackFrom(*sample.message);
      response.set_type_url(sample.type_url);
      response.set_nonce(c.nonce);
      response.mutable_control_plane()->set_identifier("cxds");
      grpc::ByteBuffer buffer;
      bool own = false;
      if (!grpc::SerializationTraits<DiscoveryResponse>::Serialize(response, &buffer, &own).ok()) Die("serialize");
      wire = buffer.Length();
      benchmark::DoNotOptimize(buffer);
    }
  }
  state.counters["serializations_per_push"] = benchmark::Counter(static_cast<double>(state.range(0)));
  SetSizeCounters(state, wire, state.range(0));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// ---- SnapshotCache ----

// The proxy's whole view as a snapshot, at `version`; with `moved`, the endpoints of svc-00
// have moved (a new port), as after an EndpointSlice change.
SnapshotPtr MeshSnapshot(const std::string& version, bool moved) {
  std::vector<ResourcePtr> resources;
  for (const auto& [type_url, typed] : MeshView().types()) {
    for (const auto& [name, resource] : typed->items) resources.push_back(resource);
  }
  if (moved) {
    const std::string name = ClusterName(8080, "", Host(0));
    for (ResourcePtr& r : resources) {
      if (r->type_url() != kEndpointType || r->name() != name) continue;
      ClusterLoadAssignment cla;
      cla.CopyFrom(r->message());
      for (auto& locality : *cla.mutable_endpoints()) {
        for (auto& lb : *locality.mutable_lb_endpoints()) {
          lb.mutable_endpoint()->mutable_address()->mutable_socket_address()->set_port_value(18081);
        }
      }
      r = *Resource::FromMessage(cla);
    }
  }
  absl::StatusOr<SnapshotPtr> snapshot = Snapshot::Create(version, std::move(resources));
  if (!snapshot.ok()) Die(std::string(snapshot.status().message()));
  return *snapshot;
}

// Two snapshots that differ in one assignment; SetSnapshot alternates them so every call is a
// real change (a new version, one name changed) that watches are told about.
struct SnapshotPair {
  SnapshotPtr a = MeshSnapshot("1", false);
  SnapshotPtr b = MeshSnapshot("2", true);
  const SnapshotPtr& next(uint64_t i) const { return i % 2 == 0 ? a : b; }
};

const SnapshotPair& Snapshots() {
  static const SnapshotPair* pair = new SnapshotPair();
  return *pair;
}

envoy::config::core::v3::Node NodeWithId(const std::string& id) {
  envoy::config::core::v3::Node node;
  node.set_id(id);
  return node;
}

std::string NodeId(int i) { return StrCat("sidecar~127.0.0.5~app-", i, ".ns~ns.svc.cluster.local"); }

void Check(const absl::Status& status) {
  if (!status.ok()) Die(std::string(status.message()));
}

// The watch callbacks only count: this measures the cache's own cost (consistency check, diff,
// collecting and calling the callbacks), not what a stream does when told.
struct WatchSet {
  std::atomic<uint64_t> notified{0};
  std::vector<std::unique_ptr<ConfigWatcher::Watch>> watches;
  void Open(SnapshotCache& cache, const std::string& node_id) {
    watches.push_back(cache.CreateWatch(NodeWithId(node_id), [this](const ConfigChange& change) {
      notified.fetch_add(1, std::memory_order_relaxed);
      benchmark::DoNotOptimize(change.types.size());
    }));
  }
};

void ReportNotified(benchmark::State& state, const WatchSet& set, uint64_t calls) {
  state.counters["notified_per_call"] =
      benchmark::Counter(calls == 0 ? 0.0 : static_cast<double>(set.notified.load()) / static_cast<double>(calls));
}

// Baseline: building the snapshot alone (what the embedder does before SetSnapshot).
void BM_SnapshotCreate(benchmark::State& state) {
  std::vector<ResourcePtr> resources;
  for (const auto& [type_url, typed] : MeshView().types()) {
    for (const auto& [name, resource] : typed->items) resources.push_back(resource);
  }
  for (auto _ : state) benchmark::DoNotOptimize(Snapshot::Create("1", resources));
  state.counters["resources"] = benchmark::Counter(static_cast<double>(resources.size()));
}

// N watches on one node key (N streams of one node, or one node group): one SetSnapshot tells
// all N. N = 0 is the baseline without watches (no diff, nobody told). check = 0 stores without
// the consistency check (ConsistencyPolicy::kNone), which otherwise dominates small N.
void BM_SetSnapshotOneKey(benchmark::State& state) {
  const int watches = static_cast<int>(state.range(0));
  const SnapshotPair& snapshots = Snapshots();
  SnapshotCache::Options options;
  if (state.range(1) == 0) options.consistency = ConsistencyPolicy::kNone;
  SnapshotCache cache(options);
  WatchSet set;  // destroyed before the cache
  Check(cache.SetSnapshot(kProxyId, snapshots.a));
  for (int i = 0; i < watches; ++i) set.Open(cache, kProxyId);
  uint64_t calls = 0;
  for (auto _ : state) Check(cache.SetSnapshot(kProxyId, snapshots.next(++calls)));
  ReportNotified(state, set, calls);
}

// One watch on each of N node keys, every node with a snapshot; one node's snapshot changes
// (only its watch is told). watches_per_node = 0 is the baseline.
void BM_SetSnapshotOneOfManyKeys(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const bool watched = state.range(1) != 0;
  const SnapshotPair& snapshots = Snapshots();
  SnapshotCache cache;
  WatchSet set;
  for (int i = 0; i < nodes; ++i) {
    Check(cache.SetSnapshot(NodeId(i), snapshots.a));
    if (watched) set.Open(cache, NodeId(i));
  }
  const std::string target = NodeId(nodes / 2);
  uint64_t calls = 0;
  for (auto _ : state) Check(cache.SetSnapshot(target, snapshots.next(++calls)));
  ReportNotified(state, set, calls);
}

// The same N node keys, every node's snapshot changed (a mesh-wide change with per-node
// snapshots): N SetSnapshot calls, each telling its node's watch.
void BM_SetSnapshotAllKeys(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const bool watched = state.range(1) != 0;
  const SnapshotPair& snapshots = Snapshots();
  SnapshotCache cache;
  WatchSet set;
  std::vector<std::string> ids;
  for (int i = 0; i < nodes; ++i) {
    ids.push_back(NodeId(i));
    Check(cache.SetSnapshot(ids.back(), snapshots.a));
    if (watched) set.Open(cache, ids.back());
  }
  uint64_t round = 0;
  for (auto _ : state) {
    const SnapshotPtr& snapshot = snapshots.next(++round);
    for (const std::string& id : ids) Check(cache.SetSnapshot(id, snapshot));
  }
  ReportNotified(state, set, round * static_cast<uint64_t>(nodes));
}

// What one send costs the ACK/NACK ledger, for the client status (CSDS): a SotW response of
// `resources` clusters recorded on one of 1,000 streams, with what the client holds (held = 1:
// the response's resources shared, the previous ones released) or without (held = 0, the
// baseline: the version and nonce only, as before CSDS).
void BM_LedgerRecordSent(benchmark::State& state) {
  const size_t count = static_cast<size_t>(state.range(0));
  const bool held = state.range(1) != 0;
  std::vector<ResourcePtr> resources;
  for (const auto& [name, resource] : MeshView().types().at(std::string(kClusterType))->items) {
    if (resources.size() == count) break;
    resources.push_back(resource);
  }
  AckLedger ledger;
  for (int64_t stream = 0; stream < 1000; ++stream) ledger.OpenStream(stream, absl::UnixEpoch());
  const std::string type(kClusterType);
  int64_t stream = 0;
  uint64_t sends = 0;
  for (auto _ : state) {
    const std::string nonce = StrCat("n", ++sends);
    ledger.RecordSent(stream, type, nonce, "v", resources.size(), absl::UnixEpoch(),
                      held ? SentResources{&resources} : SentResources{});
    stream = (stream + 1) % 1000;
  }
  state.counters["resources"] = benchmark::Counter(static_cast<double>(resources.size()));
}

// A stream's lookups by type URL: every type of an ADS stream found once, in one map (so it
// stays in the cache): TypeUrlMap, std::map ordered as TypeUrlMap orders (length, then bytes),
// and std::map with std::less (every step compares the 33-byte prefix the type URLs share).
template <typename Map>
void BM_FindByTypeUrl(benchmark::State& state) {
  Map types;
  const std::vector<std::string> urls = {std::string(kClusterType), std::string(kEndpointType),
                                         std::string(kListenerType), std::string(kRouteType), std::string(kSecretType)};
  for (size_t i = 0; i < urls.size(); ++i) types[urls[i]] = static_cast<int>(i);
  int64_t found = 0;
  for (auto _ : state) {
    for (const std::string& url : urls) found += types.find(url)->second;
  }
  benchmark::DoNotOptimize(found);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(urls.size()));
}

// The server's shape of the same lookups: one map per stream, STREAMS of them, each holding an
// Envoy's four ADS types and allocated on its own (as a stream's maps are, inside the stream),
// and one lookup in each, the streams visited in a shuffled order (a fixed seed), so that, as
// during a push to thousands of streams, a map is rarely in the cache and the hardware cannot
// prefetch the next. The keys looked up are each stream's own copies, as a request's type URL is.
template <typename Map>
void BM_FindByTypeUrlAcrossStreams(benchmark::State& state) {
  const size_t streams = static_cast<size_t>(state.range(0));
  const std::vector<std::string_view> urls = {kClusterType, kEndpointType, kListenerType, kRouteType};
  std::vector<std::unique_ptr<Map>> maps;
  std::vector<std::string> asked;  // per stream, the type it is asked for
  maps.reserve(streams);
  asked.reserve(streams);
  for (size_t s = 0; s < streams; ++s) {
    maps.push_back(std::make_unique<Map>());
    for (size_t i = 0; i < urls.size(); ++i) (*maps.back())[std::string(urls[i])] = static_cast<int>(i);
    asked.emplace_back(urls[s % urls.size()]);
  }
  std::vector<size_t> order(streams);
  for (size_t s = 0; s < streams; ++s) order[s] = s;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  int64_t found = 0;
  for (auto _ : state) {
    for (size_t s : order) found += maps[s]->find(asked[s])->second;
  }
  benchmark::DoNotOptimize(found);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(streams));
}

// A mesh like bench/gen_mesh.py's: SERVICES Services in namespace bench, one EndpointSlice of
// 10 loopback endpoints each, 100 services per file.
std::vector<FileRead> GeneratedMeshFiles(int services) {
  std::vector<FileRead> files;
  int endpoint = 0;
  for (int s = 0; s < services; ++s) {
    if (s % 100 == 0) files.push_back(FileRead{StrCat("services-", s / 100, ".yaml")});
    std::string& yaml = files.back().content;
    const std::string name = StrCat("svc-", s);
    absl::StrAppend(&yaml, "apiVersion: v1\nkind: Service\nmetadata: {name: ", name,
                    ", namespace: bench}\nspec:\n  selector: {app: ", name,
                    "}\n  ports:\n  - {name: http, port: 8080, appProtocol: http}\n---\n");
    absl::StrAppend(&yaml, "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: ", name,
                    "-1\n  namespace: bench\n  labels: {kubernetes.io/service-name: ", name,
                    "}\naddressType: IPv4\nports: [{name: http, port: 8080}]\nendpoints:\n");
    for (int e = 0; e < 10; ++e, ++endpoint) {
      const int i = endpoint + 1;
      absl::StrAppend(&yaml, "- addresses: [127.", 1 + i / 65025, ".", (i / 255) % 255, ".", 1 + i % 255, "]\n");
    }
    yaml += "---\n";
  }
  return files;
}

// A store holding GeneratedMeshFiles(services); null, with the benchmark skipped, if it did not
// load. `update` gets what loading it changed.
std::unique_ptr<ConfigStore> GeneratedMeshStore(benchmark::State& state, int services, ConfigStore::Update* update) {
  auto store = std::make_unique<ConfigStore>();
  *update = store->ApplyFiles(GeneratedMeshFiles(services));
  if (!update->errors.empty()) {
    state.SkipWithError(update->errors.front().ToString().c_str());
    return nullptr;
  }
  return store;
}

// GeneratedMeshStore with a MeshModel that has taken it in; nulls if it did not load.
struct GeneratedMesh {
  std::unique_ptr<ConfigStore> store;
  std::unique_ptr<MeshModel> model;
};
GeneratedMesh GeneratedMeshModel(benchmark::State& state, int services) {
  ConfigStore::Update update;
  GeneratedMesh mesh{GeneratedMeshStore(state, services, &update), nullptr};
  if (mesh.store == nullptr) return mesh;
  mesh.model = std::make_unique<MeshModel>(*mesh.store, "cluster.local");
  mesh.model->OnUpdate(update);
  return mesh;
}

void BM_BuildPushContext(benchmark::State& state) {
  const int services = static_cast<int>(state.range(0));
  const GeneratedMesh mesh = GeneratedMeshModel(state, services);
  if (mesh.model == nullptr) return;
  MeshModel& model = *mesh.model;
  uint64_t sequence = 0;
  for (auto _ : state) {
    auto built = model.Build(nullptr, PushRequest{}, ++sequence, absl::UnixEpoch());
    benchmark::DoNotOptimize(built);
    // The daemon frees the previous context after the push, outside its context time.
    state.PauseTiming();
    built = absl::InternalError("freed");
    state.ResumeTiming();
  }
  state.counters["services"] = benchmark::Counter(services);
  state.counters["per_service_ns"] = benchmark::Counter(
      static_cast<double>(services), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Baseline of BM_BuildPushContext, on the same store: only the Services indexed by host in a
// map, the least any push context must do. Both grow worse than linearly as node-based maps
// outgrow the caches; their ratio per size says what the context adds to that.
void BM_IndexServicesByHost(benchmark::State& state) {
  const int services = static_cast<int>(state.range(0));
  ConfigStore::Update update;
  const std::unique_ptr<ConfigStore> store = GeneratedMeshStore(state, services, &update);
  if (store == nullptr) return;
  const std::shared_ptr<const ObjectMap> objects = store->Snapshot();
  for (auto _ : state) {
    auto by_host = std::make_unique<std::map<std::string, const K8sService*>>();
    for (const auto& [key, stored] : ObjectsOfKind(*objects, "Service")) {
      if (const auto* svc = std::get_if<K8sService>(&stored->object)) {
        by_host->emplace(StrCat(svc->meta.name, ".", svc->meta.namespace_name, ".svc.cluster.local"), svc);
      }
    }
    if (by_host->size() != static_cast<size_t>(services)) state.SkipWithError("services missing");
    benchmark::DoNotOptimize(by_host);
    state.PauseTiming();  // freed outside the timing, as the context is
    by_host.reset();
    state.ResumeTiming();
  }
  state.counters["services"] = benchmark::Counter(services);
  state.counters["per_service_ns"] = benchmark::Counter(
      static_cast<double>(services), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// One more slice of svc-0 of GeneratedMeshFiles, its address moving between two values with `i`.
std::string ExtraSlice(int i) {
  return StrCat(
      "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: svc-0-extra\n  namespace: bench\n"
      "  labels: {kubernetes.io/service-name: svc-0}\naddressType: IPv4\nports: [{name: http, port: 8080}]\n"
      "endpoints:\n- addresses: [127.9.0.",
      1 + i % 2, "]\n");
}

// What one EndpointSlice change costs the model's endpoint index (MeshModel::OnUpdate): the
// slice's Service's host rebuilt, the other hosts' entries kept. Its baseline,
// BM_BuildEndpointIndex on the same store, is the whole index built, as every update did before.
// The store's own work (reading the file, the object map) is outside the timing.
void BM_EndpointSliceChange(benchmark::State& state) {
  const int services = static_cast<int>(state.range(0));
  const GeneratedMesh mesh = GeneratedMeshModel(state, services);
  if (mesh.model == nullptr) return;
  MeshModel& model = *mesh.model;
  int i = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const ConfigStore::Update change = mesh.store->ApplyFile("extra.yaml", ExtraSlice(i++));
    if (change.changed.size() != 1) state.SkipWithError("the slice did not change");
    state.ResumeTiming();
    benchmark::DoNotOptimize(model.OnUpdate(change));
  }
  state.counters["services"] = benchmark::Counter(services);
}

// What one EndpointSlice change costs the store with the analysis on (ConfigStore::ApplyFiles:
// the file read, the object map, every analysis), as the daemon takes a change in before its
// push. tracked 1: the analyzer as the daemon has it, keeping its endpoint index from call to
// call; 0: a new analyzer for each change, which builds the whole index, as every change did
// before (the same-run baseline).
void BM_AnalyzedSliceChange(benchmark::State& state) {
  const int services = static_cast<int>(state.range(0));
  const bool tracked = state.range(1) != 0;
  auto analyzer = std::make_shared<Analyzer>(MeshAnalyzer("cluster.local"));
  ConfigStore store(
      ConfigStore::Options{.analyze = [analyzer](const ObjectMap& served) { return (*analyzer)(served); }});
  const ConfigStore::Update loaded = store.ApplyFiles(GeneratedMeshFiles(services));
  if (!loaded.errors.empty()) {
    state.SkipWithError(loaded.errors.front().ToString().c_str());
    return;
  }
  int i = 0;
  for (auto _ : state) {
    if (!tracked) {
      state.PauseTiming();
      *analyzer = MeshAnalyzer("cluster.local");
      state.ResumeTiming();
    }
    const ConfigStore::Update change = store.ApplyFile("extra.yaml", ExtraSlice(i++));
    if (change.changed.size() != 1) state.SkipWithError("the slice did not change");
  }
  state.counters["services"] = benchmark::Counter(services);
}

void BM_BuildEndpointIndex(benchmark::State& state) {
  const int services = static_cast<int>(state.range(0));
  ConfigStore::Update update;
  const std::unique_ptr<ConfigStore> store = GeneratedMeshStore(state, services, &update);
  if (store == nullptr) return;
  const std::shared_ptr<const ObjectMap> objects = store->Snapshot();
  for (auto _ : state) {
    EndpointIndex index = BuildEndpointIndex(*objects, "cluster.local");
    if (index.size() != static_cast<size_t>(services)) state.SkipWithError("hosts missing");
    benchmark::DoNotOptimize(index);
  }
  state.counters["services"] = benchmark::Counter(services);
}

// What an update that touches Pods costs the workload registry (model/workload_registry.h):
// the registry rebuilt from the store's PODS Pods (100 a file, each with labels and an IP) and
// compared with the one before, as MeshModel::OnUpdate does for such an update.
// `pods` Pods of namespace bench, 100 a file, each with labels and an IP.
std::vector<FileRead> PodFiles(int pods) {
  std::vector<FileRead> files;
  for (int p = 0; p < pods; ++p) {
    if (p % 100 == 0) files.push_back(FileRead{StrCat("pods-", p / 100, ".yaml")});
    const int i = p + 1;
    absl::StrAppend(&files.back().content, "apiVersion: v1\nkind: Pod\nmetadata: {name: pod-", p,
                    ", namespace: bench, labels: {app: svc-", p % 1000, ", version: v", p % 3,
                    "}}\nstatus: {podIP: 127.", 1 + i / 65025, ".", (i / 255) % 255, ".", 1 + i % 255, "}\n---\n");
  }
  return files;
}

void BM_RebuildWorkloadRegistry(benchmark::State& state) {
  const int pods = static_cast<int>(state.range(0));
  const std::vector<FileRead> files = PodFiles(pods);
  ConfigStore store;
  const ConfigStore::Update update = store.ApplyFiles(files);
  if (!update.errors.empty()) {
    state.SkipWithError(update.errors.front().ToString().c_str());
    return;
  }
  const std::shared_ptr<const ObjectMap> objects = store.Snapshot();
  const WorkloadRegistry before = BuildWorkloadRegistry(*objects);
  if (before.pods.size() != static_cast<size_t>(pods)) {
    state.SkipWithError("pods missing");
    return;
  }
  for (auto _ : state) {
    WorkloadRegistry after = BuildWorkloadRegistry(*objects);
    benchmark::DoNotOptimize(ChangedWorkloads(before, after));
  }
  state.counters["pods"] = benchmark::Counter(pods);
  state.counters["per_pod_ns"] = benchmark::Counter(
      static_cast<double>(pods), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Who a proxy is (ParseProxyInfo): what the generators pay per proxy once a push that is not
// endpoint-only (and one that is, where a rule depends on the proxy; the push filter once more in
// meshes with Sidecars or exportTo), a typical sidecar's node with five labels, CLUSTER_ID,
// NODE_NAME and a locality, its Pod found among PODS of a registry (0: an empty one, not read).
// Against the node's labels read into a map alone (BM_ReadNodeLabels), the least any answer costs.
envoy::config::core::v3::Node SidecarNode() {
  envoy::config::core::v3::Node node;
  node.set_id("sidecar~127.0.0.10~pod-5.bench~bench.svc.cluster.local");
  auto& fields = *node.mutable_metadata()->mutable_fields();
  fields["NAMESPACE"].set_string_value("bench");
  fields["CLUSTER_ID"].set_string_value("Kubernetes");
  fields["NODE_NAME"].set_string_value("node-1");
  auto& labels = *fields["LABELS"].mutable_struct_value()->mutable_fields();
  for (const auto& [k, v] :
       std::vector<std::pair<std::string, std::string>>{{"app", "svc-5"},
                                                        {"version", "v2"},
                                                        {"pod-template-hash", "7d4b9c8f6"},
                                                        {"security.istio.io/tlsMode", "istio"},
                                                        {"service.istio.io/canonical-name", "svc-5"}}) {
    labels[k].set_string_value(v);
  }
  node.mutable_locality()->set_region("us-east");
  node.mutable_locality()->set_zone("us-east-1a");
  return node;
}

void BM_ParseProxyInfo(benchmark::State& state) {
  const int pods = static_cast<int>(state.range(0));
  ConfigStore store;
  const ConfigStore::Update update = store.ApplyFiles(PodFiles(pods));
  if (!update.errors.empty()) {
    state.SkipWithError(update.errors.front().ToString().c_str());
    return;
  }
  const WorkloadRegistry registry = BuildWorkloadRegistry(*store.Snapshot());
  const envoy::config::core::v3::Node node = SidecarNode();
  if (pods > 0 && ParseProxyInfo(node, &registry).workload.empty()) {
    state.SkipWithError("the registry did not find the Pod");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(ParseProxyInfo(node, &registry));
  state.counters["pods"] = benchmark::Counter(pods);
}

void BM_ReadNodeLabels(benchmark::State& state) {
  const envoy::config::core::v3::Node node = SidecarNode();
  for (auto _ : state) {
    LabelMap labels;
    const auto& fields = node.metadata().fields();
    if (auto it = fields.find("LABELS"); it != fields.end()) {
      for (const auto& [k, v] : it->second.struct_value().fields()) labels[k] = v.string_value();
    }
    benchmark::DoNotOptimize(labels);
  }
}

// Registered from main (not with BENCHMARK) so that the serialization rows, named after their
// message, come first and the mesh is generated once, before anything is timed.
void RegisterBenchmarks() {
  static const std::vector<Sample>* samples = new std::vector<Sample>(Samples());
  for (const Sample& sample : *samples) {
    benchmark::RegisterBenchmark(StrCat("BM_SerializeAsString/", sample.label).c_str(), BM_SerializeAsString, sample);
    benchmark::RegisterBenchmark(StrCat("BM_ResourceFromMessage/", sample.label).c_str(), BM_ResourceFromMessage,
                                 sample);
    benchmark::RegisterBenchmark(StrCat("BM_CopySerializedBytes/", sample.label).c_str(), BM_CopySerializedBytes,
                                 sample);
  }
  for (const Sample& sample : *samples) {
    benchmark::RegisterBenchmark(StrCat("BM_FanoutSharedBytes/", sample.label).c_str(), BM_FanoutSharedBytes, sample)
        ->ArgName("conns")
        ->Arg(1000)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(StrCat("BM_FanoutDeltaBytes/", sample.label).c_str(), BM_FanoutDeltaBytes, sample)
        ->ArgName("conns")
        ->Arg(1000)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(StrCat("BM_FanoutSerializePerConnection/", sample.label).c_str(),
                                 BM_FanoutSerializePerConnection, sample)
        ->ArgName("conns")
        ->Arg(1000)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("BM_LedgerRecordSent", BM_LedgerRecordSent)
      ->ArgNames({"resources", "held"})
      ->Args({10, 0})
      ->Args({10, 1})
      ->Args({100, 0})
      ->Args({100, 1})
      ->Args({1000, 0})
      ->Args({1000, 1});
  benchmark::RegisterBenchmark("BM_RebuildWorkloadRegistry", BM_RebuildWorkloadRegistry)
      ->ArgName("pods")
      ->Arg(1000)
      ->Arg(10000)
      ->Unit(benchmark::kMillisecond);
  for (int services : {1000, 10000}) {  // each beside its baseline, on the same heap
    benchmark::RegisterBenchmark("BM_EndpointSliceChange", BM_EndpointSliceChange)
        ->ArgName("services")
        ->Arg(services)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("BM_BuildEndpointIndex", BM_BuildEndpointIndex)
        ->ArgName("services")
        ->Arg(services)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("BM_AnalyzedSliceChange", BM_AnalyzedSliceChange)
        ->ArgNames({"services", "tracked"})
        ->Args({services, 1})
        ->Args({services, 0})
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("BM_ParseProxyInfo", BM_ParseProxyInfo)->ArgName("pods")->Arg(0)->Arg(10000);
  benchmark::RegisterBenchmark("BM_ReadNodeLabels", BM_ReadNodeLabels);
  benchmark::RegisterBenchmark("BM_FindByTypeUrl/TypeUrlMap", BM_FindByTypeUrl<TypeUrlMap<int>>);
  benchmark::RegisterBenchmark("BM_FindByTypeUrl/std_map_TypeUrlLess",
                               BM_FindByTypeUrl<std::map<std::string, int, TypeUrlLess>>);
  benchmark::RegisterBenchmark("BM_FindByTypeUrl/std_less", BM_FindByTypeUrl<std::map<std::string, int>>);
  benchmark::RegisterBenchmark("BM_FindByTypeUrlAcrossStreams/TypeUrlMap",
                               BM_FindByTypeUrlAcrossStreams<TypeUrlMap<int>>)
      ->ArgName("streams")
      ->Arg(5000)
      ->Arg(50000);
  benchmark::RegisterBenchmark("BM_FindByTypeUrlAcrossStreams/std_map_TypeUrlLess",
                               BM_FindByTypeUrlAcrossStreams<std::map<std::string, int, TypeUrlLess>>)
      ->ArgName("streams")
      ->Arg(5000)
      ->Arg(50000);
  benchmark::RegisterBenchmark("BM_SnapshotCreate", BM_SnapshotCreate)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_SetSnapshotOneKey", BM_SetSnapshotOneKey)
      ->ArgNames({"watches", "check"})
      ->Args({0, 1})
      ->Args({1, 1})
      ->Args({1000, 1})
      ->Args({10000, 1})
      ->Args({0, 0})
      ->Args({1, 0})
      ->Args({10000, 0})
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_SetSnapshotOneOfManyKeys", BM_SetSnapshotOneOfManyKeys)
      ->ArgNames({"nodes", "watches_per_node"})
      ->Args({1000, 0})
      ->Args({1000, 1})
      ->Args({10000, 0})
      ->Args({10000, 1})
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_SetSnapshotAllKeys", BM_SetSnapshotAllKeys)
      ->ArgNames({"nodes", "watches_per_node"})
      ->Args({1000, 0})
      ->Args({1000, 1})
      ->Args({10000, 0})
      ->Args({10000, 1})
      ->Unit(benchmark::kMillisecond);
  // Size by size, each beside its baseline, so that both are measured on the same heap.
  for (int services : {1000, 3000, 10000, 30000}) {
    benchmark::RegisterBenchmark("BM_BuildPushContext", BM_BuildPushContext)
        ->ArgName("services")
        ->Arg(services)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("BM_IndexServicesByHost", BM_IndexServicesByHost)
        ->ArgName("services")
        ->Arg(services)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace
}  // namespace cxds

int main(int argc, char** argv) {
  cxds::Log().set_level(spdlog::level::warn);  // the pipeline's push lines would fill the table
  grpc_init();                                 // grpc::ByteBuffer and its slices
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  cxds::RegisterBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  grpc_shutdown();
  return 0;
}
