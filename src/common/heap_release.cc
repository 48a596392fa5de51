#include "common/heap_release.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "common/logging.h"

namespace cxds {

namespace {
size_t ResidentBytes() {
  long pages = 0;
  long resident = 0;
  std::ifstream statm("/proc/self/statm");
  if (!(statm >> pages >> resident)) return 0;
  return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}
}  // namespace

HeapAllocator HeapAllocator::Glibc() {
#if defined(__SANITIZE_ADDRESS__) || defined(CXDS_TSAN)
  return {[] { return HeapCounts{}; }, ResidentBytes, [] {}};
#else
  return {[] {
            const struct mallinfo2 info = mallinfo2();
            return HeapCounts{.free_bytes = static_cast<size_t>(info.fordblks),
                              .in_use_bytes = static_cast<size_t>(info.uordblks + info.hblkhd)};
          },
          ResidentBytes, [] { malloc_trim(0); }};
#endif
}

HeapReleaser::HeapReleaser(Scheduler& scheduler, HeapReleaseOptions options, HeapAllocator allocator)
    : scheduler_(scheduler),
      options_(options),
      allocator_(std::move(allocator)),
      checks_(scheduler, options_.interval, [this] { Check(); }) {
  checks_.Start();
}

HeapReleaser::~HeapReleaser() = default;

void HeapReleaser::Check() {
  const size_t resident_before = allocator_.resident_bytes();
  // Less resident than the threshold cannot hold that much free heap; otherwise read the heap
  // when the backoff has run out or the resident set grew by the threshold since the last read.
  const bool read_heap =
      resident_before > options_.min_free_bytes &&
      (checks_until_heap_read_ <= 0 || resident_before >= resident_at_heap_read_ + options_.min_free_bytes);
  if (!read_heap) {
    --checks_until_heap_read_;
    MutexLock lock(&mu_);
    stats_.checks++;
    return;
  }
  const HeapCounts heap = allocator_.heap();
  const size_t free_before = heap.free_bytes;
  const bool worth_it =
      free_before > options_.min_free_bytes && resident_before > heap.in_use_bytes + options_.min_free_bytes;
  const int64_t max_backoff =
      std::max<int64_t>(0, options_.max_heap_read_interval / std::max(options_.interval, absl::Milliseconds(1)) - 1);
  last_backoff_ = worth_it ? 0 : std::min(max_backoff, 2 * last_backoff_ + 1);
  checks_until_heap_read_ = last_backoff_;
  resident_at_heap_read_ = resident_before;
  uint64_t released = 0;
  absl::Duration took;
  if (worth_it) {
    const absl::Time start = scheduler_.clock().Now();
    allocator_.trim();
    took = scheduler_.clock().Now() - start;
    const size_t resident_after = allocator_.resident_bytes();
    released = resident_before > resident_after ? resident_before - resident_after : 0;
    resident_at_heap_read_ = resident_after;
    Log().info("HEAP trimmed free_heap_mb={} rss_before_mb={} rss_after_mb={} took_ms={}", free_before >> 20,
               resident_before >> 20, resident_after >> 20, absl::ToDoubleMilliseconds(took));
  }
  {
    MutexLock lock(&mu_);
    stats_.checks++;
    stats_.heap_reads++;
    if (worth_it) {
      stats_.trims++;
      stats_.released_bytes += released;
      stats_.last_trim_took = took;
    }
  }
}

HeapReleaser::Stats HeapReleaser::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

}  // namespace cxds
