// Ranges of a store's object map narrower than ObjectsOfKind (config/config_store.h), for the
// model's per-change work that must not visit a big mesh's every object.
#pragma once

#include <string>
#include <string_view>

#include "config/config_store.h"

namespace cxds {

// The objects of one kind in one namespace, in key order: keys sort by kind, then namespace, so
// they are one range of the map, found in O(log n).
inline ObjectRange ObjectsOfKindIn(const ObjectMap& objects, std::string_view kind, const std::string& namespace_name) {
  std::string after(namespace_name);
  after.push_back('\0');  // the next string after namespace_name
  return {objects.lower_bound(ConfigKey{std::string(kind), namespace_name, ""}),
          objects.lower_bound(ConfigKey{std::string(kind), after, ""})};
}

}  // namespace cxds
