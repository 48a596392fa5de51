// The teaching control plane's configuration (README.md, "The teaching control plane"): a
// listener for Envoy, an API listener for proxyless gRPC, one route configuration, one EDS
// cluster and its endpoint, all at one version string per snapshot.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "cache/snapshot.h"

namespace cxds::teaching {

inline constexpr char kEnvoyListenerName[] = "quote-listener";
inline constexpr char kApiListenerName[] = "quote";  // gRPC target xds:///quote
inline constexpr char kRouteName[] = "quote-route";
inline constexpr char kClusterName[] = "inventory";
inline constexpr char kEnvoyListenerAddress[] = "127.0.0.1";
inline constexpr uint32_t kEnvoyListenerPort = 19000;

struct TeachingConfig {
  std::string version;
  uint32_t inventory_port = 18080;
  // When false, the first route's match has no path specifier: encodable and consistent, but
  // a proxy must NACK it.
  bool valid_route = true;
};

// Builds the snapshot for `config`. Fails if the port is not in 1..65535.
absl::StatusOr<SnapshotPtr> BuildTeachingSnapshot(const TeachingConfig& config);

// Parses a `port N` argument: a decimal integer from 1 to 65535, or an error saying why not.
absl::StatusOr<uint32_t> ParsePort(const std::string& text);

}  // namespace cxds::teaching
