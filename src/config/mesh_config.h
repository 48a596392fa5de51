// The mesh configuration cxds reads: the supported subset of Kubernetes and Istio kinds, as
// typed values. docs/config.md lists every supported field. Parsing and validation live in
// config/yaml_loader.h; these are plain values (copyable, comparable by content hash).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/time/time.h"
#include "config/gateway_config.h"
#include "config/object_meta.h"

namespace cxds {

struct ServicePort {
  std::string name;
  uint32_t number = 0;
  // Istio's name, uppercased: HTTP, HTTP2, GRPC (routed as HTTP), or TCP, HTTPS, TLS, MONGO,
  // MYSQL, REDIS (proxied as opaque TCP, as Istio does without protocol filters).
  std::string protocol;
  uint32_t target_port = 0;  // 0: same as number (or a named targetPort)
  bool operator==(const ServicePort&) const = default;
};

// Istio's Name.SubsetOf: every name `name` matches is one `of` matches ("a.example.com" and
// "*.a.example.com" are under "*.example.com"; everything is under "*").
bool HostSubsetOf(std::string_view name, std::string_view of);

// Whether ports of `protocol` get HTTP routing; the others are proxied as opaque TCP (Envoy) or
// left out (proxyless gRPC, which speaks only HTTP/2).
bool IsHttpProtocol(std::string_view protocol);
// TLS and HTTPS (Istio's IsTLS): opaque ports whose connections Envoy tells apart by the SNI name
// the client sends, so several services share one port; VirtualService tls routes apply to them.
bool IsTlsProtocol(std::string_view protocol);

// v1 Service.
struct K8sService {
  ObjectMeta meta;
  std::vector<ServicePort> ports;
  // Selects its namespace's Pods (via EndpointSlices) and WorkloadEntries (Istio's VMs); may be empty.
  LabelMap selector;
  std::vector<std::string> export_to;  // annotation networking.istio.io/exportTo (empty: all)
};

// discovery.k8s.io/v1 EndpointSlice.
struct EndpointSlice {
  ObjectMeta meta;
  std::string service_name;  // label kubernetes.io/service-name
  struct Port {
    std::string name;
    uint32_t port = 0;
  };
  std::vector<Port> ports;
  struct Endpoint {
    std::vector<std::string> addresses;
    bool ready = true;
    // targetRef of kind Pod: the Pod whose labels the endpoint carries (subsets select by
    // them). Empty: the Pod with the endpoint's address, if exactly one in the namespace has it.
    std::string pod_namespace;
    std::string pod_name;
  };
  std::vector<Endpoint> endpoints;
};

// v1 Pod: only what endpoints need, its labels and IPs (status.podIP, status.podIPs). Its spec
// (containers, volumes, ...) means nothing to a proxy and is not read.
struct K8sPod {
  ObjectMeta meta;
  std::vector<std::string> ips;
};

struct WorkloadEndpoint {  // an inline ServiceEntry endpoint, or a WorkloadEntry's spec
  std::string address;
  std::map<std::string, uint32_t> ports;  // port name -> port
  LabelMap labels;
  uint32_t weight = 0;  // 0: unset (1)
  // Failure domain "region/zone/subzone" (Istio's form; "" unknown): EDS groups endpoints by it.
  std::string locality;
};

// networking.istio.io ServiceEntry.
struct ServiceEntry {
  ObjectMeta meta;
  std::vector<std::string> hosts;
  std::vector<ServicePort> ports;
  // resolution: STATIC (endpoints are IP addresses, served over EDS), or DNS / DNS_ROUND_ROBIN
  // (endpoint addresses, or the hosts themselves, are names Envoy resolves: STRICT_DNS and
  // LOGICAL_DNS clusters). Istio's default NONE is refused by the parser as not supported.
  enum class Resolution { kStatic, kDns, kDnsRoundRobin } resolution = Resolution::kStatic;
  std::vector<WorkloadEndpoint> endpoints;
  std::optional<LabelMap> workload_selector;
  // exportTo: the namespaces whose proxies see the hosts: "*" (every one), "." (the entry's
  // own), "~" (none) or names. Empty: every namespace, Istio's default.
  std::vector<std::string> export_to;
};

// networking.istio.io WorkloadEntry.
struct WorkloadEntry {
  ObjectMeta meta;
  WorkloadEndpoint spec;
};

struct StringMatch {
  enum class Kind { kExact, kPrefix, kRegex } kind = Kind::kExact;
  std::string value;
};

// Header manipulation (Istio's Headers): request and response, set (replace), add (append),
// remove.
struct HeaderOperations {
  std::map<std::string, std::string> set;
  std::map<std::string, std::string> add;
  std::vector<std::string> remove;
  bool empty() const { return set.empty() && add.empty() && remove.empty(); }
};
struct HeaderManipulation {
  HeaderOperations request;
  HeaderOperations response;
  bool empty() const { return request.empty() && response.empty(); }
};

struct HttpRouteDestination {
  std::string host;
  std::string subset;
  uint32_t port = 0;  // 0: the service's only port / the listener's port
  uint32_t weight = 0;
  HeaderManipulation headers;  // route[].headers: for requests sent to this destination
};

// HTTPFaultInjection: faults a proxy injects itself, before the request leaves it. Percentages
// are of requests, 0 to 100; unset is 0, as in Istio ("no request is delayed").
struct FaultInjection {
  struct Delay {
    absl::Duration fixed_delay;
    double percent = 0;
  };
  struct Abort {
    uint32_t http_status = 0;             // one of http_status and grpc_status
    std::optional<uint32_t> grpc_status;  // the code of a gRPC status name (UNAVAILABLE: 14)
    double percent = 0;
  };
  std::optional<Delay> delay;
  std::optional<Abort> abort;
};

struct HttpRoute {
  std::string name;
  struct Match {
    std::optional<StringMatch> uri;
    bool ignore_uri_case = false;
    std::map<std::string, StringMatch> headers;
    std::map<std::string, StringMatch> without_headers;  // must not match
    // Pseudo-headers: proxyless gRPC has none to match (its method is always POST), so routes
    // matching them are left out for gRPC nodes (analysis: cxds_grpc_ignores).
    std::optional<StringMatch> method, authority, scheme;
    std::map<std::string, StringMatch> query_params;  // Envoy only, likewise
    uint32_t port = 0;                                // the host's port it applies to; 0: every port
    // Which client proxies the match is for (Istio's sourceMatchHTTP): those whose labels
    // include `source_labels` and, when set, of namespace `source_namespace`; the others get
    // no route for it. With `gateways` given, Istio looks at the gateways alone: "mesh" is
    // every sidecar, whatever the source conditions say; a Gateway is its gateway proxies.
    LabelMap source_labels;
    std::string source_namespace;
    std::vector<std::string> gateways;  // as VirtualService::gateways; empty: the VirtualService's
    std::string stat_prefix;            // Envoy's per-route statistics prefix (gRPC keeps none)
  };
  std::vector<Match> match;  // empty: everything
  std::vector<HttpRouteDestination> route;
  HeaderManipulation headers;
  struct Rewrite {
    std::string uri;        // the matched prefix (or the whole path) becomes this
    std::string authority;  // the Host / :authority sent upstream
    // uriRegexRewrite: every match of `regex_match` (RE2) in the path becomes `regex_rewrite`
    // (which may name its groups: \1). Not with `uri`.
    std::string regex_match, regex_rewrite;
  };
  std::optional<Rewrite> rewrite;
  struct Mirror {
    HttpRouteDestination destination;
    double percent = 100;  // Istio's default: every request
  };
  std::vector<Mirror> mirrors;  // `mirror` (one) or `mirrors` (several), not both
  bool mirrors_listed = false;  // given as `mirrors` (field names in messages follow the file)
  std::optional<absl::Duration> timeout;
  // Istio's HTTPRetry. A route without one gets istiod's default retries on Envoy nodes
  // (generators.cc, SetRetryPolicy); attempts 0 turns retries off.
  struct Retries {
    uint32_t attempts = 0;
    std::optional<absl::Duration> per_try_timeout;
    std::string retry_on;                       // the conditions of retryOn, numbers taken out
    std::vector<uint32_t> status_codes;         // the HTTP status codes listed in retryOn
    std::optional<bool> ignore_previous_hosts;  // retryIgnorePreviousHosts; unset: true
    bool remote_localities = false;             // retryRemoteLocalities
    std::optional<absl::Duration> backoff;      // the base interval
  };
  std::optional<Retries> retries;
  std::optional<FaultInjection> fault;
  // In place of route[] (Envoy only: proxyless gRPC routes only to clusters, gRFC A28, so the
  // route is left out for gRPC nodes; analysis: cxds_grpc_ignores).
  struct Redirect {
    std::string uri;        // the new path ("" keeps it)
    std::string authority;  // the new Host ("" keeps it)
    uint32_t port = 0;      // 0 keeps it
    // derivePort: FROM_REQUEST_PORT redirects to the port the request came to (the route's
    // port); FROM_PROTOCOL_DEFAULT leaves the port out, so the scheme's default applies.
    bool port_from_request = false;
    std::string scheme;   // "" keeps it
    uint32_t code = 301;  // 301, 302, 303, 307 or 308
  };
  std::optional<Redirect> redirect;
  struct DirectResponse {
    uint32_t status = 0;  // 200-599
    std::string body;     // at most kMaxDirectResponseBody bytes
  };
  std::optional<DirectResponse> direct_response;
  // corsPolicy (Envoy's CORS filter, per route; proxyless gRPC has no CORS).
  struct CorsPolicy {
    std::vector<StringMatch> allow_origins;  // allowOrigins, and the deprecated allowOrigin as exact ones
    std::vector<std::string> allow_methods, allow_headers, expose_headers;
    std::optional<absl::Duration> max_age;  // Envoy takes whole seconds
    std::optional<bool> allow_credentials;
    // unmatchedPreflights: FORWARD (true) or IGNORE (false) a preflight from an origin not
    // allowed; unset: Envoy's default, forward.
    std::optional<bool> forward_unmatched_preflights;
  };
  std::optional<CorsPolicy> cors;
  // Envoy refuses a direct response body over this unless the route configuration raises it.
  static constexpr size_t kMaxDirectResponseBody = 4096;
};

// A tcp[] route: opaque connections to the host's TCP ports (TCP, TLS, MONGO, ...), or to a
// Gateway's TCP servers (and TLS servers that terminate), by port.
struct TcpRoute {
  struct Match {
    uint32_t port = 0;  // the host's (or the Gateway server's) port; 0: any
    // As HttpRoute::Match::gateways: empty, the VirtualService's gateways.
    std::vector<std::string> gateways;
  };
  std::vector<Match> match;  // empty: every connection
  std::vector<HttpRouteDestination> route;
};

// A tls[] route: TLS connections to the host's TLS and HTTPS ports, or to a Gateway's TLS
// servers that pass TLS through, by the SNI name the client sends (Envoy nodes only: proxyless
// gRPC has no opaque ports).
struct TlsRoute {
  struct Match {
    // Required; each is one of the VirtualService's hosts or under one ("a.example.com" under
    // "*.example.com"), as Istio validates. "*": every name (and none).
    std::vector<std::string> sni_hosts;
    uint32_t port = 0;                  // 0: any TLS port of the host (or of the Gateway's servers)
    std::vector<std::string> gateways;  // as TcpRoute::Match::gateways
  };
  std::vector<Match> match;  // at least one
  std::vector<HttpRouteDestination> route;
};

// networking.istio.io VirtualService (HTTP, TCP and TLS routes).
struct VirtualService {
  ObjectMeta meta;
  std::vector<std::string> hosts;
  // What the routes apply to: "mesh" (every sidecar and proxyless client) and Gateways, as
  // "namespace/name" (a bare name in the file is of the VirtualService's namespace). Empty in
  // the file: ["mesh"].
  std::vector<std::string> gateways = {"mesh"};
  std::vector<HttpRoute> http;
  std::vector<TcpRoute> tcp;
  std::vector<TlsRoute> tls;
  std::vector<std::string> export_to;  // as a ServiceEntry's (ExportRank, model/mesh_model.h)
};

// The fields of a traffic policy that a port's settings replace (loadBalancer, connectionPool,
// outlierDetection, tls): unset ones are inherited from the level above, except under
// portLevelSettings, which replace all four as Istio does.
struct PolicyFields {
  enum class LoadBalancer { kUnset, kRoundRobin, kLeastRequest, kRandom } load_balancer = LoadBalancer::kUnset;
  // loadBalancer.consistentHash: a ring hash over what a request is hashed by.
  struct ConsistentHash {
    enum class Key { kHeader, kCookie, kSourceIp, kQueryParameter } key = Key::kHeader;
    std::string name;  // the header, cookie or query parameter
    std::string cookie_path;
    std::optional<absl::Duration> cookie_ttl;
    uint64_t minimum_ring_size = 1024;  // Istio's default
  };
  std::optional<ConsistentHash> consistent_hash;
  // loadBalancer.localityLbSetting (applied per proxy locality in EDS, as istiod does).
  struct LocalityLb {
    bool enabled = true;
    struct Distribute {
      std::string from;                                  // "region/zone/subzone", '*' for any part
      std::vector<std::pair<std::string, uint32_t>> to;  // locality pattern -> weight (adding up to 100)
    };
    std::vector<Distribute> distribute;
    std::vector<std::pair<std::string, std::string>> failover;  // region -> region
  };
  std::optional<LocalityLb> locality_lb;
  struct ConnectionPool {
    std::optional<uint32_t> max_connections;
    std::optional<uint32_t> http1_max_pending_requests;
    std::optional<uint32_t> http2_max_requests;
    std::optional<absl::Duration> connect_timeout;  // tcp.connectTimeout
    std::optional<uint32_t> max_retries;            // http.maxRetries
    // HTTP connection tuning (Envoy's upstream HttpProtocolOptions; gRPC nodes ignore them).
    std::optional<uint32_t> max_requests_per_connection;    // http.maxRequestsPerConnection
    std::optional<absl::Duration> idle_timeout;             // http.idleTimeout
    std::optional<absl::Duration> max_connection_duration;  // tcp.maxConnectionDuration
    std::optional<absl::Duration> tcp_idle_timeout;         // tcp.idleTimeout: idle_timeout unless http's is set
    // The upstream HTTP protocol (Envoy only; gRPC always speaks HTTP/2). As istiod decides it:
    // HTTP/2 for HTTP2 and GRPC ports and under UPGRADE, else the client's protocol under
    // useClientProtocol, else HTTP/1.1.
    enum class H2Upgrade { kDefault, kDoNotUpgrade, kUpgrade };
    H2Upgrade h2_upgrade = H2Upgrade::kDefault;      // http.h2UpgradePolicy
    bool use_client_protocol = false;                // http.useClientProtocol
    std::optional<uint32_t> max_concurrent_streams;  // http.maxConcurrentStreams (HTTP/2 upstreams)
    struct TcpKeepalive {                            // tcp.tcpKeepalive (Envoy counts whole seconds)
      std::optional<uint32_t> probes;
      std::optional<absl::Duration> time, interval;
    };
    std::optional<TcpKeepalive> tcp_keepalive;
  };
  std::optional<ConnectionPool> connection_pool;
  struct OutlierDetection {
    std::optional<uint32_t> consecutive_5xx_errors;
    std::optional<uint32_t> consecutive_gateway_errors;  // 502, 503, 504 and connection failures
    std::optional<absl::Duration> interval;
    std::optional<absl::Duration> base_ejection_time;
    std::optional<uint32_t> max_ejection_percent;
    // Local-origin errors (timeouts, resets, refused connections) counted apart from the
    // upstream's answers; consecutive_local_origin_failures needs it.
    bool split_external_local_origin_errors = false;
    std::optional<uint32_t> consecutive_local_origin_failures;
    uint32_t min_health_percent = 0;  // Envoy's panic threshold; Istio's 0 turns panic off
  };
  std::optional<OutlierDetection> outlier_detection;
  // tls: how the proxy connects to the host. Certificates are files on the proxy (Envoy reads
  // them itself); SIMPLE checks the server against caCertificates (the proxy's system bundle
  // when unset), MUTUAL also presents clientCertificate and privateKey. Or, at gateways only
  // (as in Istio), the Secret `credential_name` of the gateway's namespace over SDS: its CA
  // (kubernetes://NAME-cacert) and for MUTUAL its certificate (kubernetes://NAME).
  struct ClientTls {
    enum class Mode { kDisable, kSimple, kMutual } mode = Mode::kDisable;
    std::string client_certificate, private_key, ca_certificates, sni;
    std::string credential_name;
    std::vector<std::string> subject_alt_names;
    bool insecure_skip_verify = false;
  };
  std::optional<ClientTls> tls;
};

struct TrafficPolicy : PolicyFields {
  struct PortPolicy {
    uint32_t port = 0;
    PolicyFields policy;
  };
  std::vector<PortPolicy> port_level;  // portLevelSettings
};

// networking.istio.io DestinationRule.
struct DestinationRule {
  ObjectMeta meta;
  std::string host;
  std::optional<TrafficPolicy> traffic_policy;
  struct Subset {
    std::string name;
    LabelMap labels;
    std::optional<TrafficPolicy> traffic_policy;
  };
  std::vector<Subset> subsets;
  std::vector<std::string> export_to;  // as a ServiceEntry's (MergedDestinationRules, model/mesh_model.h)
};

// networking.istio.io Sidecar (egress scoping).
struct Sidecar {
  ObjectMeta meta;
  std::optional<LabelMap> workload_selector;
  std::vector<std::string> egress_hosts;  // "namespace/host" patterns
};

using MeshObject = std::variant<K8sService, EndpointSlice, ServiceEntry, WorkloadEntry, VirtualService, DestinationRule,
                                Sidecar, K8sPod, Gateway, K8sTlsSecret>;

// "Service", "EndpointSlice", ...
std::string KindOf(const MeshObject& object);
const ObjectMeta& MetaOf(const MeshObject& object);

// One document of a file, parsed and validated.
struct ConfigDocument {
  MeshObject object;
  SourcePosition position;
  std::string content_hash;  // of the document's canonical YAML, to ignore unchanged saves
  std::string canonical;     // that YAML: the document alone (what `cxds apply` stores)
};

}  // namespace cxds
