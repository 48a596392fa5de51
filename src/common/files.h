// Reading small files whole (certificates, keys, tokens) without trusting their size.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace cxds {

// The contents of `path`, read up to `max_bytes`: a larger file is an error that says so
// without reading the rest (a path may name a huge file or a device). `what` names the file's
// role in the messages ("certificate", "admin token file"), which all start with the path.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes, std::string_view what);

}  // namespace cxds
