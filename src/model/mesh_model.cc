#include "model/mesh_model.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/strings.h"
#include "model/mesh_kinds.h"
#include "model/object_ranges.h"
#include "model/service_host.h"
#include "protocol/resource.h"

namespace cxds {

namespace {
// Of several objects claiming one host, istiod keeps the oldest: by metadata.creationTimestamp
// (unset counts as newest), then name, then namespace.
bool OlderFirst(const ObjectMeta& a_meta, const ConfigKey& a, const ObjectMeta& b_meta, const ConfigKey& b) {
  const absl::Time a_created = a_meta.creation_timestamp.value_or(absl::InfiniteFuture());
  const absl::Time b_created = b_meta.creation_timestamp.value_or(absl::InfiniteFuture());
  if (a_created != b_created) return a_created < b_created;
  return std::tie(a.name, a.namespace_name) < std::tie(b.name, b.namespace_name);
}
}  // namespace

// Istio resolves a short host relative to the object's namespace.
std::string ResolveHost(const std::string& host, const std::string& ns, const std::string& suffix) {
  if (host.find('.') != std::string::npos || host == "*") return host;
  return StrCat(host, ".", ns, ".svc.", suffix);
}

std::map<std::string, std::string> ResolveServiceAliases(const ObjectMap& objects, const std::string& domain_suffix) {
  std::map<std::string, std::string> direct;  // alias host -> its externalName
  for (const auto& [key, stored] : ObjectsOfKind(objects, kind::kService)) {
    const auto* svc = std::get_if<K8sService>(&stored->object);
    if (svc == nullptr || svc->external_name.empty()) continue;
    direct.emplace(StrCat(svc->meta.name, ".", svc->meta.namespace_name, ".svc.", domain_suffix), svc->external_name);
  }
  // Each chain is walked once: a walk stops at an alias already resolved (or known to loop), so
  // a long chain of aliases costs its length, not its square.
  std::map<std::string, std::optional<std::string>> resolved;  // nullopt: in a loop
  for (const auto& entry : direct) {
    if (resolved.contains(entry.first)) continue;
    std::vector<std::string> path{entry.first};
    std::set<std::string> on_path{entry.first};
    std::optional<std::string> end;
    std::string at = entry.second;
    for (;;) {
      if (auto known = resolved.find(at); known != resolved.end()) {
        end = known->second;
        break;
      }
      auto next = direct.find(at);
      if (next == direct.end()) {
        end = at;  // not an alias: the concrete host
        break;
      }
      if (!on_path.insert(at).second) break;  // a loop: every alias on the path is in it or leads into it
      path.push_back(at);
      at = next->second;
    }
    for (const std::string& alias : path) resolved[alias] = end;
  }
  std::map<std::string, std::string> out;
  for (auto& [alias, concrete] : resolved) {
    if (concrete.has_value()) out.emplace(alias, std::move(*concrete));
  }
  return out;
}

namespace {

// Whether a delegate's string match `leaf` is not within the root's `root` (either unset: it
// is). A regex cannot be compared, so one on either side conflicts with any match on the other.
bool StringMatchConflicts(const std::optional<StringMatch>& root, const std::optional<StringMatch>& leaf) {
  if (!root.has_value() || !leaf.has_value()) return false;
  // An empty one (a header's "present" match) has nothing a leaf could be within, as istiod reads it.
  if (root->value.empty()) return true;
  if (root->kind == StringMatch::Kind::kRegex || leaf->kind == StringMatch::Kind::kRegex) return true;
  if (root->kind == StringMatch::Kind::kExact) {
    return leaf->kind != StringMatch::Kind::kExact || leaf->value != root->value;
  }
  return !leaf->value.starts_with(root->value);  // under the root's prefix, as a prefix or an exact value
}

bool NamedMatchesConflict(const std::map<std::string, StringMatch>& root,
                          const std::map<std::string, StringMatch>& leaf) {
  return std::any_of(leaf.begin(), leaf.end(), [&](const auto& entry) {
    auto it = root.find(entry.first);
    return it != root.end() && StringMatchConflicts(it->second, entry.second);
  });
}

bool DelegateMatchConflicts(const HttpRoute::Match& root, const HttpRoute::Match& leaf) {
  if (StringMatchConflicts(root.uri, leaf.uri) || StringMatchConflicts(root.scheme, leaf.scheme) ||
      StringMatchConflicts(root.method, leaf.method) || StringMatchConflicts(root.authority, leaf.authority) ||
      NamedMatchesConflict(root.headers, leaf.headers) ||
      NamedMatchesConflict(root.without_headers, leaf.without_headers) ||
      NamedMatchesConflict(root.query_params, leaf.query_params)) {
    return true;
  }
  if (root.ignore_uri_case != leaf.ignore_uri_case) return true;
  if (root.port != 0 && leaf.port != 0 && root.port != leaf.port) return true;
  if (!root.source_namespace.empty() && leaf.source_namespace != root.source_namespace) return true;
  for (const auto& [label, value] : leaf.source_labels) {
    if (auto it = root.source_labels.find(label); it != root.source_labels.end() && it->second != value) return true;
  }
  if (root.gateways.empty() || leaf.gateways.empty()) return false;
  return std::any_of(leaf.gateways.begin(), leaf.gateways.end(), [&](const std::string& gateway) {
    return std::find(root.gateways.begin(), root.gateways.end(), gateway) == root.gateways.end();
  });
}

// `leaf` with the root's conditions where it sets none (named ones added, its own kept).
HttpRoute::Match MergeDelegateMatch(const HttpRoute::Match& root, HttpRoute::Match leaf) {
  for (auto [into, from] : {std::pair{&leaf.uri, &root.uri}, std::pair{&leaf.scheme, &root.scheme},
                            std::pair{&leaf.method, &root.method}, std::pair{&leaf.authority, &root.authority}}) {
    if (!into->has_value()) *into = *from;
  }
  leaf.headers.insert(root.headers.begin(), root.headers.end());
  leaf.without_headers.insert(root.without_headers.begin(), root.without_headers.end());
  leaf.query_params.insert(root.query_params.begin(), root.query_params.end());
  leaf.source_labels.insert(root.source_labels.begin(), root.source_labels.end());
  if (leaf.port == 0) leaf.port = root.port;
  if (leaf.source_namespace.empty()) leaf.source_namespace = root.source_namespace;
  if (leaf.gateways.empty()) leaf.gateways = root.gateways;
  if (leaf.stat_prefix.empty()) leaf.stat_prefix = root.stat_prefix;
  return leaf;
}

// How much of a route a merge copies (WithDelegates' bound): its settings and destinations.
size_t HeadersWeight(const HeaderManipulation& h) {
  return h.request.set.size() + h.request.add.size() + h.request.remove.size() + h.response.set.size() +
         h.response.add.size() + h.response.remove.size();
}

size_t CopyWeight(const HttpRoute& route) {
  size_t weight = 1 + HeadersWeight(route.headers);
  for (const HttpRouteDestination& d : route.route) weight += 1 + HeadersWeight(d.headers);
  for (const HttpRoute::Mirror& m : route.mirrors) weight += 1 + HeadersWeight(m.destination.headers);
  if (route.cors.has_value()) {
    weight += route.cors->allow_origins.size() + route.cors->allow_methods.size() + route.cors->allow_headers.size() +
              route.cors->expose_headers.size();
  }
  return weight;
}

// Matches with their conditions, each at least 1 (no match at all counts as one).
size_t MatchesWeight(const std::vector<HttpRoute::Match>& matches) {
  size_t weight = matches.empty() ? 1 : 0;
  for (const HttpRoute::Match& m : matches) {
    weight += 1 + m.headers.size() + m.without_headers.size() + m.query_params.size() + m.source_labels.size() +
              m.gateways.size();
  }
  return weight;
}

// istiod merges `mirror`, `mirrorPercentage`, `mirrorPercent` and `mirrors` each on its own:
// the delegate's where it sets one, else the root's. So a delegate's `mirror` without a
// percentage takes the root's percentage, a delegate's percentage applies to the root's
// `mirror`, and the merged route may have a `mirror` and `mirrors` both. `out` is the
// delegate's route (its hosts already resolved).
void MergeMirrors(const HttpRoute& root, HttpRoute& out) {
  if (!out.mirror_percentage.has_value()) out.mirror_percentage = root.mirror_percentage;
  if (!out.mirror_percent.has_value()) out.mirror_percent = root.mirror_percent;
  const auto single_of = [](const HttpRoute& route) -> const HttpRoute::Mirror* {
    for (const HttpRoute::Mirror& m : route.mirrors) {
      if (m.single) return &m;
    }
    return nullptr;
  };
  const auto listed_of = [](const HttpRoute& route) {
    std::vector<HttpRoute::Mirror> listed;
    for (const HttpRoute::Mirror& m : route.mirrors) {
      if (!m.single) listed.push_back(m);
    }
    return listed;
  };
  std::vector<HttpRoute::Mirror> merged;
  const HttpRoute::Mirror* single = single_of(out);
  if (single == nullptr) single = single_of(root);
  if (single != nullptr) {
    merged.push_back(*single);
    merged.back().percent = out.SingleMirrorPercent();
    merged.back().in_millionths = out.mirror_percentage.has_value();
  }
  std::vector<HttpRoute::Mirror> listed = listed_of(out);
  if (listed.empty()) listed = listed_of(root);
  merged.insert(merged.end(), listed.begin(), listed.end());
  out.mirrors = std::move(merged);
}

}  // namespace

std::optional<HttpRoute> MergeDelegateRoute(const HttpRoute& root, const HttpRoute& delegate,
                                            const std::string& delegate_namespace, const std::string& domain_suffix) {
  HttpRoute out = delegate;
  // Its destinations are named in its own namespace; the merged route is served in the root's.
  for (HttpRouteDestination& d : out.route) d.host = ResolveHost(d.host, delegate_namespace, domain_suffix);
  for (HttpRoute::Mirror& m : out.mirrors) {
    m.destination.host = ResolveHost(m.destination.host, delegate_namespace, domain_suffix);
  }
  if (!root.match.empty() && !delegate.match.empty()) {
    out.match.clear();
    for (const HttpRoute::Match& leaf : delegate.match) {
      bool within_one = false;
      for (const HttpRoute::Match& root_match : root.match) {
        if (DelegateMatchConflicts(root_match, leaf)) continue;
        out.match.push_back(MergeDelegateMatch(root_match, leaf));
        within_one = true;
      }
      if (!within_one) return std::nullopt;
    }
  } else if (delegate.match.empty()) {
    out.match = root.match;
  }
  if (out.name.empty()) {
    out.name = root.name;
  } else if (!root.name.empty()) {
    out.name = StrCat(root.name, "-", out.name);
  }
  HttpRoute taken = DelegatingRouteTaken(root, delegate);
  if (!taken.headers.empty()) out.headers = std::move(taken.headers);
  if (taken.cors.has_value()) out.cors = std::move(taken.cors);
  if (taken.fault.has_value()) out.fault = std::move(taken.fault);
  if (out.redirect.has_value() || out.direct_response.has_value()) return out;
  if (taken.rewrite.has_value()) out.rewrite = std::move(taken.rewrite);
  if (taken.timeout.has_value()) out.timeout = taken.timeout;
  if (taken.retries.has_value()) out.retries = std::move(taken.retries);
  MergeMirrors(root, out);
  return out;
}

HttpRoute DelegatingRouteTaken(const HttpRoute& root, const HttpRoute& delegate) {
  HttpRoute taken;
  if (delegate.headers.empty()) taken.headers = root.headers;
  if (!delegate.cors.has_value()) taken.cors = root.cors;
  // The fault filter runs before the route's action, so istiod's merged redirect or direct
  // response takes the root's fault too (a route written that way is refused, as by Istio).
  if (!delegate.fault.has_value()) taken.fault = root.fault;
  // A redirect or direct response sends nothing upstream: istiod applies none of these to it.
  if (delegate.redirect.has_value() || delegate.direct_response.has_value()) return taken;
  if (!delegate.rewrite.has_value()) taken.rewrite = root.rewrite;
  if (!delegate.timeout.has_value()) taken.timeout = root.timeout;
  if (!delegate.retries.has_value()) taken.retries = root.retries;
  taken.mirrors = root.mirrors;
  return taken;
}

Delegators DelegatorsOf(const ObjectMap& objects) {
  Delegators out;
  for (const auto& [key, stored] : ObjectsOfKind(objects, kind::kVirtualService)) {
    const auto* vs = std::get_if<VirtualService>(&stored->object);
    if (vs == nullptr || vs->hosts.empty()) continue;
    for (const HttpRoute& route : vs->http) {
      if (!route.delegate.has_value()) continue;
      const ConfigKey delegate_key{kind::kVirtualService, route.delegate->namespace_name, route.delegate->name};
      const auto it = objects.find(delegate_key);
      const auto* delegate = it == objects.end() ? nullptr : std::get_if<VirtualService>(&it->second->object);
      if (delegate == nullptr || !delegate->hosts.empty() ||
          !ExportRank(delegate->export_to, delegate_key.namespace_name, vs->meta.namespace_name).has_value()) {
        continue;
      }
      std::vector<const VirtualService*>& roots = out[delegate_key];
      if (roots.empty() || roots.back() != vs) roots.push_back(vs);
    }
  }
  return out;
}

std::vector<std::string> ServedNamespaces(const VirtualService& vs, const ConfigKey& key,
                                          const Delegators& delegators) {
  std::set<std::string> out;
  const auto add_own = [&](const VirtualService& v) {
    if (v.export_to.empty() || std::find(v.export_to.begin(), v.export_to.end(), "*") != v.export_to.end()) {
      out.insert(v.meta.namespace_name);
      return;
    }
    for (const std::string& to : v.export_to) {
      if (to != "~") out.insert(to == "." ? v.meta.namespace_name : to);
    }
  };
  if (!vs.hosts.empty()) {
    add_own(vs);
  } else if (auto it = delegators.find(key); it != delegators.end()) {
    for (const VirtualService* root : it->second) add_own(*root);
  }
  return {out.begin(), out.end()};
}

std::string GatewayHostName(const Gateway& gateway, const std::string& server_host, const std::string& vs_namespace,
                            const std::string& host) {
  const size_t slash = server_host.find('/');
  const std::string ns = server_host.substr(0, slash);
  const std::string allowed = server_host.substr(slash + 1);
  if (ns != "*" && vs_namespace != (ns == "." ? gateway.meta.namespace_name : ns)) return "";
  if (HostSubsetOf(host, allowed)) return host;
  if (HostSubsetOf(allowed, host)) return allowed;
  return "";
}

bool TcpRouteApplies(const TcpRoute& route, const VirtualService& vs, const std::string& gateway, uint32_t port) {
  if (route.match.empty()) return OpaqueMatchAt({}, vs, gateway);
  return std::any_of(route.match.begin(), route.match.end(), [&](const TcpRoute::Match& match) {
    return (match.port == 0 || match.port == port) && OpaqueMatchAt(match.gateways, vs, gateway);
  });
}

bool OpaqueMatchAt(const std::vector<std::string>& match_gateways, const VirtualService& vs,
                   const std::string& gateway) {
  const std::vector<std::string>& gateways = match_gateways.empty() ? vs.gateways : match_gateways;
  return std::find(gateways.begin(), gateways.end(), gateway) != gateways.end();
}

void ForEachDestination(const VirtualService& vs,
                        const std::function<void(const HttpRouteDestination&, const std::string&)>& fn) {
  for (size_t i = 0; i < vs.http.size(); ++i) {
    for (size_t j = 0; j < vs.http[i].route.size(); ++j) {
      fn(vs.http[i].route[j], StrCat("spec.http[", i, "].route[", j, "].destination"));
    }
    const HttpRoute& http = vs.http[i];
    size_t listed = 0;
    for (const HttpRoute::Mirror& m : http.mirrors) {
      fn(m.destination, m.single ? StrCat("spec.http[", i, "].mirror")
                                 : StrCat("spec.http[", i, "].mirrors[", listed++, "].destination"));
    }
  }
  for (size_t i = 0; i < vs.tcp.size(); ++i) {
    for (size_t j = 0; j < vs.tcp[i].route.size(); ++j) {
      fn(vs.tcp[i].route[j], StrCat("spec.tcp[", i, "].route[", j, "].destination"));
    }
  }
  for (size_t i = 0; i < vs.tls.size(); ++i) {
    for (size_t j = 0; j < vs.tls[i].route.size(); ++j) {
      fn(vs.tls[i].route[j], StrCat("spec.tls[", i, "].route[", j, "].destination"));
    }
  }
}

bool LabelsMatch(const LabelMap& selector, const LabelMap& labels) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

// A locality from labels, as istiod's GetLocalityLabel reads them: `topology.istio.io/locality`,
// else `istio-locality`, "region.zone.subzone" with dots (a label value cannot hold '/'); a
// value that has '/' is taken as it is.
std::string LabelLocality(const LabelMap& labels) {
  for (const char* key : {"topology.istio.io/locality", "istio-locality"}) {
    auto it = labels.find(key);
    if (it == labels.end()) continue;
    std::string locality = it->second;
    // Kubernetes refuses a label value over 63 characters; one longer than a locality may be
    // (253, as `spec.locality` is validated) is taken as none, so that no part of an endpoint's
    // locality is longer than that (a proxy's longer part then matches none: NodeLocality).
    if (locality.size() > 253) return "";
    if (locality.find('/') == std::string::npos) std::replace(locality.begin(), locality.end(), '.', '/');
    return locality;
  }
  return "";
}

// A WorkloadEntry's or inline endpoint's: its `locality`, else its labels', as istiod falls back.
std::string WorkloadLocality(const WorkloadEndpoint& w) {
  return w.locality.empty() ? LabelLocality(w.labels) : w.locality;
}

namespace {

bool SameExceptEndpoints(const ServiceEntry& a, const ServiceEntry& b) {
  // A DNS ServiceEntry's endpoints are in its clusters (Envoy resolves them), not in EDS.
  if (a.resolution != ServiceEntry::Resolution::kStatic || b.resolution != ServiceEntry::Resolution::kStatic) {
    return false;
  }
  // exportTo decides which proxies see the service: not an endpoint change.
  return a.hosts == b.hosts && a.ports == b.ports && a.workload_selector == b.workload_selector &&
         a.meta.labels == b.meta.labels && a.export_to == b.export_to && a.addresses == b.addresses &&
         a.subject_alt_names == b.subject_alt_names;
}

bool IsEndpointKind(const std::string& object_kind) {
  return object_kind == kind::kEndpointSlice || object_kind == kind::kV1Endpoints ||
         object_kind == kind::kWorkloadEntry || object_kind == kind::kPod;
}

}  // namespace

std::string ObjectsVersion(const ObjectMap& objects, bool include_endpoint_kinds) {
  ContentHasher hasher;
  std::string line;
  for (auto it = objects.begin(); it != objects.end(); ++it) {
    if (!include_endpoint_kinds && IsEndpointKind(it->first.kind)) {
      it = std::prev(ObjectsOfKind(objects, it->first.kind).end());  // past the whole kind
      continue;
    }
    const auto& [key, stored] = *it;
    line.clear();
    absl::StrAppend(&line, key.kind, "/", key.namespace_name, "/", key.name, "=", stored->content_hash, "\n");
    hasher.Update(line);
  }
  return hasher.Finish().substr(0, 16);
}

MeshContext::MeshContext(std::string version, uint64_t sequence, absl::Time created,
                         std::shared_ptr<const ObjectMap> objects, const std::string& domain_suffix,
                         const std::string& root_namespace)
    : PushContext(std::move(version), sequence, created), objects_(std::move(objects)), domain_suffix_(domain_suffix) {
  // A host defined twice is served from the last definition in key order (kind, namespace,
  // name): a ServiceEntry over a Service of the same host.
  const auto define = [&](ServiceInfo info) {
    auto it = services_.find(info.host);
    if (it == services_.end()) {
      services_.emplace_hint(it, info.host, std::move(info));
      return;
    }
    const std::string& host = it->first;
    const ConfigKey& key = info.key;
    findings_.push_back({it->second.key, "", "pilot_duplicate_envoy_clusters",
                         StrCat("host ", host, " is also defined by ", key.kind, " ", key.namespace_name, "/", key.name,
                                ", which is served for it")});
    it->second = std::move(info);
  };
  struct Claim {
    const VirtualService* vs;
    ConfigKey key;
    size_t host_index;
  };
  std::map<std::string, std::vector<Claim>> claims;  // resolved host -> VirtualServices naming it
  // Kind by kind ("Service" before "ServiceEntry", as in key order): the endpoint kinds, most of
  // a big mesh's objects, are never visited.
  for (const auto& [key, stored] : ObjectsOfKind(*objects_, kind::kService)) {
    if (const auto* svc = std::get_if<K8sService>(&stored->object); svc != nullptr && svc->external_name.empty()) {
      define(ServiceInfo{StrCat(svc->meta.name, ".", svc->meta.namespace_name, ".svc.", domain_suffix_),
                         svc->meta.namespace_name, svc->ports, key, ServiceEntry::Resolution::kStatic,
                         std::span<const WorkloadEndpoint>{}, svc->export_to});
      if (!svc->export_to.empty() && svc->export_to != std::vector<std::string>{"*"}) exports_restricted_ = true;
    }
  }
  for (const auto& [key, stored] : ObjectsOfKind(*objects_, kind::kServiceEntry)) {
    if (const auto* se = std::get_if<ServiceEntry>(&stored->object)) {
      for (const std::string& host : se->hosts) {
        define(ServiceInfo{host, se->meta.namespace_name, se->ports, key, se->resolution,
                           se->resolution != ServiceEntry::Resolution::kStatic
                               ? std::span<const WorkloadEndpoint>(se->endpoints)
                               : std::span<const WorkloadEndpoint>{},
                           se->export_to, se->addresses, se->subject_alt_names});
      }
      if (!se->export_to.empty() && !(se->export_to.size() == 1 && se->export_to[0] == "*")) {
        exports_restricted_ = true;
      }
    }
  }
  ServeAliases(ResolveServiceAliases(*objects_, domain_suffix_));
  for (const auto& [key, stored] : ObjectsOfKind(*objects_, kind::kGateway)) {
    if (const auto* gw = std::get_if<Gateway>(&stored->object)) {
      gateways_[StrCat(gw->meta.namespace_name, "/", gw->meta.name)] = gw;
    }
  }
  std::map<std::string, std::vector<Claim>> bound;  // gateway -> VirtualServices bound to it
  std::set<ConfigKey> delegates_used;
  size_t delegation_budget = kMaxDelegatedRoutesAndMatches;
  for (const auto& [key, stored] : ObjectsOfKind(*objects_, kind::kVirtualService)) {
    const auto* original = std::get_if<VirtualService>(&stored->object);
    // A delegate (no hosts) is served only inside the VirtualServices that delegate to it.
    if (original == nullptr || original->hosts.empty()) continue;
    if (const VirtualService* vs = WithDelegates(*original, key, delegates_used, delegation_budget)) {
      const bool narrow = !vs->export_to.empty() && vs->export_to != std::vector<std::string>{"*"};
      for (const std::string& gateway : vs->gateways) {
        if (gateway == "mesh") continue;
        bound[gateway].push_back({vs, key, 0});
        gateway_virtual_services_vary_by_namespace_ = gateway_virtual_services_vary_by_namespace_ || narrow;
      }
      if (std::find(vs->gateways.begin(), vs->gateways.end(), "mesh") == vs->gateways.end()) continue;
      virtual_services_vary_by_namespace_ = virtual_services_vary_by_namespace_ || narrow;
      for (size_t i = 0; i < vs->hosts.size(); ++i) {
        claims[ResolveHost(vs->hosts[i], vs->meta.namespace_name, domain_suffix_)].push_back({vs, key, i});
      }
    }
  }
  for (const auto& [key, stored] : ObjectsOfKind(*objects_, kind::kVirtualService)) {
    const auto* vs = std::get_if<VirtualService>(&stored->object);
    if (vs == nullptr || !vs->hosts.empty() || delegates_used.contains(key)) continue;
    findings_.push_back(
        {key, "", "cxds_delegate_unused",
         StrCat("no VirtualService with hosts delegates to this one (http[].delegate naming ", key.namespace_name, "/",
                key.name, ", in a namespace it is exported to): its routes are not served")});
  }
  for (auto& [gateway, list] : bound) {
    std::stable_sort(list.begin(), list.end(),
                     [](const Claim& a, const Claim& b) { return OlderFirst(a.vs->meta, a.key, b.vs->meta, b.key); });
    auto& served = gateway_virtual_services_[gateway];
    for (const Claim& claim : list) served.push_back(claim.vs);
  }
  // Oldest first (metadata.creationTimestamp, then name), as istiod orders them: of several
  // that could apply to a proxy, the oldest does.
  std::vector<std::pair<const Sidecar*, ConfigKey>> sidecars;
  for (const auto& [key, stored] : ObjectsOfKind(*objects_, kind::kSidecar)) {
    if (const auto* sc = std::get_if<Sidecar>(&stored->object)) sidecars.emplace_back(sc, key);
  }
  std::stable_sort(sidecars.begin(), sidecars.end(), [](const auto& a, const auto& b) {
    return OlderFirst(a.first->meta, a.second, b.first->meta, b.second);
  });
  for (const auto& sidecar : sidecars) {
    sidecars_.push_back(sidecar.first);
    if (root_default_sidecar_ == nullptr && sidecar.first->meta.namespace_name == root_namespace &&
        !sidecar.first->workload_selector.has_value()) {
      root_default_sidecar_ = sidecar.first;
    }
  }
  for (auto& [host, list] : claims) {
    std::stable_sort(list.begin(), list.end(),
                     [](const Claim& a, const Claim& b) { return OlderFirst(a.vs->meta, a.key, b.vs->meta, b.key); });
    std::vector<const VirtualService*>& candidates = virtual_services_[host];
    for (const Claim& claim : list) {
      if (std::find(candidates.begin(), candidates.end(), claim.vs) == candidates.end()) {
        candidates.push_back(claim.vs);  // (not twice: one VirtualService naming a host twice)
      }
    }
  }
  // A VirtualService no proxy gets for a host: one exported everywhere when an older one is too;
  // one exported to some namespaces when each of them gets another (VirtualServicesFor).
  for (const auto& [host, list] : claims) {
    std::set<const VirtualService*> said;
    for (const Claim& claim : list) {
      const VirtualService* vs = claim.vs;
      if (!said.insert(vs).second) continue;
      const VirtualService* winner = nullptr;
      if (ExportRank(vs->export_to, vs->meta.namespace_name, "").has_value()) {  // exported everywhere
        for (const VirtualService* other : virtual_services_[host]) {
          if (ExportRank(other->export_to, other->meta.namespace_name, "").has_value()) {
            winner = other;
            break;
          }
        }
      } else {
        for (const std::string& to : vs->export_to) {
          if (to == "~") break;
          const std::vector<const VirtualService*> got =
              VirtualServicesFor(host, to == "." ? vs->meta.namespace_name : to);
          winner = got.empty() ? nullptr : got.front();
          if (winner == vs) break;
        }
      }
      if (winner == nullptr || winner == vs) continue;
      findings_.push_back({claim.key, StrCat("spec.hosts[", claim.host_index, "]"), "pilot_vservice_dup_domain",
                           StrCat("host ", host, " is also a host of VirtualService ", winner->meta.namespace_name, "/",
                                  winner->meta.name,
                                  ", which is served for it instead (older, or first by name, or exported more "
                                  "narrowly to the proxies' namespace); these routes are not")});
    }
  }
  std::set<SourceCondition> conditions;
  const auto note_conditions = [&](const VirtualService& vs) {
    for (const HttpRoute& http : vs.http) {
      for (const HttpRoute::Match& match : http.match) {
        if (!match.gateways.empty() || (match.source_labels.empty() && match.source_namespace.empty())) continue;
        conditions.insert({match.source_labels, match.source_namespace});
      }
    }
    // (tcp and tls conditions choose sidecars only: at Gateways they are ignored, as by istiod.)
    for (const TcpRoute& tcp : vs.tcp) {
      for (const TcpRoute::Match& match : tcp.match) {
        if ((match.source_labels.empty() && match.source_namespace.empty()) ||
            !OpaqueMatchAt(match.gateways, vs, "mesh")) {
          continue;
        }
        conditions.insert({match.source_labels, match.source_namespace});
      }
    }
    for (const TlsRoute& tls : vs.tls) {
      for (const TlsRoute::Match& match : tls.match) {
        if ((match.source_labels.empty() && match.source_namespace.empty()) ||
            !OpaqueMatchAt(match.gateways, vs, "mesh")) {
          continue;
        }
        conditions.insert({match.source_labels, match.source_namespace});
      }
    }
  };
  for (const auto& [host, served] : virtual_services_) {
    for (const VirtualService* vs : served) note_conditions(*vs);
  }
  for (const auto& [gateway, served] : gateway_virtual_services_) {
    for (const VirtualService* vs : served) note_conditions(*vs);
  }
  source_conditions_.assign(conditions.begin(), conditions.end());
  destination_rules_ = MergeDestinationRules(*objects_, domain_suffix_, root_namespace);
  findings_.insert(findings_.end(), destination_rules_.findings.begin(), destination_rules_.findings.end());
  // A rule outside the namespace of a service it applies to reaches that service's proxies
  // by their namespace (its own, or the root namespace's for those without a rule); so does a
  // rule exported to fewer than all namespaces.
  rules_vary_by_namespace_ = destination_rules_.exports_restricted;
  for (const auto& [ns, rules] : destination_rules_.by_namespace) {
    for (const auto& [host, entry] : rules) {
      if (rules_vary_by_namespace_) break;
      if (!host.starts_with('*')) {
        const ServiceInfo* service = FindService(host);
        rules_vary_by_namespace_ = service != nullptr && service->namespace_name != ns;
        continue;
      }
      for (const auto& [service_host, service] : services_) {
        if (service.namespace_name != ns && HostSubsetOf(service_host, host)) {
          rules_vary_by_namespace_ = true;
          break;
        }
      }
    }
  }
  BuildOpaqueChains();
}

std::vector<const Gateway*> MeshContext::GatewaysFor(const LabelMap& labels) const {
  std::vector<const Gateway*> out;
  for (const auto& [name, gateway] : gateways_) {
    if (LabelsMatch(gateway->selector, labels)) out.push_back(gateway);
  }
  return out;
}

const Gateway* MeshContext::FindGateway(const std::string& name) const {
  auto it = gateways_.find(name);
  return it == gateways_.end() ? nullptr : it->second;
}

const K8sTlsSecret* MeshContext::FindSecret(const std::string& namespace_name, const std::string& name) const {
  auto it = objects_->find(ConfigKey{kind::kSecret, namespace_name, name});
  return it == objects_->end() ? nullptr : std::get_if<K8sTlsSecret>(&it->second->object);
}

std::vector<const VirtualService*> MeshContext::VirtualServicesOfGateway(const std::string& gateway,
                                                                         const std::string& proxy_namespace) const {
  auto it = gateway_virtual_services_.find(gateway);
  if (it == gateway_virtual_services_.end()) return {};
  if (!gateway_virtual_services_vary_by_namespace_) return it->second;
  std::vector<std::pair<int, const VirtualService*>> ranked;
  for (const VirtualService* vs : it->second) {
    const std::optional<int> rank = ExportRank(vs->export_to, vs->meta.namespace_name, proxy_namespace);
    if (rank.has_value()) ranked.emplace_back(*rank, vs);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const VirtualService*> out;
  for (const auto& [rank, vs] : ranked) out.push_back(vs);
  return out;
}

void MeshContext::BuildOpaqueChains() {
  std::set<uint32_t> http_ports;
  for (const auto& [host, service] : services_) {
    for (const ServicePort& port : service.ports) {
      if (IsHttpProtocol(port.protocol)) http_ports.insert(port.number);
    }
  }
  // Per port: the SNI names claimed so far ("" the catch-all) and by which host; the tls
  // route matches already made chains (a VirtualService may be served for several hosts).
  std::map<uint32_t, std::map<std::string, std::string>> claimed;
  // (the value: the index of the match's chain in opaque_chains_, or none if it was not added).
  std::map<uint32_t, std::map<std::pair<const TlsRoute*, size_t>, std::optional<size_t>>> matches_done;
  for (const auto& entry : services_) {
    // Not a structured binding: the lambdas below capture these (clang 14 refuses that).
    const std::string& host = entry.first;
    const ServiceInfo& service = entry.second;
    for (const ServicePort& port : service.ports) {
      if (IsHttpProtocol(port.protocol)) continue;
      if (http_ports.contains(port.number)) {
        findings_.push_back({service.key, "", "pilot_conflict_outbound_listener_tcp_over_current_http",
                             StrCat(port.protocol, " port ", port.number, " of ", host,
                                    " is not served to Envoy proxies: an HTTP service has port ", port.number)});
        continue;
      }
      auto& names = claimed[port.number];
      // Adds `chain` with the names of it no earlier chain has ("*" is every name: the
      // catch-all); `report(name, owner)` says what another host keeps. Returns its index.
      const auto add =
          [&](OpaqueChain chain,
              const std::function<void(const std::string&, const std::string&)>& report) -> std::optional<size_t> {
        std::vector<std::string> kept;
        bool catch_all = chain.server_names.empty();
        for (const std::string& name : chain.server_names) catch_all = catch_all || name == "*";
        for (const std::string& name : catch_all ? std::vector<std::string>{""} : chain.server_names) {
          // A chain for some proxies only (source conditions) takes a name no chain for all has
          // yet, and leaves it to later ones; one for proxies meeting none of them claims it.
          auto owner = names.find(name);
          if (owner == names.end()) {
            if (chain.source == nullptr) names.emplace(name, host);
            kept.push_back(name);
          } else if (owner->second != host) {
            report(name, owner->second);
          }  // (named twice for one host: the first chain has it, as Istio's first match)
        }
        if (kept.empty()) return std::nullopt;
        chain.server_names = catch_all ? std::vector<std::string>{} : kept;
        opaque_chains_[port.number].push_back(std::move(chain));
        return opaque_chains_[port.number].size() - 1;
      };
      const auto lost = [&](const std::string& name, const std::string& owner) {
        if (name.empty()) {
          findings_.push_back({service.key, "", "pilot_conflict_outbound_listener_tcp_over_current_tcp",
                               StrCat(port.protocol, " port ", port.number, " of ", host,
                                      " is not served to Envoy proxies: ", owner, " has port ", port.number)});
        } else {
          findings_.push_back({service.key, "", "pilot_conflict_outbound_listener_tcp_over_current_tcp",
                               StrCat(port.protocol, " port ", port.number, " of ", host,
                                      " is not served to Envoy proxies for SNI name ", name, ": ", owner,
                                      " has it on port ", port.number)});
        }
      };
      if (!IsTlsProtocol(port.protocol)) {
        // The catch-all, to the first tcp route of its VirtualService for the port, if any; for
        // proxies meeting their source conditions, a route before it (as istiod's sourceMatchTCP).
        OpaqueChain chain{host};
        for (const VirtualService* vs : VirtualServicesFor(host)) {
          for (const TcpRoute& route : vs->tcp) {
            if (chain.route != nullptr || !TcpRouteApplies(route, *vs, "mesh", port.number)) continue;
            std::vector<const TcpRoute::Match*> conditional;
            bool for_every_proxy = route.match.empty();
            for (const TcpRoute::Match& match : route.match) {
              if ((match.port != 0 && match.port != port.number) || !OpaqueMatchAt(match.gateways, *vs, "mesh")) {
                continue;
              }
              if (match.source_labels.empty() && match.source_namespace.empty()) {
                for_every_proxy = true;
              } else {
                conditional.push_back(&match);
              }
            }
            if (for_every_proxy) {
              chain.route = &route.route;
              chain.route_namespace = vs->meta.namespace_name;
            } else {
              chain.for_sources.push_back({&route.route, vs->meta.namespace_name, std::move(conditional)});
            }
          }
        }
        add(std::move(chain), lost);
        continue;
      }
      // TLS and HTTPS, as istiod's sidecar outbound chains: each tls route match for the port
      // (sniHosts to its destinations), else the host's own name to its cluster. A match with
      // source conditions is for the proxies meeting them (Istio's matchTLS): its chain claims no
      // name from later chains, which a proxy meeting it has after it (a name a proxy has twice
      // goes to its first chain: ChooseOpaqueChains); the host's own chain is then for proxies
      // meeting none of the host's matches, unless one without conditions routes it.
      bool routed = false;
      std::vector<const TlsRoute::Match*> conditional;
      for (const VirtualService* vs : VirtualServicesFor(host)) {
        for (size_t i = 0; i < vs->tls.size(); ++i) {
          const TlsRoute& route = vs->tls[i];
          for (size_t j = 0; j < route.match.size(); ++j) {
            const TlsRoute::Match& match = route.match[j];
            if ((match.port != 0 && match.port != port.number) || !OpaqueMatchAt(match.gateways, *vs, "mesh")) {
              continue;
            }
            const bool has_source = !match.source_labels.empty() || !match.source_namespace.empty();
            if (has_source) {
              conditional.push_back(&match);
            } else {
              routed = true;
            }
            if (auto done = matches_done[port.number].find({&route, j}); done != matches_done[port.number].end()) {
              // A VirtualService of several hosts: its match's chain is there for a proxy seeing any.
              if (done->second.has_value()) opaque_chains_[port.number][*done->second].also_hosts.push_back(host);
              continue;
            }
            const ConfigKey vs_key{kind::kVirtualService, vs->meta.namespace_name, vs->meta.name};
            OpaqueChain chain{host, match.sni_hosts, &route.route, vs->meta.namespace_name};
            if (has_source) chain.source = &match;
            matches_done[port.number][{&route, j}] =
                add(std::move(chain), [&](const std::string& name, const std::string& owner) {
                  findings_.push_back({vs_key, StrCat("spec.tls[", i, "].match[", j, "].sniHosts"),
                                       "pilot_conflict_outbound_listener_tcp_over_current_tcp",
                                       StrCat("SNI name ", name.empty() ? "*" : name, " on port ", port.number,
                                              " is not routed by this match for Envoy proxies: ", owner,
                                              " has it on port ", port.number)});
                });
          }
        }
      }
      if (!routed) {
        // Its aliases' names too, as istiod's SNI hosts (for every proxy that sees the host,
        // whether or not it sees the alias: a chain is per port, not per proxy).
        OpaqueChain own{host, {host}};
        for (const ServiceAlias* alias : AliasesOf(host)) own.server_names.push_back(alias->alias.host);
        own.unless = std::move(conditional);
        add(std::move(own), lost);
      }
    }
  }
}

const VirtualService* MeshContext::WithDelegates(const VirtualService& vs, const ConfigKey& key,
                                                 std::set<ConfigKey>& used, size_t& budget) {
  if (std::none_of(vs.http.begin(), vs.http.end(), [](const HttpRoute& h) { return h.delegate.has_value(); })) {
    return &vs;
  }
  VirtualService& merged = merged_virtual_services_.emplace_back(vs);
  merged.http.clear();
  const std::string vs_name = StrCat(key.namespace_name, "/", key.name);
  size_t own_budget = kMaxDelegatedPerVirtualService;
  for (size_t i = 0; i < vs.http.size(); ++i) {
    const HttpRoute& root = vs.http[i];
    if (!root.delegate.has_value()) {
      merged.http.push_back(root);
      merged.http.back().origin = HttpRoute::Origin{vs_name, i};
      continue;
    }
    const ConfigKey delegate_key{kind::kVirtualService, root.delegate->namespace_name, root.delegate->name};
    const auto it = objects_->find(delegate_key);
    const auto* delegate = it == objects_->end() ? nullptr : std::get_if<VirtualService>(&it->second->object);
    const std::string field = StrCat("spec.http[", i, "].delegate");
    const std::string named = StrCat(delegate_key.namespace_name, "/", delegate_key.name);
    if (delegate == nullptr || !delegate->hosts.empty()) {
      findings_.push_back({key, field, "IST0101",
                           StrCat("VirtualService ", named,
                                  delegate == nullptr ? " does not exist" : " has hosts, so it is not a delegate",
                                  ": this route is not served, as in istiod")});
      continue;
    }
    if (!ExportRank(delegate->export_to, delegate_key.namespace_name, vs.meta.namespace_name).has_value()) {
      findings_.push_back({key, field, "IST0101",
                           StrCat("VirtualService ", named, " is not exported to namespace ", vs.meta.namespace_name,
                                  ": this route is not served, as in istiod")});
      continue;
    }
    used.insert(delegate_key);
    // What a merge copies: both routes' settings, and each match of one merged with each of the
    // other's, with the conditions of both (MergeDelegateRoute).
    const size_t root_weight = CopyWeight(root);
    const size_t root_matches = std::max<size_t>(root.match.size(), 1);
    const size_t root_conditions = MatchesWeight(root.match);
    for (size_t j = 0; j < delegate->http.size(); ++j) {
      const HttpRoute& leaf = delegate->http[j];
      const size_t cost = root_weight + CopyWeight(leaf) + std::max<size_t>(leaf.match.size(), 1) * root_conditions +
                          root_matches * MatchesWeight(leaf.match);
      if (cost > budget || cost > own_budget) {
        findings_.push_back(
            {key, field, "cxds_delegate_bound",
             StrCat("merging the routes of ", named, " would copy more than ",
                    cost > own_budget
                        ? StrCat(kMaxDelegatedPerVirtualService, " route and match conditions for this VirtualService")
                        : StrCat(kMaxDelegatedRoutesAndMatches, " route and match conditions in all"),
                    ": the rest of this route's delegated routes are not served (cxds bounds the merge)")});
        break;
      }
      budget -= cost;
      own_budget -= cost;
      if (std::optional<HttpRoute> route =
              MergeDelegateRoute(root, delegate->http[j], delegate_key.namespace_name, domain_suffix_)) {
        merged.http.push_back(std::move(*route));
        merged.http.back().origin = HttpRoute::Origin{named, j, vs_name, i, &delegate->http[j], &root};
      } else {
        findings_.push_back({delegate_key, StrCat("spec.http[", j, "].match"), "cxds_delegate_conflict",
                             StrCat("a match conflicts with every match of spec.http[", i, "] of VirtualService ",
                                    key.namespace_name, "/", key.name,
                                    ", which delegates to this one (it is not within them): the route is not "
                                    "served there, as in istiod")});
      }
    }
  }
  return &merged;
}

const std::vector<MeshContext::OpaqueChain>& MeshContext::OpaqueChains(uint32_t port) const {
  static const std::vector<OpaqueChain> kNone;
  auto it = opaque_chains_.find(port);
  return it == opaque_chains_.end() ? kNone : it->second;
}

const ServiceInfo* MeshContext::FindService(const std::string& host) const {
  auto it = services_.find(host);
  return it == services_.end() ? nullptr : &it->second;
}

void MeshContext::ServeAliases(const std::map<std::string, std::string>& targets) {
  for (const auto& [key, stored] : ObjectsOfKind(*objects_, kind::kService)) {
    const auto* svc = std::get_if<K8sService>(&stored->object);
    if (svc == nullptr || svc->external_name.empty()) continue;
    std::string host = StrCat(svc->meta.name, ".", svc->meta.namespace_name, ".svc.", domain_suffix_);
    auto target = targets.find(host);
    if (target == targets.end()) {
      findings_.push_back({key, "spec.externalName", "cxds_alias_unserved",
                           StrCat("externalName ", svc->external_name,
                                  " leads into a loop of ExternalName Services (which DNS does not answer): nothing "
                                  "is served for the alias ",
                                  host)});
      continue;
    }
    if (const ServiceInfo* defined = FindService(host)) {
      findings_.push_back(
          {key, "", "cxds_alias_unserved",
           StrCat("host ", host, " is also defined by ", defined->key.kind, " ", defined->key.namespace_name, "/",
                  defined->key.name, ", which is served for it: this ExternalName Service is not")});
      continue;
    }
    if (FindService(target->second) == nullptr) {
      findings_.push_back(
          {key, "spec.externalName", "cxds_alias_unserved",
           StrCat(target->second == svc->external_name
                      ? StrCat("externalName ", target->second)
                      : StrCat("the host externalName leads to, ", target->second, ","),
                  " is not a host any Service or ServiceEntry defines: cxds serves nothing for the alias ", host,
                  " (clients resolve the name by DNS, outside the mesh's routes)")});
      continue;
    }
    if (!svc->export_to.empty() && svc->export_to != std::vector<std::string>{"*"}) exports_restricted_ = true;
    aliases_.emplace(host, ServiceAlias{ServiceInfo{host, svc->meta.namespace_name, svc->ports, key,
                                                    ServiceEntry::Resolution::kStatic,
                                                    std::span<const WorkloadEndpoint>{}, svc->export_to},
                                        target->second});
  }
  for (const auto& [host, alias] : aliases_) aliases_of_[alias.concrete].push_back(&alias);
  for (auto& [host, list] : aliases_of_) {
    std::sort(list.begin(), list.end(), [](const ServiceAlias* a, const ServiceAlias* b) {
      return std::tie(a->alias.namespace_name, a->alias.host) < std::tie(b->alias.namespace_name, b->alias.host);
    });
  }
}

const ServiceAlias* MeshContext::FindAlias(const std::string& host) const {
  auto it = aliases_.find(host);
  return it == aliases_.end() ? nullptr : &it->second;
}

const std::vector<const ServiceAlias*>& MeshContext::AliasesOf(const std::string& host) const {
  static const std::vector<const ServiceAlias*> kNone;
  auto it = aliases_of_.find(host);
  return it == aliases_of_.end() ? kNone : it->second;
}

std::string MeshContext::ConcreteHost(const std::string& host) const {
  auto it = aliases_.find(host);
  return it == aliases_.end() ? host : it->second.concrete;
}

std::optional<int> ExportRank(std::span<const std::string> export_to, const std::string& object_namespace,
                              const std::string& proxy_namespace) {
  if (export_to.empty()) return 2;
  std::optional<int> rank;
  for (const std::string& to : export_to) {
    if (to == "*") return 2;
    if (proxy_namespace.empty() || to == "~") continue;
    if ((to == "." || to == object_namespace) && proxy_namespace == object_namespace) return 0;
    if (to == proxy_namespace) rank = 1;
  }
  return rank;
}

std::vector<const VirtualService*> MeshContext::VirtualServicesFor(const std::string& host,
                                                                   const std::string& proxy_namespace) const {
  auto it = virtual_services_.find(host);
  if (it == virtual_services_.end() || it->second.empty()) return {};
  if (!virtual_services_vary_by_namespace_) return {it->second.front()};
  // The oldest of the best rank, as istiod's list (private, exported by name, public) deduped.
  const VirtualService* best = nullptr;
  int best_rank = 3;
  for (const VirtualService* vs : it->second) {
    const std::optional<int> rank = ExportRank(vs->export_to, vs->meta.namespace_name, proxy_namespace);
    if (rank.has_value() && *rank < best_rank) {
      best = vs;
      best_rank = *rank;
    }
  }
  return best == nullptr ? std::vector<const VirtualService*>{} : std::vector<const VirtualService*>{best};
}

const DestinationRule* MeshContext::DestinationRuleFor(const std::string& host, const std::string& proxy_namespace,
                                                       const LabelMap* proxy_labels) const {
  const ServiceInfo* service = FindService(host);
  const MergedDestinationRules::Entry* entry =
      destination_rules_.Lookup(host, proxy_namespace, service != nullptr ? service->namespace_name : "", proxy_labels);
  return entry != nullptr ? entry->rule : nullptr;
}

std::string MeshContext::RuleSelectorKey(const std::string& proxy_namespace, const LabelMap& proxy_labels) const {
  auto selectors = destination_rules_.selectors.find(proxy_namespace);
  if (selectors == destination_rules_.selectors.end()) return "";
  // The indices of the selectors met, so the key grows with what the proxy meets, not with the
  // namespace's rules ("s" alone: none met).
  std::string key = "s";
  for (size_t i = 0; i < selectors->second.size(); ++i) {
    if (LabelsMatch(selectors->second[i], proxy_labels)) absl::StrAppend(&key, key.size() > 1 ? "," : "", i);
  }
  return key;
}

namespace {

// Whether a rule exported to `export_to` (as written; empty: everywhere) reaches proxies of
// `proxy_namespace` from another namespace's exported rules ("" : those exported everywhere).
bool ExportedTo(const std::set<std::string>& export_to, const std::string& proxy_namespace) {
  return export_to.empty() || export_to.contains("*") ||
         (!proxy_namespace.empty() && export_to.contains(proxy_namespace));
}

// The rules of `proxy_namespace`'s own index for `host` (for the root namespace, those it keeps
// to itself), or null.
const std::vector<MergedDestinationRules::Entry>* LocalRules(const MergedDestinationRules& rules,
                                                             const std::string& host,
                                                             const std::string& proxy_namespace) {
  if (proxy_namespace == rules.root_namespace) return FindForHost(rules.root_local, host);
  if (proxy_namespace.empty()) return nullptr;
  auto in = rules.by_namespace.find(proxy_namespace);
  return in != rules.by_namespace.end() ? FindForHost(in->second, host) : nullptr;
}

}  // namespace

const MergedDestinationRules::Entry* MergedDestinationRules::Lookup(const std::string& host,
                                                                    const std::string& proxy_namespace,
                                                                    const std::string& service_namespace,
                                                                    const LabelMap* labels) const {
  // 1. The proxy's namespace's own rules. A proxy of the root namespace (a gateway, usually)
  // looks there only at rules exported to "." alone (istiod's rootNamespaceLocal): the root's
  // others are mesh-wide defaults, looked at last. Of several for the host, the last (istiod's
  // SidecarScope keeps the last without a workload selector).
  const std::vector<Entry>* local = LocalRules(*this, host, proxy_namespace);
  if (local != nullptr && !local->empty()) {
    static const LabelMap kNoLabels;
    const Entry* catch_all = nullptr;
    for (const Entry& entry : *local) {
      if (!entry.selector.has_value()) {
        catch_all = &entry;
      } else if (LabelsMatch(*entry.selector, labels != nullptr ? *labels : kNoLabels)) {
        return &entry;
      }
    }
    return catch_all;
  }
  // 2. The service's namespace's, then the root namespace's rules exported to the proxy's
  // namespace, among those of the most specific host that has any: when none of those is
  // exported to it, that namespace gives none (istiod looks no further there).
  for (const std::string* ns : {&service_namespace, &root_namespace}) {
    if (ns->empty()) continue;
    auto rules = exported.find(*ns);
    if (rules == exported.end()) continue;
    const std::vector<Entry>* entries = FindForHost(rules->second, host);
    if (entries == nullptr) continue;
    for (auto entry = entries->rbegin(); entry != entries->rend(); ++entry) {
      if (ExportedTo(entry->export_to, proxy_namespace)) return &*entry;
    }
  }
  return nullptr;
}

std::vector<const MergedDestinationRules::Entry*> MergedDestinationRules::LookupAny(
    const std::string& host, const std::string& proxy_namespace, const std::string& service_namespace) const {
  const std::vector<Entry>* local = LocalRules(*this, host, proxy_namespace);
  std::vector<const Entry*> out;
  if (local == nullptr || local->empty()) {
    if (const Entry* entry = Lookup(host, proxy_namespace, service_namespace)) out.push_back(entry);
    return out;
  }
  const Entry* catch_all = nullptr;
  for (const Entry& entry : *local) {
    if (!entry.selector.has_value()) {
      catch_all = &entry;
      continue;
    }
    // One whose every proxy an earlier selector takes first is no proxy's.
    const bool reachable = std::none_of(
        out.begin(), out.end(), [&](const Entry* earlier) { return LabelsMatch(*earlier->selector, *entry.selector); });
    if (reachable) out.push_back(&entry);
  }
  // An empty selector takes every proxy: then none gets the rule without one.
  const bool all_selected = std::any_of(out.begin(), out.end(), [](const Entry* e) { return e->selector->empty(); });
  if (catch_all != nullptr && !all_selected) out.push_back(catch_all);
  return out;
}

bool MergedDestinationRules::AnyFor(const std::string& host) const {
  const auto has = [&](const auto& by_host) { return FindForHost(by_host, host) != nullptr; };
  return has(root_local) ||
         std::any_of(by_namespace.begin(), by_namespace.end(), [&](const auto& in) { return has(in.second); }) ||
         std::any_of(exported.begin(), exported.end(), [&](const auto& in) { return has(in.second); });
}

std::vector<const MergedDestinationRules::Entry*> MergedDestinationRules::EntriesOf(const std::string& namespace_name,
                                                                                    const std::string& host) const {
  std::vector<const Entry*> out;
  const auto add = [&](const std::map<std::string, std::vector<Entry>>& by_host) {
    if (auto entries = by_host.find(host); entries != by_host.end()) {
      for (const Entry& entry : entries->second) out.push_back(&entry);
    }
  };
  if (auto rules = by_namespace.find(namespace_name); rules != by_namespace.end()) add(rules->second);
  if (namespace_name == root_namespace) add(root_local);
  if (auto rules = exported.find(namespace_name); rules != exported.end()) add(rules->second);
  return out;
}

namespace {

// Adds `rule` (exported to `export_to`, as written; "." for a rule with a workload selector) to
// `list`, the rules of one host in one of istiod's indexes, as istiod's enhanced merge does: into
// each rule exported alike, or to a (non-empty) subset of where it is exported, unless both have
// workload selectors that differ; as a rule of its own when the last it met could not take it,
// or when it met a rule exported more narrowly than itself with a selector on one side only.
void MergeInto(std::vector<MergedDestinationRules::Entry>& list, const DestinationRule* rule, const ConfigKey& key,
               const std::set<std::string>& export_to, const std::string& host, MergedDestinationRules& out) {
  bool separate = true;
  for (MergedDestinationRules::Entry& entry : list) {
    const bool alike = entry.export_to == export_to;
    const bool wider = !entry.export_to.empty() && std::includes(export_to.begin(), export_to.end(),
                                                                 entry.export_to.begin(), entry.export_to.end());
    if (!alike && !wider) {
      separate = true;
      continue;
    }
    const bool both_with = entry.selector.has_value() && rule->workload_selector.has_value();
    const bool both_without = !entry.selector.has_value() && !rule->workload_selector.has_value();
    if (both_with && *entry.selector != *rule->workload_selector) {
      separate = true;
      continue;
    }
    separate = !alike && !both_with && !both_without;
    if (entry.copy == nullptr) {
      entry.copy = &out.merged.emplace_back(*entry.rule);
      entry.rule = entry.copy;
    }
    for (size_t j = 0; j < rule->subsets.size(); ++j) {
      const auto& subset = rule->subsets[j];
      if (entry.subset_owners.try_emplace(subset.name, key).second) {
        entry.copy->subsets.push_back(subset);
      } else if (entry.subset_owners.at(subset.name) != key) {
        const ConfigKey& owner = entry.subset_owners.at(subset.name);
        out.findings.push_back(
            {key, StrCat("spec.subsets[", j, "].name"), "pilot_destrule_subsets",
             StrCat("subset \"", subset.name, "\" of ", host, " is also defined by ", owner.namespace_name, "/",
                    owner.name, ", whose definition is served; this one is not")});
      }
    }
    if (!entry.copy->traffic_policy.has_value() && rule->traffic_policy.has_value()) {
      entry.copy->traffic_policy = rule->traffic_policy;
      entry.policy_owner = key;
    }
  }
  if (!separate) return;
  MergedDestinationRules::Entry& entry = list.emplace_back();
  entry.rule = rule;
  entry.key = key;
  entry.policy_owner = key;
  entry.export_to = export_to;
  entry.selector = rule->workload_selector;
  for (const auto& subset : rule->subsets) entry.subset_owners.try_emplace(subset.name, key);
}

}  // namespace

MergedDestinationRules MergeDestinationRules(const ObjectMap& objects, const std::string& domain_suffix,
                                             const std::string& root_namespace) {
  struct Claim {
    const DestinationRule* rule;
    ConfigKey key;
  };
  // (namespace, resolved host) -> rules naming it
  std::map<std::pair<std::string, std::string>, std::vector<Claim>> claims;
  for (const auto& [key, object] : ObjectsOfKind(objects, kind::kDestinationRule)) {
    if (const auto* dr = std::get_if<DestinationRule>(&object->object)) {
      claims[{dr->meta.namespace_name, ResolveHost(dr->host, dr->meta.namespace_name, domain_suffix)}].push_back(
          {dr, key});
    }
  }
  MergedDestinationRules out;
  out.root_namespace = root_namespace;
  for (auto& [where, list] : claims) {
    const std::string& ns = where.first;
    const std::string& host = where.second;
    // Rules with a workload selector first, then oldest first, as istiod sorts them.
    std::stable_sort(list.begin(), list.end(), [](const Claim& a, const Claim& b) {
      if (a.rule->workload_selector.has_value() != b.rule->workload_selector.has_value()) {
        return a.rule->workload_selector.has_value();
      }
      return OlderFirst(a.rule->meta, a.key, b.rule->meta, b.key);
    });
    for (const Claim& claim : list) {
      // A rule with a workload selector is its namespace's alone, as istiod indexes it.
      const std::set<std::string> export_to =
          claim.rule->workload_selector.has_value()
              ? std::set<std::string>{"."}
              : std::set<std::string>(claim.rule->export_to.begin(), claim.rule->export_to.end());
      if (claim.rule->workload_selector.has_value()) {
        std::vector<LabelMap>& selectors = out.selectors[ns];
        if (std::find(selectors.begin(), selectors.end(), *claim.rule->workload_selector) == selectors.end()) {
          selectors.push_back(*claim.rule->workload_selector);
        }
      }
      if (!export_to.empty() && export_to != std::set<std::string>{"*"}) out.exports_restricted = true;
      // istiod's three indexes: the namespace's own (what its proxies look at first), its
      // exported rules, and the root namespace's rules for itself alone.
      if (export_to.empty() || export_to.contains("*") || export_to.contains(".") || export_to.contains(ns)) {
        MergeInto(out.by_namespace[ns][host], claim.rule, claim.key, export_to, host, out);
      }
      const bool private_only = export_to.size() == 1 && (export_to.contains(".") || export_to.contains(ns));
      if (!private_only) {
        MergeInto(out.exported[ns][host], claim.rule, claim.key, export_to, host, out);
      } else if (ns == root_namespace) {
        MergeInto(out.root_local[host], claim.rule, claim.key, export_to, host, out);
      }
    }
  }
  // A rule merged in two indexes is said once.
  std::set<std::pair<ConfigKey, std::string>> said;
  std::erase_if(out.findings, [&](const ConfigWarning& w) { return !said.emplace(w.key, w.field).second; });
  return out;
}

namespace {

bool DefinesSubset(const DestinationRule& rule, const std::string& subset) {
  return std::any_of(rule.subsets.begin(), rule.subsets.end(), [&](const auto& s) { return s.name == subset; });
}

// The namespace of the service of `host` in `objects`, as MeshContext serves it: of the
// ServiceEntry defining it, the last in key order (`entries`, filled at the first call), else a
// Kubernetes host's (NAME.NS.svc.SUFFIX), else "".
std::string ServiceNamespaceOf(const ObjectMap& objects, const std::string& host, const std::string& suffix,
                               std::optional<std::map<std::string, std::string>>& entries) {
  if (!entries.has_value()) {
    entries.emplace();
    for (const auto& [key, stored] : ObjectsOfKind(objects, kind::kServiceEntry)) {
      if (const auto* se = std::get_if<ServiceEntry>(&stored->object)) {
        for (const std::string& se_host : se->hosts) (*entries)[se_host] = se->meta.namespace_name;
      }
    }
  }
  if (auto it = entries->find(host); it != entries->end()) return it->second;
  if (const auto service = ServiceNameOfHost(host, suffix); service.has_value()) return std::string(service->second);
  return "";
}

// ResolveServiceAliases as a MeshContext of `objects` serves them: aliases whose own host no
// Service or ServiceEntry defines, of a host one does (ServeAliases).
std::map<std::string, std::string> ServedAliasTargets(const ObjectMap& objects, const std::string& suffix) {
  std::map<std::string, std::string> targets = ResolveServiceAliases(objects, suffix);
  if (targets.empty()) return targets;
  std::set<std::string> defined;
  for (const auto& [key, stored] : ObjectsOfKind(objects, kind::kService)) {
    const auto* svc = std::get_if<K8sService>(&stored->object);
    if (svc != nullptr && svc->external_name.empty()) {
      defined.insert(StrCat(svc->meta.name, ".", svc->meta.namespace_name, ".svc.", suffix));
    }
  }
  for (const auto& [key, stored] : ObjectsOfKind(objects, kind::kServiceEntry)) {
    if (const auto* se = std::get_if<ServiceEntry>(&stored->object)) defined.insert(se->hosts.begin(), se->hosts.end());
  }
  std::erase_if(targets,
                [&](const auto& entry) { return defined.contains(entry.first) || !defined.contains(entry.second); });
  return targets;
}

// The Services a route to `host` meets in `objects`, following ExternalName Services: each
// alias's Service, then the Service it leads to (present or not), at most 64.
std::vector<ConfigKey> AliasChain(const ObjectMap& objects, std::string host, const std::string& suffix) {
  std::vector<ConfigKey> chain;
  std::set<std::string> seen;
  while (chain.size() < 64 && seen.insert(host).second) {
    const auto service = ServiceNameOfHost(host, suffix);
    if (!service.has_value()) break;
    chain.push_back(ConfigKey{kind::kService, std::string(service->second), std::string(service->first)});
    auto it = objects.find(chain.back());
    const auto* svc = it == objects.end() ? nullptr : std::get_if<K8sService>(&it->second->object);
    if (svc == nullptr || svc->external_name.empty()) break;
    host = svc->external_name;
  }
  return chain;
}

}  // namespace

ReferenceCheck MeshReferenceCheck(std::string domain_suffix, std::string root_namespace) {
  return [suffix = std::move(domain_suffix), root = std::move(root_namespace)](const ObjectMap& candidate,
                                                                               const ObjectMap& current) {
    std::vector<ReferenceError> errors;
    const MergedDestinationRules rules = MergeDestinationRules(candidate, suffix, root);
    std::optional<MergedDestinationRules> before;               // when needed
    std::optional<std::map<std::string, std::string>> entries;  // ServiceEntry host -> namespace
    std::optional<std::map<std::string, std::string>> entries_before;
    std::optional<Delegators> delegators;  // when a delegate is checked
    // Served alias -> its host, when a subset is checked (in the served state when one fails).
    std::optional<std::map<std::string, std::string>> aliases;
    std::optional<std::map<std::string, std::string>> aliases_before;
    for (const auto& entry : candidate) {
      const ConfigKey& key = entry.first;  // (not a structured binding: lambdas capture it)
      const auto& object = entry.second;
      const auto* vs = std::get_if<VirtualService>(&object->object);
      if (vs == nullptr) continue;
      ForEachDestination(*vs, [&](const HttpRouteDestination& d, const std::string& field) {
        if (d.subset.empty()) return;
        // A route to an alias (an ExternalName Service) takes its concrete host's subsets.
        if (!aliases.has_value()) aliases = ServedAliasTargets(candidate, suffix);
        const std::string written = ResolveHost(d.host, vs->meta.namespace_name, suffix);
        const auto alias = aliases->find(written);
        const std::string host = alias != aliases->end() ? alias->second : written;
        // The rule proxies of each namespace the VirtualService is exported to get: its own when
        // exported everywhere (the namespace it is written for; proxies of other namespaces may
        // get another rule, as in Istio), else each it names ("~": none gets its routes).
        // A delegate's routes are served where those of the VirtualServices delegating to it are.
        if (vs->hosts.empty() && !delegators.has_value()) delegators = DelegatorsOf(candidate);
        static const Delegators kNone;  // (a VirtualService with hosts needs no delegators)
        const std::vector<std::string> namespaces =
            ServedNamespaces(*vs, key, delegators.has_value() ? *delegators : kNone);
        std::string ns;
        // A subset some proxy of the namespace gets (by a rule with a workload selector, or the
        // rule the others get) passes: which proxies route there is the config's to say.
        std::vector<const MergedDestinationRules::Entry*> candidates;
        bool defined = false;
        for (const std::string& candidate_ns : namespaces) {
          candidates = rules.LookupAny(host, candidate_ns, ServiceNamespaceOf(candidate, host, suffix, entries));
          ns = candidate_ns;
          defined = std::any_of(candidates.begin(), candidates.end(), [&](const MergedDestinationRules::Entry* entry) {
            return DefinesSubset(*entry->rule, d.subset);
          });
          if (!defined) break;
        }
        if (namespaces.empty() || defined) return;
        const MergedDestinationRules::Entry* rule = candidates.empty() ? nullptr : candidates.back();
        ReferenceError error;
        error.key = key;
        error.field = field + ".subset";
        const bool any_rule = rules.AnyFor(host);
        if (candidates.size() > 1) {
          std::vector<std::string> names;
          for (const auto* c : candidates) names.push_back(StrCat(c->key.namespace_name, "/", c->key.name));
          // Whether some proxy of the namespace gets none: only when every rule has a selector
          // and none of them is empty (an empty one takes every proxy).
          const bool catch_all = !candidates.back()->selector.has_value();
          const bool all_selected = std::any_of(candidates.begin(), candidates.end(), [](const auto* c) {
            return c->selector.has_value() && c->selector->empty();
          });
          error.message = StrCat(
              "subset \"", d.subset, "\" of ", host, " is not defined by any DestinationRule proxies of namespace ", ns,
              " get (", absl::StrJoin(names, ", "), ": by their workload selectors",
              catch_all      ? ", else the last"
              : all_selected ? ""
                             : ", or none",
              ")",
              ns == vs->meta.namespace_name
                  ? ""
                  : StrCat("; ", vs->hosts.empty() ? "a VirtualService delegating to this one is served there"
                                                   : "this VirtualService is exported to that namespace"));
        } else if (rule != nullptr) {
          error.message =
              StrCat("subset \"", d.subset, "\" is not defined by DestinationRule ", rule->key.namespace_name, "/",
                     rule->key.name, " (host ", host,
                     ns == vs->meta.namespace_name
                         ? ")"
                         : StrCat(", the rule proxies of namespace ", ns, " get, ",
                                  vs->hosts.empty() ? "where a VirtualService delegating to this one is served)"
                                                    : "to which this VirtualService is exported)"));
        } else if (any_rule) {
          error.message = StrCat("subset \"", d.subset, "\" of ", host,
                                 " is not defined: no DestinationRule for the host applies to proxies of namespace ",
                                 ns, " (rules are looked up in the proxy's namespace, the service's, then ", root,
                                 ", those of other namespaces only when exported to it)");
        } else {
          error.message =
              StrCat("subset \"", d.subset, "\" of ", host, " is not defined: no DestinationRule has host ", host);
        }
        // The rule that defined the subset in the served state, if any, is what changed.
        if (!before.has_value()) before = MergeDestinationRules(current, suffix, root);
        if (!aliases_before.has_value()) aliases_before = ServedAliasTargets(current, suffix);
        const auto alias_before = aliases_before->find(written);
        const std::string host_before = alias_before != aliases_before->end() ? alias_before->second : written;
        // What changed: a rule now served in its place that is itself new or edited (a newer one
        // exported differently), else the rule that defined the subset in the served state
        // (deleted, or narrowed: reverting it keeps the subset), else the rule served now.
        // Of the rules some proxy of the namespace got (workload selectors), the one that defined it.
        const MergedDestinationRules::Entry* old = nullptr;
        for (const auto* was :
             before->LookupAny(host_before, ns, ServiceNamespaceOf(current, host_before, suffix, entries_before))) {
          if (old == nullptr || (!old->subset_owners.contains(d.subset) && was->subset_owners.contains(d.subset))) {
            old = was;
          }
        }
        const auto edited = [&](const ConfigKey& k) {
          auto now = candidate.find(k);
          auto was = current.find(k);
          return now != candidate.end() &&
                 (was == current.end() || was->second->content_hash != now->second->content_hash);
        };
        const auto taken_over = std::find_if(candidates.begin(), candidates.end(), [&](const auto* c) {
          return (old == nullptr || old->key != c->key) && edited(c->key);
        });
        const bool owned = old != nullptr && old->subset_owners.contains(d.subset);
        // The rule that defined it, when that is what changed (deleted, or edited), comes first:
        // another rule edited in the same step did not take the subset away.
        if (owned &&
            (!candidate.contains(old->subset_owners.at(d.subset)) || edited(old->subset_owners.at(d.subset)))) {
          error.target = old->subset_owners.at(d.subset);
        } else if (taken_over != candidates.end()) {
          error.target = (*taken_over)->key;
        } else if (owned) {
          error.target = old->subset_owners.at(d.subset);
        } else if (rule != nullptr) {
          error.target = rule->key;
        }
        // A delegate's routes reach `ns` through the VirtualServices delegating to it: when
        // neither it nor the rule changed, a new or edited one of those is what brought them.
        if (vs->hosts.empty() && !edited(key) && !edited(error.target)) {
          if (auto roots = delegators->find(key); roots != delegators->end()) {
            for (const VirtualService* root : roots->second) {
              const ConfigKey root_key{kind::kVirtualService, root->meta.namespace_name, root->meta.name};
              const std::vector<std::string> served = ServedNamespaces(*root, root_key, {});
              if (edited(root_key) && std::find(served.begin(), served.end(), ns) != served.end()) {
                error.target = root_key;
                break;
              }
            }
          }
        }
        // A route to an alias that now leads to another host (or no longer to one): the Service
        // of its chain that changed (added, edited or removed) is what changed.
        if (host != host_before) {
          // What a Service of the chain is to a route: absent, a host of its own (""), or an alias.
          const auto role = [](const ObjectMap& objects, const ConfigKey& service) -> std::optional<std::string> {
            auto it = objects.find(service);
            const auto* svc = it == objects.end() ? nullptr : std::get_if<K8sService>(&it->second->object);
            if (svc == nullptr) return std::nullopt;
            return svc->external_name;
          };
          std::vector<ConfigKey> chain = AliasChain(candidate, written, suffix);
          const std::vector<ConfigKey> chain_before = AliasChain(current, written, suffix);
          chain.insert(chain.end(), chain_before.begin(), chain_before.end());
          std::optional<ConfigKey> moved_by;
          for (const ConfigKey& service : chain) {
            if (role(candidate, service) != role(current, service)) {
              moved_by = service;
              break;
            }
          }
          // Else a ServiceEntry that defines (or defined) a host on the way: one taking an alias's
          // own host, or the host it leads to.
          for (const ObjectMap* side : {&candidate, &current}) {
            for (const auto& [entry_key, stored] : ObjectsOfKind(*side, kind::kServiceEntry)) {
              if (moved_by.has_value()) break;
              const auto* se = std::get_if<ServiceEntry>(&stored->object);
              if (se == nullptr || (!edited(entry_key) && candidate.contains(entry_key))) continue;
              for (const std::string& defined : se->hosts) {
                if (defined == written || defined == host || defined == host_before ||
                    std::any_of(chain.begin(), chain.end(), [&](const ConfigKey& service) {
                      return defined == StrCat(service.name, ".", service.namespace_name, ".svc.", suffix);
                    })) {
                  moved_by = entry_key;
                  break;
                }
              }
            }
          }
          if (moved_by.has_value()) error.target = *moved_by;
        }
        errors.push_back(std::move(error));
      });
    }
    return errors;
  };
}

MeshModel::MeshModel(ConfigStore& store, std::string domain_suffix, std::string root_namespace, std::string cluster_id)
    : store_(store),
      domain_suffix_(std::move(domain_suffix)),
      root_namespace_(std::move(root_namespace)),
      cluster_id_(std::move(cluster_id)) {}

std::vector<std::string> MeshModel::HostsOf(const MeshObject& object) const {
  if (const auto* svc = std::get_if<K8sService>(&object)) {
    return {StrCat(svc->meta.name, ".", svc->meta.namespace_name, ".svc.", domain_suffix_)};
  }
  if (const auto* se = std::get_if<ServiceEntry>(&object)) return se->hosts;
  if (const auto* slice = std::get_if<EndpointSlice>(&object)) {
    return {StrCat(slice->service_name, ".", slice->meta.namespace_name, ".svc.", domain_suffix_)};
  }
  if (const auto* endpoints = std::get_if<K8sEndpoints>(&object)) {
    return {StrCat(endpoints->meta.name, ".", endpoints->meta.namespace_name, ".svc.", domain_suffix_)};
  }
  return {};
}

PushRequest MeshModel::OnUpdate(const ConfigStore::Update& update) {
  PushRequest request;
  const std::shared_ptr<const ObjectMap> objects = store_.Snapshot();
  // The services selecting a WorkloadEntry: ServiceEntries by workloadSelector, Services by
  // selector, in its namespace.
  auto endpoint_keys_for_workload = [&](const WorkloadEntry& we) {
    // The service kinds' ranges of its namespace only (keys sort by kind, then namespace).
    for (const std::string_view service_kind :
         {std::string_view(kind::kService), std::string_view(kind::kServiceEntry)}) {
      for (const auto& [key, stored] : ObjectsOfKindIn(*objects, service_kind, we.meta.namespace_name)) {
        if (const auto* se = std::get_if<ServiceEntry>(&stored->object)) {
          if (!se->workload_selector.has_value() || !SelectsWorkload(*se->workload_selector, we.spec, cluster_id_)) {
            continue;
          }
          for (const std::string& host : se->hosts) {
            request.configs.insert({kind::kEndpoints, se->meta.namespace_name, host});
          }
        } else if (const auto* svc = std::get_if<K8sService>(&stored->object)) {
          if (svc->selector.empty() || !svc->external_name.empty() ||
              !SelectsWorkload(svc->selector, we.spec, cluster_id_)) {
            continue;
          }
          request.configs.insert({kind::kEndpoints, svc->meta.namespace_name, HostsOf(stored->object).front()});
        }
      }
    }
  };
  // Changed Pods (old and new sides), gathered first: the slices standing for any of them (by
  // targetRef, or by address in the slice's namespace) are found in one pass after the loop.
  std::set<std::pair<std::string, std::string>> changed_pods;     // namespace, name
  std::set<std::pair<std::string, std::string>> changed_pod_ips;  // namespace, IP
  auto note_pod = [&](const K8sPod& pod) {
    changed_pods.insert({pod.meta.namespace_name, pod.meta.name});
    for (const std::string& ip : pod.ips) changed_pod_ips.insert({pod.meta.namespace_name, ip});
  };
  for (const auto& [key, change] : update.changed) {
    const auto& [before, after] = change;
    const MeshObject& any = after != nullptr ? after->object : before->object;
    const std::string& ns = key.namespace_name;
    if (std::holds_alternative<EndpointSlice>(any) || std::holds_alternative<K8sEndpoints>(any)) {
      for (const auto* side : {before.get(), after.get()}) {
        if (side == nullptr) continue;
        for (const std::string& host : HostsOf(side->object)) request.configs.insert({kind::kEndpoints, ns, host});
      }
    } else if (std::holds_alternative<WorkloadEntry>(any)) {
      for (const auto* side : {before.get(), after.get()}) {
        if (side != nullptr) endpoint_keys_for_workload(std::get<WorkloadEntry>(side->object));
      }
    } else if (std::holds_alternative<K8sPod>(any)) {
      for (const auto* side : {before.get(), after.get()}) {
        if (side != nullptr) note_pod(std::get<K8sPod>(side->object));
      }
    } else if (std::holds_alternative<ServiceEntry>(any) || std::holds_alternative<K8sService>(any)) {
      const bool endpoints_only =
          before != nullptr && after != nullptr && std::holds_alternative<ServiceEntry>(any) &&
          SameExceptEndpoints(std::get<ServiceEntry>(before->object), std::get<ServiceEntry>(after->object));
      for (const auto* side : {before.get(), after.get()}) {
        if (side == nullptr) continue;
        for (const std::string& host : HostsOf(side->object)) {
          request.configs.insert({endpoints_only ? kind::kEndpoints : kind::kServiceEntry, ns, host});
        }
      }
    } else if (const auto* dr = std::get_if<DestinationRule>(&any)) {
      // Keyed by host alone: a cluster depends on whatever rule names its host. A wildcard
      // rule ("*.mesh.local") is keyed by every service host under it, which it may apply to.
      const auto rule_keys = [&](const std::string& rule_host) {
        request.configs.insert({kind::kDestinationRule, "", rule_host});
        if (!rule_host.starts_with('*')) return;
        // The service kinds' ranges only: a big mesh's endpoint objects are never visited.
        for (const std::string_view service_kind :
             {std::string_view(kind::kService), std::string_view(kind::kServiceEntry)}) {
          for (const auto& entry : ObjectsOfKind(*objects, service_kind)) {
            for (const std::string& host : HostsOf(entry.second->object)) {
              if (HostSubsetOf(host, rule_host)) request.configs.insert({kind::kDestinationRule, "", host});
            }
          }
        }
      };
      rule_keys(ResolveHost(dr->host, ns, domain_suffix_));
      if (before != nullptr && after != nullptr) {
        const auto& old_dr = std::get<DestinationRule>(before->object);
        rule_keys(ResolveHost(old_dr.host, ns, domain_suffix_));
      }
    } else {
      request.configs.insert(key);  // VirtualService, Sidecar, Gateway
    }
  }
  if (!changed_pods.empty()) {
    const auto stands_for = [&](const EndpointSlice& slice) {
      return std::any_of(slice.endpoints.begin(), slice.endpoints.end(), [&](const auto& e) {
        if (!e.pod_name.empty()) return changed_pods.contains({e.pod_namespace, e.pod_name});
        return std::any_of(e.addresses.begin(), e.addresses.end(), [&](const std::string& a) {
          return changed_pod_ips.contains({slice.meta.namespace_name, a});
        });
      });
    };
    for (const auto& [key, stored] : ObjectsOfKind(*objects, kind::kEndpointSlice)) {
      const auto* slice = std::get_if<EndpointSlice>(&stored->object);
      if (slice != nullptr && stands_for(*slice)) {
        request.configs.insert({kind::kEndpoints, key.namespace_name, HostsOf(stored->object).front()});
      }
    }
    for (const auto& [key, stored] : ObjectsOfKind(*objects, kind::kV1Endpoints)) {
      const auto* endpoints = std::get_if<K8sEndpoints>(&stored->object);
      if (endpoints != nullptr && std::any_of(endpoints->mirrored.begin(), endpoints->mirrored.end(), stands_for)) {
        request.configs.insert({kind::kEndpoints, key.namespace_name, HostsOf(stored->object).front()});
      }
    }
  }
  // The workloads proxies may be: what changed among them reaches those proxies in full
  // (istiod's ProxyUpdate), through Workload keys, which leave the push endpoint-only.
  const bool workloads_touched = std::any_of(update.changed.begin(), update.changed.end(), [](const auto& change) {
    const std::string& changed_kind = change.first.kind;
    return changed_kind == kind::kPod || changed_kind == kind::kWorkloadEntry || changed_kind == kind::kServiceEntry;
  });
  if (workloads_touched || !workloads_built_) {
    auto registry = std::make_shared<const WorkloadRegistry>(BuildWorkloadRegistry(*objects, cluster_id_));
    // The first build has no proxy to tell (MeshController::Start's OnUpdate precedes serving).
    if (workloads_built_) {
      for (const ConfigKey& key : ChangedWorkloads(*workloads(), *registry)) request.configs.insert(key);
    }
    workloads_built_ = true;
    MutexLock lock(&mu_);
    workloads_ = std::move(registry);
  }
  // Endpoint objects alone changed (EndpointSlices, WorkloadEntries, Pods: the usual endpoint
  // churn): only the hosts this push sends endpoints of are rebuilt, which are the hosts whose
  // endpoints those objects give.
  std::optional<std::set<std::string>> endpoint_hosts;
  if (!update.changed.empty() && std::all_of(update.changed.begin(), update.changed.end(),
                                             [](const auto& change) { return IsEndpointKind(change.first.kind); })) {
    endpoint_hosts.emplace();
    for (const ConfigKey& key : request.configs) {
      if (key.kind == kind::kEndpoints) endpoint_hosts->insert(key.name);
    }
  }
  RebuildEndpoints(endpoint_hosts.has_value() ? &*endpoint_hosts : nullptr);
  request.full = !request.EndpointOnly() && !request.configs.empty();
  request.reasons[request.full ? reason::kConfig : reason::kEndpoint] = static_cast<int64_t>(update.changed.size());
  return request;
}

void MeshModel::RebuildEndpoints(const std::set<std::string>* hosts) {
  // One rebuild at a time (the source's thread and the DNS refresher's), each from the store as
  // it is then: a rebuild that read an older store, or merged into an older index, would
  // otherwise undo the one that finished between.
  MutexLock rebuild(&rebuild_mu_);
  const std::shared_ptr<const ObjectMap> objects = store_.Snapshot();
  ResolvedNames resolved;
  std::shared_ptr<const EndpointIndex> previous;
  {
    MutexLock lock(&mu_);
    resolved = resolved_;
    previous = endpoints_;
  }
  std::shared_ptr<const EndpointIndex> built;
  if (hosts == nullptr || !endpoints_built_) {
    built = std::make_shared<const EndpointIndex>(BuildEndpointIndex(*objects, domain_suffix_, &resolved, cluster_id_));
    endpoints_built_ = true;
  } else {
    built = std::make_shared<const EndpointIndex>(
        RebuildEndpointHosts(*previous, *objects, domain_suffix_, &resolved, cluster_id_, *hosts));
  }
  MutexLock lock(&mu_);
  endpoints_ = std::move(built);
}

PushRequest MeshModel::SetResolvedNames(ResolvedNames names) {
  PushRequest request;
  const std::shared_ptr<const ObjectMap> objects = store_.Snapshot();
  std::set<std::string> changed;
  {
    MutexLock lock(&mu_);
    for (const auto& [name, addresses] : names) {
      auto it = resolved_.find(name);
      if (it == resolved_.end() || it->second != addresses) changed.insert(name);
    }
    for (const auto& [name, addresses] : resolved_) {
      if (!names.contains(name)) changed.insert(name);
    }
    if (changed.empty()) return request;
    resolved_ = std::move(names);
  }
  // The hosts whose endpoints use a changed name.
  for (const auto& [key, stored] : *objects) {
    const auto* se = std::get_if<ServiceEntry>(&stored->object);
    if (se == nullptr || se->resolution == ServiceEntry::Resolution::kStatic) continue;
    bool uses = false;
    for (const std::string& host : se->hosts) uses = uses || (se->endpoints.empty() && changed.contains(host));
    for (const WorkloadEndpoint& endpoint : se->endpoints) uses = uses || changed.contains(endpoint.address);
    if (!uses) continue;
    for (const std::string& host : se->hosts) request.configs.insert({kind::kEndpoints, se->meta.namespace_name, host});
  }
  RebuildEndpoints(nullptr);
  if (!request.configs.empty()) request.reasons[reason::kEndpoint] = static_cast<int>(request.configs.size());
  return request;
}

std::shared_ptr<const WorkloadRegistry> MeshModel::workloads() const {
  MutexLock lock(&mu_);
  return workloads_;
}

std::shared_ptr<const EndpointIndex> MeshModel::endpoints() const {
  MutexLock lock(&mu_);
  return endpoints_;
}

absl::StatusOr<std::shared_ptr<const PushContext>> MeshModel::Build(const PushContext* previous,
                                                                    const PushRequest& request, uint64_t sequence,
                                                                    absl::Time now) {
  std::shared_ptr<const ObjectMap> objects = store_.Snapshot();
  // Its findings reach the log and the metrics through the store's analysis (MeshAnalyzer).
  return std::make_shared<MeshContext>(ObjectsVersion(*objects, /*include_endpoint_kinds=*/false), sequence, now,
                                       objects, domain_suffix_, root_namespace_);
}

}  // namespace cxds
