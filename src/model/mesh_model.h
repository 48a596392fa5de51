// The mesh model: what the accepted config means, in Istio's terms.
//
//  - Services: a v1 Service is host NAME.NAMESPACE.svc.SUFFIX; every host of a ServiceEntry is
//    a service. Each has ports (number, name, protocol).
//  - Endpoints (outside the PushContext, as in istiod, so endpoint-only changes need no new
//    context): from EndpointSlices (by the kubernetes.io/service-name label), labelled by the
//    Pods they stand for (targetRef, else the one Pod with the address); inline ServiceEntry
//    endpoints; and WorkloadEntries selected by a ServiceEntry's workloadSelector or a
//    Service's selector in the same namespace.
//  - MeshContext (a PushContext): services, VirtualServices and DestinationRules by host, and
//    Sidecars, from one immutable snapshot of the store.
// Push keys: services and their endpoints by host (kinds ServiceEntry and Endpoints), and
// DestinationRules by host; VirtualServices and Sidecars by name.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "config/config_store.h"
#include "model/endpoint_index.h"
#include "model/workload_registry.h"
#include "pipeline/push_context.h"
#include "push/push_request.h"

namespace cxds {

// A host as a MeshContext serves it. The spans point into the defining object, which the
// context holds (MeshContext::objects_) for as long as it lives: not copied, as a full push
// context of 10,000 services would copy every port list once more.
struct ServiceInfo {
  std::string host;
  std::string namespace_name;
  std::span<const ServicePort> ports;
  ConfigKey key;  // the object that defines it
  // A ServiceEntry of resolution DNS or DNS_ROUND_ROBIN: Envoy resolves the names of
  // `dns_endpoints` (or, when there are none, the host), so there is nothing for EDS.
  ServiceEntry::Resolution resolution = ServiceEntry::Resolution::kStatic;
  std::span<const WorkloadEndpoint> dns_endpoints;
  // Which namespaces' proxies see the host (exportTo, or the Service's annotation; empty: all).
  std::span<const std::string> export_to;
  // A ServiceEntry's addresses and subjectAltNames (empty for a Service).
  std::span<const std::string> addresses;
  std::span<const std::string> subject_alt_names;
};

// An ExternalName Service as a MeshContext serves it: an alias of `concrete`, a host the context
// defines, which its externalName names directly or through other aliases. `alias` is the Service
// itself (its host, namespace and exportTo: ProxyScope::Visible says who sees the alias).
struct ServiceAlias {
  ServiceInfo alias;
  std::string concrete;
};

// Each ExternalName Service's host -> the host its externalName resolves to, followed through
// other ExternalName Services as istiod's resolveServiceAliases does; a Service in a loop of
// aliases is left out (Kubernetes' DNS answers NXDOMAIN for it). The targets need not be defined.
std::map<std::string, std::string> ResolveServiceAliases(const ObjectMap& objects, const std::string& domain_suffix);

// The entry of `by_host` (keyed by resolved host, wildcards such as "*.mesh.local" and "*"
// among them) that applies to `host`: its own, else the most specific wildcard whose suffix it
// has ("*.b.c" before "*.c" before "*"), as Istio matches a DestinationRule's host.
template <typename Value>
const Value* FindForHost(const std::map<std::string, Value>& by_host, const std::string& host) {
  if (auto exact = by_host.find(host); exact != by_host.end()) return &exact->second;
  for (size_t dot = host.find('.'); dot != std::string::npos; dot = host.find('.', dot + 1)) {
    if (auto wildcard = by_host.find("*" + host.substr(dot)); wildcard != by_host.end()) return &wildcard->second;
  }
  auto any = by_host.find("*");
  return any != by_host.end() ? &any->second : nullptr;
}

// Where exportTo `export_to` (of an object of `object_namespace`) places the object for proxies
// of `proxy_namespace`, as istiod indexes VirtualServices: 0 private to the proxy's namespace
// ("." or its own name, and the proxy is of it), 1 exported to the proxy's namespace by name,
// 2 public ("*", or no exportTo); nullopt: not seen ("~", or other namespaces only); an empty
// `proxy_namespace` sees public objects only.
std::optional<int> ExportRank(std::span<const std::string> export_to, const std::string& object_namespace,
                              const std::string& proxy_namespace);

// Istio's default meshConfig.rootNamespace (`--root-namespace`): its DestinationRules apply to every
// namespace that has none of its own for a host, its selector-less Sidecar to every one without.
inline constexpr char kRootNamespace[] = "istio-system";

// The DestinationRules of one ObjectMap by namespace and resolved host, as istiod consolidates them: in each namespace,
// of the rules for one host, those with a workloadSelector first, then oldest first (metadata.creationTimestamp; unset
// counts as newest), then by name, a rule is merged into the earlier ones exported alike (or to fewer namespaces: a
// subset of its exportTo) (every subset whose name is new; its traffic policy only if the earlier has none), else kept
// as a rule of its own; a rule with a workload selector counts as exported to "." alone and is merged only into one
// with the same selector, or, exported alike, into one without (as istiod's merge does), and kept on its own beside.
// With no exportTo and no selector anywhere, every rule of a host is merged into the oldest. A duplicate subset is a
// finding (pilot_destrule_subsets, istiod's metric).
struct MergedDestinationRules {
  struct Entry {
    const DestinationRule* rule = nullptr;  // the original, or the merge in `merged`
    ConfigKey key;                          // the first (oldest) rule of the merge
    ConfigKey policy_owner;  // the rule whose trafficPolicy `rule` has: `key`'s, else the first merged one's
    std::map<std::string, ConfigKey> subset_owners;  // subset name -> the rule that defines it
    std::set<std::string> export_to;                 // of the first rule, as written (empty: none given)
    DestinationRule* copy = nullptr;                 // `rule` once others were merged into it
    std::optional<LabelMap> selector;                // the first rule's workloadSelector
  };
  // istiod's indexes, namespace -> host -> rules (oldest first, those exported alike or more
  // widely merged into earlier ones; a proxy gets the last that applies to it):
  // its rules exported to "*", ".", its own name or nowhere in particular: what the namespace's
  // proxies look at first;
  std::map<std::string, std::map<std::string, std::vector<Entry>>> by_namespace;
  // its rules exported beyond it (all but those exported to itself alone), for other namespaces;
  std::map<std::string, std::map<std::string, std::vector<Entry>>> exported;
  // host -> the root namespace's rules exported to itself alone: for proxies of the root namespace.
  std::map<std::string, std::vector<Entry>> root_local;
  std::deque<DestinationRule> merged;  // stable addresses for the entries
  std::vector<ConfigWarning> findings;
  std::string root_namespace = kRootNamespace;
  bool exports_restricted = false;  // some rule is exported to fewer than all namespaces
  // namespace -> the workload selectors of its rules (any host), in a stable order: which of
  // them a proxy's labels meet decides which rules it gets (MeshContext::RuleSelectorKey).
  std::map<std::string, std::vector<LabelMap>> selectors;
  // Istio's choice for a proxy of `proxy_namespace` and a host whose service is of
  // `service_namespace`: the proxy's namespace's rule for the host (FindForHost; for a proxy of
  // the root namespace, only the root's rules exported to "." alone), else the service's
  // namespace's, else the root namespace's, each of the most specific host's rules exported to
  // the proxy's namespace. An empty namespace is skipped; an empty `proxy_namespace` gets rules
  // exported to every namespace only. In the proxy's own namespace, as istiod's sidecar scope
  // chooses: the first rule whose workload selector the proxy's `labels` (null: none) include,
  // else the last without a selector, else none (the search ends there).
  const Entry* Lookup(const std::string& host, const std::string& proxy_namespace, const std::string& service_namespace,
                      const LabelMap* labels = nullptr) const;
  // Every rule some proxy of `proxy_namespace` may get for `host` (Lookup, whatever its labels).
  std::vector<const Entry*> LookupAny(const std::string& host, const std::string& proxy_namespace,
                                      const std::string& service_namespace) const;
  bool AnyFor(const std::string& host) const;  // whether any rule of any namespace applies to it
  // The rules of `namespace_name` for exactly `host`, in every index.
  std::vector<const Entry*> EntriesOf(const std::string& namespace_name, const std::string& host) const;
};
MergedDestinationRules MergeDestinationRules(const ObjectMap& objects, const std::string& domain_suffix,
                                             const std::string& root_namespace = kRootNamespace);

class MeshContext final : public PushContext {
 public:
  MeshContext(std::string version, uint64_t sequence, absl::Time created, std::shared_ptr<const ObjectMap> objects,
              const std::string& domain_suffix, const std::string& root_namespace = kRootNamespace);

