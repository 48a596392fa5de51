// PushDispatcher: the PushQueue plus the push throttle. Every push to a connection, from the
// snapshot cache or from the generating pipeline, goes through one dispatcher:
//
//   Enqueue(conn, request) -> PushQueue (merge, one per connection) -> slot (at most
//   `max_in_flight` connections generating at once) -> conn->DeliverPush -> Generated(conn)
//   -> ... responses written ... -> Done(conn)
//
// A slot is held from dequeue until the connection reports Generated: its responses are
// computed and handed to its writer (or Done, if it never reports Generated). The connection
// itself stays in progress until Done (every response written), so it still has at most one
// push in progress and one merged push waiting. istiod holds the slot until the whole send
// returns; here a proxy that stops reading holds no slot while its write waits for the send
// timeout, so a few stalled proxies cannot stall every other proxy's pushes.
//
// Threading: with `worker_threads` > 0, that many threads deliver what Enqueue queues (the
// enqueuing thread may hold a watcher's lock, so it never delivers itself). With 0 (inline
// mode, used by deterministic tests), deliveries run on the thread that enqueues. In both
// modes the thread that frees a slot (Generated or Done) delivers the next queued push with
// it, so the next push starts without a thread hand-off. A thread never delivers recursively
// (a slot freed inside a delivery is left to the loop already running on that thread, or to a
// worker). Every method is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "metrics/metrics.h"
#include "push/push_observer.h"
#include "server/push_queue.h"

namespace cxds {

// istiod's default PILOT_PUSH_THROTTLE: min(15 + 5 * cores, 100).
int DefaultPushThrottle();

class PushDispatcher {
 public:
  struct Options {
    int max_in_flight = 0;               // 0: DefaultPushThrottle()
    int worker_threads = 0;              // 0: inline mode
    Clock* clock = nullptr;              // defaults to RealClock()
    MetricsRegistry* metrics = nullptr;  // may be null
    PushObserver* observer = nullptr;    // may be null
  };

  explicit PushDispatcher(Options options);
  ~PushDispatcher();  // stops the workers; connections must have been removed
  PushDispatcher(const PushDispatcher&) = delete;
  PushDispatcher& operator=(const PushDispatcher&) = delete;

  // Queues a push for `target` (merged with what is queued or in progress for it). Never
  // blocks on other connections' pushes in worker mode.
  void Enqueue(PushTarget* target, const PushTargetInfo& info, PushRequestPtr request);
  // `target` has computed its current push and handed the responses to its writer: its slot
  // goes to the next queued push, delivered on the calling thread (or is freed); `target`
  // stays in progress until Done. Optional: Done frees a slot still held. Call with no lock
  // held that a delivery could need.
  void Generated(PushTarget* target);
  // `target` finished its current push (every response written): re-queues what arrived
  // meanwhile, and passes on its slot if it still holds one. Same locking rule.
  void Done(PushTarget* target);
  // `target` is closing: forgets it, frees its slot if it held one, and returns once no
  // delivery to it is in progress. Must not be called from inside its own DeliverPush.
  void Remove(PushTarget* target);

  int max_in_flight() const { return max_in_flight_; }
  int in_flight() const;           // connections pushing now (not counting idle workers' reserved slots)
  int max_in_flight_seen() const;  // the most connections ever pushing at once
  const PushQueue& queue() const { return queue_; }
  PushObserver* observer() const { return observer_; }
  Clock& clock() const { return *clock_; }

 private:
  void Deliver(PushQueue::Item item);
  void Pump();  // inline mode
  void WorkerLoop();
  void ReleaseSlot();
  // The slot `target` holds, if any, goes to the next queued push (or is freed).
  void PassSlotOf(PushTarget* target);
  // A slot whose holder the caller just took out of slot_holders_ goes to the next queued push
  // (or is freed).
  void PassSlot();

  const int max_in_flight_;
  Clock* const clock_;
  PushObserver* const observer_;
  PushQueue queue_;
  Histogram* queue_time_ = nullptr;
  MetricsRegistry* metrics_ = nullptr;
  Gauge* in_flight_gauge_ = nullptr;

  mutable Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // slots taken, including reserved ones
  int reserved_ ABSL_GUARDED_BY(mu_) = 0;   // slots held by workers waiting for a push
  int max_seen_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Hash containers and a shared info: each push looks its connection up in both, and with
  // thousands of connections a tree's nodes (and a copied node id) were cold misses per push.
  absl::flat_hash_map<PushTarget*, std::shared_ptr<const PushTargetInfo>> infos_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<PushTarget*> slot_holders_ ABSL_GUARDED_BY(mu_);     // delivered, not yet Generated/Done
  std::map<std::string, Counter*> trigger_counters_ ABSL_GUARDED_BY(mu_);  // by reason
  std::vector<std::thread> workers_;
};

}  // namespace cxds
