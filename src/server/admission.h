// AdmissionLimiter: new streams are admitted at a bounded rate (istiod's
// PILOT_MAX_REQUESTS_PER_SECOND, a token bucket with burst 1 and a 1 s wait), so a reconnect
// storm after a restart is spread out instead of landing at once. A stream that would wait
// longer than `max_wait` is refused with RESOURCE_EXHAUSTED (the client retries with backoff).
//
// Time is injected (the Clock); waiting is the caller's business (a Scheduler timer), so
// nothing sleeps. Thread-safe.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace cxds {

class AdmissionLimiter {
 public:
  // `per_second` <= 0 admits everything at once.
  AdmissionLimiter(double per_second, absl::Duration max_wait, Clock& clock)
      : interval_(per_second > 0 ? absl::Seconds(1) / per_second : absl::ZeroDuration()),
        max_wait_(max_wait),
        clock_(clock) {}

  // Reserves the next admission: how long to wait before starting (zero: now), or
  // ResourceExhausted (nothing reserved) if that is longer than `max_wait`.
  absl::StatusOr<absl::Duration> Admit() {
    if (interval_ == absl::ZeroDuration()) return absl::ZeroDuration();
    const absl::Time now = clock_.Now();
    MutexLock lock(&mu_);
    const absl::Time slot = std::max(now, next_free_);
    const absl::Duration wait = slot - now;
    if (wait > max_wait_) {
      refused_++;
      return absl::ResourceExhaustedError("too many new xDS streams: admission rate limit reached, retry later");
    }
    next_free_ = slot + interval_;
    admitted_++;
    return wait;
  }

  uint64_t admitted() const {
    MutexLock lock(&mu_);
    return admitted_;
  }
  uint64_t refused() const {
    MutexLock lock(&mu_);
    return refused_;
  }

 private:
  const absl::Duration interval_;
  const absl::Duration max_wait_;
  Clock& clock_;
  mutable Mutex mu_;
  absl::Time next_free_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t admitted_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cxds
