// The core every xDS stream shares, whatever the protocol variant: the event queue and its
// processing, node identity, type and size checks, admission, the watch on the node's
// configuration, heartbeats, the send timeout, the end of the stream, and the one path through
// which every send and every answer is recorded. SotwStream and DeltaStream add the protocol as
// small state machines on top of it (the hooks below); push accounting is its own class
// (server/push_accounting.h).
//
// Threading: events (requests, write completions, configuration changes, the client closing)
// may arrive on any thread. Each is queued under `mu_`; whichever thread finds the stream idle
// processes the queue until it is empty, requests first, then write completions, then
// configuration changes (docs/protocol-rules.md, "Requests before pushes"). Protocol state is
// touched only by that processing, so it needs no lock, and the transport is driven only from
// it: at most one read and one write are outstanding (one writer per stream).
//
// Configuration comes from one of two seams: a cache's watch (ConfigWatcher: the stream reads
// its snapshot) or a generator's session (ProxyGenerator: when the stream takes a push from the
// dispatcher it calls Generate and keeps the per-type views it gets back). Either way the
// variants read it through a ConfigView.
//
// Event sinks: the ledger is required; callbacks, metrics and observer may be absent in the
// environment and are replaced by null objects, so every send and answer goes to the same
// sinks in the same order: ledger, metrics, push accounting (convergence, observer), log,
// embedder callbacks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "cache/config_watcher.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/mutex.h"
#include "common/scheduler.h"
#include "common/strings.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "protocol/type_url.h"
#include "server/ack_ledger.h"
#include "server/admission.h"
#include "server/authenticator.h"
#include "server/callbacks.h"
#include "server/limits.h"
#include "server/proxy_generator.h"
#include "server/push_accounting.h"
#include "server/push_dispatcher.h"
#include "server/response_encoding.h"
#include "server/server_metrics.h"

namespace cxds {

// The part of a transport every stream uses. Called only from the stream's event processing.
class TransportBase {
 public:
  virtual ~TransportBase() = default;
  // Starts reading the next request (at most one read is outstanding).
  virtual void ReadNext() = 0;
  // Ends the stream. No read or write follows.
  virtual void FinishStream(const absl::Status& status) = 0;
  // Ends the stream now although a write is outstanding that may never complete: the write
  // completes (failed) and the client gets `status` without waiting for it. May follow
  // FinishStream (then it only cuts the outstanding write). A transport whose writes cannot
  // stall may simply finish.
  virtual void AbortStream(const absl::Status& status) { FinishStream(status); }
};

// What every stream of a server shares.
struct StreamEnvironment {
  // Where configuration comes from: a cache's watcher, or (when `generator` is set) nothing
  // here and the generator below.
  ConfigWatcher* watcher = nullptr;
  AckLedger* ledger = nullptr;
  ServerCallbacks* callbacks = nullptr;  // may be null
  Clock* clock = nullptr;
  std::string control_plane_id;
  // TTL heartbeats (docs/protocol-rules.md, R9): each `heartbeat_interval`, TTL-capable
  // clients get heartbeats for the TTL'd resources they hold. Off without scheduler/interval.
  Scheduler* scheduler = nullptr;
  absl::Duration heartbeat_interval = absl::ZeroDuration();
  // Every configuration change reaches the stream through this dispatcher (PushQueue and
  // throttle). Null only in tests of the protocol alone: changes are then handled at once.
  PushDispatcher* dispatcher = nullptr;
  // Stage reports (sent, ACKed/NACKed) for pushes; may be null.
  PushObserver* observer = nullptr;
  ServerMetrics* metrics = nullptr;  // may be null
  // New streams are admitted at a bounded rate; may be null (no limit). Needs `scheduler`.
  AdmissionLimiter* admission = nullptr;
  // Until it returns true, new streams end at once with UNAVAILABLE, never an empty
  // configuration (docs/protocol-rules.md, "Readiness"). Empty: always ready.
  std::function<bool()> ready = nullptr;
  // What a client may send (server/limits.h).
  StreamLimits limits = {};
  // A response write that has not completed after this long ends the stream with
  // DEADLINE_EXCEEDED and frees its push slot. Zero: no limit. Needs `scheduler`.
  absl::Duration send_timeout = absl::ZeroDuration();
  // Decides whether the identity a stream opened with may serve as the node its first request
  // names (server/authenticator.h). Null: streams are not authenticated (plaintext).
  const Authenticator* authenticator = nullptr;
  // A control plane that generates per proxy; when set, `watcher` is not used.
  ProxyGenerator* generator = nullptr;
};

// The configuration a stream serves from at one moment: its watch's snapshot, or the views its
// generator session returned (no Snapshot is assembled for those). Valid while the stream's
// event processing does not change them (within one SendNext).
class ConfigView {
 public:
  explicit ConfigView(SnapshotPtr snapshot) : snapshot_(std::move(snapshot)) {}
  explicit ConfigView(const TypeUrlMap<Snapshot::TypeResourcesPtr>* generated) : generated_(generated) {}
  // No configuration yet (a cache with no snapshot for the node): nothing may be sent.
  bool missing() const { return generated_ == nullptr && snapshot_ == nullptr; }
  // The resources of `type_url`, or nullptr if the configuration has no such type.
  const Snapshot::TypeResources* resources(const std::string& type_url) const {
    if (generated_ == nullptr) return snapshot_ != nullptr ? snapshot_->resources(type_url) : nullptr;
    auto it = generated_->find(type_url);
    return it != generated_->end() ? it->second.get() : nullptr;
  }

