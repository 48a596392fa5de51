// What one stream subscribes to for one resource type in State of the World, with the wildcard
// rules of the xDS protocol (xds-protocol R4.1, R4.2):
//  - LDS and CDS: while every request so far has had an empty name list, the subscription is a
//    legacy wildcard. Once any name (even "*") has been sent, "*" in the list means wildcard and
//    an empty list means nothing at all. So [] -> wildcard, ["*","A"] -> wildcard + A,
//    ["A"] -> A only, [] -> nothing.
//  - Every other type: the list is the exact set of names; "*" is an ordinary name and an empty
//    list means "subscribed to nothing".
// Thread-compatible: owned by one stream.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"

namespace cxds {

inline constexpr std::string_view kWildcardName = "*";

class SotwSubscription {
 public:
  struct Change {
    std::vector<std::string> added;    // explicit names newly subscribed
    std::vector<std::string> removed;  // explicit names no longer subscribed
    bool wildcard_added = false;
    bool wildcard_removed = false;

    bool any() const { return !added.empty() || !removed.empty() || wildcard_added || wildcard_removed; }
    bool adds_something() const { return !added.empty() || wildcard_added; }
  };

  explicit SotwSubscription(std::string_view type_url);

  // Applies the `resource_names` of one request and reports what changed.
  Change Apply(absl::Span<const std::string> resource_names);

  bool wildcard() const { return wildcard_; }
  // True while every request so far had an empty name list (LDS/CDS legacy wildcard).
  bool legacy_wildcard() const { return wildcard_ && legacy_; }
  const absl::flat_hash_set<std::string>& names() const { return names_; }
  // Whether a resource of this name is wanted, through the wildcard or by name.
  bool Covers(const std::string& name) const { return wildcard_ || names_.contains(name); }
  // Subscribed to nothing at all.
  bool empty() const { return !wildcard_ && names_.empty(); }

 private:
  const bool wildcard_capable_;
  bool legacy_ = true;
  bool wildcard_ = false;
  absl::flat_hash_set<std::string> names_;
};

}  // namespace cxds
