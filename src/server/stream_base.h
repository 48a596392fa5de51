// What every xDS stream shares, whatever the protocol variant: the event queue and its
// processing, node identity, type checks, the watch on the node's configuration, the ledger
// entry, and the end of the stream. SotwStream and DeltaStream add the protocol.
//
// Threading: events (requests, write completions, configuration changes, the client closing)
// may arrive on any thread. Each is queued under `mu_`; whichever thread finds the stream idle
// processes the queue until it is empty, requests first, then write completions, then
// configuration changes (docs/protocol-rules.md, "Requests before pushes"). Protocol state is
// touched only by that processing, so it needs no lock, and the transport is driven only from
// it: at most one read and one write are outstanding (one writer per stream).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cache/config_watcher.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/mutex.h"
#include "common/scheduler.h"
#include "common/strings.h"
#include "protocol/type_url.h"
#include "server/ack_ledger.h"
#include "server/admission.h"
#include "server/callbacks.h"
#include "server/limits.h"
#include "server/push_dispatcher.h"
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
};

inline constexpr char kClientFeatureResourceTtl[] = "xds.config.supports-resource-ttl";
inline constexpr char kClientFeatureResourceInSotw[] = "xds.config.supports-resource-in-sotw";

template <typename Request>
class StreamBase : public PushTarget {
 public:
  StreamBase(const StreamEnvironment& env, int64_t stream_id, std::string fixed_type_url, TransportBase* transport)
      : env_(env), stream_id_(stream_id), fixed_type_url_(std::move(fixed_type_url)), base_transport_(transport) {}
  ~StreamBase() override = default;
  StreamBase(const StreamBase&) = delete;
  StreamBase& operator=(const StreamBase&) = delete;

  // Runs the open callback and starts reading. Call once, before any other event.
  void Start() {
    env_.ledger->OpenStream(stream_id_, env_.clock->Now());
    if (env_.ready && !env_.ready()) {
      EndStream(absl::UnavailableError("server is not ready to serve discovery information"));
      return;
    }
    if (env_.callbacks != nullptr) {
      absl::Status status = env_.callbacks->OnStreamOpen(stream_id_, fixed_type_url_);
      if (!status.ok()) {
        EndStream(status);
        return;
      }
    }
    if (env_.admission != nullptr && env_.scheduler != nullptr) {
      absl::StatusOr<absl::Duration> wait = env_.admission->Admit();
      if (!wait.ok()) {
        EndStream(wait.status());
        return;
      }
      if (*wait > absl::ZeroDuration()) {
        // Admitted later: the first read starts when the stream's turn comes.
        MutexLock lock(&mu_);
        admission_timer_ = env_.scheduler->Schedule(*wait, [this] {
          {
            MutexLock lock(&mu_);
            if (closed_) return;
            admitted_ = true;
          }
          Kick();
        });
        return;
      }
    }
    base_transport_->ReadNext();
  }

  // PushTarget: the dispatcher hands over a (merged) push.
  void DeliverPush(PushRequestPtr request) override {
    ConfigChange change = request->resources;
    change.push = std::move(request);
    {
      MutexLock lock(&mu_);
      changes_.push_back(std::move(change));
    }
    Kick();
  }
  std::string PushTargetName() const override { return StrCat("stream-", stream_id_); }

  // Transport events; any thread.
  void OnRequest(Request request) {
    {
      MutexLock lock(&mu_);
      requests_.push_back(std::move(request));
    }
    Kick();
  }
  void OnReadsDone() {  // the client closed its side, or reading failed
    {
      MutexLock lock(&mu_);
      reads_done_ = true;
    }
    Kick();
  }
  void OnMalformedRequest(absl::Status status) {  // ends the stream with `status`
    {
      MutexLock lock(&mu_);
      transport_error_ = std::move(status);
    }
    Kick();
  }
  void OnWriteDone(bool ok) {
    {
      MutexLock lock(&mu_);
      writes_done_++;
      if (!ok) write_failed_ = true;
    }
    Kick();
  }

