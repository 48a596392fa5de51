// Gives memory the allocator keeps after a burst back to the system.
//
// glibc keeps freed memory in its arenas. A connect storm leaves a great deal there: each proxy
// of a 1,000-service mesh is first sent ~0.5 MB of responses, which gRPC copies into its write
// buffers and frees once written. Measured with 500 such proxies connected: 21 MB of heap in
// use, 965 MB free but kept, RSS 987 MB; malloc_trim(0) took RSS to 50 MB. What a proxy owns
// is ~40 KB; without trimming, the process looks as if each held 1.9 MB, and the memory is not
// available to anything else on the machine.
//
// Every `interval`, if more than `min_free_bytes` of the heap is free and still resident (the
// resident set exceeds the heap in use by that much: a trim leaves the bytes counted as free
// heap, so the free count alone would trim again and again), the releaser trims. Trimming
// briefly holds each arena's lock, so it runs on a scheduler of its own (never the pipeline's)
// and only when there is a lot to give back.
//
// Reading the heap's counters is not cheap either: glibc's mallinfo2() walks every free chunk
// of every arena under that arena's lock (measured: 15-32 ms each in `cxds serve` with 5,000
// proxies, while the push threads wait to allocate). So each check first reads only the
// resident set (/proc/self/statm), and reads the heap when the resident set has grown by
// `min_free_bytes` since the last read, or when a backoff runs out: after a read that found
// nothing to trim, the next read waits twice as many checks as the last one, up to
// `max_heap_read_interval`; after a trim, the next check reads again.
//
// Threading: the checks run on `scheduler`'s thread, which alone owns the backoff state;
// stats() is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "common/scheduler.h"

namespace cxds {

struct HeapReleaseOptions {
  absl::Duration interval = absl::Seconds(2);
  size_t min_free_bytes = size_t{64} << 20;
  absl::Duration max_heap_read_interval = absl::Seconds(32);
};

// The allocator's counters, read together (one walk of the arenas).
struct HeapCounts {
  size_t free_bytes = 0;    // freed but kept by the allocator
  size_t in_use_bytes = 0;  // allocated and not freed
};

// What the releaser reads and does; injectable so that tests need not own the process's heap.
struct HeapAllocator {
  std::function<HeapCounts()> heap;        // costly: see above
  std::function<size_t()> resident_bytes;  // the process's resident set; cheap
  std::function<void()> trim;              // return what can be returned
  // glibc: one mallinfo2() over all arenas (fordblks; uordblks + hblkhd), /proc/self/statm, and
  // malloc_trim(0) (which
  // returns free pages inside the arenas too: the bytes stay counted as free heap, the resident
  // set shrinks). Under a sanitizer the allocator is not glibc's: free_bytes reads 0.
  static HeapAllocator Glibc();
};

class HeapReleaser {
 public:
  struct Stats {
    uint64_t checks = 0;
    uint64_t heap_reads = 0;  // checks that read the heap's counters
    uint64_t trims = 0;
    uint64_t released_bytes = 0;  // resident set before a trim minus after, summed
    absl::Duration last_trim_took;
  };

  // Starts checking at once (the first check after `options.interval`).
  HeapReleaser(Scheduler& scheduler, HeapReleaseOptions options, HeapAllocator allocator = HeapAllocator::Glibc());
  ~HeapReleaser();  // no check runs after this returns
  HeapReleaser(const HeapReleaser&) = delete;
  HeapReleaser& operator=(const HeapReleaser&) = delete;

  Stats stats() const;

 private:
  void Check();

  Scheduler& scheduler_;
  const HeapReleaseOptions options_;
  const HeapAllocator allocator_;
  // The backoff (the scheduler's thread only): checks to pass before the next heap read, the
  // count the last backoff waited, and the resident set at the last read.
  int64_t checks_until_heap_read_ = 0;
  int64_t last_backoff_ = 0;
  size_t resident_at_heap_read_ = 0;
  mutable Mutex mu_;
  Stats stats_ ABSL_GUARDED_BY(mu_);
  PeriodicTask checks_;  // last: stops first
};

}  // namespace cxds
