// ConvergenceTracker: every change's progress through every stage, for every proxy it reaches,
// up to the proxy's ACK or NACK ("pushed" is not "accepted"):
//
//   received -> debounced into push N -> push started (version, full or not)
//     -> per proxy: queued -> dequeued -> per type: sent (version, nonce) -> ACKed / NACKed
//     -> done (all written)
//
// Bounded (issue 11): every change and every per-proxy record is capped, so memory stays flat
// however long the daemon runs and however many proxies it serves (Limits below):
//  - at most `max_changes` changes are kept; older ones are forgotten, oldest first. A change
//    id first seen after an older-or-equal id was forgotten is ignored (it would otherwise
//    come back as a partial record and push out a newer change).
//  - at most `max_proxy_records` per-proxy records (ProxyStages) in total, across changes, and
//    at most `max_detail_bytes` for them (each record's size is estimated from its strings and
//    vectors as it grows: a record with four types is about 2 KB, so 50,000 records would
//    take about 100 MB, which a soak of 2,000 proxies reaches in minutes; the byte cap, 32 MiB
//    by default, is the one that binds there).
//    Over either cap, the per-proxy detail of the oldest change that still has any is dropped
//    whole; its summary counters (proxies, responses, written, ACKed, NACKed and the times)
//    are kept as they were at the drop, so /debug/change_summaries stays right. Events that
//    arrive later for a change whose detail was dropped, or for a proxy a change had no room
//    for (a single change reaching more proxies than the cap), move only the times and the
//    response count, and are counted in `untracked_events`. Both are marked
//    `detail_truncated`.
//  - at most `max_configs_named` configs are listed per change (`configs_total` counts all).
// Thread-safe; every report takes one short lock.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "push/push_observer.h"

namespace cxds {

struct TypeStage {
  std::string type_url;
  std::string version;
  std::string nonce;
  absl::Time sent;
  std::optional<absl::Time> answered;
  bool accepted = false;  // meaningful once answered
  std::string error;      // the NACK's
};

struct ProxyStages {
  int64_t stream_id = 0;
  std::string node_id;
  std::optional<absl::Time> queued;
  std::optional<absl::Time> dequeued;
  std::optional<absl::Time> done;  // every response of the push written
  int responses = 0;
  std::vector<TypeStage> types;

  // Every response sent was answered: ACKed (or NACKed, see rejected()).
  bool answered() const;
  bool rejected() const;
};

// Per-proxy counts of one change, as a summary reports them.
struct ChangeCounters {
  int proxies = 0;  // proxies that were sent at least one response for it
  int responses = 0;
  int proxies_written = 0;                  // of those, proxies whose responses were all written
  int proxies_acked = 0;                    // every response ACKed
  int proxies_nacked = 0;                   // at least one NACK
  std::optional<absl::Time> first_sent;     // the first write started
  std::optional<absl::Time> last_written;   // the last proxy's last write completed
  std::optional<absl::Time> last_answered;  // the last ACK or NACK