  // The transport is finished: cancels the watch, drops the ledger entries, runs the closed
  // callback. Waits for event processing running on another thread to stop. Call once.
  void Close() {
    {
      MutexLock lock(&mu_);
      closed_ = true;
      mu_.Await([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !processing_; });
    }
    // No processing runs now and none will start; the watch and timer callbacks (Kick) see
    // closed_. Destroying them waits for a callback that is running.
    TimerPtr admission_timer;
    {
      MutexLock lock(&mu_);
      admission_timer = std::move(admission_timer_);
    }
    admission_timer.reset();
    heartbeat_timer_.reset();
    send_timer_.reset();
    watch_.reset();
    // No push can be queued for the stream now; forget what is queued and free its slot.
    if (env_.dispatcher != nullptr) env_.dispatcher->Remove(this);
    if (env_.metrics != nullptr && node_bound_) env_.metrics->StreamClosed(ClientVersion());
    env_.ledger->CloseStream(stream_id_);
    Log().info("CLOSE stream={} node={}", stream_id_, node_log_);
    if (env_.callbacks != nullptr) env_.callbacks->OnStreamClosed(stream_id_, node_);
  }

  int64_t id() const { return stream_id_; }

 protected:
  // Protocol hooks, called from event processing only.
  // A request that passed the identity and type checks.
  virtual void HandleRequest(Request& request) = 0;
  // The configuration changed as described.
  virtual void HandleChange(const ConfigChange& change) = 0;
  // Starts the next write if one is due and none is outstanding.
  virtual void SendNext() = 0;
  // Runs the embedder's request callback for this variant.
  virtual absl::Status RunRequestCallback(const Request& request) = 0;
  // Protocol name for logs ("ADS", "DeltaADS", "CDS", ...).
  virtual std::string ServiceName() const = 0;
  // The heartbeat interval passed: mark heartbeats due.
  virtual void HandleHeartbeat() = 0;
  // The variant's request limits (names per request, names per type, types per stream); an
  // error ends the stream with it.
  virtual absl::Status CheckLimits(const Request& request) const = 0;

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
  absl::Status CheckNewType(size_t types) const {
    if (types >= env_.limits.max_types_per_stream) {
      return absl::ResourceExhaustedError(StrCat("the stream already has ", types, " types; the limit is ",
                                                 env_.limits.max_types_per_stream, " (max_types_per_stream)"));
    }
    return absl::OkStatus();
  }
  // A NACK's error_detail as it is kept and reported: at most max_error_detail_bytes.
  std::string KeptError(const std::string& message) const {
    return TruncateUntrusted(message, env_.limits.max_error_detail_bytes);
  }

  bool ClientHasFeature(std::string_view feature) const {
    for (const std::string& f : node_.client_features()) {
      if (f == feature) return true;
    }
    return false;
  }

  // A response of `type_url` went out: attributes it to the push being delivered, if any.
  void NoteSent(const std::string& type_url, const std::string& version, const std::string& nonce, size_t bytes) {
    if (env_.metrics != nullptr) env_.metrics->Sent(type_url, bytes);
    auto awaiting = awaiting_.find(type_url);
    if (awaiting != awaiting_.end()) {
      // An unanswered older response of this type no longer counts towards its push's
      // convergence (it converges, if at all, through the newer one). It is kept a while all
      // the same: a client that applied it may still ACK it, late, and that is reported.
      for (Awaiting& older : awaiting->second) {
        if (older.superseded) continue;
        older.superseded = true;
        older.push->outstanding--;
        older.push->superseded = true;
      }
      while (awaiting->second.size() >= kMaxAwaitingPerType) awaiting->second.pop_front();
    }
    if (active_push_ == nullptr) return;
    active_push_->responses++;
    active_push_->outstanding++;
    awaiting_[type_url].push_back(Awaiting{nonce, active_push_});
    if (env_.observer != nullptr) {
      env_.observer->OnSent(push_info_, *active_push_->request, type_url, version, nonce, env_.clock->Now());
    }
  }