  const std::map<std::string, ServiceInfo>& services() const { return services_; }
  const ServiceInfo* FindService(const std::string& host) const;
  // ExternalName Services whose target the context defines (ServiceAlias), by alias host; they
  // are not in services(). An alias whose name a Service or ServiceEntry also defines, or whose
  // target no object defines or loops, is not served (findings() says which).
  const ServiceAlias* FindAlias(const std::string& host) const;
  // The served aliases of `host`, by namespace then host (istiod's order of a service's Aliases).
  const std::vector<const ServiceAlias*>& AliasesOf(const std::string& host) const;
  // The host a route to `host` (resolved) reaches: a served alias's concrete host, else `host`.
  std::string ConcreteHost(const std::string& host) const;
  // The VirtualService whose routes `host` gets in the mesh for proxies of `proxy_namespace`
  // (none or one; only those bound to "mesh", the default of spec.gateways): of several naming
  // it, the best by ExportRank for that namespace (its own namespace's private ones, then those
  // exported to it by name, then those exported to every namespace), and of those the oldest
  // (metadata.creationTimestamp; unset counts as newest), then by name, then namespace, as
  // istiod keeps it; those never served are findings (pilot_vservice_dup_domain). An empty
  // `proxy_namespace`: those exported to every namespace only.
  std::vector<const VirtualService*> VirtualServicesFor(const std::string& host,
                                                        const std::string& proxy_namespace = "") const;
  // Whether some VirtualService bound to the mesh (to a Gateway) is exported to fewer than all namespaces, so
  // that the routes a sidecar or gRPC client (a gateway proxy) gets depend on its namespace.
  bool virtual_services_vary_by_namespace() const { return virtual_services_vary_by_namespace_; }
  bool gateway_virtual_services_vary_by_namespace() const { return gateway_virtual_services_vary_by_namespace_; }
  // The DestinationRule a proxy of `proxy_namespace` gets for `host` (MergedDestinationRules::
  // Lookup, its service's namespace from the context): in each namespace the host's own, else
  // the most specific wildcard one (FindForHost); several there are merged. An empty
  // `proxy_namespace`: the rule of the service's namespace, else the root namespace's, which is
  // every proxy's when !rules_vary_by_namespace(). `proxy_labels` (null: none) choose among
  // rules with a workload selector.
  const DestinationRule* DestinationRuleFor(const std::string& host, const std::string& proxy_namespace,
                                            const LabelMap* proxy_labels = nullptr) const;
  // Which workload selectors of the rules of `proxy_namespace` `proxy_labels` meet, by index
  // ("" when the namespace has none): proxies with equal keys get the same rules.
  std::string RuleSelectorKey(const std::string& proxy_namespace, const LabelMap& proxy_labels) const;
  bool has_rule_selectors() const { return !destination_rules_.selectors.empty(); }
  const MergedDestinationRules& destination_rules() const { return destination_rules_; }
  // Whether some DestinationRule lives outside the namespace of a service it applies to, so
  // that which rule a proxy gets for a host depends on the proxy's namespace.
  bool rules_vary_by_namespace() const { return rules_vary_by_namespace_; }
  // Oldest first (metadata.creationTimestamp, then name, then namespace), as istiod orders them.
  const std::vector<const Sidecar*>& sidecars() const { return sidecars_; }
  // The default of namespaces without a Sidecar: the root namespace's oldest without a
  // workloadSelector (istiod's meshRootSidecarConfig), or null.
  const Sidecar* root_default_sidecar() const { return root_default_sidecar_; }
  // The Gateways that pick a gateway proxy (a router~ node) with `labels`: those whose selector
  // is among them, of any namespace (as istiod by default), in key order.
  std::vector<const Gateway*> GatewaysFor(const LabelMap& labels) const;
  const Gateway* FindGateway(const std::string& name) const;  // "namespace/name"
  // The Secret of TLS material `name` in `namespace_name` (a Gateway's credentialName), or null.
  const K8sTlsSecret* FindSecret(const std::string& namespace_name, const std::string& name) const;
  // The VirtualServices bound to Gateway "namespace/name" (spec.gateways) that gateway proxies
  // of `proxy_namespace` see (ExportRank), in istiod's order: by rank, then oldest first
  // (metadata.creationTimestamp, then name, then namespace): at a gateway, the routes of several
  // for one host are merged in this order, as istiod merges them.
  std::vector<const VirtualService*> VirtualServicesOfGateway(const std::string& gateway,
                                                              const std::string& proxy_namespace) const;
  const std::string& domain_suffix() const { return domain_suffix_; }
  const std::string& root_namespace() const { return destination_rules_.root_namespace; }
  // The distinct source conditions (sourceLabels, sourceNamespace) of the served VirtualServices' HTTP
  // matches without `gateways`, tcp and tls matches. Which of them a proxy meets decides which of those
  // matches its routes (and opaque listeners) have, so proxies meeting the same share them.
  struct SourceCondition {
    LabelMap labels;
    std::string namespace_name;  // "": any
    auto operator<=>(const SourceCondition&) const = default;
  };
  const std::vector<SourceCondition>& source_conditions() const { return source_conditions_; }
  // Whether some service is exported to fewer than all namespaces: what a proxy sees then
  // depends on its namespace (ProxyScope).
  bool exports_restricted() const { return exports_restricted_; }
  // One filter chain of the Envoy listener of an opaque (not HTTP) port. A listener address cannot tell
  // services apart, so the chains do, as istiod's do for services without a VIP: each TLS or HTTPS service
  // by the SNI name (its host, or its VirtualService's tls routes' sniHosts), and one other opaque service
  // (TCP, MONGO, ...) takes the connections no name matches. Proxies that see its service get it (and
  // meet its source conditions, below).
  struct OpaqueChain {
    std::string host;                       // the service it is for
    std::vector<std::string> server_names;  // SNI names; empty: every connection no other chain takes
    // The destinations of the VirtualService tcp or tls route it follows (weighted), or when null the
    // service's own cluster outbound|PORT||HOST.
    const std::vector<HttpRouteDestination>* route = nullptr;
    std::string route_namespace;  // of that VirtualService, for short destination hosts
    // tcp routes before that one whose every match for the port has source conditions (sourceLabels,
    // sourceNamespace), in order: the first with a match a proxy meets (MeetsSource) is its route instead.
    struct ForSources {
      const std::vector<HttpRouteDestination>* route;
      std::string route_namespace;
      std::vector<const TcpRoute::Match*> matches;
    };
    std::vector<ForSources> for_sources;
    // A tls match's chain with source conditions: only proxies meeting them (MeetsSource) get it, before any
    // later chain for its names. A host's own chain when its every tls match has source conditions
    // (`unless`): only for proxies meeting none of them (Istio's matchTLS, hasTLSMatch).
    const TlsRoute::Match* source = nullptr;
    std::vector<const TlsRoute::Match*> unless;
    std::vector<std::string> also_hosts;  // a tls match's chain: the other hosts of its VirtualService
  };
  // The chains of the Envoy listener of `port`, in (host, route) order; empty for an HTTP port
  // (or none). A name (or the catch-all) two services would claim goes to the first by host,
  // as istiod's outbound listener conflicts resolve; the losers are in findings().
  const std::vector<OpaqueChain>& OpaqueChains(uint32_t port) const;
  // What this context had to choose between, as analysis warnings (config/config_store.h): opaque ports, SNI names and
  // tls route matches no Envoy listener serves (pilot_conflict_outbound_listener_tcp_over_current_tcp,
  // ..._tcp_over_current_http), VirtualServices not served for a host (pilot_vservice_dup_domain), hosts defined by
  // more than one object (pilot_duplicate_envoy_clusters), DestinationRules merged or not served
  // (pilot_destrule_subsets).
  const std::vector<ConfigWarning>& findings() const { return findings_; }

