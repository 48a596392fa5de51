#include "proxy_stream.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "common/strings.h"
#include "google/rpc/status.pb.h"
#include "grpcpp/grpcpp.h"

namespace cxds::load {

namespace {
using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using envoy::service::discovery::v3::DeltaDiscoveryResponse;
using envoy::service::discovery::v3::DiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryResponse;

// Stamp index of the ACK that completes the first configuration; changes are 1..K.
constexpr int kStampComplete = 0;

// The write queue, stamps and lifecycle every stream kind shares. gRPC allows one write in
// flight per stream, and OnReadDone (which queues ACKs) and OnWriteDone may run on different
// threads at once, so the queue is under a mutex. Protocol state is touched only by
// OnReadDone, which gRPC never runs twice at once for one stream (one read in flight).
template <typename Request, typename Response>
class StreamReactor : public grpc::ClientBidiReactor<Request, Response>, public ProxyStream {
 public:
  explicit StreamReactor(StreamConfig config) : config_(std::move(config)), model_(config_.style, config_.listeners) {
    result_.change_ns.assign(config_.changes + 1, 0);
    // Like a proxy that retries its control plane: a refused connection (a server still
    // starting, a full accept queue) is retried with backoff, within the run's --duration.
    context_.set_wait_for_ready(true);
  }

  void Stop() override {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    context_.TryCancel();
  }

  StreamResult Result() const override {
    MutexLock lock(&mu_);
    return result_;
  }

  void ExpectEnd() override {
    MutexLock lock(&mu_);
    stopping_ = true;
  }

 protected:
  struct Outgoing {
    Request request;
    std::vector<int> stamps;  // stamped when the write starts
  };

  // Queues the initial requests (the first carries the node), then starts the call.
  void StartWith(std::vector<Request> initial) {
    {
      MutexLock lock(&mu_);
      result_.start_ns = NowNanos();
    }
    config_.stats->started++;
    if (!initial.empty()) initial.front().mutable_node()->CopyFrom(config_.node);
    for (Request& request : initial) Send(std::move(request), {});
    this->StartRead(&response_);
    this->StartCall();
  }

  void Send(Request request, std::vector<int> stamps) {
    {
      MutexLock lock(&mu_);
      if (write_failed_) return;
      queue_.push_back({std::move(request), std::move(stamps)});
      if (writing_) return;
      PopLocked();
    }
    WriteCurrent();
  }

  // Records a measured moment; each is recorded once per stream.
  void Stamp(int stamp, int64_t now) {
    MutexLock lock(&mu_);
    if (stamp > result_.latest_change) {
      const int64_t since = result_.latest_change_ns != 0 ? result_.latest_change_ns : result_.start_ns;
      result_.max_update_gap_ns = std::max(result_.max_update_gap_ns, now - since);
      result_.latest_change = stamp;
      result_.latest_change_ns = now;
    }
    if (stamp == kStampComplete) {
      if (result_.complete_ns != 0) return;
      result_.complete_ns = now;
      config_.stats->complete++;
    } else if (stamp > 0 && stamp <= config_.changes && result_.change_ns[stamp] == 0) {
      result_.change_ns[stamp] = now;
      config_.stats->converged[stamp]++;
    }
  }

  // Called for each response received; returns the first-response and receipt bookkeeping.
  void NoteReceipt(int64_t now) {
    MutexLock lock(&mu_);
    result_.last_receipt_ns = now;
    if (result_.first_response_ns == 0) {
      result_.first_response_ns = now;
      config_.stats->responded++;
    }
  }

  void NoteError(const std::string& error) {
    config_.stats->errors++;
    MutexLock lock(&mu_);
    if (result_.error.empty()) result_.error = error;
  }

  TypeCounters& CountersOf(std::optional<XdsType> type) {
    return type.has_value() ? config_.stats->types[*type] : config_.stats->other;
  }

  // Reads: each response is handled, then the next read starts.
  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream is over; OnDone follows
    Handle(response_);
    this->StartRead(&response_);
  }
  virtual void Handle(const Response& response) = 0;

