#include "model/endpoint_index.h"

#include <optional>
#include <tuple>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "model/mesh_kinds.h"
#include "model/object_ranges.h"
#include "model/service_host.h"

namespace cxds {

using absl::StrCat;

namespace {

// A Pod's locality: its labels' (cxds reads no Node objects, whose topology labels istiod uses).
std::string PodLocality(const K8sPod* pod) { return pod == nullptr ? "" : LabelLocality(pod->meta.labels); }

uint32_t WorkloadPort(const WorkloadEndpoint& w, const ServicePort& port) {
  if (auto it = w.ports.find(port.name); it != w.ports.end()) return it->second;
  return port.target_port != 0 ? port.target_port : port.number;
}

// Pods by namespace/name, and by namespace and IP where one Pod alone has that IP.
struct PodIndex {
  std::map<std::pair<std::string, std::string>, const K8sPod*> by_name;
  std::map<std::pair<std::string, std::string>, const K8sPod*> by_ip;  // null: more than one

  explicit PodIndex(const ObjectMap& objects) {
    for (const auto& [key, stored] : ObjectsOfKind(objects, kind::kPod)) {
      const auto* pod = std::get_if<K8sPod>(&stored->object);
      if (pod == nullptr) continue;
      by_name[{pod->meta.namespace_name, pod->meta.name}] = pod;
      for (const std::string& ip : pod->ips) {
        auto [it, inserted] = by_ip.try_emplace({pod->meta.namespace_name, ip}, pod);
        if (!inserted) it->second = nullptr;
      }
    }
  }

