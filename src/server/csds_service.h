// CSDS: envoy.service.status.v3.ClientStatusDiscoveryService on the xDS port, answered from
// the ACK/NACK ledger (what each stream was sent and what its client said), as istiod does.
//
// One ClientConfig per connected proxy stream (node id), with a GenericXdsConfig per resource
// the client holds as far as the server knows (AckLedger::Held): type, name, version (the SotW
// response's version_info, or the Delta resource version), when it was sent, the resource
// itself unless exclude_resource_contents, and its status:
//   config_status  SYNCED, STALE (sent, not answered yet), ERROR (NACKed)  (server/sync_state.h)
//   client_status  ACKED, NACKED (with error_state: the error and the rejected version), or
//                  UNKNOWN while unanswered.
// A type the stream was never sent is not listed. Node matchers on the node id (exact, prefix,
// suffix, contains, optionally ignoring case) select proxies; a regex or metadata matcher is
// refused as not supported by cxds.
//
// Who may ask: with mTLS (an Authenticator), the caller must authenticate and sees only
// proxies whose identity is in its own trust domain and namespace. Without one (plaintext),
// any caller sees every proxy, as anyone who reaches a plaintext xDS port can already claim
// any node.
//
// Bounds: one answer is at most `max_response_bytes` (RESOURCE_EXHAUSTED past it, asking for
// node matchers or exclude_resource_contents); at most `max_streams` StreamClientStatus calls
// at once. Thread-safe: the ledger is.
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "envoy/service/status/v3/csds.pb.h"
#include "grpcpp/impl/service_type.h"
#include "server/ack_ledger.h"
#include "server/authenticator.h"

namespace cxds {

struct CsdsOptions {
  size_t max_response_bytes = 16 << 20;
  int max_streams = 8;
};

// The answer to `request` from `ledger`. `caller`: null when any proxy may be shown;
// otherwise only proxies whose identity has its trust domain and namespace.
absl::StatusOr<envoy::service::status::v3::ClientStatusResponse> BuildClientStatus(
    const AckLedger& ledger, const envoy::service::status::v3::ClientStatusRequest& request, const PeerIdentity* caller,
    const CsdsOptions& options);

// The gRPC service (FetchClientStatus and StreamClientStatus). `authenticator` may be null.
std::unique_ptr<grpc::Service> MakeCsdsService(const AckLedger& ledger, const Authenticator* authenticator,
                                               CsdsOptions options = {});

}  // namespace cxds