  // The bookkeeping every response gets, whatever the protocol. Returns its type when it is
  // to be decoded and ACKed; nullopt when it was only counted (raw mode) or is of a type
  // nobody watches (an error).
  template <typename Resources>
  std::optional<XdsType> Receive(const std::string& type_url, size_t bytes, const Resources& resources,
                                 const std::string& version, int64_t now) {
    NoteReceipt(now);
    const std::optional<XdsType> type = TypeFromUrl(type_url);
    TypeCounters& counters = CountersOf(type);
    counters.responses++;
    counters.bytes += bytes;
    counters.resources += resources.size();
    size_t resource_bytes = 0;
    for (const auto& resource : resources) resource_bytes += resource.ByteSizeLong();
    counters.resource_bytes += resource_bytes;
    if (config_.expect == Expect::kRaw) {
      std::vector<int> changes;
      AddMarkedChanges(version, {}, &changes);
      for (int change : changes) Stamp(change, now);
      Stamp(kStampComplete, now);
      return std::nullopt;
    }
    if (!type.has_value()) NoteError(StrCat("response of unwatched type ", type_url));
    return type;
  }

  // Raw mode with --raw-ack: the receipt just counted is answered (and counted as an ACK).
  bool RawAcks(const std::string& type_url) {
    if (config_.expect != Expect::kRaw || !config_.raw_ack) return false;
    CountersOf(TypeFromUrl(type_url)).acks++;
    return true;
  }

  // Decodes one resource into `parsed` (and the endpoint ports it names into `ports`);
  // returns the error to NACK with, if it does not decode.
  std::optional<std::string> Decode(XdsType type, const google::protobuf::Any& any, std::vector<ParsedResource>* parsed,
                                    std::vector<uint32_t>* ports) {
    absl::StatusOr<ParsedResource> resource = ParseResource(type, any);
    if (!resource.ok()) return std::string(resource.status().message());
    ports->insert(ports->end(), resource->ports.begin(), resource->ports.end());
    parsed->push_back(*std::move(resource));
    return std::nullopt;
  }

  // The changes a response carries, by version or by endpoint port.
  void AddMarkedChanges(const std::string& version, const std::vector<uint32_t>& ports, std::vector<int>* changes) {
    const ChangeMarkers& markers = *config_.markers;
    if (auto it = markers.by_version.find(version); it != markers.by_version.end()) changes->push_back(it->second);
    for (uint32_t port : ports) {
      if (auto it = markers.by_endpoint_port.find(port); it != markers.by_endpoint_port.end()) {
        changes->push_back(it->second);
      }
    }
  }

  // Stamps of the ACK of the response just applied: the changes it carries and, the first
  // time the model is complete, the first configuration.
  std::vector<int> AckStamps(std::vector<int> changes) {
    if (!complete_ && model_.Complete()) {
      complete_ = true;
      changes.push_back(kStampComplete);
    }
    return changes;
  }

  StreamConfig config_;
  grpc::ClientContext context_;
  Response response_;  // the read in flight; touched only between StartRead and OnReadDone
  ProxyModel model_;   // protocol state: OnReadDone only
  bool complete_ = false;

 private:
  void PopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    current_ = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
  }

  // current_ belongs to the thread that set writing_ until OnWriteDone.
  void WriteCurrent() {
    const int64_t now = NowNanos();
    for (int stamp : current_.stamps) Stamp(stamp, now);
    this->StartWrite(&current_.request);
  }

  void OnWriteDone(bool ok) override {
    {
      MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) {
        write_failed_ = true;  // the stream is broken; OnDone follows
        queue_.clear();
        return;
      }
      if (queue_.empty()) return;
      PopLocked();
    }
    WriteCurrent();
  }

  void OnDone(const grpc::Status& status) override {
    RunStats* stats = config_.stats;
    {
      MutexLock lock(&mu_);
      result_.finished = true;
      if (!stopping_) {
        // Any end the run did not ask for is a failure, even OK: the proxy lost its stream.
        result_.failed = true;
        if (result_.error.empty()) {
          result_.error =
              StrCat("stream ended: code ", static_cast<int>(status.error_code()), " ", status.error_message());
        }
        stats->failed++;
        stats->errors++;
      }
    }
    stats->done++;  // last: the run may destroy this stream from now on
  }

  mutable Mutex mu_;
  std::deque<Outgoing> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  StreamResult result_ ABSL_GUARDED_BY(mu_);
  Outgoing current_;
};

class SotwStream final : public StreamReactor<DiscoveryRequest, DiscoveryResponse> {
 public:
  using StreamReactor::StreamReactor;

  std::unique_ptr<ProxyStream> Resume(StreamConfig) const override { return nullptr; }

