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

AckLedger::StreamHandle AckLedger::Find(int64_t stream_id) const {
  MutexLock lock(&mu_);
  auto it = streams_.find(stream_id);
  return it != streams_.end() ? it->second : nullptr;
}

AckLedger::StreamHandle AckLedger::FindOrOpen(int64_t stream_id) {
  MutexLock lock(&mu_);
  StreamHandle& stream = streams_[stream_id];
  if (stream == nullptr) stream = std::make_shared<Stream>(stream_id);
  return stream;
}

AckLedger::StreamHandle AckLedger::OpenStream(int64_t stream_id, absl::Time now) {
  StreamHandle stream = FindOrOpen(stream_id);
  MutexLock lock(&stream->mu_);
  stream->opened_ = now;
  return stream;
}

void AckLedger::SetNode(int64_t stream_id, const std::string& node_id, const std::string& identity) {
  SetNode(*FindOrOpen(stream_id), node_id, identity);
}

void AckLedger::SetNode(Stream& stream, const std::string& node_id, const std::string& identity) {
  MutexLock lock(&stream.mu_);
  stream.node_id_ = node_id;
  stream.identity_ = identity;
}

void AckLedger::RecordSent(int64_t stream_id, const std::string& type_url, const std::string& nonce,
                           const std::string& version, size_t resources, absl::Time now, const SentResources& held) {
  RecordSent(*FindOrOpen(stream_id), type_url, nonce, version, resources, now, held);
}

void AckLedger::RecordSent(Stream& stream, const std::string& type_url, const std::string& nonce,
                           const std::string& version, size_t resources, absl::Time now, const SentResources& held) {
  // A response's resources are copied (shared pointers, no bodies) and sorted before the lock,
  // and what they replace is released after it: status readers wait on the lock.
  const auto by_name = [](const ResourcePtr& a, const ResourcePtr& b) { return a->name() < b->name(); };
  std::vector<ResourcePtr> replaced;
  std::vector<ResourcePtr> incoming;
  std::vector<std::string> removed;
  if (held.resources != nullptr && !held.incremental) {
    replaced.assign(held.resources->begin(), held.resources->begin() + static_cast<ptrdiff_t>(std::min(
                                                                           held.resources->size(), kMaxHeldResources)));
  } else if (held.resources != nullptr) {
    incoming = *held.resources;
    std::stable_sort(incoming.begin(), incoming.end(), by_name);
    if (held.removed != nullptr) removed = *held.removed;
    std::sort(removed.begin(), removed.end());
  }
  MutexLock lock(&stream.mu_);
  TypeEntry& entry = stream.types_[type_url];
  if (held.resources != nullptr && !held.incremental) {
    entry.held_sotw.swap(replaced);
    entry.held_delta.swap(incoming);  // a stream is one variant; kept apart for clarity
    entry.held_incremental = false;
    entry.held_truncated = held.resources->size() > kMaxHeldResources;
  } else if (held.resources != nullptr) {
    if (!entry.held_incremental) {
      // A SotW response of only what the client lacked (EDS, RDS) after a full one: what the
      // full one carried is still held.
      entry.held_delta.swap(entry.held_sotw);
      std::sort(entry.held_delta.begin(), entry.held_delta.end(), by_name);
      entry.held_sotw.clear();
    }
    entry.held_incremental = true;
    if (incoming.size() + removed.size() <= kInPlaceUpdates) {
      // A few changes (an endpoint update): in place, moving pointers, not copying them all.
      for (const std::string& name : removed) {
        auto it = std::lower_bound(entry.held_delta.begin(), entry.held_delta.end(), name,
                                   [](const ResourcePtr& r, const std::string& n) { return r->name() < n; });
        if (it != entry.held_delta.end() && (*it)->name() == name) entry.held_delta.erase(it);
      }
      for (ResourcePtr& resource : incoming) {
        auto it = std::lower_bound(entry.held_delta.begin(), entry.held_delta.end(), resource, by_name);
        if (it != entry.held_delta.end() && (*it)->name() == resource->name()) {
          it->swap(resource);  // the old one is released after the lock
        } else if (entry.held_delta.size() < kMaxHeldResources) {
          entry.held_delta.insert(it, std::move(resource));
        } else {
          entry.held_truncated = true;
        }
      }
    } else {
      // Many: one merge of what was held with the response (its resources win), less what it
      // removed.
      const auto gone = [&](const ResourcePtr& r) {
        return std::binary_search(removed.begin(), removed.end(), r->name());
      };
      replaced.reserve(std::min(kMaxHeldResources, entry.held_delta.size() + incoming.size()));
      auto held_it = entry.held_delta.begin();
      auto in_it = incoming.begin();
      while (held_it != entry.held_delta.end() || in_it != incoming.end()) {
        const bool take_incoming =
            held_it == entry.held_delta.end() || (in_it != incoming.end() && (*in_it)->name() <= (*held_it)->name());
        ResourcePtr next;
        if (take_incoming) {
          if (held_it != entry.held_delta.end() && (*held_it)->name() == (*in_it)->name()) ++held_it;  // replaced
          next = *in_it++;
          while (in_it != incoming.end() && (*in_it)->name() == next->name()) next = *in_it++;  // the last wins
        } else {
          next = *held_it++;
          if (gone(next)) continue;
        }
        if (replaced.size() < kMaxHeldResources) {
          replaced.push_back(std::move(next));
        } else {
          entry.held_truncated = true;
        }
      }
      entry.held_delta.swap(replaced);
    }
  }
  entry.status.type_url = type_url;
  entry.status.responses_sent++;
  entry.status.sent_version = version;
  entry.status.sent_nonce = nonce;
  entry.status.sent_resources = resources;
  entry.status.sent_time = now;
  entry.recent.push_back(SentRecord{stream.next_seq_++, nonce, version});
  while (entry.recent.size() > kRememberedResponses) entry.recent.pop_front();
}

