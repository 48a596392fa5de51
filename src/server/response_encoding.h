// Encoding DiscoveryResponses from shared resources without copying them.
#pragma once

#include <string>
#include <vector>

#include "envoy/service/discovery/v3/discovery.pb.h"
#include "grpcpp/support/byte_buffer.h"
#include "protocol/resource.h"

namespace cxds {

// One SotW response, before encoding. Resources are shared, never copied.
struct OutgoingResponse {
  std::string type_url;
  std::string version;
  std::string nonce;
  std::vector<ResourcePtr> resources;
  // The client supports TTLs in SotW: resources with a TTL go wrapped in a discovery Resource.
  bool wrap_ttl = false;
  // A TTL heartbeat: the wrapped resources carry no body (only name, version and TTL).
  bool heartbeat = false;
  // Only the resources the client lacked, of a type whose responses need not repeat the others
  // (not Listener or Cluster): the client keeps what it held (for the ledger's held resources).
  bool partial = false;
};

// One Delta response, before encoding.
struct OutgoingDeltaResponse {
  std::string type_url;
  std::string system_version;  // for debugging only (docs/protocol-rules.md, R10.7)
  std::string nonce;
  std::vector<ResourcePtr> resources;
  std::vector<std::string> removed;
  bool with_ttl = false;                // the client supports TTLs: resources carry theirs
  std::vector<ResourcePtr> heartbeats;  // TTL heartbeats: name, version and TTL, no body
};

// In a response of at least kCopyFromResources resources, those encoded in fewer than
// kCopyResourcesBelowBytes bytes are copied, in runs, into slices of the response's own rather
// than given a slice each: every slice takes a 32-byte slot in the stream's send buffer, whose
// array gRPC keeps allocated for the stream afterwards (a 1,000-cluster mesh proxy kept ~62 KiB
// of it; bench/results/mesh-memory-2026-12-02-names). Responses with fewer resources share every
// one, unless the whole response is small enough to be copied (kOneSliceBelowBytes).
inline constexpr size_t kCopyResourcesBelowBytes = 1024;
inline constexpr size_t kCopyFromResources = 16;
// A response of fewer bytes than this (an endpoint change's EDS update, typically) is copied
// whole into one slice: one allocation, where sharing its resources took a reference to each, a
// release callback and a slice each for the header, the resources and the trailer. Measured at
// 1,000 streams, a 529-byte Cluster and a 736-byte Listener: 0.21 us per Delta response against
// 0.27 us shared (BM_FanoutDeltaBytes), 0.19 us per SotW response against 0.25 us
// (BM_FanoutSharedBytes). Not for SotW TTL heartbeats, which keep their own encoding.
inline constexpr size_t kOneSliceBelowBytes = 1024;

// Wire bytes of `response` as a gRPC ByteBuffer: a small header and trailer are encoded per
// response; a resource of kCopyResourcesBelowBytes or more contributes a slice that points at
// its own pre-encoded bytes (kept alive by a reference until gRPC releases the slice), smaller
// ones are copied, in runs, into slices of the response's own; a response below
// kOneSliceBelowBytes (not a SotW heartbeat) is one slice.
grpc::ByteBuffer EncodeSotwResponse(const OutgoingResponse& response, const std::string& control_plane_id);

grpc::ByteBuffer EncodeDeltaResponse(const OutgoingDeltaResponse& response, const std::string& control_plane_id);

// The same response as a protobuf message (for tests and debugging; this one copies).
envoy::service::discovery::v3::DiscoveryResponse ToDiscoveryResponse(const OutgoingResponse& response,
                                                                     const std::string& control_plane_id);

envoy::service::discovery::v3::DeltaDiscoveryResponse ToDeltaDiscoveryResponse(const OutgoingDeltaResponse& response,
                                                                               const std::string& control_plane_id);

}  // namespace cxds
