// `cxds serve`: watches a mesh config directory and serves it as xDS (see README and
// docs/config.md). Shuts down on SIGINT or SIGTERM.
#include <csignal>
#include <memory>
#include <ostream>

#include "admin/admin_server.h"
#include "common/logging.h"
#include "common/strings.h"
#include "config/config_dir.h"
#include "config/dir_source.h"
#include "cxds/commands.h"
#include "grpcpp/server_builder.h"
#include "model/generators.h"
#include "model/mesh_model.h"
#include "server/xds_server.h"

namespace cxds {

namespace {

bool SplitHostPort(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  *host = address.substr(0, colon);
  return absl::SimpleAtoi(address.substr(colon + 1), port) && *port >= 0 && *port <= 65535;
}

}  // namespace

int RunServe(const ServeOptions& options) {
  // Signals are taken synchronously by this thread (sigwait below); every thread started from
  // here inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  MetricsRegistry metrics;
  ConvergenceTracker tracker;
  ConfigStore store(ConfigStore::Options{.limits = {.max_file_bytes = options.max_config_file_bytes},
                                        .check_references = MeshReferenceCheck(options.domain_suffix)});
  auto model = std::make_shared<MeshModel>(store, options.domain_suffix);
  RealScheduler scheduler;
  PushPipeline::Options pipeline_options;
  pipeline_options.scheduler = &scheduler;
  pipeline_options.debounce = {options.debounce_after, options.debounce_max, options.eds_debounce};
  pipeline_options.metrics = &metrics;
  pipeline_options.observer = &tracker;
  pipeline_options.proxy_filter = MeshProxyFilter();
  PushPipeline pipeline(model, pipeline_options);
  AddMeshGenerators(pipeline, *model);

  std::atomic<bool> ready{false};
  XdsServer::Options server_options;
  server_options.metrics = &metrics;
  server_options.observer = &tracker;
  server_options.push_throttle = options.push_throttle;
  server_options.max_new_streams_per_second = options.max_new_streams_per_second;
  server_options.ready = [&ready] { return ready.load(); };
  server_options.send_timeout = options.send_timeout;
  XdsServer xds(pipeline, server_options);
  // Exclusive: a busy port (another cxds?) is an error, never a shared port.
  absl::StatusOr<std::unique_ptr<grpc::Server>> started = xds.Start(options.xds_address);
  if (!started.ok()) {
    Log().error("{}", std::string(started.status().message()));
    return 1;
  }
  std::unique_ptr<grpc::Server> grpc_server = std::move(*started);

  AdminServer admin({&metrics, &xds.ledger(), &pipeline, &store, &tracker, &ready});
  std::string admin_host;
  int admin_port = 0;
  if (!SplitHostPort(options.admin_address, &admin_host, &admin_port)) {
    Log().error("bad --admin-address {}", options.admin_address);
    return 2;
  }
  if (absl::Status status = admin.Start(admin_host, admin_port); !status.ok()) {
    Log().error("{}", std::string(status.message()));
    return 1;
  }

  Gauge& config_errors = metrics.GetGauge("cxds_config_errors", "Config documents currently rejected.");
  Counter& rejected = metrics.GetCounter("cxds_config_rejected_total", "Config documents rejected, ever.");
  auto apply = [&](const std::vector<FileRead>& batch) {
    ConfigStore::Update update = store.ApplyFiles(batch);
    for (const ConfigError& error : update.errors) Log().error("CONFIG rejected {}", error.ToString());
    rejected.Add(static_cast<double>(update.errors.size()));
    config_errors.Set(static_cast<double>(store.error_count()));
    return update;
  };

  // The first full load: every file, then one full push. Streams are refused until then.
  // Config reads run on their own scheduler thread, so that slow file systems never delay the
  // pipeline's debounce timers.
  RealScheduler config_scheduler;
  DirectorySource source(options.config_dir, config_scheduler,
                         DirectorySource::Options{.settle = options.config_settle,
                                                  .max_settle = std::max(absl::Seconds(1), options.config_settle * 10),
                                                  .limits = {.max_file_bytes = options.max_config_file_bytes}});
  absl::StatusOr<std::vector<FileRead>> files = source.Load();
  if (!files.ok()) {
    Log().error("{}", std::string(files.status().message()));
    admin.Stop();
    return 2;
  }
  apply(*files);
  PushRequest initial = model->OnUpdate({});
  initial.full = true;
  initial.reasons = {{reason::kConfig, 1}};
  absl::StatusOr<std::shared_ptr<const PushContext>> first = pipeline.Push(initial);
  if (!first.ok()) {
    Log().error("the first load failed: {}", std::string(first.status().message()));
    admin.Stop();
    return 1;
  }
  ready = true;
  Log().info("READY xds={} admin={}:{} config_dir={} files={} objects={} errors={} version={}", options.xds_address,
             admin_host, admin.port(), options.config_dir, files->size(), store.Snapshot()->size(),
             store.error_count(), (*first)->version());

  absl::Status watching = source.Start([&](std::vector<FileRead> batch) {
    ConfigStore::Update update = apply(batch);
    PushRequest request = model->OnUpdate(update);
    const std::string what =
        batch.size() == 1 ? StrCat("file=", batch.front().path) : StrCat("files=", batch.size());
    if (request.configs.empty()) {
      Log().info("CONFIG {} unchanged: no push", what);
      return;
    }
    const uint64_t change = NewChangeId();
    request.change_ids.insert(change);
    Log().info("CONFIG {} objects_changed={} push={} change={} (see /debug/changes/{})", what,
               update.changed.size(), request.full ? "full" : "incremental", change, change);
    pipeline.ConfigUpdate(std::move(request));
  });
  if (!watching.ok()) {
    Log().error("{}", std::string(watching.message()));
    admin.Stop();
    return 1;
  }

  int signal = 0;
  sigwait(&signals, &signal);
  Log().info("SHUTDOWN signal={}", signal);
  source.Stop();
  admin.Stop();
  grpc_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return 0;
}

}  // namespace cxds