 private:
  void BuildOpaqueChains();  // after services_, aliases_ and virtual_services_
  void ServeAliases(const std::map<std::string, std::string>& targets);  // after services_
  // `vs`, or when some route of it delegates, a copy in merged_virtual_services_ with each such route replaced by the
  // delegate's routes merged with it (MergeDelegateRoute); what is not merged is in findings_; delegates used are added
  // to `used`. At most kMaxDelegatedPerVirtualService route and match conditions are copied for `vs`, and `budget`
  // (shared by the context), less what they cost: each delegating route multiplies its delegate's.
  const VirtualService* WithDelegates(const VirtualService& vs, const ConfigKey& key, std::set<ConfigKey>& used,
                                      size_t& budget);

  const std::shared_ptr<const ObjectMap> objects_;  // keeps the pointers below alive
  const std::string domain_suffix_;
  std::map<std::string, ServiceInfo> services_;
  std::map<std::string, ServiceAlias> aliases_;                         // by alias host
  std::map<std::string, std::vector<const ServiceAlias*>> aliases_of_;  // by concrete host
  // Bound to "mesh", by host: every VirtualService naming it, oldest first.
  std::map<std::string, std::vector<const VirtualService*>> virtual_services_;
  std::deque<VirtualService> merged_virtual_services_;  // WithDelegates' copies (stable addresses)
  // The most route and match conditions WithDelegates copies per context and per VirtualService.
  static constexpr size_t kMaxDelegatedRoutesAndMatches = 100000;
  static constexpr size_t kMaxDelegatedPerVirtualService = 20000;
  bool virtual_services_vary_by_namespace_ = false;
  bool gateway_virtual_services_vary_by_namespace_ = false;
  std::map<std::string, const Gateway*> gateways_;  // by "namespace/name"
  std::map<std::string, std::vector<const VirtualService*>> gateway_virtual_services_;
  MergedDestinationRules destination_rules_;
  bool rules_vary_by_namespace_ = false;
  std::vector<const Sidecar*> sidecars_;
  const Sidecar* root_default_sidecar_ = nullptr;
  std::vector<SourceCondition> source_conditions_;
  bool exports_restricted_ = false;
  std::map<uint32_t, std::vector<OpaqueChain>> opaque_chains_;
  std::vector<ConfigWarning> findings_;
};

// Applies store updates: keeps the endpoint index current and says what each update means
// for pushes. Also the PushContextBuilder of the pipeline. Thread-safe: OnUpdate comes from the
// config source's thread, SetResolvedNames from the DNS refresher's, and their index rebuilds
// take turns; an update of endpoint objects alone (EndpointSlices, WorkloadEntries, Pods)
// rebuilds only the hosts whose endpoints it pushes.
class MeshModel final : public PushContextBuilder {
 public:
  MeshModel(ConfigStore& store, std::string domain_suffix, std::string root_namespace = kRootNamespace,
            std::string cluster_id = kDefaultClusterId);  // the config's workloads' cluster (AugmentLabels)

