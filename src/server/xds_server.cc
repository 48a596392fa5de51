#include "server/xds_server.h"

#include "server/csds_service.h"

#include "server/tls_credentials.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "grpc/grpc.h"
#include "grpcpp/security/server_credentials.h"

#include "common/tsan.h"
#include "envoy/service/cluster/v3/cds.grpc.pb.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "envoy/service/endpoint/v3/eds.grpc.pb.h"
#include "envoy/service/listener/v3/lds.grpc.pb.h"
#include "envoy/service/route/v3/rds.grpc.pb.h"
#include "envoy/service/secret/v3/sds.grpc.pb.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "protocol/descriptors.h"
#include "protocol/type_url.h"
#include "server/delta_stream.h"
#include "server/response_encoding.h"
#include "server/sotw_stream.h"
#include "server/transport_settings.h"

namespace cxds {

namespace {
using RawBidiReactor = grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>;

grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

grpc::ServerUnaryReactor* RejectUnary(grpc::CallbackServerContext* context, std::string message) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, std::move(message)));
  return reactor;
}
}  // namespace

class XdsServer::Impl {
 public:
  // Exactly one of `watcher` and `generator` is set.
  Impl(ConfigWatcher* watcher, ProxyGenerator* generator, Options options)
      : options_(std::move(options)),
        clock_(options_.clock != nullptr ? *options_.clock : RealClock()),
        metrics_(options_.metrics),
        env_(MakeEnvironment(watcher, generator)) {
    // Before any stream thread reads a descriptor (descriptors.h says why). A missing root type
    // is a build error that PreloadDescriptorsTest catches; the server works without the preload.
    (void)PreloadXdsDescriptors();
  }

  StreamEnvironment MakeEnvironment(ConfigWatcher* watcher, ProxyGenerator* generator) {
    StreamEnvironment env{watcher, &ledger_, options_.callbacks, &clock_, options_.control_plane_id};
    env.generator = generator;
    env.scheduler = options_.scheduler;
    const bool send_timeout = options_.send_timeout > absl::ZeroDuration();
    if ((options_.max_new_streams_per_second > 0 || send_timeout) && env.scheduler == nullptr) {
      own_scheduler_ = std::make_unique<RealScheduler>();
      env.scheduler = own_scheduler_.get();
    }
    env.send_timeout = options_.send_timeout;
    env.limits = options_.limits;
    if (options_.max_new_streams_per_second > 0) {
      admission_ = std::make_unique<AdmissionLimiter>(options_.max_new_streams_per_second, absl::Seconds(1), clock_);
      env.admission = admission_.get();
    }
    env.dispatcher = options_.dispatcher;
    if (env.dispatcher == nullptr) {
      PushDispatcher::Options dispatch;
      dispatch.max_in_flight = options_.push_throttle;
      dispatch.worker_threads = options_.push_workers;
      dispatch.clock = &clock_;
      dispatch.metrics = options_.metrics;
      dispatch.observer = options_.observer;
      own_dispatcher_ = std::make_unique<PushDispatcher>(dispatch);
      env.dispatcher = own_dispatcher_.get();
    }
    env.observer = options_.observer != nullptr ? options_.observer : env.dispatcher->observer();
    env.metrics = &metrics_;
    env.ready = options_.ready;
    env.authenticator = options_.authenticator;
    return env;
  }

  RawBidiReactor* NewSotwReactor(grpc::CallbackServerContext* context, std::string type_url);
  RawBidiReactor* NewDeltaReactor(grpc::CallbackServerContext* context, std::string type_url);

  AckLedger ledger_;
  std::atomic<int64_t> next_stream_id_{1};
  std::atomic<int64_t> open_streams_{0};
  const Options options_;
  Clock& clock_;
  ServerMetrics metrics_;
  std::unique_ptr<RealScheduler> own_scheduler_;
  std::unique_ptr<AdmissionLimiter> admission_;
  std::unique_ptr<PushDispatcher> own_dispatcher_;
  const StreamEnvironment env_;
  std::vector<std::unique_ptr<grpc::Service>> services_;
};

namespace {

// Adapts one gRPC callback stream to a stream state machine (SotwStream or DeltaStream).
// Requests are parsed here; responses are encoded from shared resource bytes and written one at
// a time.
template <typename Stream, typename Request, typename Transport, typename Response,
          grpc::ByteBuffer (*Encode)(const Response&, const std::string&)>
class XdsReactor final : public RawBidiReactor, public Transport {
 public:
  XdsReactor(XdsServer::Impl* server, grpc::CallbackServerContext* context, std::string type_url)
      : server_(server),
        context_(context),
        stream_(server->env_, server->next_stream_id_.fetch_add(1), std::move(type_url), this) {
    server_->open_streams_.fetch_add(1);
    const Authenticator* authenticator = server->options_.authenticator;
    stream_.Start(authenticator != nullptr ? authenticator->Authenticate(PeerOf(*context)) : PeerIdentity{});
    TsanRelease(this);
  }

