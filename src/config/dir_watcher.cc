#include "config/dir_watcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/logging.h"
#include "common/strings.h"
#include "config/yaml_loader.h"

namespace cxds {

DirWatcher::~DirWatcher() { Stop(); }

absl::Status DirWatcher::Start(const std::string& dir, OnChange on_change) {
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) return absl::InternalError(StrCat("inotify_init1: ", std::strerror(errno)));
  if (pipe2(stop_pipe_, O_CLOEXEC) != 0) return absl::InternalError(StrCat("pipe2: ", std::strerror(errno)));
  on_change_ = std::move(on_change);
  AddWatches(dir);
  if (dirs_.empty()) return absl::NotFoundError(StrCat("cannot watch ", dir));
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void DirWatcher::AddWatches(const std::string& dir) {
  const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_DELETE_SELF;
  const int wd = inotify_add_watch(inotify_fd_, dir.c_str(), mask);
  if (wd < 0) {
    Log().warn("WATCH failed dir={} error=\"{}\"", dir, std::strerror(errno));
    return;
  }
  dirs_[wd] = dir;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && !name.empty() && name[0] != '.') AddWatches(entry.path().string());
  }
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
      auto dir = dirs_.find(event->wd);
      if (dir == dirs_.end() || event->len == 0) continue;
      const std::string path = dir->second + "/" + event->name;
      if (event->mask & IN_ISDIR) {
        if (event->mask & (IN_CREATE | IN_MOVED_TO)) {
          AddWatches(path);
          // Files may have landed before the watch: report what is there now.
          std::error_code ec;
          for (const auto& entry : std::filesystem::recursive_directory_iterator(path, ec)) {
            if (entry.is_regular_file(ec) && IsConfigFileName(entry.path().string())) {
              on_change_(entry.path().string(), true);
            }
          }
        }
        continue;
      }
      if (!IsConfigFileName(path)) continue;
      if (event->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) {
        on_change_(path, true);
      } else if (event->mask & (IN_DELETE | IN_MOVED_FROM)) {
        on_change_(path, false);
      }
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
}

}  // namespace cxds