FeedbackEvent AckLedger::RecordFeedback(int64_t stream_id, const std::string& type_url, const std::string& nonce,
                                        const std::string& client_version, const std::string* error_message,
                                        int error_code, absl::Time now) {
  StreamHandle stream = Find(stream_id);
  if (stream == nullptr) {
    Stream unknown(stream_id);  // records nothing: the feedback is UNMATCHED
    return RecordFeedback(unknown, type_url, nonce, client_version, error_message, error_code, now);
  }
  return RecordFeedback(*stream, type_url, nonce, client_version, error_message, error_code, now);
}

FeedbackEvent AckLedger::RecordFeedback(Stream& stream, const std::string& type_url, const std::string& nonce,
                                        const std::string& client_version, const std::string* error_message,
                                        int error_code, absl::Time now) {
  FeedbackEvent event;
  event.stream_id = stream.id_;
  event.type_url = type_url;
  event.nonce = nonce;
  event.client_version = client_version;
  event.time = now;
  if (error_message != nullptr) {
    event.error = *error_message;
    event.error_code = error_code;
  }
  MutexLock lock(&stream.mu_);
  event.node_id = stream.node_id_;
  auto type_it = stream.types_.find(type_url);
  if (type_it == stream.types_.end()) {
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
  if (StreamHandle stream = Find(stream_id); stream != nullptr) ForgetType(*stream, type_url);
}

void AckLedger::ForgetType(Stream& stream, const std::string& type_url) {
  MutexLock lock(&stream.mu_);
  stream.types_.erase(type_url);
}

void AckLedger::CloseStream(int64_t stream_id) {
  MutexLock lock(&mu_);
  streams_.erase(stream_id);
}

std::vector<HeldResources> AckLedger::Held(int64_t stream_id) const {
  std::vector<HeldResources> out;
  StreamHandle stream = Find(stream_id);
  if (stream == nullptr) return out;
  MutexLock lock(&stream->mu_);
  for (const auto& [type_url, entry] : stream->types_) {
    HeldResources held{type_url, entry.held_sotw, entry.held_incremental, entry.held_truncated};
    held.resources.insert(held.resources.end(), entry.held_delta.begin(), entry.held_delta.end());
    out.push_back(std::move(held));
  }
  // The map orders type URLs by length (TypeUrlMap); readers get them in type URL order.
  std::sort(out.begin(), out.end(),
            [](const HeldResources& a, const HeldResources& b) { return a.type_url < b.type_url; });
  return out;
}

StreamSyncStatus AckLedger::StatusOf(const Stream& stream) {
  MutexLock lock(&stream.mu_);
  StreamSyncStatus status{stream.id_, stream.node_id_, stream.opened_, {}, stream.identity_};
  for (const auto& [type, entry] : stream.types_) status.types.push_back(entry.status);
  std::sort(status.types.begin(), status.types.end(),
            [](const TypeSyncStatus& a, const TypeSyncStatus& b) { return a.type_url < b.type_url; });
  return status;
}

std::vector<StreamSyncStatus> AckLedger::AllStreams() const {
  // The handles are taken under the ledger's lock, each stream read under its own: streams
  // keep recording meanwhile.
  std::vector<StreamHandle> streams;
  {
    MutexLock lock(&mu_);
    streams.reserve(streams_.size());
    for (const auto& [id, stream] : streams_) streams.push_back(stream);
  }
  std::vector<StreamSyncStatus> out;
  out.reserve(streams.size());
  for (const StreamHandle& stream : streams) out.push_back(StatusOf(*stream));
  return out;
}

std::optional<StreamSyncStatus> AckLedger::GetStream(int64_t stream_id) const {
  StreamHandle stream = Find(stream_id);
  if (stream == nullptr) return std::nullopt;
  return StatusOf(*stream);
}

}  // namespace cxds
