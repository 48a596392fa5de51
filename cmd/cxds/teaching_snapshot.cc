#include "cxds/teaching_snapshot.h"

#include <charconv>

#include "common/strings.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"

namespace cxds::teaching {

namespace {
using envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;

HttpConnectionManager RdsConnectionManager() {
  HttpConnectionManager hcm;
  hcm.set_stat_prefix("quote");
  auto* rds = hcm.mutable_rds();
  rds->set_route_config_name(kRouteName);
  rds->mutable_config_source()->mutable_ads();
  rds->mutable_config_source()->set_resource_api_version(envoy::config::core::v3::V3);
  auto* router = hcm.add_http_filters();
  router->set_name("envoy.filters.http.router");
  router->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::router::v3::Router());
  return hcm;
}

envoy::config::listener::v3::Listener EnvoyListener() {
  envoy::config::listener::v3::Listener listener;
  listener.set_name(kEnvoyListenerName);
  auto* address = listener.mutable_address()->mutable_socket_address();
  address->set_address(kEnvoyListenerAddress);
  address->set_port_value(kEnvoyListenerPort);
  auto* filter = listener.add_filter_chains()->add_filters();
  filter->set_name("envoy.filters.network.http_connection_manager");
  filter->mutable_typed_config()->PackFrom(RdsConnectionManager());
  return listener;
}

envoy::config::listener::v3::Listener ApiListener() {
  envoy::config::listener::v3::Listener listener;
  listener.set_name(kApiListenerName);
  listener.mutable_api_listener()->mutable_api_listener()->PackFrom(RdsConnectionManager());
  return listener;
}

envoy::config::route::v3::RouteConfiguration Routes(bool valid) {
  envoy::config::route::v3::RouteConfiguration config;
  config.set_name(kRouteName);
  auto* vhost = config.add_virtual_hosts();
  vhost->set_name("quote");
  vhost->add_domains("*");
  auto* exact = vhost->add_routes();
  if (valid) {
    exact->mutable_match()->set_path("/quote");
  } else {
    exact->mutable_match()->mutable_case_sensitive()->set_value(true);  // no path specifier
  }
  exact->mutable_route()->set_cluster(kClusterName);
  auto* rest = vhost->add_routes();
  rest->mutable_match()->set_prefix("/");  // gRPC methods, e.g. /cxds.teaching.Inventory/GetQuote
  rest->mutable_route()->set_cluster(kClusterName);
  return config;
}

envoy::config::cluster::v3::Cluster Cluster() {
  envoy::config::cluster::v3::Cluster cluster;
  cluster.set_name(kClusterName);
  cluster.set_type(envoy::config::cluster::v3::Cluster::EDS);
  cluster.mutable_eds_cluster_config()->mutable_eds_config()->mutable_ads();
  cluster.mutable_eds_cluster_config()->mutable_eds_config()->set_resource_api_version(envoy::config::core::v3::V3);
  cluster.mutable_connect_timeout()->set_seconds(1);
  cluster.set_lb_policy(envoy::config::cluster::v3::Cluster::ROUND_ROBIN);
  return cluster;
}

envoy::config::endpoint::v3::ClusterLoadAssignment Endpoints(uint32_t port) {
  envoy::config::endpoint::v3::ClusterLoadAssignment cla;
  cla.set_cluster_name(kClusterName);
  auto* locality = cla.add_endpoints();
  // Proxyless gRPC requires a locality and ignores localities without a weight.
  locality->mutable_locality()->set_region("local");
  locality->mutable_load_balancing_weight()->set_value(1);
  auto* socket = locality->add_lb_endpoints()->mutable_endpoint()->mutable_address()->mutable_socket_address();
  socket->set_address("127.0.0.1");
  socket->set_port_value(port);
  return cla;
}
}  // namespace

absl::StatusOr<uint32_t> ParsePort(const std::string& text) {
  uint32_t port = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, port);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return absl::InvalidArgumentError(StrCat("port \"", text, "\" is not a number"));
  }
  if (port < 1 || port > 65535) {
    return absl::InvalidArgumentError(StrCat("port ", text, " is out of range 1-65535"));
  }
  return port;
}

absl::StatusOr<SnapshotPtr> BuildTeachingSnapshot(const TeachingConfig& config) {
  if (config.inventory_port < 1 || config.inventory_port > 65535) {
    return absl::InvalidArgumentError(StrCat("inventory port ", config.inventory_port, " is out of range 1-65535"));
  }
  std::vector<ResourcePtr> resources;
  for (auto made : {Resource::FromMessage(EnvoyListener()), Resource::FromMessage(ApiListener()),
                    Resource::FromMessage(Routes(config.valid_route)), Resource::FromMessage(Cluster()),
                    Resource::FromMessage(Endpoints(config.inventory_port))}) {
    if (!made.ok()) return made.status();
    resources.push_back(*std::move(made));
  }
  return Snapshot::Create(config.version, std::move(resources));
}

}  // namespace cxds::teaching
