#include "model/generators.h"

#include <arpa/inet.h>

#include <algorithm>
#include <functional>
#include <set>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "common/strings.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/http/cors/v3/cors.pb.h"
#include "envoy/extensions/filters/http/fault/v3/fault.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"
#include "envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.pb.h"
#include "envoy/extensions/retry/host/previous_hosts/v3/previous_hosts.pb.h"
#include "envoy/extensions/retry/priority/previous_priorities/v3/previous_priorities_config.pb.h"
#include "envoy/extensions/transport_sockets/proxy_protocol/v3/upstream_proxy_protocol.pb.h"
#include "envoy/extensions/transport_sockets/raw_buffer/v3/raw_buffer.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb.h"
#include "envoy/extensions/upstreams/http/v3/http_protocol_options.pb.h"
#include "model/mesh_kinds.h"
#include "model/proxy.h"
#include "protocol/type_url.h"

namespace cxds {

using envoy::config::cluster::v3::Cluster;
using envoy::config::endpoint::v3::ClusterLoadAssignment;
using envoy::config::listener::v3::Listener;
using envoy::config::route::v3::RouteConfiguration;
using envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
using envoy::extensions::filters::network::tcp_proxy::v3::TcpProxy;

std::string ClusterName(uint32_t port, const std::string& subset, const std::string& host) {
  return StrCat("outbound|", port, "|", subset, "|", host);
}

namespace {

// No Sidecar and every service exported everywhere: what hosts a proxy sees does not depend on
// its node, so neither the push filter nor the endpoint generator needs to read it.
bool EveryProxySeesEveryHost(const MeshContext& mesh) {
  return mesh.sidecars().empty() && mesh.root_default_sidecar() == nullptr && !mesh.exports_restricted();
}

bool IsHttp(const ServicePort& port) { return IsHttpProtocol(port.protocol); }

struct ParsedCluster {
  uint32_t port = 0;
  std::string subset;
  std::string host;
};

std::optional<ParsedCluster> ParseClusterName(std::string_view name) {
  std::vector<absl::string_view> parts = absl::StrSplit(absl::string_view(name.data(), name.size()), '|');
  if (parts.size() != 4 || parts[0] != "outbound") return std::nullopt;
  ParsedCluster parsed;
  if (!absl::SimpleAtoi(parts[1], &parsed.port)) return std::nullopt;
  parsed.subset = std::string(parts[2]);
  parsed.host = std::string(parts[3]);
  return parsed;
}

// The host a cluster name ends with (what follows its last '|'): enough to pass over the names
// of hosts an endpoint-only push did not touch without parsing them. A name it does not pass
// over is still parsed whole.
std::string_view HostOfClusterName(std::string_view name) {
  const size_t bar = name.rfind('|');
  return bar == std::string_view::npos ? name : name.substr(bar + 1);
}

ConfigKey ServiceKey(const ServiceInfo& service) { return {kind::kServiceEntry, service.namespace_name, service.host}; }
ConfigKey EndpointsKey(const ServiceInfo& service) { return {kind::kEndpoints, service.namespace_name, service.host}; }
ConfigKey RuleKey(const std::string& host) { return {kind::kDestinationRule, "", host}; }
const ConfigKey kWholeContext{kind::kPushContext, "", ""};

const char* Variant(const ProxyInfo& proxy) { return proxy.grpc ? "grpc" : "envoy"; }

// Which DestinationRule a resource was built from (part of its cache key): the served rule's
// namespace/name, which a merge keeps (the oldest rule of those merged). One namespace may serve
// several rules for a host to proxies of different namespaces (exportTo), so the namespace alone
// would not do.
std::string RuleId(const DestinationRule* rule) {
  return rule != nullptr ? StrCat(rule->meta.namespace_name, "/", rule->meta.name) : "-";
}

// `d` as a protobuf Duration, to the nanosecond.
void SetDuration(absl::Duration d, google::protobuf::Duration* out) {
  out->set_seconds(absl::ToInt64Seconds(d));
  out->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(d % absl::Seconds(1))));
}

// Istio's merge (MergeTrafficPolicy): the rule's policy, replaced whole by its settings for
// `port`; then each field the subset's policy sets, replacing the one above; then the subset's
// settings for `port`, replacing all four fields. proxyProtocol, which no port's settings have,
// is the subset's unless it has settings for `port`, else the rule's unless it has: istiod's
// port-level copy keeps the four fields alone. Nothing set anywhere: nullopt.
std::optional<PolicyFields> PolicyFor(const DestinationRule* rule, const std::string& subset, uint32_t port) {
  if (rule == nullptr) return std::nullopt;
  const auto at_port = [port](const TrafficPolicy& policy) -> PolicyFields {
    for (const auto& level : policy.port_level) {
      if (level.port == port) return level.policy;
    }
    return policy;
  };
  std::optional<PolicyFields> merged;
  if (rule->traffic_policy.has_value()) merged = at_port(*rule->traffic_policy);
  for (const auto& s : rule->subsets) {
    if (s.name != subset || !s.traffic_policy.has_value()) continue;
    PolicyFields out = merged.value_or(PolicyFields{});
    const TrafficPolicy& over = *s.traffic_policy;
    if (over.load_balancer_given) {  // loadBalancer, replaced whole
      out.load_balancer_given = true;
      out.load_balancer = over.load_balancer;
      out.consistent_hash = over.consistent_hash;
      out.locality_lb = over.locality_lb;
      out.warmup = over.warmup;
    }
    if (over.connection_pool.has_value()) out.connection_pool = over.connection_pool;
    if (over.outlier_detection.has_value()) out.outlier_detection = over.outlier_detection;
    if (over.tls.has_value()) out.tls = over.tls;
    const PolicyFields* over_port = nullptr;
    for (const auto& level : over.port_level) {
      if (level.port == port) over_port = &level.policy;
    }
    // proxyProtocol and retryBudget have no port level: a subset's settings for the port keep
    // what is above them, as istiod's merge of its port-level copy does.
    if (over_port != nullptr) {
      const std::optional<PolicyFields::ProxyProtocol> above = out.proxy_protocol;
      const std::optional<PolicyFields::RetryBudget> budget_above = out.retry_budget;
      out = *over_port;
      out.proxy_protocol = above;
      out.retry_budget = budget_above;
    } else {
      if (over.proxy_protocol.has_value()) out.proxy_protocol = over.proxy_protocol;
      if (over.retry_budget.has_value()) out.retry_budget = over.retry_budget;
    }
    merged = out;
  }
  return merged;
}

// connectionPool's TCP keepalive on the upstream sockets, for Envoy.
void SetTcpKeepalive(const PolicyFields::ConnectionPool& pool, Cluster& cluster) {
  if (!pool.tcp_keepalive.has_value()) return;
  auto* keepalive = cluster.mutable_upstream_connection_options()->mutable_tcp_keepalive();
  if (pool.tcp_keepalive->probes) keepalive->mutable_keepalive_probes()->set_value(*pool.tcp_keepalive->probes);
  // Envoy takes whole seconds; Istio truncates, and at least 1 keeps a sub-second setting
  // from meaning "the kernel's default".
  const auto seconds = [](absl::Duration d) {
    return static_cast<uint32_t>(std::clamp<int64_t>(absl::ToInt64Seconds(d), 1, UINT32_MAX));
  };
  if (pool.tcp_keepalive->time) keepalive->mutable_keepalive_time()->set_value(seconds(*pool.tcp_keepalive->time));
  if (pool.tcp_keepalive->interval) {
    keepalive->mutable_keepalive_interval()->set_value(seconds(*pool.tcp_keepalive->interval));
  }
}

