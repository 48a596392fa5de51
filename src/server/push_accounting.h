// Push accounting for one stream: which push each response belongs to, and when a push has
// converged (every response written, then ACKed). The stream core reports each send and each
// matched answer here exactly once; this class turns them into the convergence metric and the
// observer's sent / answered / done stages.
//
// Threading: owned by one stream and confined to its event processing; no lock.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/clock.h"
#include "push/push_observer.h"
#include "push/push_request.h"
#include "server/ack_ledger.h"
#include "server/server_metrics.h"

namespace cxds {

class PushAccounting {
 public:
  // Neither pointer may be null (the stream core passes null objects instead); both outlive this.
  PushAccounting(ServerMetrics* metrics, PushObserver* observer, Clock* clock)
      : metrics_(metrics), observer_(observer), clock_(clock) {}

  // The stream's identity in observer reports; set once, when the node is known.
  void SetTarget(PushTargetInfo target) { target_ = std::move(target); }
  const PushTargetInfo& target() const { return target_; }

  // A push was taken from the queue: responses sent until Finish belong to it.
  void Begin(std::shared_ptr<const PushRequest> request);
  bool active() const { return active_ != nullptr; }
  // The active push changes endpoints only (its sends are logged at debug level).
  bool ActiveIsEndpointOnly() const { return active_ != nullptr && active_->endpoint_only; }
  // Every response of the active push is written (or there were none).
  void Finish();

  // A response of `type_url` went out. An unanswered older response of the type stops counting
  // towards its push's convergence (it converges through the newer one, if at all).
  void Sent(const std::string& type_url, const std::string& version, const std::string& nonce);
  // The ledger matched an ACK or NACK to a response (kUnmatched is ignored). Returns whether
  // it answers a response of an endpoint-only push: its ACK is logged at debug level, as that
  // push's sends are.
  bool Answered(const FeedbackEvent& event);

 private:
  // A push from delivery until its responses are written, then until each is answered.
  struct InFlightPush {
    std::shared_ptr<const PushRequest> request;
    bool endpoint_only = false;  // request->EndpointOnly(), read once: asked at every send and ACK
    int responses = 0;           // responses sent for it
    int outstanding = 0;         // of those, not yet answered (nor superseded)
    bool done = false;           // every response written
    bool rejected = false;
    absl::Time last_answer;   // of the latest ACK/NACK
    bool superseded = false;  // a response of it was replaced before being answered
    bool convergence_recorded = false;
  };
  struct Awaiting {
    std::string nonce;
    std::shared_ptr<InFlightPush> push;
    bool superseded = false;  // a newer response of the type was sent before this was answered
  };
  // Older answers are still reported (a client may ACK late); more than this per type are not.
  static constexpr size_t kMaxAwaitingPerType = 4;

  // Recorded once, when the push is done and every response is ACKed, in whichever order the
  // stream processed write completions and ACKs (requests go first, so an ACK can come first).
  void RecordConvergence(InFlightPush& push);

  ServerMetrics* const metrics_;
  PushObserver* const observer_;
  Clock* const clock_;
  PushTargetInfo target_;
  std::shared_ptr<InFlightPush> active_;
  struct TypeAwaiting {
    std::string type_url;
    std::vector<Awaiting> sent;  // oldest first, at most kMaxAwaitingPerType
  };
  // The type's entry, or null. Entries stay once made (a stream has a few types, bounded by
  // what the server sends), so a send and its ACK allocate nothing here.
  TypeAwaiting* AwaitingOf(const std::string& type_url);

  // Unanswered responses by type, in the order the types were first sent.
  std::vector<TypeAwaiting> awaiting_;
};

}  // namespace cxds
