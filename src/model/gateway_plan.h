// What a gateway proxy (an Envoy router~ node) serves, planned from the Gateways that pick it:
// its servers per port, and the filter chains of the TCP and TLS ports' listeners. Shared by
// the listener, route and secret generators and by /debug/config_status notes, so that what is
// sent and what is said about it follow from one plan. Pure functions of an immutable
// MeshContext: any thread.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/mesh_model.h"

namespace cxds {

// A gateway proxy's servers per port, as its listeners are built. A TCP or TLS server no route
// applies to (no tcp route, or no tls route match with an SNI name it admits, of the
// VirtualServices bound to its Gateway) is left out first: it takes no connections, so it
// neither decides a port nor holds names. The first other server of a port (Gateways in
// GatewaysFor order, namespace/name; servers in file order) decides the port's kind: plain HTTP (HTTP, HTTP2, GRPC
// servers: one connection manager), plain TCP (one TCP server: Envoy cannot tell plain connections apart, so a second
// is left out), or TLS (HTTPS and TLS servers, terminating or passing through: a filter chain per server by SNI name).
// A server of another kind on that port is left out, since Envoy cannot serve both on one listener; so is a TLS server
// whose every SNI name an earlier server of the port took (Envoy refuses a listener matching one name twice).
struct GatewayServer {
  const Gateway* gateway = nullptr;
  const Gateway::Server* server = nullptr;
  std::vector<std::string> server_names;  // TLS: the SNI names it owns; empty: every name
  std::string left_out;                   // why it is not served; empty when it is
  std::vector<std::string> lost_names;    // TLS: its SNI names an earlier server of the port has
};
struct GatewayPort {
  enum class Kind { kHttp, kTcp, kTls };
  Kind kind = Kind::kHttp;
  bool decided = false;                 // some server decided `kind` (else every server is left out)
  std::vector<GatewayServer> servers;   // served, in order
  std::vector<GatewayServer> left_out;  // with the reason
  std::set<std::string> taken_names;
  bool has_catch_all = false;
  std::string proxy_namespace;  // whose VirtualServices (exportTo) the plan follows
};
// `proxy_namespace`: the gateway proxy's, which decides the VirtualServices it sees (exportTo,
// MeshContext::VirtualServicesOfGateway); "" sees those exported to every namespace only.
std::map<uint32_t, GatewayPort> PlanGatewayPorts(const MeshContext& mesh, const std::vector<const Gateway*>& gateways,
                                                 const std::string& proxy_namespace);

// A server's Secret reference sent under an SDS name that an earlier reference of the same plans
// (ports in order, servers in plan order) uses for another Secret: the certificate of Secret
// "x-cacert" and the CA of Secret "x" are both kubernetes://x-cacert. Envoy is sent the earlier
// one's, as UsedSecretNames decides, so this one is not served as meant. Points into the plans.
struct SdsNameClash {
  const GatewayServer* server = nullptr;  // the later server
  Gateway::Server::SecretRef ref;         // its reference
  std::string sds_name;
  const GatewayServer* first = nullptr;  // the server whose reference Envoy is sent
  Gateway::Server::SecretRef first_ref;
};
std::vector<SdsNameClash> FindSdsNameClashes(const std::map<uint32_t, GatewayPort>& plans);

// One filter chain of a TCP or TLS port's listener. An HTTPS server's chain terminates TLS and
// runs its HTTP routes (`route` null); the others proxy TCP to `route`, the weighted
// destinations of a tcp route (TCP servers, TLS servers that terminate) or of a tls route match
// (servers passing TLS through), short hosts resolved in `route_namespace`.
struct GatewayChain {
  const GatewayServer* entry = nullptr;   // points into the GatewayPort planned from
  std::vector<std::string> server_names;  // SNI names it matches; empty: every connection
  const std::vector<HttpRouteDestination>* route = nullptr;
  std::string route_namespace;
};
// Something of a Gateway or VirtualService that a port's chains leave out, and why.
struct GatewayChainNote {
  ConfigKey object;
  std::string field;  // "spec.servers[1]", "spec.tls[0].match[2].sniHosts"
  std::string reason;
};
struct GatewayChains {
  std::vector<GatewayChain> chains;  // in the order of the port's servers, then of the routes
  // tls route matches whose SNI names another server of the port owns or an earlier match
  // took (and no other chain routes for them), and passthrough servers left with no chain.
  std::vector<GatewayChainNote> notes;
};
// The chains of `port`, as istiod picks routes at a gateway: of the VirtualServices bound to a
// server's Gateway that have a host the server admits (GatewayHostName), in their order, a TCP
// or terminating TLS server takes the first tcp route that applies to the port at that Gateway
// (TcpRouteApplies); a passthrough server gets a chain per tls route match that applies, for
// its sniHosts narrowed to the server's hosts that admit the VirtualService's namespace. Empty
// for a plain HTTP port.
GatewayChains PlanGatewayChains(const MeshContext& mesh, uint32_t port, const GatewayPort& plan);

// istiod's names: the SDS secrets of a terminating server's credentialName (the certificate and
// key; the CA for MUTUAL), and an HTTPS server's route configuration
// https.PORT.PORT_NAME.GATEWAY.NAMESPACE.
std::string GatewaySecretName(const std::string& credential_name);
std::string GatewayCaSecretName(const std::string& credential_name);
// The SDS name a server's Secret reference is sent as: one of the two above.
std::string SdsName(const Gateway::Server::SecretRef& ref);
std::string GatewayTlsRouteName(const Gateway& gateway, const Gateway::Server& server);

}  // namespace cxds