// The upstream HTTP protocol options of an Envoy cluster, as istiod sets them: HTTP/2 to ports
// of protocol HTTP2 or GRPC and under h2UpgradePolicy UPGRADE (with maxConcurrentStreams), else
// the client's protocol under useClientProtocol, else HTTP/1.1 (what a cluster without options
// uses: then options are sent only for the connection tuning: requests per connection, idle
// timeout, from http or else tcp, connection lifetime).
void SetHttpProtocolOptions(const PolicyFields::ConnectionPool* pool, const PolicyFields::ClientTls* tls,
                            bool http2_port, Cluster& cluster) {
  using H2Upgrade = PolicyFields::ConnectionPool::H2Upgrade;
  // istiod's auto SNI (ENABLE_AUTO_SNI, on by default): TLS without a given sni takes the
  // request's host as SNI, and, with no subjectAltNames to check, checks the server's
  // certificate against that host.
  const bool auto_sni = tls != nullptr && tls->mode != PolicyFields::ClientTls::Mode::kDisable && tls->sni.empty();
  const bool http2 = http2_port || (pool != nullptr && pool->h2_upgrade == H2Upgrade::kUpgrade);
  const bool downstream = !http2 && pool != nullptr && pool->use_client_protocol;
  const std::optional<absl::Duration> idle_timeout = pool == nullptr      ? std::nullopt
                                                     : pool->idle_timeout ? pool->idle_timeout
                                                                          : pool->tcp_idle_timeout;
  const bool tuned =
      pool != nullptr && (pool->max_requests_per_connection || idle_timeout || pool->max_connection_duration);
  if (!http2 && !downstream && !tuned && !auto_sni) return;
  envoy::extensions::upstreams::http::v3::HttpProtocolOptions options;
  if (auto_sni) {
    options.mutable_upstream_http_protocol_options()->set_auto_sni(true);
    if (tls->subject_alt_names.empty() && !tls->insecure_skip_verify) {
      options.mutable_upstream_http_protocol_options()->set_auto_san_validation(true);
    }
  }
  if (http2) {
    auto* h2 = options.mutable_explicit_http_config()->mutable_http2_protocol_options();
    if (pool != nullptr && pool->max_concurrent_streams) {
      h2->mutable_max_concurrent_streams()->set_value(*pool->max_concurrent_streams);
    }
  } else if (downstream) {
    options.mutable_use_downstream_protocol_config()->mutable_http_protocol_options();
    options.mutable_use_downstream_protocol_config()->mutable_http2_protocol_options();
  } else {
    options.mutable_explicit_http_config()->mutable_http_protocol_options();
  }
  if (tuned) {
    auto* common = options.mutable_common_http_protocol_options();
    if (pool->max_requests_per_connection) {
      common->mutable_max_requests_per_connection()->set_value(*pool->max_requests_per_connection);
    }
    if (idle_timeout) SetDuration(*idle_timeout, common->mutable_idle_timeout());
    if (pool->max_connection_duration) {
      SetDuration(*pool->max_connection_duration, common->mutable_max_connection_duration());
    }
  }
  (*cluster.mutable_typed_extension_protocol_options())["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
      .PackFrom(options);
}

// The proxy's system CA bundle (Debian's path): what SIMPLE and MUTUAL check the server against
// without caCertificates, as istiod's VERIFY_CERTIFICATE_AT_CLIENT (on by default) does.
constexpr char kSystemCaBundle[] = "/etc/ssl/certs/ca-certificates.crt";

// An SDS config for secret `name` over the ADS stream.
envoy::extensions::transport_sockets::tls::v3::SdsSecretConfig AdsSecret(const std::string& name) {
  envoy::extensions::transport_sockets::tls::v3::SdsSecretConfig sds;
  sds.set_name(name);
  sds.mutable_sds_config()->mutable_ads();
  sds.mutable_sds_config()->set_resource_api_version(envoy::config::core::v3::ApiVersion::V3);
  return sds;
}

// Each name an exact match of a SAN of the type its form says: an IP address, a URI with "://", an
// e-mail address, else a DNS name.
void AddSubjectAltNames(const std::vector<std::string>& names,
                        envoy::extensions::transport_sockets::tls::v3::CertificateValidationContext& validation) {
  using Matcher = envoy::extensions::transport_sockets::tls::v3::SubjectAltNameMatcher;
  for (const std::string& name : names) {
    auto* matcher = validation.add_match_typed_subject_alt_names();
    in6_addr ip6;
    in_addr ip4;
    const bool ip = inet_pton(AF_INET, name.c_str(), &ip4) == 1 || inet_pton(AF_INET6, name.c_str(), &ip6) == 1;
    matcher->set_san_type(ip                                      ? Matcher::IP_ADDRESS
                          : name.find("://") != std::string::npos ? Matcher::URI
                          : name.find('@') != std::string::npos   ? Matcher::EMAIL
                                                                  : Matcher::DNS);
    matcher->mutable_matcher()->set_exact(name);
  }
}

// A DestinationRule's tls SIMPLE or MUTUAL for Envoy: an UpstreamTlsContext whose certificates
// Envoy reads from the files named (istiod hands these paths to its node agent over SDS; a cxds
// proxy has no agent, so Envoy reads them itself), the server checked against caCertificates
// (else the system bundle) and subjectAltNames (by the form of each name: an IP address, an
// e-mail address, a URI with "://", else a DNS name), nothing checked under insecureSkipVerify.
// An HTTP/2 upstream offers ALPN h2, as istiod's does: HTTP/2 servers refuse TLS without it.
void SetUpstreamTls(const PolicyFields::ClientTls& tls, bool http2, bool gateway, Cluster& cluster) {
  envoy::extensions::transport_sockets::tls::v3::UpstreamTlsContext context;
  if (!tls.sni.empty()) context.set_sni(tls.sni);
  auto* common = context.mutable_common_tls_context();
  if (http2) common->add_alpn_protocols("h2");
  // A credentialName applies at gateways, as in istiod: the certificate and CA of that Secret in
  // the gateway's namespace over SDS (served as a Gateway server's are, to proven readers only);
  // sidecars keep to files, and have none then (analysis: cxds_gateway_only).
  const bool sds = gateway && !tls.credential_name.empty();
  if (tls.mode == PolicyFields::ClientTls::Mode::kMutual) {
    if (sds) {
      *common->add_tls_certificate_sds_secret_configs() = AdsSecret(GatewaySecretName(tls.credential_name));
    } else if (!tls.client_certificate.empty()) {
      auto* certificate = common->add_tls_certificates();
      certificate->mutable_certificate_chain()->set_filename(tls.client_certificate);
      certificate->mutable_private_key()->set_filename(tls.private_key);
    }
  }
  if (!tls.insecure_skip_verify) {
    envoy::extensions::transport_sockets::tls::v3::CertificateValidationContext* validation = nullptr;
    if (sds) {
      auto* combined = common->mutable_combined_validation_context();
      validation = combined->mutable_default_validation_context();
      *combined->mutable_validation_context_sds_secret_config() = AdsSecret(GatewayCaSecretName(tls.credential_name));
    } else {
      validation = common->mutable_validation_context();
      validation->mutable_trusted_ca()->set_filename(tls.ca_certificates.empty() ? kSystemCaBundle
                                                                                 : tls.ca_certificates);
      if (!tls.ca_crl.empty()) validation->mutable_crl()->set_filename(tls.ca_crl);
    }
    AddSubjectAltNames(tls.subject_alt_names, *validation);
  }
  auto* socket = cluster.mutable_transport_socket();
  socket->set_name("envoy.transport_sockets.tls");
  socket->mutable_typed_config()->PackFrom(context);
}

// proxyProtocol as istiod applies it: the cluster's transport socket (TLS, else plain bytes)
// wrapped in Envoy's upstream PROXY protocol socket.
void WrapInProxyProtocol(PolicyFields::ProxyProtocol version, Cluster& cluster) {
  envoy::extensions::transport_sockets::proxy_protocol::v3::ProxyProtocolUpstreamTransport upstream;
  upstream.mutable_config()->set_version(version == PolicyFields::ProxyProtocol::kV2
                                             ? envoy::config::core::v3::ProxyProtocolConfig::V2
                                             : envoy::config::core::v3::ProxyProtocolConfig::V1);
  if (cluster.has_transport_socket()) {
    *upstream.mutable_transport_socket() = cluster.transport_socket();
  } else {
    upstream.mutable_transport_socket()->set_name("envoy.transport_sockets.raw_buffer");
    upstream.mutable_transport_socket()->mutable_typed_config()->PackFrom(
        envoy::extensions::transport_sockets::raw_buffer::v3::RawBuffer());
  }
  auto* socket = cluster.mutable_transport_socket();
  socket->Clear();
  socket->set_name("envoy.transport_sockets.upstream_proxy_protocol");
  socket->mutable_typed_config()->PackFrom(upstream);
}

// Whether a policy makes the proxy speak TLS to the host (SIMPLE or MUTUAL).
bool OriginatesTls(const std::optional<PolicyFields>& policy) {
  return policy.has_value() && policy->tls.has_value() && policy->tls->mode != PolicyFields::ClientTls::Mode::kDisable;
}

// A cluster of a DNS ServiceEntry (Envoy nodes only): the names Envoy resolves.
struct LocalityLbPlan;
struct DnsTarget {
  const ServiceInfo& service;
  const ServicePort& port;
  const LabelMap* subset_labels;  // null: every endpoint
  // The proxy's localityLbSetting plan (PlanLocalityLb), applied to a STRICT_DNS cluster's
  // localities as istiod applies it there; null: none.
  const LocalityLbPlan* locality_plan = nullptr;
  bool weigh_localities = false;  // the cluster weighs localities (locality_weighted_lb_config)
  std::string_view cluster_id;    // the model's: a label subsets see (AugmentLabels)
};

// Endpoints grouped by locality as istiod sends them: one LocalityLbEndpoints per locality
// (region, zone, subzone: the first three '/' parts, as istiod splits them), in order, weighted by
// the sum of its endpoints' weights, so that gRPC's weighted_target (which picks a locality
// first) keeps each endpoint's share. Endpoints of no locality are grouped under the empty
// Locality, as istiod groups them (so no real region's name is taken for them). Grouped by the
// parsed parts, since gRPC refuses an update naming one locality twice ("r" and "r/"),
// and scaled down when the weights would add up to more than gRPC accepts (2^32 - 1).
using LocalityParts = std::tuple<std::string, std::string, std::string>;  // region, zone, subzone
LocalityParts ParseLocality(const std::string& locality) {
  std::vector<std::string> parts = absl::StrSplit(locality, '/');
  parts.resize(3);
  return {parts[0], parts[1], parts[2]};  // "/zone" keeps its zone, as istiod's ConvertLocality
}

// With failoverPriority a locality is split by priority (istiod's applyFailoverPriorityPerLocality):
// one group per locality and priority, in order of locality, then priority.
class LocalityGroups {
 public:
  envoy::config::endpoint::v3::LbEndpoint* Add(const std::string& locality, uint32_t weight, uint32_t priority = 0) {
    Group& group = groups_[{ParseLocality(locality), priority}];
    group.weight += std::max<uint32_t>(weight, 1);
    return group.endpoints.add_lb_endpoints();
  }
  // Moves the groups into `out`; `weigh`: set each locality's load_balancing_weight.
  void MoveTo(google::protobuf::RepeatedPtrField<envoy::config::endpoint::v3::LocalityLbEndpoints>& out, bool weigh) {
    uint64_t total = 0;
    for (const auto& [name, group] : groups_) total += group.weight;
    const uint64_t divisor = total / UINT32_MAX + 1;  // 1 unless the sum overflows what gRPC takes
    for (auto& [key, group] : groups_) {
      auto* locality = out.Add();
      *locality = std::move(group.endpoints);
      const auto& [region, zone, sub_zone] = key.first;
      if (key.second != 0) locality->set_priority(key.second);  // made contiguous by ApplyLocalityLb
      locality->mutable_locality();                             // present even when empty: gRPC refuses a missing one
      if (!region.empty()) locality->mutable_locality()->set_region(region);
      if (!zone.empty()) locality->mutable_locality()->set_zone(zone);
      if (!sub_zone.empty()) locality->mutable_locality()->set_sub_zone(sub_zone);
      if (weigh) {
        locality->mutable_load_balancing_weight()->set_value(
            static_cast<uint32_t>(std::max<uint64_t>(group.weight / divisor, 1)));
      }
    }
    groups_.clear();
  }
  bool empty() const { return groups_.empty(); }

 private:
  struct Group {
    envoy::config::endpoint::v3::LocalityLbEndpoints endpoints;
    uint64_t weight = 0;
  };
  std::map<std::pair<LocalityParts, uint32_t>, Group> groups_;
};

// Whether a locality matches a localityLbSetting pattern ("region/zone/subzone", '*' or a
// missing part matching anything; the region must be given), as istiod's LocalityMatch.
bool LocalityMatches(const envoy::config::core::v3::Locality& locality, const std::string& pattern) {
  const std::vector<std::string> parts = absl::StrSplit(pattern, absl::MaxSplits('/', 2));
  const auto part_matches = [&](size_t i, const std::string& value) {
    return i >= parts.size() || parts[i] == "*" || parts[i] == value;
  };
  return !parts.empty() && (parts[0] == "*" || parts[0] == locality.region()) && part_matches(1, locality.zone()) &&
         part_matches(2, locality.sub_zone());
}

// What localityLbSetting does for one proxy, as istiod's ApplyLocalityLoadBalancer: for the
// proxy's locality (the empty one for a proxy that gives none, as in istiod), the first
// `distribute` rule whose `from` matches it, else (only with outlier detection, without which
// Envoy would never fail over) failover by priority: by failoverPriority's labels when it has
// some (and by locality too when it also has `failover` rules), else by locality. Unset setting:
// Istio's mesh default, enabled with no rules. Null: nothing to apply.
struct LocalityLbPlan {
  envoy::config::core::v3::Locality proxy;
  std::optional<PolicyFields::LocalityLb::Distribute> distribute;  // a copy: the policy is a temporary
  bool by_locality = false;                                        // istiod's applyLocalityFailover
  std::vector<std::pair<std::string, std::string>> failover;       // region -> region, with by_locality
  // failoverPriority: each label and the value the proxy is taken to have (its own label's, ""
  // for none, or the entry's "=value"). Empty: no failoverPriority, or a proxy without labels
  // (istiod then applies none).
  std::vector<std::pair<std::string, std::string>> priority_labels;
  bool network_first = false;  // the first entry is exactly the network label: istiod's special case
  std::string key;             // for cache keys: what decides the result (the rule, or the parts endpoints share)

  // The priority failoverPriority gives an endpoint, `value_of(label)` its label's value ("" for
  // none), as istiod's applyFailoverPriorityPerLocality: 0 when it agrees with the proxy on every
  // label, else the count of labels from the first it differs on to the last; one of another
  // network (network_first) comes after every one of the proxy's, ordered by the others alike.
  template <typename ValueOf>
  uint32_t LabelPriority(const ValueOf& value_of) const {
    const uint32_t count = static_cast<uint32_t>(priority_labels.size());
    uint32_t adjust = 0;
    for (uint32_t j = 0; j < count; ++j) {
      if (value_of(priority_labels[j].first) == priority_labels[j].second) continue;
      if (j == 0 && network_first) {
        adjust = count;
        continue;
      }
      return count - j + adjust;
    }
    return adjust;
  }
};

// An endpoint's label as failoverPriority reads it: as istiod's registries give it (AugmentLabels);
// a DNS host resolved itself has none.
std::string_view PriorityLabelValue(const EndpointInfo& endpoint, const std::string& key, std::string_view cluster_id) {
  if (endpoint.bare) return {};
  return AugmentedLabelValue(endpoint.labels, key, cluster_id, endpoint.locality, endpoint.node_name);
}
// Whether some policy of `rule` could give PlanLocalityLb a plan: a distribute rule, or outlier
// detection (under which Istio's mesh default fails over by locality). Reads, copies nothing.
bool MayShapeLocality(const DestinationRule& rule) {
  const auto shapes = [](const PolicyFields& p) {
    return p.outlier_detection.has_value() || (p.locality_lb.has_value() && !p.locality_lb->distribute.empty());
  };
  const auto any_in = [&](const std::optional<TrafficPolicy>& policy) {
    return policy.has_value() &&
           (shapes(*policy) || std::any_of(policy->port_level.begin(), policy->port_level.end(),
                                           [&](const auto& level) { return shapes(level.policy); }));
  };
  return any_in(rule.traffic_policy) ||
         std::any_of(rule.subsets.begin(), rule.subsets.end(), [&](const auto& s) { return any_in(s.traffic_policy); });
}

// `endpoints`: all the cluster's port may select, to cut the key to what they share with the proxy.
std::optional<LocalityLbPlan> PlanLocalityLb(const std::optional<PolicyFields>& policy,
                                             const envoy::config::core::v3::Locality& locality,
                                             const LabelMap& proxy_labels, const std::vector<EndpointInfo>& endpoints,
                                             std::string_view cluster_id) {
  if (!policy.has_value()) return std::nullopt;
  static const PolicyFields::LocalityLb kMeshDefault;  // Istio's: enabled, no rules
  const PolicyFields::LocalityLb& setting = policy->locality_lb.has_value() ? *policy->locality_lb : kMeshDefault;
  if (!setting.enabled) return std::nullopt;
  LocalityLbPlan plan;
  plan.proxy = locality;
  if (!setting.distribute.empty()) {
    for (size_t i = 0; i < setting.distribute.size(); ++i) {
      if (LocalityMatches(plan.proxy, setting.distribute[i].from)) {
        plan.distribute = setting.distribute[i];
        plan.key = StrCat("distribute#", i);  // the result depends on the rule alone
        return plan;
      }
    }
    return std::nullopt;  // no rule for this proxy's locality: endpoints as they are
  }
  if (!policy->outlier_detection.has_value()) return std::nullopt;
  // With failoverPriority, priorities by locality only when `failover` rules are given too.
  plan.by_locality = setting.failover_priority.empty() || !setting.failover.empty();
  if (!setting.failover_priority.empty() && !proxy_labels.empty()) {
    plan.network_first = setting.failover_priority.front() == "topology.istio.io/network";
    // As istiod's priorityLabelOverrides: an entry "key=value" (exactly one '=') gives the value
    // for every entry of that key; the label is what comes before the first '='.
    std::map<std::string, std::string, std::less<>> overrides;
    for (const std::string& entry : setting.failover_priority) {
      const size_t equals = entry.find('=');
      if (equals != std::string::npos && entry.find('=', equals + 1) == std::string::npos) {
        overrides.insert_or_assign(entry.substr(0, equals), entry.substr(equals + 1));
      }
    }
    for (const std::string& entry : setting.failover_priority) {
      std::string label = entry.substr(0, entry.find('='));
      std::string value;
      if (auto given = overrides.find(label); given != overrides.end()) {
        value = given->second;
      } else if (auto own = proxy_labels.find(label); own != proxy_labels.end()) {
        value = own->second;
      }
      plan.priority_labels.emplace_back(std::move(label), std::move(value));
    }
    // The key, so that proxies share entries wherever their results are the same (a hostile node
    // could make the cache grow with every new label value otherwise): only the labels up to the
    // furthest any endpoint gets before it first differs from the proxy (later ones decide no
    // endpoint's priority), and of those, like the locality below, a value no endpoint has as "?"
    // (it decides as any other such value). So the entries are bounded by the endpoints' values.
    const size_t count = plan.priority_labels.size();
    size_t reach = 0;  // the last label that decides some endpoint's priority
    for (const EndpointInfo& endpoint : endpoints) {
      size_t j = 0;
      for (; j < count; ++j) {
        const auto& [label, value] = plan.priority_labels[j];
        if (PriorityLabelValue(endpoint, label, cluster_id) != value && !(j == 0 && plan.network_first)) break;
      }
      reach = std::max(reach, std::min(j, count - 1));
      if (reach == count - 1) break;
    }
    plan.key = "priority";
    for (size_t j = 0; j <= reach; ++j) {
      const auto& [label, value] = plan.priority_labels[j];
      const bool shared = std::any_of(endpoints.begin(), endpoints.end(), [&](const EndpointInfo& endpoint) {
        return PriorityLabelValue(endpoint, label, cluster_id) == value;
      });
      plan.key += shared ? StrCat("#", value.size(), ":", value) : std::string("#?");
    }
    plan.key += "|";
  }
  if (!plan.by_locality) {
    if (plan.priority_labels.empty()) return std::nullopt;
    return plan;
  }
  plan.failover = setting.failover;
  const size_t labels_key_size = plan.key.size();
  // The key: the proxy's locality cut to what the endpoints' localities share with it, which
  // alone decides the priorities, so that clients naming made-up localities share entries
  // (the cache would grow with every new name otherwise). Parts length-prefixed.
  bool region = false, zone = false, sub_zone = false;
  for (const EndpointInfo& endpoint : endpoints) {
    auto [r, z, s] = ParseLocality(endpoint.locality);
    if (r != plan.proxy.region()) continue;
    region = true;
    if (z != plan.proxy.zone()) continue;
    zone = true;
    sub_zone = sub_zone || s == plan.proxy.sub_zone();
  }
  const auto part = [](bool seen, const std::string& value) {
    return seen ? StrCat(value.size(), ":", value) : std::string("?");
  };
  plan.key += StrCat("failover#", part(region, plan.proxy.region()), part(zone, plan.proxy.zone()),
                     part(sub_zone, plan.proxy.sub_zone()));
  bool rule_for_region = false;
  for (size_t i = 0; !region && i < plan.failover.size(); ++i) {
    if (plan.failover[i].first == plan.proxy.region()) {
      plan.key += StrCat("#rule", i);  // the rule for its region decides which region comes next
      rule_for_region = true;
      break;
    }
  }
  // No endpoint in its region and no failover rule for it: every locality is of one priority,
  // the endpoints as they are (and the entry every such proxy shares), unless labels order them.
  if (!region && !rule_for_region) {
    if (plan.priority_labels.empty()) return std::nullopt;
    plan.by_locality = false;
    plan.failover.clear();
    plan.key.resize(labels_key_size);
  }
  return plan;
}

// Keeps the locality weights of each priority within what gRPC accepts (a sum of at most
// 2^32 - 1; distribute's shares and the at-least-1 floor can push it over) and gives emptied
// localities weight 1.
void CapLocalityWeights(ClusterLoadAssignment& cla) {
  std::map<uint32_t, uint64_t> totals;
  for (auto& locality : *cla.mutable_endpoints()) {
    if (locality.lb_endpoints().empty() && locality.has_load_balancing_weight()) {
      locality.mutable_load_balancing_weight()->set_value(1);
    }
    totals[locality.priority()] += locality.load_balancing_weight().value();
  }
  for (auto& [priority, total] : totals) {
    while (total > UINT32_MAX) {  // at most a few rounds: each at least halves the sum
      const uint64_t divisor = total / UINT32_MAX + 1;
      total = 0;
      for (auto& locality : *cla.mutable_endpoints()) {
        if (locality.priority() != priority || !locality.has_load_balancing_weight()) continue;
        const uint64_t scaled = std::max<uint64_t>(locality.load_balancing_weight().value() / divisor, 1);
        locality.mutable_load_balancing_weight()->set_value(static_cast<uint32_t>(scaled));
        total += scaled;
      }
    }
  }
}

// Applies `plan` to an assignment's localities, as istiod's applyLocalityWeights and
// applyLocalityFailover: distribute gives each `to` pattern's weight to the localities it
// matches (split by their own weights, rounded up) and empties the localities no pattern
// matches; failover by locality sets priorities: 0 the proxy's subzone, 1 its zone, 2 its
// region, 3 another region (4 when a failover rule for the proxy's region names another), under
// the priorities failoverPriority gave when grouping (each of those split five ways); then
// all are renumbered from 0 without gaps (Envoy and gRPC want them contiguous).
void ApplyLocalityLb(const LocalityLbPlan& plan, ClusterLoadAssignment& cla) {
  auto& localities = *cla.mutable_endpoints();
  if (plan.distribute.has_value()) {
    std::vector<bool> matched(localities.size(), false);
    for (const auto& [pattern, weight] : plan.distribute->to) {
      uint64_t total = 0;
      std::vector<int> picked;
      for (int i = 0; i < localities.size(); ++i) {
        if (matched[i] || !LocalityMatches(localities[i].locality(), pattern)) continue;
        matched[i] = true;
        picked.push_back(i);
        total += std::max<uint32_t>(localities[i].load_balancing_weight().value(), 1);
      }
      for (int i : picked) {
        const uint64_t own = std::max<uint32_t>(localities[i].load_balancing_weight().value(), 1);
        const uint64_t share = (own * weight + total - 1) / total;  // ceil, as istiod rounds
        localities[i].mutable_load_balancing_weight()->set_value(static_cast<uint32_t>(std::max<uint64_t>(share, 1)));
      }
    }
    for (int i = 0; i < localities.size(); ++i) {
      if (!matched[i]) localities[i].clear_lb_endpoints();
    }
    return;
  }
  std::map<uint64_t, std::vector<int>> by_priority;
  for (int i = 0; i < localities.size(); ++i) {
    const uint64_t by_labels = localities[i].priority();
    if (!plan.by_locality) {
      by_priority[by_labels].push_back(i);
      continue;
    }
    const auto& at = localities[i].locality();
    uint32_t priority = 3;
    if (at.region() == plan.proxy.region()) {
      priority = at.zone() != plan.proxy.zone() ? 2 : at.sub_zone() != plan.proxy.sub_zone() ? 1 : 0;
    } else {
      for (const auto& [from, to] : plan.failover) {
        if (from != plan.proxy.region()) continue;
        if (at.region() != to) priority = 4;
        break;
      }
    }
    by_priority[by_labels * 5 + priority].push_back(i);
  }
  uint32_t next = 0;
  for (const auto& [priority, members] : by_priority) {
    for (int i : members) localities[i].set_priority(next);
    ++next;
  }
}

// Istio's: a DNS ServiceEntry is a STRICT_DNS cluster (every address a name resolves to is an
// endpoint), DNS_ROUND_ROBIN a LOGICAL_DNS one (one connection to the first address); its
// endpoints (those a subset selects) are the names, or without endpoints the host itself.
// Re-resolved every 60 s or at the record's TTL, as istiod's default.
void SetDnsCluster(const std::string& name, const DnsTarget& dns, Cluster& cluster) {
  auto* assignment = cluster.mutable_load_assignment();
  assignment->set_cluster_name(name);
  LocalityGroups groups;
  size_t count = 0;
  const auto add = [&](const std::string& address, uint32_t port, uint32_t weight, const std::string& locality,
                       uint32_t priority) {
    auto* lb = groups.Add(locality, weight, priority);
    ++count;
    auto* socket = lb->mutable_endpoint()->mutable_address()->mutable_socket_address();
    socket->set_address(address);
    socket->set_port_value(port);
    if (weight > 0) lb->mutable_load_balancing_weight()->set_value(weight);
  };
  const uint32_t service_port = dns.port.target_port != 0 ? dns.port.target_port : dns.port.number;
  if (dns.service.dns_endpoints.empty()) {
    // The host itself has no labels at all in istiod (not even AugmentLabels'): a subset that
    // names any selects nothing, as for gRPC nodes (EndpointInfo::bare).
    if (dns.subset_labels == nullptr || dns.subset_labels->empty()) {
      const auto none = [](const std::string&) { return std::string_view(); };
      add(dns.service.host, service_port, 0, "", dns.locality_plan ? dns.locality_plan->LabelPriority(none) : 0);
    }
  } else {
    for (const WorkloadEndpoint& endpoint : dns.service.dns_endpoints) {
      // By its labels as istiod's registry gives them, as EDS endpoints are selected.
      if (dns.subset_labels != nullptr && !SelectsWorkload(*dns.subset_labels, endpoint, dns.cluster_id)) continue;
      auto named = endpoint.ports.find(dns.port.name);
      const std::string locality = WorkloadLocality(endpoint);  // its `locality`, else its labels', as EDS reads it
      const auto value_of = [&](const std::string& key) {
        return AugmentedLabelValue(endpoint.labels, key, dns.cluster_id, locality, "");
      };
      add(endpoint.address, named != endpoint.ports.end() ? named->second : service_port, endpoint.weight, locality,
          dns.locality_plan ? dns.locality_plan->LabelPriority(value_of) : 0);
    }
  }
  if (groups.empty()) assignment->add_endpoints();  // (as before: one empty group)
  // Weighed as istiod weighs them (the sum of their endpoints' weights) when the cluster weighs
  // localities: Envoy would give a locality without a weight no traffic then.
  groups.MoveTo(*assignment->mutable_endpoints(), /*weigh=*/dns.weigh_localities);
  // Envoy refuses a LOGICAL_DNS cluster without exactly one endpoint: a subset that selects
  // none is a STRICT_DNS cluster with no endpoints (requests fail, as for an empty EDS one).
  const bool logical = dns.service.resolution == ServiceEntry::Resolution::kDnsRoundRobin && count == 1;
  if (dns.locality_plan != nullptr && !logical) {
    ApplyLocalityLb(*dns.locality_plan, *assignment);
    CapLocalityWeights(*assignment);
  } else if (logical) {
    // One name: whatever failoverPriority made of it, it is the only priority, numbered 0.
    for (auto& locality : *assignment->mutable_endpoints()) locality.clear_priority();
  }
  cluster.set_type(logical ? Cluster::LOGICAL_DNS : Cluster::STRICT_DNS);
  cluster.set_dns_lookup_family(Cluster::V4_PREFERRED);
  cluster.mutable_dns_refresh_rate()->set_seconds(60);
  cluster.set_respect_dns_ttl(true);
}

// Whether an Envoy cluster of `policy` weighs localities (locality_weighted_lb_config), as
// istiod sets it: for localityLbSetting's distribute, and for its failover rules or
// failoverPriority when outlier detection lets the proxy fail over.
bool WeighsLocalities(const PolicyFields& policy) {
  if (!policy.locality_lb.has_value() || !policy.locality_lb->enabled) return false;
  return !policy.locality_lb->distribute.empty() ||
         (policy.outlier_detection.has_value() &&
          (!policy.locality_lb->failover.empty() || !policy.locality_lb->failover_priority.empty()));
}

// The load balancer, as istiod's applyLoadBalancer: a ring hash for consistentHash (gRPC too,
// gRFC A42); else, on Envoy nodes, LEAST_REQUEST unless the rule says ROUND_ROBIN or RANDOM,
// for every cluster, with a rule or without (istiod's default algorithm), and warmup as slow
// start on the first two; gRPC 1.51 clients balance by round robin only (and warm nothing up:
// analysis, cxds_grpc_ignores).
void SetLoadBalancer(const std::optional<PolicyFields>& policy, bool grpc, Cluster& cluster) {
  if (policy.has_value() && policy->consistent_hash.has_value()) {
    cluster.set_lb_policy(Cluster::RING_HASH);
    cluster.mutable_ring_hash_lb_config()->mutable_minimum_ring_size()->set_value(
        policy->consistent_hash->minimum_ring_size);
    return;
  }
  if (grpc) return;
  using LoadBalancer = PolicyFields::LoadBalancer;
  const LoadBalancer simple = policy.has_value() ? policy->load_balancer : LoadBalancer::kUnset;
  if (simple == LoadBalancer::kRandom) {
    cluster.set_lb_policy(Cluster::RANDOM);
    return;
  }
  const bool round_robin = simple == LoadBalancer::kRoundRobin;
  cluster.set_lb_policy(round_robin ? Cluster::ROUND_ROBIN : Cluster::LEAST_REQUEST);
  if (!policy.has_value() || !policy->warmup.has_value()) return;
  const PolicyFields::Warmup& warmup = *policy->warmup;
  Cluster::SlowStartConfig* slow_start = round_robin
                                             ? cluster.mutable_round_robin_lb_config()->mutable_slow_start_config()
                                             : cluster.mutable_least_request_lb_config()->mutable_slow_start_config();
  SetDuration(warmup.duration, slow_start->mutable_slow_start_window());
  if (warmup.full_form) {
    slow_start->mutable_aggression()->set_default_value(warmup.aggression);
    // Envoy requires a runtime key; istiod's "(" is one no runtime layer sets, so the value
    // cannot be overridden from outside the DestinationRule.
    slow_start->mutable_aggression()->set_runtime_key("(");
    slow_start->mutable_min_weight_percent()->set_value(warmup.minimum_percent);
  }
}

// `http2_port`: the port's protocol is HTTP2 or GRPC (Envoy then speaks HTTP/2 upstream).
absl::StatusOr<ResourcePtr> BuildCluster(const std::string& name, const std::optional<PolicyFields>& policy, bool grpc,
                                         bool gateway, bool http2_port, const ServiceInfo& service,
                                         const DnsTarget* dns = nullptr) {
  Cluster cluster;
  cluster.set_name(name);
  if (dns != nullptr) {
    SetDnsCluster(name, *dns, cluster);
  } else {
    cluster.set_type(Cluster::EDS);
    cluster.mutable_eds_cluster_config()->mutable_eds_config()->mutable_ads();
    cluster.mutable_eds_cluster_config()->mutable_eds_config()->set_resource_api_version(
        envoy::config::core::v3::ApiVersion::V3);
  }
  cluster.mutable_connect_timeout()->set_seconds(10);
  SetLoadBalancer(policy, grpc, cluster);
  // One set of thresholds. On Envoy nodes every cluster gets istiod's defaults, no limit on
  // connections, requests, pending requests and retries (Envoy's own, 1024 and 3 retries, make
  // 503s under load and while endpoints churn), which a connection pool's settings replace.
  // gRPC nodes honour max_requests only, and get thresholds only from a pool.
  envoy::config::cluster::v3::CircuitBreakers::Thresholds* thresholds = nullptr;
  const auto cluster_thresholds = [&] {
    if (thresholds == nullptr) thresholds = cluster.mutable_circuit_breakers()->add_thresholds();
    return thresholds;
  };
  if (!grpc) {
    auto* defaults = cluster_thresholds();
    defaults->mutable_max_connections()->set_value(UINT32_MAX);
    defaults->mutable_max_pending_requests()->set_value(UINT32_MAX);
    defaults->mutable_max_requests()->set_value(UINT32_MAX);
    defaults->mutable_max_retries()->set_value(UINT32_MAX);
  }
  if (policy.has_value()) {
    if (!grpc && WeighsLocalities(*policy)) cluster.mutable_common_lb_config()->mutable_locality_weighted_lb_config();
    if (policy->connection_pool.has_value()) {
      const auto& pool = *policy->connection_pool;
      // A gRPC node gets thresholds only for max_requests, the one it reads.
      if (pool.http2_max_requests) cluster_thresholds()->mutable_max_requests()->set_value(*pool.http2_max_requests);
      if (pool.connect_timeout.has_value()) SetDuration(*pool.connect_timeout, cluster.mutable_connect_timeout());
      if (!grpc) {  // gRPC honours max_requests only (Envoy's thresholds exist: the defaults)
        if (pool.max_retries) cluster_thresholds()->mutable_max_retries()->set_value(*pool.max_retries);
        if (pool.max_connections) cluster_thresholds()->mutable_max_connections()->set_value(*pool.max_connections);
        if (pool.http1_max_pending_requests) {
          cluster_thresholds()->mutable_max_pending_requests()->set_value(*pool.http1_max_pending_requests);
        }
        SetTcpKeepalive(pool, cluster);
      }
    }
    if (policy->retry_budget.has_value() && !grpc) {  // gRPC has no retry budget
      auto* budget = cluster_thresholds()->mutable_retry_budget();
      budget->mutable_budget_percent()->set_value(policy->retry_budget->percent);
      budget->mutable_min_retry_concurrency()->set_value(policy->retry_budget->min_concurrency);
    }
    if (policy->outlier_detection.has_value() && !grpc) {
      // As istiod translates it: ejection by the consecutive errors Istio names only (Envoy's
      // success-rate ejection, on by default, is turned off), a count of 0 turning its kind off.
      const auto& od = *policy->outlier_detection;
      auto* out = cluster.mutable_outlier_detection();
      out->mutable_enforcing_success_rate()->set_value(0);
      if (od.consecutive_5xx_errors) {
        out->mutable_consecutive_5xx()->set_value(*od.consecutive_5xx_errors);
        out->mutable_enforcing_consecutive_5xx()->set_value(*od.consecutive_5xx_errors > 0 ? 100 : 0);
      }
      if (od.consecutive_gateway_errors) {
        out->mutable_consecutive_gateway_failure()->set_value(*od.consecutive_gateway_errors);
        out->mutable_enforcing_consecutive_gateway_failure()->set_value(*od.consecutive_gateway_errors > 0 ? 100 : 0);
      }
      if (od.interval) SetDuration(*od.interval, out->mutable_interval());
      if (od.base_ejection_time) SetDuration(*od.base_ejection_time, out->mutable_base_ejection_time());
      if (od.max_ejection_percent.value_or(0) > 0) {
        out->mutable_max_ejection_percent()->set_value(*od.max_ejection_percent);
      }
      if (od.split_external_local_origin_errors) {
        out->set_split_external_local_origin_errors(true);
        if (od.consecutive_local_origin_failures.value_or(0) > 0) {
          out->mutable_consecutive_local_origin_failure()->set_value(*od.consecutive_local_origin_failures);
          out->mutable_enforcing_consecutive_local_origin_failure()->set_value(100);
        }
        out->mutable_enforcing_local_origin_success_rate()->set_value(0);
      }
      // Istio sets the panic threshold whenever outlier detection is given: with few endpoints
      // per service, Envoy's default of 50% would send traffic to ejected ones.
      cluster.mutable_common_lb_config()->mutable_healthy_panic_threshold()->set_value(od.min_health_percent);
    }
  }
  if (!grpc) {
    if (OriginatesTls(policy)) {
      using H2Upgrade = PolicyFields::ConnectionPool::H2Upgrade;
      const bool http2 = http2_port || (policy->connection_pool.has_value() &&
                                        policy->connection_pool->h2_upgrade == H2Upgrade::kUpgrade);
      // A ServiceEntry's subjectAltNames when the rule names none, as istiod (whose auto SAN
      // check on HTTP ports still follows the rule's own: SetHttpProtocolOptions below).
      PolicyFields::ClientTls tls = *policy->tls;
      if (tls.subject_alt_names.empty()) {
        tls.subject_alt_names.assign(service.subject_alt_names.begin(), service.subject_alt_names.end());
      }
      SetUpstreamTls(tls, http2, gateway, cluster);
    }
    SetHttpProtocolOptions(
        policy.has_value() && policy->connection_pool.has_value() ? &*policy->connection_pool : nullptr,
        policy.has_value() && policy->tls.has_value() ? &*policy->tls : nullptr, http2_port, cluster);
    if (policy.has_value() && policy->proxy_protocol.has_value()) WrapInProxyProtocol(*policy->proxy_protocol, cluster);
  }
  return Resource::FromMessage(cluster);
}

// Who the proxy is (ParseProxyInfo with the model's registry), resolved once per generation and
// kept in `env`, so that every type of one generation reads the same registry, and the node's
// metadata is read once rather than once per type. Kept with the proxy it is of: an env ever
// used for another proxy resolves that one afresh, never hands it the first one's identity.
struct ResolvedProxyMemo {
  const Proxy* of = nullptr;
  ProxyInfo info;
};
const ProxyInfo& ResolvedProxy(const Proxy& proxy_node, const MeshModel& model, const GeneratorEnv& env) {
  if (const auto* memo = std::any_cast<ResolvedProxyMemo>(&env.per_proxy); memo != nullptr && memo->of == &proxy_node) {
    return memo->info;
  }
  return env.per_proxy
      .emplace<ResolvedProxyMemo>(
          ResolvedProxyMemo{&proxy_node, ParseProxyInfo(proxy_node.node, model.workloads().get())})
      .info;
}

class ClusterGenerator final : public TypedGenerator<MeshContext> {
 public:
  explicit ClusterGenerator(const MeshModel& model) : model_(model) {}

  absl::StatusOr<std::optional<GeneratedResources>> GenerateFor(const Proxy& proxy_node,
                                                                const WatchedResources& watched,
                                                                const PushRequest& request, const MeshContext& mesh,
                                                                const GeneratorEnv& env) override {
    ResourceCache& cache = env.cache;
    if (request.EndpointOnly()) return std::nullopt;  // clusters do not depend on endpoints
    const ProxyInfo& proxy = ResolvedProxy(proxy_node, model_, env);
    const ProxyScope scope(proxy, mesh);
    GeneratedResources out;
    const auto add = [&](const ServiceInfo& service, const ServicePort& port, const DestinationRule* rule,
                         const std::string& subset) -> absl::Status {
      // Envoy resolves a DNS ServiceEntry's names itself; proxyless gRPC resolves no names from
      // xDS, so gRPC nodes get an EDS cluster of what cxds resolved them to (DnsRefresher).
      const bool dns = service.resolution != ServiceEntry::Resolution::kStatic && !proxy.grpc;
      const std::string name = ClusterName(port.number, subset, service.host);
      const LabelMap* subset_labels = nullptr;
      if (rule != nullptr && !subset.empty()) {
        for (const auto& s : rule->subsets) {
          if (s.name == subset) subset_labels = &s.labels;
        }
      }
      // localityLbSetting on a STRICT_DNS cluster, for the proxy's locality, as istiod applies it
      // to a DNS cluster's load assignment (EDS clusters get it in EDS).
      const std::optional<PolicyFields> policy = PolicyFor(rule, subset, port.number);
      std::optional<LocalityLbPlan> locality_plan;
      if (dns && policy.has_value()) {
        std::vector<EndpointInfo> names;  // what they share with the proxy decides what the plan depends on
        const bool by_labels = policy->locality_lb.has_value() && !policy->locality_lb->failover_priority.empty();
        for (const WorkloadEndpoint& e : service.dns_endpoints) {
          names.push_back({.labels = by_labels ? e.labels : LabelMap(), .locality = WorkloadLocality(e)});
        }
        if (names.empty()) names.push_back({.bare = true});  // the host itself, without labels
        locality_plan = PlanLocalityLb(policy, proxy.locality, proxy.labels, names, model_.cluster_id());
      }
      const DnsTarget target{service,
                             port,
                             subset_labels,
                             locality_plan ? &*locality_plan : nullptr,
                             policy.has_value() && WeighsLocalities(*policy),
                             model_.cluster_id()};
      // gRPC takes certificates only from its bootstrap's certificate providers (gRFC A29), not
      // from files a rule names: rather than connect in plaintext where the rule asks for TLS,
      // the cluster is left out (GrpcConfigNotes says so).
      if (proxy.grpc && OriginatesTls(policy)) return absl::OkStatus();
      // Proxies that get the same rule (of the same namespace) share the cluster; gateways
      // apart, whose TLS may come from a credentialName.
      const bool gateway = proxy.type == "router" && !proxy.grpc;
      absl::StatusOr<ResourcePtr> resource = cache.GetOrBuild(
          {std::string(kClusterType), name,
           StrCat(gateway ? "router" : Variant(proxy), "|dr:", RuleId(rule),
                  locality_plan ? StrCat("|loc:", locality_plan->key) : "")},
          {ServiceKey(service), RuleKey(service.host)}, request.push_sequence, [&] {
            return BuildCluster(name, policy, proxy.grpc, gateway, port.protocol == "HTTP2" || port.protocol == "GRPC",
                                service, dns ? &target : nullptr);
          });
      if (!resource.ok()) return resource.status();
      out.resources.push_back(*resource);
      return absl::OkStatus();
    };
    if (!watched.wildcard) {
      // Subscribed by name (proxyless gRPC): only those, not every cluster of the mesh.
      out.incremental = request.delta_scope.has_value();
      for (const std::string& name : *watched.names) {
        std::optional<ParsedCluster> cluster = ParseClusterName(name);
        if (!cluster.has_value()) continue;
        const ServiceInfo* service = mesh.FindService(cluster->host);
        if (service == nullptr || !scope.Visible(*service)) continue;
        const DestinationRule* rule = mesh.DestinationRuleFor(cluster->host, proxy.namespace_name, &proxy.labels);
        if (!cluster->subset.empty() &&
            (rule == nullptr || !std::any_of(rule->subsets.begin(), rule->subsets.end(),
                                             [&](const auto& s) { return s.name == cluster->subset; }))) {
          continue;
        }
        for (const ServicePort& port : service->ports) {
          if (port.number != cluster->port || (!IsHttp(port) && proxy.grpc)) continue;
          if (absl::Status status = add(*service, port, rule, cluster->subset); !status.ok()) return status;
        }
      }
      return out;
    }
    for (const auto& [host, service] : mesh.services()) {
      if (!scope.Visible(service)) continue;
      const DestinationRule* rule = mesh.DestinationRuleFor(host, proxy.namespace_name, &proxy.labels);
      std::vector<std::string> subsets = {""};
      if (rule != nullptr) {
        for (const auto& s : rule->subsets) subsets.push_back(s.name);
      }
      for (const ServicePort& port : service.ports) {
        if (!IsHttp(port) && proxy.grpc) continue;
        for (const std::string& subset : subsets) {
          if (absl::Status status = add(service, port, rule, subset); !status.ok()) return status;
        }
      }
    }
    return out;
  }

 private:
  const MeshModel& model_;
};

class EndpointGenerator final : public TypedGenerator<MeshContext> {
 public:
  explicit EndpointGenerator(const MeshModel& model) : model_(model) {}

  absl::StatusOr<std::optional<GeneratedResources>> GenerateFor(const Proxy& proxy_node,
                                                                const WatchedResources& watched,
                                                                const PushRequest& request, const MeshContext& mesh,
                                                                const GeneratorEnv& env) override {
    ResourceCache& cache = env.cache;
    const std::shared_ptr<const EndpointIndex> index = model_.endpoints();
    const bool endpoint_only = request.EndpointOnly();
    std::set<std::string, std::less<>> changed_hosts;
    if (endpoint_only) {
      for (const ConfigKey& key : request.configs) {
        if (key.kind == kind::kEndpoints) changed_hosts.insert(key.name);  // not a Workload's Pod or address
      }
    }
    // The proxy's namespace matters only where rules differ by namespace: endpoint-only
    // pushes go to every proxy of a host, and most meshes keep rules beside their services.
    // The node is read only when something here depends on it, and then once.
    const auto info = [&]() -> const ProxyInfo& { return ResolvedProxy(proxy_node, model_, env); };
    const std::string proxy_namespace = mesh.rules_vary_by_namespace() ? info().namespace_name : std::string();
    const LabelMap* proxy_labels = mesh.has_rule_selectors() ? &info().labels : nullptr;
    // Read only for a rule that may shape localities.
    const auto proxy_locality = [&]() -> const envoy::config::core::v3::Locality& { return info().locality; };
    const bool scoped = !EveryProxySeesEveryHost(mesh);
    std::optional<ProxyScope> scope;
    GeneratedResources out;
    out.incremental = endpoint_only || request.delta_scope.has_value();
    // An endpoint change of one service looks at every proxy's EDS names (a mesh proxy watches
    // thousands): names of other hosts are passed over before anything is parsed or allocated.
    for (const std::string& name : *watched.names) {
      if (endpoint_only && !changed_hosts.contains(HostOfClusterName(name))) continue;
      std::optional<ParsedCluster> cluster = ParseClusterName(name);
      if (!cluster.has_value()) continue;
      if (endpoint_only && !changed_hosts.contains(cluster->host)) continue;
      const ServiceInfo* service = mesh.FindService(cluster->host);
      if (service != nullptr && scoped) {
        // A host the proxy does not see (Sidecar, exportTo) is served to it as if it did not
        // exist, asked for by name or not, as its clusters are.
        if (!scope.has_value()) scope.emplace(info(), mesh);
        if (!scope->Visible(*service)) service = nullptr;
      }
      if (service == nullptr) {
        if (out.incremental) out.removed.push_back(name);
        continue;
      }
      const DestinationRule* rule = mesh.DestinationRuleFor(cluster->host, proxy_namespace, proxy_labels);
      const LabelMap* subset_labels = nullptr;
      if (!cluster->subset.empty()) {
        if (rule != nullptr) {
          for (const auto& s : rule->subsets) {
            if (s.name == cluster->subset) subset_labels = &s.labels;
          }
        }
        if (subset_labels == nullptr) continue;  // no such subset: nothing to serve
      }
      // Shared by every proxy unless the rule's localityLbSetting applies to this proxy's
      // locality (a proxy of no locality is of the empty one, as in istiod). A rule that can
      // shape no locality is passed over without merging its policy for every proxy.
      std::optional<LocalityLbPlan> locality_plan;
      if (rule != nullptr && MayShapeLocality(*rule)) {
        static const std::vector<EndpointInfo> kNoEndpoints;
        const std::vector<EndpointInfo>* port_endpoints = &kNoEndpoints;
        if (auto host = index->find(cluster->host); host != index->end()) {
          if (auto port = host->second->find(cluster->port); port != host->second->end()) {
            port_endpoints = &port->second;
          }
        }
        locality_plan = PlanLocalityLb(PolicyFor(rule, cluster->subset, cluster->port), proxy_locality(), info().labels,
                                       *port_endpoints, model_.cluster_id());
      }
      std::string variant = cluster->subset.empty() ? "" : StrCat("dr:", RuleId(rule));
      if (locality_plan.has_value()) variant = StrCat("dr:", RuleId(rule), "|locality:", locality_plan->key);
      absl::StatusOr<ResourcePtr> resource = cache.GetOrBuild(
          {std::string(kEndpointType), name, variant},
          {EndpointsKey(*service), ServiceKey(*service), RuleKey(cluster->host)}, request.push_sequence,
          [&] { return BuildAssignment(name, *cluster, *index, subset_labels, locality_plan, model_.cluster_id()); });
      if (!resource.ok()) return resource.status();
      out.resources.push_back(*resource);
    }
    if (endpoint_only && out.resources.empty() && out.removed.empty()) return std::nullopt;
    return out;
  }

 private:
  static absl::StatusOr<ResourcePtr> BuildAssignment(const std::string& name, const ParsedCluster& cluster,
                                                     const EndpointIndex& index, const LabelMap* subset_labels,
                                                     const std::optional<LocalityLbPlan>& locality_plan,
                                                     const std::string& cluster_id) {
    ClusterLoadAssignment cla;
    cla.set_cluster_name(name);
    LocalityGroups groups;
    if (auto host = index.find(cluster.host); host != index.end()) {
      if (auto port = host->second->find(cluster.port); port != host->second->end()) {
        for (const EndpointInfo& endpoint : port->second) {
          // By the endpoint's labels as istiod's registries give them: a subset may select by
          // locality, cluster or node.
          if (subset_labels != nullptr && !endpoint.SelectedBy(*subset_labels, cluster_id)) continue;
          const auto value_of = [&](const std::string& key) { return PriorityLabelValue(endpoint, key, cluster_id); };
          auto* lb = groups.Add(endpoint.locality, endpoint.weight,
                                locality_plan.has_value() ? locality_plan->LabelPriority(value_of) : 0);
          auto* socket = lb->mutable_endpoint()->mutable_address()->mutable_socket_address();
          socket->set_address(endpoint.address);
          socket->set_port_value(endpoint.port);
          lb->mutable_load_balancing_weight()->set_value(endpoint.weight);
        }
      }
    }
    if (groups.empty()) {  // no endpoint: one empty locality, as before (PGV: weight at least 1)
      auto* locality = cla.add_endpoints();
      locality->mutable_locality();
      locality->mutable_load_balancing_weight()->set_value(1);
    }
    groups.MoveTo(*cla.mutable_endpoints(), /*weigh=*/true);
    if (locality_plan.has_value()) ApplyLocalityLb(*locality_plan, cla);
    CapLocalityWeights(cla);
    return Resource::FromMessage(cla);
  }

  const MeshModel& model_;
};

// The port of the cluster a destination names, as istiod's GetDestinationCluster picks it:
// the destination's own, else its service's only port, else `port`, where the request came in.
uint32_t DestinationPort(const MeshContext& mesh, const std::string& host, const HttpRouteDestination& d,
                         uint32_t port) {
  if (d.port != 0) return d.port;
  const ServiceInfo* service = mesh.FindService(host);
  return service != nullptr && service->ports.size() == 1 ? service->ports.front().number : port;
}

// The service a proxyless client's target host reaches: the host's own, or for a served alias
// (an ExternalName Service, stored in `alias`) its concrete host's; null when the proxy does not
// see the host, or the alias (by the alias Service's own namespace and exportTo, and Sidecar
// egress hosts: stricter than istiod, which ignores an alias's exportTo; docs/config.md).
const ServiceInfo* TargetService(const MeshContext& mesh, const std::string& host, const ProxyScope& scope,
                                 const ServiceAlias*& alias) {
  alias = nullptr;
  if (const ServiceInfo* service = mesh.FindService(host)) return scope.Visible(*service) ? service : nullptr;
  const ServiceAlias* found = mesh.FindAlias(host);
  if (found == nullptr || !scope.Visible(found->alias)) return nullptr;
  const ServiceInfo* concrete = mesh.FindService(found->concrete);
  if (concrete == nullptr || !scope.Visible(*concrete)) return nullptr;
  alias = found;
  return concrete;
}

// What an alias's requests are routed as: the alias itself when a VirtualService names it for
// the proxy (to the concrete host's clusters), else its concrete host, whose routes answer to
// the alias's name as to its own (istiod's virtual host domains).
const ServiceInfo& RoutedAs(const MeshContext& mesh, const ServiceAlias& alias, const ServiceInfo& concrete,
                            const ProxyScope& scope) {
  return mesh.VirtualServicesFor(alias.alias.host, scope.namespace_name()).empty() ? concrete : alias.alias;
}

constexpr char kFaultFilter[] = "envoy.filters.http.fault";
constexpr char kCorsFilter[] = "envoy.filters.http.cors";

// `envoy`: the connection manager of an Envoy node, which lists the CORS filter too (proxyless
// gRPC has none, and refuses a listener naming a filter it lacks) and takes istiod's defaults,
// with `idle_timeout`, the node's IDLE_TIMEOUT, for its connections when given.
HttpConnectionManager RdsManager(const std::string& route_name, const std::string& stat_prefix, bool envoy,
                                 const std::optional<absl::Duration>& idle_timeout = std::nullopt) {
  HttpConnectionManager hcm;
  hcm.set_stat_prefix(stat_prefix);
  hcm.mutable_rds()->set_route_config_name(route_name);
  hcm.mutable_rds()->mutable_config_source()->mutable_ads();
  hcm.mutable_rds()->mutable_config_source()->set_resource_api_version(envoy::config::core::v3::ApiVersion::V3);
  if (envoy) {
    // istiod's defaults for every connection manager it sends Envoy (buildHTTPConnectionManager):
    // paths normalized before routes match them (its default BASE normalization), escaped
    // slashes left as they are, WebSocket upgrades allowed, no stream idle timeout (Envoy's 5
    // minutes would cut long-lived idle streams), and the route configuration awaited without
    // a deadline (Envoy's 15 seconds would start the listener with no routes).
    hcm.mutable_normalize_path()->set_value(true);
    hcm.set_path_with_escaped_slashes_action(HttpConnectionManager::KEEP_UNCHANGED);
    hcm.add_upgrade_configs()->set_upgrade_type("websocket");
    hcm.mutable_stream_idle_timeout();
    hcm.mutable_rds()->mutable_config_source()->mutable_initial_fetch_timeout();
    // "100 Continue" passed on to the client, istiod's ENABLE_100_CONTINUE_HEADERS default.
    hcm.set_proxy_100_continue(true);
    if (idle_timeout.has_value()) {
      SetDuration(*idle_timeout, hcm.mutable_common_http_protocol_options()->mutable_idle_timeout());
    }
  }
  // The CORS filter, then the fault filter, both empty and in istiod's order: routes with a
  // corsPolicy or a fault configure them per route (typed_per_filter_config); gRPC honours a
  // fault only when its filter is listed here.
  if (envoy) {
    auto* cors = hcm.add_http_filters();
    cors->set_name(kCorsFilter);
    cors->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::cors::v3::Cors());
  }
  auto* fault = hcm.add_http_filters();
  fault->set_name(kFaultFilter);
  fault->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::fault::v3::HTTPFault());
  auto* router = hcm.add_http_filters();
  router->set_name("envoy.filters.http.router");
  router->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::router::v3::Router());
  return hcm;
}

