// Small builders of realistic xDS resources for tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/snapshot.h"
#include "common/strings.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb.h"
#include "gtest/gtest.h"

namespace cxds::testing {

inline ResourcePtr MustResource(const google::protobuf::Message& message) {
  auto resource = Resource::FromMessage(message);
  EXPECT_TRUE(resource.ok()) << resource.status();
  return resource.ok() ? *resource : nullptr;
}

// An EDS cluster over ADS. `service_name` "" means the CLA is named after the cluster.
inline ResourcePtr EdsCluster(const std::string& name, const std::string& service_name = "",
                              int connect_timeout_s = 1) {
  envoy::config::cluster::v3::Cluster cluster;
  cluster.set_name(name);
  cluster.set_type(envoy::config::cluster::v3::Cluster::EDS);
  cluster.mutable_eds_cluster_config()->mutable_eds_config()->mutable_ads();
  if (!service_name.empty()) cluster.mutable_eds_cluster_config()->set_service_name(service_name);
  cluster.mutable_connect_timeout()->set_seconds(connect_timeout_s);
  return MustResource(cluster);
}

inline ResourcePtr StaticCluster(const std::string& name) {
  envoy::config::cluster::v3::Cluster cluster;
  cluster.set_name(name);
  cluster.set_type(envoy::config::cluster::v3::Cluster::STATIC);
  return MustResource(cluster);
}

inline ResourcePtr Endpoints(const std::string& cluster_name, std::vector<uint32_t> ports) {
  envoy::config::endpoint::v3::ClusterLoadAssignment cla;
  cla.set_cluster_name(cluster_name);
  auto* locality = cla.add_endpoints();
  locality->mutable_locality()->set_region("local");
  locality->mutable_load_balancing_weight()->set_value(1);
  for (uint32_t port : ports) {
    auto* socket = locality->add_lb_endpoints()->mutable_endpoint()->mutable_address()->mutable_socket_address();
    socket->set_address("127.0.0.1");
    socket->set_port_value(port);
  }
  return MustResource(cla);
}

inline envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager RdsHcm(
    const std::string& route_name) {
  envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
  hcm.set_stat_prefix("test");
  hcm.mutable_rds()->set_route_config_name(route_name);
  hcm.mutable_rds()->mutable_config_source()->mutable_ads();
  auto* router = hcm.add_http_filters();
  router->set_name("envoy.filters.http.router");
  router->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::router::v3::Router());
  return hcm;
}

// A listener on 127.0.0.1:port whose HTTP connection manager uses RDS `route_name`.
inline ResourcePtr HttpListener(const std::string& name, const std::string& route_name, uint32_t port = 10000) {
  envoy::config::listener::v3::Listener listener;
  listener.set_name(name);
  listener.mutable_address()->mutable_socket_address()->set_address("127.0.0.1");
  listener.mutable_address()->mutable_socket_address()->set_port_value(port);
  auto* filter = listener.add_filter_chains()->add_filters();
  filter->set_name("envoy.filters.network.http_connection_manager");
  filter->mutable_typed_config()->PackFrom(RdsHcm(route_name));
  return MustResource(listener);
}

// A proxyless gRPC API listener using RDS `route_name`.
inline ResourcePtr ApiListener(const std::string& name, const std::string& route_name) {
  envoy::config::listener::v3::Listener listener;
  listener.set_name(name);
  listener.mutable_api_listener()->mutable_api_listener()->PackFrom(RdsHcm(route_name));
  return MustResource(listener);
}

// A route configuration with one catch-all route per cluster (weighted when several).
inline ResourcePtr Routes(const std::string& name, std::vector<std::string> clusters) {
  envoy::config::route::v3::RouteConfiguration config;
  config.set_name(name);
  auto* vhost = config.add_virtual_hosts();
  vhost->set_name("all");
  vhost->add_domains("*");
  auto* route = vhost->add_routes();
  route->mutable_match()->set_prefix("/");
  if (clusters.size() == 1) {
    route->mutable_route()->set_cluster(clusters[0]);
  } else {
    for (const std::string& cluster : clusters) {
      auto* weighted = route->mutable_route()->mutable_weighted_clusters()->add_clusters();
      weighted->set_name(cluster);
      weighted->mutable_weight()->set_value(1);
    }
  }
  return MustResource(config);
}

inline ResourcePtr Secret(const std::string& name) {
  envoy::extensions::transport_sockets::tls::v3::Secret secret;
  secret.set_name(name);
  secret.mutable_validation_context()->mutable_trusted_ca()->set_inline_string("test-ca");
  return MustResource(secret);
}

inline SnapshotPtr MustSnapshot(const std::string& version, std::vector<ResourcePtr> resources) {
  auto snapshot = Snapshot::Create(version, std::move(resources));
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  return snapshot.ok() ? *snapshot : nullptr;
}

}  // namespace cxds::testing
