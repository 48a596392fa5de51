// PushPipeline: the generating side of cxds, as the ProxyGenerator the xDS server serves from
// (server/proxy_generator.h).
//
//   ConfigUpdate(request) -> Debouncer -> Push(request)
//     full:        PushContextBuilder::Build -> new immutable PushContext (content version),
//                  ResourceCache cleared for the request's configs (all, if forced)
//     incremental: the current PushContext is reused; only dependent cache entries dropped
//   -> for each proxy that the proxy filter lets through: announce the push to its stream,
//      which queues it in the server's PushDispatcher (queue + throttle); a proxy whose own
//      workload the push changes (proxy_update) is announced the push forced, in full
//      (istiod's ProxyUpdate)
//   -> when the push is delivered, the stream calls its Session::Generate: the generators run
//      for the proxy's subscribed types, in push order, through the shared ResourceCache, and
//      the stream gets each changed type's new view and changed names; it sends them.
//
// A proxy that subscribes to new names gets them generated at once, from the context of its
// last push (istiod's request path), not throttled.
//
// Logging: full pushes at Info, incremental ones at Debug, and every `summary_interval` an Info
// line counts the incremental pushes (so they are never invisible).
//
// Threading: ConfigUpdate from any thread. Push runs on the scheduler's thread (via the
// debouncer) or on a test's thread, one at a time. Generators run on stream processing threads.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "common/scheduler.h"
#include "metrics/metrics.h"
#include "pipeline/debouncer.h"
#include "pipeline/generator.h"
#include "pipeline/push_context.h"
#include "pipeline/resource_cache.h"
#include "pipeline/view_interner.h"
#include "push/push_observer.h"
#include "server/proxy_generator.h"

namespace cxds {

// istiod's ProxyNeedsPush: whether a push concerns a proxy at all. Must be thread-safe.
// `previous`: the context the proxy's view was last generated from (for a proxy shown nothing
// yet, the push before; null for the first push): a proxy that saw a changed object there must
// be told, even if it no longer sees it (istiod's PrevSidecarScope).
using ProxyFilter = std::function<bool(const Proxy& proxy, const PushRequest& request, const PushContext& context,
                                       const PushContext* previous)>;

// istiod's ProxyUpdate: whether a push's Workload configs (kind::kWorkload) name this proxy's own
// workload, so that who it is (its labels, its locality) may have changed. Such a proxy gets the
// push forced: every type it watches is generated again, whatever the proxy filter says.
// Must be thread-safe.
using ProxyUpdateCheck = std::function<bool(const Proxy& proxy, const PushRequest& request)>;

class PushPipeline final : public ProxyGenerator {
 public:
  struct Options {
    Scheduler* scheduler = nullptr;  // required: debounce and summary timers
    DebounceOptions debounce;
    MetricsRegistry* metrics = nullptr;  // may be null
    PushObserver* observer = nullptr;    // may be null
    ProxyFilter proxy_filter;            // empty: every proxy gets every push
    ProxyUpdateCheck proxy_update;       // empty: no proxy is a workload
    absl::Duration summary_interval = absl::Seconds(60);
  };
  struct Stats {
    uint64_t full_pushes = 0;
    uint64_t incremental_pushes = 0;
    uint64_t contexts_built = 0;
    uint64_t context_errors = 0;
    uint64_t proxies_notified = 0;  // summed over pushes
    uint64_t proxies_filtered_out = 0;
    uint64_t generate_errors = 0;
  };

  // One push, for /debug/push_status.
  struct PushRecord {
    uint64_t sequence = 0;
    std::string version;
    bool full = false;
    std::string reasons;
    std::vector<std::string> configs;  // at most 20 named
    size_t configs_total = 0;
    std::vector<uint64_t> change_ids;  // the newest kMaxChangeIdsNamed named
    size_t change_ids_total = 0;
    uint64_t proxies_notified = 0;
    uint64_t proxies_total = 0;
    absl::Time first_change;      // the earliest change in the push
    absl::Time started;           // Push began
    absl::Duration context_time;  // building the PushContext (zero when reused)
    absl::Duration push_time;     // all of Push (context, cache, notifying the proxies)
  };

  // Bounds of /debug/push_status (issue 11: nothing grows per change): the most recent
  // kMaxPushRecords pushes, each naming at most 20 configs and kMaxChangeIdsNamed change ids
  // (a push merged from many changes counts them all in change_ids_total).
  static constexpr size_t kMaxPushRecords = 64;
  static constexpr size_t kMaxChangeIdsNamed = 32;

