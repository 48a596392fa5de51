// --drive etcd (see driver.h): the two documents of --drive files, one etcd key each, written
// in one transaction per change, and N replicas of `cxds serve --config-source etcd://...`
// that each watch them: the scale-out setup of issue 14.
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child_process.h"
#include "common/logging.h"
#include "common/strings.h"
#include "config/etcd_client.h"
#include "driver.h"
#include "serve_admin.h"

namespace cxds::load {

namespace {

// Injects `"replica":i` as the first field of a flat JSON object, so the objects of every
// replica can stand in one list and still say whose they are.
std::string WithReplica(const std::string& object, int replica) {
  if (object.size() < 2 || object.front() != '{') return object;
  return StrCat("{\"replica\":", replica, object.size() > 2 && object[1] != '}' ? "," : "", object.substr(1));
}

class EtcdDriver final : public ChangeDriver {
 public:
  explicit EtcdDriver(const LoadOptions& options) : options_(options) {}
  ~EtcdDriver() override { Stop(); }
  std::string name() const override { return "etcd"; }

  absl::Status Start() override {
    absl::StatusOr<std::string> prefix = NormalizeEtcdPrefix(options_.etcd_prefix);
    if (!prefix.ok()) return absl::InvalidArgumentError(StrCat("--etcd-prefix: ", prefix.status().message()));
    prefix_ = *prefix;
    const std::string url = StrCat("etcd://", options_.etcd_address, prefix_);
    if (absl::StatusOr<EtcdLocation> location = ParseEtcdUrl(url); !location.ok()) {
      return absl::InvalidArgumentError(StrCat("--etcd ", options_.etcd_address, ": ", location.status().message()));
    }
    absl::StatusOr<std::pair<std::string, int>> xds = SplitLoopbackAddress(options_.xds_address, "--xds-address");
    if (!xds.ok()) return xds.status();
    absl::StatusOr<std::pair<std::string, int>> admin = SplitLoopbackAddress(options_.admin_address, "--admin-address");
    if (!admin.ok()) return admin.status();
    const int last = options_.replicas - 1;
    if (xds->second + last > 65535 || admin->second + last > 65535) {
      return absl::InvalidArgumentError(StrCat("--replicas ", options_.replicas, " runs past port 65535"));
    }
    // Replica i's ports are the base ports + i, so the two ranges must not meet.
    if (std::abs(xds->second - admin->second) <= last) {
      return absl::InvalidArgumentError(StrCat("the xDS ports ", xds->second, "+ and the admin ports ", admin->second,
                                               "+ of ", options_.replicas, " replicas overlap"));
    }
    for (int i = 0; i < options_.replicas; ++i) {
      replicas_.push_back(Replica{.xds_address = StrCat(xds->first, ":", xds->second + i),
                                  .admin = ServeAdmin(admin->first, admin->second + i),
                                  .log = LogPath(i)});
    }
    client_ = std::make_unique<EtcdClient>(options_.etcd_address);
    // Change 0: the service exists before the replicas start, so each loads it with the rest
    // (whatever an earlier run left under the prefix is overwritten).
    if (absl::Status status = Write(ChangePort(0)); !status.ok()) return status;

    // The etcd client has started gRPC's threads already; forking is still safe because the
    // child only executes cxds (ChildProcess::Spawn), as --restart does with every stream open.
    // Every replica is started first and then waited for, so their start-ups overlap.
    for (Replica& replica : replicas_) {
      absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn(
          {.binary = options_.cxds_binary,
           .args = ServeArgs(options_, {"--config-source", url}, replica.xds_address, replica.admin.address()),
           .stderr_path = replica.log,
           .cpu = options_.server_cpu});
      if (!child.ok()) return child.status();
      replica.child = *std::move(child);
    }
    const absl::Time deadline = absl::Now() + kServeReadyTimeout;
    for (Replica& replica : replicas_) {
      if (absl::Status status = replica.admin.WaitReady(*replica.child, deadline, options_.cxds_binary, replica.log);
          !status.ok()) {
        return status;
      }
    }
    Log().info("ETCD {} replicas ready on {} (revision {})", replicas_.size(), url, revision_);
    return absl::OkStatus();
  }

  void AddMarker(int k, ChangeMarkers* markers) const override { markers->by_endpoint_port[ChangePort(k)] = k; }

  // The caller's stamp, just before this call, is the commit stamp: nothing but the commit
  // (one transaction, both keys) happens here.
  absl::Status MakeChange(int k) override { return Write(ChangePort(k)); }

  int server_pid() const override { return PidOf(0); }

  std::vector<int> server_pids() const override {
    std::vector<int> pids;
    for (size_t i = 0; i < replicas_.size(); ++i) pids.push_back(PidOf(static_cast<int>(i)));
    return pids;
  }

  std::vector<std::string> StreamAddresses() const override {
    std::vector<std::string> addresses;
    for (const Replica& replica : replicas_) addresses.push_back(replica.xds_address);
    return addresses;
  }

  // Every live replica's change summaries, each marked with its replica.
  std::vector<std::string> ServerReports(int, absl::Duration) override {
    std::vector<std::string> reports;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      if (replicas_[i].child == nullptr) continue;
      for (const std::string& summary : replicas_[i].admin.ChangeSummaries()) {
        reports.push_back(WithReplica(summary, static_cast<int>(i)));
      }
    }
    return reports;
  }

