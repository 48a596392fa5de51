// Fuzz target: the State-of-the-World stream state machine (SotwStream) on a fake transport,
// fed a random sequence of events: requests (any type, names, version, nonce — current, old,
// of another type or made up —, NACKs with long messages, missing, changed, oversized or
// forged node ids), write completions (or failures), configuration changes (snapshots set or
// cleared), time passing (heartbeats, the send timeout), the client closing, malformed
// requests. Requests are delivered only when the stream has asked for one (as gRPC does).
//
// Invariants, checked after every event (docs/fuzzing.md):
//  - one writer: never a second write before the first completed, nothing after the end;
//    at most one read outstanding; the stream ends at most once;
//  - every nonce is new on the stream; responses are only of types the client asked for (the
//    service's own type for a per-type service);
//  - a response carries the current snapshot: its version, each resource as the snapshot has
//    it, no name twice; resources of a non-wildcard type are ones the client named;
//  - nothing is sent without a snapshot;
//  - the encoded wire bytes decode to the same response (zero-copy encoding);
//  - the ledger agrees with what the client received (stream_fuzz_env.h);
//  - the throttle slot is free once the stream has taken its push, even while its write is
//    outstanding: an idle, slow or ended stream never blocks other streams' pushes;
//  - a write outstanding for the send timeout has ended the stream (DEADLINE_EXCEEDED, cut);
//  - every log line stays one bounded line;
//  - after Close: no ledger entry, no watch, no slot, nothing queued.
#include <fuzzer/FuzzedDataProvider.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "envoy/service/discovery/v3/discovery.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/response_encoding.h"
#include "server/sotw_stream.h"
#include "stream_fuzz_env.h"

namespace cxds::fuzz {
namespace {

using envoy::service::discovery::v3::DiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryResponse;

class CheckingTransport;

struct Client {
  std::string fixed_type;
  std::map<std::string, SentOfType> sent;              // by type
  std::map<std::string, std::set<std::string>> named;  // every name ever requested, by type
  std::set<std::string> requested_types;
  std::set<std::string> nonces;
  bool node_sent = false;
  bool first_request_sent = false;
  std::string bound_id;  // the node id of the first request, which the stream binds
};

class CheckingTransport final : public CheckingTransportBase<StreamTransport, OutgoingResponse> {
 public:
  CheckingTransport(World& world, Client& client) : CheckingTransportBase(world), client_(client) {}

  size_t writes = 0;

 private:
  void CheckResponse(const OutgoingResponse& response) override {
    writes++;
    const std::string& type = response.type_url;
    FUZZ_CHECK(!response.nonce.empty() && client_.nonces.insert(response.nonce).second,
               "nonce " + response.nonce + " is empty or was used before");
    FUZZ_CHECK(client_.requested_types.contains(type), "a response of a type never requested: " + type);
    FUZZ_CHECK(client_.fixed_type.empty() || type == client_.fixed_type, "a per-type service sent " + type);
    absl::StatusOr<SnapshotPtr> snapshot = RoundSnapshot(client_.bound_id);
    FUZZ_CHECK(snapshot.ok(), "a response was sent without a snapshot");
    const Snapshot::TypeResources* available = (*snapshot)->resources(type);
    FUZZ_CHECK(available != nullptr, "a response of a type the snapshot does not have: " + type);
    if (!response.heartbeat) {
      FUZZ_CHECK(response.version == available->version,
                 "a response at version " + response.version + " while the snapshot is " + available->version);
    }
    std::set<std::string> names;
    for (const ResourcePtr& resource : response.resources) {
      FUZZ_CHECK(names.insert(resource->name()).second, "a response carries " + resource->name() + " twice");
      auto current = available->items.find(resource->name());
      FUZZ_CHECK(current != available->items.end() && current->second->content_version() == resource->content_version(),
                 "a response carries " + resource->name() + " as the snapshot does not have it");
      if (!IsWildcardCapableType(type)) {
        FUZZ_CHECK(client_.named[type].contains(resource->name()),
                   "a response carries " + resource->name() + ", never requested");
      }
    }
    // The zero-copy encoding is the protobuf encoding of the same response.
    std::vector<grpc::Slice> slices;
    FUZZ_CHECK(EncodeSotwResponse(response, "cxds").Dump(&slices).ok(), "the encoded response cannot be read");
    std::string wire;
    for (const grpc::Slice& slice : slices) wire.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    DiscoveryResponse decoded;
    FUZZ_CHECK(decoded.ParseFromString(wire), "the encoded response does not parse");
    const DiscoveryResponse expected = ToDiscoveryResponse(response, "cxds");
    // Compared as messages: an Any's bytes may order the fields of a wrapped Resource differently.
    FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(decoded, expected),
               "the encoded response differs from the protobuf one:\n  encoded: " +
                   decoded.ShortDebugString().substr(0, 3000) +
                   "\n  protobuf: " + expected.ShortDebugString().substr(0, 3000));
    client_.sent[type].responses.emplace_back(response.nonce, response.version);
    Count(response.heartbeat ? "heartbeat_responses" : "responses");
  }

