#include "server/push_accounting.h"

#include <algorithm>

namespace cxds {

void PushAccounting::Begin(std::shared_ptr<const PushRequest> request) {
  active_ = std::make_shared<InFlightPush>();
  active_->endpoint_only = request != nullptr && request->EndpointOnly();
  active_->request = std::move(request);
}

void PushAccounting::Finish() {
  std::shared_ptr<InFlightPush> push = std::move(active_);
  active_ = nullptr;
  if (push == nullptr) return;
  push->done = true;
  RecordConvergence(*push);
  observer_->OnPushDone(target_, *push->request, push->responses, clock_->Now());
}

PushAccounting::TypeAwaiting* PushAccounting::AwaitingOf(const std::string& type_url) {
  for (TypeAwaiting& type : awaiting_) {
    if (type.type_url == type_url) return &type;
  }
  return nullptr;
}

void PushAccounting::Sent(const std::string& type_url, const std::string& version, const std::string& nonce) {
  TypeAwaiting* awaiting = AwaitingOf(type_url);
  if (awaiting != nullptr) {
    for (Awaiting& older : awaiting->sent) {
      if (older.superseded) continue;
      older.superseded = true;
      older.push->outstanding--;
      older.push->superseded = true;
    }
    if (awaiting->sent.size() >= kMaxAwaitingPerType) {
      awaiting->sent.erase(awaiting->sent.begin(),
                           awaiting->sent.end() - static_cast<ptrdiff_t>(kMaxAwaitingPerType - 1));
    }
  }
  if (active_ == nullptr) return;
  active_->responses++;
  active_->outstanding++;
  if (awaiting == nullptr) awaiting = &awaiting_.emplace_back(TypeAwaiting{type_url, {}});
  awaiting->sent.push_back(Awaiting{nonce, active_});
  observer_->OnSent(target_, *active_->request, type_url, version, nonce, clock_->Now());
}

bool PushAccounting::Answered(const FeedbackEvent& event) {
  if (event.kind == FeedbackKind::kUnmatched) return false;
  TypeAwaiting* awaiting = AwaitingOf(event.type_url);
  if (awaiting == nullptr) return false;
  std::vector<Awaiting>& sent = awaiting->sent;
  auto match = std::find_if(sent.begin(), sent.end(), [&](const Awaiting& a) { return a.nonce == event.nonce; });
  if (match == sent.end()) return false;
  const bool answered_superseded = match->superseded;
  std::shared_ptr<InFlightPush> push = std::move(match->push);
  // The client answers in order: what was sent before this will not be answered now.
  sent.erase(sent.begin(), match + 1);
  const bool accepted = event.kind == FeedbackKind::kAck;
  if (!accepted) push->rejected = true;
  if (!answered_superseded) {
    push->outstanding--;
    push->last_answer = event.time;
    // Metrics first: whoever sees the stage reported has the histogram updated too.
    RecordConvergence(*push);
  }
  observer_->OnFeedback(target_, *push->request, event.type_url, event.nonce, accepted, event.error, event.time);
  return push->endpoint_only;
}

void PushAccounting::RecordConvergence(InFlightPush& push) {
  if (push.convergence_recorded || !push.done || push.outstanding != 0 || push.responses == 0 || push.rejected ||
      push.superseded || push.request->start == absl::InfiniteFuture()) {
    return;
  }
  push.convergence_recorded = true;
  metrics_->Converged(absl::ToDoubleSeconds(push.last_answer - push.request->start));
}

}  // namespace cxds