 private:
  SnapshotPtr snapshot_;
  const TypeUrlMap<Snapshot::TypeResourcesPtr>* generated_ = nullptr;
};

inline constexpr char kClientFeatureResourceTtl[] = "xds.config.supports-resource-ttl";
inline constexpr char kClientFeatureResourceInSotw[] = "xds.config.supports-resource-in-sotw";

class StreamCore : public PushTarget {
 public:
  // A request as the core queues it: each variant enqueues only its own message type.
  using Request = std::variant<envoy::service::discovery::v3::DiscoveryRequest,
                               envoy::service::discovery::v3::DeltaDiscoveryRequest>;

  StreamCore(const StreamEnvironment& env, int64_t stream_id, std::string fixed_type_url, TransportBase* transport);
  ~StreamCore() override;
  StreamCore(const StreamCore&) = delete;
  StreamCore& operator=(const StreamCore&) = delete;

  // Runs the open callback and starts reading. Call once, before any other event. `peer` is
  // the client's identity as the server's Authenticator saw it when the stream opened (an
  // error ends the stream with it); unauthenticated by default.
  void Start(absl::StatusOr<PeerIdentity> peer = PeerIdentity{});

  // PushTarget: the dispatcher hands over a (merged) push.
  void DeliverPush(PushRequestPtr request) override;
  std::string PushTargetName() const override;

  // Transport events; any thread. (Requests arrive through the variants' typed OnRequest.)
  void OnReadsDone();                            // the client closed its side, or reading failed
  void OnMalformedRequest(absl::Status status);  // ends the stream with `status`
  void OnWriteDone(bool ok);

  // The transport is finished: cancels the watch, drops the ledger entries, runs the closed
  // callback. Waits for event processing running on another thread to stop. Call once.
  void Close();

  int64_t id() const { return stream_id_; }

  // How many missing names a stream logs (NoteMissing).
  static constexpr size_t kMaxMissingNamesNoted = 32;

 protected:
  // Queues a request of the variant's own type; any thread.
  void EnqueueRequest(Request request);

