// PushContext: an immutable view of the whole configuration, built once per full push and read
// without locks by every generator and proxy filter of that push. An incremental
// (endpoint-only) push reuses the current context; what changes on that path (endpoints)
// lives outside it, in whatever index the config source keeps.
//
// The version of a context derives from its content: the same configuration gives the same
// version in every process and replica, and across restarts (so a Delta client that
// reconnects with what it holds is sent nothing). `sequence` orders contexts within a process.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "push/push_request.h"

namespace cxds {

class PushContext {
 public:
  PushContext(std::string version, uint64_t sequence, absl::Time created)
      : version_(std::move(version)), sequence_(sequence), created_(created) {
    alive_.fetch_add(1, std::memory_order_relaxed);
  }
  virtual ~PushContext() { alive_.fetch_sub(1, std::memory_order_relaxed); }
  PushContext(const PushContext&) = delete;
  PushContext& operator=(const PushContext&) = delete;

  const std::string& version() const { return version_; }
  uint64_t sequence() const { return sequence_; }
  absl::Time created() const { return created_; }
  // Contexts alive in this process: the current one, and older ones that pushes still in
  // progress or responses not yet answered hold on to.
  static int64_t Alive() { return alive_.load(std::memory_order_relaxed); }

 private:
  const std::string version_;
  const uint64_t sequence_;
  const absl::Time created_;
  static inline std::atomic<int64_t> alive_{0};
};

// Builds contexts for full pushes; provided by the config model. Called on the pipeline's
// push thread, one call at a time.
class PushContextBuilder {
 public:
  virtual ~PushContextBuilder() = default;
  // A new context for `request`. `previous` (null on the first push) may be used to copy what
  // the request did not touch (istiod's updateContext). The context must be given
  // `sequence` and `now`. An error keeps the previous context serving and pushes nothing.
  virtual absl::StatusOr<std::shared_ptr<const PushContext>> Build(const PushContext* previous,
                                                                   const PushRequest& request, uint64_t sequence,
                                                                   absl::Time now) = 0;
};

}  // namespace cxds
