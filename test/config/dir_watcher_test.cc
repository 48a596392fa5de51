#include "config/dir_watcher.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "common/mutex.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

class DirWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("cxds-watch-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ASSERT_TRUE(watcher_
                    .Start(dir_.string(),
                           [this](const std::string& path, bool exists) {
                             MutexLock lock(&mu_);
                             events_.push_back({std::filesystem::path(path).lexically_relative(dir_).string(), exists});
                           })
                    .ok());
  }
  void TearDown() override {
    watcher_.Stop();
    std::filesystem::remove_all(dir_);
  }
  void Write(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }
  // Waits (bounded, not a timing assertion) until `n` events arrived; returns them.
  std::vector<std::pair<std::string, bool>> Events(size_t n) {
    MutexLock lock(&mu_);
    mu_.AwaitWithTimeout([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return events_.size() >= n; }, absl::Seconds(10));
    return events_;
  }

  std::filesystem::path dir_;
  DirWatcher watcher_;
  Mutex mu_;
  std::vector<std::pair<std::string, bool>> events_ ABSL_GUARDED_BY(mu_);
};

TEST_F(DirWatcherTest, ReportsWrittenRenamedAndRemovedConfigFilesOnly) {
  Write(dir_ / "notes.txt", "ignored");
  Write(dir_ / "a.yaml", "x: 1");
  // An editor's save: a temporary file renamed into place.
  Write(dir_ / ".b.yaml.swp", "y: 2");
  std::filesystem::rename(dir_ / ".b.yaml.swp", dir_ / "b.yaml");
  std::filesystem::remove(dir_ / "a.yaml");
  const auto events = Events(3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], (std::pair<std::string, bool>{"a.yaml", true}));
  EXPECT_EQ(events[1], (std::pair<std::string, bool>{"b.yaml", true}));
  EXPECT_EQ(events[2], (std::pair<std::string, bool>{"a.yaml", false}));
}

TEST_F(DirWatcherTest, WatchesNewSubdirectories) {
  std::filesystem::create_directories(dir_ / "team");
  // Wait for the directory to be watched before writing into it.
  const auto give_up = absl::Now() + absl::Seconds(10);
  while (absl::Now() < give_up) {
    Write(dir_ / "team" / "c.yaml", "z: 3");
    if (!Events(1).empty()) break;
  }
  const auto events = Events(1);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), (std::pair<std::string, bool>{"team/c.yaml", true}));
}

}  // namespace
}  // namespace cxds