  PushPipeline(std::shared_ptr<PushContextBuilder> builder, Options options);
  ~PushPipeline() override;
  PushPipeline(const PushPipeline&) = delete;
  PushPipeline& operator=(const PushPipeline&) = delete;

  // Registers the generator of `type_url`. Call before serving.
  void AddGenerator(const std::string& type_url, std::shared_ptr<Generator> generator);

  // Queues a change (debounced). Never blocks on a push.
  void ConfigUpdate(PushRequest request);
  // Runs a push now (what the debouncer calls). Returns the context it pushed, or the error
  // that kept the previous one.
  absl::StatusOr<std::shared_ptr<const PushContext>> Push(PushRequest request);

  std::shared_ptr<const PushContext> context() const;
  ResourceCache& cache() { return cache_; }
  Debouncer& debouncer() { return debouncer_; }
  Stats stats() const;
  size_t watches() const;
  // The most recent pushes, oldest first (at most kMaxPushRecords).
  std::vector<PushRecord> RecentPushes() const;
  // What the proxy with node id `node_id` is served now (its first stream's view), or null.
  SnapshotPtr ProxyView(const std::string& node_id);
  // The node the proxy `node_id` (its first stream) sent, or nullopt.
  std::optional<envoy::config::core::v3::Node> ProxyNode(const std::string& node_id);
  // The same, with who its stream proved it is (Proxy::identity).
  std::optional<Proxy> FindProxy(const std::string& node_id);
  // What the proxy `node_id` (its first stream) would be sent now: each type it subscribes to,
  // generated afresh from the current PushContext (through the shared resource cache) for its
  // current subscriptions, without changing its view or anything its stream does. For
  // `cxds proxy-status PROXY`: sent vs now. nullopt if no such proxy or no context yet.
  struct RegeneratedType {
    std::map<std::string, ResourcePtr> resources;  // by name
    std::string error;                             // the generator's error; then `resources` is empty
  };
  std::optional<std::map<std::string, RegeneratedType>> RegenerateView(const std::string& node_id);

  std::unique_ptr<Session> Open(const envoy::config::core::v3::Node& node,
                                absl::AnyInvocable<void(PushRequestPtr)> on_push,
                                const PeerIdentity& identity = PeerIdentity{}) override;

  class WatchCore;  // a proxy's generated view; internal

 private:
  friend class PipelineSession;
  void LogSummary();
  // A registered generator and its push-time histogram (looked up once, not per call).
  struct GeneratorEntry {
    std::shared_ptr<Generator> generator;
    Histogram* push_time = nullptr;  // null without metrics
  };
  // Replaced whole by AddGenerator: a generation reads it once, for every type, with one lock.
  using GeneratorMap = TypeUrlMap<GeneratorEntry>;
  std::shared_ptr<const GeneratorMap> generators() const;
  // The first watch of the proxy `node_id`, or null.
  std::shared_ptr<WatchCore> FindWatch(const std::string& node_id) const;
  // Generates every type the proxy watches, in push order, or only `only_type`, and applies the
  // results to its view; returns the changes.
  GeneratedConfig Generate(WatchCore& core, const PushRequest& request,
                           std::optional<std::string_view> only_type = std::nullopt);

  const std::shared_ptr<PushContextBuilder> builder_;
  Options options_;
  Clock& clock_;
  ResourceCache cache_;
  ViewInterner views_;  // proxies' equal views held once
  Debouncer debouncer_;

  mutable Mutex mu_;
  std::shared_ptr<const GeneratorMap> generators_ ABSL_GUARDED_BY(mu_) = std::make_shared<const GeneratorMap>();
  std::shared_ptr<const PushContext> context_ ABSL_GUARDED_BY(mu_);
  uint64_t push_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::shared_ptr<WatchCore>> watches_ ABSL_GUARDED_BY(mu_);
  uint64_t next_watch_id_ ABSL_GUARDED_BY(mu_) = 1;
  Stats stats_ ABSL_GUARDED_BY(mu_);
  std::deque<PushRecord> history_ ABSL_GUARDED_BY(mu_);
  uint64_t summary_incremental_ ABSL_GUARDED_BY(mu_) = 0;  // since the last summary
  uint64_t summary_incremental_proxies_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t summary_full_ ABSL_GUARDED_BY(mu_) = 0;
  TimerPtr summary_timer_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Counter* full_pushes_metric_ = nullptr;
  Counter* incremental_pushes_metric_ = nullptr;
  Histogram* context_init_time_ = nullptr;
  Gauge* context_version_info_ = nullptr;
};

}  // namespace cxds
