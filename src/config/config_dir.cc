#include "config/config_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/strings.h"
#include "config/yaml_loader.h"

namespace cxds {

namespace {

int64_t Nanos(const timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }

enum class ReadOutcome { kOk, kInFlux, kUnreadable };

// Reads a regular file of at most `max_bytes` whose stat was `listed`. Non-blocking open, so
// a FIFO swapped in after the listing cannot hang the reader.
template <typename FileId>
ReadOutcome ReadConfigFile(const std::string& path, const FileId& listed, size_t max_bytes, std::string* content,
                           std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    *error = std::strerror(errno);
    return ReadOutcome::kUnreadable;
  }
  const auto close_fd = [fd] { ::close(fd); };
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close_fd();
    *error = "not a regular file";
    return ReadOutcome::kUnreadable;
  }
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    close_fd();
    *error = StrCat("the file has ", st.st_size, " bytes; the limit is ", max_bytes, " (--max-config-file-bytes)");
    return ReadOutcome::kUnreadable;
  }
  content->clear();
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = std::strerror(errno);
      close_fd();
      return ReadOutcome::kUnreadable;
    }
    if (n == 0) break;
    if (content->size() + static_cast<size_t>(n) > max_bytes) {
      // It grew past the limit while we read it: in flux, or hostile; read again later.
      close_fd();
      content->clear();
      return ReadOutcome::kInFlux;
    }
    content->append(buffer, static_cast<size_t>(n));
  }
  const bool changed = ::fstat(fd, &st) != 0 || st.st_ino != listed.ino || st.st_dev != listed.dev ||
                       st.st_size != listed.size || Nanos(st.st_mtim) != listed.mtime_ns ||
                       Nanos(st.st_ctim) != listed.ctime_ns || content->size() != static_cast<size_t>(st.st_size);
  close_fd();
  return changed ? ReadOutcome::kInFlux : ReadOutcome::kOk;
}

bool Under(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

}  // namespace

ConfigDirReader::Listing ConfigDirReader::Walk() const {
  Listing listing;
  struct stat root;
  if (::stat(dir_.c_str(), &root) != 0 || !S_ISDIR(root.st_mode)) {
    listing.complete = false;
    return listing;
  }
  std::set<std::pair<dev_t, ino_t>> visited = {{root.st_dev, root.st_ino}};
  std::vector<std::pair<std::string, int>> stack = {{dir_, 0}};
  while (!stack.empty()) {
    auto [dir, depth] = std::move(stack.back());
    stack.pop_back();
    DIR* handle = ::opendir(dir.c_str());
    if (handle == nullptr) {
      listing.unreadable[dir] = StrCat("directory cannot be read: ", std::strerror(errno));
      continue;
    }
    listing.dirs.push_back(dir);
    std::vector<std::string> names;
    while (const dirent* entry = ::readdir(handle)) {
      // Hidden entries: ".", "..", ".git", and a ConfigMap's "..data" (its files are reached
      // through the visible symlinks beside it; reading both would define everything twice).
      if (entry->d_name[0] != '.') names.emplace_back(entry->d_name);
    }
    ::closedir(handle);
    std::sort(names.begin(), names.end(), std::greater<>());  // popped from the back: path order
    std::vector<std::pair<std::string, int>> subdirs;
    for (const std::string& name : names) {
      const std::string path = dir + "/" + name;
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) continue;  // gone, or a dangling symlink: nothing to read
        if (errno == ELOOP) {
          listing.notes.push_back(StrCat("skipped ", path, ": a symlink loop"));
          continue;
        }
        if (IsConfigFileName(path)) listing.unreadable[path] = std::strerror(errno);
        continue;
      }
      if (S_ISDIR(st.st_mode)) {
        if (depth + 1 > limits_.max_depth) {
          listing.notes.push_back(StrCat("skipped ", path, ": deeper than ", limits_.max_depth, " levels"));
          listing.complete = false;
        } else if (!visited.insert({st.st_dev, st.st_ino}).second) {
          listing.notes.push_back(
              StrCat("skipped ", path, ": a directory already read (a symlink loop or a second link)"));
        } else {
          subdirs.emplace_back(path, depth + 1);
        }
        continue;
      }
      if (!S_ISREG(st.st_mode) || !IsConfigFileName(path)) continue;
      if (listing.files.size() >= limits_.max_files) {
        listing.notes.push_back(
            StrCat("more than ", limits_.max_files, " config files under ", dir_, ": the rest are not read"));
        listing.complete = false;
        break;
      }
      listing.files[path] = FileId{st.st_dev, st.st_ino, st.st_size, Nanos(st.st_mtim), Nanos(st.st_ctim)};
    }
    // Depth first, in path order.
    for (auto it = subdirs.rbegin(); it != subdirs.rend(); ++it) stack.push_back(std::move(*it));
    if (!listing.complete && listing.files.size() >= limits_.max_files) break;
  }
  return listing;
}