  // The client answered a response (after the ledger classified it).
  void NoteFeedback(const FeedbackEvent& event) {
    if (event.kind == FeedbackKind::kUnmatched) return;
    if (env_.metrics != nullptr) {
      event.kind == FeedbackKind::kAck ? env_.metrics->Acked(event.type_url) : env_.metrics->Rejected(event.type_url);
    }
    auto awaiting = awaiting_.find(event.type_url);
    if (awaiting == awaiting_.end()) return;
    std::deque<Awaiting>& sent = awaiting->second;
    auto match = std::find_if(sent.begin(), sent.end(), [&](const Awaiting& a) { return a.nonce == event.nonce; });
    if (match == sent.end()) return;
    const Awaiting answered = *match;
    // The client answers in order: what was sent before this will not be answered now.
    sent.erase(sent.begin(), match + 1);
    if (sent.empty()) awaiting_.erase(awaiting);
    std::shared_ptr<InFlightPush> push = answered.push;
    const bool accepted = event.kind == FeedbackKind::kAck;
    if (!accepted) push->rejected = true;
    if (!answered.superseded) {
      push->outstanding--;
      push->last_answer = event.time;
      // Metrics first: whoever sees the stage reported has the histogram updated too.
      RecordConvergence(*push);
    }
    if (env_.observer != nullptr) {
      env_.observer->OnFeedback(push_info_, *push->request, event.type_url, event.nonce, accepted, event.error,
                                event.time);
    }
  }

  void NoteExpiredNonce(const std::string& type_url) {
    if (env_.metrics != nullptr) env_.metrics->ExpiredNonce(type_url);
  }

  // Endpoint-only pushes log their sends at debug level, everything else at info (the
  // pipeline's periodic summary counts the former).
  spdlog::level::level_enum SentLogLevel() const {
    return active_push_ != nullptr && active_push_->request->EndpointOnly() ? spdlog::level::debug
                                                                            : spdlog::level::info;
  }

  // The pilot_xds{version} label: client-provided, so escaped and cut short.
  std::string ClientVersion() const {
    return node_.user_agent_version().empty() ? std::string("unknown")
                                              : EscapeUntrusted(node_.user_agent_version(), 64);
  }

  // Looks at the dirty types in ADS push order (CDS, EDS, LDS, RDS, SDS, others) and lets
  // `try_send(type_url, state, snapshot)` start at most one write; it returns whether it did.
  // Types it passes over are clean. Without a configuration nothing is sent (never an empty
  // state in place of a missing one); the first configuration marks the types dirty again.
  template <typename State, typename TrySend>
  void SendFirstDue(std::map<std::string, State>& types, TrySend try_send) {
    std::vector<std::string> dirty;
    for (const auto& [type_url, state] : types) {
      if (state.dirty) dirty.push_back(type_url);
    }
    if (dirty.empty()) return;
    std::sort(dirty.begin(), dirty.end(), [](const std::string& a, const std::string& b) {
      const int ra = PushOrderRank(a);
      const int rb = PushOrderRank(b);
      return ra != rb ? ra < rb : a < b;
    });
    SnapshotPtr snapshot = watch_->Current();
    for (const std::string& type_url : dirty) {
      State& state = types.at(type_url);
      state.dirty = false;
      if (snapshot != nullptr && try_send(type_url, state, *snapshot)) return;
    }
  }

  // Schedules the next heartbeat, if heartbeats are on and none is scheduled.
  void ArmHeartbeat() {
    if (env_.scheduler == nullptr || env_.heartbeat_interval <= absl::ZeroDuration() || heartbeat_timer_ != nullptr) {
      return;
    }
    heartbeat_timer_ = env_.scheduler->Schedule(env_.heartbeat_interval, [this] {
      {
        MutexLock lock(&mu_);
        heartbeat_due_ = true;
      }
      Kick();
    });
  }

  // A variant is about to start a write: it is outstanding until OnWriteDone, and the send
  // timeout runs from now.
  void WriteStarting() {
    write_in_flight_ = true;
    write_started_ = env_.clock->Now();
    if (send_timer_ == nullptr) ArmSendTimer(env_.send_timeout);
  }

  // `abort`: the outstanding write is cut instead of waited for (a stalled client).
  void EndStream(const absl::Status& status, bool abort = false) {
    if (finished_) return;
    finished_ = true;
    if (active_push_ != nullptr) FinishPush();
    if (!status.ok()) {
      Log().warn("END stream={} node={} code={} error=\"{}\"", stream_id_, node_log_,
                 absl::StatusCodeToString(status.code()), UntrustedQuoted(std::string(status.message()), 1024));
    }
    abort ? base_transport_->AbortStream(status) : base_transport_->FinishStream(status);
  }

