// The ACK/NACK ledger: the record of what each stream was sent and what it said about it.
//
// "Pushed" is not "accepted". Every response is recorded under (stream id, type URL, nonce)
// with its version. A client's feedback is matched by that same key, never by nonce alone
// (nonces may repeat across streams) and never by version:
//  - an ACK records the version of the matched response as accepted;
//  - a NACK records its error and the version the client says it still uses; the NACK's
//    version_info is never taken as newly accepted;
//  - feedback that matches no recorded response is UNMATCHED, never guessed to be an ACK.
// A stream's entries are dropped when it closes.
//
// Thread-safe: streams record concurrently; status readers take a copy, consistent per stream.
// A stream records through the handle OpenStream gave it: its own lock, no search among the
// other streams (the ledger-wide lock guards only which streams exist).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "protocol/resource.h"
#include "protocol/type_url.h"

namespace cxds {

enum class FeedbackKind { kAck, kNack, kUnmatched };
std::string_view FeedbackKindName(FeedbackKind kind);  // "ACK", "NACK", "UNMATCHED"

struct FeedbackEvent {
  FeedbackKind kind = FeedbackKind::kUnmatched;
  int64_t stream_id = 0;
  std::string node_id;
  std::string type_url;
  std::string nonce;
  std::string client_version;  // version_info of the request: for a NACK, what the client still uses
  std::string sent_version;    // version of the matched response ("" when unmatched)
  std::string error;           // error_detail.message of a NACK
  int error_code = 0;          // error_detail.code of a NACK
  bool stale = false;          // matched a response older than the newest sent for the type
  absl::Time time;
};

struct NackRecord {
  std::string sent_version;  // the rejected version
  std::string nonce;
  std::string accepted_version;  // what the client reported it still uses
  std::string error;
  absl::Time time;
};

struct TypeSyncStatus {
  std::string type_url;
  uint64_t responses_sent = 0;
  std::string sent_version;
  std::string sent_nonce;
  size_t sent_resources = 0;
  std::optional<absl::Time> sent_time;
  std::string acked_version;
  std::string acked_nonce;
  std::optional<absl::Time> acked_time;
  std::optional<NackRecord> last_nack;
  uint64_t acks = 0;
  uint64_t nacks = 0;

  // The newest response was ACKed.
  bool synced() const { return responses_sent > 0 && acked_nonce == sent_nonce; }
};

// What one response changed in what its client holds (for the client status, CSDS): a SotW
// response replaces the type's resources with its own; an incremental one (Delta, or a SotW
// response of a type like EDS that carried only what the client lacked) adds or replaces its
// resources and drops the names it removed.
struct SentResources {
  const std::vector<ResourcePtr>* resources = nullptr;  // null: the response changes nothing held
  const std::vector<std::string>* removed = nullptr;
  bool incremental = false;
};

// What a stream's client holds of one type, as far as the server knows (sent, whatever the
// client said about it): shared resources, never copies.
struct HeldResources {
  std::string type_url;
  std::vector<ResourcePtr> resources;  // SotW: in the response's order; Delta: by name
  bool incremental = false;            // from Delta responses (versions are per resource)
  bool truncated = false;              // more than AckLedger::kMaxHeldResources were held
};

struct StreamSyncStatus {
  int64_t stream_id = 0;
  std::string node_id;
  absl::Time opened;
  std::vector<TypeSyncStatus> types;  // in type URL order
  std::string identity;               // the authenticated peer (SPIFFE id), or "none"
};

class AckLedger {
 public:
  // How many recent responses per (stream, type) can still be matched by feedback.
  static constexpr size_t kRememberedResponses = 16;

  // One stream's records. Opaque; the stream core keeps the handle for the stream's life.
  class Stream;
  using StreamHandle = std::shared_ptr<Stream>;

  // Opens (or, for an id already open, reopens) the stream's records.
  StreamHandle OpenStream(int64_t stream_id, absl::Time now);
  // `identity`: the client's authenticated identity as logs show it (PeerIdentity::Describe).
  void SetNode(int64_t stream_id, const std::string& node_id, const std::string& identity = "none");
  void SetNode(Stream& stream, const std::string& node_id, const std::string& identity = "none");
  // How many resources per (stream, type) are kept for the client status; beyond, the rest
  // are dropped and the type says so (a bound on what a stream can make the ledger hold).
  static constexpr size_t kMaxHeldResources = 10'000;
  // An incremental response of at most this many changes updates what is held in place; a
  // larger one is merged in one pass.
  static constexpr size_t kInPlaceUpdates = 64;

  void RecordSent(int64_t stream_id, const std::string& type_url, const std::string& nonce, const std::string& version,
                  size_t resources, absl::Time now, const SentResources& held = {});
  void RecordSent(Stream& stream, const std::string& type_url, const std::string& nonce, const std::string& version,
                  size_t resources, absl::Time now, const SentResources& held = {});
  // Matches feedback (a request with a non-empty response_nonce) against what was sent.
  // `error_message` is set for a NACK (a request with error_detail).
  FeedbackEvent RecordFeedback(int64_t stream_id, const std::string& type_url, const std::string& nonce,
                               const std::string& client_version, const std::string* error_message, int error_code,
                               absl::Time now);
  FeedbackEvent RecordFeedback(Stream& stream, const std::string& type_url, const std::string& nonce,
                               const std::string& client_version, const std::string* error_message, int error_code,
                               absl::Time now);
  // Drops one type of a stream from the status (SotW unsubscribe from everything).
  void ForgetType(int64_t stream_id, const std::string& type_url);
  void ForgetType(Stream& stream, const std::string& type_url);
  void CloseStream(int64_t stream_id);

  std::vector<StreamSyncStatus> AllStreams() const;
  // What the stream's client holds, per type (type URL order); empty for an unknown stream.
  std::vector<HeldResources> Held(int64_t stream_id) const;
  std::optional<StreamSyncStatus> GetStream(int64_t stream_id) const;

 private:
  struct SentRecord {
    uint64_t seq;
    std::string nonce;
    std::string version;
  };
  struct TypeEntry {
    TypeSyncStatus status;
    std::deque<SentRecord> recent;  // newest last
    uint64_t acked_seq = 0;
    // What the client holds (SentResources): the newest SotW response's resources, or what
    // Delta responses sent and did not remove since, by name.
    std::vector<ResourcePtr> held_sotw;
    std::vector<ResourcePtr> held_delta;  // sorted by name: 16 bytes a resource, not a map node
    bool held_incremental = false;
    bool held_truncated = false;
  };

  StreamHandle Find(int64_t stream_id) const;  // null for a stream not open
  StreamHandle FindOrOpen(int64_t stream_id);
  static StreamSyncStatus StatusOf(const Stream& stream);

  mutable Mutex mu_;
  std::map<int64_t, StreamHandle> streams_ ABSL_GUARDED_BY(mu_);
};

class AckLedger::Stream {
 public:
  explicit Stream(int64_t id) : id_(id) {}

 private:
  friend class AckLedger;
  const int64_t id_;
  mutable Mutex mu_;
  std::string node_id_ ABSL_GUARDED_BY(mu_);
  std::string identity_ ABSL_GUARDED_BY(mu_) = "none";
  absl::Time opened_ ABSL_GUARDED_BY(mu_);
  TypeUrlMap<TypeEntry> types_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;  // orders the stream's responses
};

}  // namespace cxds
