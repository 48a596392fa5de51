// `cxds serve`: wiring only. The config handling is MeshController's, the xDS server is
// XdsServer, the pages are AdminServer's; this file connects them and waits for SIGINT or
// SIGTERM. Every failure to start exits non-zero with the reason.
#include <csignal>

#include "admin/admin_server.h"
#include "common/logging.h"
#include "common/strings.h"
#include "cxds/commands.h"
#include "grpcpp/server.h"

namespace cxds {
namespace {

void ExportHeapRelease(const HeapReleaser::Stats& stats, MetricsRegistry& metrics) {
  metrics.GetGauge("cxds_heap_trims", "Times freed heap kept by the allocator was given back to the system.")
      .Set(static_cast<double>(stats.trims));
  metrics
      .GetGauge("cxds_heap_released_bytes",
                "Resident memory given back to the system by those trims (bytes, summed; --heap-release-interval).")
      .Set(static_cast<double>(stats.released_bytes));
}

}  // namespace

namespace {

// --config-source: dir://PATH or etcd://HOST:PORT/PREFIX (default: dir://--config-dir).
absl::StatusOr<std::unique_ptr<ConfigSource>> MakeSource(const ServeOptions& options, Scheduler& scheduler) {
  const std::string& url = options.config_source;
  if (url.starts_with("etcd://")) {
    absl::StatusOr<EtcdLocation> location = ParseEtcdUrl(url);
    if (!location.ok()) return location.status();
    absl::StatusOr<std::optional<EtcdTls>> tls =
        ReadEtcdTls(options.etcd_tls.ca, options.etcd_tls.cert, options.etcd_tls.key);
    if (!tls.ok()) return tls.status();
    EtcdSource::Options etcd = options.etcd;
    etcd.client.tls = *std::move(tls);
    return std::make_unique<EtcdSource>(*std::move(location), std::move(etcd));
  }
  std::string dir = options.config_dir;
  if (url.starts_with("dir://")) {
    dir = url.substr(6);
  } else if (!url.empty()) {
    return absl::InvalidArgumentError(
        StrCat("--config-source \"", url, "\" is neither dir://PATH nor etcd://HOST:PORT/PREFIX"));
  }
  DirectorySource::Options source_options = options.source;
  source_options.limits.max_file_bytes = options.controller.max_config_file_bytes;
  return std::make_unique<DirectorySource>(dir, scheduler, source_options);
}

}  // namespace

int RunServe(const ServeOptions& options) {
  // Signals are taken by this thread (sigwait); every thread started from here inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  MetricsRegistry metrics;
  ConvergenceTracker tracker;
  // Its own thread: a trim holds the allocator's locks for a while (common/heap_release.h).
  RealScheduler heap_scheduler;
  std::unique_ptr<HeapReleaser> heap_releaser;
  if (options.heap_release.interval > absl::ZeroDuration()) {
    heap_releaser = std::make_unique<HeapReleaser>(heap_scheduler, options.heap_release);
  }
  RealScheduler pipeline_scheduler;
  RealScheduler config_scheduler;  // slow file systems never delay the debounce timers
  absl::StatusOr<std::unique_ptr<ConfigSource>> source = MakeSource(options, config_scheduler);
  if (!source.ok()) {
    Log().error("{}", std::string(source.status().message()));
    return 2;
  }
  MeshController::Options controller_options = options.controller;
  controller_options.metrics = &metrics;
  controller_options.observer = &tracker;
  MeshController controller(controller_options, *std::move(source), pipeline_scheduler);

  absl::StatusOr<XdsSecurity> security = MakeXdsSecurity(options.security);
  absl::StatusOr<std::string> admin_token = ReadBearerToken(options.admin_token_file);
  for (const absl::Status& status : {security.status(), admin_token.status()}) {
    if (!status.ok()) {
      Log().error("{}", std::string(status.message()));
      return 2;
    }
  }
  XdsServer::Options server_options = options.server;
  server_options.credentials = security->credentials;
  server_options.authenticator = security->authenticator.get();
  server_options.metrics = &metrics;
  server_options.observer = &tracker;
  server_options.ready = [&controller] { return controller.ready(); };
  XdsServer xds(controller.pipeline(), server_options);
  absl::StatusOr<std::unique_ptr<grpc::Server>> grpc_server = xds.Start(options.xds_address);

  // A failed start logs the reason and returns at once: SIGINT/SIGTERM are unblocked so that
  // nothing in the teardown can make the process deaf to them, and the xDS server stops with
  // a bound (the admin server's Stop never waits on a client).
  const auto fail = [&](int code, const absl::Status& status) {
    Log().error("{}", std::string(status.message()));
    pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
    if (grpc_server.ok()) (*grpc_server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    return code;
  };
  if (!grpc_server.ok()) return fail(1, grpc_server.status());
  AdminServer admin({&metrics, &xds.ledger(), &controller.pipeline(), &controller.store(), &tracker,
                     [&controller] { return controller.ready(); }, *admin_token,
                     [&options, &heap_releaser](MetricsRegistry& m) {
                       if (!options.security.files.cert_file.empty())
                         ExportCertificateExpiry(options.security.files.cert_file, m);
                       if (heap_releaser != nullptr) ExportHeapRelease(heap_releaser->stats(), m);
                     },
                     &controller.source()});
  if (absl::Status status = admin.Start(options.admin_address); !status.ok()) {
    return fail(status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1, status);
  }
  // Streams are refused until the first full load is pushed.
  if (absl::Status status = controller.Start(); !status.ok()) {
    return fail(status.code() == absl::StatusCode::kNotFound ? 2 : 1, status);
  }
  if (security->mode == "plaintext") {
    Log().warn("PLAINTEXT xds={}: no --tls-cert/--tls-key, so any process that reaches the port can claim any node",
               options.xds_address);
  }
  Log().info("READY xds={} security={} admin={} admin_port={} source=\"{}\"", options.xds_address, security->mode,
             options.admin_address, admin.port(), controller.source().Describe());

  int signal = 0;
  sigwait(&signals, &signal);
  Log().info("SHUTDOWN signal={}", signal);
  controller.Stop();
  admin.Stop();
  (*grpc_server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return 0;
}

}  // namespace cxds
