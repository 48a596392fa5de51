// A SotwStream on a fake transport, driven from the test thread. Every event is processed on
// the calling thread before the call returns (nothing else delivers events), so tests are
// deterministic: "no response" means the write list did not grow.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cache/snapshot_cache.h"
#include "common/clock.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "fakes/inline_dispatcher.h"
#include "fakes/served_from.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "server/ack_ledger.h"
#include "server/sotw_stream.h"

namespace cxds::testing {

using envoy::service::discovery::v3::DiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryResponse;

class FakeTransport final : public StreamTransport {
 public:
  void ReadNext() override { reads_requested++; }
  void WriteResponse(const OutgoingResponse& response, bool more_follows) override {
    writes.push_back(ToDiscoveryResponse(response, "cxds"));
    more_follows_flags.push_back(more_follows);
    write_in_flight = true;
  }
  void FinishStream(const absl::Status& status) override { finished = status; }
  void AbortStream(const absl::Status& status) override {
    aborted = status;
    if (!finished.has_value()) finished = status;
  }

  std::vector<DiscoveryResponse> writes;
  std::vector<bool> more_follows_flags;  // one per write
  std::optional<absl::Status> finished;
  std::optional<absl::Status> aborted;  // the stream was cut with a write outstanding
  int reads_requested = 0;
  bool write_in_flight = false;
};

inline DiscoveryRequest Request(const std::string& type_url, std::vector<std::string> names,
                                const std::string& version = "", const std::string& nonce = "") {
  DiscoveryRequest request;
  request.set_type_url(type_url);
  for (auto& name : names) request.add_resource_names(std::move(name));
  request.set_version_info(version);
  request.set_response_nonce(nonce);
  return request;
}

// The ACK a faithful client sends for `response`, keeping its name list.
inline DiscoveryRequest Ack(const DiscoveryResponse& response, std::vector<std::string> names) {
  return Request(response.type_url(), std::move(names), response.version_info(), response.nonce());
}

// The NACK a faithful client sends: version_info stays its last accepted version.
inline DiscoveryRequest Nack(const DiscoveryResponse& response, std::vector<std::string> names,
                             const std::string& accepted_version, const std::string& error) {
  DiscoveryRequest request = Request(response.type_url(), std::move(names), accepted_version, response.nonce());
  request.mutable_error_detail()->set_code(3);
  request.mutable_error_detail()->set_message(error);
  return request;
}

// The names of the resources in `response`, decoded through the generated descriptor pool.
inline std::vector<std::string> NamesOf(const DiscoveryResponse& response) {
  std::vector<std::string> names;
  for (const auto& any : response.resources()) {
    const std::string type = any.type_url().substr(any.type_url().rfind('/') + 1);
    const auto* descriptor = google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
    if (descriptor == nullptr) {
      names.push_back("<unknown type " + type + ">");
      continue;
    }
    std::unique_ptr<google::protobuf::Message> message(
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
    names.push_back(message->ParseFromString(any.value()) ? ResourceNameOf(*message) : "<unparsable>");
  }
  return names;
}

// Heartbeats and client features for a StreamHarness, for TTL tests.
struct StreamHarnessOptions {
  Scheduler* scheduler = nullptr;
  absl::Duration heartbeat_interval = absl::ZeroDuration();
  std::vector<std::string> client_features;
  // Changes reach the stream through this dispatcher; null: the harness makes an inline one
  // (deliveries on the changing thread, so tests stay deterministic) with room for every push.
  PushDispatcher* dispatcher = nullptr;
  PushObserver* observer = nullptr;
  Clock* clock = nullptr;  // null: the harness's own SimulatedClock
  ServerMetrics* metrics = nullptr;
  AdmissionLimiter* admission = nullptr;  // needs `scheduler`
  std::function<bool()> ready = nullptr;
  StreamLimits limits = {};
  absl::Duration send_timeout = absl::ZeroDuration();  // needs `scheduler`
  // Who the transport proved the client to be (as an authenticator would answer); default:
  // nobody checked (plaintext).
  PeerIdentity identity = {};
};

class StreamHarness {
 public:
  explicit StreamHarness(ServedFrom source, std::string fixed_type_url = "", ServerCallbacks* callbacks = nullptr,
                         const std::string& node_id = "node-a", int64_t stream_id = 1,
                         StreamHarnessOptions options = {})
      : own_dispatcher_(options.dispatcher == nullptr ? InlineDispatcher() : nullptr),
        env_{source.watcher,
             &ledger_,
             callbacks,
             options.clock != nullptr ? options.clock : &clock_,
             "cxds",
             options.scheduler,
             options.heartbeat_interval,
             options.dispatcher != nullptr ? options.dispatcher : own_dispatcher_.get(),
             options.observer,
             options.metrics,
             options.admission,
             options.ready,
             options.limits,
             options.send_timeout,
             nullptr,
             source.generator},
        node_id_(node_id),
        features_(std::move(options.client_features)),
        stream_(env_, stream_id, std::move(fixed_type_url), &transport_) {
    stream_.Start(options.identity);
  }
  ~StreamHarness() { Close(); }

  // Sends `request`, adding the node to the stream's first request.
  void Send(DiscoveryRequest request) {
    if (!sent_first_) {
      if (!request.has_node()) {
        request.mutable_node()->set_id(node_id_);
        for (const auto& feature : features_) request.mutable_node()->add_client_features(feature);
      }
      sent_first_ = true;
    }
    stream_.OnRequest(std::move(request));
  }
  // Sends without adding a node.
  void SendRaw(DiscoveryRequest request) {
    sent_first_ = true;
    stream_.OnRequest(std::move(request));
  }
  // The client received the outstanding response (the next one may be written now).
  void CompleteWrite(bool ok = true) {
    transport_.write_in_flight = false;
    stream_.OnWriteDone(ok);
  }
  // Completes writes until none is outstanding; returns every response written since the last
  // call to Take().
  std::vector<DiscoveryResponse> Take() {
    while (transport_.write_in_flight && !transport_.finished.has_value()) CompleteWrite();
    std::vector<DiscoveryResponse> out(transport_.writes.begin() + taken_, transport_.writes.end());
    taken_ = transport_.writes.size();
    return out;
  }
  void Close() {
    if (!closed_) {
      closed_ = true;
      stream_.Close();
    }
  }

  FakeTransport& transport() { return transport_; }
  AckLedger& ledger() { return ledger_; }
  SimulatedClock& clock() { return clock_; }
  SotwStream& stream() { return stream_; }

 private:
  SimulatedClock clock_;
  AckLedger ledger_;
  FakeTransport transport_;
  std::unique_ptr<PushDispatcher> own_dispatcher_;
  StreamEnvironment env_;
  std::string node_id_;
  std::vector<std::string> features_;
  SotwStream stream_;
  bool sent_first_ = false;
  bool closed_ = false;
  size_t taken_ = 0;
};

}  // namespace cxds::testing
