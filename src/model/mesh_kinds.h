// The mesh config kinds by name, as config sources key them (ConfigKey::kind) and the model's
// push rules test them. The generic kinds (Endpoints, Snapshot, PushContext) are in
// push/push_request.h.
#pragma once

namespace cxds::kind {
inline constexpr char kServiceEntry[] = "ServiceEntry";
inline constexpr char kDestinationRule[] = "DestinationRule";
inline constexpr char kVirtualService[] = "VirtualService";
inline constexpr char kSidecar[] = "Sidecar";
inline constexpr char kWorkloadEntry[] = "WorkloadEntry";
inline constexpr char kGateway[] = "Gateway";
inline constexpr char kSecret[] = "Secret";    // K8sTlsSecret: TLS material for gateways
inline constexpr char kService[] = "Service";  // K8sService
inline constexpr char kEndpointSlice[] = "EndpointSlice";
inline constexpr char kPod[] = "Pod";  // K8sPod
// K8sEndpoints (v1 Endpoints). Not push/push_request.h's kind::kEndpoints, the EDS key of a host.
inline constexpr char kV1Endpoints[] = "Endpoints";
}  // namespace cxds::kind
