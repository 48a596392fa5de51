// PushObserver: where each stage of a push is reported, from the config change to the proxy's
// ACK or NACK. The ConvergenceTracker implements it; the dispatcher and the streams call it.
//
// Threading: called from any thread (the pipeline's, the dispatcher's workers, stream
// processing); implementations are thread-safe and quick.
#pragma once

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "push/push_request.h"

namespace cxds {

struct PushTargetInfo {
  int64_t stream_id = 0;
  std::string node_id;
};

class PushObserver {
 public:
  virtual ~PushObserver() = default;
  // A change entered the pipeline (ConfigUpdate); `request` carries its id.
  virtual void OnReceived(const PushRequest& request, absl::Time now) {}
  // The debouncer merged changes into push number `push_number` (0 for the EDS bypass).
  virtual void OnDebounced(const PushRequest& request, uint64_t push_number, absl::Time now) {}
  // Push() started for the request (after it got its PushContext).
  virtual void OnPushStarted(const PushRequest& request, absl::Time now) {}
  virtual void OnQueued(const PushTargetInfo& target, const PushRequest& request, absl::Time now) {}
  virtual void OnDequeued(const PushTargetInfo& target, const PushRequest& request, absl::Time now) {}
  // A response carrying (part of) the push went to the proxy.
  virtual void OnSent(const PushTargetInfo& target, const PushRequest& request, const std::string& type_url,
                      const std::string& version, const std::string& nonce, absl::Time now) {}
  // The proxy answered a response of the push: `accepted` is an ACK, otherwise a NACK with
  // `error`.
  virtual void OnFeedback(const PushTargetInfo& target, const PushRequest& request, const std::string& type_url,
                          const std::string& nonce, bool accepted, const std::string& error, absl::Time now) {}
  // The connection finished the push (every response written); `responses` may be 0 when the
  // generators had nothing for this proxy.
  virtual void OnPushDone(const PushTargetInfo& target, const PushRequest& request, int responses, absl::Time now) {}
};

}  // namespace cxds
