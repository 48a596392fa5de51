// ProxyModel: what one simulated proxy subscribes to and holds, independent of the protocol
// (SotW or Delta) and of gRPC, so both stream kinds follow references the same way.
//
// Envoy style: CDS and LDS wildcard; EDS for the EDS service names of the clusters held; RDS
// for the route configuration names in the listeners' HTTP connection managers.
// gRPC style (proxyless): LDS by name; RDS from the listeners; CDS for the clusters the routes
// name; EDS for those clusters' service names.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/any.pb.h"
#include "load_options.h"

namespace cxds::load {

// The four types a proxy watches, in ADS push order.
enum XdsType : int { kCds = 0, kEds = 1, kLds = 2, kRds = 3 };
inline constexpr int kXdsTypeCount = 4;
inline constexpr std::array<XdsType, kXdsTypeCount> kAllTypes = {kCds, kEds, kLds, kRds};

std::string_view TypeUrlOf(XdsType type);
std::string_view ShortNameOf(XdsType type);
std::optional<XdsType> TypeFromUrl(std::string_view type_url);

// What a proxy needs from one resource: its name, the names it refers to in the next type
// (listener: route configurations; cluster: its EDS service name; route configuration:
// clusters) and, for a ClusterLoadAssignment, its endpoint ports (changes are recognised by
// them).
struct ParsedResource {
  std::string name;
  std::vector<std::string> refs;
  std::vector<uint32_t> ports;
};

// Decodes a resource of `type` from its Any. Fails if the Any holds another type or does not
// parse: a faithful proxy NACKs that.
absl::StatusOr<ParsedResource> ParseResource(XdsType type, const google::protobuf::Any& any);

// A change of one type's subscription, to be sent as a request.
struct SubscriptionUpdate {
  explicit SubscriptionUpdate(XdsType t) : type(t) {}
  XdsType type;
  bool wildcard = false;
  std::vector<std::string> names;    // the whole new set (SotW resource_names)
  std::vector<std::string> added;    // Delta resource_names_subscribe
  std::vector<std::string> removed;  // Delta resource_names_unsubscribe
};

class ProxyModel {
 public:
  ProxyModel(NodeStyle style, const std::vector<std::string>& listeners);

  // The subscriptions a proxy opens with.
  std::vector<SubscriptionUpdate> Start();

  // Applies a response of `type`. `replace_all`: the response is the type's whole state (SotW
  // LDS and CDS), so what it leaves out is gone.
  void Apply(XdsType type, std::vector<ParsedResource> upserts, const std::vector<std::string>& removed,
             bool replace_all);

  // Subscription changes the held resources call for (references followed, stale names dropped).
  std::vector<SubscriptionUpdate> FollowReferences();

  // Every subscribed type has answered and every subscribed name is held.
  bool Complete() const;

  bool subscribed(XdsType type) const { return types_[type].subscribed; }
  bool wildcard(XdsType type) const { return types_[type].wildcard; }
  const std::set<std::string>& names(XdsType type) const { return types_[type].names; }

 private:
  struct TypeState {
    bool subscribed = false;
    bool wildcard = false;
    bool answered = false;
    std::set<std::string> names;                           // when not wildcard
    std::map<std::string, std::vector<std::string>> held;  // name -> refs
  };
  // Which type's held resources decide which type's subscription.
  struct Follow {
    XdsType from;
    XdsType to;
  };

  std::set<std::string> Wanted(XdsType from) const;

  NodeStyle style_;
  std::vector<std::string> listeners_;
  std::vector<Follow> follows_;
  std::array<TypeState, kXdsTypeCount> types_;
};

}  // namespace cxds::load
