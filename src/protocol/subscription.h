// What one stream subscribes to for one resource type in State of the World, with the wildcard
// rules of the xDS protocol (docs/protocol-rules.md, R4.1, R4.2):
//  - LDS and CDS: while every request so far has had an empty name list, the subscription is a
//    legacy wildcard. Once any name (even "*") has been sent, "*" in the list means wildcard and
//    an empty list means nothing at all. So [] -> wildcard, ["*","A"] -> wildcard + A,
//    ["A"] -> A only, [] -> nothing.
//  - Every other type: the list is the exact set of names; "*" is an ordinary name and an empty
//    list means "subscribed to nothing".
// Thread-compatible: owned by one stream.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"

namespace cxds {

inline constexpr std::string_view kWildcardName = "*";

// The explicit names of a subscription, immutable and shared: a stream hands them to its
// configuration source (the generator keeps them as the proxy's interest) without copying, so
// a proxy's thousands of EDS names are held once. Never null. A subscription that changes makes
// a new set (copy on write); a set once handed out never changes.
using SubscribedNames = std::shared_ptr<const absl::flat_hash_set<std::string>>;

// The empty name set, shared.
const SubscribedNames& NoSubscribedNames();

// Proxies of one mesh mostly subscribe to the same names (every sidecar that sees the same
// services asks EDS for the same clusters), so a subscription's new name set is interned by
// content: equal subscriptions, on any streams, hold one set. Entries are weak (a set lives as
// long as a subscription or a generator holds it) and swept as the table grows. Thread-safe.
SubscribedNames InternSubscribedNames(absl::flat_hash_set<std::string> names);

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
  const absl::flat_hash_set<std::string>& names() const { return *names_; }
  const SubscribedNames& shared_names() const { return names_; }
  // Whether a resource of this name is wanted, through the wildcard or by name.
  bool Covers(const std::string& name) const { return wildcard_ || names_->contains(name); }
  // Subscribed to nothing at all.
  bool empty() const { return !wildcard_ && names_->empty(); }

 private:
  const bool wildcard_capable_;
  bool legacy_ = true;
  bool wildcard_ = false;
  SubscribedNames names_ = NoSubscribedNames();
};

// What one stream subscribes to for one type in Delta xDS (docs/protocol-rules.md, R10.4):
//  - LDS/CDS: a first request with an empty subscribe list is a legacy wildcard (also when it
//    carries initial_resource_versions: their keys are what the client holds, not new names).
//    "*" in subscribe is an explicit wildcard. Subscribing names keeps the wildcard (legacy or
//    not); only unsubscribing "*" ends it.
//  - Other types: names only; "*" is an ordinary name.
//  - Unsubscribing a name that is not subscribed is ignored.
// Thread-compatible: owned by one stream.
class DeltaSubscription {
 public:
  using Change = SotwSubscription::Change;

  explicit DeltaSubscription(std::string_view type_url);

  // The first request for the type on a stream.
  Change Initial(absl::Span<const std::string> subscribe, absl::Span<const std::string> unsubscribe);
  // Any later request.
  Change Update(absl::Span<const std::string> subscribe, absl::Span<const std::string> unsubscribe);

  bool wildcard() const { return wildcard_; }
  bool legacy_wildcard() const { return wildcard_ && legacy_; }
  const absl::flat_hash_set<std::string>& names() const { return *names_; }
  const SubscribedNames& shared_names() const { return names_; }
  bool Covers(const std::string& name) const { return wildcard_ || names_->contains(name); }
  bool Named(const std::string& name) const { return names_->contains(name); }

 private:
  const bool wildcard_capable_;
  bool legacy_ = false;
  bool wildcard_ = false;
  SubscribedNames names_ = NoSubscribedNames();
};

}  // namespace cxds
