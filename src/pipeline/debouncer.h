// Debouncer: turns a stream of config updates into few pushes (docs/protocol-rules.md,
// "Debounce").
//
//  - ConfigUpdate merges the request into the current batch under a short lock and arms a
//    timer; it never waits for a push and does nothing else.
//  - A batch goes out once it has been quiet for `debounce_after` (each update restarts the
//    quiet period), or once `debounce_max` has passed since its first update even if updates
//    keep coming.
//  - With `eds_debounce` off, an endpoint-only request skips the batch and is pushed at once,
//    on its own.
//  - Pushes run one at a time, on the scheduler's thread (the EDS bypass too, so two pushes
//    never build PushContexts at once, unlike istiod >= 1.31). Updates that arrive during a
//    push form the next batch, which is looked at as soon as the push returns.
//
// Counters: inbound updates (pilot_inbound_updates) and committed ones
// (cxds_committed_updates); inbound minus committed is the backlog. pilot_debounce_time is
// measured from a batch's first update until its push returns, as in istiod.
//
// Threading: ConfigUpdate from any thread; the push function runs on the scheduler's thread.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "common/scheduler.h"
#include "metrics/metrics.h"
#include "push/push_observer.h"
#include "push/push_request.h"

namespace cxds {

struct DebounceOptions {
  absl::Duration debounce_after = absl::Milliseconds(100);
  absl::Duration debounce_max = absl::Seconds(10);
  bool eds_debounce = true;
};

class Debouncer {
 public:
  // Receives each merged request and its push number (1, 2, ...; 0 for an EDS bypass push).
  using PushFn = absl::AnyInvocable<void(PushRequest request, uint64_t push_number)>;

  Debouncer(Scheduler& scheduler, DebounceOptions options, PushFn push, MetricsRegistry* metrics = nullptr,
            PushObserver* observer = nullptr);
  ~Debouncer();  // cancels timers; a batch not yet pushed is dropped
  Debouncer(const Debouncer&) = delete;
  Debouncer& operator=(const Debouncer&) = delete;

  // Adds a request. A request with no reason counts as "unknown"; one with no start time
  // starts now.
  void ConfigUpdate(PushRequest request);

  uint64_t inbound_updates() const;
  uint64_t committed_updates() const;
  uint64_t pushes() const;  // debounced pushes started (the bypass not included)
  const DebounceOptions& options() const { return options_; }

 private:
  void OnTimer();
  void OnBypass();
  // Pushes the batch if it is ready, else re-arms; loops while batches are ready.
  void PushIfReady();
  void RunPush(PushRequest request, uint64_t push_number, uint64_t events, absl::Time batch_start);

  Scheduler& scheduler_;
  Clock& clock_;
  const DebounceOptions options_;
  PushFn push_;
  PushObserver* const observer_;
  Counter* inbound_config_ = nullptr;
  Counter* inbound_eds_ = nullptr;
  Counter* committed_ = nullptr;
  Histogram* debounce_time_ = nullptr;

  mutable Mutex mu_;
  std::optional<PushRequest> batch_ ABSL_GUARDED_BY(mu_);
  uint64_t batch_events_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time batch_start_ ABSL_GUARDED_BY(mu_);
  absl::Time last_update_ ABSL_GUARDED_BY(mu_);
  bool pushing_ ABSL_GUARDED_BY(mu_) = false;
  TimerPtr timer_ ABSL_GUARDED_BY(mu_);
  std::deque<PushRequest> bypass_ ABSL_GUARDED_BY(mu_);
  TimerPtr bypass_timer_ ABSL_GUARDED_BY(mu_);
  uint64_t inbound_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t committed_count_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t push_counter_ ABSL_GUARDED_BY(mu_) = 0;
  bool destroying_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace cxds
