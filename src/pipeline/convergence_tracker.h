// ConvergenceTracker: every change's progress through every stage, for every proxy it reaches,
// up to the proxy's ACK or NACK ("pushed" is not "accepted"):
//
//   received -> debounced into push N -> push started (version, full or not)
//     -> per proxy: queued -> dequeued -> per type: sent (version, nonce) -> ACKed / NACKed
//     -> done (all written)
//
// It keeps the most recent `max_changes` changes (older ones are forgotten, oldest first).
// Thread-safe; every report takes one short lock.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "pipeline/push_observer.h"

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

struct ChangeStages {
  uint64_t id = 0;
  absl::Time received;
  std::vector<std::string> configs;  // "Kind/ns/name"
  std::string reasons;
  std::optional<uint64_t> push_number;  // 0: the EDS bypass
  std::optional<absl::Time> debounced;
  std::optional<absl::Time> push_started;
  std::string push_version;
  bool full = false;
  std::map<int64_t, ProxyStages> proxies;  // by stream id
};

// One change across every proxy it reached: what a load test compares with a raw fan-out.
struct ChangeSummary {
  uint64_t id = 0;
  absl::Time received;  // the change was made (ConfigUpdate, or SetSnapshot for a cache)
  std::string version;  // the push's version, when the pipeline made it
  int proxies = 0;      // proxies that were sent at least one response for it
  int responses = 0;
  int proxies_written = 0;  // of those, proxies whose responses were all written
  int proxies_acked = 0;    // every response ACKed
  int proxies_nacked = 0;   // at least one NACK
  std::optional<absl::Time> first_sent;    // the first write started
  std::optional<absl::Time> last_written;  // the last proxy's last write completed
  std::optional<absl::Time> last_answered;  // the last ACK or NACK
};

class ConvergenceTracker final : public PushObserver {
 public:
  explicit ConvergenceTracker(size_t max_changes = 256) : max_changes_(max_changes) {}

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

 private:
  ChangeStages& Touch(uint64_t id, const PushRequest& request, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ProxyStages& TouchProxy(ChangeStages& change, const PushTargetInfo& target) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_changes_;
  mutable Mutex mu_;
  std::map<uint64_t, ChangeStages> changes_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cxds
