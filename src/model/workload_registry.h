// The workloads a proxy may be, as istiod's registries know them (GetProxyWorkloadLabels): who
// a proxy is, when the registry has it, is its workload's labels and locality rather than what
// its node says. Built from the config store's objects with the endpoint index (MeshModel).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config_store.h"
#include "config/mesh_config.h"
#include "config/object_meta.h"
#include "push/push_request.h"

namespace cxds {

// Every label of `selector` is in `labels` with the same value (an empty selector selects all).
bool LabelsMatch(const LabelMap& selector, const LabelMap& labels);

// Localities ("region/zone/subzone", "" for none): from labels as istiod's GetLocalityLabel reads
// them; a WorkloadEntry's or inline endpoint's `locality`, else its labels'.
std::string LabelLocality(const LabelMap& labels);
std::string WorkloadLocality(const WorkloadEndpoint& w);

// istiod's default cluster ID (its CLUSTER_ID), what the workloads of cxds's config are in.
inline constexpr char kDefaultClusterId[] = "Kubernetes";

// The labels istiod's registries give a workload and a proxy (its AugmentLabels): `labels` with
// the parts of `locality` ("region/zone/subzone") as `topology.kubernetes.io/region`,
// `topology.kubernetes.io/zone` and `topology.istio.io/subzone`, `cluster_id` as
// `topology.istio.io/cluster` and `node_name` as `kubernetes.io/hostname`, each over a label of
// that name when not empty; `network` as `topology.istio.io/network` only where no such label is.
LabelMap AugmentLabels(LabelMap labels, const std::string& cluster_id, const std::string& locality,
                       const std::string& node_name, const std::string& network);
// LabelsMatch(selector, AugmentLabels(labels, cluster_id, locality, node_name, "")) without
// building the map: how subsets select endpoints, each of which would otherwise need a copy.
bool AugmentedLabelsMatch(const LabelMap& selector, const LabelMap& labels, std::string_view cluster_id,
                          std::string_view locality, std::string_view node_name);
// AugmentLabels(labels, cluster_id, locality, node_name, "")[key] without building the map, ""
// when there is no such label (how istiod's failoverPriority reads an endpoint's labels).
std::string_view AugmentedLabelValue(const LabelMap& labels, const std::string& key, std::string_view cluster_id,
                                     std::string_view locality, std::string_view node_name);
// Whether AugmentLabels may set `key` (a locality part, the cluster or the node).
bool IsAugmentedKey(std::string_view key);
// Whether a ServiceEntry's workloadSelector or a Service's selector selects a WorkloadEntry (or
// inline endpoint) `w`: over its labels augmented with the cluster and its locality, as istiod's.
bool SelectsWorkload(const LabelMap& selector, const WorkloadEndpoint& w, std::string_view cluster_id);

// What the registry says a proxy's own workload is (istiod's GetProxyWorkloadLabels): its
// labels, augmented (AugmentLabels) with its locality and the registry's cluster ID (the node
// name and network are the proxy's own, from its node metadata: ParseProxyInfo).
struct WorkloadIdentity {
  std::string namespace_name;
  LabelMap labels;
  std::string source;  // what it came from: "Pod ns/name", "WorkloadEntry ns/name", "ServiceEntry ns/name"
  bool operator==(const WorkloadIdentity&) const = default;
};

// The workloads a proxy may be, as istiod looks them up: a Pod by namespace and name (from an
// Istio node id's NAME.NAMESPACE; istiod's lookup by IP is off by default), and ServiceEntry
// endpoints, inline or the WorkloadEntries a ServiceEntry selects, by address (in object key
// order). Immutable once built; bounded by the config it is built from.
struct WorkloadRegistry {
  std::map<std::pair<std::string, std::string>, WorkloadIdentity> pods;  // (namespace, name)
  std::map<std::string, std::vector<WorkloadIdentity>> by_address;       // address
  // The cluster its workloads are in: a proxy whose node metadata CLUSTER_ID names another is
  // not looked up here, as istiod searches only the registries of the proxy's cluster.
  std::string cluster_id;
  bool operator==(const WorkloadRegistry&) const = default;
};
WorkloadRegistry BuildWorkloadRegistry(const ObjectMap& objects, const std::string& cluster_id = kDefaultClusterId);
// The Workload configs (kind::kWorkload) for what differs from `before` to `after`: a Pod
// {namespace, name}, an address {"", address}.
std::set<ConfigKey> ChangedWorkloads(const WorkloadRegistry& before, const WorkloadRegistry& after);

}  // namespace cxds
