// The workloads a proxy may be, as istiod's registries know them (GetProxyWorkloadLabels): who
// a proxy is, when the registry has it, is its workload's labels and locality rather than what
// its node says. Built from the config store's objects with the endpoint index (MeshModel).
#pragma once

#include <map>
#include <set>
#include <string>
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

// What the registry says a proxy's own workload is (istiod's GetProxyWorkloadLabels): its
// labels, with its locality added as topology labels (`topology.kubernetes.io/region`,
// `topology.kubernetes.io/zone`, `topology.istio.io/subzone`), as istiod's AugmentLabels adds it.
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
  bool operator==(const WorkloadRegistry&) const = default;
};
WorkloadRegistry BuildWorkloadRegistry(const ObjectMap& objects);
// The Workload configs (kind::kWorkload) for what differs from `before` to `after`: a Pod
// {namespace, name}, an address {"", address}.
std::set<ConfigKey> ChangedWorkloads(const WorkloadRegistry& before, const WorkloadRegistry& after);

}  // namespace cxds
