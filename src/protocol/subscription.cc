#include "protocol/subscription.h"

#include <algorithm>

#include "protocol/type_url.h"

namespace cxds {

SotwSubscription::SotwSubscription(std::string_view type_url) : wildcard_capable_(IsWildcardCapableType(type_url)) {}

SotwSubscription::Change SotwSubscription::Apply(absl::Span<const std::string> resource_names) {
  bool wildcard = false;
  absl::flat_hash_set<std::string> names;
  if (wildcard_capable_ && legacy_ && resource_names.empty()) {
    wildcard = true;
  } else {
    // Once the client has named anything, an empty list means "nothing", never wildcard.
    legacy_ = false;
    for (const std::string& name : resource_names) {
      if (wildcard_capable_ && name == kWildcardName) {
        wildcard = true;
      } else {
        names.insert(name);
      }
    }
  }

  Change change;
  change.wildcard_added = wildcard && !wildcard_;
  change.wildcard_removed = !wildcard && wildcard_;
  for (const std::string& name : names) {
    if (!names_.contains(name)) change.added.push_back(name);
  }
  for (const std::string& name : names_) {
    if (!names.contains(name)) change.removed.push_back(name);
  }
  std::sort(change.added.begin(), change.added.end());
  std::sort(change.removed.begin(), change.removed.end());
  wildcard_ = wildcard;
  names_ = std::move(names);
  return change;
}

DeltaSubscription::DeltaSubscription(std::string_view type_url) : wildcard_capable_(IsWildcardCapableType(type_url)) {}

DeltaSubscription::Change DeltaSubscription::Initial(absl::Span<const std::string> subscribe,
                                                     absl::Span<const std::string> unsubscribe) {
  Change change;
  if (wildcard_capable_ && subscribe.empty()) {
    wildcard_ = true;
    legacy_ = true;
    change.wildcard_added = true;
  }
  Change rest = Update(subscribe, unsubscribe);
  rest.wildcard_added = rest.wildcard_added || change.wildcard_added;
  return rest;
}

DeltaSubscription::Change DeltaSubscription::Update(absl::Span<const std::string> subscribe,
                                                    absl::Span<const std::string> unsubscribe) {
  Change change;
  for (const std::string& name : subscribe) {
    if (wildcard_capable_ && name == kWildcardName) {
      if (!wildcard_) change.wildcard_added = true;
      wildcard_ = true;
    } else if (names_.insert(name).second) {
      change.added.push_back(name);
    }
  }
  if (!subscribe.empty()) legacy_ = false;  // any named subscription leaves legacy mode
  for (const std::string& name : unsubscribe) {
    if (wildcard_capable_ && name == kWildcardName) {
      if (wildcard_) change.wildcard_removed = true;
      wildcard_ = false;
      legacy_ = false;
    } else if (names_.erase(name) > 0) {
      change.removed.push_back(name);
    }
  }
  std::sort(change.added.begin(), change.added.end());
  std::sort(change.removed.begin(), change.removed.end());
  return change;
}

}  // namespace cxds