  const StreamEnvironment env_;
  const int64_t stream_id_;
  const std::string fixed_type_url_;

  // Protocol state shared by the variants, confined to event processing.
  bool node_bound_ = false;
  envoy::config::core::v3::Node node_;
  std::string node_log_;  // node_.id() as log lines carry it (EscapeUntrusted)
  std::unique_ptr<ConfigWatcher::Watch> watch_;
  bool write_in_flight_ = false;
  bool finished_ = false;

 private:
  // A push delivered by the dispatcher, from delivery until its responses are written, and
  // then until the client has answered each of them.
  struct InFlightPush {
    std::shared_ptr<const PushRequest> request;
    int responses = 0;    // responses sent for it
    int outstanding = 0;  // of those, not yet answered (nor superseded)
    bool done = false;    // every response written
    bool rejected = false;
    absl::Time last_answer;   // of the latest ACK/NACK
    bool superseded = false;  // a response of it was replaced before being answered
    bool convergence_recorded = false;
  };

  // A push has converged once every response was written and ACKed, in whichever order the
  // stream processed the write completions and the ACKs (requests go first, so an ACK can be
  // handled before its write completion). Recorded once.
  void RecordConvergence(InFlightPush& push) {
    if (push.convergence_recorded || !push.done || push.outstanding != 0 || push.responses == 0 || push.rejected ||
        push.superseded || env_.metrics == nullptr || push.request->start == absl::InfiniteFuture()) {
      return;
    }
    push.convergence_recorded = true;
    env_.metrics->Converged(absl::ToDoubleSeconds(push.last_answer - push.request->start));
  }
  static constexpr size_t kMaxAwaitingPerType = 4;
  struct Awaiting {
    std::string nonce;
    std::shared_ptr<InFlightPush> push;
    bool superseded = false;  // a newer response of the type was sent before this was answered
  };

  void BeginPush(std::shared_ptr<const PushRequest> request) {
    active_push_ = std::make_shared<InFlightPush>();
    active_push_->request = std::move(request);
  }

  // The push's responses are written (or there were none): the slot goes back.
  void FinishPush() {
    std::shared_ptr<InFlightPush> push = std::move(active_push_);
    active_push_ = nullptr;
    push->done = true;
    RecordConvergence(*push);
    if (env_.observer != nullptr) {
      env_.observer->OnPushDone(push_info_, *push->request, push->responses, env_.clock->Now());
    }
    if (env_.dispatcher != nullptr) env_.dispatcher->Done(this);
  }

  // Checks the outstanding write against the send timeout when the timer is due; re-arms the
  // timer for a newer write. `send_timer_` is confined to event processing (and Close).
  void ArmSendTimer(absl::Duration delay) {
    if (env_.scheduler == nullptr || env_.send_timeout <= absl::ZeroDuration()) return;
    send_timer_ = env_.scheduler->Schedule(delay, [this] {
      {
        MutexLock lock(&mu_);
        if (closed_) return;
        send_check_due_ = true;
      }
      Kick();
    });
  }

  void CheckSendTimeout() {
    send_timer_.reset();            // it fired (this may run inside its callback: no wait then)
    if (!write_in_flight_) return;  // armed again by the next write
    const absl::Duration waited = env_.clock->Now() - write_started_;
    if (waited < env_.send_timeout) {
      ArmSendTimer(env_.send_timeout - waited);  // a later write is outstanding
      return;
    }
    const absl::Status status =
        absl::DeadlineExceededError(StrCat("a response write did not complete within the send timeout (",
                                           absl::FormatDuration(env_.send_timeout), "): the client is not reading"));
    Log().warn("SEND_TIMEOUT stream={} node={} waited={} send_timeout={} push_slot_released={}", stream_id_, node_log_,
               absl::FormatDuration(waited), absl::FormatDuration(env_.send_timeout), active_push_ != nullptr);
    if (finished_) {
      base_transport_->AbortStream(status);  // finished while a write was stuck behind it
    } else {
      EndStream(status, /*abort=*/true);
    }
  }

