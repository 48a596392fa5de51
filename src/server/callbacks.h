// Hooks through which an embedder observes (and may veto) what the xDS server does.
//
// Threading: every callback runs synchronously on the thread that is processing the stream's
// events, one stream at a time per stream, with no server lock held. Callbacks for different
// streams can run concurrently. Keep them fast: a slow callback stalls its stream.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "server/ack_ledger.h"

namespace cxds {

// A summary of one response, as it goes on the wire.
struct ResponseInfo {
  std::string node_id;
  std::string type_url;
  std::string version;
  std::string nonce;
  std::vector<std::string> resource_names;
  std::vector<std::string> removed_names;  // delta only
  bool delta = false;
};

class ServerCallbacks {
 public:
  virtual ~ServerCallbacks() = default;
  // A stream opened; `type_url` is "" for ADS. An error ends the stream with that status
  // (OnStreamClosed still runs, once).
  virtual absl::Status OnStreamOpen(int64_t stream_id, std::string_view type_url) { return absl::OkStatus(); }
  // Every request, after node and type checks and before classification. An error ends the
  // stream with that status.
  virtual absl::Status OnStreamRequest(int64_t stream_id,
                                       const envoy::service::discovery::v3::DiscoveryRequest& request) {
    return absl::OkStatus();
  }
  // Every delta request, likewise.
  virtual absl::Status OnStreamDeltaRequest(int64_t stream_id,
                                            const envoy::service::discovery::v3::DeltaDiscoveryRequest& request) {
    return absl::OkStatus();
  }
  // A response is about to be written.
  virtual void OnStreamResponse(int64_t stream_id, const ResponseInfo& response) {}
  // A client's feedback (ACK, NACK or UNMATCHED) on an earlier response.
  virtual void OnFeedback(const FeedbackEvent& event) {}
  // The stream ended; `node` is empty if no request ever identified it.
  virtual void OnStreamClosed(int64_t stream_id, const envoy::config::core::v3::Node& node) {}
};

}  // namespace cxds
