#include "server/stream_core.h"

#include <algorithm>
#include <utility>

namespace cxds {

using envoy::config::core::v3::Node;

namespace {
// Null objects for the optional sinks: they accept every report and do nothing.
ServerCallbacks& NoCallbacks() {
  static ServerCallbacks* const none = new ServerCallbacks();
  return *none;
}
ServerMetrics& NoMetrics() {
  static ServerMetrics* const none = new ServerMetrics(nullptr);
  return *none;
}
PushObserver& NoObserver() {
  static PushObserver* const none = new PushObserver();
  return *none;
}
}  // namespace

// What RecordSent reports, whichever variant sent it.
struct StreamCore::SentSummary {
  const std::string& type_url;
  const std::string& version;
  const std::string& nonce;
  const std::vector<ResourcePtr>& resources;
  const std::vector<std::string>* removed = nullptr;  // Delta only
  size_t heartbeats = 0;                              // Delta: names whose TTL is renewed
  bool delta = false;
  bool partial = false;  // SotW: only what the client lacked (OutgoingResponse::partial)
};

struct StreamCore::Event {
  enum class Kind { kAdmitted, kSendCheck, kRequest, kWriteDone, kTransportError, kReadsDone, kChange, kHeartbeat };
  Kind kind = Kind::kHeartbeat;
  std::optional<Request> request;
  std::optional<QueuedChange> change;
  bool write_ok = true;
  absl::Status error;
};

StreamCore::StreamCore(const StreamEnvironment& env, int64_t stream_id, std::string fixed_type_url,
                       TransportBase* transport)
    : env_(env),
      stream_id_(stream_id),
      fixed_type_url_(std::move(fixed_type_url)),
      callbacks_(env.callbacks != nullptr ? env.callbacks : &NoCallbacks()),
      metrics_(env.metrics != nullptr ? env.metrics : &NoMetrics()),
      base_transport_(transport),
      accounting_(metrics_, env.observer != nullptr ? env.observer : &NoObserver(), env.clock) {}

StreamCore::~StreamCore() = default;

void StreamCore::Start(absl::StatusOr<PeerIdentity> peer) {
  ledger_stream_ = env_.ledger->OpenStream(stream_id_, env_.clock->Now());
  if (!peer.ok()) {
    EndStream(peer.status());
    return;
  }
  identity_ = *std::move(peer);
  if (env_.ready && !env_.ready()) {
    EndStream(absl::UnavailableError("server is not ready to serve discovery information"));
    return;
  }
  if (absl::Status status = callbacks_->OnStreamOpen(stream_id_, fixed_type_url_); !status.ok()) {
    EndStream(status);
    return;
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

void StreamCore::DeliverPush(PushRequestPtr request) {
  ConfigChange change = request->resources;
  QueueChange(QueuedChange{std::move(change), std::move(request)});
}

void StreamCore::QueueChange(QueuedChange change) {
  {
    MutexLock lock(&mu_);
    changes_.push_back(std::move(change));
  }
  Kick();
}

void StreamCore::SetInterest(const std::string& type_url, bool wildcard, const SubscribedNames& names) {
  if (session_ != nullptr) {
    // What is generated here is only kept: the variant marks the names it asked for itself.
    (void)KeepGenerated(session_->Subscribe(type_url, wildcard, names));
  } else if (watch_ != nullptr) {
    watch_->SetInterest(type_url, wildcard, *names);
  }
}

ConfigChange StreamCore::KeepGenerated(GeneratedConfig generated) {
  ConfigChange change;
  for (auto& [type_url, type] : generated) {
    if (type.view == nullptr) continue;  // a session breaking its contract keeps the old view
    generated_[type_url] = std::move(type.view);
    // An empty list still names the type: a first view with nothing in it must be answered.
    if (type.changed != nullptr) change.types[type_url] = std::move(type.changed);
  }
  return change;
}

std::string StreamCore::PushTargetName() const { return StrCat("stream-", stream_id_); }

void StreamCore::EnqueueRequest(Request request) {
  {
    MutexLock lock(&mu_);
    requests_.push_back(std::move(request));
  }
  Kick();
}

void StreamCore::OnReadsDone() {
  {
    MutexLock lock(&mu_);
    reads_done_ = true;
  }
  Kick();
}

void StreamCore::OnMalformedRequest(absl::Status status) {
  {
    MutexLock lock(&mu_);
    transport_error_ = std::move(status);
  }
  Kick();
}

void StreamCore::OnWriteDone(bool ok) {
  {
    MutexLock lock(&mu_);
    writes_done_++;
    if (!ok) write_failed_ = true;
  }
  Kick();
}

void StreamCore::Close() {
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
  session_.reset();
  // No push can be queued for the stream now; forget what is queued and free its slot.
  if (env_.dispatcher != nullptr) env_.dispatcher->Remove(this);
  if (node_bound_) metrics_->StreamClosed(ClientVersion());
  env_.ledger->CloseStream(stream_id_);
  Log().info("CLOSE stream={} node={}", stream_id_, node_log_);
  callbacks_->OnStreamClosed(stream_id_, node_);
}

absl::Status StreamCore::CheckNewType(size_t types) const {
  if (types >= env_.limits.max_types_per_stream) {
    return absl::ResourceExhaustedError(StrCat("the stream already has ", types, " types; the limit is ",
                                               env_.limits.max_types_per_stream, " (max_types_per_stream)"));
  }
  return absl::OkStatus();
}

std::string StreamCore::KeptError(const std::string& message) const {
  return TruncateUntrusted(message, env_.limits.max_error_detail_bytes);
}

std::string StreamCore::ClientVersion() const {
  return node_.user_agent_version().empty() ? std::string("unknown") : EscapeUntrusted(node_.user_agent_version(), 64);
}

void StreamCore::RecordSent(const OutgoingResponse& response) {
  if (response.heartbeat) {
    // Renews TTLs only: changes nothing the client holds and belongs to no push; the ledger
    // still moves, since the client answers its nonce.
    env_.ledger->RecordSent(*ledger_stream_, response.type_url, response.nonce, response.version,
                            response.resources.size(), env_.clock->Now());
    Log().info("SENT stream={} node={} type={} version={} nonce={} resources={} heartbeat=true", stream_id_, node_log_,
               response.type_url, response.version, response.nonce, response.resources.size());
    return;
  }
  RecordSentSummary(SentSummary{response.type_url, response.version, response.nonce, response.resources, nullptr, 0,
                                /*delta=*/false, response.partial});
}

void StreamCore::RecordSent(const OutgoingDeltaResponse& response) {
  RecordSentSummary(SentSummary{response.type_url, response.system_version, response.nonce, response.resources,
                                &response.removed, response.heartbeats.size(), /*delta=*/true});
}

void StreamCore::RecordSentSummary(const SentSummary& sent) {
  env_.ledger->RecordSent(*ledger_stream_, sent.type_url, sent.nonce, sent.version, sent.resources.size(),
                          env_.clock->Now(), SentResources{&sent.resources, sent.removed, sent.delta || sent.partial});
  size_t bytes = 0;
  for (const ResourcePtr& resource : sent.resources) bytes += resource->serialized().size();
  metrics_->Sent(sent.type_url, bytes);
  // Endpoint-only pushes log their sends at debug level, everything else at info (the
  // pipeline's periodic summary counts the former). Judged before the send is accounted.
  const spdlog::level::level_enum level =
      accounting_.ActiveIsEndpointOnly() ? spdlog::level::debug : spdlog::level::info;
  accounting_.Sent(sent.type_url, sent.version, sent.nonce);
  if (sent.delta) {
    Log().log(level,
              "SENT stream={} node={} type={} version={} nonce={} resources={} removed={} heartbeats={} delta=true",
              stream_id_, node_log_, sent.type_url, sent.version, sent.nonce, sent.resources.size(),
              sent.removed->size(), sent.heartbeats);
  } else {
    Log().log(level, "SENT stream={} node={} type={} version={} nonce={} resources={}", stream_id_, node_log_,
              sent.type_url, sent.version, sent.nonce, sent.resources.size());
  }
  // The summary copies every name: built only for an embedder's callbacks, never per send
  // for the null object (a 2,000-cluster CDS response to each of 10,000 proxies).
  if (callbacks_ == &NoCallbacks()) return;
  ResponseInfo info;
  info.node_id = node_.id();
  info.type_url = sent.type_url;
  info.version = sent.version;
  info.nonce = sent.nonce;
  info.delta = sent.delta;
  for (const ResourcePtr& resource : sent.resources) info.resource_names.push_back(resource->name());
  if (sent.removed != nullptr) info.removed_names = *sent.removed;
  callbacks_->OnStreamResponse(stream_id_, info);
}

void StreamCore::NoteMissing(const std::string& type_url, const std::string& name) {
  if (missing_noted_.size() > kMaxMissingNamesNoted) return;
  if (missing_noted_.size() == kMaxMissingNamesNoted) {
    missing_noted_.insert("");  // the marker: the next ones are not said
    Log().info("MISSING stream={} node={} more names than {} are missing; no more are logged", stream_id_, node_log_,
               kMaxMissingNamesNoted);
    return;
  }
  if (!missing_noted_.insert(StrCat(type_url, " ", name)).second) return;
  metrics_->MissingName(type_url);
  const bool named_by_client = type_url == kListenerType || type_url == kClusterType;
  // "reviews:9080" rather than "reviews.shop.svc.cluster.local:9080": the commonest miss.
  const std::string_view host = std::string_view(name).substr(0, name.rfind(':'));
  const char* hint = type_url == kListenerType && host.find('.') == std::string_view::npos
                         ? " (a host without a domain: a short name?)"
                         : "";
  Log().log(named_by_client ? spdlog::level::info : spdlog::level::debug,
            "MISSING stream={} node={} type={} name={}: subscribed, but not in the configuration served{}", stream_id_,
            node_log_, type_url, Untrusted(name), hint);
}

void StreamCore::RecordAnswer(const std::string& type_url, const std::string& nonce, const std::string& client_version,
                              const google::rpc::Status* error, bool delta) {
  // The message is kept (ledger, callbacks, convergence records) only up to the limit.
  const std::string kept_error = error != nullptr ? KeptError(error->message()) : "";
  FeedbackEvent event = env_.ledger->RecordFeedback(*ledger_stream_, type_url, nonce, client_version,
                                                    error != nullptr ? &kept_error : nullptr,
                                                    error != nullptr ? error->code() : 0, env_.clock->Now());
  event.node_id = node_.id();
  const bool answers_endpoint_only = accounting_.Answered(event);
  const char* const delta_tag = delta ? " delta=true" : "";
  switch (event.kind) {
    case FeedbackKind::kAck:
      metrics_->Acked(type_url);
      // An endpoint change reaches every proxy: a line per proxy at info level, written while the
      // push still runs, would flood the log and slow the push. At debug, as its sends are.
      Log().log(answers_endpoint_only ? spdlog::level::debug : spdlog::level::info,
                "ACK stream={} node={} type={} nonce={} version={}{}{}", stream_id_, node_log_, Untrusted(type_url),
                Untrusted(nonce), event.sent_version, delta_tag, event.stale ? " stale=true" : "");
      break;
    case FeedbackKind::kNack:
      // The client keeps what it had; the rejected content is not sent again because of it
      // (docs/protocol-rules.md, R10.8).
      metrics_->Rejected(type_url);
      Log().warn("NACK stream={} node={} type={} nonce={} sent_version={} accepted_version={} error=\"{}\"{}{}",
                 stream_id_, node_log_, Untrusted(type_url), Untrusted(nonce), event.sent_version,
                 Untrusted(client_version), UntrustedQuoted(event.error, 1024), delta_tag,
                 event.stale ? " stale=true" : "");
      break;
    case FeedbackKind::kUnmatched:
      Log().info("UNMATCHED stream={} node={} type={} nonce={} version={} nack={}{}", stream_id_, node_log_,
                 Untrusted(type_url), Untrusted(nonce), Untrusted(client_version), error != nullptr, delta_tag);
      break;
  }
  callbacks_->OnFeedback(event);
}

void StreamCore::ArmHeartbeat() {
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

void StreamCore::WriteStarting(bool more_follows) {
  write_in_flight_ = true;
  round_open_ = more_follows;
  write_started_ = env_.clock->Now();
  if (send_timer_ == nullptr) ArmSendTimer(env_.send_timeout);
}

void StreamCore::EndStream(const absl::Status& status, bool abort) {
  if (finished_) return;
  finished_ = true;
  if (accounting_.active()) FinishPush();
  if (!status.ok()) {
    Log().warn("END stream={} node={} code={} error=\"{}\"", stream_id_, node_log_,
               absl::StatusCodeToString(status.code()), UntrustedQuoted(std::string(status.message()), 1024));
  }
  abort ? base_transport_->AbortStream(status) : base_transport_->FinishStream(status);
}

void StreamCore::FinishPush() {
  accounting_.Finish();
  if (env_.dispatcher != nullptr) env_.dispatcher->Done(this);
}

void StreamCore::ArmSendTimer(absl::Duration delay) {
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

void StreamCore::CheckSendTimeout() {
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
             absl::FormatDuration(waited), absl::FormatDuration(env_.send_timeout), accounting_.active());
  if (finished_) {
    base_transport_->AbortStream(status);  // finished while a write was stuck behind it
  } else {
    EndStream(status, /*abort=*/true);
  }
}

PushRequestPtr StreamCore::ToPushRequest(const ConfigChange& change) const {
  auto request = std::make_shared<PushRequest>();
  request->resources = change;
  request->reasons[reason::kSnapshot] = 1;
  request->start = change.change_time != absl::InfiniteFuture() ? change.change_time : env_.clock->Now();
  if (change.change_id != 0) request->change_ids.insert(change.change_id);
  return request;
}

bool StreamCore::TakeEvent(Event& event) {
  MutexLock lock(&mu_);
  if (closed_) {
    processing_ = false;
    return false;
  }
  using Kind = Event::Kind;
  if (admitted_) {
    admitted_ = false;
    event.kind = Kind::kAdmitted;
  } else if (send_check_due_ && writes_done_ == 0) {
    // Before requests, so a client that keeps sending cannot postpone it; after any queued
    // write completion, so a write that did complete is never timed out.
    send_check_due_ = false;
    event.kind = Kind::kSendCheck;
  } else if (!requests_.empty() && !(round_open_ && write_in_flight_ && !finished_)) {
    event.kind = Kind::kRequest;
    event.request = std::move(requests_.front());
    requests_.pop_front();
  } else if (writes_done_ > 0) {
    writes_done_--;
    event.kind = Kind::kWriteDone;
    event.write_ok = !write_failed_;
  } else if (transport_error_.has_value()) {
    event.kind = Kind::kTransportError;
    event.error = std::move(*transport_error_);
    transport_error_.reset();
  } else if (reads_done_) {
    reads_done_ = false;
    event.kind = Kind::kReadsDone;
  } else if (!changes_.empty()) {
    event.kind = Kind::kChange;
    event.change = std::move(changes_.front());
    changes_.pop_front();
  } else if (heartbeat_due_) {
    heartbeat_due_ = false;
    event.kind = Kind::kHeartbeat;
  } else {
    processing_ = false;
    return false;
  }
  return true;
}

void StreamCore::Kick() {
  {
    MutexLock lock(&mu_);
    if (processing_ || closed_) return;
    processing_ = true;
  }
  for (;;) {
    Event event;
    if (!TakeEvent(event)) return;
    Process(event);
  }
}

void StreamCore::Process(Event& event) {
  using Kind = Event::Kind;
  if (event.kind == Kind::kSendCheck) {
    CheckSendTimeout();
    return;
  }
  if (finished_) {                                                 // the stream is over: events are drained and dropped
    if (event.kind == Kind::kWriteDone) write_in_flight_ = false;  // (the send timeout looks at it)
    if (event.kind == Kind::kChange && event.change->push != nullptr && env_.dispatcher != nullptr) {
      env_.dispatcher->Done(this);
    }
    return;
  }
  bool generated_push = false;
  switch (event.kind) {
    case Kind::kAdmitted:
      base_transport_->ReadNext();
      break;
    case Kind::kRequest:
      if (CheckRequest(*event.request)) HandleRequest(*event.request);
      if (!finished_) base_transport_->ReadNext();
      break;
    case Kind::kWriteDone:
      write_in_flight_ = false;
      if (!event.write_ok) {
        EndStream(absl::UnavailableError("write to the client failed"));
        return;
      }
      break;
    case Kind::kTransportError:
      EndStream(event.error);
      return;
    case Kind::kReadsDone:
      EndStream(absl::OkStatus());
      return;
    case Kind::kChange:
      if (event.change->push != nullptr) {
        accounting_.Begin(event.change->push);
        // A generator computes the proxy's resources for the push only now, inside the
        // throttle slot (held until the first write starts, below).
        HandleChange(session_ != nullptr ? KeepGenerated(session_->Generate(*event.change->push))
                                         : event.change->change);
        generated_push = true;
      } else {
        HandleChange(event.change->change);
      }
      break;
    case Kind::kHeartbeat:
      heartbeat_timer_.reset();  // it fired; ArmHeartbeat schedules the next one
      HandleHeartbeat();
      break;
    case Kind::kSendCheck:
      break;  // handled above
  }
  if (!finished_ && node_bound_ && !write_in_flight_) SendNext();
  // Computed and first write started: the slot goes on; the push is in progress until Done.
  if (generated_push && accounting_.active() && env_.dispatcher != nullptr) env_.dispatcher->Generated(this);
  if (accounting_.active() && !write_in_flight_) FinishPush();
}

absl::Status StreamCore::CheckNodeLimits(const Node& node) const {
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

bool StreamCore::BindNode(const Node& node) {
  node_ = node;
  node_log_ = EscapeUntrusted(node_.id());
  if (env_.authenticator != nullptr) {
    // May rewrite node_ into what the stream is served as (the authenticated namespace).
    if (absl::Status status = env_.authenticator->Authorize(identity_, node_); !status.ok()) {
      EndStream(status);
      return false;
    }
  }
  node_bound_ = true;
  const auto& features = node_.client_features();
  client_supports_ttl_ = std::find(features.begin(), features.end(), kClientFeatureResourceTtl) != features.end();
  client_supports_resource_in_sotw_ =
      std::find(features.begin(), features.end(), kClientFeatureResourceInSotw) != features.end();
  accounting_.SetTarget(PushTargetInfo{stream_id_, node_.id()});
  env_.ledger->SetNode(*ledger_stream_, node_.id(), identity_.Describe());
  metrics_->StreamOpened(ClientVersion());
  Log().info("OPEN stream={} node={} service={} identity={}", stream_id_, node_log_, ServiceName(),
             EscapeUntrusted(identity_.Describe()));
  // Every push goes through the PushQueue (merged per stream, one push in progress) and the
  // throttle; without a dispatcher (protocol tests) it is handled at once.
  if (env_.generator != nullptr) {
    session_ = env_.generator->Open(
        node_,
        [this](PushRequestPtr push) {
          if (env_.dispatcher != nullptr) {
            env_.dispatcher->Enqueue(this, accounting_.target(), std::move(push));
          } else {
            QueueChange(QueuedChange{ConfigChange{}, std::move(push)});
          }
        },
        identity_);
    return true;
  }
  watch_ = env_.watcher->CreateWatch(node_, [this](const ConfigChange& change) {
    if (env_.dispatcher != nullptr) {
      env_.dispatcher->Enqueue(this, accounting_.target(), ToPushRequest(change));
    } else {
      QueueChange(QueuedChange{change, nullptr});
    }
  });
  return true;
}

bool StreamCore::CheckRequest(Request& request) {
  const Node* node = std::visit([](const auto& r) { return r.has_node() ? &r.node() : nullptr; }, request);
  std::string* type_url = std::visit([](auto& r) { return r.mutable_type_url(); }, request);
  if (node != nullptr) {
    if (absl::Status status = CheckNodeLimits(*node); !status.ok()) {
      EndStream(status);
      return false;
    }
  }
  if (!node_bound_) {
    if (node == nullptr || node->id().empty()) {
      EndStream(absl::InvalidArgumentError("the first request on a stream must carry node.id"));
      return false;
    }
    if (!BindNode(*node)) return false;
  } else if (node != nullptr && !node->id().empty() && node->id() != node_.id()) {
    EndStream(absl::InvalidArgumentError(
        StrCat("node.id changed on the stream from \"", node_log_, "\" to \"", EscapeUntrusted(node->id()), "\"")));
    return false;
  }
  if (type_url->size() > env_.limits.max_type_url_bytes) {
    EndStream(absl::InvalidArgumentError(StrCat("type_url is ", type_url->size(), " bytes; the limit is ",
                                                env_.limits.max_type_url_bytes, " (max_type_url_bytes)")));
    return false;
  }
  if (fixed_type_url_.empty()) {
    if (type_url->empty()) {
      EndStream(absl::InvalidArgumentError("an ADS request must carry type_url"));
      return false;
    }
  } else if (type_url->empty()) {
    *type_url = fixed_type_url_;
  } else if (*type_url != fixed_type_url_) {
    EndStream(absl::InvalidArgumentError(
        StrCat("type_url ", EscapeUntrusted(*type_url), " on the discovery service for ", fixed_type_url_)));
    return false;
  }
  if (absl::Status status = CheckLimits(request); !status.ok()) {
    EndStream(status);
    return false;
  }
  if (watch_ != nullptr) watch_->RecordRequest();
  if (absl::Status status = RunRequestCallback(request); !status.ok()) {
    EndStream(status);
    return false;
  }
  return true;
}

}  // namespace cxds
