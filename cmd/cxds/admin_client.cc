#include "cxds/admin_client.h"

#include "absl/strings/numbers.h"
#include "common/strings.h"
#include "httplib.h"

namespace cxds {

absl::StatusOr<AdminReply> AdminGet(const std::string& admin, const std::string& path, const std::string& token) {
  const size_t colon = admin.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(admin.substr(colon + 1), &port) || port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(StrCat("--admin \"", admin, "\" is not HOST:PORT"));
  }
  httplib::Client client(admin.substr(0, colon), port);
  client.set_connection_timeout(3, 0);
  client.set_read_timeout(10, 0);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", StrCat("Bearer ", token));
  httplib::Result result = client.Get(path, headers);
  if (!result) {
    return absl::UnavailableError(StrCat(admin, ": cannot read ", path, " (", httplib::to_string(result.error()), ")"));
  }
  return AdminReply{result->status, result->body};
}

}  // namespace cxds
