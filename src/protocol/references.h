// The names one resource refers to in other xDS types: a listener's RDS route configurations,
// an EDS cluster's ClusterLoadAssignment, a route configuration's clusters.
#pragma once

#include <set>
#include <string>

#include "protocol/resource.h"

namespace cxds {

struct ResourceReferences {
  std::set<std::string> route_configurations;  // from listeners (HCM with RDS)
  std::set<std::string> load_assignments;      // from EDS clusters
  std::set<std::string> clusters;              // from route configurations

  bool empty() const { return route_configurations.empty() && load_assignments.empty() && clusters.empty(); }
};

// Adds what `resource` refers to into `refs`. Listeners: every HTTP connection manager with RDS
// in filter_chains, default_filter_chain and api_listener. Clusters of type EDS: their
// eds_cluster_config.service_name, or the cluster name. Route configurations: the clusters of
// every route action (cluster and weighted_clusters). Other types refer to nothing.
void CollectReferences(const Resource& resource, ResourceReferences* refs);

// The ClusterLoadAssignment name an EDS cluster uses, or "" if `cluster` is not an EDS cluster.
std::string EdsServiceNameOf(const Resource& cluster);

}  // namespace cxds
