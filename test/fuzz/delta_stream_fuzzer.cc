// Fuzz target: the Delta (incremental) stream state machine (DeltaStream) on a fake transport,
// fed a random sequence of events as sotw_stream_fuzzer.cc is: requests subscribing and
// unsubscribing names (and "*"), with initial_resource_versions true or made up, current, old,
// foreign or invented nonces, NACKs; write completions and failures; snapshots set or cleared;
// time passing (heartbeats, the send timeout); the client closing; malformed requests.
//
// Invariants, checked after every event (docs/fuzzing.md):
//  - one writer, one read, one end (as for SotW);
//  - every nonce is new; responses are only of types the client asked for;
//  - a response's resources are the current snapshot's, each once, none also listed removed;
//    removed names are listed once each and are names the client has dealt with (subscribed,
//    unsubscribed, was sent or said it holds); resources of a non-wildcard type were
//    subscribed by name;
//  - the encoded wire bytes decode to the same response;
//  - the ledger agrees with what the client received; the throttle slot is free once the
//    stream has taken its push; the send timeout ends a stream whose write is stuck;
//  - at the end, a client that applied every response (whatever it answered) and settles
//    (ACKs every response) holds exactly what the snapshot has of what it subscribes to,
//    taking what it claimed to hold in initial_resource_versions as held (so does the server);
//  - every log line stays one bounded line; after Close nothing of the stream is left.
#include <fuzzer/FuzzedDataProvider.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "envoy/service/discovery/v3/discovery.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/delta_stream.h"
#include "server/response_encoding.h"
#include "stream_fuzz_env.h"

namespace cxds::fuzz {
namespace {

using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using envoy::service::discovery::v3::DeltaDiscoveryResponse;

struct Client {
  std::map<std::string, SentOfType> sent;              // by type
  std::map<std::string, std::set<std::string>> named;  // every name ever subscribed, by type
  std::map<std::string, std::set<std::string>> dealt;  // every name the client touched, by type
  std::set<std::string> requested_types;
  std::set<std::string> nonces;
  bool node_sent = false;
  bool first_request_sent = false;
  std::string bound_id;
  // The client's own model, for the final check: what it holds (name -> version) and what it
  // subscribes to, by type.
  struct TypeModel {
    std::map<std::string, std::string> held;
    bool wildcard = false;
    std::set<std::string> names;
  };
  std::map<std::string, TypeModel> model;
};

class CheckingTransport final : public CheckingTransportBase<DeltaTransport, OutgoingDeltaResponse> {
 public:
  CheckingTransport(World& world, Client& client) : CheckingTransportBase(world), client_(client) {}

  std::vector<DeltaDiscoveryResponse> unanswered;  // written, not yet ACKed by the settle phase

 private:
  void CheckResponse(const OutgoingDeltaResponse& response) override {
    const std::string& type = response.type_url;
    FUZZ_CHECK(!response.nonce.empty() && client_.nonces.insert(response.nonce).second,
               "nonce " + response.nonce + " is empty or was used before");
    FUZZ_CHECK(client_.requested_types.contains(type), "a response of a type never requested: " + type);
    absl::StatusOr<SnapshotPtr> snapshot = RoundSnapshot(client_.bound_id);
    FUZZ_CHECK(snapshot.ok(), "a response was sent without a snapshot");
    const Snapshot::TypeResources* available = (*snapshot)->resources(type);
    std::set<std::string> names;
    for (const ResourcePtr& resource : response.resources) {
      FUZZ_CHECK(names.insert(resource->name()).second, "a response carries " + resource->name() + " twice");
      FUZZ_CHECK(available != nullptr, "a response carries resources of a type the snapshot does not have");
      auto current = available->items.find(resource->name());
      FUZZ_CHECK(current != available->items.end() && current->second->content_version() == resource->content_version(),
                 "a response carries " + resource->name() + " as the snapshot does not have it");
      if (!IsWildcardCapableType(type)) {
        FUZZ_CHECK(client_.named[type].contains(resource->name()),
                   "a response carries " + resource->name() + ", never subscribed");
      }
    }
    std::set<std::string> removed;
    for (const std::string& name : response.removed) {
      FUZZ_CHECK(removed.insert(name).second, "a response lists " + name + " removed twice");
      FUZZ_CHECK(!names.contains(name), "a response both carries and removes " + name);
      FUZZ_CHECK(client_.dealt[type].contains(name), "a response removes " + name + ", which the client never had");
    }
    for (const ResourcePtr& resource : response.heartbeats) {
      FUZZ_CHECK(!names.contains(resource->name()) && !removed.contains(resource->name()),
                 "a heartbeat for " + resource->name() + " in a response that also sends or removes it");
    }
    std::vector<grpc::Slice> slices;
    FUZZ_CHECK(EncodeDeltaResponse(response, "cxds").Dump(&slices).ok(), "the encoded response cannot be read");
    std::string wire;
    for (const grpc::Slice& slice : slices) wire.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    DeltaDiscoveryResponse decoded;
    FUZZ_CHECK(decoded.ParseFromString(wire), "the encoded response does not parse");
    const DeltaDiscoveryResponse expected = ToDeltaDiscoveryResponse(response, "cxds");
    // Compared as messages: an Any's bytes may order the fields of a wrapped Resource differently.
    FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(decoded, expected),
               "the encoded response differs from the protobuf one:\n  encoded: " +
                   decoded.ShortDebugString().substr(0, 3000) +
                   "\n  protobuf: " + expected.ShortDebugString().substr(0, 3000));
    client_.sent[type].responses.emplace_back(response.nonce, response.system_version);
    Count("responses");
    if (!response.removed.empty()) Count("responses_with_removed");
    if (!response.heartbeats.empty()) Count("responses_with_heartbeats");
    for (const std::string& name : names) client_.dealt[type].insert(name);
    // The client applies every response (a NACK the fuzzer sends is a lie about it).
    Client::TypeModel& model = client_.model[type];
    for (const ResourcePtr& resource : response.resources) model.held[resource->name()] = resource->content_version();
    for (const std::string& name : response.removed) model.held.erase(name);
    unanswered.push_back(expected);
  }

