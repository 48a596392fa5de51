// The HTTP/2 transport settings every xDS server of cxds applies to its gRPC server builder.
// Kept apart from XdsServer so that the raw fan-out baseline (cmd/cxds-fanout) runs on the same
// transport as the server it is measured against: only the xDS logic differs between them.
#pragma once

#include "grpc/grpc.h"
#include "grpcpp/server_builder.h"

namespace cxds {

inline void ApplyXdsTransportSettings(grpc::ServerBuilder& builder) {
  // No port reuse: gRPC's default SO_REUSEPORT would let a second control plane bind the same
  // port and the kernel spread proxies over both.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // No BDP probing: it sizes the window for data the server receives, and a proxy sends small
  // requests and ACKs. With it on, every ACK made the server send a PING and a WINDOW_UPDATE
  // and read the proxy's answer: two more socket calls and a timer per push and stream.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
}

}  // namespace cxds
