#include "config/dir_watcher.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "common/mutex.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

namespace fs = std::filesystem;

class DirWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cxds-watch-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "sub");
    ASSERT_TRUE(watcher_
                    .Start([this](const std::string& path, DirWatcher::Event kind) {
                      MutexLock lock(&mu_);
                      events_.push_back(path.empty() ? "" : fs::path(path).lexically_relative(dir_).string());
                      kinds_.push_back(kind);
                    })
                    .ok());
  }
  void TearDown() override {
    watcher_.Stop();
    fs::remove_all(dir_);
  }
  // Waits (bounded, not a timing assertion) until an event for `path` arrived (of `kind`, if
  // given).
  bool Saw(const std::string& path, std::optional<DirWatcher::Event> kind = std::nullopt) {
    MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(
        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          for (size_t i = 0; i < events_.size(); ++i) {
            if (events_[i] == path && (!kind || kinds_[i] == *kind)) return true;
          }
          return false;
        },
        absl::Seconds(10));
  }
  bool SawAny(const std::string& path, DirWatcher::Event kind) {
    MutexLock lock(&mu_);
    for (size_t i = 0; i < events_.size(); ++i) {
      if (events_[i] == path && kinds_[i] == kind) return true;
    }
    return false;
  }

  fs::path dir_;
  DirWatcher watcher_;
  Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
  std::vector<DirWatcher::Event> kinds_ ABSL_GUARDED_BY(mu_);
};

TEST_F(DirWatcherTest, ReportsWritesRenamesPermissionChangesAndHiddenNames) {
  EXPECT_TRUE(watcher_.Watch({dir_.string(), (dir_ / "sub").string()}).failed.empty());
  std::ofstream(dir_ / "a.yaml") << "a";
  EXPECT_TRUE(Saw("a.yaml"));
  fs::rename(dir_ / "a.yaml", dir_ / "sub" / "b.yaml");
  EXPECT_TRUE(Saw("sub/b.yaml", DirWatcher::Event::kMovedIn)) << "a file renamed into place is whole";
  EXPECT_TRUE(SawAny("a.yaml", DirWatcher::Event::kMovedOut)) << "its old name is gone whole";
  fs::permissions(dir_ / "sub" / "b.yaml", fs::perms::owner_read);
  fs::create_directory_symlink("sub", dir_ / "..data");  // what a ConfigMap swap touches
  EXPECT_TRUE(Saw("..data"));
  fs::create_directory(dir_ / "d");
  fs::rename(dir_ / "d", dir_ / "sub" / "d");
  EXPECT_TRUE(Saw("sub/d")) << "a directory moved in";
  EXPECT_FALSE(SawAny("d", DirWatcher::Event::kMovedOut)) << "a directory moved away is not a file renamed away";
  EXPECT_FALSE(SawAny("sub/d", DirWatcher::Event::kMovedIn));
}

TEST_F(DirWatcherTest, TellsAWriteInProgressFromItsClose) {
  EXPECT_TRUE(watcher_.Watch({dir_.string()}).failed.empty());
  const std::string path = (dir_ / "slow.yaml").string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "a: 1\n", 5), 5);
  EXPECT_TRUE(Saw("slow.yaml", DirWatcher::Event::kWriting));
  EXPECT_FALSE(SawAny("slow.yaml", DirWatcher::Event::kClosed)) << "the descriptor is still open";
  ::close(fd);
  EXPECT_TRUE(Saw("slow.yaml", DirWatcher::Event::kClosed));
}

TEST_F(DirWatcherTest, WatchesExactlyTheDirectoriesItIsGiven) {
  const DirWatcher::WatchResult first = watcher_.Watch({dir_.string()});
  EXPECT_TRUE(first.failed.empty());
  EXPECT_EQ(first.added, 1);
  const DirWatcher::WatchResult again = watcher_.Watch({dir_.string(), (dir_ / "missing").string()});
  EXPECT_EQ(again.added, 0) << "a directory already watched is not new, a missing one is not watched";
  ASSERT_EQ(again.failed.size(), 1u);
  EXPECT_EQ(again.failed[0].first, (dir_ / "missing").string());
  std::ofstream(dir_ / "sub" / "unwatched.yaml") << "x";
  std::ofstream(dir_ / "marker") << "x";
  EXPECT_TRUE(Saw("marker"));
  MutexLock lock(&mu_);
  EXPECT_EQ(std::count(events_.begin(), events_.end(), "sub/unwatched.yaml"), 0) << "sub was not in the watched set";
}

}  // namespace
}  // namespace cxds