  PushRequestPtr ToPushRequest(const ConfigChange& change) const {
    if (change.push != nullptr) return change.push;  // shared by every stream of the push
    auto request = std::make_shared<PushRequest>();
    request->resources = change;
    request->reasons[reason::kSnapshot] = 1;
    request->start = change.change_time != absl::InfiniteFuture() ? change.change_time : env_.clock->Now();
    if (change.change_id != 0) request->change_ids.insert(change.change_id);
    return request;
  }

  void Kick() {
    {
      MutexLock lock(&mu_);
      if (processing_ || closed_) return;
      processing_ = true;
    }
    for (;;) {
      std::optional<Request> request;
      std::optional<ConfigChange> change;
      bool write_done = false;
      bool write_ok = true;
      bool reads_done = false;
      bool heartbeat = false;
      bool admitted = false;
      bool send_check = false;
      bool generated_push = false;
      std::optional<absl::Status> transport_error;
      {
        MutexLock lock(&mu_);
        if (closed_) {
          processing_ = false;
          return;
        }
        if (admitted_) {
          admitted_ = false;
          admitted = true;
        } else if (send_check_due_ && writes_done_ == 0) {
          // Before requests, so a client that keeps sending cannot postpone it; after any
          // queued write completion, so a write that did complete is never timed out.
          send_check_due_ = false;
          send_check = true;
        } else if (!requests_.empty()) {
          request = std::move(requests_.front());
          requests_.pop_front();
        } else if (writes_done_ > 0) {
          writes_done_--;
          write_done = true;
          write_ok = !write_failed_;
        } else if (transport_error_.has_value()) {
          transport_error = std::move(transport_error_);
          transport_error_.reset();
        } else if (reads_done_) {
          reads_done_ = false;
          reads_done = true;
        } else if (!changes_.empty()) {
          change = std::move(changes_.front());
          changes_.pop_front();
        } else if (heartbeat_due_) {
          heartbeat_due_ = false;
          heartbeat = true;
        } else {
          processing_ = false;
          return;
        }
      }
      if (send_check) {
        CheckSendTimeout();
        continue;
      }
      if (finished_) {                             // the stream is over: events are drained and dropped
        if (write_done) write_in_flight_ = false;  // (the send timeout looks at it)
        if (change.has_value() && change->push != nullptr && env_.dispatcher != nullptr) env_.dispatcher->Done(this);
        continue;
      }
      if (admitted) {
        base_transport_->ReadNext();
      } else if (request.has_value()) {
        if (CheckRequest(*request)) HandleRequest(*request);
        if (!finished_) base_transport_->ReadNext();
      } else if (write_done) {
        write_in_flight_ = false;
        if (!write_ok) {
          EndStream(absl::UnavailableError("write to the client failed"));
          continue;
        }
      } else if (transport_error.has_value()) {
        EndStream(*transport_error);
        continue;
      } else if (reads_done) {
        EndStream(absl::OkStatus());
        continue;
      } else if (change.has_value()) {
        if (change->push != nullptr) {
          BeginPush(change->push);
          // Generating watchers compute the proxy's resources for the push only now, inside
          // the throttle slot (held until the first write starts, below).
          HandleChange(watch_ != nullptr ? watch_->Materialize(*change) : *change);
          generated_push = true;
        } else {
          HandleChange(*change);
        }
      } else if (heartbeat) {
        heartbeat_timer_.reset();  // it fired; ArmHeartbeat schedules the next one
        HandleHeartbeat();
      }
      if (!finished_ && node_bound_ && !write_in_flight_) SendNext();
      // Computed and first write started: the slot goes on; the push is in progress until Done.
      if (generated_push && active_push_ != nullptr && env_.dispatcher != nullptr) env_.dispatcher->Generated(this);
      if (active_push_ != nullptr && !write_in_flight_) FinishPush();
    }
  }

