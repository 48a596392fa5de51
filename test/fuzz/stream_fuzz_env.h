// What the SotW and Delta stream fuzzers share: a small pool of xDS resources the input picks
// snapshots from, the names and nonces a request may carry, and the checks of the throttle,
// the ledger and the send timeout, which are the same for both protocol variants.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cache/snapshot_cache.h"
#include "common/scheduler.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb.h"
#include "fuzz_common.h"
#include "protocol/type_url.h"
#include "server/ack_ledger.h"
#include "server/limits.h"
#include "server/push_dispatcher.h"
#include "server/stream_core.h"

namespace cxds::fuzz {

inline constexpr char kNodeId[] = "node-a";
inline constexpr int64_t kStreamId = 7;
inline constexpr absl::Duration kSendTimeout = absl::Seconds(20);
inline constexpr absl::Duration kHeartbeat = absl::Seconds(15);

// Limits small enough for fuzzer-sized requests to reach every one of them.
inline StreamLimits FuzzLimits() {
  StreamLimits limits;
  limits.max_node_id_bytes = 40;
  limits.max_node_cluster_bytes = 40;
  limits.max_node_metadata_bytes = 200;
  limits.max_resource_names_per_request = 6;
  limits.max_resource_name_bytes = 24;
  limits.max_type_url_bytes = 80;
  limits.max_types_per_stream = 4;
  limits.max_error_detail_bytes = 64;
  return limits;
}

inline ResourcePtr MustResource(const google::protobuf::Message& message,
                                std::optional<absl::Duration> ttl = std::nullopt) {
  absl::StatusOr<ResourcePtr> resource = Resource::FromMessage(message, ttl);
  FUZZ_CHECK(resource.ok(), "the fuzzer's own resource is refused: " + resource.status().ToString());
  return *resource;
}

// Resource `index` of the pool in content variant `variant` (0..2). Cluster c1 names its
// assignment "c1-svc"; variant 2 of a few resources carries a TTL.
inline ResourcePtr PoolResource(int index, int variant) {
  const std::optional<absl::Duration> ttl =
      variant == 2 ? std::optional<absl::Duration>(absl::Seconds(30)) : std::nullopt;
  switch (index) {
    case 0:
    case 1: {
      envoy::config::cluster::v3::Cluster cluster;
      cluster.set_name(index == 0 ? "c0" : "c1");
      cluster.set_type(envoy::config::cluster::v3::Cluster::EDS);
      cluster.mutable_eds_cluster_config()->mutable_eds_config()->mutable_ads();
      if (index == 1) cluster.mutable_eds_cluster_config()->set_service_name("c1-svc");
      cluster.mutable_connect_timeout()->set_seconds(1 + variant);
      return MustResource(cluster, ttl);
    }
    case 2: {
      envoy::config::cluster::v3::Cluster cluster;
      cluster.set_name("c2");
      cluster.set_type(envoy::config::cluster::v3::Cluster::STATIC);
      cluster.mutable_connect_timeout()->set_seconds(1 + variant);
      return MustResource(cluster);
    }
    case 3:
    case 4: {
      envoy::config::endpoint::v3::ClusterLoadAssignment cla;
      cla.set_cluster_name(index == 3 ? "c0" : "c1-svc");
      auto* socket =
          cla.add_endpoints()->add_lb_endpoints()->mutable_endpoint()->mutable_address()->mutable_socket_address();
      socket->set_address("127.0.0.1");
      socket->set_port_value(8000 + variant);
      return MustResource(cla, ttl);
    }
    case 5:
    case 6: {
      envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
      hcm.set_stat_prefix("fuzz");
      hcm.mutable_rds()->set_route_config_name(index == 5 ? "r0" : "r1");
      hcm.mutable_rds()->mutable_config_source()->mutable_ads();
      envoy::config::listener::v3::Listener listener;
      listener.set_name(index == 5 ? "l0" : "l1");
      listener.mutable_api_listener()->mutable_api_listener()->PackFrom(hcm);
      listener.mutable_listener_filters_timeout()->set_seconds(variant);
      return MustResource(listener, index == 6 ? ttl : std::nullopt);
    }
    case 7:
    case 8: {
      envoy::config::route::v3::RouteConfiguration routes;
      routes.set_name(index == 7 ? "r0" : "r1");
      auto* vhost = routes.add_virtual_hosts();
      vhost->set_name("all");
      vhost->add_domains("*");
      auto* route = vhost->add_routes();
      route->mutable_match()->set_prefix("/");
      route->mutable_route()->set_cluster(variant == 1 ? "c1" : "c0");
      return MustResource(routes);
    }
    default: {
      envoy::extensions::transport_sockets::tls::v3::Secret secret;
      secret.set_name("s0");
      secret.mutable_validation_context()->mutable_trusted_ca()->set_inline_string("ca-" + std::to_string(variant));
      return MustResource(secret, ttl);
    }
  }
}
inline constexpr int kPoolSize = 10;

// Resources are built once per (index, variant): a snapshot shares them, as real ones do.
inline ResourcePtr Pooled(int index, int variant) {
  static std::map<std::pair<int, int>, ResourcePtr>* built = new std::map<std::pair<int, int>, ResourcePtr>();
  ResourcePtr& resource = (*built)[{index, variant}];
  if (resource == nullptr) resource = PoolResource(index, variant);
  return resource;
}

inline SnapshotPtr PickSnapshot(FuzzedDataProvider& in, const std::string& version) {
  std::vector<ResourcePtr> resources;
  for (int i = 0; i < kPoolSize; ++i) {
    const int choice = in.ConsumeIntegralInRange(0, 3);  // 0: absent, else variant choice - 1
    if (choice > 0) resources.push_back(Pooled(i, choice - 1));
  }
  absl::StatusOr<SnapshotPtr> snapshot = Snapshot::Create(version, std::move(resources));
  FUZZ_CHECK(snapshot.ok(), "the fuzzer's own snapshot is refused: " + snapshot.status().ToString());
  return *snapshot;
}

inline const std::vector<std::string>& TypePool() {
  static const std::vector<std::string> types = {std::string(kClusterType),
                                                 std::string(kEndpointType),
                                                 std::string(kListenerType),
                                                 std::string(kRouteType),
                                                 std::string(kSecretType),
                                                 "type.googleapis.com/fuzz.Unknown",
                                                 "",
                                                 "type.googleapis.com/" + std::string(90, 'x')};
  return types;
}

inline const std::vector<std::string>& NamePool() {
  static const std::vector<std::string> names = {
      "c0", "c1", "c2", "c1-svc", "l0", "l1", "r0", "r1", "s0", "*", "", "ghost", std::string(30, 'n'), "c0\nforged=1"};
  return names;
}

inline std::string PickName(FuzzedDataProvider& in) {
  return NamePool()[in.ConsumeIntegralInRange<size_t>(0, NamePool().size() - 1)];
}

// The world a stream lives in: simulated time, a snapshot cache, a throttle of one slot, the
// ledger. Owned by one fuzz iteration.
struct World {
  explicit World(bool consistent)
      : cache(SnapshotCache::Options{
            .consistency = consistent ? ConsistencyPolicy::kConsistent : ConsistencyPolicy::kNone,
            .node_hash = nullptr,
            .clock = &scheduler.clock()}),
        dispatcher(PushDispatcher::Options{.max_in_flight = 1, .worker_threads = 0}) {}