  // The Pod an EndpointSlice endpoint stands for: its targetRef, else its address's only Pod.
  const K8sPod* For(const EndpointSlice& slice, const EndpointSlice::Endpoint& endpoint,
                    const std::string& address) const {
    if (!endpoint.pod_name.empty()) {
      auto it = by_name.find({endpoint.pod_namespace, endpoint.pod_name});
      return it == by_name.end() ? nullptr : it->second;
    }
    auto it = by_ip.find({slice.meta.namespace_name, address});
    return it == by_ip.end() ? nullptr : it->second;
  }
};

}  // namespace

std::vector<std::string> NamesToResolve(const ObjectMap& objects) {
  std::set<std::string> names;
  for (const auto& [key, stored] : objects) {
    const auto* se = std::get_if<ServiceEntry>(&stored->object);
    // (An entry without ports serves nothing: its names are not looked up.)
    if (se == nullptr || se->resolution == ServiceEntry::Resolution::kStatic || se->ports.empty()) continue;
    if (se->endpoints.empty()) names.insert(se->hosts.begin(), se->hosts.end());
    for (const WorkloadEndpoint& endpoint : se->endpoints) names.insert(endpoint.address);
  }
  return {names.begin(), names.end()};
}

namespace {

// BuildEndpointIndex for the hosts in `only` (null: every host). Visits each kind's range of the
// map alone, in the key order of the full walk, so a host's endpoints come out in the same order
// whatever `only` is.
EndpointIndex BuildEndpointIndexOf(const ObjectMap& objects, const std::string& domain_suffix,
                                   const ResolvedNames* resolved, const std::string& cluster_id,
                                   const std::set<std::string>* only) {
  const auto wanted = [&](const std::string& host) { return only == nullptr || only->contains(host); };
  // The Services (name, namespace) whose hosts are wanted, so that Services and slices of the
  // others are passed over without building their hosts.
  std::set<std::pair<std::string_view, std::string_view>> wanted_services;
  if (only != nullptr) {
    for (const std::string& host : *only) {
      if (auto service = ServiceNameOfHost(host, domain_suffix)) wanted_services.insert(*service);
    }
  }
  const auto wanted_service = [&](const std::string& name, const std::string& namespace_name) {
    return only == nullptr || wanted_services.contains({name, namespace_name});
  };
  std::map<std::string, HostEndpoints> index;
  std::map<std::string, const K8sService*> services;  // host -> Service
  // WorkloadEntries by namespace, and by namespace and label: a selector's first label that is
  // not a topology label (AugmentLabels may give those) narrows the candidates, so thousands of
  // selectors over thousands of entries are not a product unless they name topology labels alone.
  std::map<std::string, std::vector<const WorkloadEntry*>> workloads;
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<const WorkloadEntry*>> workloads_by_label;
  for (const auto& [key, stored] : ObjectsOfKind(objects, kind::kService)) {
    // (An ExternalName Service has no endpoints, whatever it selects, as in Kubernetes.)
    if (const auto* svc = std::get_if<K8sService>(&stored->object);
        svc != nullptr && svc->external_name.empty() && wanted_service(svc->meta.name, svc->meta.namespace_name)) {
      services[StrCat(svc->meta.name, ".", svc->meta.namespace_name, ".svc.", domain_suffix)] = svc;
    }
  }
  for (const auto& [key, stored] : ObjectsOfKind(objects, kind::kWorkloadEntry)) {
    if (const auto* we = std::get_if<WorkloadEntry>(&stored->object)) {
      workloads[we->meta.namespace_name].push_back(we);
      for (const auto& [k, v] : we->spec.labels) workloads_by_label[{we->meta.namespace_name, k, v}].push_back(we);
    }
  }
  static const std::vector<const WorkloadEntry*> kNone;
  const auto candidates = [&](const std::string& ns,
                              const LabelMap& selector) -> const std::vector<const WorkloadEntry*>& {
    // Any label but those AugmentLabels may give must be among an entry's own, as indexed.
    for (const auto& [k, v] : selector) {
      if (IsAugmentedKey(k)) continue;
      auto it = workloads_by_label.find({ns, k, v});
      return it == workloads_by_label.end() ? kNone : it->second;
    }
    auto it = workloads.find(ns);
    return it == workloads.end() ? kNone : it->second;
  };
  std::optional<PodIndex> pods;  // built when a slice first needs it
  // `members`, and the WorkloadEntries of `ns` that `selector` (if any) selects, on `ports`.
  const auto add_workloads = [&](const std::string& host, const std::string& ns, const LabelMap* selector,
                                 const std::vector<ServicePort>& ports, std::vector<const WorkloadEndpoint*> members) {
    if (selector != nullptr) {
      for (const WorkloadEntry* we : candidates(ns, *selector)) {
        if (SelectsWorkload(*selector, we->spec, cluster_id)) members.push_back(&we->spec);
      }
    }
    for (const ServicePort& port : ports) {
      if (members.empty()) break;
      auto& list = index[host][port.number];
      for (const WorkloadEndpoint* w : members) {
        list.push_back(EndpointInfo{w->address, WorkloadPort(*w, port), w->labels, w->weight == 0 ? 1 : w->weight,
                                    /*bare=*/false, WorkloadLocality(*w)});
      }
    }
  };
  // `mirrored`: a slice Kubernetes mirrors from v1 Endpoints, only for a Service without a selector.
  const auto add_slice = [&](const EndpointSlice* slice, bool mirrored) {
    if (!wanted_service(slice->service_name, slice->meta.namespace_name)) return;
    const std::string host = StrCat(slice->service_name, ".", slice->meta.namespace_name, ".svc.", domain_suffix);
    auto svc = services.find(host);
    if (svc == services.end()) return;  // a slice without its Service serves nothing (or not wanted)
    if (mirrored && !svc->second->selector.empty()) return;
    for (const EndpointSlice::Port& port : slice->ports) {
      // The Service port this slice port backs: same name, or the only one.
      const ServicePort* service_port = nullptr;
      for (const ServicePort& p : svc->second->ports) {
        if (p.name == port.name || svc->second->ports.size() == 1) service_port = &p;
      }
      if (service_port == nullptr) continue;
      for (const EndpointSlice::Endpoint& endpoint : slice->endpoints) {
        if (!endpoint.ready) continue;
        for (const std::string& address : endpoint.addresses) {
          if (!pods.has_value()) pods.emplace(objects);
          const K8sPod* pod = pods->For(*slice, endpoint, address);
          index[host][service_port->number].push_back(
              EndpointInfo{address, port.port, pod != nullptr ? pod->meta.labels : LabelMap{}, 1, /*bare=*/false,
                           PodLocality(pod), pod != nullptr ? pod->node_name : ""});
        }
      }
    }
  };
  // Services whose slices mirrored from their Endpoints are among the slices (a cluster's slices
  // and Endpoints both written out): the Endpoints are not mirrored again.
  std::set<std::pair<std::string, std::string>> mirror_present;  // namespace, service
  for (const auto& [key, stored] : ObjectsOfKind(objects, kind::kEndpointSlice)) {
    if (const auto* slice = std::get_if<EndpointSlice>(&stored->object)) {
      add_slice(slice, /*mirrored=*/false);
      if (auto by = slice->meta.labels.find("endpointslice.kubernetes.io/managed-by");
          by != slice->meta.labels.end() && by->second == "endpointslicemirroring-controller.k8s.io") {
        mirror_present.insert({slice->meta.namespace_name, slice->service_name});
      }
    }
  }
  for (const auto& [key, stored] : ObjectsOfKind(objects, kind::kV1Endpoints)) {
    const auto* endpoints = std::get_if<K8sEndpoints>(&stored->object);
    if (endpoints == nullptr || endpoints->skip_mirror ||
        mirror_present.contains({endpoints->meta.namespace_name, endpoints->meta.name})) {
      continue;
    }
    for (const EndpointSlice& slice : endpoints->mirrored) add_slice(&slice, /*mirrored=*/true);
  }
  for (const auto& [key, stored] : ObjectsOfKind(objects, kind::kServiceEntry)) {
    if (const auto* se = std::get_if<ServiceEntry>(&stored->object);
        se != nullptr && se->resolution != ServiceEntry::Resolution::kStatic) {
      // Envoy resolves these itself (ServiceInfo::dns_endpoints); for gRPC nodes, what cxds
      // resolved the names to.
      if (resolved == nullptr) continue;
      for (const std::string& host : se->hosts) {
        if (!wanted(host)) continue;
        for (const ServicePort& port : se->ports) {
          const auto add = [&](const std::string& name, uint32_t port_number, const LabelMap& labels, uint32_t weight,
                               bool bare, const std::string& locality) {
            auto it = resolved->find(name);
            if (it == resolved->end()) return;
            for (const std::string& address : it->second) {
              index[host][port.number].push_back(
                  EndpointInfo{address, port_number, labels, weight > 0 ? weight : 1, bare, locality});
            }
          };
          // The host itself has no labels at all in istiod, so no subset selects it.
          if (se->endpoints.empty()) {
            add(host, port.target_port != 0 ? port.target_port : port.number, {}, 0, /*bare=*/true, "");
          }
          for (const WorkloadEndpoint& endpoint : se->endpoints) {
            add(endpoint.address, WorkloadPort(endpoint, port), endpoint.labels, endpoint.weight, /*bare=*/false,
                WorkloadLocality(endpoint));
          }
        }
      }
    } else if (const auto* se = std::get_if<ServiceEntry>(&stored->object)) {
      std::vector<const WorkloadEndpoint*> inline_endpoints;
      for (const WorkloadEndpoint& w : se->endpoints) inline_endpoints.push_back(&w);
      for (const std::string& host : se->hosts) {
        if (!wanted(host)) continue;
        add_workloads(host, se->meta.namespace_name,
                      se->workload_selector.has_value() ? &*se->workload_selector : nullptr, se->ports,
                      inline_endpoints);
      }
    }
  }
  // A Service's selector also selects the WorkloadEntries of its namespace (Istio's VM pattern).
  for (const auto& [host, svc] : services) {
    if (!svc->selector.empty()) add_workloads(host, svc->meta.namespace_name, &svc->selector, svc->ports, {});
  }
  EndpointIndex built;
  for (auto& [host, endpoints] : index) built[host] = std::make_shared<const HostEndpoints>(std::move(endpoints));
  return built;
}

}  // namespace

EndpointIndex BuildEndpointIndex(const ObjectMap& objects, const std::string& domain_suffix,
                                 const ResolvedNames* resolved, const std::string& cluster_id) {
  return BuildEndpointIndexOf(objects, domain_suffix, resolved, cluster_id, nullptr);
}

void AddHostsSelecting(const ObjectMap& objects, const WorkloadEntry& we, const std::string& domain_suffix,
                       const std::string& cluster_id, std::set<std::string>& hosts) {
  const std::string& ns = we.meta.namespace_name;
  for (const auto& [key, stored] : ObjectsOfKindIn(objects, kind::kService, ns)) {
    const auto* svc = std::get_if<K8sService>(&stored->object);
    if (svc == nullptr || svc->selector.empty() || !svc->external_name.empty() ||
        !SelectsWorkload(svc->selector, we.spec, cluster_id)) {
      continue;
    }
    hosts.insert(StrCat(svc->meta.name, ".", ns, ".svc.", domain_suffix));
  }
  for (const auto& [key, stored] : ObjectsOfKindIn(objects, kind::kServiceEntry, ns)) {
    const auto* se = std::get_if<ServiceEntry>(&stored->object);
    if (se == nullptr || se->resolution != ServiceEntry::Resolution::kStatic || !se->workload_selector.has_value() ||
        !SelectsWorkload(*se->workload_selector, we.spec, cluster_id)) {
      continue;
    }
    hosts.insert(se->hosts.begin(), se->hosts.end());
  }
}

EndpointIndex RebuildEndpointHosts(const EndpointIndex& previous, const ObjectMap& objects,
                                   const std::string& domain_suffix, const ResolvedNames* resolved,
                                   const std::string& cluster_id, const std::set<std::string>& hosts) {
  EndpointIndex merged = previous;
  for (const std::string& host : hosts) merged.erase(host);
  for (auto& [host, endpoints] : BuildEndpointIndexOf(objects, domain_suffix, resolved, cluster_id, &hosts)) {
    merged[host] = std::move(endpoints);
  }
  return merged;
}

std::shared_ptr<const EndpointIndex> EndpointIndexTracker::Update(const ObjectMap& objects) {
  MutexLock lock(&mu_);
  // The hosts of the EndpointSlices that differ between the two states; nullopt when anything
  // else differs too (or there is no earlier index), which takes a whole build.
  std::optional<std::set<std::string>> hosts;
  if (index_ != nullptr) {
    hosts.emplace();
    constexpr int kMaxWorkloadEntries = 256;
    int workload_entries = 0;
    // The hosts `stored` gives endpoints to, in `objects` or the previous state (a WorkloadEntry
    // the services of its namespace select in either); false for any other kind.
    const auto add_host = [&](const StoredObject* stored) {
      if (const auto* slice = std::get_if<EndpointSlice>(&stored->object)) {
        hosts->insert(StrCat(slice->service_name, ".", slice->meta.namespace_name, ".svc.", domain_suffix_));
        return true;
      }
      if (const auto* endpoints = std::get_if<K8sEndpoints>(&stored->object)) {
        hosts->insert(StrCat(endpoints->meta.name, ".", endpoints->meta.namespace_name, ".svc.", domain_suffix_));
        return true;
      }
      if (const auto* we = std::get_if<WorkloadEntry>(&stored->object)) {
        // Each is matched against its namespace's selectors: past a few hundred, a whole build
        // (which indexes the entries by label) costs less.
        if (++workload_entries > kMaxWorkloadEntries) return false;
        for (const ObjectMap* state : std::initializer_list<const ObjectMap*>{&previous_, &objects}) {
          AddHostsSelecting(*state, *we, domain_suffix_, cluster_id_, *hosts);
        }
        return true;
      }
      return false;
    };
    auto old_it = previous_.begin();
    auto new_it = objects.begin();
    while (hosts.has_value() && (old_it != previous_.end() || new_it != objects.end())) {
      if (new_it == objects.end() || (old_it != previous_.end() && old_it->first < new_it->first)) {
        if (!add_host(old_it->second.get())) hosts.reset();  // removed
        ++old_it;
      } else if (old_it == previous_.end() || new_it->first < old_it->first) {
        if (!add_host(new_it->second.get())) hosts.reset();  // added
        ++new_it;
      } else {
        if (old_it->second != new_it->second && (!add_host(old_it->second.get()) || !add_host(new_it->second.get()))) {
          hosts.reset();
        }
        ++old_it;
        ++new_it;
      }
    }
  }
  if (!hosts.has_value()) {
    index_ = std::make_shared<const EndpointIndex>(
        BuildEndpointIndexOf(objects, domain_suffix_, nullptr, cluster_id_, nullptr));
  } else if (!hosts->empty()) {
    index_ = std::make_shared<const EndpointIndex>(
        RebuildEndpointHosts(*index_, objects, domain_suffix_, nullptr, cluster_id_, *hosts));
  }
  previous_ = objects;
  return index_;
}

}  // namespace cxds