  std::vector<std::string> ReplicaSources() override {
    std::vector<std::string> sources;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      const int replica = static_cast<int>(i);
      if (replicas_[i].child == nullptr) {
        sources.push_back(StrCat("{\"replica\":", replica, ",\"killed\":true}"));
        continue;
      }
      absl::StatusOr<std::string> body = replicas_[i].admin.Get("/debug/config_source", absl::Seconds(5));
      sources.push_back(body.ok() ? WithReplica(std::string(StripTrailingNewline(*body)), replica)
                                  : StrCat("{\"replica\":", replica,
                                           ",\"error\":", JsonQuote(std::string(body.status().message())), "}"));
    }
    return sources;
  }

  // Over the live replicas.
  std::optional<int> ServerStreams() override {
    int total = 0;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      if (replicas_[i].child == nullptr) continue;
      std::optional<int> streams = ReplicaStreams(static_cast<int>(i));
      if (!streams.has_value()) return std::nullopt;
      total += *streams;
    }
    return total;
  }

  std::optional<int> ReplicaStreams(int replica) override {
    if (replica < 0 || replica >= static_cast<int>(replicas_.size()) || replicas_[replica].child == nullptr) {
      return std::nullopt;
    }
    // pilot_xds{version="..."} N: connected streams (node known) by client version.
    std::optional<double> total = replicas_[replica].admin.SumOfMetric("pilot_xds{");
    if (!total.has_value()) return std::nullopt;
    return static_cast<int>(*total);
  }

  // Over every live replica: each serializes its own copy of a new version, so N replicas
  // serialize N per version.
  std::optional<uint64_t> ServerSerializations() override {
    uint64_t total = 0;
    for (Replica& replica : replicas_) {
      if (replica.child == nullptr) continue;
      std::optional<double> count = replica.admin.SumOfMetric("cxds_resource_serializations ");
      if (!count.has_value()) return std::nullopt;
      total += static_cast<uint64_t>(*count);
    }
    return total;
  }

  absl::Status KillReplica(int replica) override {
    if (replica < 0 || replica >= static_cast<int>(replicas_.size()) || replicas_[replica].child == nullptr) {
      return absl::FailedPreconditionError(StrCat("no live replica ", replica));
    }
    std::unique_ptr<ChildProcess>& child = replicas_[replica].child;
    const int status = child->Kill();
    Log().info("KILLED replica={} pid={} wait_status={}", replica, child->pid(), status);
    child.reset();
    return absl::OkStatus();
  }

  // cxds serve exits on SIGTERM. All are told at once, so they shut down side by side.
  void Stop() override {
    for (Replica& replica : replicas_) {
      if (replica.child != nullptr) replica.child->Terminate();
    }
    for (Replica& replica : replicas_) {
      if (replica.child == nullptr) continue;
      const int status = replica.child->Stop(absl::Seconds(3));
      Log().info("STOPPED pid={} wait_status={}", replica.child->pid(), status);
      replica.child.reset();
    }
  }

 private:
  struct Replica {
    std::string xds_address;
    ServeAdmin admin;
    std::string log;
    std::unique_ptr<ChildProcess> child;  // null: not started, killed or stopped
  };

  static absl::string_view StripTrailingNewline(absl::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    return text;
  }

  // One log per replica (--server-log with ".i" appended), unless there is one replica or
  // the log goes nowhere.
  std::string LogPath(int replica) const {
    if (options_.replicas == 1 || options_.server_log == "/dev/null") return options_.server_log;
    return StrCat(options_.server_log, ".", replica);
  }

  int PidOf(int replica) const {
    if (replica >= static_cast<int>(replicas_.size()) || replicas_[replica].child == nullptr) return 0;
    return replicas_[replica].child->pid();
  }

  // Both documents in one transaction: a replica never sees the WorkloadEntry of one change
  // with the ServiceEntry of another.
  absl::Status Write(uint32_t port) {
    const TargetDocuments documents = MakeTargetDocuments(port);
    const std::vector<EtcdWrite> writes = {
        {EtcdKeyFor(prefix_, ConfigKey{"ServiceEntry", "default", "load-target"}), documents.service_entry},
        {EtcdKeyFor(prefix_, ConfigKey{"WorkloadEntry", "default", "load-target-1"}), documents.workload_entry}};
    absl::StatusOr<int64_t> revision = client_->Commit(writes);
    if (!revision.ok()) return revision.status();  // it names the etcd
    revision_ = *revision;
    return absl::OkStatus();
  }

  const LoadOptions& options_;
  std::string prefix_;
  std::unique_ptr<EtcdClient> client_;
  std::vector<Replica> replicas_;
  int64_t revision_ = 0;  // of the last commit
};

}  // namespace

absl::StatusOr<std::unique_ptr<ChangeDriver>> MakeEtcdDriver(const LoadOptions& options) {
  if (options.cxds_binary.empty() || options.etcd_address.empty()) {
    return absl::InvalidArgumentError("--drive etcd needs --cxds-binary and --etcd");
  }
  if (options.replicas < 1) return absl::InvalidArgumentError("--replicas must be at least 1");
  return std::make_unique<EtcdDriver>(options);
}

}  // namespace cxds::load