// The TCP proxy of one opaque filter chain: to the chain's route's destinations (one, or
// weighted), else to the service's own cluster.
// A TCP proxy to the weighted destinations `route` (short hosts of `route_namespace`) of
// connections to `port`, counted under `stat_prefix`.
std::string DestinationCluster(const MeshContext& mesh, const HttpRouteDestination& d,
                               const std::string& route_namespace, uint32_t port) {
  // (An alias's route reaches its concrete host's cluster, as istiod's GetDestinationCluster.)
  const std::string host = mesh.ConcreteHost(ResolveHost(d.host, route_namespace, mesh.domain_suffix()));
  return ClusterName(DestinationPort(mesh, host, d, port), d.subset, host);
}

// What istiod takes onto a TCP proxy from `rule`, the DestinationRule the proxy gets for the
// service of its (first) destination (buildOutboundNetworkFiltersWithSingleDestination, and
// ...WithWeightedClusters for a split): the rule's own connectionPool.tcp idleTimeout and
// maxConnectionDuration (neither a subset's nor a port's), a hash by source IP (the rule's
// consistentHash, unless the destination's subset has a loadBalancer of its own), and the tunnel
// (a single destination's subset's, else the rule's; a split's is the rule's). `subset`: the
// single destination's, "" for none and for a split.
void ApplyRuleFieldsToTcpProxy(const DestinationRule* rule, const std::string& subset, bool split, TcpProxy& tcp) {
  if (rule == nullptr) return;
  const std::optional<TrafficPolicy>& policy = rule->traffic_policy;
  if (policy.has_value() && policy->connection_pool.has_value()) {
    const PolicyFields::ConnectionPool& pool = *policy->connection_pool;
    if (pool.tcp_idle_timeout) SetDuration(*pool.tcp_idle_timeout, tcp.mutable_idle_timeout());
    if (pool.max_connection_duration) {
      SetDuration(*pool.max_connection_duration, tcp.mutable_max_downstream_connection_duration());
    }
  }
  const auto source_ip = [](const PolicyFields& fields) {
    return fields.consistent_hash.has_value() &&
           fields.consistent_hash->key == PolicyFields::ConsistentHash::Key::kSourceIp;
  };
  bool hash_by_source = policy.has_value() && source_ip(*policy);
  const DestinationRule::Subset* own = nullptr;
  for (const DestinationRule::Subset& candidate : rule->subsets) {
    if (!subset.empty() && candidate.name == subset) {
      own = &candidate;
      break;
    }
  }
  if (own != nullptr && own->traffic_policy.has_value() && own->traffic_policy->load_balancer_given) {
    hash_by_source = source_ip(*own->traffic_policy);
  }
  if (hash_by_source) tcp.add_hash_policy()->mutable_source_ip();
  const std::optional<TrafficPolicy::Tunnel>* tunnel = nullptr;
  if (!subset.empty() && !split) {
    if (own != nullptr && own->traffic_policy.has_value()) tunnel = &own->traffic_policy->tunnel;
  } else if (policy.has_value()) {
    tunnel = &policy->tunnel;
  }
  if (tunnel != nullptr && tunnel->has_value()) {
    const TrafficPolicy::Tunnel& to = **tunnel;
    auto* config = tcp.mutable_tunneling_config();
    // HOST:PORT, an IPv6 address in brackets (Go's JoinHostPort, as istiod writes it).
    config->set_hostname(to.target_host.find(':') != std::string::npos
                             ? StrCat("[", to.target_host, "]:", to.target_port)
                             : StrCat(to.target_host, ":", to.target_port));
    if (to.use_post) config->set_use_post(true);
  }
}

