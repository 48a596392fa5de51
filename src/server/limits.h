// What one xDS client may send. Every request is checked against these limits before it
// touches any state; a request over a limit ends the stream with a gRPC status naming the
// limit (INVALID_ARGUMENT for an identity or name that is too long, RESOURCE_EXHAUSTED for a
// count or a size), and the END log line says the same. Nothing a client sends is kept or
// logged unbounded: the ledger keeps at most `max_error_detail_bytes` of a NACK's message.
//
// The defaults, and why:
//  - max_request_bytes = 4 MiB: gRPC's own default receive limit, made explicit on the server
//    (XdsServer::RegisterServices); the largest SotW request (Envoy naming every EDS cluster)
//    of a 50,000-cluster proxy is about 3 MB.
//  - max_node_id_bytes = 1 KiB, max_node_cluster_bytes = 1 KiB: Istio's node ids
//    (sidecar~IP~pod.namespace~namespace.svc.cluster.local) and Envoy's --service-cluster
//    are well under 300 bytes; the node id is copied into every log line, the ledger, the
//    admin pages and the convergence records of the stream.
//  - max_node_metadata_bytes = 64 KiB (serialized): Istio's sidecar metadata (labels,
//    ISTIO_META_* and the proxy config) is a few KiB; the node is kept for the stream's life.
//  - max_resource_names_per_request = 50,000, and the same cap on the names subscribed per
//    type on a stream (Delta adds names over many requests): Envoy names every EDS cluster of
//    its configuration in one SotW request, which for an unscoped mesh is services x ports x
//    subsets and can pass 10,000; 50,000 leaves room for that while bounding what one stream
//    holds (its subscription, the names it was sent, the watch's interest) to a few MB.
//  - max_resource_name_bytes = 4 KiB: xdstp:// names with context parameters stay far below.
//  - max_type_url_bytes = 512, max_types_per_stream = 64: cxds serves a handful of types;
//    every type a client names gets per-stream state.
//  - max_error_detail_bytes = 1 KiB: a NACK's error_detail is kept (ledger, admin, logs) cut
//    to this, with "…(N bytes)" appended; Envoy's rejection messages are usually one line.
#pragma once

#include <cstddef>

namespace cxds {

struct StreamLimits {
  size_t max_request_bytes = 4 << 20;
  size_t max_node_id_bytes = 1024;
  size_t max_node_cluster_bytes = 1024;
  size_t max_node_metadata_bytes = 64 << 10;
  size_t max_resource_names_per_request = 50'000;
  size_t max_resource_name_bytes = 4096;
  size_t max_type_url_bytes = 512;
  size_t max_types_per_stream = 64;
  size_t max_error_detail_bytes = 1024;
};

}  // namespace cxds
