// Reading a config directory: every config file under it (recursively, .yaml/.yml/.json,
// skipping hidden files and editor temporaries), in path order.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cxds {

// The config files under `dir`, sorted. NotFound if `dir` is not a directory.
absl::StatusOr<std::vector<std::string>> ListConfigFiles(const std::string& dir);

// The whole content of `path`, or the reason it could not be read.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace cxds
