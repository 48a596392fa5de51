#include "protocol/subscription.h"

#include <algorithm>

#include "protocol/type_url.h"

namespace cxds {

SotwSubscription::SotwSubscription(std::string_view type_url)
    : wildcard_capable_(IsWildcardCapableType(type_url)) {}

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

}  // namespace cxds
