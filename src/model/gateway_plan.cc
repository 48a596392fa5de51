#include "model/gateway_plan.h"

#include <algorithm>
#include <functional>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/mesh_kinds.h"

namespace cxds {

using absl::StrCat;

std::string GatewaySecretName(const std::string& credential_name) { return StrCat("kubernetes://", credential_name); }
std::string GatewayCaSecretName(const std::string& credential_name) {
  return StrCat("kubernetes://", credential_name, "-cacert");
}

std::string SdsName(const Gateway::Server::SecretRef& ref) {
  return ref.ca ? GatewayCaSecretName(ref.credential) : GatewaySecretName(ref.credential);
}

std::vector<SdsNameClash> FindSdsNameClashes(const std::map<uint32_t, GatewayPort>& plans) {
  std::vector<SdsNameClash> clashes;
  std::map<std::string, std::pair<const GatewayServer*, Gateway::Server::SecretRef>> first_use;  // by SDS name
  for (const auto& [port, plan] : plans) {
    for (const GatewayServer& entry : plan.servers) {
      for (const Gateway::Server::SecretRef& ref : entry.server->SecretRefs()) {
        std::string name = SdsName(ref);
        const auto [first, inserted] = first_use.try_emplace(name, &entry, ref);
        const Gateway::Server::SecretRef& meant = first->second.second;
        if (inserted || (meant.credential == ref.credential && meant.ca == ref.ca)) continue;
        clashes.push_back({&entry, ref, std::move(name), first->second.first, meant});
      }
    }
  }
  return clashes;
}

std::string GatewayTlsRouteName(const Gateway& gateway, const Gateway::Server& server) {
  return StrCat("https.", server.port, ".", server.port_name, ".", gateway.meta.name, ".", gateway.meta.namespace_name);
}

namespace {

GatewayPort::Kind KindOf(const Gateway::Server& server) {
  if (server.tls_mode != Gateway::Server::TlsMode::kNone) return GatewayPort::Kind::kTls;
  return server.routes == Gateway::Server::Routes::kTcp ? GatewayPort::Kind::kTcp : GatewayPort::Kind::kHttp;
}

const char* KindName(GatewayPort::Kind kind) {
  switch (kind) {
    case GatewayPort::Kind::kHttp:
      return "plain HTTP";
    case GatewayPort::Kind::kTcp:
      return "plain TCP";
    case GatewayPort::Kind::kTls:
      return "TLS";
  }
  return "";
}

std::string GatewayName(const Gateway& gateway) { return StrCat(gateway.meta.namespace_name, "/", gateway.meta.name); }

std::string ServerField(const GatewayServer& entry) {
  return StrCat("spec.servers[", entry.server - entry.gateway->servers.data(), "]");
}

// Whether `server` of `gateway` admits some host of `vs` (its namespace and host rules).
bool Admits(const Gateway& gateway, const Gateway::Server& server, const VirtualService& vs,
            const std::string& suffix) {
  for (const std::string& vs_host : vs.hosts) {
    const std::string host = ResolveHost(vs_host, vs.meta.namespace_name, suffix);
    for (const std::string& server_host : server.hosts) {
      if (!GatewayHostName(gateway, server_host, vs.meta.namespace_name, host).empty()) return true;
    }
  }
  return false;
}

// The SNI names of a tls route match of a VirtualService of `vs_namespace` that a passthrough
// `server` takes: each the narrower of a sniHost and a server host under one another, of the
// server hosts whose namespace part admits that namespace (a name the server keeps for another
// namespace's VirtualServices is not theirs to route).
std::vector<std::string> NarrowedNames(const Gateway& gateway, const Gateway::Server& server,
                                       const std::string& vs_namespace, const std::vector<std::string>& sni_hosts) {
  std::vector<std::string> out;
  const auto add = [&](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (const std::string& sni : sni_hosts) {
    for (const std::string& server_host : server.hosts) {
      const size_t slash = server_host.find('/');
      const std::string ns = server_host.substr(0, slash);
      const std::string name = server_host.substr(slash + 1);
      if (ns != "*" && vs_namespace != (ns == "." ? gateway.meta.namespace_name : ns)) continue;
      if (HostSubsetOf(sni, name)) {
        add(sni);
      } else if (HostSubsetOf(name, sni)) {
        add(name);
      }
    }
  }
  return out;
}

// The VirtualServices bound to `gateway` with a host `server` admits, in their order.
std::vector<const VirtualService*> BoundTo(const MeshContext& mesh, const Gateway& gateway,
                                           const Gateway::Server& server, const std::string& proxy_namespace) {
  std::vector<const VirtualService*> bound;
  for (const VirtualService* vs : mesh.VirtualServicesOfGateway(GatewayName(gateway), proxy_namespace)) {
    if (Admits(gateway, server, *vs, mesh.domain_suffix())) bound.push_back(vs);
  }
  return bound;
}

// Calls `fn(vs, i, j, names)` for each tls route match of the VirtualServices bound to a
// passthrough `server` that applies to its port at its Gateway, with the SNI names it takes
// there (NarrowedNames; none: skipped).
void ForEachPassthroughMatch(
    const MeshContext& mesh, const Gateway& gateway, const Gateway::Server& server, const std::string& proxy_namespace,
    const std::function<void(const VirtualService&, size_t, size_t, const std::vector<std::string>&)>& fn) {
  const std::string gateway_name = GatewayName(gateway);
  for (const VirtualService* vs : BoundTo(mesh, gateway, server, proxy_namespace)) {
    for (size_t i = 0; i < vs->tls.size(); ++i) {
      for (size_t j = 0; j < vs->tls[i].match.size(); ++j) {
        const TlsRoute::Match& match = vs->tls[i].match[j];
        if ((match.port != 0 && match.port != server.port) || !OpaqueMatchAt(match.gateways, *vs, gateway_name)) {
          continue;
        }
        const std::vector<std::string> names = NarrowedNames(gateway, server, vs->meta.namespace_name, match.sni_hosts);
        if (!names.empty()) fn(*vs, i, j, names);
      }
    }
  }
}

// The first tcp route of the VirtualServices bound to `server` that applies to its port at its
// Gateway, and its VirtualService; nulls when there is none.
std::pair<const TcpRoute*, const VirtualService*> PickedTcpRoute(const MeshContext& mesh, const Gateway& gateway,
                                                                 const Gateway::Server& server,
                                                                 const std::string& proxy_namespace) {
  for (const VirtualService* vs : BoundTo(mesh, gateway, server, proxy_namespace)) {
    for (const TcpRoute& route : vs->tcp) {
      if (TcpRouteApplies(route, *vs, GatewayName(gateway), server.port)) return {&route, vs};
    }
  }
  return {nullptr, nullptr};
}

// Why a TCP or TLS server takes no connections (no route applies to it), or "".
std::string NoRouteReason(const MeshContext& mesh, const Gateway& gateway, const Gateway::Server& server,
                          const std::string& proxy_namespace) {
  if (server.routes == Gateway::Server::Routes::kTcp) {
    if (PickedTcpRoute(mesh, gateway, server, proxy_namespace).first != nullptr) return "";
    return StrCat(
        "takes no connections: no tcp route of a VirtualService bound to the Gateway, with a host this "
        "server admits, applies to port ",
        server.port);
  }
  if (server.routes == Gateway::Server::Routes::kTls) {
    bool any = false;
    ForEachPassthroughMatch(mesh, gateway, server, proxy_namespace,
                            [&](const auto&, size_t, size_t, const auto&) { any = true; });
    if (any) return "";
    return StrCat(
        "takes no connections: no tls route match of a VirtualService bound to the Gateway names an SNI "
        "host this server admits on port ",
        server.port);
  }
  return "";
}

}  // namespace

std::map<uint32_t, GatewayPort> PlanGatewayPorts(const MeshContext& mesh, const std::vector<const Gateway*>& gateways,
                                                 const std::string& proxy_namespace) {
  std::map<uint32_t, GatewayPort> ports;
  for (const Gateway* gateway : gateways) {
    for (const Gateway::Server& server : gateway->servers) {
      const GatewayPort::Kind kind = KindOf(server);
      GatewayServer entry{gateway, &server, {}, ""};
      GatewayPort& port = ports[server.port];
      port.proxy_namespace = proxy_namespace;
      // A server no route applies to neither decides the port's kind nor holds names.
      if (std::string reason = NoRouteReason(mesh, *gateway, server, proxy_namespace); !reason.empty()) {
        entry.left_out = std::move(reason);
        port.left_out.push_back(std::move(entry));
        continue;
      }
      if (!port.decided) {
        port.kind = kind;
        port.decided = true;
      }
      if (port.kind != kind) {
        entry.left_out = StrCat("port ", server.port, " already serves ", KindName(port.kind),
                                " for an earlier server; cxds serves one kind of server (plain HTTP, plain TCP or "
                                "TLS) per port");
        port.left_out.push_back(std::move(entry));
        continue;
      }
      if (kind == GatewayPort::Kind::kHttp) {
        port.servers.push_back(std::move(entry));
        continue;
      }
      if (kind == GatewayPort::Kind::kTcp) {
        if (!port.servers.empty()) {
          const GatewayServer& earlier = port.servers.front();
          entry.left_out =
              StrCat("port ", server.port, " already serves plain TCP for server ", ServerField(earlier),
                     " of Gateway ", GatewayName(*earlier.gateway), "; Envoy cannot tell plain TCP connections apart");
          port.left_out.push_back(std::move(entry));
          continue;
        }
        port.servers.push_back(std::move(entry));
        continue;
      }
      // SNI names: the hosts without their namespace; "*" among them matches every name (the
      // chain without server_names), as istiod's SNI hosts of a server.
      bool catch_all = false;
      std::vector<std::string> names;
      for (const std::string& host : server.hosts) {
        const std::string name = host.substr(host.find('/') + 1);
        if (name == "*") catch_all = true;
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
      if (catch_all) names.clear();
      // Envoy refuses a listener with two chains matching the same name: an earlier server keeps it.
      std::vector<std::string> free_names;
      for (const std::string& name : names) {
        if (port.taken_names.insert(name).second) {
          free_names.push_back(name);
        } else {
          entry.lost_names.push_back(name);
        }
      }
      if (catch_all ? port.has_catch_all : free_names.empty()) {
        entry.left_out = StrCat("every SNI name of it on port ", server.port,
                                " is already served by an earlier server (Envoy matches each name once)");
        port.left_out.push_back(std::move(entry));
        continue;
      }
      port.has_catch_all = port.has_catch_all || catch_all;
      entry.server_names = std::move(free_names);
      port.servers.push_back(std::move(entry));
    }
  }
  return ports;
}

GatewayChains PlanGatewayChains(const MeshContext& mesh, uint32_t port, const GatewayPort& plan) {
  GatewayChains out;
  if (plan.kind == GatewayPort::Kind::kHttp) return out;
  // Which server owns each SNI name ("" the catch-all): a route's name that another server owns
  // would match twice. And the names (and catch-all) some chain matches already.
  std::map<std::string, const GatewayServer*> owner;
  for (const GatewayServer& entry : plan.servers) {
    if (entry.server_names.empty()) owner.try_emplace("", &entry);
    for (const std::string& name : entry.server_names) owner.try_emplace(name, &entry);
  }
  std::set<std::string> used;
  // Per tls route match (VirtualService, route, match): the names some server's chain routes for
  // it and those one could not take. A name another server owns is routed by that server's
  // chain when the match applies there too: only names no chain routes are said.
  struct MatchNames {
    std::string gateway;
    std::set<std::string> routed, lost;
  };
  std::map<std::tuple<const VirtualService*, size_t, size_t>, MatchNames> match_names;
  const auto add_note = [&](GatewayChainNote note) {
    // A match lost by two servers is said once.
    for (const GatewayChainNote& said : out.notes) {
      if (said.object == note.object && said.field == note.field && said.reason == note.reason) return;
    }
    out.notes.push_back(std::move(note));
  };
  const auto claim = [&](const std::vector<std::string>& names) {
    if (names.empty()) used.insert("");
    for (const std::string& name : names) used.insert(name);
  };
  for (const GatewayServer& entry : plan.servers) {
    const Gateway& gateway = *entry.gateway;
    const Gateway::Server& server = *entry.server;
    const std::string gateway_name = GatewayName(gateway);
    const ConfigKey gateway_key{kind::kGateway, gateway.meta.namespace_name, gateway.meta.name};
    if (server.routes == Gateway::Server::Routes::kHttp) {
      out.chains.push_back({&entry, entry.server_names, nullptr, ""});
      claim(entry.server_names);
      continue;
    }
    if (server.routes == Gateway::Server::Routes::kTcp) {
      const auto [picked, picked_vs] = PickedTcpRoute(mesh, gateway, server, plan.proxy_namespace);
      if (picked == nullptr) continue;  // left out by PlanGatewayPorts
      out.chains.push_back({&entry, entry.server_names, &picked->route, picked_vs->meta.namespace_name});
      claim(entry.server_names);
      continue;
    }
    bool routed = false;
    ForEachPassthroughMatch(
        mesh, gateway, server, plan.proxy_namespace,
        [&](const VirtualService& vs, size_t i, size_t j, const std::vector<std::string>& narrowed) {
          std::vector<std::string> kept, lost;
          bool catch_all = false;
          for (const std::string& name : narrowed) {
            const std::string key = name == "*" ? "" : name;
            auto it = owner.find(key);
            if ((it != owner.end() && it->second != &entry) || used.contains(key)) {
              lost.push_back(name);
            } else {
              used.insert(key);
              if (key.empty()) catch_all = true;
              kept.push_back(name);
            }
          }
          MatchNames& names = match_names[{&vs, i, j}];
          names.gateway = gateway_name;
          names.lost.insert(lost.begin(), lost.end());
          names.routed.insert(kept.begin(), kept.end());
          if (kept.empty()) return;
          routed = true;
          // Narrowed names are exact names or wildcards; the catch-all stands alone.
          out.chains.push_back(
              {&entry, catch_all ? std::vector<std::string>{} : kept, &vs.tls[i].route, vs.meta.namespace_name});
        });
    if (!routed) {
      add_note({gateway_key, ServerField(entry),
                StrCat("takes no connections: every SNI name its tls route matches take on port ", port,
                       " is another server's or an earlier match's")});
    }
  }
  for (const auto& [match, names] : match_names) {
    const auto& [vs, i, j] = match;
    std::vector<std::string> lost;
    for (const std::string& name : names.lost) {
      if (!names.routed.contains(name)) lost.push_back(name);
    }
    if (lost.empty()) continue;
    add_note({{kind::kVirtualService, vs->meta.namespace_name, vs->meta.name},
              StrCat("spec.tls[", i, "].match[", j, "].sniHosts"),
              StrCat("SNI names ", absl::StrJoin(lost, ", "), " not routed at Gateway ", names.gateway, " port ", port,
                     ": another server of the port or an earlier tls route match has them")});
  }
  return out;
}

}  // namespace cxds
