#include "cache/snapshot.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "common/strings.h"
#include "protocol/references.h"
#include "protocol/type_url.h"

namespace cxds {

namespace {
const std::string& EmptyString() {
  static const std::string* empty = new std::string();
  return *empty;
}

// Compares the names referenced with the names present for one type and appends the
// differences to `problems`.
void CompareReferences(std::string_view what, std::string_view referrer, const std::set<std::string>& referenced,
                       const Snapshot::TypeResources* present, std::vector<std::string>* problems) {
  for (const std::string& name : referenced) {
    if (present == nullptr || !present->items.contains(name)) {
      problems->push_back(
          StrCat(what, " \"", name, "\" is referenced by ", referrer, " but missing from the snapshot"));
    }
  }
  if (present == nullptr) {
    return;
  }
  for (const auto& [name, resource] : present->items) {
    if (!referenced.contains(name)) {
      problems->push_back(StrCat(what, " \"", name, "\" is in the snapshot but no ", referrer, " references it"));
    }
  }
}
}  // namespace

absl::StatusOr<SnapshotPtr> Snapshot::Create(std::string version, std::vector<ResourcePtr> resources) {
  std::map<std::string, std::string> versions;
  for (std::string_view core : {kClusterType, kEndpointType, kListenerType, kRouteType, kSecretType}) {
    versions[std::string(core)] = version;
  }
  for (const ResourcePtr& resource : resources) {
    if (resource == nullptr) {
      return absl::InvalidArgumentError("snapshot contains a null resource");
    }
    versions[resource->type_url()] = version;
  }
  if (version.empty()) {
    return absl::InvalidArgumentError("snapshot version must not be empty");
  }
  return CreateWithTypeVersions(std::move(versions), std::move(resources));
}

absl::StatusOr<SnapshotPtr> Snapshot::CreateWithTypeVersions(std::map<std::string, std::string> versions,
                                                             std::vector<ResourcePtr> resources) {
  std::map<std::string, std::shared_ptr<TypeResources>> building;
  for (auto& [type_url, version] : versions) {
    if (version.empty()) {
      // An empty version would equal the empty version_info of a first request
      // (docs/protocol-rules.md, EA1).
      return absl::InvalidArgumentError(StrCat("empty version for type ", type_url));
    }
    building[type_url] = std::make_shared<TypeResources>();
    building[type_url]->version = version;
  }
  for (ResourcePtr& resource : resources) {
    if (resource == nullptr) {
      return absl::InvalidArgumentError("snapshot contains a null resource");
    }
    auto it = building.find(resource->type_url());
    if (it == building.end()) {
      return absl::InvalidArgumentError(
          StrCat("no version given for type ", resource->type_url(), " of resource ", resource->name()));
    }
    const std::string name = resource->name();
    if (!it->second->items.emplace(name, std::move(resource)).second) {
      return absl::InvalidArgumentError(
          StrCat("duplicate ", ShortTypeName(it->first), " resource name \"", name, "\""));
    }
  }
  std::shared_ptr<Snapshot> snapshot(new Snapshot());
  for (auto& [type_url, typed] : building) snapshot->types_.emplace(type_url, std::move(typed));
  return SnapshotPtr(std::move(snapshot));
}

absl::StatusOr<SnapshotPtr> Snapshot::FromTypes(std::map<std::string, TypeResourcesPtr> types) {
  for (const auto& [type_url, typed] : types) {
    if (typed == nullptr) return absl::InvalidArgumentError(StrCat("no resources given for type ", type_url));
    if (typed->version.empty()) return absl::InvalidArgumentError(StrCat("empty version for type ", type_url));
  }
  std::shared_ptr<Snapshot> snapshot(new Snapshot());
  snapshot->types_ = std::move(types);
  return SnapshotPtr(std::move(snapshot));
}

namespace {
bool SameResources(const Snapshot::TypeResources& a, const Snapshot::TypeResources& b) {
  if (a.version_covers_all != b.version_covers_all || a.items.size() != b.items.size()) return false;
  // Both maps are ordered by name: one pass in step.
  return std::equal(a.items.begin(), a.items.end(), b.items.begin(), [](const auto& x, const auto& y) {
    return x.first == y.first && (x.second == y.second || (x.second->content_version() == y.second->content_version() &&
                                                           x.second->ttl() == y.second->ttl()));
  });
}
}  // namespace

SnapshotPtr Snapshot::KeepUnchangedTypes(const SnapshotPtr& previous, const SnapshotPtr& next) {
  if (previous == nullptr || next == nullptr) return next;
  std::map<std::string, TypeResourcesPtr> types;
  bool all_kept = previous->types_.size() == next->types_.size();
  for (const auto& [type_url, typed] : next->types_) {
    auto before = previous->types_.find(type_url);
    if (before != previous->types_.end() && SameResources(*before->second, *typed)) {
      types.emplace(type_url, before->second);
    } else {
      types.emplace(type_url, typed);
      all_kept = false;
    }
  }
  if (all_kept) return previous;
  std::shared_ptr<Snapshot> merged(new Snapshot());
  merged->types_ = std::move(types);
  return merged;
}

const std::string& Snapshot::version(const std::string& type_url) const {
  auto it = types_.find(type_url);
  return it == types_.end() ? EmptyString() : it->second->version;
}

const Snapshot::TypeResources* Snapshot::resources(const std::string& type_url) const {
  auto it = types_.find(type_url);
  return it == types_.end() ? nullptr : it->second.get();
}

ResourcePtr Snapshot::Find(const std::string& type_url, const std::string& name) const {
  const TypeResources* typed = resources(type_url);
  if (typed == nullptr) {
    return nullptr;
  }
  auto it = typed->items.find(name);
  return it == typed->items.end() ? nullptr : it->second;
}

absl::Status Snapshot::Consistent() const {
  ResourceReferences from_clusters;
  ResourceReferences from_listeners;
  if (const TypeResources* clusters = resources(std::string(kClusterType))) {
    for (const auto& [name, resource] : clusters->items) CollectReferences(*resource, &from_clusters);
  }
  if (const TypeResources* listeners = resources(std::string(kListenerType))) {
    for (const auto& [name, resource] : listeners->items) CollectReferences(*resource, &from_listeners);
  }
  std::vector<std::string> problems;
  CompareReferences("ClusterLoadAssignment", "an EDS cluster", from_clusters.load_assignments,
                    resources(std::string(kEndpointType)), &problems);
  CompareReferences("RouteConfiguration", "a listener", from_listeners.route_configurations,
                    resources(std::string(kRouteType)), &problems);
  if (problems.empty()) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(StrCat("inconsistent snapshot: ", absl::StrJoin(problems, "; ")));
}

absl::Status Snapshot::ConsistentStrict() const {
  std::vector<std::string> problems;
  if (absl::Status status = Consistent(); !status.ok()) {
    problems.push_back(std::string(status.message()));
  }
  ResourceReferences from_routes;
  if (const TypeResources* routes = resources(std::string(kRouteType))) {
    for (const auto& [name, resource] : routes->items) CollectReferences(*resource, &from_routes);
  }
  const TypeResources* clusters = resources(std::string(kClusterType));
  for (const std::string& cluster : from_routes.clusters) {
    if (clusters == nullptr || !clusters->items.contains(cluster)) {
      problems.push_back(
          StrCat("Cluster \"", cluster, "\" is referenced by a route configuration but missing from the snapshot"));
    }
  }
  if (problems.empty()) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrJoin(problems, "; "));
}

}  // namespace cxds