  // Every reaction starts with TsanAcquire and every operation is started after TsanRelease:
  // gRPC orders them through its completion queue, which ThreadSanitizer cannot see.
  void OnReadDone(bool ok) override {
    TsanAcquire(this);
    if (!ok) {
      stream_.OnReadsDone();
      return;
    }
    Request request;
    grpc::Status parsed = grpc::SerializationTraits<Request>::Deserialize(&read_buffer_, &request);
    if (!parsed.ok()) {
      stream_.OnMalformedRequest(absl::InvalidArgumentError(StrCat("malformed ", Request::descriptor()->name())));
      return;
    }
    stream_.OnRequest(std::move(request));
  }

  void OnWriteDone(bool ok) override {
    TsanAcquire(this);
    stream_.OnWriteDone(ok);
  }

  void OnDone() override {
    TsanAcquire(this);
    stream_.Close();
    server_->open_streams_.fetch_sub(1);
    delete this;
  }

  // The transport (called only from the stream's event processing).
  void ReadNext() override {
    TsanRelease(this);
    StartRead(&read_buffer_);
  }
  void WriteResponse(const Response& response, bool more_follows) override {
    write_buffer_ = Encode(response, server_->options_.control_plane_id);
    TsanRelease(this);
    // A hinted write stays in gRPC's stream buffer (it still completes at once) until the
    // round's last, unhinted one flushes them all in one TCP write.
    StartWrite(&write_buffer_, more_follows ? grpc::WriteOptions().set_buffer_hint() : grpc::WriteOptions());
  }
  void FinishStream(const absl::Status& status) override {
    finish_called_ = true;
    TsanRelease(this);
    Finish(ToGrpcStatus(status));
  }
  void AbortStream(const absl::Status& status) override {
    // Finish alone would wait behind the stuck write; cancelling the call fails the write
    // (OnWriteDone(false)) and sends `status` to the client now. TryCancel does the same with
    // CANCELLED; this keeps the reason.
    const std::string message(status.message());
    grpc_call_cancel_with_status(context_->c_call(), static_cast<grpc_status_code>(status.code()), message.c_str(),
                                 nullptr);
    if (!finish_called_) FinishStream(status);  // every call must be finished, cancelled or not
  }

 private:
  XdsServer::Impl* const server_;
  grpc::CallbackServerContext* const context_;
  bool finish_called_ = false;  // confined to the stream's event processing
  Stream stream_;
  grpc::ByteBuffer read_buffer_;
  grpc::ByteBuffer write_buffer_;
};

using SotwReactor = XdsReactor<SotwStream, envoy::service::discovery::v3::DiscoveryRequest, StreamTransport,
                               OutgoingResponse, &EncodeSotwResponse>;
using DeltaReactor = XdsReactor<DeltaStream, envoy::service::discovery::v3::DeltaDiscoveryRequest, DeltaTransport,
                                OutgoingDeltaResponse, &EncodeDeltaResponse>;

constexpr char kFetchNotServed[] = "cxds does not serve REST-style Fetch; use a stream";

// One class per generated service: the stream method goes to a SotwStream of that type, the
// delta method to a DeltaStream; the fetch method is refused with UNIMPLEMENTED.
#define CXDS_SOTW_SERVICE(ClassName, Svc, Stream, Delta, Fetch, TypeUrl)                                              \
  class ClassName final : public Svc::WithRawCallbackMethod_##Stream<                                                 \
                              Svc::WithRawCallbackMethod_##Delta<Svc::WithRawCallbackMethod_##Fetch<Svc::Service>>> { \
   public:                                                                                                            \
    explicit ClassName(XdsServer::Impl* impl) : impl_(impl) {}                                                        \
    RawBidiReactor* Stream(grpc::CallbackServerContext* context) override {                                           \
      return impl_->NewSotwReactor(context, std::string(TypeUrl));                                                    \
    }                                                                                                                 \
    RawBidiReactor* Delta(grpc::CallbackServerContext* context) override {                                            \
      return impl_->NewDeltaReactor(context, std::string(TypeUrl));                                                   \
    }                                                                                                                 \
    grpc::ServerUnaryReactor* Fetch(grpc::CallbackServerContext* context, const grpc::ByteBuffer*,                    \
                                    grpc::ByteBuffer*) override {                                                     \
      return RejectUnary(context, kFetchNotServed);                                                                   \
    }                                                                                                                 \
                                                                                                                      \
   private:                                                                                                           \
    XdsServer::Impl* const impl_;                                                                                     \
  };

