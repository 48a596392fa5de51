// The State-of-the-World stream state machine, independent of gRPC.
//
// One SotwStream serves one xDS stream: ADS (every type on one stream) or a per-type service.
// It classifies each request (request classes C1-C5 of docs/protocol-rules.md),
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
// Threading: see StreamCore. Responses are computed lazily, a round at a time: the responses
// due at one moment (at most one per type) are computed together and written back to back
// (StreamCore::WriteNextOfRound); the next round is computed when the last write of this one
// completes, so a slow client receives the newest state instead of a backlog.
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
#include "cache/config_watcher.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "protocol/subscription.h"
#include "protocol/type_url.h"
#include "server/ack_ledger.h"
#include "server/callbacks.h"
#include "server/response_encoding.h"
#include "server/stream_core.h"

namespace cxds {

// The transport under a SotW stream (gRPC in production, a fake in tests). Called only from
// the stream's event processing.
class StreamTransport : public TransportBase {
 public:
  // Starts writing `response`; completion is reported through SotwStream::OnWriteDone.
  // `more_follows`: the stream writes another response as soon as this one completes, so the
  // transport may hold this one back to send both together (gRPC's buffer hint). A response
  // written without it goes out at once, with anything held.
  virtual void WriteResponse(const OutgoingResponse& response, bool more_follows) = 0;
};

class SotwStream final : public StreamCore {
 public:
  // `fixed_type_url` is "" for ADS, or the type of a per-type discovery service.
  SotwStream(const StreamEnvironment& env, int64_t stream_id, std::string fixed_type_url, StreamTransport* transport);

  // A request from the client; any thread.
  void OnRequest(envoy::service::discovery::v3::DiscoveryRequest request) { EnqueueRequest(std::move(request)); }

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
    std::string last_nonce;                  // "" until a response is sent
    bool respond_in_full = true;             // the next response carries all subscribed resources
    absl::flat_hash_set<std::string> force;  // names to send even if the client has them
    bool always_respond = false;             // answer the next ACK (Envoy warming after reconnect)
    bool heartbeat_due = false;              // renew the TTLs of what the client holds
    bool dirty = false;                      // something may need sending
  };

  // StreamCore hooks. The core hands back only what OnRequest queued: a DiscoveryRequest.
  void HandleRequest(Request& request) override;
  void HandleChange(const ConfigChange& change) override;
  void SendNext() override;
  absl::Status RunRequestCallback(const Request& request) override;
  std::string ServiceName() const override;
  void HandleHeartbeat() override;
  absl::Status CheckLimits(const Request& request) const override;
  // Both features are needed to receive TTLs in SotW (docs/protocol-rules.md, R9).
  bool ClientSupportsSotwTtl() const { return ClientSupportsTtl() && ClientSupportsResourceInSotw(); }

  void Handle(envoy::service::discovery::v3::DiscoveryRequest& request);
  void HandleFeedback(const envoy::service::discovery::v3::DiscoveryRequest& request);
  // Applies the request's names; returns false if that unsubscribed from everything of a
  // non-wildcard type, which destroys `state`.
  bool ApplyNames(const std::string& type_url, TypeState& state,
                  const envoy::service::discovery::v3::DiscoveryRequest& request);
  std::optional<OutgoingResponse> Compute(const std::string& type_url, TypeState& state, const ConfigView& view);
  // What the client holds once `response` is sent (RecordSent follows when it is written).
  void AfterSend(const std::string& type_url, TypeState& state, const OutgoingResponse& response);

  StreamTransport* const transport_;
  TypeUrlMap<TypeState> types_;         // confined to event processing
  std::deque<OutgoingResponse> round_;  // computed, recorded as sent, not yet written
  uint64_t nonce_seq_ = 0;
};

}  // namespace cxds
