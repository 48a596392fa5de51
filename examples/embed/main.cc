// A control plane in a dozen lines of cxds: a snapshot cache holding one service for proxyless
// gRPC clients, served over ADS (State of the World and Delta) by cxds's XdsServer, with what
// each client ACKed or NACKed reported as it happens.
//
//   embedded-control-plane --xds-port 18000 --backend 127.0.0.1:50051 [--max-seconds 60]
//
// A gRPC client with a bootstrap naming 127.0.0.1:18000 then calls
// xds:///hello.embed.local:8080 and reaches the backend. Loopback only; it stops by itself.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "cache/snapshot.h"
#include "cache/snapshot_cache.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "server/callbacks.h"
#include "server/xds_server.h"

namespace {

constexpr char kService[] = "hello.embed.local:8080";
constexpr char kRoute[] = "hello-route";
constexpr char kCluster[] = "hello-cluster";

// The four resources a gRPC client needs for xds:///hello.embed.local:8080.
std::vector<cxds::ResourcePtr> Resources(const std::string& backend_host, int backend_port) {
  using envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
  HttpConnectionManager manager;
  manager.mutable_rds()->set_route_config_name(kRoute);
  manager.mutable_rds()->mutable_config_source()->mutable_ads();
  auto* router = manager.add_http_filters();
  router->set_name("envoy.filters.http.router");
  router->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::router::v3::Router());
  envoy::config::listener::v3::Listener listener;
  listener.set_name(kService);
  listener.mutable_api_listener()->mutable_api_listener()->PackFrom(manager);

  envoy::config::route::v3::RouteConfiguration routes;
  routes.set_name(kRoute);
  auto* host = routes.add_virtual_hosts();
  host->set_name("hello");
  host->add_domains(kService);
  auto* route = host->add_routes();
  route->mutable_match()->set_prefix("");
  route->mutable_route()->set_cluster(kCluster);

  envoy::config::cluster::v3::Cluster cluster;
  cluster.set_name(kCluster);
  cluster.set_type(envoy::config::cluster::v3::Cluster::EDS);
  cluster.mutable_eds_cluster_config()->mutable_eds_config()->mutable_ads();

  envoy::config::endpoint::v3::ClusterLoadAssignment endpoints;
  endpoints.set_cluster_name(kCluster);
  auto* locality = endpoints.add_endpoints();
  // gRPC refuses endpoints without a locality, and skips a locality without a weight.
  locality->mutable_locality()->set_region("local");
  locality->mutable_load_balancing_weight()->set_value(1);
  auto* address = locality->add_lb_endpoints()->mutable_endpoint()->mutable_address();
  address->mutable_socket_address()->set_address(backend_host);
  address->mutable_socket_address()->set_port_value(backend_port);

  std::vector<cxds::ResourcePtr> resources;
  for (const google::protobuf::Message* message :
       std::initializer_list<const google::protobuf::Message*>{&listener, &routes, &cluster, &endpoints}) {
    absl::StatusOr<cxds::ResourcePtr> resource = cxds::Resource::FromMessage(*message);
    if (!resource.ok()) {
      std::cerr << "resource: " << resource.status() << "\n";
      std::exit(1);
    }
    resources.push_back(*resource);
  }
  return resources;
}

// One snapshot for every node: all nodes map to one key (a node group).
class OneKey : public cxds::NodeHash {
 public:
  std::string Key(const envoy::config::core::v3::Node&) const override { return "all"; }
};

// Sent is not accepted: print each ACK and NACK as the ledger sees it.
class PrintAnswers : public cxds::ServerCallbacks {
 public:
  void OnFeedback(const cxds::FeedbackEvent& event) override {
    std::cout << cxds::FeedbackKindName(event.kind) << " node=" << event.node_id << " type=" << event.type_url
              << " version=" << event.sent_version << (event.error.empty() ? "" : " error=" + event.error) << std::endl;
  }
};

}  // namespace

int main(int argc, char** argv) {
  int xds_port = 18000;
  std::string backend = "127.0.0.1:50051";
  int max_seconds = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--xds-port") xds_port = std::atoi(argv[i + 1]);
    if (flag == "--backend") backend = argv[i + 1];
    if (flag == "--max-seconds") max_seconds = std::min(std::atoi(argv[i + 1]), 600);
  }
  const size_t colon = backend.rfind(':');
  if (colon == std::string::npos) {
    std::cerr << "--backend must be HOST:PORT\n";
    return 2;
  }

  cxds::SnapshotCache::Options cache_options;
  cache_options.node_hash = std::make_shared<OneKey>();
  cxds::SnapshotCache cache(cache_options);
  absl::StatusOr<cxds::SnapshotPtr> snapshot =
      cxds::Snapshot::Create("v1", Resources(backend.substr(0, colon), std::atoi(backend.c_str() + colon + 1)));
  absl::Status set = snapshot.ok() ? cache.SetSnapshot("all", *snapshot) : snapshot.status();
  if (!set.ok()) {
    std::cerr << "snapshot: " << set << "\n";
    return 1;
  }

  PrintAnswers answers;
  cxds::XdsServer::Options options;
  options.callbacks = &answers;
  cxds::XdsServer xds(cache, options);
  absl::StatusOr<std::unique_ptr<grpc::Server>> server = xds.Start("127.0.0.1:" + std::to_string(xds_port));
  if (!server.ok()) {
    std::cerr << "serve: " << server.status() << "\n";
    return 1;
  }
  std::cout << "SERVING xds=127.0.0.1:" << xds_port << " service=" << kService << " backend=" << backend << std::endl;
  std::this_thread::sleep_for(std::chrono::seconds(max_seconds));
  (*server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
}
