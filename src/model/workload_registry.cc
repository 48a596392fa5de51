#include "model/workload_registry.h"

#include <array>
#include <optional>
#include <variant>

#include "absl/strings/str_split.h"

#include "common/strings.h"
#include "model/mesh_kinds.h"
#include "model/mesh_model.h"

namespace cxds {

namespace {

constexpr const char* kLocalityKeys[] = {"topology.kubernetes.io/region", "topology.kubernetes.io/zone",
                                         "topology.istio.io/subzone"};
constexpr char kClusterKey[] = "topology.istio.io/cluster";
constexpr char kHostnameKey[] = "kubernetes.io/hostname";
constexpr char kNetworkKey[] = "topology.istio.io/network";

// istiod's SplitLocalityLabel: "region/zone/subzone", the third part ending at the next '/'.
std::array<std::string_view, 3> SplitLocality(std::string_view locality) {
  std::array<std::string_view, 3> parts;
  for (size_t i = 0; i < parts.size(); ++i) {
    const size_t slash = locality.find('/');
    parts[i] = locality.substr(0, slash);
    if (slash == std::string_view::npos) break;
    locality.remove_prefix(slash + 1);
  }
  return parts;
}

}  // namespace

LabelMap AugmentLabels(LabelMap labels, const std::string& cluster_id, const std::string& locality,
                       const std::string& node_name, const std::string& network) {
  const std::array<std::string_view, 3> parts = SplitLocality(locality);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].empty()) labels.insert_or_assign(kLocalityKeys[i], std::string(parts[i]));
  }
  if (!cluster_id.empty()) labels.insert_or_assign(kClusterKey, cluster_id);
  if (!node_name.empty()) labels.insert_or_assign(kHostnameKey, node_name);
  // istiod: a network label the workload has wins over the one it is given.
  if (!network.empty()) {
    auto it = labels.find(kNetworkKey);
    if (it == labels.end() || it->second.empty()) labels.insert_or_assign(kNetworkKey, network);
  }
  return labels;
}

namespace {

// What AugmentLabels would put under `key`, if it puts anything there; `parts` is the locality
// split, done only when a locality key asks.
std::optional<std::string_view> AugmentedValue(std::string_view key, std::string_view cluster_id,
                                               std::string_view locality, std::string_view node_name,
                                               std::optional<std::array<std::string_view, 3>>& parts) {
  if (key == kClusterKey) return cluster_id.empty() ? std::nullopt : std::optional(cluster_id);
  if (key == kHostnameKey) return node_name.empty() ? std::nullopt : std::optional(node_name);
  for (size_t i = 0; i < 3; ++i) {
    if (key != kLocalityKeys[i]) continue;
    if (!parts.has_value()) parts = SplitLocality(locality);
    return (*parts)[i].empty() ? std::nullopt : std::optional((*parts)[i]);
  }
  return std::nullopt;
}

}  // namespace

std::string_view AugmentedLabelValue(const LabelMap& labels, const std::string& key, std::string_view cluster_id,
                                     std::string_view locality, std::string_view node_name) {
  std::optional<std::array<std::string_view, 3>> parts;
  if (std::optional<std::string_view> augmented = AugmentedValue(key, cluster_id, locality, node_name, parts)) {
    return *augmented;
  }
  auto it = labels.find(key);
  return it != labels.end() ? std::string_view(it->second) : std::string_view();
}

bool AugmentedLabelsMatch(const LabelMap& selector, const LabelMap& labels, std::string_view cluster_id,
                          std::string_view locality, std::string_view node_name) {
  std::optional<std::array<std::string_view, 3>> parts;  // split only when a selector asks
  for (const auto& [key, value] : selector) {
    const std::optional<std::string_view> augmented = AugmentedValue(key, cluster_id, locality, node_name, parts);
    if (augmented.has_value()) {
      if (*augmented != value) return false;
      continue;
    }
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

bool IsAugmentedKey(std::string_view key) {
  return key == kClusterKey || key == kHostnameKey || key == kLocalityKeys[0] || key == kLocalityKeys[1] ||
         key == kLocalityKeys[2];
}

bool SelectsWorkload(const LabelMap& selector, const WorkloadEndpoint& w, std::string_view cluster_id) {
  if (selector.empty()) return true;
  if (!w.locality.empty()) return AugmentedLabelsMatch(selector, w.labels, cluster_id, w.locality, "");
  return AugmentedLabelsMatch(selector, w.labels, cluster_id, LabelLocality(w.labels), "");
}

WorkloadRegistry BuildWorkloadRegistry(const ObjectMap& objects, const std::string& cluster_id) {
  WorkloadRegistry registry;
  registry.cluster_id = cluster_id;
  for (const auto& entry : ObjectsOfKind(objects, "Pod")) {
    const auto* pod = std::get_if<K8sPod>(&entry.second->object);
    if (pod == nullptr) continue;
    // A Pod's locality is its labels' (cxds reads no Node objects, whose topology labels istiod uses).
    registry.pods[{pod->meta.namespace_name, pod->meta.name}] = WorkloadIdentity{
        pod->meta.namespace_name, AugmentLabels(pod->meta.labels, cluster_id, LabelLocality(pod->meta.labels), "", ""),
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
    registry.by_address[endpoint.address].push_back(WorkloadIdentity{
        ns, AugmentLabels(endpoint.labels, cluster_id, WorkloadLocality(endpoint), "", ""), std::move(source)});
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
      if (SelectsWorkload(*se->workload_selector, we->spec, cluster_id)) {
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