  // Adds one proxy's record.
  void Add(const ProxyStages& proxy);
};

struct ChangeStages {
  uint64_t id = 0;
  absl::Time received;
  std::vector<std::string> configs;  // "Kind/ns/name", at most Limits::max_configs_named
  size_t configs_total = 0;
  std::string reasons;
  std::optional<uint64_t> push_number;  // 0: the EDS bypass
  std::optional<absl::Time> debounced;
  std::optional<absl::Time> push_started;
  std::string push_version;
  bool full = false;
  // By stream id. A B-tree: each event of each proxy looks its record up, and stream ids come
  // in rising order, so its nodes stay dense where a red-black tree would miss the cache.
  absl::btree_map<int64_t, ProxyStages> proxies;
  // Capping (see the header comment): what the dropped per-proxy records had counted, whether
  // any record was dropped or never kept, and the events that found no record.
  ChangeCounters dropped;
  bool detail_dropped = false;    // the records were dropped whole: none is added again
  bool detail_truncated = false;  // `proxies` is not every proxy the change reached
  uint64_t untracked_events = 0;
  size_t detail_bytes = 0;  // the estimated size of `proxies` (ConvergenceTracker's accounting)
};

// One change across every proxy it reached: what a load test compares with a raw fan-out.
struct ChangeSummary : ChangeCounters {
  uint64_t id = 0;
  absl::Time received;            // the change was made (ConfigUpdate, or SetSnapshot for a cache)
  std::string version;            // the push's version, when the pipeline made it
  bool detail_truncated = false;  // some per-proxy records were dropped (counts kept)
  uint64_t untracked_events = 0;
};

class ConvergenceTracker final : public PushObserver {
 public:
  struct Limits {
    size_t max_changes = 256;
    size_t max_proxy_records = 50'000;
    size_t max_detail_bytes = size_t{32} << 20;
    size_t max_configs_named = 20;
  };
  struct Stats {
    size_t changes = 0;
    size_t proxy_records = 0;
    size_t detail_bytes = 0;  // estimated, of every per-proxy record
    uint64_t changes_forgotten = 0;
    uint64_t details_dropped = 0;    // changes whose per-proxy records were dropped
    uint64_t untracked_events = 0;   // events that found no record (dropped or no room)
    uint64_t ignored_forgotten = 0;  // events for a change id already forgotten
  };

  explicit ConvergenceTracker(size_t max_changes = 256) : ConvergenceTracker(Limits{.max_changes = max_changes}) {}
  explicit ConvergenceTracker(Limits limits);

  // A change entered the pipeline (ConfigUpdate); the request carries its id.
  void OnReceived(const PushRequest& request, absl::Time now) override;
  void OnDebounced(const PushRequest& request, uint64_t push_number, absl::Time now) override;
  void OnPushStarted(const PushRequest& request, absl::Time now) override;
  void OnQueued(const PushTargetInfo& target, const PushRequest& request, absl::Time now) override;
  void OnDequeued(const PushTargetInfo& target, const PushRequest& request, absl::Time now) override;
  void OnSent(const PushTargetInfo& target, const PushRequest& request, const std::string& type_url,
              const std::string& version, const std::string& nonce, absl::Time now) override;
  void OnFeedback(const PushTargetInfo& target, const PushRequest& request, const std::string& type_url,
                  const std::string& nonce, bool accepted, const std::string& error, absl::Time now) override;
  void OnPushDone(const PushTargetInfo& target, const PushRequest& request, int responses, absl::Time now) override;

  std::optional<ChangeStages> Get(uint64_t change_id) const;
  std::vector<uint64_t> RecentIds() const;  // oldest first
  // Computed on demand (it walks every proxy record of the change).
  std::optional<ChangeSummary> Summarize(uint64_t change_id) const;
  Stats stats() const;
  const Limits& limits() const { return limits_; }

 private:
  // The change's record, created on first sight; null for a change already forgotten.
  ChangeStages* Touch(uint64_t id, const PushRequest& request, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The proxy's record in `change`; null when the change has no room for it (counted).
  ProxyStages* TouchProxy(ChangeStages& change, const PushTargetInfo& target) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // TouchProxy, counting the event as untracked when it gives no record.
  ProxyStages* RecordFor(ChangeStages& change, const PushTargetInfo& target) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the per-proxy records of the oldest change (other than `keep`) that has any;
  // false if there is none.
  bool DropOldestDetail(uint64_t keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Forget(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool OverCap() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Accounts for a record of `change` that was `before` bytes and is now `proxy`'s size, then
  // drops older changes' detail while over the byte cap.
  void Resized(ChangeStages& change, size_t before, const ProxyStages& proxy) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Limits limits_;
  mutable Mutex mu_;
  std::map<uint64_t, ChangeStages> changes_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> order_ ABSL_GUARDED_BY(mu_);
  uint64_t forgotten_through_ ABSL_GUARDED_BY(mu_) = 0;  // the highest id forgotten
  size_t proxy_records_ ABSL_GUARDED_BY(mu_) = 0;
  size_t detail_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cxds
