// Proxy status: what `cxds proxy-status` shows, in istioctl's words, from the ACK/NACK ledger.
// For each proxy stream and each of CDS, LDS, EDS and RDS:
//   SYNCED    the newest response of the type was ACKed;
//   NOT SENT  nothing of the type was sent (not subscribed, or nothing to send yet);
//   STALE     the newest response was sent and not answered yet (with its age);
//   NACK      the newest response was NACKed (with the first line of the client's error).
// "Pushed" is not "accepted": a type is SYNCED only when the proxy said so for what it was
// sent last. The admin page /debug/proxy_status serves these rows as JSON (ProxyStatusJson);
// the CLI renders them as a table (cmd/cxds/proxy_status.cc).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "server/ack_ledger.h"

namespace cxds {

enum class TypeState { kSynced, kNotSent, kStale, kNacked };
std::string_view TypeStateName(TypeState state);  // "SYNCED", "NOT SENT", "STALE", "NACK"

struct TypeStatusCell {
  TypeState state = TypeState::kNotSent;
  std::string sent_version;  // of the newest response ("" if none)
  absl::Duration age;        // kStale: since the newest response was sent
  std::string error;         // kNacked: the first line of the client's error, cut to 200 bytes
  std::string accepted;      // kNacked: the version the client said it still uses
};

// The four columns, in istioctl's order.
inline constexpr std::array<std::string_view, 4> kProxyStatusTypes = {"CDS", "LDS", "EDS", "RDS"};

struct ProxyStatusRow {
  std::string node;
  int64_t stream_id = 0;
  std::string identity;
  std::array<TypeStatusCell, 4> types;  // kProxyStatusTypes order
};

// One type's cell from the ledger's status of it; `now` for the age of a STALE response.
TypeStatusCell ClassifyType(const TypeSyncStatus& status, absl::Time now);
// A row per stream, sorted by node then stream.
std::vector<ProxyStatusRow> ProxyStatusRows(const std::vector<StreamSyncStatus>& streams, absl::Time now);
// {"cxds_version":..., "push_version":..., "proxies":[{"node","stream","identity","CDS":{"state",
// "sent_version","age_ms","error","accepted"},...}]}; strings quoted as valid JSON.
std::string ProxyStatusJson(const std::vector<ProxyStatusRow>& rows, std::string_view push_version);

}  // namespace cxds
