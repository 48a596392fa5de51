// Who a proxy is and what it may see.
//
// Identity: node.id in Istio's form TYPE~IP~NAME.NAMESPACE~NAMESPACE.svc.SUFFIX, or a plain id;
// node metadata NAMESPACE and LABELS (a struct of strings) override and add; metadata
// GENERATOR "grpc" marks a proxyless gRPC client (as in Istio's gRPC bootstrap).
//
// Scope: for a sidecar (not a gateway proxy, type "router"), the Sidecar in the proxy's
// namespace whose workloadSelector matches its labels (one without a selector is the namespace
// default) limits the hosts it sees to its egress
// patterns ("ns/host", "*/host", "./*", "*/*", "ns/*.example.com"). With none in its namespace,
// the root namespace's default Sidecar applies, "." then meaning the proxy's namespace (as in
// istiod). No Sidecar at all: everything.
#pragma once

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "config/mesh_config.h"
#include "envoy/config/core/v3/base.pb.h"
#include "model/mesh_model.h"
#include "model/workload_registry.h"

namespace cxds {

struct ProxyInfo {
  std::string id;
  std::string type;  // "sidecar", "router", ... ("" for a plain id)
  std::string ip;
  std::string namespace_name = "default";
  LabelMap labels;
  bool grpc = false;
  // What the registry says the proxy is ("Pod ns/name", "WorkloadEntry ns/name", ...): then
  // `labels` are that workload's over its node's STATIC_LABELS. Empty: its node's LABELS. Either
  // way with the topology labels (AugmentLabels) added.
  std::string workload;
  // Its locality: its workload's, else its labels', else its node's (ProxyLocality).
  envoy::config::core::v3::Locality locality;
  // Node metadata IDLE_TIMEOUT, a Go duration ("1h30m"), as istiod reads it: the idle timeout of
  // its Envoy HTTP connection managers, and of its TCP proxies whose DestinationRule sets no
  // connectionPool.tcp.idleTimeout. Unset when absent, unparsable, negative or too long for Go.
  std::optional<absl::Duration> node_idle_timeout;
};

// Who the node says it is; with `registry` (unless node metadata CLUSTER_ID names another
// cluster than the registry's), who the registry says it is, as istiod's SetWorkloadLabels puts
// it first: the proxy's Pod (the Istio node id's NAME.NAMESPACE, when
// node metadata NAMESPACE names that namespace), else a ServiceEntry endpoint of its namespace
// (any, without NAMESPACE) at one of its IPs (metadata INSTANCE_IPS, else the node id's), gives
// the proxy that workload's labels, its locality among them (WorkloadRegistry), over its node's
// STATIC_LABELS, in place of its LABELS. A proxy labelled `istio.io/test-vm` keeps its own, as
// istiod's IsVM. Then, as istiod's setTopologyLabels, every proxy's labels get its locality and
// its node metadata's CLUSTER_ID, NODE_NAME and NETWORK (AugmentLabels).
ProxyInfo ParseProxyInfo(const envoy::config::core::v3::Node& node, const WorkloadRegistry* registry = nullptr);
// Whether `request` names, among its Workload configs (kind::kWorkload), a workload the registry
// may find this node as: its Pod, or one of its IPs (never for an istio.io/test-vm proxy, nor for
// a node whose metadata CLUSTER_ID names another cluster than `cluster_id`, the registry's, which
// ParseProxyInfo does not search for it). The pipeline's proxy_update check: such a proxy is
// pushed in full (istiod's ProxyUpdate).
bool NamesProxyWorkload(const envoy::config::core::v3::Node& node, const PushRequest& request,
                        std::string_view cluster_id);
// node.locality (Envoy's and gRPC's bootstrap set it), as given; a proxy that gives none is of
// the empty locality, as istiod takes it. A part longer than any endpoint's locality can be is
// cut to 254 bytes, still matching no endpoint.
envoy::config::core::v3::Locality NodeLocality(const envoy::config::core::v3::Node& node);
// The proxy's locality as istiod's setTopologyLabels takes it from a proxy its registry has no
// workload for: its labels (metadata LABELS) `topology.kubernetes.io/region`, `.../zone` and
// `topology.istio.io/subzone` if any is given, else `topology.istio.io/locality` or
// `istio-locality` as written ("region/zone/subzone"), else the node's (NodeLocality). Parts
// are cut as NodeLocality cuts them.
envoy::config::core::v3::Locality ProxyLocality(const envoy::config::core::v3::Node& node);
// The same from `proxy`'s labels when the registry gave them (ProxyInfo::workload), so a
// workload's locality comes first, as in istiod; else ProxyLocality(node). ParseProxyInfo keeps
// it as ProxyInfo::locality; this computes it.
envoy::config::core::v3::Locality ProxyLocality(const envoy::config::core::v3::Node& node, const ProxyInfo& proxy);

class ProxyScope {
 public:
  ProxyScope(const ProxyInfo& proxy, const MeshContext& context);
  // Whether the proxy sees `service`: exported to its namespace (ServiceEntry exportTo), and
  // among its Sidecar's egress hosts when one applies.
  bool Visible(const ServiceInfo& service) const;
  bool VisibleHost(const std::string& host) const;
  // Identifies the scope (for cache keys): "all" or "sidecar:ns/name" (with "@NAMESPACE", the
  // proxy's, for the root namespace's default Sidecar when it names "./" hosts), followed by
  // "|ns:NAMESPACE" when some service is exported to fewer than all namespaces.
  const std::string& key() const { return key_; }
  // Whether this proxy, as a client, meets source conditions `labels` (a subset of its labels)
  // and `namespace_name` (its namespace, when set), as Istio's sourceMatchTCP.
  bool MeetsSource(const LabelMap& labels, const std::string& namespace_name) const {
    return LabelsMatch(labels, labels_) && (namespace_name.empty() || namespace_name == namespace_name_);
  }
  // Whether an HTTP route match is for this proxy as a client (sourceLabels, sourceNamespace,
  // gateways: SourceMatches) in the mesh, or at Gateway `gateway` ("namespace/name").
  bool Applies(const HttpRoute::Match& match, const std::string& gateway = "mesh") const {
    return SourceMatches(match, labels_, namespace_name_, gateway);
  }
  // key() and which of the context's source conditions the proxy meets, and its namespace when
  // DestinationRules (hash policies) or VirtualServices (exportTo) vary by namespace: what its
  // routes depend on. key() alone while no VirtualService has source conditions and neither
  // rules nor VirtualServices vary.
  const std::string& route_key() const { return route_key_; }
  // "|idle:NANOSECONDS" for the proxy's IDLE_TIMEOUT when it gives one, else "": what its HTTP
  // connection managers depend on; tcp_proxy_key(), route_key() with it: what its TCP proxies do.
  const std::string& idle_key() const { return idle_key_; }
  const std::string& tcp_proxy_key() const { return tcp_proxy_key_; }
  // tcp_proxy_key() without the source conditions met: what a gateway's TCP proxies depend on
  // (istiod applies a tcp or tls match's sourceLabels and sourceNamespace to no gateway proxy).
  // Empty for a proxy that is not a gateway (router~).
  const std::string& gateway_tcp_proxy_key() const { return gateway_tcp_proxy_key_; }
  const std::optional<absl::Duration>& node_idle_timeout() const { return node_idle_timeout_; }
  const std::string& namespace_name() const { return namespace_name_; }
  const LabelMap& labels() const { return labels_; }

  // Istio's sourceMatchHTTP at `gateway` ("mesh" for sidecars, else "namespace/name"): with
  // `gateways` given, whether it is among them; else the proxy's labels include sourceLabels
  // and its namespace is sourceNamespace when that is set.
  static bool SourceMatches(const HttpRoute::Match& match, const LabelMap& labels, const std::string& namespace_name,
                            const std::string& gateway = "mesh");

 private:
  bool Exported(const ServiceInfo& service) const;

  const MeshContext& context_;
  const Sidecar* sidecar_ = nullptr;
  std::string key_ = "all";
  LabelMap labels_;
  std::string namespace_name_;
  std::string route_key_;
  std::string idle_key_;
  std::string tcp_proxy_key_;
  std::string gateway_tcp_proxy_key_;
  std::optional<absl::Duration> node_idle_timeout_;
};

}  // namespace cxds