  // Protocol hooks, called from event processing only.
  // A request that passed the identity, type and limit checks and the embedder's callback.
  virtual void HandleRequest(Request& request) = 0;
  // The configuration changed as described.
  virtual void HandleChange(const ConfigChange& change) = 0;
  // Starts the next write if one is due and none is outstanding.
  virtual void SendNext() = 0;
  // Protocol name for logs ("ADS", "DeltaADS", "CDS", ...).
  virtual std::string ServiceName() const = 0;
  // The heartbeat interval passed: mark heartbeats due.
  virtual void HandleHeartbeat() = 0;
  // The variant's request limits and embedder callback; an error ends the stream with it.
  virtual absl::Status CheckLimits(const Request& request) const = 0;
  virtual absl::Status RunRequestCallback(const Request& request) = 0;

  // Names of one request or subscription against the limits (server/limits.h).
  template <typename Names>
  absl::Status CheckNames(const Names& names, std::string_view field) const {
    if (static_cast<size_t>(names.size()) > env_.limits.max_resource_names_per_request) {
      return absl::ResourceExhaustedError(StrCat(field, " has ", names.size(), " names; the limit is ",
                                                 env_.limits.max_resource_names_per_request,
                                                 " (max_resource_names_per_request)"));
    }
    for (const std::string& name : names) {
      if (name.size() > env_.limits.max_resource_name_bytes) {
        return absl::InvalidArgumentError(StrCat("a name in ", field, " is ", name.size(), " bytes; the limit is ",
                                                 env_.limits.max_resource_name_bytes, " (max_resource_name_bytes)"));
      }
    }
    return absl::OkStatus();
  }
  const StreamLimits& limits() const { return env_.limits; }
  // A request for a type the stream does not have yet, when it already has the most allowed.
  absl::Status CheckNewType(size_t types) const;
  // The node's client_features, read once when the node is bound (every response asks).
  bool ClientSupportsTtl() const { return client_supports_ttl_; }
  bool ClientSupportsResourceInSotw() const { return client_supports_resource_in_sotw_; }

  // The one path for what goes on the wire and what comes back: the ledger first, the
  // callbacks last; between them a sent response goes to the metrics, the push accounting and
  // the log, an answer to the push accounting (which tells the log's level), the metrics and
  // the log. RecordSent is called by the variants just before a write starts.
  void RecordSent(const OutgoingResponse& response);
  void RecordSent(const OutgoingDeltaResponse& response);
  // An answer (a request with a response nonce): `error` is the request's error_detail for a
  // NACK, else null. SotW passes the request's version_info; Delta has none ("").
  void RecordAnswer(const std::string& type_url, const std::string& nonce, const std::string& client_version,
                    const google::rpc::Status* error, bool delta);
  void RecordExpiredNonce(const std::string& type_url) { metrics_->ExpiredNonce(type_url); }
  // `name`, subscribed to by name, is not in the configuration of `type_url` the stream serves
  // (which has that type). A client waits for such a name in silence (a typo in its target, a
  // route to a host nobody defines), so it is logged (info for listeners and clusters, what a
  // client names itself or is routed to; debug for the rest, which a proxy derives from those
  // and may ask for a moment after they went) and counted once per stream and name, for at most
  // kMaxMissingNamesNoted names a stream.
  void NoteMissing(const std::string& type_url, const std::string& name);
  // The embedder's callbacks (a null object if it gave none).
  ServerCallbacks& callbacks() const { return *callbacks_; }
  // A variant's hooks were handed the other variant's request (cannot happen: each variant
  // queues only its own type); ends the stream rather than guess.
  static absl::Status WrongVariant() {
    return absl::InternalError("a request of the other protocol variant reached the stream");
  }

  // What the stream subscribes to for one type, told to its configuration source: a cache's
  // watch (LinearCache notifies by name) or the generator session, which generates newly
  // wanted names at once and drops unwanted ones from the view.
  void SetInterest(const std::string& type_url, bool wildcard, const SubscribedNames& names);

