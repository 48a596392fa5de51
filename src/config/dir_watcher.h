// DirWatcher: tells which config files under a directory changed, using inotify.
//
// Safe with editors and tools: a file is read when it is closed after writing
// (IN_CLOSE_WRITE) or renamed into place (IN_MOVED_TO, the atomic-rename pattern), never on
// IN_MODIFY, so a half-written file is not read mid-write; removals and renames away count as
// deletions; new subdirectories are watched as they appear. Events arrive on the watcher's own
// thread; the callback gets a path and whether the file exists now.
//
// Threading: one background thread; Stop() (or the destructor) joins it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <thread>

#include "absl/status/status.h"

namespace cxds {

class DirWatcher {
 public:
  using OnChange = std::function<void(const std::string& path, bool exists)>;

  DirWatcher() = default;
  ~DirWatcher();
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;

  // Starts watching `dir` recursively.
  absl::Status Start(const std::string& dir, OnChange on_change);
  void Stop();

 private:
  void AddWatches(const std::string& dir);
  void Run();

  int inotify_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::map<int, std::string> dirs_;  // watch descriptor -> directory; only the thread touches it after Start
  OnChange on_change_;
  std::thread thread_;
};

}  // namespace cxds
