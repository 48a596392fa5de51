// What every config object has: its name, namespace and labels, and where it was read from.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/time/time.h"

namespace cxds {

using LabelMap = std::map<std::string, std::string>;

struct ObjectMeta {
  std::string name;
  std::string namespace_name = "default";
  LabelMap labels;
  // metadata.creationTimestamp when given (objects exported from a cluster): which of two
  // VirtualServices for one host is older. Unset counts as newest.
  std::optional<absl::Time> creation_timestamp;
};

// Where a document came from, for error messages and /debug/config_status.
struct SourcePosition {
  std::string file;
  int line = 0;  // 1-based; 0 unknown
};

}  // namespace cxds