absl::StatusOr<ConfigDirReader::Result> ConfigDirReader::Next() {
  Listing listing = Walk();
  if (listing.dirs.empty()) {
    if (auto root = listing.unreadable.find(dir_); root != listing.unreadable.end()) {
      return absl::UnavailableError(StrCat("config directory ", dir_, ": ", root->second));
    }
    return absl::NotFoundError(StrCat("config directory ", dir_, " does not exist or is not a directory"));
  }
  Result result;
  result.dirs = std::move(listing.dirs);
  std::set<std::string> notes(listing.notes.begin(), listing.notes.end());
  for (const std::string& note : notes) {
    if (!notes_.contains(note)) result.notes.push_back(note);
  }
  notes_ = std::move(notes);

  std::map<std::string, FileRead> changes;  // by path, for path order
  std::map<std::string, std::string> unreadable;
  const auto report_unreadable = [&](const std::string& path, const std::string& why) {
    unreadable[path] = why;
    auto before = unreadable_.find(path);
    if (before == unreadable_.end() || before->second != why) changes[path] = FileRead::Unreadable(path, why);
  };
  for (const auto& [path, why] : listing.unreadable) report_unreadable(path, why);
  for (const auto& [path, id] : listing.files) {
    auto known = known_.find(path);
    if (known != known_.end() && known->second == id) continue;
    std::string content, error;
    switch (ReadConfigFile(path, id, limits_.max_file_bytes, &content, &error)) {
      case ReadOutcome::kOk:
        known_[path] = id;
        changes[path] = FileRead::Present(path, std::move(content));
        break;
      case ReadOutcome::kInFlux:
        result.in_flux = true;
        if (auto before = unreadable_.find(path); before != unreadable_.end()) unreadable[path] = before->second;
        break;
      case ReadOutcome::kUnreadable:
        known_.erase(path);  // read it again next time, whatever its stat says
        report_unreadable(path, error);
        break;
    }
  }
  // Gone: neither listed nor under something that could not be read. An incomplete walk
  // removes nothing.
  const auto hidden = [&](const std::string& path) {
    if (!listing.complete) return true;
    for (const auto& [dir, why] : listing.unreadable) {
      if (path == dir || Under(path, dir)) return true;
    }
    return false;
  };
  for (auto it = known_.begin(); it != known_.end();) {
    if (!listing.files.contains(it->first) && !hidden(it->first)) {
      changes[it->first] = FileRead::Removed(it->first);
      it = known_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [path, why] : unreadable_) {
    // Readable again (its new content is in `changes` already) or gone.
    if (!unreadable.contains(path) && !changes.contains(path) && !hidden(path)) {
      changes[path] = FileRead::Removed(path);
    }
  }
  unreadable_ = std::move(unreadable);
  for (auto& [path, change] : changes) result.changes.push_back(std::move(change));
  return result;
}

int ValidateDirectory(const std::string& dir, std::ostream& out, std::ostream& err, ConfigStore::Options options) {
  ConfigDirReader reader(dir, ConfigDirLimits{.max_file_bytes = options.limits.max_file_bytes});
  absl::StatusOr<ConfigDirReader::Result> read = reader.Next();
  if (!read.ok()) {
    err << "error: " << read.status().message() << "\n";
    return 2;
  }
  for (const std::string& note : read->notes) err << "note: " << note << "\n";
  size_t files = 0;
  for (const FileRead& change : read->changes) files += change.state == FileRead::State::kPresent;
  ConfigStore store(std::move(options));
  store.ApplyFiles(read->changes);
  size_t errors = 0;
  size_t skipped = 0;
  size_t warnings = 0;
  for (const ConfigStore::FileStatus& status : store.Status()) {
    for (const ConfigError& e : status.errors) {
      err << e.ToString() << "\n";
      errors++;
    }
    for (const ConfigError& w : status.warnings) err << "warning: " << w.ToString() << "\n";
    warnings += status.warnings.size();
    for (const SkippedDocument& s : status.skipped)
      err << status.path << ": skipped " << s.ToString() << ": no meaning for xDS\n";
    skipped += status.skipped.size();
  }
  out << files << " files, " << store.Snapshot()->size() << " objects accepted, " << errors << " errors";
  if (skipped > 0) out << ", " << skipped << " skipped (no meaning for xDS)";
  if (warnings > 0) out << ", " << warnings << " warnings";
  out << "\n";
  return errors == 0 ? 0 : 1;
}

}  // namespace cxds
