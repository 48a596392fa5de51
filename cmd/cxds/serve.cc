// `cxds serve`: wiring only. The config handling is MeshController's, the xDS server is
// XdsServer, the pages are AdminServer's; this file connects them and waits for SIGINT or
// SIGTERM. Every failure to start exits non-zero with the reason.
#include "admin/admin_server.h"
#include "common/logging.h"
#include "common/signals.h"
#include "cxds/commands.h"
#include "grpcpp/server.h"

namespace cxds {

int RunServe(const ServeOptions& options) {
  TerminationSignals signals;  // before any thread starts: only this one takes them

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
  absl::StatusOr<std::unique_ptr<ConfigSource>> source = OpenConfigSource(options.source, config_scheduler);
  if (!source.ok()) {
    Log().error("{}", std::string(source.status().message()));
    return 2;
  }
  MeshController::Options controller_options = options.controller;
  controller_options.metrics = &metrics;
  controller_options.observer = &tracker;
  std::unique_ptr<NameResolver> resolver;
  if (controller_options.dns_refresh > absl::ZeroDuration()) {
    resolver = SystemNameResolver();
    controller_options.resolver = resolver.get();
  }
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
    signals.Unblock();
    if (grpc_server.ok()) (*grpc_server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    return code;
  };
  if (!grpc_server.ok()) return fail(1, grpc_server.status());
  AdminServer admin({&metrics, &xds.ledger(), &controller.pipeline(), &controller.store(), &tracker,
                     [&controller] { return controller.ready(); }, *admin_token,
                     [&options](MetricsRegistry& m) {
                       if (!options.security.files.cert_file.empty())
                         ExportCertificateExpiry(options.security.files.cert_file, m);
                     },
                     &controller.source(), heap_releaser.get(), options.controller.translation.secret_readers,
                     &controller.model()});
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

  Log().info("SHUTDOWN signal={}", signals.Wait());
  controller.Stop();
  admin.Stop();
  (*grpc_server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return 0;
}

}  // namespace cxds
