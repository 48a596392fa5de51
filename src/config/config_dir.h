// Reading a config directory: every config file under it (.yaml/.yml/.json; hidden entries and
// editor temporaries skipped), as FileRead changes for ConfigStore::ApplyFiles.
//
// The directory is hostile input. Symlinks to files and directories are followed (Kubernetes
// ConfigMap mounts are symlinks into a hidden "..data" directory that is swapped atomically),
// a directory reached twice (a symlink loop) is skipped and said so, nesting and the number of
// files are bounded, and what cannot be read is reported as unreadable, never as removed: its
// objects keep their last good version. Nothing here throws.
#pragma once

#include <sys/types.h>

#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config_store.h"

namespace cxds {

struct ConfigDirLimits {
  size_t max_file_bytes = ParseLimits{}.max_file_bytes;
  size_t max_files = 10'000;  // config files per directory tree
  int max_depth = 16;         // directory levels below the root
};

// Reads a directory again and again, returning only what changed since the previous read.
// Not thread-safe: one owner calls Next().
class ConfigDirReader {
 public:
  struct Result {
    std::vector<FileRead> changes;  // in path order
    std::vector<std::string> dirs;  // every directory read, to watch
    // A file changed while it was read (its stat differed before and after): it is left out
    // of `changes` this time and read again by the next call.
    bool in_flux = false;
    // Things skipped that are not errors of a file (a symlink loop, too deep, too many files).
    std::vector<std::string> notes;
  };

  ConfigDirReader(std::string dir, ConfigDirLimits limits = {}) : dir_(std::move(dir)), limits_(limits) {}

  // NotFound (nothing changes) if the directory does not exist or is not a directory.
  absl::StatusOr<Result> Next();
  const std::string& dir() const { return dir_; }

 private:
  // What stat says of a file; any difference means it must be read again.
  struct FileId {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    bool operator==(const FileId&) const = default;
  };
  struct Listing {
    std::map<std::string, FileId> files;
    std::map<std::string, std::string> unreadable;  // path -> why (directories and files)
    std::vector<std::string> dirs;
    std::vector<std::string> notes;
    bool complete = true;  // false: a limit cut the walk short, so absence means nothing
  };
  Listing Walk() const;

  const std::string dir_;
  const ConfigDirLimits limits_;
  std::map<std::string, FileId> known_;            // files read and handed out
  std::map<std::string, std::string> unreadable_;  // reported unreadable, with the reason
  std::set<std::string> notes_;                    // said once until they change
};

// `cxds validate`: checks every config file under `dir` offline; errors
// (file:line: object: field: message) go to `err`, a summary to `out`. Returns 0 if all is
// valid, 1 if not, 2 if `dir` is unusable.
int ValidateDirectory(const std::string& dir, std::ostream& out, std::ostream& err, ConfigStore::Options options = {});

}  // namespace cxds
