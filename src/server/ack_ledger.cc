#include "server/ack_ledger.h"

#include <algorithm>

namespace cxds {

std::string_view FeedbackKindName(FeedbackKind kind) {
  switch (kind) {
    case FeedbackKind::kAck:
      return "ACK";
    case FeedbackKind::kNack:
      return "NACK";
    case FeedbackKind::kUnmatched:
      return "UNMATCHED";
  }
  return "UNKNOWN";
}

void AckLedger::OpenStream(int64_t stream_id, absl::Time now) {
  MutexLock lock(&mu_);
  streams_[stream_id].opened = now;
}

void AckLedger::SetNode(int64_t stream_id, const std::string& node_id, const std::string& identity) {
  MutexLock lock(&mu_);
  streams_[stream_id].node_id = node_id;
  streams_[stream_id].identity = identity;
}

void AckLedger::RecordSent(int64_t stream_id, const std::string& type_url, const std::string& nonce,
                           const std::string& version, size_t resources, absl::Time now, const SentResources& held) {
  // A SotW response's resources are copied (shared pointers, no bodies) before the lock, and
  // the type's previous ones are released after it: the lock is shared by every stream.
  std::vector<ResourcePtr> replaced;
  if (held.resources != nullptr && !held.incremental) {
    replaced.assign(held.resources->begin(), held.resources->begin() + static_cast<ptrdiff_t>(std::min(
                                                                           held.resources->size(), kMaxHeldResources)));
  }
  MutexLock lock(&mu_);
  TypeEntry& entry = streams_[stream_id].types[type_url];
  if (held.resources != nullptr && !held.incremental) {
    entry.held_sotw.swap(replaced);
    entry.held_delta.clear();  // a stream is one variant; kept apart for clarity
    entry.held_incremental = false;
    entry.held_truncated = held.resources->size() > kMaxHeldResources;
  } else if (held.resources != nullptr) {
    if (!entry.held_incremental) {
      // A SotW response of only what the client lacked (EDS, RDS) after a full one: what the
      // full one carried is still held.
      for (ResourcePtr& resource : entry.held_sotw) entry.held_delta.emplace(resource->name(), std::move(resource));
      entry.held_sotw.clear();
    }
    entry.held_incremental = true;
    if (held.removed != nullptr) {
      for (const std::string& name : *held.removed) entry.held_delta.erase(name);
    }
    for (const ResourcePtr& resource : *held.resources) {
      auto it = entry.held_delta.find(resource->name());
      if (it != entry.held_delta.end()) {
        it->second = resource;
      } else if (entry.held_delta.size() < kMaxHeldResources) {
        entry.held_delta.emplace(resource->name(), resource);
      } else {
        entry.held_truncated = true;
      }
    }
  }
  entry.status.type_url = type_url;
  entry.status.responses_sent++;
  entry.status.sent_version = version;
  entry.status.sent_nonce = nonce;
  entry.status.sent_resources = resources;
  entry.status.sent_time = now;
  entry.recent.push_back(SentRecord{next_seq_++, nonce, version});
  while (entry.recent.size() > kRememberedResponses) entry.recent.pop_front();
}

FeedbackEvent AckLedger::RecordFeedback(int64_t stream_id, const std::string& type_url, const std::string& nonce,
                                        const std::string& client_version, const std::string* error_message,
                                        int error_code, absl::Time now) {
  FeedbackEvent event;
  event.stream_id = stream_id;
  event.type_url = type_url;
  event.nonce = nonce;
  event.client_version = client_version;
  event.time = now;
  if (error_message != nullptr) {
    event.error = *error_message;
    event.error_code = error_code;
  }
  MutexLock lock(&mu_);
  auto stream_it = streams_.find(stream_id);
  if (stream_it == streams_.end()) {
    return event;
  }
  event.node_id = stream_it->second.node_id;
  auto type_it = stream_it->second.types.find(type_url);
  if (type_it == stream_it->second.types.end()) {
    return event;
  }
  TypeEntry& entry = type_it->second;
  const SentRecord* match = nullptr;
  for (const SentRecord& record : entry.recent) {
    if (record.nonce == nonce) match = &record;
  }
  if (match == nullptr) {
    return event;  // UNMATCHED: evicted, from another stream, or never sent
  }
  event.sent_version = match->version;
  event.stale = match != &entry.recent.back();
  if (error_message != nullptr) {
    event.kind = FeedbackKind::kNack;
    entry.status.nacks++;
    entry.status.last_nack = NackRecord{match->version, nonce, client_version, *error_message, now};
  } else {
    event.kind = FeedbackKind::kAck;
    entry.status.acks++;
    // Feedback can cross newer responses; only a newer response's ACK moves "accepted".
    if (match->seq > entry.acked_seq) {
      entry.acked_seq = match->seq;
      entry.status.acked_version = match->version;
      entry.status.acked_nonce = nonce;
      entry.status.acked_time = now;
    }
  }
  return event;
}

void AckLedger::ForgetType(int64_t stream_id, const std::string& type_url) {
  MutexLock lock(&mu_);
  auto it = streams_.find(stream_id);
  if (it != streams_.end()) it->second.types.erase(type_url);
}

void AckLedger::CloseStream(int64_t stream_id) {
  MutexLock lock(&mu_);
  streams_.erase(stream_id);
}

std::vector<HeldResources> AckLedger::Held(int64_t stream_id) const {
  std::vector<HeldResources> out;
  MutexLock lock(&mu_);
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return out;
  for (const auto& [type_url, entry] : it->second.types) {
    HeldResources held{type_url, entry.held_sotw, entry.held_incremental, entry.held_truncated};
    for (const auto& [name, resource] : entry.held_delta) held.resources.push_back(resource);
    out.push_back(std::move(held));
  }
  return out;
}

std::vector<StreamSyncStatus> AckLedger::AllStreams() const {
  MutexLock lock(&mu_);
  std::vector<StreamSyncStatus> out;
  out.reserve(streams_.size());
  for (const auto& [id, stream] : streams_) {
    StreamSyncStatus status{id, stream.node_id, stream.opened, {}, stream.identity};
    for (const auto& [type, entry] : stream.types) status.types.push_back(entry.status);
    out.push_back(std::move(status));
  }
  return out;
}

std::optional<StreamSyncStatus> AckLedger::GetStream(int64_t stream_id) const {
  MutexLock lock(&mu_);
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return std::nullopt;
  StreamSyncStatus status{stream_id, it->second.node_id, it->second.opened, {}, it->second.identity};
  for (const auto& [type, entry] : it->second.types) status.types.push_back(entry.status);
  return status;
}

}  // namespace cxds
