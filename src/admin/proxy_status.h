// Proxy status: what `cxds proxy-status` shows, in istioctl's words, from the ACK/NACK ledger:
// for each proxy stream, each of CDS, LDS, EDS and RDS classified by ClassifyType
// (server/sync_state.h) as SYNCED, NOT SENT, STALE or NACK. The admin page /debug/proxy_status serves these rows as
// JSON (ProxyStatusJson); the CLI renders them as a table (cmd/cxds/proxy_status.cc).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "pipeline/push_pipeline.h"
#include "server/ack_ledger.h"
#include "server/sync_state.h"

namespace cxds {

// The four columns, in istioctl's order.
inline constexpr std::array<std::string_view, 4> kProxyStatusTypes = {"CDS", "LDS", "EDS", "RDS"};

struct ProxyStatusRow {
  std::string node;
  int64_t stream_id = 0;
  std::string identity;
  std::array<TypeStatusCell, 4> types;  // kProxyStatusTypes order
};

// A row per stream, sorted by node then stream.
std::vector<ProxyStatusRow> ProxyStatusRows(const std::vector<StreamSyncStatus>& streams, absl::Time now);
// {"cxds_version":..., "push_version":..., "proxies":[{"node","stream","identity","CDS":{"state",
// "sent_version","age_ms","error","accepted"},...}]}; strings quoted as valid JSON.
std::string ProxyStatusJson(const std::vector<ProxyStatusRow>& rows, std::string_view push_version);

// What cxds last sent the proxy `node_id` and the proxy holds, as far as the ledger knows
// (AckLedger::Held), for `cxds proxy-config`: {"node":..., "stream":N, "types":{TYPE_URL:
// {"state":..., "sent_version":..., "truncated":bool, "resources":[{"name","version",
// "config":{the resource as JSON}}]}}}, from the newest stream of that node; nullopt if none.
// `type_url` non-empty: that type only.
std::optional<std::string> ProxyConfigJson(const AckLedger& ledger, const std::string& node_id, absl::Time now,
                                           const std::string& type_url = "");

// For `cxds proxy-status PROXY`: per type, what the proxy's newest stream was last sent (the
// ledger) against what it would be sent now (PushPipeline::RegenerateView):
// {"node", "stream", "types":{TYPE_URL:{"match":bool, "state", "sent_version", "sent":N,
// "now":N, "only_sent":[names], "only_now":[names], "changed":[{"name", "diff"}], "truncated",
// "error"}}}. Resources are equal when their serialized bytes are; "diff" is a unified diff of
// the two as JSON (bounded: common/line_diff.h), for at most kMaxDiffedResources per type.
// nullopt if the proxy is not connected.
inline constexpr size_t kMaxDiffedResources = 20;
std::optional<std::string> ProxyDiffJson(const AckLedger& ledger, PushPipeline& pipeline, const std::string& node_id,
                                         absl::Time now);

}  // namespace cxds
