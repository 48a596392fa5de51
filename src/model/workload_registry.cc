#include "model/workload_registry.h"

#include <variant>

#include "absl/strings/str_split.h"

#include "common/strings.h"
#include "model/mesh_kinds.h"
#include "model/mesh_model.h"

namespace cxds {

namespace {

// istiod's AugmentLabels, for the locality alone (cxds knows no cluster, network or node name).
LabelMap WithLocalityLabels(LabelMap labels, const std::string& locality) {
  if (locality.empty()) return labels;
  const std::vector<std::string> parts = absl::StrSplit(locality, '/');
  const char* keys[] = {"topology.kubernetes.io/region", "topology.kubernetes.io/zone", "topology.istio.io/subzone"};
  for (size_t i = 0; i < 3 && i < parts.size(); ++i) {
    if (!parts[i].empty()) labels[keys[i]] = parts[i];
  }
  return labels;
}

}  // namespace

WorkloadRegistry BuildWorkloadRegistry(const ObjectMap& objects) {
  WorkloadRegistry registry;
  for (const auto& entry : ObjectsOfKind(objects, "Pod")) {
    const auto* pod = std::get_if<K8sPod>(&entry.second->object);
    if (pod == nullptr) continue;
    // A Pod's locality is its labels' (cxds reads no Node objects, whose topology labels istiod uses).
    registry.pods[{pod->meta.namespace_name, pod->meta.name}] = WorkloadIdentity{
        pod->meta.namespace_name, WithLocalityLabels(pod->meta.labels, LabelLocality(pod->meta.labels)),
        StrCat("Pod ", pod->meta.namespace_name, "/", pod->meta.name)};
  }
  // ServiceEntry endpoints by address: inline ones, and the WorkloadEntries of the entry's
  // namespace its workloadSelector selects (istiod's ServiceInstancesByIP; a WorkloadEntry only
  // a Service selects is not one of them).
  std::map<std::string, std::vector<const WorkloadEntry*>> entries_by_namespace;
  for (const auto& entry : ObjectsOfKind(objects, kind::kWorkloadEntry)) {
    if (const auto* we = std::get_if<WorkloadEntry>(&entry.second->object)) {
      entries_by_namespace[we->meta.namespace_name].push_back(we);
    }
  }
  std::set<std::pair<std::string, std::string>> added;  // address, source: each workload once per address
  const auto add = [&](const std::string& ns, const WorkloadEndpoint& endpoint, std::string source) {
    if (!added.insert({endpoint.address, source}).second) return;
    registry.by_address[endpoint.address].push_back(
        WorkloadIdentity{ns, WithLocalityLabels(endpoint.labels, WorkloadLocality(endpoint)), std::move(source)});
  };
  for (const auto& entry : ObjectsOfKind(objects, kind::kServiceEntry)) {
    const auto* se = std::get_if<ServiceEntry>(&entry.second->object);
    if (se == nullptr) continue;
    const std::string& ns = se->meta.namespace_name;
    for (const WorkloadEndpoint& endpoint : se->endpoints)
      add(ns, endpoint, StrCat("ServiceEntry ", ns, "/", se->meta.name));
    if (!se->workload_selector.has_value()) continue;
    auto candidates = entries_by_namespace.find(ns);
    if (candidates == entries_by_namespace.end()) continue;
    for (const WorkloadEntry* we : candidates->second) {
      if (LabelsMatch(*se->workload_selector, we->spec.labels)) {
        add(ns, we->spec, StrCat("WorkloadEntry ", ns, "/", we->meta.name));
      }
    }
  }
  return registry;
}

std::set<ConfigKey> ChangedWorkloads(const WorkloadRegistry& before, const WorkloadRegistry& after) {
  std::set<ConfigKey> changed;
  const auto pod_key = [](const std::pair<std::string, std::string>& pod) {
    return ConfigKey{kind::kWorkload, pod.first, pod.second};
  };
  // Both maps are sorted: one walk over each, a key differing when it is on one side only or
  // its value differs.
  const auto diff = [&](const auto& old_map, const auto& new_map, const auto& to_key) {
    auto a = old_map.begin();
    auto b = new_map.begin();
    while (a != old_map.end() || b != new_map.end()) {
      if (b == new_map.end() || (a != old_map.end() && a->first < b->first)) {
        changed.insert(to_key(a->first));
        ++a;
      } else if (a == old_map.end() || b->first < a->first) {
        changed.insert(to_key(b->first));
        ++b;
      } else {
        if (!(a->second == b->second)) changed.insert(to_key(a->first));
        ++a;
        ++b;
      }
    }
  };
  diff(before.pods, after.pods, pod_key);
  diff(before.by_address, after.by_address, [](const std::string& address) {
    return ConfigKey{kind::kWorkload, "", address};
  });
  return changed;
}

}  // namespace cxds
