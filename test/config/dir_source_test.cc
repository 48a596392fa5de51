// DirectorySource: when it reads (simulated time) and what it delivers (real directories).
#include "config/dir_source.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

namespace fs = std::filesystem;

class DirSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cxds-src-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  fs::path dir_;
};

struct Batches {
  Mutex mu;
  std::vector<std::vector<FileRead>> batches ABSL_GUARDED_BY(mu);
  DirectorySource::OnBatch Sink() {
    return [this](std::vector<FileRead> batch) {
      MutexLock lock(&mu);
      batches.push_back(std::move(batch));
    };
  }
  size_t size() {
    MutexLock lock(&mu);
    return batches.size();
  }
  std::vector<FileRead> last() {
    MutexLock lock(&mu);
    return batches.back();
  }
  // Bounded wait for real-time tests (a bound, not a timing assertion).
  bool AwaitAtLeast(size_t n) {
    MutexLock lock(&mu);
    return mu.AwaitWithTimeout([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return batches.size() >= n; },
                               absl::Seconds(20));
  }
};

DirectorySource::Options Simulated() {
  return {.settle = absl::Milliseconds(100),
          .max_settle = absl::Seconds(1),
          .resync_interval = absl::Seconds(30),
          .missing_poll = absl::Seconds(2),
          .watch = false};
}

// Loads `source` and starts it, its first read done; its batches go to `batches`.
void LoadAndStart(DirectorySource& source, SimulatedScheduler& scheduler, Batches& batches) {
  ASSERT_TRUE(source.Load().ok());
  ASSERT_TRUE(source.Start(batches.Sink()).ok());
  scheduler.RunUntilIdle();
}

TEST_F(DirSourceTest, EventsAreReadAfterAQuietPeriodButNeverLaterThanTheCeiling) {
  Write(dir_ / "a.yaml", "a");
  SimulatedScheduler scheduler;
  DirectorySource source(dir_.string(), scheduler, Simulated());
  auto loaded = source.Load();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  Batches batches;
  ASSERT_TRUE(source.Start(batches.Sink()).ok());
  scheduler.RunUntilIdle();
  EXPECT_EQ(batches.size(), 0u) << "the first read finds nothing new since Load";

  // A file written in two steps: the first half, an event, the rest 50 ms later.
  Write(dir_ / "b.yaml", "first half");
  source.Poke();
  scheduler.AdvanceBy(absl::Milliseconds(50));
  Write(dir_ / "b.yaml", "first half, second half");
  source.Poke();
  scheduler.AdvanceBy(absl::Milliseconds(99));
  EXPECT_EQ(batches.size(), 0u) << "still within the quiet period of the second event";
  scheduler.AdvanceBy(absl::Milliseconds(1));
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches.last().size(), 1u);
  EXPECT_EQ(batches.last()[0].content, "first half, second half") << "one read of the complete file";

  // Events every 50 ms for 3 s: read at most 1 s after the first.
  for (int i = 0; i < 20; ++i) {
    Write(dir_ / "c.yaml", "c" + std::to_string(i));
    source.Poke();
    scheduler.AdvanceBy(absl::Milliseconds(50));
  }
  EXPECT_EQ(batches.size(), 2u) << "the ceiling forced a read during the stream of events";
  source.Stop();
}

TEST_F(DirSourceTest, AFileStillOpenForWritingIsReadWhenClosedOrAtTheCeiling) {
  SimulatedScheduler scheduler;
  DirectorySource source(dir_.string(), scheduler, Simulated());
  Batches batches;
  ASSERT_NO_FATAL_FAILURE(LoadAndStart(source, scheduler, batches));
  const std::string slow = (dir_ / "slow.yaml").string();

  // Written in place, then a pause far longer than `settle` before the rest and the close.
  Write(slow, "first half");
  source.Poke(slow, DirWatcher::Event::kWriting);
  scheduler.AdvanceBy(absl::Seconds(2));
  EXPECT_EQ(batches.size(), 0u) << "not read while its writer is at work (past settle and max_settle)";
  Write(slow, "first half, second half");
  source.Poke(slow, DirWatcher::Event::kWriting);
  source.Poke(slow, DirWatcher::Event::kClosed);
  scheduler.AdvanceBy(absl::Milliseconds(100));
  ASSERT_EQ(batches.size(), 1u) << "read `settle` after the close";
  EXPECT_EQ(batches.last()[0].content, "first half, second half");

  // A writer that never closes delays the read by at most max_open_write.
  Write(slow, "never closed");
  source.Poke(slow, DirWatcher::Event::kWriting);
  scheduler.AdvanceBy(absl::Milliseconds(4900));
  EXPECT_EQ(batches.size(), 1u);
  scheduler.AdvanceBy(absl::Milliseconds(100));
  ASSERT_EQ(batches.size(), 2u) << "read at the open-write ceiling";
  EXPECT_EQ(batches.last()[0].content, "never closed");

  // The ceiling forgot the open writer: the next event waits `settle` only.
  Write(slow, "next");
  source.Poke(slow, DirWatcher::Event::kChanged);
  scheduler.AdvanceBy(absl::Milliseconds(100));
  EXPECT_EQ(batches.size(), 3u);
  source.Stop();
}

