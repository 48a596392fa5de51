// ConfigDirReader on real directories: symlinks, loops, ConfigMap swaps, unreadable entries,
// limits. Nothing here may throw or hang, and nothing unreadable may read as removed.
#include "config/config_dir.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace cxds {
namespace {

namespace fs = std::filesystem;

class ConfigDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cxds-dir-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms::all);  // readable by the unprivileged child below
  }
  void TearDown() override {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
    fs::remove_all(dir_, ec);
  }
  void Write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  // Path (relative) -> state letter: P present, R removed, U unreadable.
  std::map<std::string, char> Summary(const ConfigDirReader::Result& result) {
    std::map<std::string, char> out;
    for (const FileRead& f : result.changes) {
      out[fs::path(f.path).lexically_relative(dir_).string()] = f.state == FileRead::State::kPresent   ? 'P'
                                                                : f.state == FileRead::State::kRemoved ? 'R'
                                                                                                       : 'U';
    }
    return out;
  }
  fs::path dir_;
};

TEST_F(ConfigDirTest, ReadsConfigFilesOnceAndThenOnlyWhatChanged) {
  Write(dir_ / "b.yaml", "b");
  Write(dir_ / "a.yaml", "a");
  Write(dir_ / "sub" / "c.json", "c");
  Write(dir_ / "notes.txt", "not config");
  Write(dir_ / ".git" / "x.yaml", "hidden");
  ConfigDirReader reader(dir_.string());
  auto first = reader.Next();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(Summary(*first), (std::map<std::string, char>{{"a.yaml", 'P'}, {"b.yaml", 'P'}, {"sub/c.json", 'P'}}));
  EXPECT_EQ(fs::path(first->changes[0].path).filename(), "a.yaml") << "path order";
  auto again = reader.Next();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->changes.empty()) << "nothing changed: nothing read";
  fs::remove(dir_ / "b.yaml");
  Write(dir_ / "a.yaml", "a2");
  auto third = reader.Next();
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(Summary(*third), (std::map<std::string, char>{{"a.yaml", 'P'}, {"b.yaml", 'R'}}));
}

TEST_F(ConfigDirTest, ASymlinkLoopIsSkippedAndSaidOnce) {
  Write(dir_ / "sub" / "a.yaml", "a");
  fs::create_directory_symlink(dir_, dir_ / "sub" / "loop");
  fs::create_symlink(dir_ / "self1.yaml", dir_ / "self2.yaml");
  fs::create_symlink(dir_ / "self2.yaml", dir_ / "self1.yaml");
  ConfigDirReader reader(dir_.string());
  absl::StatusOr<ConfigDirReader::Result> result;
  ASSERT_NO_THROW(result = reader.Next());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Summary(*result), (std::map<std::string, char>{{"sub/a.yaml", 'P'}}));
  ASSERT_EQ(result->notes.size(), 3u);
  EXPECT_TRUE(reader.Next()->notes.empty()) << "said once, not at every read";
}

TEST_F(ConfigDirTest, AConfigMapSymlinkSwapIsSeen) {
  // Kubernetes' layout: visible symlinks into "..data", itself a symlink to a timestamped
  // directory, swapped by renaming a new "..data" over the old one.
  Write(dir_ / "..2026_01" / "mesh.yaml", "one");
  fs::create_directory_symlink("..2026_01", dir_ / "..data");
  fs::create_symlink("..data/mesh.yaml", dir_ / "mesh.yaml");
  ConfigDirReader reader(dir_.string());
  auto first = reader.Next();
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->changes.size(), 1u) << "read once, through the visible link";
  EXPECT_EQ(first->changes[0].content, "one");
  Write(dir_ / "..2026_02" / "mesh.yaml", "two");
  fs::create_directory_symlink("..2026_02", dir_ / "..data_tmp");
  fs::rename(dir_ / "..data_tmp", dir_ / "..data");
  fs::remove_all(dir_ / "..2026_01");
  auto second = reader.Next();
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->changes.size(), 1u);
  EXPECT_EQ(second->changes[0].content, "two");
}

TEST_F(ConfigDirTest, AFileOverTheLimitIsUnreadableNotRemoved) {
  Write(dir_ / "big.yaml", "small");
  ConfigDirReader reader(dir_.string(), ConfigDirLimits{.max_file_bytes = 100});
  ASSERT_EQ(Summary(*reader.Next()), (std::map<std::string, char>{{"big.yaml", 'P'}}));
  Write(dir_ / "big.yaml", std::string(200, 'x'));
  auto result = reader.Next();
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->changes.size(), 1u);
  EXPECT_EQ(result->changes[0].state, FileRead::State::kUnreadable);
  EXPECT_NE(result->changes[0].error.find("the limit is 100"), std::string::npos) << result->changes[0].error;
}

