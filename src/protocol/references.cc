#include "protocol/references.h"

#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"

namespace cxds {

namespace {
using envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;

void CollectFromHcmAny(const google::protobuf::Any& any, ResourceReferences* refs) {
  if (!any.Is<HttpConnectionManager>()) {
    return;
  }
  HttpConnectionManager hcm;
  if (!any.UnpackTo(&hcm)) {
    return;
  }
  if (hcm.has_rds() && !hcm.rds().route_config_name().empty()) {
    refs->route_configurations.insert(hcm.rds().route_config_name());
  }
  if (hcm.has_scoped_routes() && hcm.scoped_routes().has_scoped_route_configurations_list()) {
    for (const auto& scoped : hcm.scoped_routes().scoped_route_configurations_list().scoped_route_configurations()) {
      if (!scoped.route_configuration_name().empty()) {
        refs->route_configurations.insert(scoped.route_configuration_name());
      }
    }
  }
}

void CollectFromFilterChain(const envoy::config::listener::v3::FilterChain& chain, ResourceReferences* refs) {
  for (const auto& filter : chain.filters()) {
    if (filter.has_typed_config()) {
      CollectFromHcmAny(filter.typed_config(), refs);
    }
  }
}

void CollectFromRouteAction(const envoy::config::route::v3::RouteAction& action, ResourceReferences* refs) {
  if (!action.cluster().empty()) {
    refs->clusters.insert(action.cluster());
  }
  if (action.has_weighted_clusters()) {
    for (const auto& weighted : action.weighted_clusters().clusters()) {
      if (!weighted.name().empty()) {
        refs->clusters.insert(weighted.name());
      }
    }
  }
}
}  // namespace

std::string EdsServiceNameOf(const Resource& resource) {
  const auto* cluster = dynamic_cast<const envoy::config::cluster::v3::Cluster*>(&resource.message());
  if (cluster == nullptr || !cluster->has_type() || cluster->type() != envoy::config::cluster::v3::Cluster::EDS) {
    return "";
  }
  const std::string& service = cluster->eds_cluster_config().service_name();
  return service.empty() ? cluster->name() : service;
}

void CollectReferences(const Resource& resource, ResourceReferences* refs) {
  const google::protobuf::Message& message = resource.message();
  if (const auto* listener = dynamic_cast<const envoy::config::listener::v3::Listener*>(&message)) {
    for (const auto& chain : listener->filter_chains()) {
      CollectFromFilterChain(chain, refs);
    }
    if (listener->has_default_filter_chain()) {
      CollectFromFilterChain(listener->default_filter_chain(), refs);
    }
    if (listener->has_api_listener() && listener->api_listener().has_api_listener()) {
      CollectFromHcmAny(listener->api_listener().api_listener(), refs);
    }
    return;
  }
  if (dynamic_cast<const envoy::config::cluster::v3::Cluster*>(&message) != nullptr) {
    std::string eds = EdsServiceNameOf(resource);
    if (!eds.empty()) {
      refs->load_assignments.insert(std::move(eds));
    }
    return;
  }
  if (const auto* route = dynamic_cast<const envoy::config::route::v3::RouteConfiguration*>(&message)) {
    for (const auto& vhost : route->virtual_hosts()) {
      for (const auto& r : vhost.routes()) {
        if (r.has_route()) {
          CollectFromRouteAction(r.route(), refs);
        }
      }
    }
  }
}

}  // namespace cxds