  // Looks at the dirty types in ADS push order (CDS, EDS, LDS, RDS, SDS, others) and lets
  // `try_send(type_url, state, view)` produce at most one response; it returns whether it did,
  // and so does SendFirstDue. Types it passes over are clean. Without a configuration nothing
  // is sent (never an empty state in place of a missing one); the first configuration marks
  // the types dirty again.
  template <typename State, typename TrySend>
  bool SendFirstDue(TypeUrlMap<State>& types, TrySend try_send) {
    // Iterators, not copies of the type URLs: this runs for every response of every push.
    // `try_send` must not erase from `types` (no variant's does: names and dirty flags change,
    // entries go only on the request path), or the iterators below would dangle.
    using Entry = std::pair<int, typename TypeUrlMap<State>::iterator>;
    absl::InlinedVector<Entry, 8> dirty;
    for (auto it = types.begin(); it != types.end(); ++it) {
      if (it->second.dirty) dirty.emplace_back(PushOrderRank(it->first), it);
    }
    if (dirty.empty()) return false;
    std::sort(dirty.begin(), dirty.end(), [](const Entry& a, const Entry& b) {
      return a.first != b.first ? a.first < b.first : a.second->first < b.second->first;
    });
    const ConfigView view = session_ != nullptr ? ConfigView(&generated_) : ConfigView(watch_->Current());
    for (const auto& [rank, it] : dirty) {
      State& state = it->second;
      state.dirty = false;
      if (!view.missing() && try_send(it->first, state, view)) return true;
    }
    return false;
  }

  // Rounds. A round is every response due at one moment, in push order (SendFirstDue until
  // none is due, at most kMaxResponsesPerRound). It is written back to back, all but the last
  // write saying that more follow, so a change that touches four types leaves in one TCP write
  // instead of four and the client's ACKs come back together. A round is computed from one
  // moment's state and written whole: requests wait while a write that says more follows is
  // in flight (gRPC completes a hinted write as soon as it has buffered it). A change that
  // comes during a round is sent in the next one.
  //
  // Starts the next write: the round's next response, or the first of a new round when the
  // last one is written. `compute(type_url, state, view)` returns a type's response, if one
  // is due, with the stream's state already updated as if it were sent (the next type's may
  // depend on it: a changed cluster, then its EDS); `write(response, more_follows)` starts the
  // transport's write. A response is recorded as sent (RecordSent) when it is written, not when
  // computed, so the ledger and the push accounting know what is on the wire.
  static constexpr int kMaxResponsesPerRound = 16;
  template <typename State, typename Response, typename Compute, typename Write>
  void WriteNextOfRound(TypeUrlMap<State>& types, std::deque<Response>& round, Compute compute, Write write) {
    auto queue = [&](const std::string& type_url, State& state, const ConfigView& view) {
      std::optional<Response> response = compute(type_url, state, view);
      if (response.has_value()) round.push_back(std::move(*response));
      return response.has_value();
    };
    if (round.empty()) {
      for (int i = 0; i < kMaxResponsesPerRound && SendFirstDue(types, queue); ++i) {
      }
    }
    if (round.empty()) return;
    const Response response = std::move(round.front());
    round.pop_front();
    RecordSent(response);
    WriteStarting(/*more_follows=*/!round.empty());
    write(response, /*more_follows=*/!round.empty());
  }

  // Schedules the next heartbeat, if heartbeats are on and none is scheduled.
  void ArmHeartbeat();
  // A variant is about to start a write: it is outstanding until OnWriteDone, and the send
  // timeout runs from now. `more_follows`: the write is one of a round with more to come; until
  // it completes no request is taken, so a round is written as it was computed, whole (none of
  // it can be dropped after the transport may have held this write back for the next one).
  void WriteStarting(bool more_follows = false);
  // `abort`: the outstanding write is cut instead of waited for (a stalled client).
  void EndStream(const absl::Status& status, bool abort = false);

  const StreamEnvironment env_;
  const int64_t stream_id_;
  const std::string fixed_type_url_;