TEST_F(ConfigDirTest, AFifoNamedLikeConfigIsSkippedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((dir_ / "pipe.yaml").c_str(), 0600), 0);
  Write(dir_ / "a.yaml", "a");
  ConfigDirReader reader(dir_.string());
  auto result = reader.Next();  // would block forever if the FIFO were opened for reading
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(Summary(*result), (std::map<std::string, char>{{"a.yaml", 'P'}}));
}

TEST_F(ConfigDirTest, ADeletedDirectoryRemovesNothingAndIsReadAgainWhenBack) {
  Write(dir_ / "a.yaml", "a");
  ConfigDirReader reader(dir_.string());
  ASSERT_TRUE(reader.Next().ok());
  fs::remove_all(dir_);
  auto gone = reader.Next();
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  Write(dir_ / "a.yaml", "a, recreated");
  Write(dir_ / "b.yaml", "b");
  auto back = reader.Next();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(Summary(*back), (std::map<std::string, char>{{"a.yaml", 'P'}, {"b.yaml", 'P'}}));
}

TEST_F(ConfigDirTest, TooManyFilesIsAnIncompleteReadThatRemovesNothing) {
  for (int i = 0; i < 5; ++i) Write(dir_ / ("f" + std::to_string(i) + ".yaml"), "x");
  ConfigDirReader reader(dir_.string(), ConfigDirLimits{.max_files = 3});
  auto result = reader.Next();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->changes.size(), 3u);
  ASSERT_EQ(result->notes.size(), 1u);
  EXPECT_NE(result->notes[0].find("more than 3 config files"), std::string::npos);
}

// Root reads everything, so unreadable entries are tested in a child that runs as nobody.
// The child prints its summary on a pipe.
std::string AsNobody(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) _exit(3);
    const std::string out = body();
    (void)!::write(fds[1], out.data(), out.size());
    _exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof(buffer))) > 0;) out.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "child failed";
}

TEST_F(ConfigDirTest, AnUnreadableDirectoryOrFileIsReportedNotSkippedSilently) {
  Write(dir_ / "a.yaml", "a");
  Write(dir_ / "locked" / "b.yaml", "b");
  Write(dir_ / "c.yaml", "c");
  fs::permissions(dir_ / "a.yaml", fs::perms::all);
  fs::permissions(dir_ / "locked", fs::perms::owner_all);                            // nobody cannot enter it
  fs::permissions(dir_ / "c.yaml", fs::perms::owner_read | fs::perms::owner_write);  // nor read this
  const std::string out = AsNobody([this] {
    ConfigDirReader reader(dir_.string());
    auto r = reader.Next();
    if (!r.ok()) return std::string("error");
    std::string log;
    for (const FileRead& f : r->changes) {
      log += fs::path(f.path).lexically_relative(dir_).string() + "=" +
             (f.state == FileRead::State::kPresent   ? "P"
              : f.state == FileRead::State::kRemoved ? "R"
                                                     : "U") +
             ";";
    }
    return log;
  });
  EXPECT_EQ(out, "a.yaml=P;c.yaml=U;locked=U;");
}

TEST_F(ConfigDirTest, AFileThatBecomesUnreadableIsNotRemoved) {
  Write(dir_ / "a.yaml", "a");
  Write(dir_ / "sub" / "b.yaml", "b");
  fs::permissions(dir_ / "a.yaml", fs::perms::all);
  fs::permissions(dir_ / "sub", fs::perms::all);
  fs::permissions(dir_ / "sub" / "b.yaml", fs::perms::all);
  // One reader in one unprivileged child across the permission change: the child reads, says
  // so with a marker file, and reads again once the parent has taken its permissions away.
  const fs::path go = dir_ / "go";
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) _exit(3);
    ConfigDirReader reader(dir_.string());
    if (!reader.Next().ok()) _exit(4);
    std::ofstream(dir_ / "ready") << "";
    for (int i = 0; i < 1000 && !fs::exists(go); ++i) ::usleep(10'000);
    auto r = reader.Next();
    if (!r.ok()) _exit(5);
    for (const FileRead& f : r->changes) {
      if (f.state == FileRead::State::kRemoved) _exit(6);  // the defect: unreadable read as removed
    }
    _exit(r->changes.size() == 2 ? 0 : 7);  // a.yaml and sub, both unreadable
  }
  ASSERT_GT(pid, 0);
  for (int i = 0; i < 1000 && !fs::exists(dir_ / "ready"); ++i) ::usleep(10'000);
  fs::permissions(dir_ / "a.yaml", fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(dir_ / "sub", fs::perms::owner_all);
  Write(go, "");
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "6: removed, 7: not reported as unreadable";
}

}  // namespace
}  // namespace cxds