// A tool's atomic replace, as inotify reports it: the temporary file written and closed, then
// renamed over the target.
void ReplaceWhole(DirectorySource& source, const fs::path& target, const std::string& text) {
  const fs::path temporary = target.parent_path() / ("." + target.filename().string() + ".tmp");
  std::ofstream(temporary) << text;
  source.Poke(temporary.string(), DirWatcher::Event::kWriting);
  source.Poke(temporary.string(), DirWatcher::Event::kClosed);
  fs::rename(temporary, target);
  source.Poke(temporary.string(), DirWatcher::Event::kMovedOut);
  source.Poke(target.string(), DirWatcher::Event::kMovedIn);
}

// Checks that nothing is read until 1 ms before `quiet` has passed, and one batch at `quiet`.
void ExpectOneReadAfter(SimulatedScheduler& scheduler, Batches& batches, absl::Duration quiet) {
  const size_t before = batches.size();
  scheduler.AdvanceBy(quiet - absl::Milliseconds(1));
  EXPECT_EQ(batches.size(), before) << "read before " << quiet;
  scheduler.AdvanceBy(absl::Milliseconds(1));
  EXPECT_EQ(batches.size(), before + 1) << "not read after " << quiet;
}

// kubelet's ConfigMap update, as inotify reports it: the new version's directory, complete,
// then `..data` pointed at it by one rename (mesh.yaml is a symlink through `..data`).
void SwapConfigMap(DirectorySource& source, const fs::path& dir, const std::string& version, const std::string& text) {
  const fs::path data = dir / ("..v" + version);
  fs::create_directories(data);
  std::ofstream(data / "mesh.yaml") << text;
  source.Poke(data.string(), DirWatcher::Event::kChanged);
  fs::create_directory_symlink(data.filename(), dir / "..data_tmp");
  source.Poke((dir / "..data_tmp").string(), DirWatcher::Event::kChanged);
  fs::rename(dir / "..data_tmp", dir / "..data");
  source.Poke((dir / "..data_tmp").string(), DirWatcher::Event::kMovedOut);
  source.Poke((dir / "..data").string(), DirWatcher::Event::kMovedIn);
}

TEST_F(DirSourceTest, AConfigMapSwapIntoAQuietDirectoryIsReadAtOnce) {
  Write(dir_ / "..v1" / "mesh.yaml", "one");
  fs::create_directory_symlink("..v1", dir_ / "..data");
  fs::create_symlink("..data/mesh.yaml", dir_ / "mesh.yaml");
  SimulatedScheduler scheduler;
  DirectorySource source(dir_.string(), scheduler, Simulated());
  Batches batches;
  ASSERT_NO_FATAL_FAILURE(LoadAndStart(source, scheduler, batches));

  SwapConfigMap(source, dir_, "2", "two");
  scheduler.RunUntilIdle();
  ASSERT_EQ(batches.size(), 1u) << "the whole mount switched after a quiet directory: read without waiting `settle`";
  ASSERT_EQ(batches.last().size(), 1u);
  EXPECT_EQ(batches.last()[0].content, "two");

  // The next swap 50 ms later is part of the same burst of events: it settles.
  scheduler.AdvanceBy(absl::Milliseconds(50));
  SwapConfigMap(source, dir_, "3", "three");
  ExpectOneReadAfter(scheduler, batches, absl::Milliseconds(100));  // the directory was not quiet before it
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches.last()[0].content, "three");

  // A swap while another file still has a writer at work waits for that writer.
  scheduler.AdvanceBy(absl::Seconds(1));
  const std::string slow = (dir_ / "slow.yaml").string();
  Write(slow, "half");
  source.Poke(slow, DirWatcher::Event::kWriting);
  SwapConfigMap(source, dir_, "4", "four");
  scheduler.AdvanceBy(absl::Milliseconds(500));
  EXPECT_EQ(batches.size(), 2u) << "not read while a writer is at work";
  Write(slow, "half and the rest");
  source.Poke(slow, DirWatcher::Event::kClosed);
  scheduler.AdvanceBy(absl::Milliseconds(100));
  ASSERT_EQ(batches.size(), 3u);

  // Once per burst: a writer starting before the at-once read holds it back, and a second swap
  // in the same burst then settles.
  scheduler.AdvanceBy(absl::Seconds(1));
  SwapConfigMap(source, dir_, "5", "five");
  source.Poke(slow, DirWatcher::Event::kWriting);
  scheduler.RunUntilIdle();
  EXPECT_EQ(batches.size(), 3u) << "a writer is at work";
  source.Poke(slow, DirWatcher::Event::kClosed);
  SwapConfigMap(source, dir_, "6", "six");
  scheduler.RunUntilIdle();
  EXPECT_EQ(batches.size(), 3u) << "the burst had its read at once";
  scheduler.AdvanceBy(absl::Milliseconds(100));
  ASSERT_EQ(batches.size(), 4u);
  bool six = false;
  for (const FileRead& read : batches.last()) six = six || read.content == "six";
  EXPECT_TRUE(six);
  source.Stop();
}