CXDS_SOTW_SERVICE(ClusterService, envoy::service::cluster::v3::ClusterDiscoveryService, StreamClusters, DeltaClusters,
                  FetchClusters, kClusterType)
CXDS_SOTW_SERVICE(ListenerService, envoy::service::listener::v3::ListenerDiscoveryService, StreamListeners,
                  DeltaListeners, FetchListeners, kListenerType)
CXDS_SOTW_SERVICE(RouteService, envoy::service::route::v3::RouteDiscoveryService, StreamRoutes, DeltaRoutes,
                  FetchRoutes, kRouteType)
CXDS_SOTW_SERVICE(EndpointService, envoy::service::endpoint::v3::EndpointDiscoveryService, StreamEndpoints,
                  DeltaEndpoints, FetchEndpoints, kEndpointType)
CXDS_SOTW_SERVICE(SecretService, envoy::service::secret::v3::SecretDiscoveryService, StreamSecrets, DeltaSecrets,
                  FetchSecrets, kSecretType)
#undef CXDS_SOTW_SERVICE

using Ads = envoy::service::discovery::v3::AggregatedDiscoveryService;
class AggregatedService final : public Ads::WithRawCallbackMethod_StreamAggregatedResources<
                                    Ads::WithRawCallbackMethod_DeltaAggregatedResources<Ads::Service>> {
 public:
  explicit AggregatedService(XdsServer::Impl* impl) : impl_(impl) {}
  RawBidiReactor* StreamAggregatedResources(grpc::CallbackServerContext* context) override {
    return impl_->NewSotwReactor(context, "");
  }
  RawBidiReactor* DeltaAggregatedResources(grpc::CallbackServerContext* context) override {
    return impl_->NewDeltaReactor(context, "");
  }

 private:
  XdsServer::Impl* const impl_;
};

}  // namespace

RawBidiReactor* XdsServer::Impl::NewSotwReactor(grpc::CallbackServerContext* context, std::string type_url) {
  return new SotwReactor(this, context, std::move(type_url));
}

RawBidiReactor* XdsServer::Impl::NewDeltaReactor(grpc::CallbackServerContext* context, std::string type_url) {
  return new DeltaReactor(this, context, std::move(type_url));
}

XdsServer::XdsServer(ConfigWatcher& watcher, Options options)
    : impl_(std::make_unique<Impl>(&watcher, nullptr, std::move(options))) {}

XdsServer::XdsServer(ProxyGenerator& generator, Options options)
    : impl_(std::make_unique<Impl>(nullptr, &generator, std::move(options))) {}

XdsServer::~XdsServer() = default;

void XdsServer::RegisterServices(grpc::ServerBuilder& builder) {
  impl_->services_.push_back(std::make_unique<AggregatedService>(impl_.get()));
  impl_->services_.push_back(std::make_unique<ClusterService>(impl_.get()));
  impl_->services_.push_back(std::make_unique<ListenerService>(impl_.get()));
  impl_->services_.push_back(std::make_unique<RouteService>(impl_.get()));
  impl_->services_.push_back(std::make_unique<EndpointService>(impl_.get()));
  impl_->services_.push_back(std::make_unique<SecretService>(impl_.get()));
  // CSDS beside xDS, as istiod serves it: what each proxy was sent and what it said of it.
  impl_->services_.push_back(MakeCsdsService(impl_->ledger_, impl_->options_.authenticator));
  for (auto& service : impl_->services_) builder.RegisterService(service.get());
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<size_t>(impl_->options_.limits.max_request_bytes, INT_MAX)));
  ApplyXdsTransportSettings(builder);
}

absl::StatusOr<std::unique_ptr<grpc::Server>> XdsServer::Start(const std::string& address, int* bound_port) {
  grpc::ServerBuilder builder;
  int port = 0;
  std::shared_ptr<grpc::ServerCredentials> credentials =
      impl_->options_.credentials != nullptr ? impl_->options_.credentials : grpc::InsecureServerCredentials();
  builder.AddListeningPort(address, credentials, &port);
  RegisterServices(builder);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    if (server != nullptr) server->Shutdown();
    return absl::UnavailableError(StrCat("cannot listen for xDS on ", address,
                                         ": the port is in use (another control plane?) or the address is not local"));
  }
  if (bound_port != nullptr) *bound_port = port;
  return server;
}

const AckLedger& XdsServer::ledger() const { return impl_->ledger_; }

int64_t XdsServer::open_streams() const { return impl_->open_streams_.load(); }

PushDispatcher& XdsServer::dispatcher() { return *impl_->env_.dispatcher; }

}  // namespace cxds
