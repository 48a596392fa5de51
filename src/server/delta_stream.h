// The Delta (incremental) xDS stream state machine, independent of gRPC.
//
// Per type it keeps the subscription (DeltaSubscription) and what the client holds, name by
// name, with the content version it holds (Resource::content_version, a hash of the
// deterministic bytes, equal across processes). The rules (ids from docs/protocol-rules.md):
//  - subscription changes are applied before the nonce is judged: a stale nonce never loses a
//    subscribe or unsubscribe (R3.2);
//  - legacy and explicit "*" wildcard with the exact transitions (R10.4);
//  - initial_resource_versions on the first request of a type: unchanged names are skipped,
//    changed ones sent, ones that are gone listed in removed_resources (R10.5);
//  - a subscribed name that does not exist is reported in removed_resources (R7.3);
//  - a name in resource_names_subscribe is always sent, even if the client should have it
//    (R10.2);
//  - unsubscribing an explicit name while "*" is subscribed is answered with the resource or
//    its removal (R10.3);
//  - a NACK is recorded and never causes the same content to be sent again (R10.8);
//  - after a CDS response, EDS for its clusters follows (Envoy warming, E57).
// Pushes are truly incremental: a configuration change is looked at only for the names it
// changed, and only resources whose content the client lacks are sent.
//
// Threading: see StreamCore.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "protocol/subscription.h"
#include "protocol/type_url.h"
#include "server/known_versions.h"
#include "server/response_encoding.h"
#include "server/stream_core.h"

namespace cxds {

// The transport under a delta stream. Called only from the stream's event processing.
class DeltaTransport : public TransportBase {
 public:
  // Starts writing `response`; completion is reported through DeltaStream::OnWriteDone.
  // `more_follows` as for StreamTransport::WriteResponse.
  virtual void WriteResponse(const OutgoingDeltaResponse& response, bool more_follows) = 0;
};

class DeltaStream final : public StreamCore {
 public:
  // `fixed_type_url` is "" for delta ADS, or the type of a per-type delta service.
  DeltaStream(const StreamEnvironment& env, int64_t stream_id, std::string fixed_type_url, DeltaTransport* transport);

  // A request from the client; any thread.
  void OnRequest(envoy::service::discovery::v3::DeltaDiscoveryRequest request) { EnqueueRequest(std::move(request)); }

 private:
  struct TypeState {
    explicit TypeState(const std::string& type_url) : subscription(type_url) {}
    DeltaSubscription subscription;
    // name -> content version the client holds (from initial_resource_versions and from what
    // it was sent).
    KnownVersions known;
    // Names to send even if the client holds them, or to report removed if they do not exist.
    absl::flat_hash_set<std::string> force;
    // Subscribed names that do not exist and were already reported removed.
    absl::flat_hash_set<std::string> reported_absent;
    // Names a change or a request asks to look at; all of them if `pending_all`.
    absl::flat_hash_set<std::string> pending;
    bool pending_all = false;
    bool reply_even_if_empty = false;  // a wildcard request without nonce gets an answer
    bool heartbeat_due = false;
    std::string last_nonce;
    bool dirty = false;
  };

  // StreamCore hooks. The core hands back only what OnRequest queued: a DeltaDiscoveryRequest.
  void HandleRequest(Request& request) override;
  void HandleChange(const ConfigChange& change) override;
  void SendNext() override;
  absl::Status RunRequestCallback(const Request& request) override;
  std::string ServiceName() const override;
  void HandleHeartbeat() override;
  absl::Status CheckLimits(const Request& request) const override;

  void Handle(envoy::service::discovery::v3::DeltaDiscoveryRequest& request);
  void UpdateInterest(const std::string& type_url, const TypeState& state);
  std::optional<OutgoingDeltaResponse> Compute(const std::string& type_url, TypeState& state, const ConfigView& view);
  // What the client holds once `response` is sent (RecordSent follows when it is written).
  void AfterSend(const std::string& type_url, TypeState& state, const OutgoingDeltaResponse& response);
  // TTL'd resources of `type_url` the client holds at their current content.
  std::vector<ResourcePtr> HeldTtlResources(const std::string& type_url, const TypeState& state,
                                            const ConfigView& view) const;

  DeltaTransport* const transport_;
  TypeUrlMap<TypeState> types_;              // confined to event processing
  std::deque<OutgoingDeltaResponse> round_;  // computed, recorded as sent, not yet written (see SotwStream)
  uint64_t nonce_seq_ = 0;
};

}  // namespace cxds
