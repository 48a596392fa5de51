// Reading a config directory: every config file under it (recursively, .yaml/.yml/.json,
// skipping hidden files and editor temporaries), in path order.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cxds {

// The config files under `dir`, sorted. NotFound if `dir` is not a directory.
absl::StatusOr<std::vector<std::string>> ListConfigFiles(const std::string& dir);

// `cxds validate`: checks every config file under `dir` offline; errors
// (file:line: object: field: message) go to `err`, a summary to `out`. Returns 0 if all is
// valid, 1 if not, 2 if `dir` is unusable.
int ValidateDirectory(const std::string& dir, std::ostream& out, std::ostream& err);

// The whole content of `path`, or the reason it could not be read.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace cxds
