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
// Threading: the checks run on `scheduler`'s thread; stats() is thread-safe.
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
};

// What the releaser reads and does; injectable so that tests need not own the process's heap.
struct HeapAllocator {
  std::function<size_t()> free_bytes;      // freed but kept by the allocator
  std::function<size_t()> in_use_bytes;    // allocated and not freed
  std::function<size_t()> resident_bytes;  // the process's resident set
  std::function<void()> trim;              // return what can be returned
  // glibc: mallinfo2() over all arenas (fordblks; uordblks + hblkhd), /proc/self/statm, and
  // malloc_trim(0) (which
  // returns free pages inside the arenas too: the bytes stay counted as free heap, the resident
  // set shrinks). Under a sanitizer the allocator is not glibc's: free_bytes reads 0.
  static HeapAllocator Glibc();
};

class HeapReleaser {
 public:
  struct Stats {
    uint64_t checks = 0;
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
  mutable Mutex mu_;
  Stats stats_ ABSL_GUARDED_BY(mu_);
  PeriodicTask checks_;  // last: stops first
};

}  // namespace cxds