  // The push an update needs (empty configs: none). Endpoint-only changes (EndpointSlice, Pod,
  // WorkloadEntry, inline ServiceEntry endpoints) give Endpoints keys only; everything else is
  // full. Either may also carry Workload keys, for the workloads proxies may be that changed
  // (ChangedWorkloads). Updates the endpoint index and the workload registry before returning.
  PushRequest OnUpdate(const ConfigStore::Update& update);

  absl::StatusOr<std::shared_ptr<const PushContext>> Build(const PushContext* previous, const PushRequest& request,
                                                           uint64_t sequence, absl::Time now) override;

  std::shared_ptr<const EndpointIndex> endpoints() const;
  std::shared_ptr<const WorkloadRegistry> workloads() const;  // never null
  // New resolutions of the DNS names (replacing all of the previous ones): rebuilds the endpoint
  // index and returns the endpoint-only push they need (empty configs: no host changed).
  PushRequest SetResolvedNames(ResolvedNames names);
  const std::string& domain_suffix() const { return domain_suffix_; }
  const std::string& cluster_id() const { return cluster_id_; }
  // The hosts a service object defines ("reviews.shop.svc.cluster.local" for a Service).
  std::vector<std::string> HostsOf(const MeshObject& object) const;

 private:
  // Rebuilds the endpoint index from the store: for the hosts in `hosts` only (the others keep
  // the previous index's entries), or whole (null, and always the first time).
  void RebuildEndpoints(const std::set<std::string>* hosts) ABSL_LOCKS_EXCLUDED(rebuild_mu_, mu_);