  // Protocol state shared by the variants, confined to event processing.
  bool node_bound_ = false;
  envoy::config::core::v3::Node node_;
  std::string node_log_;                              // node_.id() as log lines carry it (EscapeUntrusted)
  bool client_supports_ttl_ = false;                  // kClientFeatureResourceTtl in node_.client_features
  bool client_supports_resource_in_sotw_ = false;     // kClientFeatureResourceInSotw in node_.client_features
  std::unique_ptr<ConfigWatcher::Watch> watch_;       // a cache's watch, or
  std::unique_ptr<ProxyGenerator::Session> session_;  // the generator's session
  // What the session last generated, by type URL (shared, immutable maps).
  TypeUrlMap<Snapshot::TypeResourcesPtr> generated_;
  PeerIdentity identity_;                  // set by Start
  AckLedger::StreamHandle ledger_stream_;  // this stream's records in env_.ledger, from Start
  bool write_in_flight_ = false;
  bool round_open_ = false;  // the write in flight said more follows (WriteStarting)
  bool finished_ = false;

 private:
  // What RecordSent reports, whichever variant sent it.
  struct SentSummary;
  void RecordSentSummary(const SentSummary& sent);
  // A NACK's error_detail as it is kept and reported: at most max_error_detail_bytes.
  std::string KeptError(const std::string& message) const;
  // The pilot_xds{version} label: client-provided, so escaped and cut short.
  std::string ClientVersion() const;
  // The active push's responses are written (or there were none): the slot goes back.
  void FinishPush();
  void ArmSendTimer(absl::Duration delay);
  void CheckSendTimeout();
  PushRequestPtr ToPushRequest(const ConfigChange& change) const;
  // Keeps the views `generated` carries; returns the names that changed, as a ConfigChange.
  ConfigChange KeepGenerated(GeneratedConfig generated);
  // A change as queued: from a cache (what changed), and the push it belongs to, if any.
  struct QueuedChange {
    ConfigChange change;
    PushRequestPtr push;  // null: a change without the dispatcher (protocol tests)
  };
  void QueueChange(QueuedChange change);
  // Processes queued events until none is left, on whichever thread found the stream idle.
  void Kick();
  // One queued event, taken in priority order under `mu_`.
  struct Event;
  // Takes the next event; false when the queue is empty (processing stops) or the stream closed.
  bool TakeEvent(Event& event);
  void Process(Event& event);
  absl::Status CheckNodeLimits(const envoy::config::core::v3::Node& node) const;
  // Identity, type and limit checks common to every variant; false if the stream was ended.
  bool CheckRequest(Request& request);
  // Binds the stream to the first request's node, if its identity may serve as it, and
  // creates its watch; false if the stream was ended.
  bool BindNode(const envoy::config::core::v3::Node& node);

  ServerCallbacks* const callbacks_;  // never null: env_.callbacks or a null object
  ServerMetrics* const metrics_;      // likewise
  TransportBase* const base_transport_;
  PushAccounting accounting_;  // confined to event processing

  Mutex mu_;
  std::deque<Request> requests_ ABSL_GUARDED_BY(mu_);
  std::deque<QueuedChange> changes_ ABSL_GUARDED_BY(mu_);
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> transport_error_ ABSL_GUARDED_BY(mu_);
  int writes_done_ ABSL_GUARDED_BY(mu_) = 0;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool heartbeat_due_ ABSL_GUARDED_BY(mu_) = false;
  bool admitted_ ABSL_GUARDED_BY(mu_) = false;
  TimerPtr admission_timer_ ABSL_GUARDED_BY(mu_);
  bool processing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool send_check_due_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> missing_noted_;  // "TYPE NAME" pairs NoteMissing said; confined to event processing
  TimerPtr heartbeat_timer_;             // confined to event processing (and Close)
  TimerPtr send_timer_;                  // confined to event processing (and Close)
  absl::Time write_started_;             // of the outstanding write; confined to event processing
};

}  // namespace cxds