  void Start(envoy::service::discovery::v3::AggregatedDiscoveryService::Stub* stub) override {
    stub->async()->StreamAggregatedResources(&context_, this);
    std::vector<DiscoveryRequest> initial;
    if (config_.expect == Expect::kRaw) {
      DiscoveryRequest request;
      request.set_type_url(std::string(TypeUrlOf(kEds)));
      request.add_resource_names("raw");
      initial.push_back(std::move(request));
    } else {
      for (const SubscriptionUpdate& update : model_.Start()) initial.push_back(Subscription(update));
    }
    StartWith(std::move(initial));
  }

 private:
  DiscoveryRequest Subscription(const SubscriptionUpdate& update) {
    DiscoveryRequest request;
    request.set_type_url(std::string(TypeUrlOf(update.type)));
    request.set_version_info(accepted_[update.type]);
    request.set_response_nonce(nonce_[update.type]);
    for (const std::string& name : update.names) request.add_resource_names(name);
    return request;
  }

  void Handle(const DiscoveryResponse& response) override {
    const std::optional<XdsType> type = Receive(response.type_url(), response.ByteSizeLong(), response.resources(),
                                                response.version_info(), NowNanos());
    if (!type.has_value()) {
      if (RawAcks(response.type_url())) {
        DiscoveryRequest ack;
        ack.set_type_url(response.type_url());
        ack.set_version_info(response.version_info());
        ack.set_response_nonce(response.nonce());
        ack.add_resource_names("raw");
        Send(std::move(ack), {});
      }
      return;
    }
    std::vector<ParsedResource> parsed;
    std::vector<uint32_t> ports;
    for (const google::protobuf::Any& any : response.resources()) {
      if (std::optional<std::string> error = Decode(*type, any, &parsed, &ports)) {
        Nack(*type, response, *error);
        return;
      }
    }
    model_.Apply(*type, std::move(parsed), {}, /*replace_all=*/*type == kCds || *type == kLds);
    accepted_[*type] = response.version_info();
    nonce_[*type] = response.nonce();
    std::vector<SubscriptionUpdate> updates = model_.FollowReferences();

    DiscoveryRequest ack;
    ack.set_type_url(response.type_url());
    ack.set_version_info(response.version_info());
    ack.set_response_nonce(response.nonce());
    if (!model_.wildcard(*type)) {
      for (const std::string& name : model_.names(*type)) ack.add_resource_names(name);
    }
    std::vector<int> changes;
    AddMarkedChanges(response.version_info(), ports, &changes);
    CountersOf(type).acks++;
    Send(std::move(ack), AckStamps(std::move(changes)));
    for (const SubscriptionUpdate& update : updates) Send(Subscription(update), {});
  }

  void Nack(XdsType type, const DiscoveryResponse& response, const std::string& error) {
    config_.stats->types[type].nacks++;
    nonce_[type] = response.nonce();
    DiscoveryRequest nack = Subscription(SubscriptionUpdate(type));
    if (!model_.wildcard(type)) {
      for (const std::string& name : model_.names(type)) nack.add_resource_names(name);
    }
    nack.mutable_error_detail()->set_code(grpc::StatusCode::INVALID_ARGUMENT);
    nack.mutable_error_detail()->set_message(error);
    Send(std::move(nack), {});
  }

  std::array<std::string, kXdsTypeCount> accepted_;  // last version ACKed, per type
  std::array<std::string, kXdsTypeCount> nonce_;     // last nonce received, per type
};

class DeltaStream final : public StreamReactor<DeltaDiscoveryRequest, DeltaDiscoveryResponse> {
 public:
  using StreamReactor::StreamReactor;

  // Called once the call is done, so the protocol state it copies is no longer touched.
  std::unique_ptr<ProxyStream> Resume(StreamConfig config) const override {
    auto next = std::make_unique<DeltaStream>(std::move(config));
    next->model_ = model_;
    next->complete_ = complete_;
    next->versions_ = versions_;
    next->resumed_ = true;
    return next;
  }