  StreamEnvironment Environment(bool ready) {
    StreamEnvironment env;
    env.watcher = &cache;
    env.ledger = &ledger;
    env.clock = &scheduler.clock();
    env.control_plane_id = "cxds";
    env.scheduler = &scheduler;
    env.heartbeat_interval = kHeartbeat;
    env.dispatcher = &dispatcher;
    env.limits = FuzzLimits();
    env.send_timeout = kSendTimeout;
    if (!ready) env.ready = [] { return false; };
    return env;
  }

  SimulatedScheduler scheduler;
  SnapshotCache cache;
  AckLedger ledger;
  PushDispatcher dispatcher;
  int snapshots = 0;
};

// The transport checks both protocol variants share: at most one read and one write
// outstanding, nothing started after the stream ended, ended and cut at most once each. The
// variant checks each response it writes (CheckResponse).
template <typename Transport, typename Response>
class CheckingTransportBase : public Transport {
 public:
  explicit CheckingTransportBase(World& world) : world_(world) {}

  void ReadNext() override {
    FUZZ_CHECK(!finished.has_value(), "a read was started after the stream ended");
    FUZZ_CHECK(reads_outstanding == 0, "a second read was started before the first completed");
    reads_outstanding++;
  }
  void FinishStream(const absl::Status& status) override {
    FUZZ_CHECK(!finished.has_value(), "the stream ended twice");
    finished = status;
  }
  void AbortStream(const absl::Status& status) override {
    FUZZ_CHECK(!aborted.has_value(), "the stream was cut twice");
    aborted = status;
    if (!finished.has_value()) finished = status;
  }
  void WriteResponse(const Response& response, bool more_follows) override {
    FUZZ_CHECK(!finished.has_value(), "a response was written after the stream ended");
    FUZZ_CHECK(!write_in_flight, "a second write was started before the first completed");
    write_in_flight = true;
    if (!last_more_follows) round_snapshot_.reset();  // the first write of a round
    last_more_follows = more_follows;
    write_started = world_.scheduler.clock().Now();
    CheckResponse(response);
  }