// The same, then, without the rule's idle timeout, the proxy's IDLE_TIMEOUT (istiod's fallback).
void ApplyRuleToTcpProxy(const DestinationRule* rule, const std::string& subset, bool split, const ProxyScope& scope,
                         TcpProxy& tcp) {
  ApplyRuleFieldsToTcpProxy(rule, subset, split, tcp);
  if (!tcp.has_idle_timeout() && scope.node_idle_timeout().has_value()) {
    SetDuration(*scope.node_idle_timeout(), tcp.mutable_idle_timeout());
  }
}

// The DestinationRule the proxy of `scope` gets for service `host`: none when it sees no service
// of that name (istiod looks the rule up through the service, as the proxy sees them).
const DestinationRule* ServiceRuleFor(const MeshContext& mesh, const std::string& host, const ProxyScope& scope) {
  return scope.VisibleHost(host) ? mesh.DestinationRuleFor(host, scope.namespace_name(), &scope.labels()) : nullptr;
}

TcpProxy RouteProxy(const MeshContext& mesh, const std::vector<HttpRouteDestination>& route,
                    const std::string& route_namespace, uint32_t port, const std::string& stat_prefix,
                    const ProxyScope& scope) {
  TcpProxy tcp;
  tcp.set_stat_prefix(stat_prefix);
  const auto cluster_of = [&](const HttpRouteDestination& d) {
    return DestinationCluster(mesh, d, route_namespace, port);
  };
  const DestinationRule* rule =
      route.empty()
          ? nullptr
          : ServiceRuleFor(
                mesh, mesh.ConcreteHost(ResolveHost(route.front().host, route_namespace, mesh.domain_suffix())), scope);
  if (route.size() == 1) {
    tcp.set_cluster(cluster_of(route.front()));
    ApplyRuleToTcpProxy(rule, route.front().subset, /*split=*/false, scope, tcp);
    return tcp;
  }
  for (const HttpRouteDestination& d : route) {
    if (d.weight == 0) continue;
    auto* weighted = tcp.mutable_weighted_clusters()->add_clusters();
    weighted->set_name(cluster_of(d));
    weighted->set_weight(d.weight);
  }
  ApplyRuleToTcpProxy(rule, "", /*split=*/true, scope, tcp);
  return tcp;
}

TcpProxy OpaqueProxy(const MeshContext& mesh, const MeshContext::OpaqueChain& chain, uint32_t port,
                     const ProxyScope& scope) {
  const std::string cluster = ClusterName(port, "", chain.host);
  for (const MeshContext::OpaqueChain::ForSources& candidate : chain.for_sources) {
    if (std::any_of(candidate.matches.begin(), candidate.matches.end(), [&](const TcpRoute::Match* m) {
          return scope.MeetsSource(m->source_labels, m->source_namespace);
        })) {
      return RouteProxy(mesh, *candidate.route, candidate.route_namespace, port, cluster, scope);
    }
  }
  if (chain.route != nullptr) {
    return RouteProxy(mesh, *chain.route, chain.route_namespace, port, cluster, scope);
  }
  TcpProxy tcp;
  tcp.set_stat_prefix(cluster);
  tcp.set_cluster(cluster);
  ApplyRuleToTcpProxy(ServiceRuleFor(mesh, chain.host, scope), "", /*split=*/false, scope, tcp);
  return tcp;
}

// Adds `chain` to `listener`: a filter chain matching `server_names` (the listener then reads
// them with the TLS inspector), or every connection when empty.
void AddOpaqueChain(const MeshContext& mesh, const MeshContext::OpaqueChain& chain,
                    const std::vector<std::string>& server_names, uint32_t port, const ProxyScope& scope,
                    Listener& listener) {
  auto* filter_chain = listener.add_filter_chains();
  if (!server_names.empty()) {
    for (const std::string& name : server_names) {
      filter_chain->mutable_filter_chain_match()->add_server_names(name);
    }
    if (listener.listener_filters_size() == 0) {
      auto* inspector = listener.add_listener_filters();
      inspector->set_name("envoy.filters.listener.tls_inspector");
      inspector->mutable_typed_config()->PackFrom(
          envoy::extensions::filters::listener::tls_inspector::v3::TlsInspector());
      // A client that sends nothing first (a server-first protocol on the catch-all chain)
      // reaches it when the inspector gives up, as istiod's outbound listeners do.
      listener.set_continue_on_listener_filters_timeout(true);
    }
  }
  auto* filter = filter_chain->add_filters();
  filter->set_name("envoy.filters.network.tcp_proxy");
  filter->mutable_typed_config()->PackFrom(OpaqueProxy(mesh, chain, port, scope));
}

// The chains of an opaque port's listener for this proxy, in order (MeshContext::OpaqueChains),
// each with the SNI names it keeps (empty: the catch-all): those of services it sees, of tls
// matches with source conditions only if it meets them, a host's own chain only if it meets none
// of the host's (`unless`, as istiod's hasTLSMatch), and of a name two chains have (possible only
// after a chain with source conditions) the first, as istiod keeps a proxy's first match. It may
// be none (a conditional chain dropped for a name taken before): then no listener is sent.
using ChosenChains = std::vector<std::pair<const MeshContext::OpaqueChain*, std::vector<std::string>>>;
ChosenChains ChooseOpaqueChains(const std::vector<MeshContext::OpaqueChain>& chains, const ProxyScope& scope) {
  ChosenChains chosen;
  std::set<std::string, std::less<>> named;  // "": the catch-all
  const auto meets = [&](const TlsRoute::Match* match) {
    return scope.MeetsSource(match->source_labels, match->source_namespace);
  };
  for (const MeshContext::OpaqueChain& chain : chains) {
    const bool visible =
        scope.VisibleHost(chain.host) || std::any_of(chain.also_hosts.begin(), chain.also_hosts.end(),
                                                     [&](const std::string& host) { return scope.VisibleHost(host); });
    if (!visible || (chain.source != nullptr && !meets(chain.source)) ||
        std::any_of(chain.unless.begin(), chain.unless.end(), meets)) {
      continue;
    }
    std::vector<std::string> names;
    for (const std::string& name : chain.server_names) {
      if (named.insert(name).second) names.push_back(name);
    }
    if (chain.server_names.empty() ? !named.insert("").second : names.empty()) continue;
    chosen.emplace_back(&chain, std::move(names));
  }
  return chosen;
}

}  // namespace

namespace {

envoy::extensions::transport_sockets::tls::v3::TlsParameters::TlsProtocol TlsVersion(const std::string& istio) {
  using Params = envoy::extensions::transport_sockets::tls::v3::TlsParameters;
  if (istio == "TLSV1_0") return Params::TLSv1_0;
  if (istio == "TLSV1_1") return Params::TLSv1_1;
  if (istio == "TLSV1_2") return Params::TLSv1_2;
  if (istio == "TLSV1_3") return Params::TLSv1_3;
  return Params::TLS_AUTO;
}

// A server's TLS termination, as istiod builds it for a credentialName: the certificate
// over SDS (on the ADS stream) as kubernetes://NAME; for MUTUAL a client certificate required
// and checked against kubernetes://NAME-cacert, or caCertCredentialName's CA (OPTIONAL_MUTUAL:
// checked when presented), and
// for the names, key and certificate hashes given (istiod checks those beside a credentialName
// only; cxds beside files too: they are what the Gateway asks for).
// Without a credentialName, the files on the gateway. ALPN offers HTTP/2 and HTTP/1.1 (istiod offers it on
// TLS servers that terminate for TCP too).
envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext GatewayTlsContext(const Gateway::Server& server) {
  envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext context;
  auto* common = context.mutable_common_tls_context();
  common->add_alpn_protocols("h2");
  common->add_alpn_protocols("http/1.1");
  const bool files = server.credential_name.empty();
  if (files) {
    const auto add_files = [&](const std::string& chain, const std::string& key) {
      auto* certificate = common->add_tls_certificates();
      certificate->mutable_certificate_chain()->set_filename(chain);
      certificate->mutable_private_key()->set_filename(key);
    };
    add_files(server.server_certificate, server.private_key);
    for (const auto& [chain, key] : server.more_certificates) add_files(chain, key);
  } else {
    *common->add_tls_certificate_sds_secret_configs() = AdsSecret(GatewaySecretName(server.credential_name));
    for (const std::string& name : server.more_credential_names) {
      *common->add_tls_certificate_sds_secret_configs() = AdsSecret(GatewaySecretName(name));
    }
  }
  if (!server.min_protocol_version.empty() || !server.max_protocol_version.empty() || !server.cipher_suites.empty() ||
      !server.ecdh_curves.empty()) {
    auto* params = common->mutable_tls_params();
    params->set_tls_minimum_protocol_version(TlsVersion(server.min_protocol_version));
    params->set_tls_maximum_protocol_version(TlsVersion(server.max_protocol_version));
    for (const std::string& suite : server.cipher_suites) params->add_cipher_suites(suite);
    for (const std::string& curve : server.ecdh_curves) params->add_ecdh_curves(curve);
  }
  if (server.ChecksClients()) {
    envoy::extensions::transport_sockets::tls::v3::CertificateValidationContext* validation = nullptr;
    if (files) {
      validation = common->mutable_validation_context();
      validation->mutable_trusted_ca()->set_filename(server.ca_certificates);
      if (!server.ca_crl.empty()) validation->mutable_crl()->set_filename(server.ca_crl);
    } else {
      auto* combined = common->mutable_combined_validation_context();
      validation = combined->mutable_default_validation_context();
      *combined->mutable_validation_context_sds_secret_config() = AdsSecret(
          GatewayCaSecretName(server.ca_credential_name.empty() ? server.credential_name : server.ca_credential_name));
    }
    AddSubjectAltNames(server.client_subject_alt_names, *validation);
    for (const std::string& spki : server.client_spki) validation->add_verify_certificate_spki(spki);
    for (const std::string& hash : server.client_hashes) validation->add_verify_certificate_hash(hash);
    if (server.accept_untrusted_clients) {
      validation->set_trust_chain_verification(
          envoy::extensions::transport_sockets::tls::v3::CertificateValidationContext::ACCEPT_UNTRUSTED);
    }
    // OPTIONAL_MUTUAL: a certificate presented is checked, none is needed (istiod's too).
    context.mutable_require_client_certificate()->set_value(server.tls_mode == Gateway::Server::TlsMode::kMutual);
  }
  return context;
}

class ListenerGenerator final : public TypedGenerator<MeshContext> {
 public:
  ListenerGenerator(const MeshModel& model, TranslationOptions options) : model_(model), options_(std::move(options)) {}

