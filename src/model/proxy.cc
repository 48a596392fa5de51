#include "model/proxy.h"

#include <arpa/inet.h>
#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/strings.h"

namespace cxds {

namespace {

// Where the registry may find a proxy (istiod's podKeyByProxy and proxy IPs).
struct WorkloadCandidates {
  bool vm = false;                 // labelled istio.io/test-vm: never looked up, as istiod's IsVM
  std::string metadata_namespace;  // istiod compares with the metadata alone, not the node id's
  std::string pod_name;            // the Istio node id's NAME, when NAMESPACE is metadata_namespace
  std::vector<std::string> ips;    // IP addresses: metadata INSTANCE_IPS, else the node id's; at most kMaxIps
};

bool IsIpAddress(const std::string& text) {
  in_addr v4{};
  in6_addr v6{};
  return inet_pton(AF_INET, text.c_str(), &v4) == 1 || inet_pton(AF_INET6, text.c_str(), &v6) == 1;
}

// `id_parts`: node.id() split at '~'.
WorkloadCandidates CandidatesOf(const envoy::config::core::v3::Node& node,
                                const std::vector<absl::string_view>& id_parts) {
  constexpr size_t kMaxIps = 16;  // a hostile node's list is not walked whole
  WorkloadCandidates out;
  const auto& fields = node.metadata().fields();
  if (auto labels = fields.find("LABELS"); labels != fields.end()) {
    const auto& given = labels->second.struct_value().fields();
    auto vm = given.find("istio.io/test-vm");
    out.vm = vm != given.end() && !vm->second.string_value().empty();
  }
  if (auto ns = fields.find("NAMESPACE"); ns != fields.end()) out.metadata_namespace = ns->second.string_value();
  const std::vector<absl::string_view>& parts = id_parts;
  if (parts.size() == 4 && !out.metadata_namespace.empty()) {
    const size_t dot = parts[2].find('.');
    if (dot != std::string::npos && parts[2].substr(dot + 1) == out.metadata_namespace) {
      out.pod_name = std::string(parts[2].substr(0, dot));
    }
  }
  // As istiod: INSTANCE_IPS when every entry is an IP address, else the node id's IP if it is one.
  if (auto listed = fields.find("INSTANCE_IPS"); listed != fields.end()) {
    for (absl::string_view ip : absl::StrSplit(listed->second.string_value(), ',')) {
      if (out.ips.size() == kMaxIps) break;
      if (!IsIpAddress(std::string(ip))) {
        out.ips.clear();
        break;
      }
      out.ips.emplace_back(ip);
    }
  }
  if (out.ips.empty() && parts.size() == 4 && IsIpAddress(std::string(parts[1]))) out.ips.emplace_back(parts[1]);
  return out;
}

// The workload the registry has for `candidates` (the Pod first, then each IP in turn), or null.
const WorkloadIdentity* FindWorkload(const WorkloadCandidates& candidates, const WorkloadRegistry& registry) {
  if (candidates.vm) return nullptr;
  if (!candidates.pod_name.empty()) {
    auto pod = registry.pods.find({candidates.metadata_namespace, candidates.pod_name});
    if (pod != registry.pods.end()) return &pod->second;
  }
  for (const std::string& ip : candidates.ips) {
    auto found = registry.by_address.find(ip);
    if (found == registry.by_address.end()) continue;
    for (const WorkloadIdentity& candidate : found->second) {
      if (candidates.metadata_namespace.empty() || candidate.namespace_name == candidates.metadata_namespace) {
        return &candidate;
      }
    }
  }
  return nullptr;
}

// istiod's LocalityToString: "region", "region/zone" or "region/zone/subzone", a subzone
// without a zone not written.
std::string LocalityString(const envoy::config::core::v3::Locality& locality) {
  if (locality.zone().empty()) return locality.region();
  if (locality.sub_zone().empty()) return StrCat(locality.region(), "/", locality.zone());
  return StrCat(locality.region(), "/", locality.zone(), "/", locality.sub_zone());
}

// Whether the registry of `cluster_id` is searched for `node`: istiod's aggregate registry
// searches the registries of the proxy's CLUSTER_ID, or all when it names none.
bool SearchedIn(const envoy::config::core::v3::Node& node, std::string_view cluster_id) {
  const auto& fields = node.metadata().fields();
  auto cluster = fields.find("CLUSTER_ID");
  return cluster == fields.end() || cluster->second.string_value().empty() ||
         cluster->second.string_value() == cluster_id;
}

}  // namespace

bool NamesProxyWorkload(const envoy::config::core::v3::Node& node, const PushRequest& request,
                        std::string_view cluster_id) {
  if (!SearchedIn(node, cluster_id)) return false;  // as ParseProxyInfo
  const WorkloadCandidates candidates = CandidatesOf(node, absl::StrSplit(node.id(), '~'));
  if (candidates.vm) return false;
  if (!candidates.pod_name.empty() &&
      request.configs.contains(ConfigKey{kind::kWorkload, candidates.metadata_namespace, candidates.pod_name})) {
    return true;
  }
  return std::any_of(candidates.ips.begin(), candidates.ips.end(), [&](const std::string& ip) {
    return request.configs.contains(ConfigKey{kind::kWorkload, "", ip});
  });
}

ProxyInfo ParseProxyInfo(const envoy::config::core::v3::Node& node, const WorkloadRegistry* registry) {
  ProxyInfo proxy;
  proxy.id = node.id();
  const std::vector<absl::string_view> parts = absl::StrSplit(node.id(), '~');
  if (parts.size() == 4) {
    proxy.type = std::string(parts[0]);
    proxy.ip = std::string(parts[1]);
    const size_t dot = parts[2].find('.');
    if (dot != absl::string_view::npos) proxy.namespace_name = std::string(parts[2].substr(dot + 1));
  }
  const auto& fields = node.metadata().fields();
  if (auto ns = fields.find("NAMESPACE"); ns != fields.end() && !ns->second.string_value().empty()) {
    proxy.namespace_name = ns->second.string_value();
  }
  if (auto generator = fields.find("GENERATOR"); generator != fields.end()) {
    proxy.grpc = generator->second.string_value() == "grpc";
  }
  const auto read_labels = [&](const char* key) {
    if (auto labels = fields.find(key); labels != fields.end()) {
      for (const auto& [k, v] : labels->second.struct_value().fields()) proxy.labels[k] = v.string_value();
    }
  };
  static const std::string kNone;
  const auto metadata = [&](const char* key) -> const std::string& {
    auto it = fields.find(key);
    return it != fields.end() ? it->second.string_value() : kNone;
  };
  // An empty registry (no Pods, no ServiceEntry endpoints) finds nobody: the node is not read
  // again. Nor does a registry of another cluster than the one the node says it is in.
  const bool searched = registry != nullptr && !(registry->pods.empty() && registry->by_address.empty()) &&
                        SearchedIn(node, registry->cluster_id);
  if (const WorkloadIdentity* workload = searched ? FindWorkload(CandidatesOf(node, parts), *registry) : nullptr) {
    // As istiod's SetWorkloadLabels: the node's STATIC_LABELS (what ISTIO_METAJSON_LABELS set in
    // its bootstrap, which a workload's labels do not carry), then the workload's over them, in
    // place of its LABELS.
    read_labels("STATIC_LABELS");
    for (const auto& [k, v] : workload->labels) proxy.labels.insert_or_assign(k, v);
    proxy.workload = workload->source;
  } else {
    read_labels("LABELS");
  }
  // As istiod's setTopologyLabels then does for every proxy: its locality (the workload's, else
  // its labels', else its node's), kept, and with its node metadata's cluster, node and network
  // as labels. The locality is read before the labels are handed over.
  // Go's units, "µs" and "μs" too; past Go's int64 nanoseconds, Go fails where absl would not.
  if (absl::Duration idle;
      absl::ParseDuration(absl::StrReplaceAll(metadata("IDLE_TIMEOUT"), {{"µs", "us"}, {"μs", "us"}}), &idle) &&
      idle >= absl::ZeroDuration() && idle <= absl::Nanoseconds(std::numeric_limits<int64_t>::max())) {
    proxy.node_idle_timeout = idle;
  }
  proxy.locality = ProxyLocality(node, proxy);
  const std::string locality = LocalityString(proxy.locality);
  proxy.labels = AugmentLabels(std::move(proxy.labels), metadata("CLUSTER_ID"), locality, metadata("NODE_NAME"),
                               metadata("NETWORK"));
  return proxy;
}

namespace {
// A part longer than any configured locality can be (253 bytes, as the loader validates) is
// cut to one byte over that: it still matches no endpoint, as istiod's would, and a hostile
// node cannot make cache keys of any length.
envoy::config::core::v3::Locality CutLocality(envoy::config::core::v3::Locality locality) {
  constexpr size_t kMaxPart = 253;
  for (std::string* part : {locality.mutable_region(), locality.mutable_zone(), locality.mutable_sub_zone()}) {
    if (part->size() > kMaxPart) part->resize(kMaxPart + 1);
  }
  return locality;
}
}  // namespace

envoy::config::core::v3::Locality NodeLocality(const envoy::config::core::v3::Node& node) {
  return CutLocality(node.locality());
}

namespace {
// setTopologyLabels over the labels `label` looks up (null: not given).
template <typename LabelLookup>
envoy::config::core::v3::Locality LocalityFromLabels(const LabelLookup& label,
                                                     const envoy::config::core::v3::Node& node) {
  envoy::config::core::v3::Locality locality;
  const std::string* region = label("topology.kubernetes.io/region");
  const std::string* zone = label("topology.kubernetes.io/zone");
  const std::string* sub_zone = label("topology.istio.io/subzone");
  if (region != nullptr || zone != nullptr || sub_zone != nullptr) {
    if (region != nullptr) locality.set_region(*region);
    if (zone != nullptr) locality.set_zone(*zone);
    if (sub_zone != nullptr) locality.set_sub_zone(*sub_zone);
  } else {
    // istiod's GetLocalityLabel: the first of these given, even empty; read as written (no dots
    // for slashes, unlike an endpoint's label).
    const std::string* value = label("topology.istio.io/locality");
    if (value == nullptr) value = label("istio-locality");
    if (value == nullptr || value->empty()) return NodeLocality(node);
    // "region/zone/subzone"; parts after the third are not read, as istiod's ConvertLocality.
    const std::vector<absl::string_view> parts = absl::StrSplit(*value, '/');
    locality.set_region(std::string(parts[0]));
    if (parts.size() > 1) locality.set_zone(std::string(parts[1]));
    if (parts.size() > 2) locality.set_sub_zone(std::string(parts[2]));
  }
  return CutLocality(std::move(locality));
}
}  // namespace

envoy::config::core::v3::Locality ProxyLocality(const envoy::config::core::v3::Node& node) {
  const auto& fields = node.metadata().fields();
  auto labels_field = fields.find("LABELS");
  if (labels_field == fields.end() || !labels_field->second.has_struct_value()) return NodeLocality(node);
  const auto& labels = labels_field->second.struct_value().fields();
  return LocalityFromLabels(
      [&](const char* key) -> const std::string* {
        auto it = labels.find(key);
        return it != labels.end() && it->second.has_string_value() ? &it->second.string_value() : nullptr;
      },
      node);
}

envoy::config::core::v3::Locality ProxyLocality(const envoy::config::core::v3::Node& node, const ProxyInfo& proxy) {
  if (proxy.workload.empty()) return ProxyLocality(node);
  return LocalityFromLabels(
      [&](const char* key) -> const std::string* {
        auto it = proxy.labels.find(key);
        return it != proxy.labels.end() ? &it->second : nullptr;
      },
      node);
}

namespace {
bool HostMatches(const std::string& pattern, const std::string& host) {
  if (pattern == "*") return true;
  if (pattern.size() > 1 && pattern[0] == '*') {
    const std::string suffix = pattern.substr(1);  // ".example.com"
    return host.size() > suffix.size() && host.compare(host.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  return pattern == host;
}
}  // namespace

ProxyScope::ProxyScope(const ProxyInfo& proxy, const MeshContext& context)
    : context_(context),
      labels_(proxy.labels),
      namespace_name_(proxy.namespace_name),
      node_idle_timeout_(proxy.node_idle_timeout) {
  const Sidecar* fallback = nullptr;
  // A Sidecar scopes sidecars only: gateway proxies see every service (as in Istio).
  for (const Sidecar* sidecar : proxy.type == "router" ? std::vector<const Sidecar*>{} : context.sidecars()) {
    if (sidecar->meta.namespace_name != proxy.namespace_name) continue;
    if (!sidecar->workload_selector.has_value()) {
      if (fallback == nullptr) fallback = sidecar;
    } else if (sidecar_ == nullptr && LabelsMatch(*sidecar->workload_selector, proxy.labels)) {
      sidecar_ = sidecar;
    }
  }
  if (sidecar_ == nullptr) sidecar_ = fallback;
  // A namespace without a Sidecar of its own gets the root namespace's default, as in istiod;
  // its "./" hosts then mean the proxy's namespace, so the scope is the proxy namespace's own.
  const bool root_default = sidecar_ == nullptr && proxy.type != "router" && context.root_default_sidecar() != nullptr;
  if (root_default) sidecar_ = context.root_default_sidecar();
  if (sidecar_ != nullptr) key_ = StrCat("sidecar:", sidecar_->meta.namespace_name, "/", sidecar_->meta.name);
  if (root_default && std::any_of(sidecar_->egress_hosts.begin(), sidecar_->egress_hosts.end(),
                                  [](const std::string& pattern) { return pattern.starts_with("./"); })) {
    key_ = StrCat(key_, "@", proxy.namespace_name);
  }
  if (context.exports_restricted()) key_ = StrCat(key_, "|ns:", proxy.namespace_name);
  route_key_ = key_;
  if ((context.rules_vary_by_namespace() || context.virtual_services_vary_by_namespace()) &&
      !context.exports_restricted()) {
    route_key_ = StrCat(route_key_, "|ns:", proxy.namespace_name);
  }
  // DestinationRules with workload selectors: which of its namespace's the proxy meets decides
  // its rules (clusters, endpoints and hash policies).
  if (const std::string selected = context.RuleSelectorKey(proxy.namespace_name, proxy.labels); !selected.empty()) {
    key_ = StrCat(key_, "|rules:", selected);
    route_key_ = StrCat(route_key_, "|rules:", selected);
  }
  // A gateway's TCP proxies read no source conditions (only gateway proxies need this key).
  const bool gateway = proxy.type == "router";
  if (gateway) gateway_tcp_proxy_key_ = route_key_;
  if (!context.source_conditions().empty()) {
    // The indices of the conditions met (a proxy meets few of a mesh's many).
    route_key_ += "|source:";
    bool first = true;
    for (size_t i = 0; i < context.source_conditions().size(); ++i) {
      const MeshContext::SourceCondition& condition = context.source_conditions()[i];
      const bool meets = LabelsMatch(condition.labels, labels_) &&
                         (condition.namespace_name.empty() || condition.namespace_name == namespace_name_);
      if (!meets) continue;
      absl::StrAppend(&route_key_, first ? "" : ",", i);
      first = false;
    }
  }
  if (node_idle_timeout_.has_value()) idle_key_ = StrCat("|idle:", absl::ToInt64Nanoseconds(*node_idle_timeout_));
  tcp_proxy_key_ = StrCat(route_key_, idle_key_);
  if (gateway) gateway_tcp_proxy_key_ += idle_key_;
}

bool ProxyScope::SourceMatches(const HttpRoute::Match& match, const LabelMap& labels, const std::string& namespace_name,
                               const std::string& gateway) {
  if (!match.gateways.empty())
    return std::find(match.gateways.begin(), match.gateways.end(), gateway) != match.gateways.end();
  return LabelsMatch(match.source_labels, labels) &&
         (match.source_namespace.empty() || match.source_namespace == namespace_name);
}

bool ProxyScope::Exported(const ServiceInfo& service) const {
  return ExportRank(service.export_to, service.namespace_name, namespace_name_).has_value();
}

bool ProxyScope::Visible(const ServiceInfo& service) const {
  if (!Exported(service)) return false;
  if (sidecar_ == nullptr) return true;
  for (const std::string& pattern : sidecar_->egress_hosts) {
    const size_t slash = pattern.find('/');
    const std::string ns = pattern.substr(0, slash);
    const std::string host = pattern.substr(slash + 1);
    // "." is the proxy's namespace: the Sidecar's own, or the proxy's when the Sidecar is the
    // root namespace's default.
    const bool ns_ok = ns == "*" || service.namespace_name == (ns == "." ? namespace_name_ : ns);
    if (ns_ok && HostMatches(host, service.host)) return true;
  }
  return false;
}

bool ProxyScope::VisibleHost(const std::string& host) const {
  const ServiceInfo* service = context_.FindService(host);
  return service != nullptr && Visible(*service);
}

}  // namespace cxds
