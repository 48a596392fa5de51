// PushQueue: the per-connection queue of pushes, with istiod's invariants
// (docs/protocol-rules.md, "PushQueue merge"):
//  1. a connection is pending at most once, and holds its place in line (FIFO by first
//     enqueue; merging never moves it);
//  2. a connection is never pending and processing at once: a request for a connection being
//     processed is merged and kept aside, and MarkDone puts the connection at the back of the
//     line with it;
//  3. so each connection has at most one push in progress and at most one merged push waiting.
// Merging follows PushRequest::Merge; the merged start is the earliest.
//
// It also tracks deliveries (a connection handed out by Dequeue until DeliveryFinished), so
// Remove can promise that no delivery to a closing connection is in progress when it returns.
//
// Thread-safe. Dequeue blocks until a connection is pending or the queue shuts down.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "common/mutex.h"
#include "push/push_request.h"

namespace cxds {

// A connection that can be pushed to. Implemented by xDS streams.
class PushTarget {
 public:
  virtual ~PushTarget() = default;
  // Hands a (merged) push to the connection. The connection reports completion with
  // PushDispatcher::Done. Called without any queue lock held.
  virtual void DeliverPush(PushRequestPtr request) = 0;
  // For logs and debug pages.
  virtual std::string PushTargetName() const = 0;
};

class PushQueue {
 public:
  struct Item {
    PushTarget* target;
    PushRequestPtr request;
  };

  // Adds `request` for `target`, merging as described above. No-op after ShutDown.
  // The request is shared, not copied (a push enqueues the same one for every connection);
  // merging makes a new one.
  void Enqueue(PushTarget* target, PushRequestPtr request);
  // Waits for the first pending connection; nullopt once shut down and empty. The connection
  // is then processing and being delivered.
  std::optional<Item> Dequeue();
  // As Dequeue, without waiting.
  std::optional<Item> TryDequeue();
  // The delivery of a dequeued item returned (see Remove).
  void DeliveryFinished(PushTarget* target);
  // The connection finished its push. Returns false if it was not processing. If requests
  // arrived meanwhile, the connection goes to the back of the line with them merged.
  bool MarkDone(PushTarget* target);
  // Forgets the connection (it is closing): drops its pending and processing requests and
  // waits until no delivery to it is in progress. Returns whether it was processing.
  bool Remove(PushTarget* target);
  // Stops accepting requests and wakes waiters; queued items can still be dequeued.
  void ShutDown();

  size_t Pending() const;     // connections waiting (processing ones not counted)
  size_t Processing() const;  // connections dequeued and not marked done
  bool IsPending(PushTarget* target) const;
  bool IsProcessing(PushTarget* target) const;
  // The merged request waiting for `target` (pending, or kept aside while processing).
  PushRequestPtr Waiting(PushTarget* target) const;  // null if none

 private:
  // A waiting request: shared with its sender until the first merge, then the queue's own
  // copy, merged into in place (so N merges cost one copy, not N).
  struct Slot {
    PushRequestPtr shared;
    std::shared_ptr<PushRequest> owned;
    PushRequestPtr get() const { return owned != nullptr ? owned : shared; }
    bool empty() const { return shared == nullptr && owned == nullptr; }
    void Merge(PushRequestPtr incoming);
  };
  std::optional<Item> PopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  std::deque<PushTarget*> queue_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<PushTarget*, Slot> pending_ ABSL_GUARDED_BY(mu_);
  // Connections dequeued and not done; the value is what arrived meanwhile (empty: nothing).
  absl::flat_hash_map<PushTarget*, Slot> processing_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<PushTarget*, int> delivering_ ABSL_GUARDED_BY(mu_);  // deliveries in progress
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace cxds
