#include "server/csds_service.h"

#include <algorithm>
#include <atomic>
#include <cctype>

#include "common/strings.h"
#include "envoy/service/status/v3/csds.grpc.pb.h"
#include "protocol/resource.h"
#include "server/sync_state.h"
#include "server/tls_credentials.h"

namespace cxds {
namespace {

using envoy::admin::v3::ClientResourceStatus;
using envoy::service::status::v3::ClientConfig;
using envoy::service::status::v3::ClientStatusRequest;
using envoy::service::status::v3::ClientStatusResponse;
using envoy::service::status::v3::ConfigStatus;
using envoy::type::matcher::v3::StringMatcher;

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whether `id` matches `matcher`; an error for a matcher cxds does not evaluate.
absl::StatusOr<bool> Matches(const StringMatcher& matcher, const std::string& id) {
  const bool fold = matcher.ignore_case();
  const std::string subject = fold ? Lower(id) : id;
  const auto pattern = [&](const std::string& p) { return fold ? Lower(p) : p; };
  switch (matcher.match_pattern_case()) {
    case StringMatcher::kExact:
      return subject == pattern(matcher.exact());
    case StringMatcher::kPrefix:
      return subject.starts_with(pattern(matcher.prefix()));
    case StringMatcher::kSuffix:
      return subject.ends_with(pattern(matcher.suffix()));
    case StringMatcher::kContains:
      return subject.find(pattern(matcher.contains())) != std::string::npos;
    default:
      return absl::InvalidArgumentError(
          "node_matchers: only exact, prefix, suffix and contains on node_id are supported by cxds");
  }
}

absl::StatusOr<bool> Selected(const ClientStatusRequest& request, const std::string& node_id) {
  if (request.node_matchers().empty()) return true;
  for (const auto& matcher : request.node_matchers()) {
    if (!matcher.node_metadatas().empty()) {
      return absl::InvalidArgumentError("node_matchers: node_metadatas is not supported by cxds");
    }
    if (!matcher.has_node_id()) return true;  // matches every node
    absl::StatusOr<bool> match = Matches(matcher.node_id(), node_id);
    if (!match.ok() || *match) return match;
  }
  return false;
}

bool Visible(const PeerIdentity* caller, const std::string& stream_identity) {
  if (caller == nullptr) return true;
  absl::StatusOr<PeerIdentity> identity = ParseSpiffeId(stream_identity);
  return identity.ok() && identity->trust_domain == caller->trust_domain &&
         identity->namespace_name == caller->namespace_name;
}

void SetTime(google::protobuf::Timestamp* out, absl::Time t) {
  const int64_t nanos = absl::ToUnixNanos(t);
  out->set_seconds(nanos / 1'000'000'000);
  out->set_nanos(static_cast<int32_t>(nanos % 1'000'000'000));
}

}  // namespace

absl::StatusOr<ClientStatusResponse> BuildClientStatus(const AckLedger& ledger, const ClientStatusRequest& request,
                                                       const PeerIdentity* caller, const CsdsOptions& options) {
  ClientStatusResponse response;
  size_t bytes = 0;
  const absl::Time now = RealClock().Now();
  for (const StreamSyncStatus& stream : ledger.AllStreams()) {
    if (stream.node_id.empty() || !Visible(caller, stream.identity)) continue;
    absl::StatusOr<bool> selected = Selected(request, stream.node_id);
    if (!selected.ok()) return selected.status();
    if (!*selected) continue;
    ClientConfig* config = response.add_config();
    config->mutable_node()->set_id(stream.node_id);
    bytes += stream.node_id.size() + 16;
    for (const HeldResources& held : ledger.Held(stream.stream_id)) {
      const auto status = std::find_if(stream.types.begin(), stream.types.end(),
                                       [&](const TypeSyncStatus& t) { return t.type_url == held.type_url; });
      if (status == stream.types.end()) continue;
      const TypeStatusCell cell = ClassifyType(*status, now);
      if (cell.state == TypeState::kNotSent) continue;
      for (const ResourcePtr& resource : held.resources) {
        auto* xds = config->add_generic_xds_configs();
        xds->set_type_url(held.type_url);
        xds->set_name(resource->name());
        xds->set_version_info(held.incremental ? resource->content_version() : status->sent_version);
        if (status->sent_time.has_value()) SetTime(xds->mutable_last_updated(), *status->sent_time);
        if (!request.exclude_resource_contents()) {
          xds->mutable_xds_config()->set_type_url(held.type_url);
          // Private keys never leave in a dump (Envoy's own CSDS redacts them too).
          xds->mutable_xds_config()->set_value(SerializedForDisplay(*resource));
          bytes += xds->xds_config().value().size();
        }
        switch (cell.state) {
          case TypeState::kSynced:
            xds->set_config_status(ConfigStatus::SYNCED);
            xds->set_client_status(ClientResourceStatus::ACKED);
            break;
          case TypeState::kNacked:
            xds->set_config_status(ConfigStatus::ERROR);
            xds->set_client_status(ClientResourceStatus::NACKED);
            xds->mutable_error_state()->set_details(status->last_nack->error);
            xds->mutable_error_state()->set_version_info(status->last_nack->sent_version);
            SetTime(xds->mutable_error_state()->mutable_last_update_attempt(), status->last_nack->time);
            break;
          default:
            xds->set_config_status(ConfigStatus::STALE);
            xds->set_client_status(ClientResourceStatus::UNKNOWN);
            break;
        }
        bytes += held.type_url.size() + resource->name().size() + 64;
        if (bytes > options.max_response_bytes) {
          return absl::ResourceExhaustedError(
              StrCat("the client status is over ", options.max_response_bytes,
                     " bytes: narrow it with node_matchers or exclude_resource_contents"));
        }
      }
    }
  }
  return response;
}

namespace {

class CsdsService final : public envoy::service::status::v3::ClientStatusDiscoveryService::Service {
 public:
  CsdsService(const AckLedger& ledger, const Authenticator* authenticator, CsdsOptions options)
      : ledger_(ledger), authenticator_(authenticator), options_(options) {}

  grpc::Status FetchClientStatus(grpc::ServerContext* context, const ClientStatusRequest* request,
                                 ClientStatusResponse* response) override {
    absl::StatusOr<std::optional<PeerIdentity>> caller = Caller(*context);
    if (!caller.ok()) return ToGrpc(caller.status());
    absl::StatusOr<ClientStatusResponse> built =
        BuildClientStatus(ledger_, *request, caller->has_value() ? &**caller : nullptr, options_);
    if (!built.ok()) return ToGrpc(built.status());
    *response = *std::move(built);
    return grpc::Status::OK;
  }

  grpc::Status StreamClientStatus(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<ClientStatusResponse, ClientStatusRequest>* stream) override {
    if (active_streams_.fetch_add(1) >= options_.max_streams) {
      active_streams_.fetch_sub(1);
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          StrCat("at most ", options_.max_streams, " client status streams at once"));
    }
    grpc::Status status = Serve(*context, *stream);
    active_streams_.fetch_sub(1);
    return status;
  }

 private:
  static grpc::Status ToGrpc(const absl::Status& status) {
    return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
  }

  // nullopt: no authenticator (anyone sees everything).
  absl::StatusOr<std::optional<PeerIdentity>> Caller(const grpc::ServerContext& context) const {
    if (authenticator_ == nullptr) return std::optional<PeerIdentity>();
    absl::StatusOr<PeerIdentity> identity = authenticator_->Authenticate(PeerOf(context));
    if (!identity.ok()) return identity.status();
    return std::optional<PeerIdentity>(*std::move(identity));
  }

  grpc::Status Serve(grpc::ServerContext& context,
                     grpc::ServerReaderWriter<ClientStatusResponse, ClientStatusRequest>& stream) {
    absl::StatusOr<std::optional<PeerIdentity>> caller = Caller(context);
    if (!caller.ok()) return ToGrpc(caller.status());
    ClientStatusRequest request;
    while (stream.Read(&request)) {
      absl::StatusOr<ClientStatusResponse> built =
          BuildClientStatus(ledger_, request, caller->has_value() ? &**caller : nullptr, options_);
      if (!built.ok()) return ToGrpc(built.status());
      if (!stream.Write(*built)) break;
    }
    return grpc::Status::OK;
  }

  const AckLedger& ledger_;
  const Authenticator* const authenticator_;
  const CsdsOptions options_;
  std::atomic<int> active_streams_{0};
};

}  // namespace

std::unique_ptr<grpc::Service> MakeCsdsService(const AckLedger& ledger, const Authenticator* authenticator,
                                               CsdsOptions options) {
  return std::make_unique<CsdsService>(ledger, authenticator, options);
}

}  // namespace cxds
