// ConfigSource: where the daemon's config files come from, as batches of whole-file reads
// for ConfigStore::ApplyFiles. The first implementation is the watched directory
// (DirectorySource); a store such as etcd is another (each key a "file").
//
// Threading: Load, Start and Stop are called by the owner, in that order; batches are
// delivered on the source's own thread, one at a time, until Stop returns.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/config_store.h"

namespace cxds {

// Whether a source can currently reach what it reads, and how far it has read. A source that
// lost its store keeps what it delivered (the last good config keeps serving).
struct SourceStatus {
  bool connected = true;
  int64_t revision = 0;  // the store revision delivered so far (0: the source has none)
  std::string detail;    // why not connected, for logs and status pages
};

class ConfigSource {
 public:
  using OnBatch = std::function<void(std::vector<FileRead> batch)>;

  virtual ~ConfigSource() = default;

  // For logs and status pages, e.g. "dir examples/mesh".
  virtual std::string Describe() const = 0;
  // The whole current config, read once. An error if the source cannot be read at all.
  virtual absl::StatusOr<std::vector<FileRead>> Load() = 0;
  // Delivers what changes after Load, in batches that each leave a consistent state.
  virtual absl::Status Start(OnBatch on_batch) = 0;
  virtual void Stop() = 0;
  // Thread-safe.
  virtual SourceStatus status() const { return {}; }
};

}  // namespace cxds
