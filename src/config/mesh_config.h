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
#include "config/virtual_service_config.h"

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
  // spec.externalName of a Service of type ExternalName (else empty): the Service is an alias of
  // that host, as istiod's Alias resolution. It has no cluster, listener or endpoints of its
  // own; the host's routes answer to its name (MeshContext::AliasesOf).
  std::string external_name;
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

// v1 Endpoints, as Kubernetes' EndpointSlice mirroring reads it: for a Service without a
// selector (its endpoints written by hand), each subset is mirrored to an EndpointSlice, which
// istiod then serves; for one with a selector Kubernetes mirrors nothing (its own slices serve),
// nor when the label endpointslice.kubernetes.io/skip-mirror is "true".
struct K8sEndpoints {
  ObjectMeta meta;
  // Each subset as the slice mirrored from it: service_name the Endpoints' name; `addresses`
  // ready, `notReadyAddresses` not.
  std::vector<EndpointSlice> mirrored;
  bool skip_mirror = false;
};

// v1 Pod: only what endpoints need, its labels, IPs (status.podIP, status.podIPs) and node
// (spec.nodeName, a label of its endpoints as istiod adds it). The rest of its spec
// (containers, volumes, ...) means nothing to a proxy and is not read.
struct K8sPod {
  ObjectMeta meta;
  std::vector<std::string> ips;
  std::string node_name;  // "" when not scheduled
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
  // addresses: virtual IPs (IP addresses; CIDR ranges are refused as not supported). Envoy's HTTP
  // routes answer to each as to a host (Host ADDRESS or ADDRESS:PORT), as istiod's domains do.
  std::vector<std::string> addresses;
  // subjectAltNames: what the server's certificate is checked for when a DestinationRule's tls
  // (SIMPLE, MUTUAL) names no subjectAltNames of its own, as istiod uses them.
  std::vector<std::string> subject_alt_names;
  // exportTo: the namespaces whose proxies see the hosts: "*" (every one), "." (the entry's
  // own), "~" (none) or names. Empty: every namespace, Istio's default.
  std::vector<std::string> export_to;
};

// networking.istio.io WorkloadEntry.
struct WorkloadEntry {
  ObjectMeta meta;
  WorkloadEndpoint spec;
};

// The fields of a traffic policy that a port's settings replace (loadBalancer, connectionPool,
// outlierDetection, tls): unset ones are inherited from the level above, except under
// portLevelSettings, which replace all four as Istio does.
struct PolicyFields {
  enum class LoadBalancer { kUnset, kRoundRobin, kLeastRequest, kRandom } load_balancer = LoadBalancer::kUnset;
  // `loadBalancer` was written, even empty: a subset's then replaces the rule's whole, as istiod's merge.
  bool load_balancer_given = false;
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
    // Labels in order, each "key" or "key=value" (the value a proxy is taken to have, istiod's
    // override): endpoints whose labels agree with the proxy's on more of them come first.
    std::vector<std::string> failover_priority;
  };
  std::optional<LocalityLb> locality_lb;
  // loadBalancer.warmup, or the deprecated warmupDurationSecs (a duration alone): Envoy's slow
  // start, on ROUND_ROBIN and LEAST_REQUEST clusters only, as istiod applies it.
  struct Warmup {
    absl::Duration duration;
    bool full_form = false;       // written as `warmup`: istiod then sends aggression and the minimum too
    double minimum_percent = 10;  // istiod's default, Envoy's too
    double aggression = 1;        // istiod's default: a linear ramp
  };
  std::optional<Warmup> warmup;
  // Whether Envoy applies `warmup` under this policy: not on RANDOM or ring-hash clusters.
  bool WarmupApplies() const {
    return warmup.has_value() && !consistent_hash.has_value() && load_balancer != LoadBalancer::kRandom;
  }
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
    std::string ca_crl;  // caCrl: a file of revoked certificates the server's is checked against
    std::string credential_name;
    std::vector<std::string> subject_alt_names;
    bool insecure_skip_verify = false;
  };
  std::optional<ClientTls> tls;
  // trafficPolicy.proxyProtocol (of a rule or a subset; Istio has none per port): the proxy opens
  // each upstream connection with a PROXY protocol header of this version (Envoy only).
  enum class ProxyProtocol { kV1, kV2 };
  std::optional<ProxyProtocol> proxy_protocol;
  // trafficPolicy.retryBudget (of a rule or a subset, none per port, as proxyProtocol): Envoy lets
  // concurrent retries reach `percent` of the active and pending requests, and at least
  // `min_concurrency`, in place of a fixed maximum (istiod's defaults; Envoy only).
  struct RetryBudget {
    double percent = 20;
    uint32_t min_concurrency = 3;
  };
  std::optional<RetryBudget> retry_budget;
};

struct TrafficPolicy : PolicyFields {
  // tunnel (of a rule or a subset; none per port, as in Istio): a TCP proxy to the host carries
  // each connection in an HTTP CONNECT (or POST) tunnel to target_host:target_port, Envoy's
  // tunneling_config, as istiod sets it (Envoy only: proxyless gRPC has no TCP proxy).
  struct Tunnel {
    bool use_post = false;  // protocol POST; CONNECT, Istio's default, otherwise
    std::string target_host;
    uint32_t target_port = 0;
  };
  std::optional<Tunnel> tunnel;
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
  // spec.workloadSelector.matchLabels: the rule applies only to the proxies of its namespace
  // whose labels include these (before its namespace's rules without one), as in istiod.
  std::optional<LabelMap> workload_selector;
};

// networking.istio.io Sidecar (egress scoping).
struct Sidecar {
  ObjectMeta meta;
  std::optional<LabelMap> workload_selector;
  std::vector<std::string> egress_hosts;  // "namespace/host" patterns
};

using MeshObject = std::variant<K8sService, EndpointSlice, ServiceEntry, WorkloadEntry, VirtualService, DestinationRule,
                                Sidecar, K8sPod, Gateway, K8sTlsSecret, K8sEndpoints>;

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