  ConfigStore& store_;
  const std::string domain_suffix_;
  const std::string root_namespace_;
  const std::string cluster_id_;
  Mutex rebuild_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // RebuildEndpoints, one at a time
  bool endpoints_built_ ABSL_GUARDED_BY(rebuild_mu_) = false;
  mutable Mutex mu_;
  std::shared_ptr<const EndpointIndex> endpoints_ ABSL_GUARDED_BY(mu_) = std::make_shared<EndpointIndex>();
  std::shared_ptr<const WorkloadRegistry> workloads_ ABSL_GUARDED_BY(mu_) = std::make_shared<WorkloadRegistry>();
  bool workloads_built_ = false;  // OnUpdate's thread only: the first update builds the registry
  ResolvedNames resolved_ ABSL_GUARDED_BY(mu_);
};

// Calls `fn(destination, field)` for every destination a VirtualService sends traffic to:
// http[].route[], http[].mirror, tcp[].route[], tls[].route[] ("spec.http[0].route[1].destination").
void ForEachDestination(const VirtualService& vs,
                        const std::function<void(const HttpRouteDestination&, const std::string&)>& fn);

// The name a virtual host of `gateway` gets for `host` (resolved) of a VirtualService of namespace `vs_namespace`, if
// the server host `server_host` ("namespace/host", the namespace "*", "." for the Gateway's, or a name) admits it: the
// narrower of the two names. Empty: not admitted. Shared by the gateway translation and its analysis.
std::string GatewayHostName(const Gateway& gateway, const std::string& server_host, const std::string& vs_namespace,
                            const std::string& host);

// Whether tcp route `route` of `vs` applies to connections to `port` at `gateway`: one of its
// matches does (by port and OpaqueMatchAt), or it has none and applies at `gateway`.
bool TcpRouteApplies(const TcpRoute& route, const VirtualService& vs, const std::string& gateway, uint32_t port);

// Whether a tcp or tls route match of `vs` applies at `gateway` ("mesh" or "namespace/name"):
// its own `gateways` when it lists some, else the VirtualService's.
bool OpaqueMatchAt(const std::vector<std::string>& match_gateways, const VirtualService& vs,
                   const std::string& gateway);

// istiod's merge of a route with http[].delegate (`root`) and one http route of the delegate VirtualService, of
// `delegate_namespace` (its short destination hosts are resolved there): each match of the delegate's route is merged
// into every root match it does not conflict with (the root's conditions kept where the delegate's leaves them unset);
// it conflicts when it is not within the root's (a uri or other string match that is not the root's exact value or
// under its prefix, a regex on either side, another port, namespace, label value or ignoreUriCase, gateways the root's
// do not list). The root's settings apply where the delegate's route sets none: headers, CORS and fault always;
// rewrite, timeout and retries to a route that goes upstream; `mirror`, its percentages and `mirrors` each on its own.
// nullopt: a match of the delegate's route conflicts with every root match, and istiod leaves the route out.
std::optional<HttpRoute> MergeDelegateRoute(const HttpRoute& root, const HttpRoute& delegate,
                                            const std::string& delegate_namespace, const std::string& domain_suffix);
// The settings MergeDelegateRoute takes of `root` for `delegate`'s route (the rest empty; mirrors
// whole, merged field by field after): what config status says where the root wrote it.
HttpRoute DelegatingRouteTaken(const HttpRoute& root, const HttpRoute& delegate);

// For each delegate VirtualService (no hosts), those with hosts whose http[].delegate names it, exported to it.
using Delegators = std::map<ConfigKey, std::vector<const VirtualService*>>;
Delegators DelegatorsOf(const ObjectMap& objects);

// The namespaces whose proxies get the routes of `vs` (of key `key`): its own when exported to
// every namespace (the default), else each its exportTo names ("." its own, "~" none); for a
// delegate, those of the VirtualServices delegating to it (`delegators`). Sorted, unique.
std::vector<std::string> ServedNamespaces(const VirtualService& vs, const ConfigKey& key, const Delegators& delegators);

// "reviews" in namespace "shop" -> "reviews.shop.svc.SUFFIX"; names with a dot are kept.
std::string ResolveHost(const std::string& host, const std::string& ns, const std::string& suffix);

// The cross-object rules of the mesh config, for ConfigStore (same host resolution and
// DestinationRule choice as MeshContext): every subset a VirtualService routes to is defined by
// the DestinationRule of its host (else its traffic would go to a cluster without endpoints).
ReferenceCheck MeshReferenceCheck(std::string domain_suffix, std::string root_namespace = kRootNamespace);

// The version of a set of objects: a hash of their keys and content hashes.
std::string ObjectsVersion(const ObjectMap& objects, bool include_endpoint_kinds);

}  // namespace cxds
