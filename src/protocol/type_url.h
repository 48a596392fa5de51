// xDS resource type URLs and the per-type protocol properties the server relies on.
#pragma once

#include <string>
#include <string_view>

#include "protocol/type_url_map.h"  // IWYU pragma: export

namespace cxds {

inline constexpr std::string_view kTypePrefix = "type.googleapis.com/";
inline constexpr std::string_view kClusterType = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
inline constexpr std::string_view kEndpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
inline constexpr std::string_view kListenerType = "type.googleapis.com/envoy.config.listener.v3.Listener";
inline constexpr std::string_view kRouteType = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
inline constexpr std::string_view kSecretType = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret";
// The wrapper used for TTL'd resources in SotW and for every resource in Delta.
inline constexpr std::string_view kResourceWrapperType = "type.googleapis.com/envoy.service.discovery.v3.Resource";

// LDS and CDS: a SotW response carries every resource the client subscribes to, and leaving one
// out deletes it (docs/protocol-rules.md, R4.3).
bool IsFullStateType(std::string_view type_url);

// LDS and CDS are the only types where an empty or "*" subscription means wildcard; every
// other type treats an empty name list as "subscribed to nothing" (docs/protocol-rules.md,
// R4.2, R4.1).
bool IsWildcardCapableType(std::string_view type_url);

// Position of a type in the ADS send order CDS, EDS, LDS, RDS, SDS; unknown types follow, in
// type URL order (docs/protocol-rules.md, R8.1, E40).
int PushOrderRank(std::string_view type_url);

// Short name for logs and tables: CDS, EDS, LDS, RDS, SDS, or the message name for other types.
std::string_view ShortTypeName(std::string_view type_url);

// The full type URL of a message type name (e.g. "envoy.config.cluster.v3.Cluster").
std::string TypeUrlOf(std::string_view full_message_name);

}  // namespace cxds
