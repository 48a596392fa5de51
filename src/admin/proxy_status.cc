#include "admin/proxy_status.h"

#include <algorithm>

#include "admin/admin_server.h"
#include "common/strings.h"
#include "google/protobuf/util/json_util.h"
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

std::optional<std::string> ProxyConfigJson(const AckLedger& ledger, const std::string& node_id, absl::Time now,
                                           const std::string& type_url) {
  std::optional<StreamSyncStatus> newest;
  for (StreamSyncStatus& stream : ledger.AllStreams()) {
    if (stream.node_id == node_id && (!newest.has_value() || stream.stream_id > newest->stream_id)) {
      newest = std::move(stream);
    }
  }
  if (!newest.has_value()) return std::nullopt;
  std::string out = StrCat("{\"node\":", AdminJsonQuote(node_id), ",\"stream\":", newest->stream_id, ",\"types\":{");
  bool first_type = true;
  google::protobuf::util::JsonPrintOptions options;
  for (const HeldResources& held : ledger.Held(newest->stream_id)) {
    const auto status = std::find_if(newest->types.begin(), newest->types.end(),
                                     [&](const TypeSyncStatus& t) { return t.type_url == held.type_url; });
    if (status == newest->types.end() || (!type_url.empty() && held.type_url != type_url)) continue;
    const TypeStatusCell cell = ClassifyType(*status, now);
    out += StrCat(
        first_type ? "" : ",", AdminJsonQuote(held.type_url), ":{\"state\":", AdminJsonQuote(TypeStateName(cell.state)),
        ",\"sent_version\":", AdminJsonQuote(cell.sent_version), ",\"truncated\":", held.truncated, ",\"resources\":[");
    first_type = false;
    bool first = true;
    for (const ResourcePtr& resource : held.resources) {
      std::string json;
      if (!google::protobuf::util::MessageToJsonString(resource->message(), &json, options).ok()) json = "null";
      out += StrCat(first ? "" : ",", "{\"name\":", AdminJsonQuote(resource->name()),
                    ",\"version\":", AdminJsonQuote(held.incremental ? resource->content_version() : cell.sent_version),
                    ",\"config\":", json, "}");
      first = false;
    }
    out += "]}";
  }
  return out + "}}";
}

}  // namespace cxds