  absl::StatusOr<std::optional<GeneratedResources>> GenerateFor(const Proxy& proxy_node,
                                                                const WatchedResources& watched,
                                                                const PushRequest& request, const MeshContext& mesh,
                                                                const GeneratorEnv& env) override {
    ResourceCache& cache = env.cache;
    if (request.EndpointOnly()) return std::nullopt;
    const ProxyInfo& proxy = ResolvedProxy(proxy_node, model_, env);
    const ProxyScope scope(proxy, mesh);
    GeneratedResources out;
    // HOST:PORT, the target a client dials; `dependencies`: its service's (and an alias's) keys.
    const auto add_api_listener = [&](const std::string& name, std::vector<ConfigKey> dependencies) -> absl::Status {
      auto resource = cache.GetOrBuild(
          {std::string(kListenerType), name, "grpc"}, std::move(dependencies), request.push_sequence,
          [&]() -> absl::StatusOr<ResourcePtr> {
            Listener listener;
            listener.set_name(name);
            listener.mutable_api_listener()->mutable_api_listener()->PackFrom(RdsManager(name, name, /*envoy=*/false));
            return Resource::FromMessage(listener);
          });
      if (!resource.ok()) return resource.status();
      out.resources.push_back(*resource);
      return absl::OkStatus();
    };
    if (proxy.grpc && !watched.wildcard) {
      // Subscribed by name ("host:port", the target it dials): only those, not one listener
      // per service of the mesh.
      out.incremental = request.delta_scope.has_value();
      for (const std::string& name : *watched.names) {
        const size_t colon = name.rfind(':');
        uint32_t number = 0;
        if (colon == std::string::npos || !absl::SimpleAtoi(name.substr(colon + 1), &number)) continue;
        const ServiceAlias* alias = nullptr;
        const ServiceInfo* service = TargetService(mesh, name.substr(0, colon), scope, alias);
        if (service == nullptr) continue;
        for (const ServicePort& port : service->ports) {
          if (port.number != number || !IsHttp(port)) continue;
          std::vector<ConfigKey> dependencies{ServiceKey(*service)};
          if (alias != nullptr) dependencies.push_back(ServiceKey(alias->alias));
          if (absl::Status status = add_api_listener(name, std::move(dependencies)); !status.ok()) return status;
        }
      }
      return out;
    }
    if (proxy.type == "router" && !proxy.grpc) return GatewayListeners(proxy, request, mesh, cache);
    // Envoy: one listener per port. A port with an HTTP service gets the HTTP connection
    // manager (routes by Host); an opaque one the filter chains of MeshContext::OpaqueChains
    // whose services this proxy sees and the proxy gets (ChooseOpaqueChains).
    struct PortListener {
      bool http = false;
      ChosenChains chains;
    };
    std::map<uint32_t, PortListener> ports;
    for (const auto& [host, service] : mesh.services()) {
      if (!scope.Visible(service)) continue;
      for (const ServicePort& port : service.ports) {
        if (proxy.grpc) {
          if (!IsHttp(port)) continue;
          if (absl::Status status = add_api_listener(StrCat(service.host, ":", port.number), {ServiceKey(service)});
              !status.ok()) {
            return status;
          }
        } else if (IsHttp(port)) {
          ports[port.number].http = true;
        } else if (auto [it, inserted] = ports.try_emplace(port.number); inserted) {
          it->second.chains = ChooseOpaqueChains(mesh.OpaqueChains(port.number), scope);
        }
      }
    }
    for (const auto& [port, plan] : ports) {
      if (!plan.http && plan.chains.empty()) continue;
      const std::string name = StrCat(options_.listener_address, "_", port);
      // An opaque listener's chains follow from the proxy's scope and the source conditions it
      // meets, and its IDLE_TIMEOUT (tcp_proxy_key; the context is the same).
      auto resource = cache.GetOrBuild(
          {std::string(kListenerType), name,
           plan.http ? StrCat("envoy", scope.idle_key()) : StrCat("envoy|opaque|", scope.tcp_proxy_key())},
          {kWholeContext}, request.push_sequence, [&]() -> absl::StatusOr<ResourcePtr> {
            Listener listener;
            listener.set_name(name);
            auto* address = listener.mutable_address()->mutable_socket_address();
            address->set_address(options_.listener_address);
            address->set_port_value(port);
            if (plan.http) {
              auto* filter = listener.add_filter_chains()->add_filters();
              filter->set_name("envoy.filters.network.http_connection_manager");
              filter->mutable_typed_config()->PackFrom(RdsManager(std::to_string(port), StrCat("outbound_", port),
                                                                  /*envoy=*/true, scope.node_idle_timeout()));
            } else {
              for (const auto& [chain, names] : plan.chains) AddOpaqueChain(mesh, *chain, names, port, scope, listener);
            }
            return Resource::FromMessage(listener);
          });
      if (!resource.ok()) return resource.status();
      out.resources.push_back(*resource);
    }
    return out;
  }

 private:
  // A gateway proxy's listeners, as istiod names them: ADDRESS_PORT per port of the servers of
  // the Gateways that pick it (PlanGatewayPorts). A plain HTTP port gets the HTTP connection
  // manager with route configuration http.PORT; a plain TCP port the TCP proxy of its server's
  // tcp route; a TLS port the chains of PlanGatewayChains, by SNI name: an HTTPS server's
  // terminates TLS (GatewayTlsContext) for routes https.PORT.PORT_NAME.GATEWAY.NS, a TLS
  // server's terminates it for its tcp route, a passthrough server's proxy the TLS bytes.
  // A port with no chain has no listener (Envoy refuses one). Nothing else: a gateway has no
  // outbound listeners.
  absl::StatusOr<std::optional<GeneratedResources>> GatewayListeners(const ProxyInfo& proxy, const PushRequest& request,
                                                                     const MeshContext& mesh, ResourceCache& cache) {
    const std::vector<const Gateway*> gateways = mesh.GatewaysFor(proxy.labels);
    std::string picked = "router|gateways:";
    for (const Gateway* gateway : gateways) {
      picked += StrCat(gateway->meta.namespace_name, "/", gateway->meta.name, ",");
    }
    // The VirtualServices bound to them that the proxy sees depend on its namespace only when
    // some VirtualService is exported narrowly.
    if (mesh.gateway_virtual_services_vary_by_namespace()) picked += StrCat("|ns:", proxy.namespace_name);
    // A TCP proxy takes fields of the DestinationRule the proxy gets (ApplyRuleToTcpProxy), which
    // route_key() follows, and the proxy's IDLE_TIMEOUT; not the source conditions it meets, which
    // no gateway's chains read (PlanGatewayChains): gateway_tcp_proxy_key().
    const ProxyScope scope(proxy, mesh);
    picked += StrCat("|", scope.gateway_tcp_proxy_key());
    GeneratedResources out;
    for (const auto& [port, plan] : PlanGatewayPorts(mesh, gateways, proxy.namespace_name)) {
      if (plan.servers.empty()) continue;
      const std::string name = StrCat(options_.gateway_address, "_", port);
      // A plain HTTP listener is the same for every gateway proxy with this port; the others
      // follow from the Gateways that pick the proxy.
      const bool http = plan.kind == GatewayPort::Kind::kHttp;
      auto resource =
          cache.GetOrBuild({std::string(kListenerType), name, http ? StrCat("router", scope.idle_key()) : picked},
                           {kWholeContext}, request.push_sequence, [&]() -> absl::StatusOr<ResourcePtr> {
                             std::optional<Listener> listener = GatewayListener(mesh, name, port, plan, scope);
                             if (!listener.has_value()) return absl::NotFoundError("no filter chain");
                             return Resource::FromMessage(*listener);
                           });
      if (absl::IsNotFound(resource.status())) continue;
      if (!resource.ok()) return resource.status();
      out.resources.push_back(*resource);
    }
    return out;
  }

  std::optional<Listener> GatewayListener(const MeshContext& mesh, const std::string& name, uint32_t port,
                                          const GatewayPort& plan, const ProxyScope& scope) const {
    Listener listener;
    listener.set_name(name);
    auto* address = listener.mutable_address()->mutable_socket_address();
    address->set_address(options_.gateway_address);
    address->set_port_value(port);
    // The client's address is the peer's (a gateway is where requests enter the mesh). With no
    // trusted hops Envoy also sets x-forwarded-proto from the connection, which is why an
    // httpsRedirect on a server that terminates TLS is ignored as always met (ReadServerTls).
    // Trusting hops (numTrustedProxies) would make it matter again.
    const auto add_manager = [&](envoy::config::listener::v3::FilterChain* chain, const std::string& route_name) {
      HttpConnectionManager hcm =
          RdsManager(route_name, StrCat("outbound_", name), /*envoy=*/true, scope.node_idle_timeout());
      hcm.mutable_use_remote_address()->set_value(true);
      // istiod's gateways answer as "istio-envoy" (its sidecars' outbound managers keep Envoy's).
      hcm.set_server_name("istio-envoy");
      // As istiod's gateways: a client's x-forwarded-client-cert is replaced by what the gateway
      // saw of the client's certificate (a MUTUAL server's), subject, certificate, DNS and URI names.
      hcm.set_forward_client_cert_details(HttpConnectionManager::SANITIZE_SET);
      auto* details = hcm.mutable_set_current_client_cert_details();
      details->mutable_subject()->set_value(true);
      details->set_cert(true);
      details->set_dns(true);
      details->set_uri(true);
      auto* filter = chain->add_filters();
      filter->set_name("envoy.filters.network.http_connection_manager");
      filter->mutable_typed_config()->PackFrom(hcm);
    };
    if (plan.kind == GatewayPort::Kind::kHttp) {
      add_manager(listener.add_filter_chains(), StrCat("http.", port));
      return listener;
    }
    const GatewayChains planned = PlanGatewayChains(mesh, port, plan);
    if (planned.chains.empty()) return std::nullopt;
    if (plan.kind == GatewayPort::Kind::kTls) {
      auto* inspector = listener.add_listener_filters();
      inspector->set_name("envoy.filters.listener.tls_inspector");
      inspector->mutable_typed_config()->PackFrom(
          envoy::extensions::filters::listener::tls_inspector::v3::TlsInspector());
    }
    for (const GatewayChain& planned_chain : planned.chains) {
      const Gateway::Server& server = *planned_chain.entry->server;
      auto* chain = listener.add_filter_chains();
      for (const std::string& server_name : planned_chain.server_names) {
        chain->mutable_filter_chain_match()->add_server_names(server_name);
      }
      if (server.Terminates()) {
        auto* socket = chain->mutable_transport_socket();
        socket->set_name("envoy.transport_sockets.tls");
        socket->mutable_typed_config()->PackFrom(GatewayTlsContext(server));
      }
      if (planned_chain.route == nullptr) {
        add_manager(chain, GatewayTlsRouteName(*planned_chain.entry->gateway, server));
        continue;
      }
      auto* filter = chain->add_filters();
      filter->set_name("envoy.filters.network.tcp_proxy");
      // Counted under the destination's cluster, as istiod's; a split under the listener.
      const std::string stat_prefix =
          planned_chain.route->size() == 1
              ? DestinationCluster(mesh, planned_chain.route->front(), planned_chain.route_namespace, port)
              : StrCat("outbound_", name);
      filter->mutable_typed_config()->PackFrom(
          RouteProxy(mesh, *planned_chain.route, planned_chain.route_namespace, port, stat_prefix, scope));
    }
    return listener;
  }