  Client& client_;
};

std::string PickNonce(FuzzedDataProvider& in, const Client& client, const std::string& type) {
  auto sent = client.sent.find(type);
  switch (in.ConsumeIntegralInRange(0, 5)) {
    case 0:
      return "";
    case 1:
    case 2:  // the newest of the type, as a faithful client sends
      return sent != client.sent.end() ? sent->second.responses.back().first : "";
    case 3:  // an older one of the type
      if (sent != client.sent.end()) {
        const auto& responses = sent->second.responses;
        return responses[in.ConsumeIntegralInRange<size_t>(0, responses.size() - 1)].first;
      }
      return "";
    case 4:  // any nonce of the stream, maybe of another type
      if (!client.nonces.empty()) {
        auto it = client.nonces.begin();
        std::advance(it, in.ConsumeIntegralInRange<size_t>(0, client.nonces.size() - 1));
        return *it;
      }
      return "";
    default:
      return in.ConsumeRandomLengthString(24);
  }
}

void SetNode(FuzzedDataProvider& in, DiscoveryRequest& request, Client& client) {
  // Mostly the node once, on the first request, as clients do; sometimes none, another id,
  // one over the limit or one that would forge a log line.
  const int choice = in.ConsumeIntegralInRange(0, client.node_sent ? 9 : 5);
  if (choice >= 6) return;  // later requests usually omit the node
  auto* node = request.mutable_node();
  switch (choice) {
    case 0:
      return request.clear_node();
    case 1:
      node->set_id(std::string(41, 'x'));
      break;
    case 2:
      node->set_id("node-b\nFORGED line=1");
      break;
    case 3:
      node->set_id(kNodeId);
      (*node->mutable_metadata()->mutable_fields())["BIG"].set_string_value(std::string(300, 'm'));
      break;
    default:
      node->set_id(kNodeId);
      node->set_user_agent_version(in.ConsumeRandomLengthString(80));
      if (in.ConsumeBool()) {
        node->add_client_features(kClientFeatureResourceTtl);
        node->add_client_features(kClientFeatureResourceInSotw);
      }
  }
  client.node_sent = true;
}

DiscoveryRequest MakeRequest(FuzzedDataProvider& in, Client& client) {
  DiscoveryRequest request;
  SetNode(in, request, client);
  const std::string& type = TypePool()[in.ConsumeIntegralInRange<size_t>(0, TypePool().size() - 1)];
  request.set_type_url(type);
  for (int i = in.ConsumeIntegralInRange(0, 7); i > 0; --i) request.add_resource_names(PickName(in));
  const std::string effective_type = type.empty() ? client.fixed_type : type;
  auto sent = client.sent.find(effective_type);
  request.set_version_info(in.ConsumeBool() && sent != client.sent.end() ? sent->second.responses.back().second
                                                                         : in.ConsumeRandomLengthString(12));
  request.set_response_nonce(PickNonce(in, client, effective_type));
  if (in.ConsumeIntegralInRange(0, 4) == 0) {
    request.mutable_error_detail()->set_code(in.ConsumeIntegral<int32_t>());
    const size_t bytes = in.ConsumeIntegralInRange<size_t>(0, 300);
    request.mutable_error_detail()->set_message(std::string(bytes, '\n') + in.ConsumeRandomLengthString(16));
  }
  return request;
}

}  // namespace
}  // namespace cxds::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cxds::fuzz::InstallCheckingLog(spdlog::level::debug);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxds;        // NOLINT
  using namespace cxds::fuzz;  // NOLINT
  FuzzedDataProvider in(data, size);
  World world(/*consistent=*/in.ConsumeBool());
  const bool ready = in.ConsumeIntegralInRange(0, 15) != 0;
  Client client;
  static const std::vector<std::string> kServices = {
      "", "", "", std::string(kClusterType), std::string(kEndpointType), std::string(kListenerType)};
  client.fixed_type = kServices[in.ConsumeIntegralInRange<size_t>(0, kServices.size() - 1)];
  CheckingTransport transport(world, client);
  const StreamEnvironment env = world.Environment(ready);
  SotwStream stream(env, kStreamId, client.fixed_type, &transport);
  stream.Start();

  bool closed = false;
  for (int step = 0; step < 64 && in.remaining_bytes() > 0 && !closed; ++step) {
    const int op = in.ConsumeIntegralInRange(0, 9);
    switch (op) {
      case 0:
      case 1:
      case 2: {
        if (transport.reads_outstanding == 0) break;  // gRPC delivers a request only when asked
        DiscoveryRequest request = MakeRequest(in, client);
        if (!client.first_request_sent) {
          client.first_request_sent = true;
          client.bound_id = request.node().id();
        }
        const std::string type = request.type_url().empty() ? client.fixed_type : request.type_url();
        if (!type.empty()) {
          client.requested_types.insert(type);
          for (const std::string& name : request.resource_names()) client.named[type].insert(name);
          if (!request.response_nonce().empty() && client.sent.contains(type)) client.sent[type].feedback++;
        }
        transport.reads_outstanding--;
        stream.OnRequest(std::move(request));
        break;
      }
      case 3:
      case 4:
        if (transport.write_in_flight) {
          transport.write_in_flight = false;
          stream.OnWriteDone(in.ConsumeIntegralInRange(0, 15) != 0);
        }
        break;
      default:
        closed = ApplySharedEvent(op, in, world, stream);
        break;
    }
    if (closed) break;
    CheckAfterEvent(world, transport, client.sent);
  }

  // The gRPC reactor closes the stream once it is finished, or when the client goes away.
  stream.Close();
  FUZZ_CHECK(!world.ledger.GetStream(kStreamId).has_value(), "the ledger keeps a closed stream");
  std::optional<NodeStatus> status = world.cache.GetStatus(kNodeId);
  FUZZ_CHECK(!status.has_value() || status->open_watches == 0, "a closed stream keeps its watch");
  FUZZ_CHECK(world.dispatcher.in_flight() == 0, "a closed stream keeps its push slot");
  FUZZ_CHECK(world.dispatcher.queue().Pending() == 0 && world.dispatcher.queue().Processing() == 0,
             "a closed stream keeps a queued push");
  return 0;
}