  absl::Status CheckNodeLimits(const envoy::config::core::v3::Node& node) const {
    const StreamLimits& limits = env_.limits;
    if (node.id().size() > limits.max_node_id_bytes) {
      return absl::InvalidArgumentError(StrCat("node.id is ", node.id().size(), " bytes; the limit is ",
                                               limits.max_node_id_bytes, " (max_node_id_bytes)"));
    }
    if (node.cluster().size() > limits.max_node_cluster_bytes) {
      return absl::InvalidArgumentError(StrCat("node.cluster is ", node.cluster().size(), " bytes; the limit is ",
                                               limits.max_node_cluster_bytes, " (max_node_cluster_bytes)"));
    }
    if (node.has_metadata()) {
      const size_t bytes = node.metadata().ByteSizeLong();
      if (bytes > limits.max_node_metadata_bytes) {
        return absl::ResourceExhaustedError(StrCat("node.metadata is ", bytes, " bytes; the limit is ",
                                                   limits.max_node_metadata_bytes, " (max_node_metadata_bytes)"));
      }
    }
    return absl::OkStatus();
  }

  // Identity and type checks common to every variant; false if the stream was ended.
  bool CheckRequest(Request& request) {
    if (request.has_node()) {
      if (absl::Status status = CheckNodeLimits(request.node()); !status.ok()) {
        EndStream(status);
        return false;
      }
    }
    if (!node_bound_) {
      if (!request.has_node() || request.node().id().empty()) {
        EndStream(absl::InvalidArgumentError("the first request on a stream must carry node.id"));
        return false;
      }
      node_ = request.node();
      node_bound_ = true;
      node_log_ = EscapeUntrusted(node_.id());
      push_info_.stream_id = stream_id_;
      push_info_.node_id = node_.id();
      env_.ledger->SetNode(stream_id_, node_.id());
      if (env_.metrics != nullptr) env_.metrics->StreamOpened(ClientVersion());
      Log().info("OPEN stream={} node={} service={}", stream_id_, node_log_, ServiceName());
      watch_ = env_.watcher->CreateWatch(node_, [this](const ConfigChange& change) {
        if (env_.dispatcher != nullptr) {
          // Through the PushQueue (merged per stream, one push in progress) and the throttle.
          env_.dispatcher->Enqueue(this, push_info_, ToPushRequest(change));
          return;
        }
        {
          MutexLock lock(&mu_);
          changes_.push_back(change);
        }
        Kick();
      });
    } else if (request.has_node() && !request.node().id().empty() && request.node().id() != node_.id()) {
      EndStream(absl::InvalidArgumentError(StrCat("node.id changed on the stream from \"", node_log_, "\" to \"",
                                                  EscapeUntrusted(request.node().id()), "\"")));
      return false;
    }
    if (request.type_url().size() > env_.limits.max_type_url_bytes) {
      EndStream(absl::InvalidArgumentError(StrCat("type_url is ", request.type_url().size(), " bytes; the limit is ",
                                                  env_.limits.max_type_url_bytes, " (max_type_url_bytes)")));
      return false;
    }
    if (fixed_type_url_.empty()) {
      if (request.type_url().empty()) {
        EndStream(absl::InvalidArgumentError("an ADS request must carry type_url"));
        return false;
      }
    } else if (request.type_url().empty()) {
      request.set_type_url(fixed_type_url_);
    } else if (request.type_url() != fixed_type_url_) {
      EndStream(absl::InvalidArgumentError(
          StrCat("type_url ", EscapeUntrusted(request.type_url()), " on the discovery service for ", fixed_type_url_)));
      return false;
    }
    if (absl::Status status = CheckLimits(request); !status.ok()) {
      EndStream(status);
      return false;
    }
    watch_->RecordRequest();
    absl::Status status = RunRequestCallback(request);
    if (!status.ok()) {
      EndStream(status);
      return false;
    }
    return true;
  }

  TransportBase* const base_transport_;
  Mutex mu_;
  std::deque<Request> requests_ ABSL_GUARDED_BY(mu_);
  std::deque<ConfigChange> changes_ ABSL_GUARDED_BY(mu_);
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
  TimerPtr heartbeat_timer_;                   // confined to event processing (and Close)
  TimerPtr send_timer_;                        // confined to event processing (and Close)
  absl::Time write_started_;                   // of the outstanding write; confined to event processing
  PushTargetInfo push_info_;                   // set once, when the node is known, before the watch exists
  std::shared_ptr<InFlightPush> active_push_;  // confined to event processing
  // Unanswered responses by type URL, oldest first (at most kMaxAwaitingPerType); confined to
  // event processing.
  std::map<std::string, std::deque<Awaiting>> awaiting_;
};

}  // namespace cxds