  const MeshModel& model_;
  const TranslationOptions options_;
};

void SetStringMatch(const StringMatch& match, envoy::type::matcher::v3::StringMatcher* out) {
  switch (match.kind) {
    case StringMatch::Kind::kExact:
      out->set_exact(match.value);
      break;
    case StringMatch::Kind::kPrefix:
      out->set_prefix(match.value);
      break;
    case StringMatch::Kind::kRegex:
      out->mutable_safe_regex()->set_regex(match.value);
      break;
  }
}

bool MatchesWhatGrpcLacks(const HttpRoute::Match& match) {
  const auto pseudo = [](const auto& header) { return header.first.starts_with(':'); };
  return match.method.has_value() || match.authority.has_value() || match.scheme.has_value() ||
         !match.query_params.empty() || std::any_of(match.headers.begin(), match.headers.end(), pseudo) ||
         std::any_of(match.without_headers.begin(), match.without_headers.end(), pseudo);
}

// Istio's header operations: set replaces (OVERWRITE_IF_EXISTS_OR_ADD), add appends. `T` is a
// Route or a WeightedCluster::ClusterWeight, which have the same four fields.
template <typename T>
void AddHeaderOperations(const HeaderManipulation& headers, T* out) {
  using Option = envoy::config::core::v3::HeaderValueOption;
  const auto add = [](const HeaderOperations& ops, auto* to_add, auto* to_remove) {
    for (const auto& [name, value] : ops.set) {
      Option* option = to_add->Add();
      option->mutable_header()->set_key(name);
      option->mutable_header()->set_value(value);
      option->set_append_action(Option::OVERWRITE_IF_EXISTS_OR_ADD);
    }
    for (const auto& [name, value] : ops.add) {
      Option* option = to_add->Add();
      option->mutable_header()->set_key(name);
      option->mutable_header()->set_value(value);
      option->set_append_action(Option::APPEND_IF_EXISTS_OR_ADD);
    }
    for (const std::string& name : ops.remove) *to_remove->Add() = name;
  };
  add(headers.request, out->mutable_request_headers_to_add(), out->mutable_request_headers_to_remove());
  add(headers.response, out->mutable_response_headers_to_add(), out->mutable_response_headers_to_remove());
}

// Istio's translation: percentages as parts per million (12.5% is 125000).
envoy::type::v3::FractionalPercent Fraction(double percent) {
  envoy::type::v3::FractionalPercent fraction;
  fraction.set_numerator(static_cast<uint32_t>(percent * 10000));
  fraction.set_denominator(envoy::type::v3::FractionalPercent::MILLION);
  return fraction;
}

// A whole percent as istiod sends it (mirrorPercent, a mirror's default 100): in hundredths.
envoy::type::v3::FractionalPercent WholePercent(uint32_t percent) {
  envoy::type::v3::FractionalPercent fraction;
  fraction.set_numerator(percent);
  fraction.set_denominator(envoy::type::v3::FractionalPercent::HUNDRED);
  return fraction;
}

// corsPolicy as istiod translates it: origins as string matchers, the lists comma-joined,
// maxAge in whole seconds.
envoy::extensions::filters::http::cors::v3::CorsPolicy CorsConfig(const HttpRoute::CorsPolicy& in) {
  envoy::extensions::filters::http::cors::v3::CorsPolicy out;
  for (const StringMatch& origin : in.allow_origins) {
    // An empty prefix matches every origin, which Envoy says as an exact "*" (it refuses an
    // empty prefix).
    const bool any = origin.kind == StringMatch::Kind::kPrefix && origin.value.empty();
    SetStringMatch(any ? StringMatch{StringMatch::Kind::kExact, "*"} : origin, out.add_allow_origin_string_match());
  }
  out.set_allow_methods(absl::StrJoin(in.allow_methods, ","));
  out.set_allow_headers(absl::StrJoin(in.allow_headers, ","));
  out.set_expose_headers(absl::StrJoin(in.expose_headers, ","));
  if (in.max_age.has_value()) out.set_max_age(std::to_string(absl::ToInt64Seconds(*in.max_age)));
  if (in.allow_credentials.has_value()) out.mutable_allow_credentials()->set_value(*in.allow_credentials);
  if (in.forward_unmatched_preflights.has_value()) {
    out.mutable_forward_not_matching_preflights()->set_value(*in.forward_unmatched_preflights);
  }
  return out;
}

// The longest fault delay sent to gRPC nodes: grpc-js waits with Node's setTimeout, which fires a
// longer one (over 2^31-1 ms, about 24.8 days) after 1 ms; capped, every gRPC client still waits
// about 24.8 days, which any request would take as forever.
constexpr absl::Duration kMaxGrpcFaultDelay = absl::Milliseconds(2147483647);

envoy::extensions::filters::http::fault::v3::HTTPFault FaultConfig(const FaultInjection& fault, bool grpc) {
  envoy::extensions::filters::http::fault::v3::HTTPFault out;
  if (fault.delay.has_value()) {
    auto* delay = out.mutable_delay();
    SetDuration(grpc ? std::min(fault.delay->fixed_delay, kMaxGrpcFaultDelay) : fault.delay->fixed_delay,
                delay->mutable_fixed_delay());
    // The integer as istiod converts it (uint32): above 100, or negative, every request.
    *delay->mutable_percentage() = fault.delay->whole_percent.has_value()
                                       ? WholePercent(static_cast<uint32_t>(*fault.delay->whole_percent))
                                       : Fraction(fault.delay->percent);
  }
  if (fault.abort.has_value()) {
    auto* abort = out.mutable_abort();
    if (fault.abort->grpc_status.has_value()) {
      abort->set_grpc_status(*fault.abort->grpc_status);
    } else {
      abort->set_http_status(fault.abort->http_status);
    }
    *abort->mutable_percentage() = Fraction(fault.abort->percent);
  }
  return out;
}

// What a request to a ring-hash cluster is hashed by, from the DestinationRule of the
// destination (and subset). gRPC hashes on headers only (gRFC A42): other keys are left out for
// gRPC nodes, whose ring hash then picks at random (analysis says so, cxds_grpc_ignores).
void AddHashPolicy(const MeshContext& mesh, const std::string& host, const std::string& subset, uint32_t port,
                   const ProxyScope& scope, bool grpc, envoy::config::route::v3::RouteAction* action) {
  const std::optional<PolicyFields> policy =
      PolicyFor(mesh.DestinationRuleFor(host, scope.namespace_name(), &scope.labels()), subset, port);
  if (!policy.has_value() || !policy->consistent_hash.has_value()) return;
  const TrafficPolicy::ConsistentHash& hash = *policy->consistent_hash;
  using Key = TrafficPolicy::ConsistentHash::Key;
  if (grpc && hash.key != Key::kHeader) return;
  envoy::config::route::v3::RouteAction::HashPolicy out;
  switch (hash.key) {
    case Key::kHeader:
      out.mutable_header()->set_header_name(hash.name);
      break;
    case Key::kCookie: {
      auto* cookie = out.mutable_cookie();
      cookie->set_name(hash.name);
      if (!hash.cookie_path.empty()) cookie->set_path(hash.cookie_path);
      if (hash.cookie_ttl.has_value()) SetDuration(*hash.cookie_ttl, cookie->mutable_ttl());
      break;
    }
    case Key::kSourceIp:
      out.mutable_connection_properties()->set_source_ip(true);
      break;
    case Key::kQueryParameter:
      out.mutable_query_parameter()->set_name(hash.name);
      break;
  }
  for (const auto& existing : action->hash_policy()) {
    if (existing.SerializeAsString() == out.SerializeAsString()) return;  // weighted destinations alike
  }
  *action->add_hash_policy() = std::move(out);
}

// The route's timeout as istiod's setTimeout sets it. Envoy nodes: `timeout`, the
// VirtualService's or else 0s, none (Envoy's own default, 15 s, would cut requests istiod's
// meshes let run), and the same as max_grpc_timeout, so that a gRPC client's grpc-timeout header
// is honoured up to it (0s: without bound). Not max_stream_duration: with it Envoy ignores
// `timeout` and times the whole stream from its headers instead. gRPC nodes read only
// max_stream_duration (gRFC A31): a given timeout goes there.
void SetTimeout(const std::optional<absl::Duration>& timeout, bool grpc,
                envoy::config::route::v3::RouteAction* action) {
  if (grpc) {
    if (timeout.has_value()) {
      SetDuration(*timeout, action->mutable_timeout());
      SetDuration(*timeout, action->mutable_max_stream_duration()->mutable_max_stream_duration());
    }
    return;
  }
  const absl::Duration d = timeout.value_or(absl::ZeroDuration());
  SetDuration(d, action->mutable_timeout());
  // Deprecated in the API, but what istiod sends: its replacement changes Envoy's timeouts.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  SetDuration(d, action->mutable_max_grpc_timeout());
#pragma GCC diagnostic pop
}

// The retry policy of a route, as istiod converts Istio's HTTPRetry (its retry.ConvertPolicy).
// Without `retries`, Envoy nodes get istiod's default: 2 retries on connect failure, refused
// stream, gRPC unavailable or cancelled and HTTP 503, each to a host not tried yet (unless the
// route hashes to a host: then the same one), up to 5 host picks. `attempts: 0` turns retries
// off. Given retries start from that default and replace what they set.
//
// gRPC nodes get a policy only where the route sets one, and only what gRPC reads (gRFC A44:
// the count, the gRPC conditions in retryOn, the backoff): istiod also sends them its Envoy
// default, which would make every proxyless client retry UNAVAILABLE and CANCELLED calls twice
// where the application asked for nothing.
void SetRetryPolicy(const std::optional<HttpRoute::Retries>& retries, bool grpc,
                    envoy::config::route::v3::RouteAction* action) {
  if (grpc && !retries.has_value()) return;
  if (retries.has_value() && retries->attempts == 0) return;
  auto* policy = action->mutable_retry_policy();
  policy->mutable_num_retries()->set_value(retries.has_value() ? retries->attempts : 2);
  policy->set_retry_on("connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes");
  if (retries.has_value() && (!retries->retry_on.empty() || !retries->status_codes.empty())) {
    std::string retry_on = retries->retry_on;
    // Status codes are retried only under this condition; istiod adds it when codes are listed.
    if (!retries->status_codes.empty() && !absl::StrContains(retry_on, "retriable-status-codes")) {
      retry_on = retry_on.empty() ? "retriable-status-codes" : StrCat(retry_on, ",retriable-status-codes");
    }
    policy->set_retry_on(retry_on);
  }
  if (retries.has_value() && retries->backoff.has_value()) {
    SetDuration(*retries->backoff, policy->mutable_retry_back_off()->mutable_base_interval());
  }
  if (grpc) return;
  if (retries.has_value() && (!retries->retry_on.empty() || !retries->status_codes.empty())) {
    for (uint32_t code : retries->status_codes) policy->add_retriable_status_codes(code);
  } else {
    policy->add_retriable_status_codes(503);
  }
  policy->set_host_selection_retry_max_attempts(5);
  const bool avoid_previous_hosts = retries.has_value() && retries->ignore_previous_hosts.has_value()
                                        ? *retries->ignore_previous_hosts
                                        : action->hash_policy_size() == 0;
  if (avoid_previous_hosts) {
    auto* predicate = policy->add_retry_host_predicate();
    predicate->set_name("envoy.retry_host_predicates.previous_hosts");
    predicate->mutable_typed_config()->PackFrom(
        envoy::extensions::retry::host::previous_hosts::v3::PreviousHostsPredicate());
  }
  if (retries.has_value() && retries->remote_localities) {
    envoy::extensions::retry::priority::previous_priorities::v3::PreviousPrioritiesConfig priorities;
    priorities.set_update_frequency(2);
    auto* priority = policy->mutable_retry_priority();
    priority->set_name("envoy.retry_priorities.previous_priorities");
    priority->mutable_typed_config()->PackFrom(priorities);
  }
  if (retries.has_value() && retries->per_try_timeout.has_value()) {
    SetDuration(*retries->per_try_timeout, policy->mutable_per_try_timeout());
  }
}

// A route the proxy answers itself: an HTTP redirect or a direct response.
// `port`: the port the route configuration is for, where the request came in.
void SetAnswer(const HttpRoute& http, uint32_t port, envoy::config::route::v3::Route* route) {
  if (http.redirect.has_value()) {
    using Code = envoy::config::route::v3::RedirectAction;
    auto* redirect = route->mutable_redirect();
    if (!http.redirect->uri.empty()) redirect->set_path_redirect(http.redirect->uri);
    if (!http.redirect->authority.empty()) redirect->set_host_redirect(http.redirect->authority);
    if (http.redirect->port != 0) redirect->set_port_redirect(http.redirect->port);
    // Envoy cannot take the port from the request, but these routes are for one port.
    if (http.redirect->port_from_request) redirect->set_port_redirect(port);
    if (!http.redirect->scheme.empty()) redirect->set_scheme_redirect(http.redirect->scheme);
    switch (http.redirect->code) {
      case 302:
        redirect->set_response_code(Code::FOUND);
        break;
      case 303:
        redirect->set_response_code(Code::SEE_OTHER);
        break;
      case 307:
        redirect->set_response_code(Code::TEMPORARY_REDIRECT);
        break;
      case 308:
        redirect->set_response_code(Code::PERMANENT_REDIRECT);
        break;
      default:
        redirect->set_response_code(Code::MOVED_PERMANENTLY);
        break;
    }
    return;
  }
  auto* direct = route->mutable_direct_response();
  direct->set_status(http.direct_response->status);
  if (!http.direct_response->body.empty()) direct->mutable_body()->set_inline_bytes(http.direct_response->body);
}

// The routes of one VirtualService's HTTP routes for requests on `port` (a service port, or a
// gateway's), in order: those of its matches `applies` keeps. Returns how many matches are for
// this port and proxy, counting those a gRPC node cannot be sent (an answer, a pseudo-header).
size_t AddVirtualServiceRoutes(const MeshContext& mesh, const VirtualService* vs, uint32_t port,
                               const std::function<bool(const HttpRoute::Match&)>& applies, const ProxyScope& scope,
                               bool grpc, envoy::config::route::v3::VirtualHost* vhost) {
  size_t for_proxy = 0;
  for (const HttpRoute& http : vs->http) {
    const bool answers = http.redirect.has_value() || http.direct_response.has_value();
    std::vector<const HttpRoute::Match*> matches;
    for (const auto& m : http.match) matches.push_back(&m);
    if (matches.empty()) matches.push_back(nullptr);
    for (const HttpRoute::Match* match : matches) {
      // A match on another of the host's ports has no place in this port's routes.
      if (match != nullptr && match->port != 0 && match->port != port) continue;
      // A match for other clients (sourceLabels, sourceNamespace, gateways) is not in this
      // proxy's routes.
      if (match != nullptr && !applies(*match)) continue;
      ++for_proxy;
      // gRPC routes only to clusters: grpc-js refuses the whole route configuration for one
      // redirect, so the route is left out (analysis says so, cxds_grpc_ignores).
      if (grpc && answers) continue;
      // Proxyless gRPC has no pseudo-headers or query to match: such a route never matches
      // there, so it is left out (analysis says so, cxds_grpc_ignores).
      if (grpc && match != nullptr && MatchesWhatGrpcLacks(*match)) continue;
      auto* route = vhost->add_routes();
      if (!http.name.empty()) route->set_name(http.name);
      if (match != nullptr && !match->stat_prefix.empty() && !grpc) route->set_stat_prefix(match->stat_prefix);
      auto* m = route->mutable_match();
      if (match == nullptr || !match->uri.has_value()) {
        m->set_prefix("/");
      } else if (match->uri->kind == StringMatch::Kind::kExact) {
        m->set_path(match->uri->value);
      } else if (match->uri->kind == StringMatch::Kind::kPrefix) {
        m->set_prefix(match->uri->value);
      } else {
        m->mutable_safe_regex()->set_regex(match->uri->value);
      }
      if (match != nullptr) {
        if (match->ignore_uri_case) m->mutable_case_sensitive()->set_value(false);
        const auto add_header = [&](const std::string& name, const StringMatch& value, bool invert) {
          auto* header = m->add_headers();
          header->set_name(name);
          // An empty prefix is Istio's "the header is present" (Envoy refuses an empty prefix).
          if (value.kind == StringMatch::Kind::kPrefix && value.value.empty()) {
            header->set_present_match(true);
          } else {
            SetStringMatch(value, header->mutable_string_match());
          }
          header->set_invert_match(invert);
        };
        for (const auto& [name, value] : match->headers) add_header(name, value, false);
        for (const auto& [name, value] : match->without_headers) add_header(name, value, true);
        if (match->method.has_value()) add_header(":method", *match->method, false);
        if (match->authority.has_value()) add_header(":authority", *match->authority, false);
        if (match->scheme.has_value()) add_header(":scheme", *match->scheme, false);
        for (const auto& [name, value] : match->query_params) {
          auto* param = m->add_query_parameters();
          param->set_name(name);
          if (value.kind == StringMatch::Kind::kPrefix && value.value.empty()) {
            param->set_present_match(true);
          } else {
            SetStringMatch(value, param->mutable_string_match());
          }
        }
      }
      if (http.cors.has_value() && !grpc) {  // gRPC has no CORS
        (*route->mutable_typed_per_filter_config())[kCorsFilter].PackFrom(CorsConfig(*http.cors));
      }
      if (answers) {
        AddHeaderOperations(http.headers, route);
        SetAnswer(http, port, route);
        // Only a delegate's merged redirect or direct response has one (MergeDelegateRoute).
        if (http.fault.has_value()) {
          (*route->mutable_typed_per_filter_config())[kFaultFilter].PackFrom(FaultConfig(*http.fault, grpc));
        }
        continue;
      }
      auto* action = route->mutable_route();
      auto destination_cluster = [&](const HttpRouteDestination& d) {
        const std::string host = mesh.ConcreteHost(ResolveHost(d.host, vs->meta.namespace_name, mesh.domain_suffix()));
        return ClusterName(DestinationPort(mesh, host, d, port), d.subset, host);
      };
      for (const HttpRouteDestination& d : http.route) {
        if (http.route.size() == 1 || d.weight != 0) {
          const std::string host =
              mesh.ConcreteHost(ResolveHost(d.host, vs->meta.namespace_name, mesh.domain_suffix()));
          AddHashPolicy(mesh, host, d.subset, DestinationPort(mesh, host, d, port), scope, grpc, action);
        }
      }
      if (http.route.size() == 1) {
        action->set_cluster(destination_cluster(http.route[0]));
        if (!grpc) AddHeaderOperations(http.route[0].headers, route);
      } else {
        for (const HttpRouteDestination& d : http.route) {
          if (d.weight == 0) continue;
          auto* weighted = action->mutable_weighted_clusters()->add_clusters();
          weighted->set_name(destination_cluster(d));
          weighted->mutable_weight()->set_value(d.weight);
          if (!grpc) AddHeaderOperations(d.headers, weighted);
        }
      }
      // gRPC implements none of these (gRFC A28): Envoy nodes only.
      if (!grpc) {
        AddHeaderOperations(http.headers, route);
        if (http.rewrite.has_value()) {
          if (!http.rewrite->uri.empty()) action->set_prefix_rewrite(http.rewrite->uri);
          if (!http.rewrite->authority.empty()) action->set_host_rewrite_literal(http.rewrite->authority);
          if (!http.rewrite->regex_match.empty()) {
            action->mutable_regex_rewrite()->mutable_pattern()->set_regex(http.rewrite->regex_match);
            action->mutable_regex_rewrite()->set_substitution(http.rewrite->regex_rewrite);
          }
        }
        for (const HttpRoute::Mirror& m : http.mirrors) {
          if (m.percent <= 0) continue;  // istiod: an explicit 0% mirrors nothing, and sends no policy
          auto* mirror = action->add_request_mirror_policies();
          mirror->set_cluster(destination_cluster(m.destination));
          *mirror->mutable_runtime_fraction()->mutable_default_value() =
              m.in_millionths ? Fraction(m.percent) : WholePercent(static_cast<uint32_t>(m.percent));
        }
      }
      SetTimeout(http.timeout, grpc, action);
      if (http.fault.has_value()) {
        (*route->mutable_typed_per_filter_config())[kFaultFilter].PackFrom(FaultConfig(*http.fault, grpc));
      }
      SetRetryPolicy(http.retries, grpc, action);
    }
  }
  return for_proxy;
}

// The routes of one service port: its VirtualServices' HTTP routes in order, then nothing
// else (a VirtualService decides) or, without one, a catch-all to the service (an alias's: to
// its concrete host).
void AddRoutes(const MeshContext& mesh, const ServiceInfo& service, uint32_t port, const ProxyScope& scope, bool grpc,
               envoy::config::route::v3::VirtualHost* vhost) {
  size_t for_proxy = 0;
  for (const VirtualService* vs : mesh.VirtualServicesFor(service.host, scope.namespace_name())) {
    for_proxy += AddVirtualServiceRoutes(
        mesh, vs, port, [&](const HttpRoute::Match& match) { return scope.Applies(match); }, scope, grpc, vhost);
  }
  // A VirtualService with no route for this port and proxy (other ports, other clients, every
  // delegated route dropped) leaves the host its default route, as istiod builds no virtual host
  // from it then. (Routes left out for gRPC alone do not: the rest of Envoy's are not there.)
  if (for_proxy == 0) {
    auto* route = vhost->add_routes();
    route->mutable_match()->set_prefix("/");
    const std::string host = mesh.ConcreteHost(service.host);
    route->mutable_route()->set_cluster(ClusterName(port, "", host));
    AddHashPolicy(mesh, host, "", port, scope, grpc, route->mutable_route());
    SetTimeout(std::nullopt, grpc, route->mutable_route());
    SetRetryPolicy(std::nullopt, grpc, route->mutable_route());
  }
}

// Istio's catch-all route: every path, no header or query condition.
bool IsCatchAll(const envoy::config::route::v3::Route& route) {
  const auto& match = route.match();
  const bool every_path =
      (match.has_prefix() && match.prefix() == "/") || (match.has_safe_regex() && (match.safe_regex().regex() == ".*"));
  return every_path && match.headers_size() == 0 && match.query_parameters_size() == 0;
}

// The virtual hosts of a gateway proxy's route configuration http.PORT, as istiod builds them:
// for each server on `port` of `gateways`, each VirtualService bound to its Gateway whose
// namespace the server's host allows, and each of its hosts the server's host matches, a
// virtual host for the narrower of the two names (HOST:PORT, domains HOST and HOST:PORT).
// Several VirtualServices for one name merge their routes, oldest first, then catch-all routes
// last (istiod's SortVHostRoutes). A server with tls.httpsRedirect makes its virtual hosts,
// and one for each of its own hosts no VirtualService has, redirect to HTTPS. No virtual host
// at all: istiod's blackhole, a 404 for every request.
void AddGatewayVirtualHosts(const MeshContext& mesh, const std::vector<GatewayServer>& servers, uint32_t port,
                            const ProxyScope& scope, RouteConfiguration& config) {
  struct Binding {
    const VirtualService* vs;
    // "namespace/name" of every Gateway it is reached through: what its match gateways name.
    std::vector<std::string> gateways;
  };
  struct Domain {
    std::vector<Binding> bindings;
    bool https_redirect = false;
  };
  std::map<std::string, Domain> domains;
  for (const GatewayServer& entry : servers) {
    const Gateway* gateway = entry.gateway;
    const Gateway::Server& server = *entry.server;
    const std::string gateway_name = StrCat(gateway->meta.namespace_name, "/", gateway->meta.name);
    for (const VirtualService* vs : mesh.VirtualServicesOfGateway(gateway_name, scope.namespace_name())) {
      if (vs->http.empty()) continue;  // tcp and tls routes only: nothing for an HTTP server
      for (const std::string& vs_host : vs->hosts) {
        const std::string host = ResolveHost(vs_host, vs->meta.namespace_name, mesh.domain_suffix());
        for (const std::string& server_host : server.hosts) {
          const std::string name = GatewayHostName(*gateway, server_host, vs->meta.namespace_name, host);
          if (name.empty()) continue;
          Domain& domain = domains[name];
          domain.https_redirect = domain.https_redirect || server.https_redirect;
          auto binding = std::find_if(domain.bindings.begin(), domain.bindings.end(),
                                      [&](const Binding& b) { return b.vs == vs; });
          if (binding == domain.bindings.end()) {
            domain.bindings.push_back({vs, {gateway_name}});
          } else if (std::find(binding->gateways.begin(), binding->gateways.end(), gateway_name) ==
                     binding->gateways.end()) {
            binding->gateways.push_back(gateway_name);
          }
        }
      }
    }
    if (!server.https_redirect) continue;
    for (const std::string& server_host : server.hosts) {
      domains[server_host.substr(server_host.find('/') + 1)].https_redirect = true;
    }
  }
  for (const auto& [name, domain] : domains) {
    auto* vhost = config.add_virtual_hosts();
    vhost->set_name(StrCat(name, ":", port));
    vhost->add_domains(name);
    if (name != "*") vhost->add_domains(StrCat(name, ":", port));
    if (domain.https_redirect) vhost->set_require_tls(envoy::config::route::v3::VirtualHost::ALL);
    for (const Binding& binding : domain.bindings) {
      const auto applies = [&](const HttpRoute::Match& match) {
        return std::any_of(binding.gateways.begin(), binding.gateways.end(),
                           [&](const std::string& gateway) { return scope.Applies(match, gateway); });
      };
      AddVirtualServiceRoutes(mesh, binding.vs, port, applies, scope, /*grpc=*/false, vhost);
    }
    std::stable_partition(vhost->mutable_routes()->begin(), vhost->mutable_routes()->end(),
                          [](const envoy::config::route::v3::Route& route) { return !IsCatchAll(route); });
  }
  if (domains.empty()) {
    auto* vhost = config.add_virtual_hosts();
    vhost->set_name(StrCat("blackhole:", port));
    vhost->add_domains("*");
    auto* route = vhost->add_routes();
    route->set_name("default");
    route->mutable_match()->set_prefix("/");
    route->mutable_direct_response()->set_status(404);
  }
}

class RouteGenerator final : public TypedGenerator<MeshContext> {
 public:
  explicit RouteGenerator(const MeshModel& model) : model_(model) {}

