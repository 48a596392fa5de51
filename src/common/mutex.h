// cxds::Mutex: a std::mutex with abseil's thread-safety annotations and absl::Mutex-style
// conditional waits (Await re-checks its predicate whenever the mutex is released).
//
// Why not absl::Mutex: Debian's abseil is built without ThreadSanitizer annotations, so TSan
// cannot see absl::Mutex as a lock and reports every access it protects as a race. std::mutex
// goes through pthread, which TSan understands, so our TSan build checks our locking for real.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace cxds {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    if (waiters_ > 0) cv_.notify_all();  // an awaited condition may hold now
    mu_.unlock();
  }

  // REQUIRES: held. Releases the mutex until `condition()` is true (evaluated with the mutex
  // held), then returns with it held.
  template <typename Condition>
  void Await(Condition condition) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    ++waiters_;
    bool first = true;
    while (!condition()) {
      // Waiting releases the mutex like Unlock: the caller may have changed what another
      // waiter waits for. Only the first release can have (later wake-ups change nothing).
      if (first && waiters_ > 1) cv_.notify_all();
      first = false;
      cv_.wait(lock);
    }
    --waiters_;
    lock.release();
  }

  // As Await, but gives up at `deadline` (real time); returns whether `condition()` holds.
  template <typename Condition>
  bool AwaitWithDeadline(Condition condition, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    ++waiters_;
    bool ok = condition();
    bool first = true;
    while (!ok) {
      if (first && waiters_ > 1) cv_.notify_all();  // see Await
      first = false;
      if (cv_.wait_until(lock, absl::ToChronoTime(deadline)) == std::cv_status::timeout) {
        ok = condition();
        break;
      }
      ok = condition();
    }
    --waiters_;
    lock.release();
    return ok;
  }

  template <typename Condition>
  bool AwaitWithTimeout(Condition condition, absl::Duration timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    return AwaitWithDeadline(std::move(condition), absl::Now() + timeout);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiters_ = 0;  // guarded by mu_
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace cxds