  void Start(envoy::service::discovery::v3::AggregatedDiscoveryService::Stub* stub) override {
    stub->async()->DeltaAggregatedResources(&context_, this);
    std::vector<DeltaDiscoveryRequest> initial;
    if (resumed_) {
      // A reconnecting proxy: the same subscriptions, and the version of every resource held.
      for (XdsType type : kAllTypes) {
        if (!model_.subscribed(type)) continue;
        DeltaDiscoveryRequest request;
        request.set_type_url(std::string(TypeUrlOf(type)));
        if (!model_.wildcard(type)) {
          for (const std::string& name : model_.names(type)) request.add_resource_names_subscribe(name);
        }
        for (const auto& [name, version] : versions_[type])
          (*request.mutable_initial_resource_versions())[name] = version;
        initial.push_back(std::move(request));
      }
    } else if (config_.expect == Expect::kRaw) {
      DeltaDiscoveryRequest request;
      request.set_type_url(std::string(TypeUrlOf(kEds)));
      request.add_resource_names_subscribe("raw");
      initial.push_back(std::move(request));
    } else {
      // An empty first request of a wildcard-capable type is a wildcard subscription.
      for (const SubscriptionUpdate& update : model_.Start()) initial.push_back(Subscription(update));
    }
    StartWith(std::move(initial));
  }

 private:
  static DeltaDiscoveryRequest Subscription(const SubscriptionUpdate& update) {
    DeltaDiscoveryRequest request;
    request.set_type_url(std::string(TypeUrlOf(update.type)));
    for (const std::string& name : update.added) request.add_resource_names_subscribe(name);
    for (const std::string& name : update.removed) request.add_resource_names_unsubscribe(name);
    return request;
  }

  void Handle(const DeltaDiscoveryResponse& response) override {
    const std::optional<XdsType> type = Receive(response.type_url(), response.ByteSizeLong(), response.resources(),
                                                response.system_version_info(), NowNanos());
    if (!type.has_value()) {
      if (RawAcks(response.type_url())) {
        DeltaDiscoveryRequest ack;
        ack.set_type_url(response.type_url());
        ack.set_response_nonce(response.nonce());
        Send(std::move(ack), {});
      }
      return;
    }
    std::vector<ParsedResource> parsed;
    std::vector<uint32_t> ports;
    for (const auto& resource : response.resources()) {
      if (!resource.has_resource()) continue;  // a TTL heartbeat: nothing new
      if (std::optional<std::string> error = Decode(*type, resource.resource(), &parsed, &ports)) {
        Nack(*type, response, *error);
        return;
      }
    }
    for (const auto& resource : response.resources()) {
      if (resource.has_resource()) versions_[*type][resource.name()] = resource.version();
    }
    if (config_.stats->record_versions && response.resources_size() > 0) {
      MutexLock lock(&config_.stats->versions_mu);
      for (const auto& resource : response.resources()) {
        if (resource.has_resource()) {
          config_.stats->versions_seen.insert(
              StrCat(ShortNameOf(*type), " ", resource.name(), " ", resource.version()));
        }
      }
    }
    for (const std::string& name : response.removed_resources()) versions_[*type].erase(name);
    std::vector<std::string> removed(response.removed_resources().begin(), response.removed_resources().end());
    model_.Apply(*type, std::move(parsed), removed, /*replace_all=*/false);
    std::vector<SubscriptionUpdate> updates = model_.FollowReferences();

    DeltaDiscoveryRequest ack;
    ack.set_type_url(response.type_url());
    ack.set_response_nonce(response.nonce());
    std::vector<int> changes;
    AddMarkedChanges(response.system_version_info(), ports, &changes);
    CountersOf(type).acks++;
    Send(std::move(ack), AckStamps(std::move(changes)));
    for (const SubscriptionUpdate& update : updates) Send(Subscription(update), {});
  }

  void Nack(XdsType type, const DeltaDiscoveryResponse& response, const std::string& error) {
    config_.stats->types[type].nacks++;
    DeltaDiscoveryRequest nack;
    nack.set_type_url(response.type_url());
    nack.set_response_nonce(response.nonce());
    nack.mutable_error_detail()->set_code(grpc::StatusCode::INVALID_ARGUMENT);
    nack.mutable_error_detail()->set_message(error);
    Send(std::move(nack), {});
  }

  // Per type: the version of each resource held (what initial_resource_versions carries).
  std::array<std::map<std::string, std::string>, kXdsTypeCount> versions_;
  bool resumed_ = false;
};
}  // namespace

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<ProxyStream> MakeProxyStream(StreamConfig config) {
  if (config.protocol == Protocol::kDelta) return std::make_unique<DeltaStream>(std::move(config));
  return std::make_unique<SotwStream>(std::move(config));
}

}  // namespace cxds::load
