#include "controller/mesh_controller.h"

#include <utility>

#include "common/logging.h"
#include "common/strings.h"
#include "model/generators.h"
#include "model/mesh_analysis.h"

namespace cxds {

namespace {

MetricsRegistry* OwnedIfNull(MetricsRegistry* given, std::unique_ptr<MetricsRegistry>& own) {
  if (given != nullptr) return given;
  own = std::make_unique<MetricsRegistry>();
  return own.get();
}

}  // namespace

MeshController::MeshController(Options options, std::unique_ptr<ConfigSource> source, Scheduler& scheduler)
    : options_(std::move(options)),
      metrics_(*OwnedIfNull(options_.metrics, own_metrics_)),
      source_(std::move(source)),
      store_(ConfigStore::Options{
          .limits = {.max_file_bytes = options_.max_config_file_bytes},
          .check_references = MeshReferenceCheck(options_.domain_suffix, options_.root_namespace),
          .analyze = MeshAnalyzer(options_.domain_suffix, options_.root_namespace, options_.cluster_id)}),
      model_(std::make_shared<MeshModel>(store_, options_.domain_suffix, options_.root_namespace, options_.cluster_id)),
      config_errors_(metrics_.GetGauge("cxds_config_errors", "Config documents currently rejected.")),
      config_skipped_(metrics_.GetGauge("cxds_config_skipped_objects",
                                        "Config documents skipped: kinds with no meaning for xDS (Deployment, ...).")),
      config_rejected_(metrics_.GetCounter("cxds_config_rejected_total", "Config documents rejected, ever.")) {
  PushPipeline::Options pipeline_options;
  pipeline_options.scheduler = &scheduler;
  pipeline_options.debounce = options_.debounce;
  pipeline_options.metrics = &metrics_;
  pipeline_options.observer = options_.observer;
  pipeline_options.proxy_filter = MeshProxyFilter(*model_);
  pipeline_options.proxy_update = MeshProxyUpdate(*model_);
  pipeline_ = std::make_unique<PushPipeline>(model_, pipeline_options);
  AddMeshGenerators(*pipeline_, *model_, options_.translation);
  if (options_.resolver != nullptr) {
    dns_scheduler_ = std::make_unique<RealScheduler>();  // the system resolver blocks
    dns_refresher_ = std::make_unique<DnsRefresher>(DnsRefresher::Options{.interval = options_.dns_refresh}, store_,
                                                    *model_, *pipeline_, *options_.resolver, *dns_scheduler_);
  }
}

MeshController::~MeshController() {
  Stop();
  dns_refresher_.reset();  // before the pipeline and model it pushes to
}

ConfigStore::Update MeshController::Apply(const std::vector<FileRead>& batch) {
  ConfigStore::Update update = store_.ApplyFiles(batch);
  for (const ConfigError& error : update.errors) Log().error("CONFIG rejected {}", error.ToString());
  for (const auto& [path, skipped] : update.skipped) {
    std::map<std::string, int> kinds;
    for (const SkippedDocument& document : skipped) kinds[document.kind]++;
    std::string listed;
    for (const auto& [kind, count] : kinds) listed += StrCat(listed.empty() ? "" : ",", kind, ":", count);
    Log().info("CONFIG skipped file={} objects={} kinds={} (no meaning for xDS)", Untrusted(path), skipped.size(),
               Untrusted(listed));
  }
  // New findings only: a warning is said once, when it appears, not at every change.
  constexpr size_t kWarningsLogged = 20;
  for (size_t i = 0; i < update.warnings.size() && i < kWarningsLogged; ++i) {
    Log().warn("CONFIG warning {}", update.warnings[i].ToString());
  }
  if (update.warnings.size() > kWarningsLogged) {
    Log().warn("CONFIG warning and {} more new warnings (/debug/config_status lists them)",
               update.warnings.size() - kWarningsLogged);
  }
  const std::map<std::string, size_t> counts = store_.WarningCounts();
  for (const std::string& code : MeshAnalysisCodes()) {
    auto it = counts.find(code);
    const double n = it == counts.end() ? 0 : static_cast<double>(it->second);
    metrics_.GetGauge("cxds_config_warnings", "Analysis findings about the served config, by code.", {{"code", code}})
        .Set(n);
    if (code.starts_with("pilot_")) metrics_.GetGauge(code, "Analysis findings (istiod's name), now.").Set(n);
  }
  config_rejected_.Add(static_cast<double>(update.errors.size()));
  config_errors_.Set(static_cast<double>(store_.error_count()));
  config_skipped_.Set(static_cast<double>(store_.skipped_count()));
  return update;
}

absl::Status MeshController::Start() {
  absl::StatusOr<std::vector<FileRead>> files = source_->Load();
  if (!files.ok()) return files.status();
  Apply(*files);
  PushRequest initial = model_->OnUpdate({});
  initial.full = true;
  initial.reasons = {{reason::kConfig, 1}};
  absl::StatusOr<std::shared_ptr<const PushContext>> first = pipeline_->Push(initial);
  if (!first.ok()) {
    return absl::Status(first.status().code(), StrCat("the first load failed: ", first.status().message()));
  }
  ready_ = true;
  // On its own thread, at once: start-up never waits on DNS (a config naming many unresolvable
  // names would otherwise hold readiness for each one's resolver timeout). Until the first
  // answers, gRPC nodes get those clusters empty; the answers are an endpoint-only push.
  if (dns_refresher_ != nullptr) dns_refresher_->Start();
  Log().info("CONFIG loaded source=\"{}\" files={} objects={} errors={} version={}", source_->Describe(), files->size(),
             store_.Snapshot()->size(), store_.error_count(), (*first)->version());
  return source_->Start([this](std::vector<FileRead> batch) { ApplyBatch(batch); });
}

void MeshController::Stop() { source_->Stop(); }

uint64_t MeshController::ApplyBatch(const std::vector<FileRead>& batch) {
  ConfigStore::Update update = Apply(batch);
  PushRequest request = model_->OnUpdate(update);
  const std::string what = batch.size() == 1 ? StrCat("file=", batch.front().path) : StrCat("files=", batch.size());
  if (request.configs.empty()) {
    Log().info("CONFIG {} unchanged: no push", what);
    return 0;
  }
  const uint64_t change = NewChangeId();
  request.change_ids.insert(change);
  Log().info("CONFIG {} objects_changed={} push={} change={} (see /debug/changes/{})", what, update.changed.size(),
             request.full ? "full" : "incremental", change, change);
  pipeline_->ConfigUpdate(std::move(request));
  return change;
}

}  // namespace cxds
