// A Snapshot is one immutable, versioned set of resources for a node (or a group of nodes):
// for each type URL, a version string and the resources by name. Snapshots are shared
// read-only between the cache and every stream serving them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "protocol/resource.h"

namespace cxds {

class Snapshot;
using SnapshotPtr = std::shared_ptr<const Snapshot>;

class Snapshot {
 public:
  // Resources of one type, ordered by name (so responses are deterministic). Immutable once
  // in a snapshot, and shared between snapshots that have the same resources of a type.
  struct TypeResources {
    std::string version;
    std::map<std::string, ResourcePtr> items;
    // True (snapshots): the version covers every resource of the type, so a SotW client is sent
    // all it subscribes to whenever the version changes. False (LinearCache): resources are
    // versioned one by one, and SotW sends only those whose content the client lacks.
    bool version_covers_all = true;
  };
  using TypeResourcesPtr = std::shared_ptr<const TypeResources>;

  // Every type present, and each of the five core types (CDS, EDS, LDS, RDS, SDS) even when it
  // has no resources, gets `version`: an absent core type means "none of these at this version",
  // so an LDS/CDS subscriber is told its state is empty. Fails with InvalidArgument on an empty version, a null
  // resource, or two resources of one type with the same name (a client must NACK duplicates,
  // so they are refused here rather than silently collapsed).
  static absl::StatusOr<SnapshotPtr> Create(std::string version, std::vector<ResourcePtr> resources);

  // One version per type URL; every type of `resources` must have a version in `versions`
  // (types with a version but no resources are present and empty).
  static absl::StatusOr<SnapshotPtr> CreateWithTypeVersions(std::map<std::string, std::string> versions,
                                                            std::vector<ResourcePtr> resources);

  // Assembles a snapshot from per-type parts (caches that keep one type each share them).
  // Fails with InvalidArgument on a null part or an empty version.
  static absl::StatusOr<SnapshotPtr> FromTypes(std::map<std::string, TypeResourcesPtr> types);

  // `next`, except that each type whose resources are the same as that type's in `previous`
  // (same names, same content and TTL) is taken from `previous`, version and all. Versioning a
  // whole snapshot at once then moves, for clients, only the versions of the types that really
  // changed: a SotW stream is not resent a type it already holds (docs/protocol-rules.md, EA2).
  // Returns `previous` itself when no type changed, `next` when `previous` is null.
  static SnapshotPtr KeepUnchangedTypes(const SnapshotPtr& previous, const SnapshotPtr& next);

  // The version of `type_url`, or "" if the snapshot does not have that type.
  const std::string& version(const std::string& type_url) const;
  // The resources of `type_url`, or nullptr if the snapshot does not have that type.
  const TypeResources* resources(const std::string& type_url) const;
  // The resource of that type and name, or nullptr.
  ResourcePtr Find(const std::string& type_url, const std::string& name) const;
  const std::map<std::string, TypeResourcesPtr>& types() const { return types_; }

  // go-control-plane's consistency rule: the ClusterLoadAssignments named by EDS clusters are
  // exactly the ClusterLoadAssignments present, and the route configurations named by
  // listeners are exactly the route configurations present: none missing and none extra. The
  // error names every missing and extra resource.
  absl::Status Consistent() const;
  // Consistent(), and also every cluster a route configuration names exists.
  absl::Status ConsistentStrict() const;

 private:
  Snapshot() = default;
  std::map<std::string, TypeResourcesPtr> types_;
};

}  // namespace cxds
