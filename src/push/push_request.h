// PushRequest: what a push is about. Config sources describe each change as a request; the
// debouncer merges requests, Push builds or reuses a PushContext for the merged one, and the
// PushQueue merges what is queued for one connection. The merge rules are explicit per field
// (docs/protocol-rules.md, "PushRequest merge"):
//   full           OR      (any full request makes the merged one full)
//   forced         OR
//   configs        union   (never "empty means everything": that is what `forced` says)
//   reasons        sum of counts per reason
//   start          the earliest
//   change_ids     union   (every change a push carries, for convergence tracking), keeping
//                  the newest kMaxChangeIds: a stream whose pushes keep merging while it is
//                  slow would otherwise carry every change id since (the tracker keeps 256
//                  changes by default, so older ids would find nothing anyway)
//   context        the newest non-null one (never replaced by null)
//   push_sequence  the highest
//   resources      union per type of the changed names (null = anything changed)
//   delta_scope    kept only if both sides narrow (union of names); otherwise dropped, since
//                  a narrowed request merged with an unnarrowed one must not narrow it
//
// Value type; not thread-safe (copy it to share).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cache/config_watcher.h"

namespace cxds {

// The kinds the push rules know by name. Config sources may use any other string (the mesh
// kinds are in model/mesh_kinds.h); these are the ones the generic rules look at.
namespace kind {
inline constexpr char kEndpoints[] = "Endpoints";  // endpoint-only changes of one service
inline constexpr char kSnapshot[] = "Snapshot";    // a SnapshotCache node key
// A cache dependency on the whole PushContext: dropped by every full push (for resources
// such as route tables that depend on many configs).
inline constexpr char kPushContext[] = "PushContext";
// A workload a proxy may be changed in the registry (istiod's ProxyUpdate): a Pod by namespace
// and name, or an address (empty namespace). Changes what the proxies that are that workload
// see, and nothing for the others: it needs no new PushContext (EndpointOnly stays true).
inline constexpr char kWorkload[] = "Workload";
}  // namespace kind

// Why a push happened (istiod's TriggerReason values where they mean the same).
namespace reason {
inline constexpr char kEndpoint[] = "endpoint";
inline constexpr char kConfig[] = "config";
inline constexpr char kService[] = "service";
inline constexpr char kProxyRequest[] = "proxyrequest";
inline constexpr char kSnapshot[] = "snapshot";
inline constexpr char kDebug[] = "debug";
inline constexpr char kProxyUpdate[] = "proxy";  // the proxy's own workload changed
inline constexpr char kUnknown[] = "unknown";
}  // namespace reason

struct ConfigKey {
  std::string kind;
  std::string namespace_name;
  std::string name;

  auto operator<=>(const ConfigKey&) const = default;
  std::string ToString() const;  // "Kind/namespace/name"
};

class PushContext;

// Names newly subscribed (a client request); generation is narrowed to them.
struct DeltaScope {
  std::set<std::string> subscribed;
  std::set<std::string> unsubscribed;
};

struct PushRequest {
  static constexpr size_t kMaxChangeIds = 256;

  bool full = false;    // the PushContext must be rebuilt
  bool forced = false;  // push every type to every proxy, whatever the configs
  std::set<ConfigKey> configs;
  std::map<std::string, int64_t> reasons;
  absl::Time start = absl::InfiniteFuture();  // the earliest change's arrival
  std::set<uint64_t> change_ids;
  std::shared_ptr<const PushContext> context;
  uint64_t push_sequence = 0;  // the Push that produced it (0: not pushed yet)
  // Resource-level changes when the source already knows them (the SnapshotCache diff).
  // Empty `types` and !everything means "to be generated" (pipeline pushes).
  ConfigChange resources;
  std::optional<DeltaScope> delta_scope;

  // Merges `other` into this request (rules above).
  void Merge(const PushRequest& other);
  // Every config is of kind Endpoints or Workload (and there is at least one), and nothing
  // forces more: the push can reuse the PushContext and touch EDS only (the proxies that are a
  // changed workload are pushed in full by the pipeline).
  bool EndpointOnly() const;
  // Whether any config of `kind` is in the request.
  bool HasKind(std::string_view kind) const;
  int64_t TotalReasons() const;
  // "endpoint:3 config:1", for logs.
  std::string ReasonsString() const;
};

using PushRequestPtr = std::shared_ptr<const PushRequest>;

// A new request: `a` merged with `b` (either may be null).
PushRequestPtr MergedRequest(const PushRequestPtr& a, const PushRequestPtr& b);

// Merges resource-level changes: union of names per type; null (anything) dominates.
void MergeConfigChange(ConfigChange& into, const ConfigChange& other);

}  // namespace cxds