TEST_F(DirSourceTest, AWholeFileReplaceWaitsOnlyForTheNextRename) {
  SimulatedScheduler scheduler;
  DirectorySource source(dir_.string(), scheduler, Simulated());
  Batches batches;
  ASSERT_NO_FATAL_FAILURE(LoadAndStart(source, scheduler, batches));

  // A temporary file written and renamed into place is complete when it lands: read after
  // `rename_settle`, not `settle`.
  ReplaceWhole(source, dir_ / "a.yaml", "a");
  ExpectOneReadAfter(scheduler, batches, absl::Milliseconds(10));
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches.last()[0].content, "a");

  // Renames 5 ms apart are one burst: read once, after the last.
  scheduler.AdvanceBy(absl::Seconds(1));
  ReplaceWhole(source, dir_ / "a.yaml", "a2");
  scheduler.AdvanceBy(absl::Milliseconds(5));
  ReplaceWhole(source, dir_ / "b.yaml", "b");
  scheduler.AdvanceBy(absl::Milliseconds(5));
  ReplaceWhole(source, dir_ / "c.yaml", "c");
  ExpectOneReadAfter(scheduler, batches, absl::Milliseconds(10));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches.last().size(), 3u) << "the three files in one read";

  // A file written in place in the same burst (its writer closed, but it may write again, as
  // an editor saving in two steps does) makes the rename wait the whole `settle`; so do a
  // deleted file, a lost event (no path) and a file renamed away that the burst had not written:
  // only temporary files renamed away are discounted.
  const std::string in_place = (dir_ / "in-place.yaml").string();
  const std::vector<std::function<void()>> other_events = {
      [&] {
        Write(in_place, "first step");
        source.Poke(in_place, DirWatcher::Event::kWriting);
        source.Poke(in_place, DirWatcher::Event::kClosed);
      },
      [&] {
        fs::remove(dir_ / "c.yaml");
        source.Poke((dir_ / "c.yaml").string(), DirWatcher::Event::kChanged);
      },
      [&] { source.Poke("", DirWatcher::Event::kChanged); },
      [&] {  // a config file renamed away (a backup by rename) is gone until its name is taken
        fs::rename(dir_ / "a.yaml", dir_ / "a.yaml.bak");
        source.Poke((dir_ / "a.yaml").string(), DirWatcher::Event::kMovedOut);
        source.Poke((dir_ / "a.yaml.bak").string(), DirWatcher::Event::kMovedIn);
      },
  };
  for (size_t i = 0; i < other_events.size(); ++i) {
    SCOPED_TRACE(i);
    scheduler.AdvanceBy(absl::Seconds(1));
    other_events[i]();
    ReplaceWhole(source, dir_ / "b.yaml", "b after " + std::to_string(i));
    ExpectOneReadAfter(scheduler, batches, absl::Milliseconds(100));
  }

  // The next burst starts clean: a lone replace is read after `rename_settle` again.
  scheduler.AdvanceBy(absl::Seconds(1));
  ReplaceWhole(source, dir_ / "b.yaml", "b again");
  ExpectOneReadAfter(scheduler, batches, absl::Milliseconds(10));
  EXPECT_EQ(batches.last()[0].content, "b again");
  source.Stop();
}

