// The endpoints of each service host, as MeshModel serves them to EDS and analysis checks
// them: built from a store's objects whole, or for some hosts over an earlier index.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "config/config_store.h"
#include "model/workload_registry.h"

namespace cxds {

struct EndpointInfo {
  std::string address;
  uint32_t port = 0;
  LabelMap labels;
  uint32_t weight = 1;
  bool bare = false;  // no labels at all, not even AugmentLabels' (a DNS host resolved itself, as istiod's)
  // "region/zone/subzone" ("" unknown): a WorkloadEntry's or inline endpoint's `locality`, or
  // for an EndpointSlice endpoint its Pod's `istio-locality` label (dots for slashes).
  std::string locality;
  std::string node_name;  // its Pod's spec.nodeName
  // Whether a subset's `selector` selects it: over its labels as istiod's registries give them.
  bool SelectedBy(const LabelMap& selector, std::string_view cluster_id) const {
    return bare ? selector.empty() : AugmentedLabelsMatch(selector, labels, cluster_id, locality, node_name);
  }
};

// Endpoints per host and service port number.
using HostEndpoints = std::map<uint32_t, std::vector<EndpointInfo>>;
using EndpointIndex = std::map<std::string, std::shared_ptr<const HostEndpoints>>;

// What cxds resolved the names of DNS ServiceEntries to, for proxyless gRPC nodes (Envoy
// resolves them itself): name -> IP addresses (controller/dns_refresher.h).
using ResolvedNames = std::map<std::string, std::vector<std::string>>;

// The endpoints `objects` give each host (what MeshModel serves and analysis checks): a
// Service's from the ready endpoints of its EndpointSlices (labels, locality and node from the
// Pod each stands for: its targetRef, else the one Pod with its address) and the WorkloadEntries
// of its namespace its selector selects; a STATIC ServiceEntry's inline endpoints and the
// WorkloadEntries its workloadSelector selects. DNS ServiceEntries have endpoints only through
// `resolved` (null: none): each address a name resolved to, with that endpoint's port, labels
// and weight. Selectors select WorkloadEntries by their labels augmented with `cluster_id` and
// their locality (AugmentLabels), as istiod's.
EndpointIndex BuildEndpointIndex(const ObjectMap& objects, const std::string& domain_suffix,
                                 const ResolvedNames* resolved = nullptr,
                                 const std::string& cluster_id = kDefaultClusterId);
// `previous` (an index of an earlier state) with the entries of `hosts` built anew from
// `objects`: BuildEndpointIndex's result when nothing else changed between the two. The other
// hosts keep their entries, the same pointers.
EndpointIndex RebuildEndpointHosts(const EndpointIndex& previous, const ObjectMap& objects,
                                   const std::string& domain_suffix, const ResolvedNames* resolved,
                                   const std::string& cluster_id, const std::set<std::string>& hosts);

// Adds to `hosts` those whose endpoints WorkloadEntry `we` is among when it is in `objects`: the
// Services (by selector) and STATIC ServiceEntries (by workloadSelector) of its namespace that
// select it.
void AddHostsSelecting(const ObjectMap& objects, const WorkloadEntry& we, const std::string& domain_suffix,
                       const std::string& cluster_id, std::set<std::string>& hosts);

// BuildEndpointIndex (without resolved names) over successive states of a store, for a caller
// that is given each whole state (analysis): what changed since the last state is found by
// comparing the maps' objects, which a store shares while they are unchanged; when that is
// EndpointSlices and WorkloadEntries alone, only the hosts they give endpoints to are rebuilt.
// Thread-safe.
class EndpointIndexTracker {
 public:
  EndpointIndexTracker(std::string domain_suffix, std::string cluster_id)
      : domain_suffix_(std::move(domain_suffix)), cluster_id_(std::move(cluster_id)) {}
  std::shared_ptr<const EndpointIndex> Update(const ObjectMap& objects) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string domain_suffix_;
  const std::string cluster_id_;
  Mutex mu_;
  // The last state's objects, held so none is freed (and its address reused) while compared.
  ObjectMap previous_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const EndpointIndex> index_ ABSL_GUARDED_BY(mu_);  // null until the first Update
};

// The names of the DNS ServiceEntries in `objects`: their endpoint addresses, or their hosts
// when they have none. Sorted, unique.
std::vector<std::string> NamesToResolve(const ObjectMap& objects);

}  // namespace cxds