  std::optional<absl::Status> finished;
  std::optional<absl::Status> aborted;
  int reads_outstanding = 0;
  bool write_in_flight = false;
  bool last_more_follows = false;  // the last write said another follows when it completes
  absl::Time write_started;

 protected:
  virtual void CheckResponse(const Response& response) = 0;
  // The snapshot a response was computed from: the node's snapshot when its round's first
  // write started (a round is computed at once, then written whole even if the snapshot
  // changes meanwhile).
  absl::StatusOr<SnapshotPtr> RoundSnapshot(const std::string& node_id) {
    if (!round_snapshot_.has_value()) round_snapshot_ = world_.cache.GetSnapshot(node_id);
    return *round_snapshot_;
  }
  World& world_;

 private:
  std::optional<absl::StatusOr<SnapshotPtr>> round_snapshot_;
};

// What the client saw of one type: every response's nonce and version, in order.
struct SentOfType {
  std::vector<std::pair<std::string, std::string>> responses;  // (nonce, version)
  size_t feedback = 0;  // requests of this type with a nonce, sent after the first response

  const std::string* VersionOf(const std::string& nonce) const {
    for (const auto& [n, v] : responses) {
      if (n == nonce) return &v;
    }
    return nullptr;
  }
};

// The ledger agrees with what the client received: its newest nonce of a type is the last one
// written; acknowledged and rejected nonces are ones written for that type, with their versions;
// it counts no more responses, ACKs and NACKs than there were.
inline void CheckLedger(const AckLedger& ledger, const std::map<std::string, SentOfType>& sent) {
  std::optional<StreamSyncStatus> stream = ledger.GetStream(kStreamId);
  if (!stream.has_value()) return;
  for (const TypeSyncStatus& type : stream->types) {
    auto it = sent.find(type.type_url);
    FUZZ_CHECK(it != sent.end(), "the ledger has a type nothing was sent for: " + type.type_url);
    const SentOfType& of = it->second;
    FUZZ_CHECK(type.responses_sent <= of.responses.size(), "the ledger counts more responses than were written");
    if (type.responses_sent > 0) {
      FUZZ_CHECK(
          type.sent_nonce == of.responses.back().first,
          "the ledger's newest nonce " + type.sent_nonce + " is not the last written " + of.responses.back().first);
      FUZZ_CHECK(type.sent_version == of.responses.back().second, "the ledger's sent version is not the last written");
    }
    if (!type.acked_nonce.empty()) {
      Count("ledger_checks_with_ack");
      const std::string* version = of.VersionOf(type.acked_nonce);
      FUZZ_CHECK(version != nullptr, "the ledger has an ACK of a nonce never sent: " + type.acked_nonce);
      FUZZ_CHECK(*version == type.acked_version, "the ledger's accepted version is not the ACKed response's");
    }
    if (type.last_nack.has_value()) {
      Count("ledger_checks_with_nack");
      const std::string* version = of.VersionOf(type.last_nack->nonce);
      FUZZ_CHECK(version != nullptr, "the ledger has a NACK of a nonce never sent: " + type.last_nack->nonce);
      FUZZ_CHECK(*version == type.last_nack->sent_version,
                 "the ledger's rejected version is not the NACKed response's");
      FUZZ_CHECK(type.last_nack->error.size() <= FuzzLimits().max_error_detail_bytes + 32,
                 "the ledger keeps a NACK message of " + std::to_string(type.last_nack->error.size()) + " bytes");
    }
    FUZZ_CHECK(type.acks + type.nacks <= of.feedback, "the ledger counts more ACKs and NACKs than requests");
    FUZZ_CHECK(!type.synced() || type.acked_nonce == of.responses.back().first, "synced without the newest ACKed");
  }
}

// The events both stream fuzzers share (operations 5 to 9 of their loop): a new snapshot
// (refused if inconsistent), the snapshot cleared, time passing, the client going away, or
// timers running. Returns true when the client has gone and the loop should stop.
template <typename Stream>
bool ApplySharedEvent(int op, FuzzedDataProvider& in, World& world, Stream& stream) {
  switch (op) {
    case 5:
      (void)world.cache.SetSnapshot(kNodeId, PickSnapshot(in, "v" + std::to_string(++world.snapshots)));
      return false;
    case 6:
      if (in.ConsumeIntegralInRange(0, 3) == 0) world.cache.ClearSnapshot(kNodeId);
      return false;
    case 7:
      world.scheduler.AdvanceBy(absl::Seconds(in.ConsumeIntegralInRange(0, 25)));
      return false;
    case 8:
      switch (in.ConsumeIntegralInRange(0, 7)) {
        case 0:
          stream.OnReadsDone();
          return false;
        case 1:
          stream.OnMalformedRequest(absl::InvalidArgumentError("malformed request"));
          return false;
        case 2:
          return true;
        default:
          return false;
      }
    default:
      world.scheduler.RunUntilIdle();
      return false;
  }
}

// What must hold after every event, whatever the protocol variant: the ledger matches what
// was written, the one-slot throttle is free once the stream has taken its push (even while
// the push's write is outstanding: a proxy that does not read holds no slot), and a write
// stuck for the send timeout ends the stream.
template <typename Transport>
void CheckAfterEvent(World& world, const Transport& transport, const std::map<std::string, SentOfType>& sent) {
  CheckLedger(world.ledger, sent);
  FUZZ_CHECK(world.dispatcher.in_flight() == 0, "the stream holds its push slot after taking its push");
  // A write hinted "more follows" may sit in gRPC's buffer until the next write flushes it.
  FUZZ_CHECK(transport.write_in_flight || !transport.last_more_follows || transport.finished.has_value(),
             "a response was held back for one that never followed");
  if (transport.write_in_flight && world.scheduler.clock().Now() - transport.write_started >= kSendTimeout) {
    FUZZ_CHECK(transport.aborted.has_value() && transport.aborted->code() == absl::StatusCode::kDeadlineExceeded,
               "a write outstanding for the send timeout did not end the stream");
    Count("send_timeouts");
  }
}

}  // namespace cxds::fuzz
