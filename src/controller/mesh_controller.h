// MeshController: the daemon's control logic as a library. It owns the config store, the
// mesh model and the push pipeline, and turns what a ConfigSource delivers into pushes:
//
//   source batch -> ConfigStore::ApplyFiles (refusals logged and counted, last good kept)
//     -> MeshModel::OnUpdate (which configs changed, full or endpoint-only)
//     -> a change id -> PushPipeline::ConfigUpdate (debounce -> push -> proxies)
//
// Start() reads the whole source, makes the first full push and only then reports ready();
// the xDS server refuses streams until then. The servers (xDS, admin) are wired by the
// caller (cmd/cxds/serve.cc) around pipeline(), store() and ready().
//
// Threading: Start and Stop on the owner's thread. Batches arrive on the source's thread;
// the pipeline runs its debounce on `scheduler`. Every accessor is thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/scheduler.h"
#include "config/config_source.h"
#include "config/config_store.h"
#include "config/yaml_loader.h"
#include "controller/dns_refresher.h"
#include "metrics/metrics.h"
#include "model/generators.h"
#include "model/mesh_model.h"
#include "pipeline/debouncer.h"
#include "pipeline/push_pipeline.h"
#include "push/push_observer.h"

namespace cxds {

class MeshController {
 public:
  // Every default of the daemon's config handling lives here (flags show these).
  struct Options {
    std::string domain_suffix = "cluster.local";  // resolves short Kubernetes hosts
    // Istio's meshConfig.rootNamespace: its DestinationRules and its Sidecar without a
    // workloadSelector are every namespace's defaults.
    std::string root_namespace = kRootNamespace;
    // istiod's CLUSTER_ID: the cluster the config's workloads are in, a label
    // (topology.istio.io/cluster) subsets and selectors may match (AugmentLabels).
    std::string cluster_id = kDefaultClusterId;
    size_t max_config_file_bytes = ParseLimits{}.max_file_bytes;
    DebounceOptions debounce;
    MetricsRegistry* metrics = nullptr;  // null: a private registry
    PushObserver* observer = nullptr;    // may be null
    // Resolves DNS ServiceEntries' names for proxyless gRPC nodes (controller/dns_refresher.h)
    // on a thread of its own, once at start (not holding readiness) and every `dns_refresh`.
    // Null: gRPC nodes get those clusters empty.
    NameResolver* resolver = nullptr;
    absl::Duration dns_refresh = absl::Seconds(30);
    TranslationOptions translation;  // where the Envoy listeners bind
  };

  // `scheduler` runs the pipeline's timers; the source delivers batches on its own thread.
  MeshController(Options options, std::unique_ptr<ConfigSource> source, Scheduler& scheduler);
  ~MeshController();  // stops the source
  MeshController(const MeshController&) = delete;
  MeshController& operator=(const MeshController&) = delete;

  // The first load (every file, then one full push), then watching the source. An error if
  // the source cannot be read or the first push fails; nothing is served then.
  absl::Status Start();
  void Stop();

  bool ready() const { return ready_.load(); }
  PushPipeline& pipeline() { return *pipeline_; }
  const ConfigStore& store() const { return store_; }
  const MeshModel& model() const { return *model_; }
  const ConfigSource& source() const { return *source_; }

  // Applies one batch as the source delivers it; returns the change id pushed (0: the batch
  // changed nothing that is served, so nothing was pushed).
  uint64_t ApplyBatch(const std::vector<FileRead>& batch);

 private:
  ConfigStore::Update Apply(const std::vector<FileRead>& batch);

  const Options options_;
  std::unique_ptr<MetricsRegistry> own_metrics_;  // when options_.metrics is null
  MetricsRegistry& metrics_;
  std::unique_ptr<ConfigSource> source_;
  ConfigStore store_;
  std::shared_ptr<MeshModel> model_;
  std::unique_ptr<PushPipeline> pipeline_;
  // Declared after what it uses, so that it stops first.
  std::unique_ptr<RealScheduler> dns_scheduler_;
  std::unique_ptr<DnsRefresher> dns_refresher_;
  Gauge& config_errors_;
  Gauge& config_skipped_;
  Counter& config_rejected_;
  std::atomic<bool> ready_{false};
};

}  // namespace cxds
