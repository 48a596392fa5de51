#include <iomanip>
#include <sstream>

#include "absl/strings/str_split.h"
#include "admin/admin_server.h"
#include "cache/snapshot_cache.h"
#include "common/logging.h"
#include "common/strings.h"
#include "cxds/commands.h"
#include "cxds/teaching_snapshot.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "pipeline/convergence_tracker.h"
#include "protocol/type_url.h"
#include "server/xds_server.h"

namespace cxds {

namespace {

std::string FormatTime(const std::optional<absl::Time>& time) {
  return time.has_value() ? absl::FormatTime("%H:%M:%E3S", *time, absl::UTCTimeZone()) : "-";
}

void PrintStatus(const AckLedger& ledger, std::ostream& out) {
  std::vector<StreamSyncStatus> streams = ledger.AllStreams();
  if (streams.empty()) {
    out << "no open streams" << std::endl;
    return;
  }
  for (const StreamSyncStatus& stream : streams) {
    for (const TypeSyncStatus& type : stream.types) {
      out << "stream=" << stream.stream_id << " node=" << EscapeUntrusted(stream.node_id)
          << " type=" << ShortTypeName(type.type_url) << " sent_version=" << type.sent_version
          << " sent_at=" << FormatTime(type.sent_time)
          << " acked_version=" << (type.acked_version.empty() ? "-" : type.acked_version)
          << " acked_at=" << FormatTime(type.acked_time) << " state=" << (type.synced() ? "SYNCED" : "PENDING");
      if (type.last_nack.has_value()) {
        out << " last_nack_version=" << type.last_nack->sent_version << " last_nack_error=\""
            << EscapeUntrusted(type.last_nack->error, 1024, UntrustedIn::kQuoted) << "\"";
      }
      out << std::endl;
    }
  }
}

class TeachingControlPlane {
 public:
  TeachingControlPlane(const DemoOptions& options, const XdsSecurity& security, std::ostream& out)
      : options_(options),
        out_(out),
        cache_(SnapshotCache::Options{.consistency = ConsistencyPolicy::kStrict,
                                      .keep_unchanged_types = options.keep_unchanged_types}),
        security_mode_(security.mode),
        xds_(cache_, ServerOptions(options, security, &tracker_)) {}

  bool Start() {
    absl::StatusOr<std::unique_ptr<grpc::Server>> server = xds_.Start(options_.xds_address);
    if (!server.ok()) {
      Log().error("{}", std::string(server.status().message()));
      out_ << "ERROR " << server.status().message() << std::endl;
      return false;
    }
    server_ = std::move(*server);
    Log().info("LISTEN address={} node={} security={}", options_.xds_address, options_.node_id, security_mode_);
    return Publish(options_.inventory_port, /*valid_route=*/true);
  }

  // Handles one command line; returns false to quit.
  bool Handle(const std::string& line) {
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (words.empty()) return true;
    const std::string& command = words[0];
    if (command == "quit" || command == "exit") return false;
    if (command == "status") {
      PrintStatus(xds_.ledger(), out_);
    } else if (command == "port") {
      if (words.size() != 2) {
        out_ << "ERROR usage: port N (1-65535)" << std::endl;
        return true;
      }
      absl::StatusOr<uint32_t> port = teaching::ParsePort(words[1]);
      if (!port.ok()) {
        out_ << "ERROR " << port.status().message() << "; nothing published" << std::endl;
        return true;
      }
      Publish(*port, /*valid_route=*/true);
    } else if (command == "pushes") {
      // What each recent change cost the server: for load tools, beside a raw fan-out.
      for (uint64_t id : tracker_.RecentIds()) {
        std::optional<ChangeSummary> summary = tracker_.Summarize(id);
        if (summary.has_value()) out_ << ChangeSummaryJson(*summary) << std::endl;
      }
      out_ << "END pushes" << std::endl;
    } else if (command == "invalid") {
      Publish(port_, /*valid_route=*/false);
    } else {
      out_ << "ERROR unknown command \"" << command << "\"; commands: port N, invalid, status, pushes, quit"
           << std::endl;
    }
    return true;
  }

  void Stop() {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }

 private:
  static XdsServer::Options ServerOptions(const DemoOptions& demo, const XdsSecurity& security,
                                          ConvergenceTracker* tracker) {
    XdsServer::Options options;
    options.credentials = security.credentials;
    options.authenticator = security.authenticator.get();
    options.observer = tracker;
    options.push_throttle = demo.push_throttle;
    options.push_workers = demo.push_workers;
    options.send_timeout = demo.send_timeout;
    return options;
  }

  bool Publish(uint32_t port, bool valid_route) {
    const std::string version = std::to_string(next_version_);
    absl::StatusOr<SnapshotPtr> snapshot = teaching::BuildTeachingSnapshot({version, port, valid_route});
    // Logged before SetSnapshot: the streams it wakes send (and log) on this thread.
    Log().info("PUBLISH node={} version={} inventory_port={} route={}", options_.node_id, version, port,
               valid_route ? "valid" : "invalid");
    absl::Status status = snapshot.ok() ? cache_.SetSnapshot(options_.node_id, *snapshot) : snapshot.status();
    if (!status.ok()) {
      Log().error("PUBLISH node={} version={} refused: {}", options_.node_id, version, std::string(status.message()));
      out_ << "ERROR " << status.message() << std::endl;
      return false;
    }
    next_version_++;
    port_ = port;
    out_ << "PUBLISHED version=" << version << " inventory_port=" << port
         << " route=" << (valid_route ? "valid" : "invalid") << std::endl;
    return true;
  }

  const DemoOptions options_;
  std::ostream& out_;
  // Declared before the server that reports to it. The last 16 changes: each keeps a record
  // per stream it reached.
  ConvergenceTracker tracker_{16};
  SnapshotCache cache_;
  const std::string security_mode_;  // "plaintext", "tls" or "mtls" (MakeXdsSecurity)
  XdsServer xds_;
  std::unique_ptr<grpc::Server> server_;
  uint64_t next_version_ = 1;
  uint32_t port_ = 0;
};

}  // namespace

int RunDemo(const DemoOptions& options, std::istream& in, std::ostream& out) {
  absl::StatusOr<XdsSecurity> security = MakeXdsSecurity(options.security);
  if (!security.ok()) {
    Log().error("{}", std::string(security.status().message()));
    out << "ERROR " << security.status().message() << std::endl;
    return 2;
  }
  TeachingControlPlane control_plane(options, *security, out);
  if (!control_plane.Start()) {
    control_plane.Stop();
    return 1;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (!control_plane.Handle(line)) break;
  }
  control_plane.Stop();
  return 0;
}

}  // namespace cxds
