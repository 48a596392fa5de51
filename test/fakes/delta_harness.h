// A DeltaStream on a fake transport, driven from the test thread (as StreamHarness for SotW),
// and a delta client that keeps its state exactly as the protocol describes: the resources it
// holds with their versions, updated by every response (resources added or replaced,
// removed_resources dropped), so tests can check the state a client ends with.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cache/snapshot_cache.h"
#include "common/clock.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "fakes/inline_dispatcher.h"
#include "fakes/served_from.h"
#include "server/ack_ledger.h"
#include "server/delta_stream.h"

namespace cxds::testing {

using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using envoy::service::discovery::v3::DeltaDiscoveryResponse;

class FakeDeltaTransport final : public DeltaTransport {
 public:
  // The stream asks for the next request after taking one: what it had written by then.
  void ReadNext() override { writes_at_read.push_back(writes.size()); }
  void WriteResponse(const OutgoingDeltaResponse& response, bool more_follows) override {
    writes.push_back(ToDeltaDiscoveryResponse(response, "cxds"));
    more_follows_flags.push_back(more_follows);
    encoded_bytes += EncodeDeltaResponse(response, "cxds").Length();
    for (const ResourcePtr& resource : response.resources) resource_bytes += resource->serialized().size();
    write_in_flight = true;
  }
  void FinishStream(const absl::Status& status) override { finished = status; }

  std::vector<DeltaDiscoveryResponse> writes;
  std::vector<bool> more_follows_flags;  // one per write
  std::vector<size_t> writes_at_read;    // writes.size() at each ReadNext
  std::optional<absl::Status> finished;
  bool write_in_flight = false;
  size_t encoded_bytes = 0;   // every response, on the wire
  size_t resource_bytes = 0;  // serialized resource bodies only
};

inline DeltaDiscoveryRequest DeltaRequest(const std::string& type_url, std::vector<std::string> subscribe,
                                          std::vector<std::string> unsubscribe = {}, const std::string& nonce = "",
                                          std::map<std::string, std::string> initial = {}) {
  DeltaDiscoveryRequest request;
  request.set_type_url(type_url);
  for (auto& name : subscribe) request.add_resource_names_subscribe(std::move(name));
  for (auto& name : unsubscribe) request.add_resource_names_unsubscribe(std::move(name));
  request.set_response_nonce(nonce);
  for (auto& [name, version] : initial) (*request.mutable_initial_resource_versions())[name] = version;
  return request;
}

// What a delta client holds for one type: name -> version (and the resource bytes).
struct HeldResource {
  std::string version;
  std::string bytes;
};
using HeldState = std::map<std::string, HeldResource>;

class DeltaHarness {
 public:
  explicit DeltaHarness(ServedFrom source, const std::string& node_id = "node-a", int64_t stream_id = 1,
                        std::vector<std::string> client_features = {}, Scheduler* scheduler = nullptr,
                        absl::Duration heartbeat_interval = absl::ZeroDuration(), PushObserver* observer = nullptr,
                        StreamLimits limits = {})
      : own_dispatcher_(InlineDispatcher()),
        env_{source.watcher,
             &ledger_,
             nullptr,
             &clock_,
             "cxds",
             scheduler,
             heartbeat_interval,
             own_dispatcher_.get(),
             observer,
             nullptr,
             nullptr,
             nullptr,
             limits,
             absl::ZeroDuration(),
             nullptr,
             source.generator},
        node_id_(node_id),
        features_(std::move(client_features)),
        stream_(env_, stream_id, "", &transport_) {
    stream_.Start();
  }
  ~DeltaHarness() { Close(); }

  void Send(DeltaDiscoveryRequest request) {
    // A client drops what it unsubscribes from (a wildcard it leaves is the server's to resolve).
    for (const auto& name : request.resource_names_unsubscribe()) {
      if (name != "*") held_[request.type_url()].erase(name);
    }
    if (!sent_first_) {
      request.mutable_node()->set_id(node_id_);
      for (const auto& feature : features_) request.mutable_node()->add_client_features(feature);
      sent_first_ = true;
      reads_before_first_send_ = transport_.writes_at_read.size();
    }
    sent_++;
    stream_.OnRequest(std::move(request));
  }
  // How many requests Send passed to the stream.
  size_t sent() const { return sent_; }
  // How many responses the stream had written when it took request `index` (0-based, in Send
  // order), or nullopt if it has not taken it yet (a request waits while a round is written).
  std::optional<size_t> WritesWhenTaken(size_t index) const {
    const size_t read = reads_before_first_send_ + index;  // the read asked for after taking it
    if (!sent_first_ || read >= transport_.writes_at_read.size()) return std::nullopt;
    return transport_.writes_at_read[read];
  }
  // Completes outstanding writes; returns new responses and applies them to the client state.
  std::vector<DeltaDiscoveryResponse> Take() {
    while (transport_.write_in_flight && !transport_.finished.has_value()) {
      transport_.write_in_flight = false;
      stream_.OnWriteDone(true);
    }
    std::vector<DeltaDiscoveryResponse> out(transport_.writes.begin() + taken_, transport_.writes.end());
    taken_ = transport_.writes.size();
    for (const auto& response : out) Apply(response);
    return out;
  }
  // ACKs `response` (a request naming its nonce, with optional subscription changes).
  void Ack(const DeltaDiscoveryResponse& response, std::vector<std::string> subscribe = {},
           std::vector<std::string> unsubscribe = {}) {
    Send(DeltaRequest(response.type_url(), std::move(subscribe), std::move(unsubscribe), response.nonce()));
  }
  void Nack(const DeltaDiscoveryResponse& response, const std::string& error) {
    DeltaDiscoveryRequest request = DeltaRequest(response.type_url(), {}, {}, response.nonce());
    request.mutable_error_detail()->set_code(3);
    request.mutable_error_detail()->set_message(error);
    Send(std::move(request));
  }
  // Takes every response and ACKs each, until the server has nothing more to say.
  void Settle() {
    for (int round = 0; round < 100; ++round) {
      std::vector<DeltaDiscoveryResponse> responses = Take();
      if (responses.empty()) return;
      for (const auto& response : responses) Ack(response);
    }
  }
  void Close() {
    if (!closed_) {
      closed_ = true;
      stream_.Close();
    }
  }

  const HeldState& held(const std::string& type_url) { return held_[type_url]; }
  // initial_resource_versions for a reconnect: every resource held.
  std::map<std::string, std::string> HeldVersions(const std::string& type_url) {
    std::map<std::string, std::string> versions;
    for (const auto& [name, held] : held_[type_url]) versions[name] = held.version;
    return versions;
  }
  FakeDeltaTransport& transport() { return transport_; }
  AckLedger& ledger() { return ledger_; }

 private:
  void Apply(const DeltaDiscoveryResponse& response) {
    HeldState& state = held_[response.type_url()];
    for (const auto& resource : response.resources()) {
      state[resource.name()] = HeldResource{resource.version(), resource.resource().value()};
    }
    for (const auto& name : response.removed_resources()) state.erase(name);
  }

  SimulatedClock clock_;
  AckLedger ledger_;
  FakeDeltaTransport transport_;
  std::unique_ptr<PushDispatcher> own_dispatcher_;
  StreamEnvironment env_;
  std::string node_id_;
  std::vector<std::string> features_;
  DeltaStream stream_;
  std::map<std::string, HeldState> held_;
  bool sent_first_ = false;
  size_t sent_ = 0;
  size_t reads_before_first_send_ = 0;
  bool closed_ = false;
  size_t taken_ = 0;
};

}  // namespace cxds::testing