  Client& client_;
};

std::string PickNonce(FuzzedDataProvider& in, const Client& client, const std::string& type) {
  auto sent = client.sent.find(type);
  switch (in.ConsumeIntegralInRange(0, 5)) {
    case 0:
      return "";
    case 1:
    case 2:
      return sent != client.sent.end() ? sent->second.responses.back().first : "";
    case 3:
      if (sent != client.sent.end()) {
        const auto& responses = sent->second.responses;
        return responses[in.ConsumeIntegralInRange<size_t>(0, responses.size() - 1)].first;
      }
      return "";
    case 4:
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

void SetNode(FuzzedDataProvider& in, DeltaDiscoveryRequest& request, Client& client) {
  const int choice = in.ConsumeIntegralInRange(0, client.node_sent ? 9 : 5);
  if (choice >= 6) return;
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
      if (in.ConsumeBool()) node->add_client_features(kClientFeatureResourceTtl);
  }
  client.node_sent = true;
}

DeltaDiscoveryRequest MakeRequest(FuzzedDataProvider& in, Client& client) {
  DeltaDiscoveryRequest request;
  SetNode(in, request, client);
  const std::string& type = TypePool()[in.ConsumeIntegralInRange<size_t>(0, TypePool().size() - 1)];
  request.set_type_url(type);
  for (int i = in.ConsumeIntegralInRange(0, 4); i > 0; --i) request.add_resource_names_subscribe(PickName(in));
  for (int i = in.ConsumeIntegralInRange(0, 3); i > 0; --i) request.add_resource_names_unsubscribe(PickName(in));
  if (in.ConsumeIntegralInRange(0, 3) == 0) {
    // What the client says it holds: the truth, or a lie.
    const Client::TypeModel& model = client.model[type];
    if (in.ConsumeBool()) {
      for (const auto& [name, version] : model.held) (*request.mutable_initial_resource_versions())[name] = version;
    } else {
      for (int i = in.ConsumeIntegralInRange(1, 3); i > 0; --i) {
        const int index = in.ConsumeIntegralInRange(0, kPoolSize - 1);
        const ResourcePtr resource = Pooled(index, in.ConsumeIntegralInRange(0, 2));
        (*request.mutable_initial_resource_versions())[in.ConsumeBool() ? resource->name() : PickName(in)] =
            in.ConsumeBool() ? resource->content_version() : in.ConsumeRandomLengthString(8);
      }
    }
  }
  request.set_response_nonce(PickNonce(in, client, type));
  if (in.ConsumeIntegralInRange(0, 4) == 0) {
    request.mutable_error_detail()->set_code(in.ConsumeIntegral<int32_t>());
    const size_t bytes = in.ConsumeIntegralInRange<size_t>(0, 300);
    request.mutable_error_detail()->set_message(std::string(bytes, '\n') + in.ConsumeRandomLengthString(16));
  }
  return request;
}

// The client's view of a request it sends: what it subscribes to afterwards (R10.4: a first
// request of LDS/CDS with nothing to subscribe is a wildcard; "*" is one; names add; only
// unsubscribing "*" ends the wildcard) and what it says it holds.
void ModelRequest(Client& client, const DeltaDiscoveryRequest& request, bool first_of_type) {
  const std::string& type = request.type_url();
  Client::TypeModel& model = client.model[type];
  const bool wildcard_capable = IsWildcardCapableType(type);
  if (first_of_type) {
    // The server takes the client's word for what it holds (a reconnect), true or not; so
    // does the model: the two must then agree on what follows.
    model.held = {request.initial_resource_versions().begin(), request.initial_resource_versions().end()};
    model.wildcard = wildcard_capable && request.resource_names_subscribe().empty();
  }
  for (const std::string& name : request.resource_names_subscribe()) {
    if (wildcard_capable && name == "*") {
      model.wildcard = true;
    } else {
      model.names.insert(name);
    }
  }
  for (const std::string& name : request.resource_names_unsubscribe()) {
    if (wildcard_capable && name == "*") {
      model.wildcard = false;
    } else {
      model.names.erase(name);
    }
  }
  for (const auto& [name, version] : request.initial_resource_versions()) client.dealt[type].insert(name);
  for (const std::string& name : request.resource_names_subscribe()) client.dealt[type].insert(name);
  for (const std::string& name : request.resource_names_unsubscribe()) client.dealt[type].insert(name);
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
  CheckingTransport transport(world, client);
  const StreamEnvironment env = world.Environment(ready);
  DeltaStream stream(env, kStreamId, "", &transport);
  stream.Start();

  bool closed = false;
  bool write_failed = false;
  for (int step = 0; step < 64 && in.remaining_bytes() > 0 && !closed; ++step) {
    const int op = in.ConsumeIntegralInRange(0, 9);
    switch (op) {
      case 0:
      case 1:
      case 2: {
        if (transport.reads_outstanding == 0) break;
        DeltaDiscoveryRequest request = MakeRequest(in, client);
        if (!client.first_request_sent) {
          client.first_request_sent = true;
          client.bound_id = request.node().id();
        }
        const std::string& type = request.type_url();
        const bool first_of_type = !type.empty() && client.requested_types.insert(type).second;
        if (!type.empty()) {
          for (const std::string& name : request.resource_names_subscribe()) client.named[type].insert(name);
          if (!request.response_nonce().empty() && client.sent.contains(type)) client.sent[type].feedback++;
          ModelRequest(client, request, first_of_type);
        }
        transport.reads_outstanding--;
        stream.OnRequest(std::move(request));
        break;
      }
      case 3:
      case 4:
        if (transport.write_in_flight) {
          transport.write_in_flight = false;
          const bool ok = in.ConsumeIntegralInRange(0, 15) != 0;
          write_failed = write_failed || !ok;
          stream.OnWriteDone(ok);
        }
        break;
      default:
        closed = ApplySharedEvent(op, in, world, stream);
        break;
    }
    if (closed) break;
    CheckAfterEvent(world, transport, client.sent);
  }

  // Settle: complete writes and ACK every response until the stream has nothing more to say.
  // A client that told the truth then holds what the snapshot has of what it subscribes to.
  if (!closed && !transport.finished.has_value() && client.node_sent) {
    for (int round = 0; round < 50 && !transport.finished.has_value(); ++round) {
      if (transport.write_in_flight) {
        transport.write_in_flight = false;
        stream.OnWriteDone(true);
        continue;
      }
      if (transport.unanswered.empty()) break;
      std::vector<DeltaDiscoveryResponse> answer = std::move(transport.unanswered);
      transport.unanswered.clear();
      for (const DeltaDiscoveryResponse& response : answer) {
        if (transport.finished.has_value() || transport.reads_outstanding == 0) break;
        DeltaDiscoveryRequest ack;
        ack.set_type_url(response.type_url());
        ack.set_response_nonce(response.nonce());
        client.sent[response.type_url()].feedback++;
        transport.reads_outstanding--;
        stream.OnRequest(std::move(ack));
      }
    }
    absl::StatusOr<SnapshotPtr> snapshot = world.cache.GetSnapshot(kNodeId);
    const bool settled = !transport.finished.has_value() && !transport.write_in_flight && transport.unanswered.empty();
    if (settled && !write_failed && snapshot.ok() && client.bound_id == kNodeId) {
      for (const auto& [type, model] : client.model) {
        if (!client.requested_types.contains(type)) continue;
        const Snapshot::TypeResources* available = (*snapshot)->resources(type);
        std::map<std::string, std::string> expected;
        if (available != nullptr) {
          for (const auto& [name, resource] : available->items) {
            if (model.wildcard || model.names.contains(name)) expected[name] = resource->content_version();
          }
        }
        std::map<std::string, std::string> held;
        for (const auto& [name, version] : model.held) {
          if (model.wildcard || model.names.contains(name)) held[name] = version;
        }
        std::string diff;
        for (const auto& [name, version] : expected) {
          if (!held.contains(name))
            diff += " missing " + name;
          else if (held[name] != version)
            diff += " stale " + name;
        }
        for (const auto& [name, version] : held) {
          if (!expected.contains(name)) diff += " extra " + name;
        }
        FUZZ_CHECK(diff.empty(), "after settling, the client's " + type + " differs from the snapshot:" + diff);
        Count(expected.empty() ? "settled_types_empty" : "settled_types_with_resources");
      }
    }
  }

  stream.Close();
  FUZZ_CHECK(!world.ledger.GetStream(kStreamId).has_value(), "the ledger keeps a closed stream");
  std::optional<NodeStatus> status = world.cache.GetStatus(kNodeId);
  FUZZ_CHECK(!status.has_value() || status->open_watches == 0, "a closed stream keeps its watch");
  FUZZ_CHECK(world.dispatcher.in_flight() == 0, "a closed stream keeps its push slot");
  FUZZ_CHECK(world.dispatcher.queue().Pending() == 0 && world.dispatcher.queue().Processing() == 0,
             "a closed stream keeps a queued push");
  return 0;
}
