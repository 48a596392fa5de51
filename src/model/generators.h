// xDS generators of the mesh model (Istio's naming, so users recognise what they see):
//
//   CDS  outbound|PORT||HOST and outbound|PORT|SUBSET|HOST per visible service port and
//        DestinationRule subset; EDS clusters over ADS; load balancer, circuit breakers and
//        (Envoy only) outlier detection from the DestinationRule.
//   EDS  one ClusterLoadAssignment per watched cluster, from the endpoint index (outside the
//        PushContext), filtered by the subset's labels. Endpoint-only pushes regenerate only the
//        clusters of the hosts that changed.
//   LDS  Envoy: one listener per port, ADDRESS_PORT, with the HTTP connection manager, RDS
//        route configuration "PORT" and the router filter; an opaque port (TCP, TLS, ...) gets
//        TCP proxy filter chains instead (MeshContext::OpaqueChains: by SNI name for TLS and
//        HTTPS, with the TLS inspector). Gateway proxies: a listener per port of their
//        Gateways' servers (model/gateway_plan.h). Proxyless gRPC: one API listener per HTTP
//        service port, HOST:PORT (target xds:///HOST:PORT), RDS route configuration HOST:PORT.
//   SDS  Envoy gateway proxies: kubernetes://NAME and kubernetes://NAME-cacert, the TLS material
//        of their terminating servers' credentialName Secrets, only to a stream that proved the
//        proxy's namespace and an allowed service account (SecretsRefusal).
//   RDS  Envoy: route configuration "PORT" with a virtual host per service on that port;
//        gRPC: route configuration HOST:PORT with one virtual host. Routes from VirtualService
//        HTTP routes (URI and header matches, weighted destinations, timeout, retries), else
//        a default route to outbound|PORT||HOST.
//
// Every resource goes through the ResourceCache: clusters and assignments keyed by name and
// client kind, depending on their service, endpoints and DestinationRule; listeners and route
// configurations also by scope, dropped by every full push.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "model/gateway_plan.h"
#include "model/mesh_model.h"
#include "model/proxy.h"
#include "pipeline/generator.h"
#include "pipeline/push_pipeline.h"

namespace cxds {

struct TranslationOptions {
  std::string listener_address = "127.0.0.1";  // where Envoy sidecars' outbound listeners bind
  // Where gateway proxies' listeners bind (istiod: 0.0.0.0, which a gateway taking traffic
  // from outside needs; loopback by default, as everything cxds starts).
  std::string gateway_address = "127.0.0.1";
  // Who may be sent Secrets (private keys): "namespace/serviceaccount" of proven identities,
  // istiod's check that a gateway's service account may read Secrets. Empty: nobody.
  std::vector<std::string> secret_readers;
};

// Registers the four generators on `pipeline`.
void AddMeshGenerators(PushPipeline& pipeline, const MeshModel& model, TranslationOptions options = {});

// The proxy filter (istiod's ProxyNeedsPush): a change to a service, its endpoints or its
// DestinationRule reaches only proxies that can see that host (with the labels `model`'s
// registry gives them).
ProxyFilter MeshProxyFilter(const MeshModel& model);
// The proxy update check (istiod's ProxyUpdate): a push that changes a proxy's own workload
// (NamesProxyWorkload, with `model`'s cluster) reaches that proxy in full.
ProxyUpdateCheck MeshProxyUpdate(const MeshModel& model);

// "outbound|PORT|SUBSET|HOST"
std::string ClusterName(uint32_t port, const std::string& subset, const std::string& host);
// The route domain of a ServiceEntry address, as in a Host header: an IPv6 one in brackets.
// Shared with analysis (pilot_vservice_dup_domain), which must name the domains Envoy is sent.
std::string AddressDomain(const std::string& address);

// What an HTTP route has that proxyless gRPC does not implement (gRFC A28), as the generators
// leave it out for gRPC nodes: field names, with "(the route is left out for gRPC)" where the
// whole route is. Empty: gRPC nodes get all of it. Shared with analysis (cxds_grpc_ignores).
std::vector<std::string> GrpcIgnoredRouteFields(const HttpRoute& http);

// Why a proxy may not be sent Secrets (private keys), or "" when it may: it must be an Envoy
// gateway proxy (router~) whose stream's authenticator proved its namespace and a service
// account among `readers` ("namespace/serviceaccount", TranslationOptions::secret_readers).
// The node's own word (router~, its labels) is not enough: any workload of the namespace can
// claim it.
std::string SecretsRefusal(const ProxyInfo& proxy, const PeerIdentity& identity,
                           const std::vector<std::string>& readers);
// The SDS names the HTTPS servers of the Gateways picking `proxy` use (served ones only), and
// those of the DestinationRule tls credentialNames of the clusters a gateway proxy is sent, each
// with the credentialName it is of and whether it is the CA or the certificate. The first use of
// a name decides its meaning: Gateway servers in port order, then rules by host.
struct SecretUse {
  std::string credential;
  bool ca = false;
  std::string rule;  // for a DestinationRule's tls credentialName: "DestinationRule NS/NAME"; else empty
};
// A DestinationRule's use of an SDS name that an earlier use gives another Secret (the CA of
// credential "x" and the certificate of credential "x-cacert" are both kubernetes://x-cacert):
// Envoy is sent `sent`'s, so the rule's cluster does not get what it means.
struct SecretNameClash {
  std::string sds_name;
  SecretUse lost;  // the rule's
  SecretUse sent;  // rule empty: a Gateway server's
};
std::map<std::string, SecretUse> UsedSecretNames(const MeshContext& mesh, const ProxyInfo& proxy,
                                                 std::vector<SecretNameClash>* clashes = nullptr);
// The Secret of `namespace_name` holding credential `credential`'s certificate and key, or with
// `ca` its CA (Secret CREDENTIAL-cacert when it holds one, else CREDENTIAL's own); null if none.
const K8sTlsSecret* FindMaterial(const MeshContext& mesh, const std::string& namespace_name,
                                 const std::string& credential, bool ca);

// One thing of the config that applies to a proxy and that it is not given, and why.
struct ProxyConfigNote {
  std::string resource;  // the route configuration, cluster or listener it concerns
  std::string object;    // "VirtualService shop/reviews"
  std::string field;     // "spec.http[0]", "spec.subsets[1].trafficPolicy"
  std::string reason;
};

// For an Envoy gateway proxy: what its Gateways' servers need that it is not given, and why:
// servers its listeners leave out, servers no route applies to and tls route matches not
// routed (PlanGatewayChains), and the SDS secrets of terminating servers that are not served
// (the stream proved no namespace, or no such Secret in the proxy's namespace). Without these
// Envoy keeps the TLS listener warming and serves none of its chains. At most `limit` notes.
std::vector<ProxyConfigNote> GatewayConfigNotes(const MeshContext& mesh, const ProxyInfo& proxy,
                                                const PeerIdentity& identity, const std::vector<std::string>& readers,
                                                size_t limit = 1000);

// For a proxyless gRPC node of `proxy_namespace` (and `proxy_labels`, which choose among
// DestinationRules with workload selectors) holding `view` (its route configurations HOST:PORT
// and clusters):
// the VirtualService route fields and DestinationRule policy fields of what it holds that it is
// generated without, by the same rules as the generators. For /debug/config_status?proxy=ID.
// At most `limit` notes (a proxy may hold thousands of clusters).
std::vector<ProxyConfigNote> GrpcConfigNotes(const MeshContext& mesh, const Snapshot& view,
                                             const std::string& proxy_namespace, size_t limit = 1000,
                                             const LabelMap* proxy_labels = nullptr);

}  // namespace cxds
