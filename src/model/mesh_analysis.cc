#include "model/mesh_analysis.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "common/strings.h"
#include "model/generators.h"
#include "model/mesh_kinds.h"
#include "model/mesh_model.h"
#include "model/service_host.h"

namespace cxds {

namespace {

// The Service object whose host `host` is (NAME.NAMESPACE.svc.SUFFIX), or null.
const K8sService* ServiceOfHost(const ObjectMap& served, const std::string& host, const std::string& suffix) {
  const auto service = ServiceNameOfHost(host, suffix);
  if (!service.has_value()) return nullptr;
  auto it = served.find(ConfigKey{kind::kService, std::string(service->second), std::string(service->first)});
  return it == served.end() ? nullptr : std::get_if<K8sService>(&it->second->object);
}

// Routes to hosts that are not services, or to ports they do not have, or to services
// exported to none of the namespaces the routes are served in (ServedNamespaces): requests
// taking them fail, and a proxyless client waits for a cluster that never comes.
void MissingDestinations(const ObjectMap& served, const MeshContext& mesh, const std::string& suffix,
                         std::vector<ConfigWarning>& out) {
  const Delegators delegators = DelegatorsOf(served);
  for (const auto& entry : served) {
    const ConfigKey& key = entry.first;  // (not a structured binding: lambdas capture it)
    const auto& stored = entry.second;
    const auto* vs = std::get_if<VirtualService>(&stored->object);
    if (vs == nullptr) continue;
    // Where its routes are served: as `istioctl analyze`, its own namespace, or those its
    // exportTo names; a delegate's, where the VirtualServices delegating to it are served.
    const std::vector<std::string> from = ServedNamespaces(*vs, key, delegators);
    ForEachDestination(*vs, [&](const HttpRouteDestination& d, const std::string& field) {
      // (An alias's routes go to its concrete host: that host is what must be there.)
      const std::string host = mesh.ConcreteHost(ResolveHost(d.host, vs->meta.namespace_name, suffix));
      const ServiceInfo* service = mesh.FindService(host);
      if (service == nullptr) {
        // The Service is looked up only here, for a host nothing serves.
        const K8sService* alias = ServiceOfHost(served, host, suffix);
        out.push_back(
            {key, field + ".host", "IST0101",
             alias != nullptr && !alias->external_name.empty()
                 ? StrCat("host ", host,
                          " is an ExternalName Service that is not served (its cxds_alias_unserved warning "
                          "says why): requests routed here fail")
                 : StrCat("host ", host, " is not defined by any Service or ServiceEntry: requests routed here fail")});
      } else if (!from.empty() && std::none_of(from.begin(), from.end(), [&](const std::string& ns) {
                   return ExportRank(service->export_to, service->namespace_name, ns).has_value();
                 })) {
        out.push_back({key, field + ".host", "IST0101",
                       StrCat("host ", host, " is not exported to namespace ", absl::StrJoin(from, " or "),
                              " (its exportTo: ", absl::StrJoin(service->export_to, ", "),
                              "), so proxies there do not see it: requests routed here fail")});
      } else if (service->ports.empty()) {
        out.push_back({key, field + ".host", "IST0101",
                       StrCat("host ", host, " has no ports, so it has no cluster: requests routed here fail")});
      } else if (d.port != 0 && std::none_of(service->ports.begin(), service->ports.end(),
                                             [&](const ServicePort& p) { return p.number == d.port; })) {
        out.push_back({key, field + ".port.number", "IST0101",
                       StrCat("port ", d.port, " is not a port of ", host, ": requests routed here fail")});
      }
    });
  }
}

// tls route matches no Envoy listener uses: tls routes apply to the TLS and HTTPS ports of the
// hosts the VirtualService is served for (as istiod's), so a match on a host with none (a
// ServiceEntry port without a protocol is HTTP), or on another port, does nothing.
void UnusedTlsRoutes(const ObjectMap& served, const MeshContext& mesh, const std::string& suffix,
                     std::vector<ConfigWarning>& out) {
  for (const auto& [key, stored] : served) {
    const auto* vs = std::get_if<VirtualService>(&stored->object);
    if (vs == nullptr || vs->tls.empty()) continue;
    std::vector<uint32_t> tls_ports;  // of the hosts it is served for
    for (const std::string& name : vs->hosts) {
      const std::string host = ResolveHost(name, vs->meta.namespace_name, suffix);
      const std::vector<const VirtualService*> served_for = mesh.VirtualServicesFor(host);
      const ServiceInfo* service = mesh.FindService(host);
      // (By name: a VirtualService whose routes delegate is served as a merged copy.)
      if (service == nullptr || std::none_of(served_for.begin(), served_for.end(), [&](const VirtualService* v) {
            return v->meta.name == vs->meta.name && v->meta.namespace_name == vs->meta.namespace_name;
          })) {
        continue;
      }
      for (const ServicePort& port : service->ports) {
        if (IsTlsProtocol(port.protocol)) tls_ports.push_back(port.number);
      }
    }
    for (size_t i = 0; i < vs->tls.size(); ++i) {
      for (size_t j = 0; j < vs->tls[i].match.size(); ++j) {
        const uint32_t port = vs->tls[i].match[j].port;
        // (At a Gateway, a match routes the TLS servers that pass TLS through: not judged here.)
        if (!OpaqueMatchAt(vs->tls[i].match[j].gateways, *vs, "mesh")) continue;
        if (std::any_of(tls_ports.begin(), tls_ports.end(), [&](uint32_t p) { return port == 0 || p == port; })) {
          continue;
        }
        out.push_back(
            {key, StrCat("spec.tls[", i, "].match[", j, "]"), "cxds_tls_route_unused",
             StrCat(port == 0 ? "" : StrCat("port ", port, " is not "),
                    port == 0 ? "no port of its hosts is a TLS or HTTPS port" : "a TLS or HTTPS port of its hosts",
                    " (tls routes apply to those only; a ServiceEntry port without a protocol is HTTP): "
                    "Envoy proxies never use this match")});
      }
    }
  }
}

// ServiceEntry addresses with opaque ports: istiod's sidecars tell such services apart by the
// address a client dialled, which cxds's listeners, bound to their own addresses, never see;
// those ports are served as if the entry had no addresses (HTTP ports use them as domains).
void AddressesOnOpaquePorts(const ObjectMap& served, std::vector<ConfigWarning>& out) {
  for (const auto& [key, stored] : ObjectsOfKind(served, kind::kServiceEntry)) {
    const auto* se = std::get_if<ServiceEntry>(&stored->object);
    if (se == nullptr || se->addresses.empty()) continue;
    std::vector<std::string> opaque;
    for (const ServicePort& port : se->ports) {
      if (!IsHttpProtocol(port.protocol)) opaque.push_back(StrCat(port.number, " (", port.protocol, ")"));
    }
    if (opaque.empty()) continue;
    out.push_back({key, "spec.addresses", "cxds_addresses_unused",
                   StrCat("ports ", absl::StrJoin(opaque, ", "),
                          " are not told apart from other services' by these addresses: cxds's Envoy listeners bind "
                          "their own addresses and never see the one a client dialled (HTTP ports answer to the "
                          "addresses as domains)")});
  }
}

// The namespaces whose proxies see `service` by its exportTo; nullopt: every one.
std::optional<std::set<std::string>> SeenFrom(const ServiceInfo& service) {
  if (service.export_to.empty()) return std::nullopt;
  std::set<std::string> out;
  for (const std::string& to : service.export_to) {
    if (to == "*") return std::nullopt;
    if (to != "~") out.insert(to == "." ? service.namespace_name : to);
  }
  return out;
}

// Where proxies see both `a` and `b` by their exportTo: "every namespace", "namespace(s) ...", or
// "" for nowhere (a Sidecar may narrow it further, per proxy).
std::string SeenByBoth(const ServiceInfo& a, const ServiceInfo& b) {
  const std::optional<std::set<std::string>> from_a = SeenFrom(a), from_b = SeenFrom(b);
  if (!from_a.has_value() && !from_b.has_value()) return "every namespace";
  std::vector<std::string> both;
  if (!from_a.has_value() || !from_b.has_value()) {
    const std::set<std::string>& only = from_a.has_value() ? *from_a : *from_b;
    both.assign(only.begin(), only.end());
  } else {
    std::set_intersection(from_a->begin(), from_a->end(), from_b->begin(), from_b->end(), std::back_inserter(both));
  }
  if (both.empty()) return "";
  constexpr size_t kNamed = 5;  // (a message names a few)
  const size_t more = both.size() > kNamed ? both.size() - kNamed : 0;
  both.resize(std::min(both.size(), kNamed));
  return StrCat(both.size() + more == 1 ? "namespace " : "namespaces ", absl::StrJoin(both, ", "),
                more > 0 ? StrCat(" and ", more, " more") : "");
}

// ServiceEntry addresses another host's routes answer to already, where a proxy sees both hosts
// (the same address of a host earlier in host order, or a host of that name): Envoy refuses a
// domain named twice, so, as istiod, the route configuration of each HTTP port gives it to the
// first of the hosts the proxy sees (pilot_vservice_dup_domain). Hosts exported to no common
// namespace never meet on a proxy: nothing is said of them.
//
// Hostile config may give thousands of hosts one address, so a domain keeps only the claimants a
// message can name: the first few exported everywhere, and the first few seen in each namespace.
// A host then looks at those of the namespaces it is seen in, never at every earlier claimant.
void DuplicateAddresses(const MeshContext& mesh, std::vector<ConfigWarning>& out) {
  constexpr size_t kNamed = 5;  // claimants a message names; one more tells that there are others
  struct Claim {
    size_t order;  // host order of the claim, for naming the first ones
    const ServiceInfo* service;
    bool operator<(const Claim& other) const { return order < other.order; }
  };
  struct Claimants {
    std::vector<Claim> everywhere;                      // the first kNamed + 1 exported to every namespace
    std::vector<Claim> somewhere;                       // the first kNamed + 1 exported to some namespaces
    std::map<std::string, std::vector<Claim>> seen_in;  // namespace -> the first kNamed + 1 exported to it by name
    // Claims per ServiceEntry: past kNamed + 1, an entry's claims (its hosts share its exportTo)
    // reach only full lists, so an entry of thousands of hosts is not indexed thousands of times.
    std::map<ConfigKey, size_t> per_entry;
  };
  const auto keep = [](std::vector<Claim>& claims, const Claim& claim) {
    if (claims.size() <= kNamed) claims.push_back(claim);
  };
  std::map<uint32_t, std::vector<const ServiceInfo*>> by_port;  // HTTP port -> services, in host order
  std::map<const ServiceInfo*, std::optional<std::set<std::string>>> seen_from;
  for (const auto& [host, service] : mesh.services()) {
    for (const ServicePort& port : service.ports) {
      if (IsHttpProtocol(port.protocol)) by_port[port.number].push_back(&service);
    }
    seen_from.emplace(&service, SeenFrom(service));
  }
  std::set<std::pair<ConfigKey, std::string>> said;
  for (const auto& [port, services] : by_port) {
    std::map<std::string, Claimants> claimants;          // domain -> the hosts answering to it so far
    std::set<std::pair<ConfigKey, std::string>> judged;  // entry and address looked at on this port
    size_t order = 0;
    const auto add = [&](Claimants& domain, const ServiceInfo* service) {
      const Claim claim{order++, service};
      if (++domain.per_entry[service->key] > kNamed + 1) return;
      const std::optional<std::set<std::string>>& from = seen_from.at(service);
      if (!from.has_value()) {
        keep(domain.everywhere, claim);
        return;
      }
      if (!from->empty()) keep(domain.somewhere, claim);
      for (const std::string& ns : *from) keep(domain.seen_in[ns], claim);
    };
    // A host of that name answers to it first (only the names that are addresses matter).
    std::set<std::string> address_domains;
    for (const ServiceInfo* service : services) {
      for (const std::string& address : service->addresses) {
        address_domains.insert(AddressDomain(address));
      }
    }
    for (const ServiceInfo* service : services) {
      std::string host = absl::AsciiStrToLower(service->host);
      if (address_domains.count(host) > 0) add(claimants[std::move(host)], service);
    }
    for (const ServiceInfo* service : services) {
      const std::optional<std::set<std::string>>& from = seen_from.at(service);
      for (size_t i = 0; i < service->addresses.size(); ++i) {
        const std::string& address = service->addresses[i];
        const std::string domain_name = AddressDomain(address);
        Claimants& domain = claimants[domain_name];
        // An entry's hosts share its exportTo, so its first host here is where an address is judged;
        // a host exported nowhere meets no other. Said once per entry and address, of all ports.
        if (judged.emplace(service->key, address).second && !(from.has_value() && from->empty())) {
          std::vector<Claim> earlier = domain.everywhere;
          if (from.has_value()) {
            for (const std::string& ns : *from) {
              auto it = domain.seen_in.find(ns);
              if (it != domain.seen_in.end()) earlier.insert(earlier.end(), it->second.begin(), it->second.end());
            }
          } else {
            earlier.insert(earlier.end(), domain.somewhere.begin(), domain.somewhere.end());
          }
          std::sort(earlier.begin(), earlier.end());
          earlier.erase(std::unique(earlier.begin(), earlier.end(),
                                    [](const Claim& a, const Claim& b) { return a.order == b.order; }),
                        earlier.end());
          std::vector<std::string> owners;  // "HOST (where proxies see both)"
          bool others = false;
          for (const Claim& claim : earlier) {
            // (Another host of the same ServiceEntry keeping it is the entry's own choice of host.)
            if (claim.service->key == service->key) break;
            if (owners.size() == kNamed) {
              others = true;
              break;
            }
            owners.push_back(StrCat(claim.service->host, " (", SeenByBoth(*claim.service, *service), ")"));
          }
          if (!owners.empty() && said.emplace(service->key, address).second) {
            out.push_back(
                {service->key, StrCat("spec.addresses[", i, "]"), "pilot_vservice_dup_domain",
                 StrCat("address ", address, " of ", service->host, " is a domain of ", absl::StrJoin(owners, ", "),
                        others ? " and other hosts" : "", " on port ", port,
                        " (a host of that name, or first in host order): where a proxy sees both, Envoy's routes "
                        "answer to it for the first of those hosts it sees, not for ",
                        service->host)});
          }
        }
        add(domain, service);
      }
    }
  }
}

// Service ports without endpoints, from the endpoints MeshModel serves (BuildEndpointIndex),
// and DestinationRule subsets that select none of a port's endpoints: both are clusters a
// proxy gets empty, so requests routed there fail with UNAVAILABLE while the proxy ACKs.
void NoInstances(const ObjectMap& served, const MeshContext& mesh, const std::string& suffix,
                 const std::string& cluster_id, EndpointIndexTracker& endpoints, std::vector<ConfigWarning>& out) {
  const std::shared_ptr<const EndpointIndex> built = endpoints.Update(served);
  const EndpointIndex& index = *built;
  const auto endpoints_of = [&](const std::string& host, uint32_t port) -> const std::vector<EndpointInfo>* {
    auto it = index.find(host);
    if (it == index.end()) return nullptr;
    auto on_port = it->second->find(port);
    return on_port == it->second->end() || on_port->second.empty() ? nullptr : &on_port->second;
  };
  const auto report = [&](const ConfigKey& key, size_t i, const std::string& host, uint32_t port,
                          const std::string& why) {
    out.push_back({key, StrCat("spec.ports[", i, "]"), "pilot_eds_no_instances",
                   StrCat("host ", host, " port ", port, " has no endpoints (", why, ")")});
  };
  for (const auto& [key, stored] : served) {
    if (const auto* svc = std::get_if<K8sService>(&stored->object); svc != nullptr && svc->external_name.empty()) {
      const std::string host = StrCat(svc->meta.name, ".", svc->meta.namespace_name, ".svc.", suffix);
      for (size_t i = 0; i < svc->ports.size(); ++i) {
        if (endpoints_of(host, svc->ports[i].number) != nullptr) continue;
        report(key, i, host, svc->ports[i].number,
               StrCat("no ready endpoint in an EndpointSlice labelled kubernetes.io/service-name: ", svc->meta.name,
                      svc->selector.empty() ? StrCat(" or in Endpoints ", svc->meta.name) : "", " with a port named \"",
                      svc->ports[i].name, "\"",
                      svc->selector.empty() ? "" : ", and its selector selects no WorkloadEntry in its namespace"));
      }
    } else if (const auto* se = std::get_if<ServiceEntry>(&stored->object);
               se != nullptr && se->resolution == ServiceEntry::Resolution::kStatic) {
      // (A DNS ServiceEntry always has endpoints: its names, or its hosts, which Envoy resolves.)
      for (const std::string& host : se->hosts) {
        for (size_t i = 0; i < se->ports.size(); ++i) {
          if (endpoints_of(host, se->ports[i].number) != nullptr) continue;
          report(key, i, host, se->ports[i].number,
                 se->workload_selector.has_value() ? "its workloadSelector selects no WorkloadEntry in its namespace"
                                                   : "no spec.endpoints");
        }
      }
    }
  }
  for (const auto& [key, stored] : served) {
    const auto* dr = std::get_if<DestinationRule>(&stored->object);
    if (dr == nullptr) continue;
    const std::string host = ResolveHost(dr->host, dr->meta.namespace_name, suffix);
    const ServiceInfo* service = mesh.FindService(host);
    if (service == nullptr) continue;
    // Every namespace's rules (which proxies get one depends on their namespace), but of a
    // subset two rules of a namespace define, only the definition served.
    const std::vector<const MergedDestinationRules::Entry*> entries =
        mesh.destination_rules().EntriesOf(dr->meta.namespace_name, host);
    for (size_t s = 0; s < dr->subsets.size(); ++s) {
      const DestinationRule::Subset& subset = dr->subsets[s];
      const bool served = std::any_of(entries.begin(), entries.end(), [&](const MergedDestinationRules::Entry* entry) {
        auto owner = entry->subset_owners.find(subset.name);
        return owner != entry->subset_owners.end() && owner->second == key;
      });
      if (!served) continue;
      if (service->resolution != ServiceEntry::Resolution::kStatic) {
        // A DNS ServiceEntry: the subset selects among its names, on every port alike; without
        // names, its host has no labels at all (EndpointInfo::bare), as in istiod.
        const auto& names = service->dns_endpoints;
        const bool selects =
            names.empty() ? subset.labels.empty() : std::any_of(names.begin(), names.end(), [&](const auto& name) {
              return SelectsWorkload(subset.labels, name, cluster_id);
            });
        if (!selects) {
          out.push_back({key, StrCat("spec.subsets[", s, "].labels"), "pilot_eds_no_instances",
                         names.empty() ? StrCat("subset \"", subset.name, "\" of ", host,
                                                " selects nothing: a DNS ServiceEntry without spec.endpoints has its "
                                                "host alone, which has no labels")
                                       : StrCat("subset \"", subset.name, "\" of ", host, " selects none of its ",
                                                names.size(), names.size() == 1 ? " name" : " names",
                                                " (spec.endpoints[], by their labels with their locality and "
                                                "cluster as topology labels)")});
        }
        continue;
      }
      for (const ServicePort& port : service->ports) {
        const std::vector<EndpointInfo>* endpoints = endpoints_of(host, port.number);
        if (endpoints == nullptr) continue;  // the service's own warning says it
        if (std::any_of(endpoints->begin(), endpoints->end(),
                        [&](const EndpointInfo& e) { return e.SelectedBy(subset.labels, cluster_id); })) {
          continue;
        }
        out.push_back({key, StrCat("spec.subsets[", s, "].labels"), "pilot_eds_no_instances",
                       StrCat("subset \"", subset.name, "\" of ", host, " port ", port.number, " selects none of its ",
                              endpoints->size(), endpoints->size() == 1 ? " endpoint" : " endpoints",
                              " (EndpointSlice endpoints carry the labels of the Pod their targetRef names; "
                              "WorkloadEntries and ServiceEntry endpoints their own; with their locality, cluster "
                              "and node as topology labels)")});
        break;  // one warning per subset
      }
    }
  }
}

// Calls `fn(policy, field)` for every traffic policy of DestinationRule `dr`: the rule's, its
// subsets', and the port-level settings of each, with the field path of each.
void ForEachPolicy(const DestinationRule& dr, const std::function<void(const PolicyFields&, const std::string&)>& fn) {
  const auto each = [&](const std::optional<TrafficPolicy>& policy, const std::string& field) {
    if (!policy.has_value()) return;
    fn(*policy, field);
    for (size_t i = 0; i < policy->port_level.size(); ++i) {
      fn(policy->port_level[i].policy, StrCat(field, ".portLevelSettings[", i, "]"));
    }
  };
  each(dr.traffic_policy, "spec.trafficPolicy");
  for (size_t i = 0; i < dr.subsets.size(); ++i) {
    each(dr.subsets[i].traffic_policy, StrCat("spec.subsets[", i, "].trafficPolicy"));
  }
}

// What proxyless gRPC does not implement: consistent hashing by anything but a header (gRFC
// A42: gRPC nodes get a ring hash without a key, which picks at random), and header
// operations, rewrites, mirrors and pseudo-header or query matches (gRFC A28).
void GrpcIgnored(const ObjectMap& served, std::vector<ConfigWarning>& out) {
  const auto check_fields = [&](const ConfigKey& key, const PolicyFields& policy, const std::string& field) {
    if (policy.tls.has_value() && !policy.tls->credential_name.empty() &&
        policy.tls->mode != PolicyFields::ClientTls::Mode::kDisable) {
      out.push_back({key, field + ".tls.credentialName", "cxds_gateway_only",
                     "applies at gateway proxies only, as in Istio: sidecars connect without its certificate and "
                     "check the server against their system CA bundle"});
    }
    if (policy.WarmupApplies()) {  // on RANDOM and ring-hash clusters Envoy ignores it too, as under istiod
      out.push_back({key,
                     field + (policy.warmup->full_form ? ".loadBalancer.warmup" : ".loadBalancer.warmupDurationSecs"),
                     "cxds_grpc_ignores",
                     "slow start is not implemented by proxyless gRPC clients: Envoy nodes ramp a new endpoint's share "
                     "up, gRPC nodes send it its full share at once"});
    }
    if (policy.proxy_protocol.has_value()) {
      out.push_back({key, field + ".proxyProtocol", "cxds_grpc_ignores",
                     "the PROXY protocol is not implemented by proxyless gRPC clients: Envoy nodes open each upstream "
                     "connection with its header, gRPC nodes connect without it (an upstream that needs it refuses "
                     "them)"});
    }
    if (policy.retry_budget.has_value()) {
      out.push_back({key, field + ".retryBudget", "cxds_grpc_ignores",
                     "a retry budget is not implemented by proxyless gRPC clients: Envoy nodes limit concurrent "
                     "retries to the budget, gRPC nodes retry as the route's retry policy says"});
    }
    if (!policy.consistent_hash.has_value()) return;
    using Key = TrafficPolicy::ConsistentHash::Key;
    const Key k = policy.consistent_hash->key;
    if (k == Key::kHeader) return;
    const char* what = k == Key::kCookie     ? "httpCookie"
                       : k == Key::kSourceIp ? "useSourceIp"
                                             : "httpQueryParameterName";
    out.push_back({key, field + ".loadBalancer.consistentHash." + what, "cxds_grpc_ignores",
                   StrCat(what,
                          " is not implemented by proxyless gRPC clients, which hash on headers only: Envoy nodes "
                          "hash by it, gRPC nodes get the ring hash without a key and pick at random")});
  };
  for (const auto& entry : served) {
    const ConfigKey& key = entry.first;  // (not a structured binding: a lambda captures it)
    const auto& stored = entry.second;
    if (const auto* vs = std::get_if<VirtualService>(&stored->object)) {
      for (size_t i = 0; i < vs->http.size(); ++i) {
        const HttpRoute& http = vs->http[i];
        const std::vector<std::string> fields = GrpcIgnoredRouteFields(http);
        if (fields.empty()) continue;
        out.push_back({key, StrCat("spec.http[", i, "]"), "cxds_grpc_ignores",
                       StrCat(absl::StrJoin(fields, ", "),
                              ": not implemented by proxyless gRPC clients (gRFC A28); Envoy nodes get them, gRPC "
                              "nodes do without")});
      }
      continue;
    }
    const auto* dr = std::get_if<DestinationRule>(&stored->object);
    if (dr == nullptr) continue;
    ForEachPolicy(*dr, [&](const PolicyFields& policy, const std::string& field) { check_fields(key, policy, field); });
  }
}

// VirtualServices bound to Gateways that do not exist (istioctl's IST0101), or whose hosts
// none of the Gateway's servers admit (IST0132, VirtualServiceHostNotFoundInGateway): their
// routes reach no gateway proxy.
void GatewayBindings(const ObjectMap& served, const MeshContext& mesh, const std::string& suffix,
                     std::vector<ConfigWarning>& out) {
  for (const auto& entry : ObjectsOfKind(served, "VirtualService")) {
    const ConfigKey& key = entry.first;  // (not a structured binding: a lambda captures it)
    const auto* vs = std::get_if<VirtualService>(&entry.second->object);
    if (vs == nullptr) continue;
    for (size_t i = 0; i < vs->gateways.size(); ++i) {
      const std::string& name = vs->gateways[i];
      if (name == "mesh") continue;
      const Gateway* gateway = mesh.FindGateway(name);
      if (gateway == nullptr) {
        out.push_back(
            {key, StrCat("spec.gateways[", i, "]"), "IST0101",
             StrCat("gateway ", name, " is not defined by any Gateway: these routes reach no gateway proxy")});
        continue;
      }
      // A destination without a port goes to its service's only port, else to the gateway
      // port the request came to (istiod's GetDestinationCluster): a port the service lacks.
      ForEachDestination(*vs, [&](const HttpRouteDestination& d, const std::string& field) {
        const std::string host = mesh.ConcreteHost(ResolveHost(d.host, vs->meta.namespace_name, suffix));
        const ServiceInfo* service = mesh.FindService(host);
        if (!field.starts_with("spec.http") || d.port != 0 || service == nullptr || service->ports.size() < 2) return;
        std::set<uint32_t> missing;
        for (const Gateway::Server& server : gateway->servers) {
          if (std::none_of(service->ports.begin(), service->ports.end(),
                           [&](const ServicePort& p) { return p.number == server.port; })) {
            missing.insert(server.port);
          }
        }
        if (missing.empty()) return;
        out.push_back({key, field + ".port", "IST0101",
                       StrCat("no port.number: at gateway ", name, " requests go to the gateway's port (",
                              absl::StrJoin(missing, ", "), "), which ", host,
                              " does not have (it has several ports, so give the one to route to)")});
      });
      std::vector<std::string> unadmitted;
      for (const std::string& vs_host : vs->hosts) {
        const std::string host = ResolveHost(vs_host, vs->meta.namespace_name, suffix);
        bool admitted = false;
        for (const Gateway::Server& server : gateway->servers) {
          for (const std::string& server_host : server.hosts) {
            admitted = admitted || !GatewayHostName(*gateway, server_host, vs->meta.namespace_name, host).empty();
          }
        }
        if (!admitted) unadmitted.push_back(host);
      }
      if (!unadmitted.empty()) {
        out.push_back({key, StrCat("spec.gateways[", i, "]"), "IST0132",
                       StrCat("no server of gateway ", name, " admits host ", absl::StrJoin(unadmitted, ", "),
                              " of this VirtualService (server hosts, and their namespace part): no gateway proxy "
                              "serves routes for it")});
      }
    }
  }
}

// The SDS name clashes of `plans` (FindSdsNameClashes), on the proxies the plans are of, as
// /debug/config_status says them per proxy. `said`: the clashes said so far, (gateway, server
// index, SDS name), each said once; `across` (a pair of Gateways): only clashes with a server of
// the other Gateway.
using SdsClash = std::tuple<const Gateway*, size_t, std::string>;
void SdsNameClashes(const std::map<uint32_t, GatewayPort>& plans,
                    const std::map<const Gateway*, const ConfigKey*>& keys, bool across, std::set<SdsClash>& said,
                    std::vector<ConfigWarning>& out) {
  for (const SdsNameClash& clash : FindSdsNameClashes(plans)) {
    const Gateway* gateway = clash.server->gateway;
    const Gateway* meant = clash.first->gateway;
    const size_t index = static_cast<size_t>(clash.server->server - gateway->servers.data());
    if ((across && meant == gateway) || !said.emplace(gateway, index, clash.sds_name).second) continue;
    const auto key = keys.find(gateway);
    if (key == keys.end()) continue;
    const auto what = [](const Gateway::Server::SecretRef& ref) {
      return StrCat(ref.ca ? "CA of Secret " : "certificate of Secret ", ref.credential);
    };
    out.push_back(
        {*key->second, StrCat("spec.servers[", index, "].tls.", clash.ref.field), "cxds_gateway_sds_name_clash",
         StrCat("not served as meant", across ? " on gateway proxies that both Gateways pick" : "", ": its ",
                what(clash.ref), " is sent as ", clash.sds_name, ", which Gateway ", meant->meta.namespace_name, "/",
                meant->meta.name, " spec.servers[", clash.first->server - meant->servers.data(),
                "] already uses for the ", what(clash.first_ref), ": Envoy is sent that one")});
  }
}

// Gateways are planned with the VirtualServices exported to every namespace: a narrowly exported
// one counts only for gateway proxies of the namespaces it names, which a Gateway does not say
// (/debug/config_status judges those per proxy).
// Servers that two Gateways picking one proxy leave out together, and neither alone: a proxy
// whose labels include both selectors (one selector within the other: the wider label set
// has both) gets both Gateways' servers on one listener per port, planned in GatewaysFor order.
// Said on the server left out, naming the other Gateway. At most kMaxGatewayPairs pairs.
void GatewayPairs(const ObjectMap& served, const MeshContext& mesh, std::set<SdsClash>& sds_said,
                  std::vector<ConfigWarning>& out) {
  constexpr size_t kMaxGatewayPairs = 10000;
  std::vector<std::pair<ConfigKey, const Gateway*>> gateways;
  for (const auto& [key, stored] : ObjectsOfKind(served, kind::kGateway)) {
    if (const auto* gateway = std::get_if<Gateway>(&stored->object)) gateways.emplace_back(key, gateway);
  }
  // What each Gateway leaves out alone: (gateway, server index).
  std::set<std::pair<const Gateway*, size_t>> alone;
  for (const auto& [key, gateway] : gateways) {
    for (const auto& [port, plan] : PlanGatewayPorts(mesh, {gateway}, "")) {
      for (const GatewayServer& left_out : plan.left_out) {
        alone.emplace(gateway, static_cast<size_t>(left_out.server - gateway->servers.data()));
      }
    }
  }
  size_t pairs = 0;
  for (size_t i = 0; i < gateways.size(); ++i) {
    for (size_t j = i + 1; j < gateways.size() && pairs < kMaxGatewayPairs; ++j) {
      const Gateway* first = gateways[i].second;
      const Gateway* second = gateways[j].second;
      if (!LabelsMatch(first->selector, second->selector) && !LabelsMatch(second->selector, first->selector)) continue;
      ++pairs;
      const std::map<uint32_t, GatewayPort> plans = PlanGatewayPorts(mesh, {first, second}, "");
      SdsNameClashes(plans, {{first, &gateways[i].first}, {second, &gateways[j].first}}, true, sds_said, out);
      for (const auto& [port, plan] : plans) {
        for (const GatewayServer& left_out : plan.left_out) {
          const size_t index = static_cast<size_t>(left_out.server - left_out.gateway->servers.data());
          if (alone.contains({left_out.gateway, index})) continue;
          const bool is_first = left_out.gateway == first;
          const Gateway& other = is_first ? *second : *first;
          out.push_back({is_first ? gateways[i].first : gateways[j].first, StrCat("spec.servers[", index, "]"),
                         "cxds_gateway_server_left_out",
                         StrCat("not served on gateway proxies that Gateway ", other.meta.namespace_name, "/",
                                other.meta.name, " also picks: ", left_out.left_out)});
        }
      }
    }
  }
}

// Gateway servers that cannot serve as written (also GatewayPairs): a terminating server whose Secrets
// (credentialName(s), caCertCredentialName: Gateway::Server::SecretRefs) hold nothing of what it needs (istioctl's
// IST0101 for gateway Secrets; cxds looks in every namespace, since the proxies' namespace is not known here), servers
// of one Gateway that its listeners leave out (PlanGatewayPorts), and TCP and TLS servers no route applies to or tls
// route matches not routed there (PlanGatewayChains).
void GatewayServers(const ObjectMap& served, const MeshContext& mesh, std::vector<ConfigWarning>& out) {
  std::set<SdsClash> sds_said;                            // each clash said once (SdsNameClashes)
  std::map<std::string, std::pair<bool, bool>> material;  // Secret name -> (certificate, CA), any namespace
  for (const auto& [key, stored] : ObjectsOfKind(served, kind::kSecret)) {
    const auto* secret = std::get_if<K8sTlsSecret>(&stored->object);
    if (secret == nullptr) continue;
    auto& [certificate, ca] = material[key.name];
    certificate = certificate || !secret->certificate_chain.empty();
    ca = ca || !secret->ca_certificates.empty();
  }
  const auto has = [&](const std::string& name, bool ca) {
    auto it = material.find(name);
    return it != material.end() && (ca ? it->second.second : it->second.first);
  };
  for (const auto& entry : ObjectsOfKind(served, kind::kGateway)) {
    const ConfigKey& key = entry.first;
    const auto* gateway = std::get_if<Gateway>(&entry.second->object);
    if (gateway == nullptr) continue;
    for (size_t i = 0; i < gateway->servers.size(); ++i) {
      const Gateway::Server& server = gateway->servers[i];
      for (const auto& [field, why] : server.ignored_tls_fields) {
        out.push_back({key, StrCat("spec.servers[", i, "].tls.", field), "cxds_gateway_tls_ignored",
                       StrCat(why, ": ignored, as istiod ignores it")});
      }
      const std::vector<Gateway::Server::SecretRef> server_refs = server.SecretRefs();
      for (const Gateway::Server::SecretRef& ref : server_refs) {
        const std::string field = StrCat("spec.servers[", i, "].tls.", ref.field);
        const std::string& name = ref.credential;
        if (!ref.ca && !has(name, false)) {
          out.push_back({key, field, "IST0101",
                         StrCat("no Secret ", name,
                                " with a certificate and key (tls.crt and tls.key) in any namespace: gateway proxies "
                                "wait for it, and Envoy serves none of the listener's chains meanwhile")});
        } else if (ref.ca && !has(StrCat(name, "-cacert"), true) && !has(name, true) &&
                   // A Secret of the server's certificates missing altogether is said once, above.
                   (has(name, false) || std::none_of(server_refs.begin(), server_refs.end(), [&](const auto& other) {
                      return !other.ca && other.credential == name;
                    }))) {
          const bool mutual = server.tls_mode == Gateway::Server::TlsMode::kMutual;
          out.push_back(
              {key, field, "IST0101",
               StrCat("mode ", mutual ? "MUTUAL" : "OPTIONAL_MUTUAL", " needs a CA: no Secret ", name,
                      "-cacert, and Secret ", name, " has no ca.crt (or cacert): gateway proxies wait for it")});
        }
      }
    }
    const std::map<uint32_t, GatewayPort> plans = PlanGatewayPorts(mesh, {gateway}, "");
    SdsNameClashes(plans, {{gateway, &key}}, false, sds_said, out);
    for (const auto& [port, plan] : plans) {
      for (const GatewayChainNote& note : PlanGatewayChains(mesh, port, plan).notes) {
        out.push_back({note.object, note.field, "cxds_gateway_server_left_out", StrCat("not served: ", note.reason)});
      }
      for (const GatewayServer& left_out : plan.left_out) {
        const size_t index = static_cast<size_t>(left_out.server - gateway->servers.data());
        out.push_back({key, StrCat("spec.servers[", index, "]"), "cxds_gateway_server_left_out",
                       StrCat("not served: ", left_out.left_out)});
      }
      for (const GatewayServer& served : plan.servers) {
        if (served.lost_names.empty()) continue;
        const size_t index = static_cast<size_t>(served.server - gateway->servers.data());
        out.push_back({key, StrCat("spec.servers[", index, "].hosts"), "cxds_gateway_server_left_out",
                       StrCat("SNI names ", absl::StrJoin(served.lost_names, ", "),
                              " not matched by this server: an earlier server of the port has them")});
      }
    }
  }
  GatewayPairs(served, mesh, sds_said, out);
}

// DestinationRule tls credentialNames sent to gateway proxies under an SDS name that a Gateway
// server or another rule uses for another Secret (the CA of credential "x" and the certificate
// of credential "x-cacert" are both kubernetes://x-cacert). A proxy's Gateway servers take their
// names first (UsedSecretNames), so against one the rule is said to lose; between two rules the
// proxy's clusters decide, which /debug/config_status says per proxy. Said on the later user.
void RuleSdsNameClashes(const ObjectMap& served, const MeshContext& mesh, std::vector<ConfigWarning>& out) {
  struct Use {
    std::string by;  // "Gateway NS/NAME spec.servers[I]" or "DestinationRule NS/NAME FIELD"
    SecretUse use;
  };
  const auto what = [](const SecretUse& use) {
    return StrCat(use.ca ? "CA of Secret " : "certificate of Secret ", use.credential);
  };
  // By SDS name, each Gateway's first use among the servers it serves (planned as GatewayServers
  // plans it: a server left out sends nothing); the proxies of each Gateway differ, so any one
  // whose use differs is a clash there.
  std::map<std::string, std::vector<Use>> gateway_uses;
  for (const auto& [key, stored] : ObjectsOfKind(served, kind::kGateway)) {
    const auto* gateway = std::get_if<Gateway>(&stored->object);
    if (gateway == nullptr) continue;
    std::set<std::string> named;  // by this Gateway
    for (const auto& [port, plan] : PlanGatewayPorts(mesh, {gateway}, "")) {
      for (const GatewayServer& entry : plan.servers) {
        const size_t i = static_cast<size_t>(entry.server - gateway->servers.data());
        for (const Gateway::Server::SecretRef& ref : entry.server->SecretRefs()) {
          std::string name = SdsName(ref);
          if (!named.insert(name).second) continue;
          gateway_uses[std::move(name)].push_back(
              Use{StrCat("Gateway ", key.namespace_name, "/", key.name, " spec.servers[", i, "]"),
                  SecretUse{ref.credential, ref.ca, ""}});
        }
      }
    }
  }
  std::map<std::string, Use> rule_uses;  // by SDS name, the first
  const auto check_fields = [&](const ConfigKey& key, const PolicyFields& policy, const std::string& field) {
    if (!policy.tls.has_value() || policy.tls->credential_name.empty() ||
        policy.tls->mode == PolicyFields::ClientTls::Mode::kDisable) {
      return;
    }
    const PolicyFields::ClientTls& tls = *policy.tls;
    const std::string credential_field = field + ".tls.credentialName";
    const auto check_name = [&](const std::string& name, bool ca) {
      const SecretUse use{tls.credential_name, ca, ""};
      const auto differs = [&](const Use& other) {
        return other.use.credential != use.credential || other.use.ca != use.ca;
      };
      if (auto uses = gateway_uses.find(name); uses != gateway_uses.end()) {
        if (auto gateway = std::find_if(uses->second.begin(), uses->second.end(), differs);
            gateway != uses->second.end()) {
          out.push_back({key, credential_field, "cxds_gateway_sds_name_clash",
                         StrCat("not served as meant on gateway proxies that ", gateway->by, " is of: its ", what(use),
                                " is sent as ", name, ", which that server already uses for the ", what(gateway->use),
                                ": Envoy is sent that one")});
          return;
        }
      }
      const std::string by = StrCat("DestinationRule ", key.namespace_name, "/", key.name, " ", credential_field);
      const auto [first, inserted] = rule_uses.try_emplace(name, Use{by, use});
      if (inserted || !differs(first->second)) return;
      out.push_back({key, credential_field, "cxds_gateway_sds_name_clash",
                     StrCat("its ", what(use), " is sent as ", name, ", which ", first->second.by, " uses for the ",
                            what(first->second.use),
                            ": a gateway proxy with clusters of both rules is sent one of the two "
                            "(/debug/config_status says which, per proxy)")});
    };
    if (tls.mode == PolicyFields::ClientTls::Mode::kMutual) check_name(GatewaySecretName(tls.credential_name), false);
    if (!tls.insecure_skip_verify) check_name(GatewayCaSecretName(tls.credential_name), true);
  };
  for (const auto& entry : ObjectsOfKind(served, kind::kDestinationRule)) {
    const ConfigKey& key = entry.first;  // (not a structured binding: a lambda captures it)
    const auto& stored = entry.second;
    const auto* dr = std::get_if<DestinationRule>(&stored->object);
    if (dr == nullptr) continue;
    ForEachPolicy(*dr, [&](const PolicyFields& policy, const std::string& field) { check_fields(key, policy, field); });
  }
}

// Services and ServiceEntries exported to no namespace ("~"): valid in Istio, and served to no
// proxy at all (VirtualServices and DestinationRules cannot be, as Istio validates).
void ExportedToNone(const ObjectMap& served, std::vector<ConfigWarning>& out) {
  for (const auto& [key, stored] : served) {
    std::visit(
        [&](const auto& object) {
          if constexpr (requires { object.export_to; }) {
            if (object.export_to != std::vector<std::string>{"~"}) return;
            const bool service = key.kind == "Service";
            out.push_back({key, service ? "metadata.annotations[networking.istio.io/exportTo]" : "spec.exportTo",
                           "cxds_exported_to_none",
                           "exported to no namespace (~): no proxy gets its hosts, as in Istio"});
          }
        },
        stored->object);
  }
}

// localityLbSetting failover (rules or failoverPriority) where no outlier detection applies with
// it: nothing would ever eject an endpoint, so neither Envoy nor gRPC would leave the first
// priority, and istiod (as cxds) gives none; Istio's validation warns too. Judged on the rules as
// served (MergedDestinationRules: a newer rule's subsets under the oldest rule's policy), with
// the outlier detection each policy gets as merged: a subset's from the served rule's (its port
// settings too) when it sets none; port settings replace both whole. Warned only where no proxy
// can fail over; said at the rule that wrote the policy (a merge's oldest, else the first merged
// one with a trafficPolicy) or the subset.
void FailoverWithoutOutlierDetection(const ObjectMap& served, const MeshContext& mesh,
                                     std::vector<ConfigWarning>& out) {
  std::set<std::pair<ConfigKey, std::string>> said;  // an entry may be in several indexes
  const auto check = [&](const ConfigKey& key, const PolicyFields& policy, bool outlier, const std::string& field) {
    if (!policy.locality_lb.has_value() || !policy.locality_lb->enabled || outlier) return;
    const PolicyFields::LocalityLb& lb = *policy.locality_lb;
    if (!lb.distribute.empty() || (lb.failover.empty() && lb.failover_priority.empty())) return;
    const std::string at = field + ".loadBalancer.localityLbSetting";
    if (!said.insert({key, at}).second) return;
    out.push_back({key, at, "cxds_failover_without_outlier_detection",
                   StrCat(lb.failover_priority.empty() ? "failover" : "failoverPriority",
                          " without outlierDetection: no endpoint is ever ejected, so no proxy fails over where this "
                          "policy applies; no priorities are given there, as in istiod")});
  };
  const auto check_policy = [&](const ConfigKey& key, const TrafficPolicy& policy, bool inherited_outlier,
                                const std::string& field) {
    check(key, policy, policy.outlier_detection.has_value() || inherited_outlier, field);
    for (size_t i = 0; i < policy.port_level.size(); ++i) {
      const PolicyFields& port = policy.port_level[i].policy;
      check(key, port, port.outlier_detection.has_value(), StrCat(field, ".portLevelSettings[", i, "]"));
    }
  };
  const auto check_entry = [&](const MergedDestinationRules::Entry& entry) {
    const DestinationRule& rule = *entry.rule;
    bool rule_outlier = false;
    if (rule.traffic_policy.has_value()) {
      // A subset's clusters get the rule's port settings too: any outlier detection there may apply.
      const auto& levels = rule.traffic_policy->port_level;
      rule_outlier = rule.traffic_policy->outlier_detection.has_value() ||
                     std::any_of(levels.begin(), levels.end(),
                                 [](const auto& level) { return level.policy.outlier_detection.has_value(); });
      check_policy(entry.policy_owner, *rule.traffic_policy, false, "spec.trafficPolicy");
    }
    for (const DestinationRule::Subset& subset : rule.subsets) {
      if (!subset.traffic_policy.has_value()) continue;
      // Said where it is written: the rule that defines the subset, at its own index there.
      ConfigKey owner = entry.key;
      if (auto it = entry.subset_owners.find(subset.name); it != entry.subset_owners.end()) owner = it->second;
      auto stored = served.find(owner);
      const auto* written = stored != served.end() ? std::get_if<DestinationRule>(&stored->second->object) : nullptr;
      if (written == nullptr) continue;
      for (size_t i = 0; i < written->subsets.size(); ++i) {
        if (written->subsets[i].name != subset.name) continue;
        check_policy(owner, *subset.traffic_policy, rule_outlier, StrCat("spec.subsets[", i, "].trafficPolicy"));
        break;
      }
    }
  };
  const MergedDestinationRules& rules = mesh.destination_rules();
  for (const auto* index : {&rules.by_namespace, &rules.exported}) {
    for (const auto& [ns, hosts] : *index) {
      for (const auto& [host, entries] : hosts) {
        for (const auto& entry : entries) check_entry(entry);
      }
    }
  }
  for (const auto& [host, entries] : rules.root_local) {
    for (const auto& entry : entries) check_entry(entry);
  }
}

// tcp and tls matches with sourceLabels or sourceNamespace that apply at a Gateway: istiod ignores
// both there (its l4SingleMatch reads the port and gateways alone), and so does cxds, so the match
// applies to every gateway proxy of those Gateways whatever its labels and namespace. A match
// applies at the Gateways the VirtualService is bound to (spec.gateways) that it names, or at all
// of them when it names none.
void GatewaySourceConditions(const ObjectMap& served, std::vector<ConfigWarning>& out) {
  for (const auto& [key, stored] : ObjectsOfKind(served, "VirtualService")) {
    const auto* vs = std::get_if<VirtualService>(&stored->object);
    if (vs == nullptr) continue;
    const auto check = [&](const auto& routes, std::string_view kind) {
      for (size_t i = 0; i < routes.size(); ++i) {
        for (size_t j = 0; j < routes[i].match.size(); ++j) {
          const auto& match = routes[i].match[j];
          const bool labels = !match.source_labels.empty(), ns = !match.source_namespace.empty();
          if (!labels && !ns) continue;
          std::vector<std::string> gateways;
          for (const std::string& name : vs->gateways) {
            const bool named = match.gateways.empty() ||
                               std::find(match.gateways.begin(), match.gateways.end(), name) != match.gateways.end();
            if (name != "mesh" && named) gateways.push_back(name);
          }
          if (gateways.empty()) continue;
          out.push_back({key, StrCat("spec.", kind, "[", i, "].match[", j, "]"), "cxds_gateway_source_ignored",
                         StrCat(labels && ns ? "sourceLabels and sourceNamespace have"
                                : labels     ? "sourceLabels has"
                                             : "sourceNamespace has",
                                " no effect at ", gateways.size() == 1 ? "Gateway " : "Gateways ",
                                absl::StrJoin(gateways, ", "), ", where istiod ignores ", labels && ns ? "them" : "it",
                                " on ", kind, " matches: there the match applies to every gateway proxy")});
        }
      }
    };
    check(vs->tcp, "tcp");
    check(vs->tls, "tls");
  }
}

// v1 Endpoints whose addresses istiod serves to no one, and cxds neither: those of a Service with
// a selector, which Kubernetes does not mirror to EndpointSlices (its own slices serve it), and
// those of an ExternalName Service, an alias with no endpoints of its own.
void EndpointsNotMirrored(const ObjectMap& served, const std::string& suffix, std::vector<ConfigWarning>& out) {
  for (const auto& [key, stored] : ObjectsOfKind(served, kind::kV1Endpoints)) {
    const auto* endpoints = std::get_if<K8sEndpoints>(&stored->object);
    if (endpoints == nullptr || endpoints->skip_mirror || endpoints->mirrored.empty()) continue;
    auto service = served.find(ConfigKey{kind::kService, key.namespace_name, key.name});
    const auto* svc = service == served.end() ? nullptr : std::get_if<K8sService>(&service->second->object);
    if (svc == nullptr || (svc->selector.empty() && svc->external_name.empty())) continue;
    const std::string host = StrCat(key.name, ".", key.namespace_name, ".svc.", suffix);
    out.push_back(
        {key, "", "cxds_endpoints_not_mirrored",
         svc->external_name.empty()
             ? StrCat("Service ", key.namespace_name, "/", key.name,
                      " has a selector: Kubernetes does not mirror these Endpoints to EndpointSlices, so istiod "
                      "(which reads the slices) serves none of their addresses, and neither does cxds (the "
                      "endpoints of ",
                      host, " are its slices')")
             : StrCat("Service ", key.namespace_name, "/", key.name, " is of type ExternalName, an alias of ",
                      svc->external_name,
                      " with no endpoints of its own: istiod serves none of these addresses, and neither does "
                      "cxds")});
  }
}

}  // namespace

Analyzer MeshAnalyzer(std::string domain_suffix, std::string root_namespace, std::string cluster_id) {
  // Kept from call to call: an update of EndpointSlices alone rebuilds their hosts only.
  auto endpoints = std::make_shared<EndpointIndexTracker>(domain_suffix, cluster_id);
  return [suffix = std::move(domain_suffix), root = std::move(root_namespace), cluster = std::move(cluster_id),
          endpoints](const ObjectMap& served) {
    // A context over `served` for this call only: the aliasing pointer owns nothing.
    const MeshContext mesh("", 0, absl::UnixEpoch(), std::shared_ptr<const ObjectMap>(std::shared_ptr<void>(), &served),
                           suffix, root);
    std::vector<ConfigWarning> out = mesh.findings();
    MissingDestinations(served, mesh, suffix, out);
    NoInstances(served, mesh, suffix, cluster, *endpoints, out);
    UnusedTlsRoutes(served, mesh, suffix, out);
    GrpcIgnored(served, out);
    GatewayBindings(served, mesh, suffix, out);
    GatewayServers(served, mesh, out);
    RuleSdsNameClashes(served, mesh, out);
    AddressesOnOpaquePorts(served, out);
    DuplicateAddresses(mesh, out);
    ExportedToNone(served, out);
    FailoverWithoutOutlierDetection(served, mesh, out);
    GatewaySourceConditions(served, out);
    EndpointsNotMirrored(served, suffix, out);
    return out;
  };
}

const std::vector<std::string>& MeshAnalysisCodes() {
  static const std::vector<std::string> kCodes = {"pilot_vservice_dup_domain",
                                                  "pilot_duplicate_envoy_clusters",
                                                  "pilot_eds_no_instances",
                                                  "pilot_conflict_outbound_listener_tcp_over_current_tcp",
                                                  "pilot_conflict_outbound_listener_tcp_over_current_http",
                                                  "IST0101",
                                                  "IST0132",
                                                  "cxds_grpc_ignores",
                                                  "cxds_tls_route_unused",
                                                  "cxds_gateway_server_left_out",
                                                  "cxds_gateway_tls_ignored",
                                                  "cxds_gateway_sds_name_clash",
                                                  "cxds_gateway_only",
                                                  "pilot_destrule_subsets",
                                                  "cxds_delegate_conflict",
                                                  "cxds_delegate_unused",
                                                  "cxds_delegate_bound",
                                                  "cxds_addresses_unused",
                                                  "cxds_exported_to_none",
                                                  "cxds_failover_without_outlier_detection",
                                                  "cxds_gateway_source_ignored",
                                                  "cxds_alias_unserved",
                                                  "cxds_endpoints_not_mirrored"};
  return kCodes;
}

}  // namespace cxds
