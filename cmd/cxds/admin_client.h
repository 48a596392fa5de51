// One GET of a cxds admin page, for the CLI commands that read a running replica
// (proxy-status, proxy-config): HOST:PORT checked, bounded timeouts, the bearer token if any.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace cxds {

struct AdminReply {
  int status = 0;  // HTTP status
  std::string body;
};

// InvalidArgument if `admin` is not HOST:PORT; Unavailable (naming `admin` and `path`) if the
// replica cannot be reached or read. Any HTTP status is a reply.
absl::StatusOr<AdminReply> AdminGet(const std::string& admin, const std::string& path, const std::string& token);

}  // namespace cxds
