#include "common/heap_release.h"

#include <malloc.h>
#include <unistd.h>

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
  return {[] { return size_t{0}; }, [] { return size_t{0}; }, ResidentBytes, [] {}};
#else
  return {[] { return static_cast<size_t>(mallinfo2().fordblks); },
          [] {
            const struct mallinfo2 info = mallinfo2();
            return static_cast<size_t>(info.uordblks + info.hblkhd);
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
  const size_t free_before = allocator_.free_bytes();
  const size_t resident_before = allocator_.resident_bytes();
  const size_t in_use = allocator_.in_use_bytes();
  const bool worth_it = free_before > options_.min_free_bytes && resident_before > in_use + options_.min_free_bytes;
  uint64_t released = 0;
  absl::Duration took;
  if (worth_it) {
    const absl::Time start = scheduler_.clock().Now();
    allocator_.trim();
    took = scheduler_.clock().Now() - start;
    const size_t resident_after = allocator_.resident_bytes();
    released = resident_before > resident_after ? resident_before - resident_after : 0;
    Log().info("HEAP trimmed free_heap_mb={} rss_before_mb={} rss_after_mb={} took_ms={}", free_before >> 20,
               resident_before >> 20, resident_after >> 20, absl::ToDoubleMilliseconds(took));
  }
  {
    MutexLock lock(&mu_);
    stats_.checks++;
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
