#include "config/dir_watcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "common/strings.h"

namespace cxds {

DirWatcher::~DirWatcher() { Stop(); }

absl::Status DirWatcher::Start(OnEvent on_event) {
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) return absl::InternalError(StrCat("inotify_init1: ", std::strerror(errno)));
  if (pipe2(stop_pipe_, O_CLOEXEC) != 0) return absl::InternalError(StrCat("pipe2: ", std::strerror(errno)));
  on_event_ = std::move(on_event);
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

DirWatcher::WatchResult DirWatcher::Watch(const std::vector<std::string>& dirs) {
  constexpr uint32_t kMask = IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
                             IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF;
  WatchResult result;
  const std::set<std::string> wanted(dirs.begin(), dirs.end());
  MutexLock lock(&mu_);
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (wanted.contains(it->first)) {
      ++it;
      continue;
    }
    inotify_rm_watch(inotify_fd_, it->second);
    dirs_.erase(it->second);
    it = watches_.erase(it);
  }
  for (const std::string& dir : wanted) {
    if (watches_.contains(dir)) continue;
    const int wd = inotify_add_watch(inotify_fd_, dir.c_str(), kMask);
    if (wd < 0) {
      result.failed.emplace_back(dir, std::strerror(errno));
      continue;
    }
    watches_[dir] = wd;
    dirs_[wd] = dir;
    ++result.added;
  }
  return result;
}

void DirWatcher::Run() {
  alignas(struct inotify_event) char buffer[64 * 1024];
  for (;;) {
    pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const ssize_t n = read(inotify_fd_, buffer, sizeof(buffer));
    if (n <= 0) continue;
    for (ssize_t offset = 0; offset < n;) {
      const auto* event = reinterpret_cast<const struct inotify_event*>(buffer + offset);
      offset += static_cast<ssize_t>(sizeof(struct inotify_event) + event->len);
      if (event->mask & IN_Q_OVERFLOW) {
        on_event_("", Event::kChanged);
        continue;
      }
      std::string path;
      {
        MutexLock lock(&mu_);
        auto dir = dirs_.find(event->wd);
        if (dir == dirs_.end()) continue;
        path = event->len > 0 ? dir->second + "/" + event->name : dir->second;
        if (event->mask & IN_IGNORED) {  // the directory is gone: its watch with it
          watches_.erase(dir->second);
          dirs_.erase(dir);
        }
      }
      Event kind = Event::kChanged;
      if (event->mask & IN_CLOSE_WRITE) {
        kind = Event::kClosed;
      } else if (event->mask & IN_MODIFY) {
        kind = Event::kWriting;
      } else if ((event->mask & IN_MOVED_TO) && !(event->mask & IN_ISDIR)) {
        kind = Event::kMovedIn;
      } else if ((event->mask & IN_MOVED_FROM) && !(event->mask & IN_ISDIR)) {
        kind = Event::kMovedOut;
      }
      on_event_(path, kind);
    }
  }
}

void DirWatcher::Stop() {
  if (thread_.joinable()) {
    const char byte = 1;
    (void)!write(stop_pipe_[1], &byte, 1);
    thread_.join();
  }
  for (int fd : {inotify_fd_, stop_pipe_[0], stop_pipe_[1]}) {
    if (fd >= 0) close(fd);
  }
  inotify_fd_ = stop_pipe_[0] = stop_pipe_[1] = -1;
  MutexLock lock(&mu_);
  dirs_.clear();
  watches_.clear();
}

}  // namespace cxds
