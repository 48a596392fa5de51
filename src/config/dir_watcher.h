// DirWatcher: tells that something changed in a set of directories, using inotify.
//
// It only wakes its owner: what changed is found by reading the directory again (see
// DirectorySource), so no event is interpreted on its own and none can be misread: a rename,
// a ConfigMap's "..data" symlink swap, a permission change (IN_ATTRIB), a watched directory
// removed, or lost events (queue overflow) all report the same way. What an event adds is
// whether a writer is still at work on a file (IN_MODIFY means a descriptor open for writing,
// IN_CLOSE_WRITE that it was closed), so the owner can wait for a file written in several steps
// to be complete, and whether a file was renamed in or away (IN_MOVED_TO, IN_MOVED_FROM), so
// it can tell a file replaced whole from one written in place. The owner says which
// directories to watch (Watch), after each read. A directory is watched only after the read
// that found it, so what changed in it between the two raises no event: Watch says how many
// watches are new, and the owner reads once more.
//
// Threading: one background thread reads events and calls OnEvent on it; Watch may be called
// from any thread; Stop() (or the destructor) joins the thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "common/mutex.h"

namespace cxds {

class DirWatcher {
 public:
  enum class Event {
    kChanged,   // anything else, or events were lost
    kWriting,   // `path` was written through a descriptor that may still be open (IN_MODIFY)
    kClosed,    // a descriptor open for writing on `path` was closed (IN_CLOSE_WRITE)
    kMovedIn,   // a file or symlink was renamed into place as `path` (IN_MOVED_TO, not a directory)
    kMovedOut,  // a file or symlink was renamed away from `path` (IN_MOVED_FROM, not a directory)
  };
  // `path`: what changed ("" when events were lost).
  using OnEvent = std::function<void(const std::string& path, Event event)>;

  DirWatcher() = default;
  ~DirWatcher();
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;

  absl::Status Start(OnEvent on_event);
  struct WatchResult {
    std::vector<std::pair<std::string, std::string>> failed;  // directory, reason
    int added = 0;                                            // directories watched from now on
  };
  // Makes the watched set exactly `dirs`.
  WatchResult Watch(const std::vector<std::string>& dirs);
  void Stop();

 private:
  void Run();

  int inotify_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  OnEvent on_event_;
  Mutex mu_;
  std::map<int, std::string> dirs_ ABSL_GUARDED_BY(mu_);  // watch descriptor -> directory
  std::map<std::string, int> watches_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace cxds
