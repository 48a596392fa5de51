// HeapReleaser on simulated time with a fake allocator: it trims only when the free heap is
// over the threshold, counts what it gave back, keeps checking, and stops with its owner. One
// test reads glibc's own counters (not under a sanitizer, which replaces malloc).
#include "common/heap_release.h"

#include <malloc.h>

#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace cxds {
namespace {

// Trimming gives back 90% of the free heap's pages (glibc keeps the bytes counted as free).
struct FakeHeap {
  size_t free = 0;
  size_t in_use = 0;
  size_t resident = 0;
  int trims = 0;
  int heap_reads = 0;
  HeapAllocator allocator() {
    return {[this] {
              ++heap_reads;
              return HeapCounts{.free_bytes = free, .in_use_bytes = in_use};
            },
            [this] { return resident; },
            [this] {
              ++trims;
              resident -= free / 10 * 9;
            }};
  }
};

TEST(HeapReleaserTest, TrimsOnlyAboveTheThresholdAndCountsWhatWasGivenBack) {
  SimulatedScheduler scheduler;
  FakeHeap heap;
  heap.free = 10 << 20;
  HeapReleaser releaser(scheduler, {.interval = absl::Seconds(2), .min_free_bytes = 64 << 20}, heap.allocator());
  scheduler.AdvanceBy(absl::Seconds(1));
  EXPECT_EQ(releaser.stats().checks, 0u);  // not before the first interval
  scheduler.AdvanceBy(absl::Seconds(1));
  EXPECT_EQ(releaser.stats().checks, 1u);
  EXPECT_EQ(heap.trims, 0);  // 10 MiB free: under the threshold

  heap.free = 500 << 20;  // a connect storm's buffers, freed
  heap.in_use = 100 << 20;
  heap.resident = 600 << 20;
  scheduler.AdvanceBy(absl::Seconds(2));
  EXPECT_EQ(heap.trims, 1);
  const HeapReleaser::Stats stats = releaser.stats();
  EXPECT_EQ(stats.checks, 2u);
  EXPECT_EQ(stats.trims, 1u);
  EXPECT_EQ(stats.released_bytes, size_t{450} << 20);

  // Still 500 MiB counted free (a trim does not change that), but no longer resident: nothing
  // more to do, however often it looks.
  scheduler.AdvanceBy(absl::Seconds(20));
  EXPECT_EQ(heap.trims, 1);
  EXPECT_EQ(releaser.stats().checks, 12u);
}

// The heap's counters cost a walk of every arena under its lock: a check reads them only when
// the resident set grew by the threshold or the backoff (doubling after each read that found
// nothing, up to max_heap_read_interval) ran out, and at once again after a trim.
TEST(HeapReleaserTest, ReadsTheHeapOnGrowthOrWhenItsBackoffRunsOut) {
  SimulatedScheduler scheduler;
  FakeHeap heap;
  heap.resident = 200 << 20;
  heap.in_use = 190 << 20;
  heap.free = 10 << 20;
  HeapReleaser releaser(
      scheduler, {.interval = absl::Seconds(1), .min_free_bytes = 64 << 20, .max_heap_read_interval = absl::Seconds(8)},
      heap.allocator());
  std::vector<int> read_at;
  for (int tick = 1; tick <= 24; ++tick) {
    const int before = heap.heap_reads;
    scheduler.AdvanceBy(absl::Seconds(1));
    if (heap.heap_reads > before) read_at.push_back(tick);
  }
  // Waits of 0, 1, 3, 7 checks, then 7 (8 s) at most.
  EXPECT_EQ(read_at, (std::vector<int>{1, 3, 7, 15, 23}));
  EXPECT_EQ(releaser.stats().checks, 24u);
  EXPECT_EQ(releaser.stats().heap_reads, 5u);

  // The resident set grows by the threshold: read at the next check, backoff or not.
  heap.resident += 64 << 20;
  heap.in_use += 64 << 20;
  scheduler.AdvanceBy(absl::Seconds(1));
  EXPECT_EQ(heap.heap_reads, 6);

  // Freed and resident: the next read (within the backoff) trims, and the check after reads again.
  heap.free = 200 << 20;
  heap.in_use = 60 << 20;
  scheduler.AdvanceBy(absl::Seconds(8));
  EXPECT_EQ(heap.trims, 1);
  const int after_trim = heap.heap_reads;
  scheduler.AdvanceBy(absl::Seconds(1));
  EXPECT_EQ(heap.heap_reads, after_trim + 1);
}

TEST(HeapReleaserTest, NoCheckRunsAfterItIsDestroyed) {
  SimulatedScheduler scheduler;
  FakeHeap heap;
  heap.free = size_t{1} << 30;
  heap.resident = size_t{2} << 30;
  auto releaser = std::make_unique<HeapReleaser>(
      scheduler, HeapReleaseOptions{.interval = absl::Seconds(1), .min_free_bytes = 1}, heap.allocator());
  scheduler.AdvanceBy(absl::Seconds(1));
  EXPECT_EQ(heap.trims, 1);
  releaser.reset();
  scheduler.AdvanceBy(absl::Seconds(10));
  EXPECT_EQ(heap.trims, 1);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(CXDS_TSAN)
// glibc's own counters: of 200 MiB written and freed in chunks below the mmap threshold, much
// stays resident as free heap, and the trim returns its pages.
TEST(HeapReleaserTest, GlibcKeepsFreedChunksResidentUntilTrimmed) {
  const HeapAllocator glibc = HeapAllocator::Glibc();
  std::vector<void*> chunks;
  for (int i = 0; i < 3200; ++i) {
    chunks.push_back(malloc(64 << 10));
    std::memset(chunks.back(), 1, 64 << 10);
  }
  void* keep = malloc(64);  // above the chunks: the heap cannot simply shrink from its top
  for (void* chunk : chunks) free(chunk);
  // (glibc itself returns some on free: the chunks that merge with the heap's top.)
  EXPECT_GT(glibc.heap().free_bytes, size_t{64} << 20);
  const size_t resident_before = glibc.resident_bytes();
  glibc.trim();
  const size_t resident_after = glibc.resident_bytes();
  EXPECT_GT(resident_before, resident_after + (size_t{64} << 20));
  free(keep);
}
#endif

}  // namespace
}  // namespace cxds
