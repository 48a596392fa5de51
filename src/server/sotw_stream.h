// The State-of-the-World stream state machine, independent of gRPC.
//
// One SotwStream serves one xDS stream: ADS (every type on one stream) or a per-type service.
// It classifies each request (xds-protocol section 2; seed 004's ShouldRespond, corrected),
// keeps per type what the client subscribes to and what it has been sent, and decides what to
// send when a request or a configuration change asks for it:
//  - NACK (error_detail set): recorded, never answered with the same content again;
//  - the first request for a type on the stream is initial, whatever its nonce;
//  - a stale nonce is ignored; an ACK without a subscription change gets no response;
//  - newly subscribed names are sent even at an unchanged version;
//  - LDS/CDS responses carry the full subscribed state; an empty name list unsubscribes other
//    types (and the legacy wildcard sequence applies to LDS/CDS);
//  - on ADS, pending responses go out in the order CDS, EDS, LDS, RDS, SDS, and a cluster whose
//    content changed is followed by its EDS.
//
// Threading and ownership: events (requests, write completions, configuration changes) may
// arrive on any thread. They are queued and processed by one thread at a time (whichever
// delivered an event while none was processing), requests before pushes (seed 004, L07).
// All per-stream protocol state is touched only by that processing, so it needs no lock; the
// transport is driven only from it, and at most one write is outstanding (one writer per
// stream). Responses are computed lazily when the previous write completes, so a slow client
// receives the newest state instead of a backlog.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "common/mutex.h"
#include "cache/config_watcher.h"
#include "common/clock.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "protocol/subscription.h"
#include "server/ack_ledger.h"
#include "server/callbacks.h"
#include "server/response_encoding.h"

namespace cxds {

// The transport under a stream (gRPC in production, a fake in tests). Called only from the
// stream's event processing.
class StreamTransport {
 public:
  virtual ~StreamTransport() = default;
  // Starts reading the next request (at most one read is outstanding).
  virtual void ReadNext() = 0;
  // Starts writing `response`; completion is reported through SotwStream::OnWriteDone.
  virtual void WriteResponse(const OutgoingResponse& response) = 0;
  // Ends the stream. No read or write follows.
  virtual void FinishStream(const absl::Status& status) = 0;
};

// What every stream of a server shares.
struct StreamEnvironment {
  ConfigWatcher* watcher = nullptr;
  AckLedger* ledger = nullptr;
  ServerCallbacks* callbacks = nullptr;  // may be null
  Clock* clock = nullptr;
  std::string control_plane_id;
};

class SotwStream {
 public:
  // `fixed_type_url` is "" for ADS, or the type of a per-type discovery service.
  SotwStream(const StreamEnvironment& env, int64_t stream_id, std::string fixed_type_url,
             StreamTransport* transport);
  ~SotwStream();
  SotwStream(const SotwStream&) = delete;
  SotwStream& operator=(const SotwStream&) = delete;

  // Runs the open callback and starts reading. Call once, before any other event.
  void Start();
  // Transport events; any thread.
  void OnRequest(envoy::service::discovery::v3::DiscoveryRequest request);
  void OnReadsDone();  // the client closed its side, or reading failed
  void OnMalformedRequest(absl::Status status);  // ends the stream with `status`
  void OnWriteDone(bool ok);
  // The transport is finished: cancels the watch, drops the ledger entries, runs the closed
  // callback. Waits for event processing running on another thread to stop. Call once.
  void Close();

  int64_t id() const { return stream_id_; }

 private:
  // Per type URL: subscription and what the client holds.
  struct TypeState {
    explicit TypeState(const std::string& type_url) : subscription(type_url) {}
    SotwSubscription subscription;
    // name -> content version of what this client was last sent (what it holds, as far as the
    // server knows). Names leave it when unsubscribed, so a re-subscription is sent again.
    absl::flat_hash_map<std::string, std::string> known;
    bool sent_any = false;
    std::string sent_version;
    std::string last_nonce;           // "" until a response is sent
    bool respond_in_full = true;      // the next response carries all subscribed resources
    absl::flat_hash_set<std::string> force;  // names to send even if the client has them
    bool always_respond = false;      // answer the next ACK (Envoy warming after reconnect)
    bool dirty = false;               // something may need sending
  };

  void Kick();
  void HandleRequest(envoy::service::discovery::v3::DiscoveryRequest& request);
  void HandleFeedback(const envoy::service::discovery::v3::DiscoveryRequest& request);
  void ApplyNames(const std::string& type_url, TypeState& state,
                  const envoy::service::discovery::v3::DiscoveryRequest& request);
  void MarkAllDirty();
  void SendNext();
  std::optional<OutgoingResponse> Compute(const std::string& type_url, TypeState& state,
                                          const Snapshot& snapshot);
  void AfterSend(const std::string& type_url, TypeState& state, const OutgoingResponse& response);
  void EndStream(const absl::Status& status);

  const StreamEnvironment env_;
  const int64_t stream_id_;
  const std::string fixed_type_url_;
  StreamTransport* const transport_;

  // Event queue, shared between threads.
  Mutex mu_;
  std::deque<envoy::service::discovery::v3::DiscoveryRequest> requests_ ABSL_GUARDED_BY(mu_);
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> transport_error_ ABSL_GUARDED_BY(mu_);
  int writes_done_ ABSL_GUARDED_BY(mu_) = 0;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool config_changed_ ABSL_GUARDED_BY(mu_) = false;
  bool processing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;

  // Protocol state, confined to event processing (see the class comment).
  bool node_bound_ = false;
  envoy::config::core::v3::Node node_;
  std::unique_ptr<ConfigWatcher::Watch> watch_;
  std::map<std::string, TypeState> types_;
  bool write_in_flight_ = false;
  bool finished_ = false;
  uint64_t nonce_seq_ = 0;
};

}  // namespace cxds