  absl::StatusOr<std::optional<GeneratedResources>> GenerateFor(const Proxy& proxy_node,
                                                                const WatchedResources& watched,
                                                                const PushRequest& request, const MeshContext& mesh,
                                                                const GeneratorEnv& env) override {
    ResourceCache& cache = env.cache;
    if (request.EndpointOnly()) return std::nullopt;
    const ProxyInfo& proxy = ResolvedProxy(proxy_node, model_, env);
    const ProxyScope scope(proxy, mesh);
    const bool gateway_proxy = proxy.type == "router" && !proxy.grpc;
    std::vector<const Gateway*> gateways;
    // A gateway proxy's routes follow from the Gateways that pick it (and the source
    // conditions it meets): proxies picked by the same ones share them.
    std::string variant = StrCat(Variant(proxy), "|", scope.route_key());
    if (gateway_proxy) {
      gateways = mesh.GatewaysFor(proxy.labels);
      variant = StrCat("router|", scope.route_key(),
                       mesh.gateway_virtual_services_vary_by_namespace() ? StrCat("|ns:", proxy.namespace_name) : "",
                       "|gateways:");
      for (const Gateway* gateway : gateways) {
        variant += StrCat(gateway->meta.namespace_name, "/", gateway->meta.name, ",");
      }
    }
    GeneratedResources out;
    out.incremental = request.delta_scope.has_value();
    for (const std::string& name : *watched.names) {
      absl::StatusOr<ResourcePtr> resource = cache.GetOrBuild(
          {std::string(kRouteType), name, variant}, {kWholeContext}, request.push_sequence,
          [&]() -> absl::StatusOr<ResourcePtr> {
            RouteConfiguration config;
            config.set_name(name);
            if (gateway_proxy) {
              // http.PORT: the plain servers of the port; https.PORT.PORT_NAME.GATEWAY.NS: that
              // TLS server alone.
              const std::map<uint32_t, GatewayPort> plan = PlanGatewayPorts(mesh, gateways, proxy.namespace_name);
              uint32_t port = 0;
              std::vector<GatewayServer> servers;
              if (name.starts_with("http.") && absl::SimpleAtoi(name.substr(5), &port)) {
                if (auto it = plan.find(port); it != plan.end() && it->second.kind == GatewayPort::Kind::kHttp) {
                  servers = it->second.servers;
                }
              } else {
                for (const auto& [number, served] : plan) {
                  if (served.kind != GatewayPort::Kind::kTls) continue;
                  for (const GatewayServer& entry : served.servers) {
                    if (entry.server->routes == Gateway::Server::Routes::kHttp &&
                        GatewayTlsRouteName(*entry.gateway, *entry.server) == name) {
                      port = number;
                      servers = {entry};
                    }
                  }
                }
              }
              if (servers.empty()) return absl::NotFoundError("not a route name of this gateway's servers");
              AddGatewayVirtualHosts(mesh, servers, port, scope, config);
            } else if (proxy.grpc) {
              // HOST:PORT, one virtual host whose domain is the target's authority.
              const size_t colon = name.rfind(':');
              uint32_t port = 0;
              if (colon == std::string::npos || !absl::SimpleAtoi(name.substr(colon + 1), &port)) {
                return absl::NotFoundError("not a HOST:PORT route name");
              }
              const ServiceAlias* alias = nullptr;
              const ServiceInfo* service = TargetService(mesh, name.substr(0, colon), scope, alias);
              if (service == nullptr) return absl::NotFoundError("unknown service");
              auto* vhost = config.add_virtual_hosts();
              vhost->set_name(name);
              vhost->add_domains(name);
              vhost->add_domains(alias != nullptr ? alias->alias.host : service->host);
              AddRoutes(mesh, alias != nullptr ? RoutedAs(mesh, *alias, *service, scope) : *service, port, scope,
                        proxy.grpc, vhost);
            } else {
              uint32_t port = 0;
              if (!absl::SimpleAtoi(name, &port)) return absl::NotFoundError("not a port route name");
              // A ServiceEntry's addresses are domains too, as istiod's: unless a host name is the
              // same (Envoy compares domains ignoring case), the first host in host order to claim
              // an address keeps it, as Envoy refuses a domain named twice.
              std::vector<const ServiceInfo*> served;
              std::set<std::string> claimed;
              for (const auto& [host, service] : mesh.services()) {
                if (!scope.Visible(service)) continue;
                if (std::none_of(service.ports.begin(), service.ports.end(),
                                 [&](const ServicePort& p) { return p.number == port && IsHttp(p); })) {
                  continue;
                }
                served.push_back(&service);
                claimed.insert(absl::AsciiStrToLower(host));
                claimed.insert(absl::AsciiStrToLower(StrCat(host, ":", port)));
              }
              for (const ServiceInfo* service : served) {
                auto* vhost = config.add_virtual_hosts();
                vhost->set_name(StrCat(service->host, ":", port));
                vhost->add_domains(service->host);
                vhost->add_domains(StrCat(service->host, ":", port));
                // Its aliases the proxy sees answer here, as istiod's domains; one a VirtualService
                // names for the proxy gets a virtual host of its own, with that one's routes.
                std::vector<const ServiceAlias*> routed_apart;
                for (const ServiceAlias* alias : mesh.AliasesOf(service->host)) {
                  if (!scope.Visible(alias->alias)) continue;
                  const std::string with_port = StrCat(alias->alias.host, ":", port);
                  const std::string lower = absl::AsciiStrToLower(alias->alias.host);
                  const std::string lower_with_port = absl::AsciiStrToLower(with_port);
                  if (claimed.contains(lower) || claimed.contains(lower_with_port)) continue;
                  claimed.insert(lower);
                  claimed.insert(lower_with_port);
                  if (&RoutedAs(mesh, *alias, *service, scope) != service) {
                    routed_apart.push_back(alias);
                    continue;
                  }
                  vhost->add_domains(alias->alias.host);
                  vhost->add_domains(with_port);
                }
                for (const std::string& address : service->addresses) {
                  const std::string domain = AddressDomain(address);
                  const std::string with_port = StrCat(domain, ":", port);
                  if (claimed.contains(domain) || claimed.contains(with_port)) continue;
                  claimed.insert(domain);
                  claimed.insert(with_port);
                  vhost->add_domains(domain);
                  vhost->add_domains(with_port);
                }
                AddRoutes(mesh, *service, port, scope, proxy.grpc, vhost);
                for (const ServiceAlias* alias : routed_apart) {
                  auto* own = config.add_virtual_hosts();
                  own->set_name(StrCat(alias->alias.host, ":", port));
                  own->add_domains(alias->alias.host);
                  own->add_domains(StrCat(alias->alias.host, ":", port));
                  AddRoutes(mesh, alias->alias, port, scope, proxy.grpc, own);
                }
              }
            }
            if (!proxy.grpc) {
              // As istiod's virtual hosts for Envoy: upstreams are told the attempt number
              // (x-envoy-attempt-count). gRPC has no such setting.
              for (auto& vhost : *config.mutable_virtual_hosts()) vhost.set_include_request_attempt_count(true);
            }
            return Resource::FromMessage(config);
          });
      if (absl::IsNotFound(resource.status())) continue;  // a name this proxy cannot have
      if (!resource.ok()) return resource.status();
      out.resources.push_back(*resource);
    }
    return out;
  }

 private:
  const MeshModel& model_;
};

}  // namespace

namespace {

// SDS for gateway proxies: the Secrets their terminating servers (HTTPS, TLS) name,
// kubernetes://NAME (certificate and key) and kubernetes://NAME-cacert (CA and revocation lists;
// from Secret NAME-cacert when it has a CA, else NAME's own, as istiod reads them), from the
// Secret of that name in the proxy's namespace.
// Stricter than a node's word: only to a stream whose authenticator proved that namespace and a
// service account allowed to read Secrets (SecretsRefusal), and only names a server of a Gateway
// picking the proxy uses, since what is served here is a private key. Anything else asked for is
// not sent (GatewayConfigNotes says why).
class SecretGenerator final : public TypedGenerator<MeshContext> {
 public:
  SecretGenerator(const MeshModel& model, std::vector<std::string> readers)
      : model_(model), readers_(std::move(readers)) {}
  absl::StatusOr<std::optional<GeneratedResources>> GenerateFor(const Proxy& proxy_node,
                                                                const WatchedResources& watched,
                                                                const PushRequest& request, const MeshContext& mesh,
                                                                const GeneratorEnv& env) override {
    ResourceCache& cache = env.cache;
    if (request.EndpointOnly()) return std::nullopt;
    const ProxyInfo& proxy = ResolvedProxy(proxy_node, model_, env);
    GeneratedResources out;
    out.incremental = request.delta_scope.has_value();
    if (!SecretsRefusal(proxy, proxy_node.identity, readers_).empty()) return out;
    const std::map<std::string, SecretUse> used = UsedSecretNames(mesh, proxy);
    for (const std::string& name : *watched.names) {
      auto use = used.find(name);
      if (use == used.end()) continue;
      const bool ca = use->second.ca;
      const std::string& credential = use->second.credential;
      const K8sTlsSecret* secret = FindMaterial(mesh, proxy.namespace_name, credential, ca);
      if (secret == nullptr) continue;
      absl::StatusOr<ResourcePtr> resource = cache.GetOrBuild(
          // What the name holds (certificate or CA, of which credential) is part of the key: a
          // name such as kubernetes://x-cacert may mean either for different Gateways.
          {std::string(kSecretType), name,
           StrCat("ns:", proxy.namespace_name, "|", credential, ca ? "|ca" : "|certificate")},
          {ConfigKey{kind::kSecret, proxy.namespace_name, credential},
           ConfigKey{kind::kSecret, proxy.namespace_name, StrCat(credential, "-cacert")}},
          request.push_sequence, [&]() -> absl::StatusOr<ResourcePtr> {
            envoy::extensions::transport_sockets::tls::v3::Secret out_secret;
            out_secret.set_name(name);
            if (ca) {
              auto* validation = out_secret.mutable_validation_context();
              validation->mutable_trusted_ca()->set_inline_bytes(secret->ca_certificates);
              // Envoy then refuses a client certificate the lists revoke.
              if (!secret->revocation_lists.empty()) {
                validation->mutable_crl()->set_inline_bytes(secret->revocation_lists);
              }
            } else {
              auto* certificate = out_secret.mutable_tls_certificate();
              certificate->mutable_certificate_chain()->set_inline_bytes(secret->certificate_chain);
              certificate->mutable_private_key()->set_inline_bytes(secret->private_key);
            }
            return Resource::FromMessage(out_secret);
          });
      if (!resource.ok()) return resource.status();
      out.resources.push_back(*resource);
    }
    return out;
  }

 private:
  const MeshModel& model_;
  const std::vector<std::string> readers_;
};

}  // namespace

std::string AddressDomain(const std::string& address) {
  return address.find(':') != std::string::npos ? StrCat("[", address, "]") : address;
}

std::string SecretsRefusal(const ProxyInfo& proxy, const PeerIdentity& identity,
                           const std::vector<std::string>& readers) {
  if (proxy.type != "router" || proxy.grpc) return "only Envoy gateway proxies (router~ nodes) are sent Secrets";
  if (!identity.authenticated) {
    return "this proxy's stream proved no identity (plaintext xDS); cxds sends private keys only to a gateway whose "
           "client certificate names it (serve xDS with mTLS)";
  }
  if (identity.namespace_name != proxy.namespace_name) {
    return StrCat("the stream proved namespace ", identity.namespace_name, ", not the node's ", proxy.namespace_name);
  }
  const std::string account = StrCat(identity.namespace_name, "/", identity.service_account);
  if (std::find(readers.begin(), readers.end(), account) == readers.end()) {
    return StrCat("service account ", account,
                  " may not read Secrets: cxds sends private keys only to the service accounts given with "
                  "--secret-reader");
  }
  return "";
}

std::map<std::string, SecretUse> UsedSecretNames(const MeshContext& mesh, const ProxyInfo& proxy,
                                                 std::vector<SecretNameClash>* clashes) {
  std::map<std::string, SecretUse> names;
  // The clashes said, (SDS name, rule, CA or not, credential): a rule applies to many clusters.
  std::set<std::tuple<std::string, std::string, bool, std::string>> said;
  for (const auto& [port, plan] : PlanGatewayPorts(mesh, mesh.GatewaysFor(proxy.labels), proxy.namespace_name)) {
    for (const GatewayServer& entry : plan.servers) {
      for (const Gateway::Server::SecretRef& ref : entry.server->SecretRefs()) {
        // The first use of a name decides (credential "x-cacert" and the CA of "x" share one).
        names.try_emplace(SdsName(ref), SecretUse{ref.credential, ref.ca});
      }
    }
  }
  // DestinationRule tls credentialNames of the clusters a gateway is sent (every service's, by
  // the rules of its namespace): the CA to check the server with, and for MUTUAL the
  // certificate it presents.
  if (proxy.type != "router" || proxy.grpc) return names;
  const ProxyScope scope(proxy, mesh);
  for (const auto& [host, service] : mesh.services()) {
    if (!scope.Visible(service)) continue;  // no cluster of it is sent (ClusterGenerator)
    const DestinationRule* rule = mesh.DestinationRuleFor(host, proxy.namespace_name, &proxy.labels);
    if (rule == nullptr) continue;
    std::vector<std::string> subsets = {""};
    for (const DestinationRule::Subset& subset : rule->subsets) subsets.push_back(subset.name);
    for (const ServicePort& port : service.ports) {
      for (const std::string& subset : subsets) {
        const std::optional<PolicyFields> policy = PolicyFor(rule, subset, port.number);
        if (!OriginatesTls(policy) || policy->tls->credential_name.empty()) continue;
        const PolicyFields::ClientTls& tls = *policy->tls;
        const std::string by = StrCat("DestinationRule ", rule->meta.namespace_name, "/", rule->meta.name);
        const auto use = [&](std::string name, bool ca) {
          const auto [first, inserted] = names.try_emplace(name, SecretUse{tls.credential_name, ca, by});
          const SecretUse& sent = first->second;
          if (inserted || clashes == nullptr || (sent.credential == tls.credential_name && sent.ca == ca)) return;
          if (said.emplace(name, by, ca, tls.credential_name).second) {
            clashes->push_back({std::move(name), SecretUse{tls.credential_name, ca, by}, sent});
          }
        };
        if (tls.mode == PolicyFields::ClientTls::Mode::kMutual) use(GatewaySecretName(tls.credential_name), false);
        if (!tls.insecure_skip_verify) use(GatewayCaSecretName(tls.credential_name), true);
      }
    }
  }
  return names;
}

const K8sTlsSecret* FindMaterial(const MeshContext& mesh, const std::string& namespace_name,
                                 const std::string& credential, bool ca) {
  if (ca) {
    const K8sTlsSecret* own = mesh.FindSecret(namespace_name, StrCat(credential, "-cacert"));
    if (own != nullptr && !own->ca_certificates.empty()) return own;
    const K8sTlsSecret* secret = mesh.FindSecret(namespace_name, credential);
    return secret != nullptr && !secret->ca_certificates.empty() ? secret : nullptr;
  }
  const K8sTlsSecret* secret = mesh.FindSecret(namespace_name, credential);
  return secret != nullptr && !secret->certificate_chain.empty() ? secret : nullptr;
}

void AddMeshGenerators(PushPipeline& pipeline, const MeshModel& model, TranslationOptions options) {
  pipeline.AddGenerator(std::string(kSecretType), std::make_shared<SecretGenerator>(model, options.secret_readers));
  pipeline.AddGenerator(std::string(kClusterType), std::make_shared<ClusterGenerator>(model));
  pipeline.AddGenerator(std::string(kEndpointType), std::make_shared<EndpointGenerator>(model));
  pipeline.AddGenerator(std::string(kListenerType), std::make_shared<ListenerGenerator>(model, std::move(options)));
  pipeline.AddGenerator(std::string(kRouteType), std::make_shared<RouteGenerator>(model));
}

std::vector<std::string> GrpcIgnoredRouteFields(const HttpRoute& http) {
  std::vector<std::string> fields;
  if (!http.headers.empty() ||
      std::any_of(http.route.begin(), http.route.end(), [](const auto& d) { return !d.headers.empty(); })) {
    fields.push_back("headers");
  }
  if (http.rewrite.has_value()) fields.push_back("rewrite");
  if (http.redirect.has_value()) fields.push_back("redirect (the route is left out for gRPC)");
  if (http.direct_response.has_value()) fields.push_back("directResponse (the route is left out for gRPC)");
  // A mirror at 0% is sent to Envoy nodes no more than to gRPC nodes.
  for (const bool single : {true, false}) {
    if (std::any_of(http.mirrors.begin(), http.mirrors.end(),
                    [single](const auto& m) { return m.single == single && m.percent > 0; })) {
      fields.push_back(single ? "mirror" : "mirrors");
    }
  }
  if (http.cors.has_value()) fields.push_back("corsPolicy");
  if (http.retries.has_value() && http.retries->attempts > 0) {
    // gRFC A44: gRPC reads the count, the gRPC status names in retryOn and the backoff.
    const HttpRoute::Retries& r = *http.retries;
    constexpr absl::string_view kGrpcConditions[] = {"cancelled", "deadline-exceeded", "internal", "resource-exhausted",
                                                     "unavailable"};
    bool http_conditions = !r.status_codes.empty();
    for (const absl::string_view condition : absl::StrSplit(r.retry_on, ',', absl::SkipEmpty())) {
      if (std::find(std::begin(kGrpcConditions), std::end(kGrpcConditions), condition) == std::end(kGrpcConditions)) {
        http_conditions = true;
      }
    }
    if (http_conditions) fields.push_back("retries.retryOn conditions other than gRPC status names");
    if (r.per_try_timeout.has_value()) fields.push_back("retries.perTryTimeout");
    if (r.remote_localities) fields.push_back("retries.retryRemoteLocalities");
    if (r.ignore_previous_hosts.has_value()) fields.push_back("retries.retryIgnorePreviousHosts");
  }
  if (std::any_of(http.match.begin(), http.match.end(), MatchesWhatGrpcLacks)) {
    fields.push_back(
        "match on method, authority, scheme, queryParams or a pseudo-header (the match is left out for gRPC)");
  }
  return fields;
}

