#include "admin/proxy_status.h"

#include <algorithm>

#include "admin/admin_server.h"
#include "common/line_diff.h"
#include "common/strings.h"
#include "protocol/resource.h"
#include "protocol/type_url.h"

#ifndef CXDS_VERSION
#error "CXDS_VERSION must be the project version (src/CMakeLists.txt)"
#endif

namespace cxds {
namespace {

constexpr std::array<std::string_view, 4> kTypeUrls = {kClusterType, kListenerType, kEndpointType, kRouteType};

// The newest stream of `node_id` in the ledger, if any.
std::optional<StreamSyncStatus> NewestStream(const AckLedger& ledger, const std::string& node_id) {
  std::optional<StreamSyncStatus> newest;
  for (StreamSyncStatus& stream : ledger.AllStreams()) {
    if (stream.node_id == node_id && (!newest.has_value() || stream.stream_id > newest->stream_id)) {
      newest = std::move(stream);
    }
  }
  return newest;
}

std::string PrettyJson(const ResourcePtr& resource) {
  return JsonForDisplay(*resource, /*pretty=*/true).value_or("(not printable)");
}

std::string NameList(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += StrCat(i ? "," : "", AdminJsonQuote(names[i]));
  return out + "]";
}

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
  std::optional<StreamSyncStatus> newest = NewestStream(ledger, node_id);
  if (!newest.has_value()) return std::nullopt;
  std::string out = StrCat("{\"node\":", AdminJsonQuote(node_id), ",\"stream\":", newest->stream_id, ",\"types\":{");
  bool first_type = true;
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
      const std::string json = JsonForDisplay(*resource).value_or("null");
      out += StrCat(first ? "" : ",", "{\"name\":", AdminJsonQuote(resource->name()),
                    ",\"version\":", AdminJsonQuote(held.incremental ? resource->content_version() : cell.sent_version),
                    ",\"config\":", json, "}");
      first = false;
    }
    out += "]}";
  }
  return out + "}}";
}

std::optional<std::string> ProxyDiffJson(const AckLedger& ledger, PushPipeline& pipeline, const std::string& node_id,
                                         absl::Time now) {
  std::optional<StreamSyncStatus> newest = NewestStream(ledger, node_id);
  if (!newest.has_value()) return std::nullopt;
  std::optional<std::map<std::string, PushPipeline::RegeneratedType>> regenerated = pipeline.RegenerateView(node_id);
  if (!regenerated.has_value()) return std::nullopt;

  struct Side {
    std::map<std::string, ResourcePtr> sent;
    const PushPipeline::RegeneratedType* now = nullptr;
    std::optional<TypeStatusCell> cell;
    bool truncated = false;
  };
  std::map<std::string, Side> types;
  for (const HeldResources& held : ledger.Held(newest->stream_id)) {
    Side& side = types[held.type_url];
    for (const ResourcePtr& resource : held.resources) side.sent[resource->name()] = resource;
    side.truncated = held.truncated;
  }
  for (const TypeSyncStatus& status : newest->types) types[status.type_url].cell = ClassifyType(status, now);
  for (const auto& [type_url, type] : *regenerated) types[type_url].now = &type;

  std::string out = StrCat("{\"node\":", AdminJsonQuote(node_id), ",\"stream\":", newest->stream_id, ",\"types\":{");
  bool first_type = true;
  static const PushPipeline::RegeneratedType kNothing;
  for (const auto& [type_url, side] : types) {
    const PushPipeline::RegeneratedType& now_type = side.now != nullptr ? *side.now : kNothing;
    std::vector<std::string> only_sent;
    std::vector<std::string> only_now;
    std::vector<std::string> changed;
    for (const auto& [name, resource] : side.sent) {
      auto it = now_type.resources.find(name);
      if (it == now_type.resources.end()) {
        only_sent.push_back(name);
      } else if (it->second->serialized() != resource->serialized()) {
        changed.push_back(name);
      }
    }
    for (const auto& [name, resource] : now_type.resources) {
      if (!side.sent.contains(name)) only_now.push_back(name);
    }
    const bool match = only_sent.empty() && only_now.empty() && changed.empty() && now_type.error.empty();
    std::string diffs = "[";
    for (size_t i = 0; i < changed.size(); ++i) {
      const std::string& name = changed[i];
      const std::string diff = i < kMaxDiffedResources ? UnifiedLineDiff(PrettyJson(side.sent.at(name)),
                                                                         PrettyJson(now_type.resources.at(name)),
                                                                         StrCat("sent ", name), StrCat("now ", name))
                                                       : "";
      diffs += StrCat(i ? "," : "", "{\"name\":", AdminJsonQuote(name), ",\"diff\":", AdminJsonQuote(diff), "}");
    }
    const TypeStatusCell cell = side.cell.value_or(TypeStatusCell{});
    out += StrCat(first_type ? "" : ",", AdminJsonQuote(type_url), ":{\"match\":", match,
                  ",\"state\":", AdminJsonQuote(side.cell.has_value() ? TypeStateName(cell.state) : "NOT SENT"),
                  ",\"sent_version\":", AdminJsonQuote(cell.sent_version), ",\"sent\":", side.sent.size(),
                  ",\"now\":", now_type.resources.size(), ",\"only_sent\":", NameList(only_sent),
                  ",\"only_now\":", NameList(only_now), ",\"changed\":", diffs, "],\"truncated\":", side.truncated,
                  ",\"error\":", AdminJsonQuote(now_type.error), "}");
    first_type = false;
  }
  return out + "}}";
}

}  // namespace cxds