TEST_F(DirSourceTest, ABurstOfMorePathsThanItTracksSettlesWhole) {
  SimulatedScheduler scheduler;
  DirectorySource source(dir_.string(), scheduler, Simulated());
  Batches batches;
  ASSERT_NO_FATAL_FAILURE(LoadAndStart(source, scheduler, batches));
  // As many temporary files as the source tracks, then a deletion it cannot track: once the
  // temporaries are renamed away, the untracked deletion must still make the burst wait `settle`.
  constexpr int kTracked = 1024;
  for (int i = 0; i < kTracked; ++i)
    source.Poke((dir_ / (".t" + std::to_string(i))).string(), DirWatcher::Event::kClosed);
  source.Poke((dir_ / "deleted.yaml").string(), DirWatcher::Event::kChanged);
  for (int i = 0; i < kTracked; ++i)
    source.Poke((dir_ / (".t" + std::to_string(i))).string(), DirWatcher::Event::kMovedOut);
  Write(dir_ / "a.yaml", "a");
  source.Poke((dir_ / "a.yaml").string(), DirWatcher::Event::kMovedIn);
  ExpectOneReadAfter(scheduler, batches, absl::Milliseconds(100));
  source.Stop();
}

TEST_F(DirSourceTest, ChangesWithoutEventsAreFoundByThePeriodicRead) {
  SimulatedScheduler scheduler;
  DirectorySource source(dir_.string(), scheduler, Simulated());
  Batches batches;
  ASSERT_NO_FATAL_FAILURE(LoadAndStart(source, scheduler, batches));
  Write(dir_ / "lost.yaml", "an event inotify dropped");
  scheduler.AdvanceBy(absl::Seconds(29));
  EXPECT_EQ(batches.size(), 0u);
  scheduler.AdvanceBy(absl::Seconds(1));
  ASSERT_EQ(batches.size(), 1u);
  source.Stop();
}

TEST_F(DirSourceTest, ADeletedDirectoryKeepsTheConfigAndIsFoundAgain) {
  Write(dir_ / "a.yaml", "a");
  SimulatedScheduler scheduler;
  DirectorySource source(dir_.string(), scheduler, Simulated());
  Batches batches;
  ASSERT_NO_FATAL_FAILURE(LoadAndStart(source, scheduler, batches));
  fs::remove_all(dir_);
  source.Poke();
  scheduler.AdvanceBy(absl::Seconds(1));
  EXPECT_EQ(batches.size(), 0u) << "a missing directory removes nothing";
  Write(dir_ / "a.yaml", "a, new");
  scheduler.AdvanceBy(absl::Seconds(2));  // the missing-directory poll, no event needed
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches.last()[0].content, "a, new");
  source.Stop();
}

TEST_F(DirSourceTest, RealEventsDeliverWritesRenamesAndConfigMapSwaps) {
  Write(dir_ / "..v1" / "mesh.yaml", "one");
  fs::create_directory_symlink("..v1", dir_ / "..data");
  fs::create_symlink("..data/mesh.yaml", dir_ / "mesh.yaml");
  RealScheduler scheduler;
  DirectorySource source(dir_.string(), scheduler,
                         {.settle = absl::Milliseconds(20), .resync_interval = absl::Hours(1)});
  ASSERT_TRUE(source.Load().ok());
  Batches batches;
  ASSERT_TRUE(source.Start(batches.Sink()).ok());

  Write(dir_ / "sub" / ".tmp", "x");
  fs::rename(dir_ / "sub" / ".tmp", dir_ / "sub" / "new.yaml");  // a new subdirectory, then a rename
  ASSERT_TRUE(batches.AwaitAtLeast(1));
  EXPECT_EQ(fs::path(batches.last().back().path).filename(), "new.yaml");

  Write(dir_ / "..v2" / "mesh.yaml", "two");
  fs::create_directory_symlink("..v2", dir_ / "..data_tmp");
  fs::rename(dir_ / "..data_tmp", dir_ / "..data");
  ASSERT_TRUE(batches.AwaitAtLeast(2));
  ASSERT_EQ(batches.last().size(), 1u);
  EXPECT_EQ(batches.last()[0].content, "two");
  source.Stop();
}

}  // namespace
}  // namespace cxds