namespace {

// The policy fields BuildCluster does not apply for a gRPC node.
std::vector<std::string> GrpcIgnoredPolicyFields(const PolicyFields& policy) {
  std::vector<std::string> out;
  if (policy.consistent_hash.has_value() && policy.consistent_hash->key != PolicyFields::ConsistentHash::Key::kHeader) {
    out.push_back(
        "loadBalancer.consistentHash by other than httpHeaderName (gRPC hashes on headers only: the ring hash "
        "has no key and picks at random)");
  }
  if (policy.load_balancer == PolicyFields::LoadBalancer::kLeastRequest ||
      policy.load_balancer == PolicyFields::LoadBalancer::kRandom) {
    out.push_back("loadBalancer.simple (gRPC 1.51 clients balance round robin or by ring hash only)");
  }
  if (policy.WarmupApplies()) {
    out.push_back(
        "loadBalancer.warmup or warmupDurationSecs (gRPC has no slow start: a new endpoint gets its full "
        "share at once)");
  }
  if (policy.proxy_protocol.has_value()) {
    out.push_back(
        "proxyProtocol (gRPC clients send no PROXY protocol header: an upstream that needs one refuses "
        "their connections)");
  }
  if (policy.retry_budget.has_value()) {
    out.push_back(
        "retryBudget (gRPC clients have no retry budget: their retries follow the route's retry policy alone)");
  }
  if (policy.connection_pool.has_value()) {
    const auto& pool = *policy.connection_pool;
    std::vector<std::string> fields;
    if (pool.max_connections) fields.push_back("tcp.maxConnections");
    if (pool.max_connection_duration) fields.push_back("tcp.maxConnectionDuration");
    if (pool.tcp_keepalive) fields.push_back("tcp.tcpKeepalive");
    if (pool.http1_max_pending_requests) fields.push_back("http.http1MaxPendingRequests");
    if (pool.max_retries) fields.push_back("http.maxRetries");
    if (pool.max_requests_per_connection) fields.push_back("http.maxRequestsPerConnection");
    if (pool.idle_timeout) fields.push_back("http.idleTimeout");
    if (pool.tcp_idle_timeout) fields.push_back("tcp.idleTimeout");
    if (pool.h2_upgrade != PolicyFields::ConnectionPool::H2Upgrade::kDefault) fields.push_back("http.h2UpgradePolicy");
    if (pool.use_client_protocol) fields.push_back("http.useClientProtocol");
    if (pool.max_concurrent_streams) fields.push_back("http.maxConcurrentStreams");
    if (!fields.empty()) {
      out.push_back(StrCat("connectionPool ", absl::StrJoin(fields, ", "),
                           " (gRPC honours http.http2MaxRequests and tcp.connectTimeout only)"));
    }
  }
  if (policy.outlier_detection.has_value()) {
    out.push_back(
        "outlierDetection (gRPC ejects by success rate and failure percentage, not by the consecutive errors "
        "Istio sets)");
  }
  return out;
}

// Why the certificate (or with `ca` the CA) of `credential` is not sent to a gateway of
// `namespace_name`: FindMaterial found no Secret holding it.
std::string MissingMaterial(const std::string& credential, bool ca, const std::string& namespace_name) {
  return ca ? StrCat("not served: no Secret ", credential, "-cacert with a CA, and Secret ", credential,
                     " has none, in namespace ", namespace_name)
            : StrCat("not served: no Secret ", credential, " with a certificate and key in namespace ", namespace_name,
                     " (the gateway proxy's)");
}

std::string ObjectName(const char* kind, const ObjectMeta& meta) {
  return StrCat(kind, " ", meta.namespace_name, "/", meta.name);
}

}  // namespace

std::vector<ProxyConfigNote> GatewayConfigNotes(const MeshContext& mesh, const ProxyInfo& proxy,
                                                const PeerIdentity& identity, const std::vector<std::string>& readers,
                                                size_t limit) {
  std::vector<ProxyConfigNote> notes;
  const auto add = [&](ProxyConfigNote note) {
    if (notes.size() < limit) notes.push_back(std::move(note));
  };
  const std::string refusal = SecretsRefusal(proxy, identity, readers);
  const std::map<uint32_t, GatewayPort> plans =
      PlanGatewayPorts(mesh, mesh.GatewaysFor(proxy.labels), proxy.namespace_name);
  std::map<std::pair<const GatewayServer*, std::string>, Gateway::Server::SecretRef> clashes;  // -> what Envoy gets
  for (SdsNameClash& clash : FindSdsNameClashes(plans)) {
    clashes.emplace(std::pair(clash.server, std::move(clash.sds_name)), clash.first_ref);
  }
  for (const auto& [port, plan] : plans) {
    for (const GatewayChainNote& note : PlanGatewayChains(mesh, port, plan).notes) {
      add({StrCat("listener port ", port),
           StrCat(note.object.kind, " ", note.object.namespace_name, "/", note.object.name), note.field, note.reason});
    }
    for (const GatewayServer& entry : plan.left_out) {
      const size_t index = static_cast<size_t>(entry.server - entry.gateway->servers.data());
      add({StrCat("listener port ", port), ObjectName("Gateway", entry.gateway->meta),
           StrCat("spec.servers[", index, "]"), entry.left_out});
    }
    for (const GatewayServer& entry : plan.servers) {
      const Gateway::Server& server = *entry.server;
      const size_t index = static_cast<size_t>(entry.server - entry.gateway->servers.data());
      if (!entry.lost_names.empty()) {
        add({StrCat("listener port ", port), ObjectName("Gateway", entry.gateway->meta),
             StrCat("spec.servers[", index, "].hosts"),
             StrCat("SNI names ", absl::StrJoin(entry.lost_names, ", "),
                    " not matched by this server: an earlier server of the port has them")});
      }
      for (const Gateway::Server::SecretRef& ref : server.SecretRefs()) {
        const std::string name = SdsName(ref);
        const std::string field = StrCat("spec.servers[", index, "].tls.", ref.field);
        // As UsedSecretNames decides: the first server to use a name gives its meaning.
        if (auto clash = clashes.find({&entry, name}); clash != clashes.end()) {
          const Gateway::Server::SecretRef& sent = clash->second;
          add({name, ObjectName("Gateway", entry.gateway->meta), field,
               StrCat("not served as meant: an earlier server of this proxy uses the name for ",
                      sent.ca ? "the CA of Secret " : "the certificate of Secret ", sent.credential,
                      ", which is what Envoy is sent")});
          continue;
        }
        if (!refusal.empty()) {
          add({name, ObjectName("Gateway", entry.gateway->meta), field, StrCat("not served: ", refusal)});
        } else if (FindMaterial(mesh, proxy.namespace_name, ref.credential, ref.ca) == nullptr) {
          add({name, ObjectName("Gateway", entry.gateway->meta), field,
               MissingMaterial(ref.credential, ref.ca, proxy.namespace_name)});
        }
      }
    }
  }
  // Secrets of DestinationRule credentialNames (clusters the gateway originates TLS for).
  std::vector<SecretNameClash> rule_clashes;
  const std::map<std::string, SecretUse> used = UsedSecretNames(mesh, proxy, &rule_clashes);
  for (const SecretNameClash& clash : rule_clashes) {
    add({clash.sds_name, clash.lost.rule, "tls.credentialName",
         StrCat("not served as meant: its ", clash.lost.ca ? "CA of Secret " : "certificate of Secret ",
                clash.lost.credential, " is sent under this name, which ",
                clash.sent.rule.empty() ? "a Gateway server of this proxy" : clash.sent.rule, " already uses for the ",
                clash.sent.ca ? "CA of Secret " : "certificate of Secret ", clash.sent.credential,
                ": Envoy is sent that one")});
  }
  for (const auto& [name, use] : used) {
    if (use.rule.empty()) continue;
    if (!refusal.empty()) {
      add({name, use.rule, "tls.credentialName", StrCat("not served: ", refusal)});
    } else if (FindMaterial(mesh, proxy.namespace_name, use.credential, use.ca) == nullptr) {
      add({name, use.rule, "tls.credentialName", MissingMaterial(use.credential, use.ca, proxy.namespace_name)});
    }
  }
  return notes;
}

std::vector<ProxyConfigNote> GrpcConfigNotes(const MeshContext& mesh, const Snapshot& view,
                                             const std::string& proxy_namespace, size_t limit,
                                             const LabelMap* proxy_labels) {
  std::vector<ProxyConfigNote> notes;
  const auto add = [&](ProxyConfigNote note) {
    if (notes.size() < limit) notes.push_back(std::move(note));
  };
  if (const Snapshot::TypeResources* routes = view.resources(std::string(kRouteType)); routes != nullptr) {
    for (const auto& [name, resource] : routes->items) {
      // A gRPC node's route configuration is HOST:PORT.
      const size_t colon = name.rfind(':');
      uint32_t port = 0;
      if (colon == std::string::npos || !absl::SimpleAtoi(name.substr(colon + 1), &port)) continue;
      const std::string host = name.substr(0, colon);
      // The clusters its routes name (the host's own, and those VirtualService routes send to
      // other hosts and ports) that a TLS rule keeps from gRPC: not in the view, so said here.
      std::set<std::string> named;
      if (const auto* config = dynamic_cast<const RouteConfiguration*>(&resource->message())) {
        for (const auto& vhost : config->virtual_hosts()) {
          for (const auto& route : vhost.routes()) {
            if (!route.has_route()) continue;
            if (!route.route().cluster().empty()) named.insert(route.route().cluster());
            for (const auto& weighted : route.route().weighted_clusters().clusters()) named.insert(weighted.name());
          }
        }
      }
      for (const std::string& cluster_name : named) {
        const std::optional<ParsedCluster> cluster = ParseClusterName(cluster_name);
        if (!cluster.has_value()) continue;
        const DestinationRule* rule = mesh.DestinationRuleFor(cluster->host, proxy_namespace, proxy_labels);
        if (rule == nullptr || !OriginatesTls(PolicyFor(rule, cluster->subset, cluster->port))) continue;
        add({cluster_name, ObjectName("DestinationRule", rule->meta), "tls",
             "not served to gRPC: tls mode SIMPLE or MUTUAL with certificate files, which gRPC cannot use (its "
             "certificates come from its bootstrap's certificate providers); requests routed there fail "
             "rather than go in plaintext"});
      }
      // Each route as written (object, index) with the fields said of it, in the order first met:
      // a delegating route merged into several is said once, with what each merge took of it.
      // (Found by (object, index) through `said_at`: a VirtualService may have thousands of routes.)
      std::vector<std::pair<std::pair<std::string, size_t>, std::vector<std::string>>> said;
      std::map<std::pair<std::string, size_t>, size_t> said_at;
      std::set<std::pair<std::string, size_t>> capped;  // routes whose fault delay gRPC gets shorter
      const auto say = [&](std::string object, size_t index, const std::vector<std::string>& fields) {
        if (fields.empty()) return;
        auto [at, inserted] = said_at.try_emplace({object, index}, said.size());
        if (inserted) said.push_back({{std::move(object), index}, {}});
        std::vector<std::string>& kept = said[at->second].second;
        for (const std::string& field : fields) {
          if (std::find(kept.begin(), kept.end(), field) == kept.end()) kept.push_back(field);
        }
      };
      // An alias without a VirtualService of its own is routed by its host's (RoutedAs).
      const std::string routed_host =
          mesh.FindAlias(host) != nullptr && mesh.VirtualServicesFor(host, proxy_namespace).empty()
              ? mesh.ConcreteHost(host)
              : host;
      for (const VirtualService* vs : mesh.VirtualServicesFor(routed_host, proxy_namespace)) {
        for (size_t i = 0; i < vs->http.size(); ++i) {
          const HttpRoute& http = vs->http[i];
          const bool applies =
              http.match.empty() || std::any_of(http.match.begin(), http.match.end(),
                                                [&](const auto& m) { return m.port == 0 || m.port == port; });
          if (!applies) continue;
          const HttpRoute::Origin* origin = http.origin ? &*http.origin : nullptr;
          if (http.fault.has_value() && http.fault->delay.has_value() &&
              http.fault->delay->fixed_delay > kMaxGrpcFaultDelay) {
            // Said where it was written: a route merged from a delegate has the delegating
            // route's fault when its own has none (DelegatingRouteTaken).
            if (origin == nullptr) {
              capped.insert({ObjectName("VirtualService", vs->meta), i});
            } else if (origin->delegating != nullptr && origin->written != nullptr &&
                       !origin->written->fault.has_value()) {
              capped.insert({StrCat("VirtualService ", origin->delegating_virtual_service), origin->delegating_index});
            } else {
              capped.insert({StrCat("VirtualService ", origin->virtual_service), origin->index});
            }
          }
          const std::vector<std::string> fields = GrpcIgnoredRouteFields(http);
          if (fields.empty()) continue;
          if (origin == nullptr || origin->delegating == nullptr || origin->written == nullptr) {
            // (A route moved by a delegation is named where it was written.)
            say(origin != nullptr ? StrCat("VirtualService ", origin->virtual_service)
                                  : ObjectName("VirtualService", vs->meta),
                origin != nullptr ? origin->index : i, fields);
            continue;
          }
          // Merged from a delegate: each field is said where it was written. The delegating route's
          // are what the merge took of it (DelegatingRouteTaken); the rest, including what only the
          // merge of both makes, the delegate's route's.
          const std::vector<std::string> from_root =
              GrpcIgnoredRouteFields(DelegatingRouteTaken(*origin->delegating, *origin->written));
          const std::vector<std::string> from_leaf = GrpcIgnoredRouteFields(*origin->written);
          const auto in = [](const std::vector<std::string>& list, const std::string& f) {
            return std::find(list.begin(), list.end(), f) != list.end();
          };
          std::vector<std::string> root_said, leaf_said;
          for (const std::string& f : fields) {
            if (in(from_root, f)) root_said.push_back(f);
            if (in(from_leaf, f) || !in(from_root, f)) leaf_said.push_back(f);
          }
          say(StrCat("VirtualService ", origin->virtual_service), origin->index, leaf_said);
          say(StrCat("VirtualService ", origin->delegating_virtual_service), origin->delegating_index, root_said);
        }
      }
      for (const auto& [route, fields] : said) {
        add({name, route.first, StrCat("spec.http[", route.second, "]"),
             StrCat(absl::StrJoin(fields, ", "), ": not implemented by proxyless gRPC clients (gRFC A28)")});
      }
      for (const auto& [object, index] : capped) {
        add({name, object, StrCat("spec.http[", index, "].fault.delay.fixedDelay"),
             StrCat("sent to gRPC as ", absl::ToInt64Milliseconds(kMaxGrpcFaultDelay),
                    "ms (about 24.8 days): grpc-js waits with Node's setTimeout, which fires a longer delay after "
                    "1 ms")});
      }
    }
  }
  if (const Snapshot::TypeResources* clusters = view.resources(std::string(kClusterType)); clusters != nullptr) {
    for (const auto& [name, resource] : clusters->items) {
      const std::optional<ParsedCluster> cluster = ParseClusterName(name);
      if (!cluster.has_value()) continue;
      const DestinationRule* rule = mesh.DestinationRuleFor(cluster->host, proxy_namespace, proxy_labels);
      const std::optional<PolicyFields> policy = PolicyFor(rule, cluster->subset, cluster->port);
      if (!policy.has_value()) continue;
      std::string field = "spec.trafficPolicy";
      for (size_t i = 0; i < rule->subsets.size(); ++i) {
        if (rule->subsets[i].name == cluster->subset && rule->subsets[i].traffic_policy.has_value()) {
          field = StrCat("spec.trafficPolicy and spec.subsets[", i, "].trafficPolicy, merged");
        }
      }
      for (std::string& reason : GrpcIgnoredPolicyFields(*policy)) {
        add({name, ObjectName("DestinationRule", rule->meta), field, StrCat(reason, ": not applied for gRPC")});
      }
    }
  }
  return notes;
}

ProxyUpdateCheck MeshProxyUpdate(const MeshModel& model) {
  return [&model](const Proxy& proxy_node, const PushRequest& request) {
    return NamesProxyWorkload(proxy_node.node, request, model.cluster_id());
  };
}

ProxyFilter MeshProxyFilter(const MeshModel& model) {
  return [&model](const Proxy& proxy_node, const PushRequest& request, const PushContext& context,
                  const PushContext* previous_context) {
    const auto* mesh_context = dynamic_cast<const MeshContext*>(&context);
    if (mesh_context == nullptr) return true;  // not the mesh's context: no scope to judge by, push
    const MeshContext& mesh = *mesh_context;
    // With no Sidecar and every service exported everywhere, every proxy sees every host, so
    // any change but a secret's reaches it: the push to thousands of proxies of an endpoint
    // change reads none of their nodes.
    // A changed workload concerns only the proxies that are it, which the pipeline pushes in
    // full whatever this says (MeshProxyUpdate): it counts for no one here.
    if (EveryProxySeesEveryHost(mesh) &&
        std::any_of(request.configs.begin(), request.configs.end(),
                    [](const ConfigKey& key) { return key.kind != kind::kSecret && key.kind != kind::kWorkload; })) {
      return true;
    }
    const ProxyInfo proxy = ParseProxyInfo(proxy_node.node, model.workloads().get());
    const ProxyScope scope(proxy, mesh);
    // The push before, when its context was another: what the proxy saw there (built once).
    const auto* previous = dynamic_cast<const MeshContext*>(previous_context);
    if (previous == mesh_context) previous = nullptr;
    std::optional<ProxyScope> previous_scope;
    const auto saw_before = [&](const std::string& host) {
      // (An alias the proxy may have had under its host's routes, or dialled: pushed, to be safe.)
      if (previous != nullptr && previous->FindAlias(host) != nullptr) return true;
      if (previous == nullptr || previous->FindService(host) == nullptr) return false;
      if (EveryProxySeesEveryHost(*previous)) return true;
      if (!previous_scope.has_value()) previous_scope.emplace(proxy, *previous);
      return previous_scope->VisibleHost(host);
    };
    for (const ConfigKey& key : request.configs) {
      if (key.kind == kind::kWorkload) continue;  // (above)
      if (key.kind == kind::kSecret) {
        // TLS material reaches only the gateway proxies of its namespace (SecretGenerator).
        if (proxy.type == "router" && !proxy.grpc && proxy.namespace_name == key.namespace_name) return true;
        continue;
      }
      const bool host_keyed =
          key.kind == kind::kServiceEntry || key.kind == kind::kEndpoints || key.kind == kind::kDestinationRule;
      if (!host_keyed) return true;  // routes and scopes may concern anyone
      // A removed service is no longer in the context: push, so the proxy drops it. One the
      // proxy saw before and no longer sees (a narrower exportTo or Sidecar): push, likewise.
      if (mesh.FindService(key.name) == nullptr || scope.VisibleHost(key.name) || saw_before(key.name)) return true;
    }
    return false;
  };
}

}  // namespace cxds
