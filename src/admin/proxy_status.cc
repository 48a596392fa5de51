#include "admin/proxy_status.h"

#include <algorithm>

#include "admin/admin_server.h"
#include "common/strings.h"
#include "protocol/type_url.h"

#ifndef CXDS_VERSION
#error "CXDS_VERSION must be the project version (src/CMakeLists.txt)"
#endif

namespace cxds {
namespace {

constexpr std::array<std::string_view, 4> kTypeUrls = {kClusterType, kListenerType, kEndpointType, kRouteType};

}  // namespace

std::vector<ProxyStatusRow> ProxyStatusRows(const std::vector<StreamSyncStatus>& streams, absl::Time now) {
  std::vector<ProxyStatusRow> rows;
  for (const StreamSyncStatus& stream : streams) {
    ProxyStatusRow row{stream.node_id, stream.stream_id, stream.identity, {}};
    for (const TypeSyncStatus& type : stream.types) {
      for (size_t i = 0; i < kTypeUrls.size(); ++i) {
        if (type.type_url == kTypeUrls[i]) row.types[i] = ClassifyType(type, now);
      }
    }
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const ProxyStatusRow& a, const ProxyStatusRow& b) {
    return a.node != b.node ? a.node < b.node : a.stream_id < b.stream_id;
  });
  return rows;
}

std::string ProxyStatusJson(const std::vector<ProxyStatusRow>& rows, std::string_view push_version) {
  std::string out = StrCat("{\"cxds_version\":", AdminJsonQuote(CXDS_VERSION),
                           ",\"push_version\":", AdminJsonQuote(push_version), ",\"proxies\":[");
  bool first = true;
  for (const ProxyStatusRow& row : rows) {
    out += first ? "" : ",";
    first = false;
    out += StrCat("{\"node\":", AdminJsonQuote(row.node), ",\"stream\":", row.stream_id,
                  ",\"identity\":", AdminJsonQuote(row.identity));
    for (size_t i = 0; i < kProxyStatusTypes.size(); ++i) {
      const TypeStatusCell& cell = row.types[i];
      out += StrCat(",\"", kProxyStatusTypes[i], "\":{\"state\":", AdminJsonQuote(TypeStateName(cell.state)),
                    ",\"sent_version\":", AdminJsonQuote(cell.sent_version),
                    ",\"age_ms\":", absl::ToInt64Milliseconds(cell.age), ",\"error\":", AdminJsonQuote(cell.error),
                    ",\"accepted\":", AdminJsonQuote(cell.accepted), "}");
    }
    out += "}";
  }
  return out + "]}";
}

}  // namespace cxds
