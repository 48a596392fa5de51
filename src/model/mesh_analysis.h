// Cross-reference analysis of the served mesh config, as `istioctl analyze` does for Istio:
// config that is valid, and served, but probably not what was meant. The findings are
// warnings (config/config_store.h, ConfigWarning): they refuse nothing. `cxds validate` prints
// them, `cxds serve` logs each new one (CONFIG warning), lists them in /debug/config_status and
// counts them by code in gauges named as istiod's metrics.
//
// Codes:
//   pilot_vservice_dup_domain     a VirtualService host that an older VirtualService also has:
//                                 only the older one's routes are served for it
//   pilot_duplicate_envoy_clusters a host defined by two objects (a Service and a ServiceEntry,
//                                 two ServiceEntries): one of them is served
//   pilot_eds_no_instances        a service port without endpoints, or a DestinationRule subset
//                                 that selects none of its host's endpoints (of a DNS
//                                 ServiceEntry, none of its names)
//   pilot_conflict_outbound_listener_tcp_over_current_tcp, ..._tcp_over_current_http
//                                 an opaque port, or an SNI name of a TLS port or tls route,
//                                 that another service's Envoy filter chain has (MeshContext)
//   IST0101                       a route to a host no object defines, or to a port it lacks,
//                                 a VirtualService bound to a Gateway that does not exist, or an
//                                 HTTPS server whose credentialName(s) Secret (or the CA, its own
//                                 or caCertCredentialName's, for MUTUAL and OPTIONAL_MUTUAL)
//                                 exists in no namespace (istioctl's ReferencedResourceNotFound)
//   IST0132                       a VirtualService bound to a Gateway none of whose servers
//                                 admits its hosts (istioctl's VirtualServiceHostNotFoundInGateway)
//   cxds_grpc_ignores             config proxyless gRPC clients do not implement (a consistent
//                                 hash by cookie, source IP or query parameter; warmup;
//                                 proxyProtocol; header
//                                 operations, rewrite, mirror, method/authority/scheme/query
//                                 matches): Envoy nodes get it, gRPC nodes do without
//   cxds_tls_route_unused         a tls route match no TLS or HTTPS port of the VirtualService's
//                                 hosts takes: no Envoy listener uses it
//   cxds_gateway_server_left_out  a Gateway server its listeners leave out: servers of two kinds
//                                 (plain HTTP, plain TCP, TLS) on one port, a second plain TCP
//                                 server, a TLS server whose every SNI name an earlier server of
//                                 the port has (model/gateway_plan.h PlanGatewayPorts); a TCP or
//                                 TLS server no tcp or tls route applies to, and a tls route
//                                 match whose SNI names another chain has (PlanGatewayChains); a
//                                 server two Gateways that can pick one proxy leave out together
//   cxds_gateway_tls_ignored      a Gateway server's tls field Istio accepts and istiod ignores
//                                 (a PASSTHROUGH server's; on an HTTP server, anything but
//                                 httpsRedirect; files beside a credentialName; a SIMPLE
//                                 server's CA), with the reason
//   cxds_gateway_sds_name_clash   a Gateway server whose Secret (certificate or CA) is sent under
//                                 an SDS name an earlier server of the same proxies uses for
//                                 another Secret's (credential "x-cacert" and the CA of "x"):
//                                 Envoy gets the earlier one's, so this one is not served as meant;
//                                 and a DestinationRule tls credentialName whose name a Gateway
//                                 server (which wins) or another rule uses so
//   cxds_gateway_only             a DestinationRule tls credentialName: gateway proxies use it,
//                                 sidecars connect without it (as in Istio)
//   cxds_exported_to_none         a Service or ServiceEntry exported to no namespace ("~"):
//                                 served to no proxy
//   pilot_destrule_subsets        a DestinationRule subset another rule of the same host and
//                                 namespace defines too (rules are merged; the older one's is served)
//   cxds_failover_without_outlier_detection
//                                 localityLbSetting failover or failoverPriority where no outlier
//                                 detection applies: no proxy would fail over, none is told to
//   cxds_gateway_source_ignored   a tcp or tls match's sourceLabels or sourceNamespace where it
//                                 applies at a Gateway: ignored there, as by istiod
#pragma once

#include <string>

#include "config/config_store.h"
#include "model/mesh_model.h"

namespace cxds {

// The analysis, for ConfigStore::Options::analyze. Runs on every accepted change, in time
// linear in the objects (WorkloadEntries are matched by namespace and a selector label; a
// selector of topology labels alone, AugmentLabels, reads every entry of its namespace).
// `root_namespace`: Istio's meshConfig.rootNamespace; `cluster_id`: the cluster the workloads
// are in, which subsets may select (AugmentLabels), as MeshModel's. The analyzer keeps the
// endpoint index of the last state it saw (EndpointIndexTracker): give each one its own store.
Analyzer MeshAnalyzer(std::string domain_suffix, std::string root_namespace = kRootNamespace,
                      std::string cluster_id = kDefaultClusterId);

// Every code MeshAnalyzer may report, so that gauges of codes with no finding read 0.
const std::vector<std::string>& MeshAnalysisCodes();

}  // namespace cxds
