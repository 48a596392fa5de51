// The sync state of one type on one stream, in istioctl's words, from the ACK/NACK ledger:
//   SYNCED    the newest response of the type was ACKed;
//   NOT SENT  nothing of the type was sent (not subscribed, or nothing to send yet);
//   STALE     the newest response was sent and not answered yet (with its age);
//   NACK      the newest response was NACKed (with the first line of the client's error).
// "Pushed" is not "accepted": a type is SYNCED only when the proxy said so for what it was
// sent last. `cxds proxy-status` (admin/proxy_status.h) and CSDS (server/csds_service.h) both
// report it.
#pragma once

#include <string>
#include <string_view>

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

// One type's cell from the ledger's status of it; `now` for the age of a STALE response.
TypeStatusCell ClassifyType(const TypeSyncStatus& status, absl::Time now);

}  // namespace cxds
