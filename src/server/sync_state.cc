#include "server/sync_state.h"

#include <algorithm>

#include "common/strings.h"

namespace cxds {
namespace {

constexpr size_t kErrorBytes = 200;

std::string FirstLine(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  if (line.size() <= kErrorBytes) return std::string(line);
  return StrCat(line.substr(0, kErrorBytes), "…");
}

}  // namespace

std::string_view TypeStateName(TypeState state) {
  switch (state) {
    case TypeState::kSynced:
      return "SYNCED";
    case TypeState::kNotSent:
      return "NOT SENT";
    case TypeState::kStale:
      return "STALE";
    case TypeState::kNacked:
      return "NACK";
  }
  return "?";
}

TypeStatusCell ClassifyType(const TypeSyncStatus& status, absl::Time now) {
  TypeStatusCell cell;
  if (status.responses_sent == 0) return cell;  // NOT SENT
  cell.sent_version = status.sent_version;
  if (status.last_nack.has_value() && status.last_nack->nonce == status.sent_nonce) {
    cell.state = TypeState::kNacked;
    cell.error = FirstLine(status.last_nack->error);
    cell.accepted = status.last_nack->accepted_version;
  } else if (status.synced()) {
    cell.state = TypeState::kSynced;
  } else {
    cell.state = TypeState::kStale;
    cell.age =
        status.sent_time.has_value() ? std::max(absl::ZeroDuration(), now - *status.sent_time) : absl::ZeroDuration();
  }
  return cell;
}

}  // namespace cxds
