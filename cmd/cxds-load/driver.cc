#include "driver.h"

#include <cstdio>
#include <fstream>

#include "child_process.h"
#include "common/logging.h"
#include "common/strings.h"
#include "serve_admin.h"

namespace cxds::load {

namespace {

constexpr absl::Duration kReadyTimeout = absl::Seconds(15);

class NoneDriver final : public ChangeDriver {
 public:
  explicit NoneDriver(int server_pid) : server_pid_(server_pid) {}
  std::string name() const override { return "none"; }
  absl::Status Start() override { return absl::OkStatus(); }
  void AddMarker(int, ChangeMarkers*) const override {}
  absl::Status MakeChange(int) override { return absl::FailedPreconditionError("--drive none makes no changes"); }
  int server_pid() const override { return server_pid_; }

 private:
  int server_pid_;
};

// Shared by the drivers that start their server as a child process.
class ChildDriver : public ChangeDriver {
 public:
  int server_pid() const override { return child_ != nullptr ? child_->pid() : 0; }
  void Stop() override {
    if (child_ != nullptr) {
      const int status = child_->Stop(absl::Seconds(3));
      Log().info("STOPPED pid={} wait_status={}", child_->pid(), status);
    }
  }

 protected:
  // Starts the child and waits for the line that says it serves (a line starting with
  // `ready_prefix`); a line starting with ERROR, or the end of its output, is a failure.
  absl::Status StartChild(ChildProcess::Spec spec, const std::string& ready_prefix) {
    absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn(spec);
    if (!child.ok()) return child.status();
    child_ = *std::move(child);
    const absl::Time deadline = absl::Now() + kReadyTimeout;
    while (absl::Now() < deadline) {
      std::optional<std::string> line = child_->ReadLine(deadline - absl::Now());
      if (!line.has_value() && absl::Now() < deadline) {
        return absl::UnavailableError(StrCat(spec.binary, " exited before it served (wait status ",
                                             child_->Stop(absl::Seconds(1)), "); see ", spec.stderr_path));
      }
      if (!line.has_value()) break;
      if (line->rfind(ready_prefix, 0) == 0) return absl::OkStatus();
      if (line->rfind("ERROR", 0) == 0) return absl::UnavailableError(StrCat(spec.binary, ": ", *line));
    }
    return absl::DeadlineExceededError(StrCat(spec.binary, " did not print \"", ready_prefix, "\" within ",
                                              absl::FormatDuration(kReadyTimeout), "; see ", spec.stderr_path));
  }

  std::unique_ptr<ChildProcess> child_;
};

class TeachingDriver final : public ChildDriver {
 public:
  TeachingDriver(const LoadOptions& options, std::string node_id) : options_(options), node_id_(std::move(node_id)) {}
  std::string name() const override { return "teaching"; }
  std::string SharedNodeId() const override { return node_id_; }

  absl::Status Start() override {
    std::vector<std::string> args = {
        "--log-level",   options_.server_log_level, "demo",
        "--xds-address", options_.xds_address,      "--node-id",
        node_id_,        "--inventory-port",        std::to_string(options_.inventory_port)};
    args.insert(args.end(), options_.server_args.begin(), options_.server_args.end());
    return StartChild({.binary = options_.teaching_binary,
                       .args = std::move(args),
                       .stderr_path = options_.server_log,
                       .cpu = options_.server_cpu},
                      "PUBLISHED version=1 ");
  }

  void AddMarker(int k, ChangeMarkers* markers) const override { markers->by_endpoint_port[ChangePort(k)] = k; }

  absl::Status MakeChange(int k) override {
    if (absl::Status status = child_->WriteLine(StrCat("port ", ChangePort(k))); !status.ok()) return status;
    // The demo answers every command with one line; a refused change is an error of the run.
    std::optional<std::string> line = child_->ReadLine(absl::Seconds(10));
    if (!line.has_value()) return absl::DeadlineExceededError("cxds demo did not confirm the change");
    if (line->rfind("PUBLISHED", 0) != 0) return absl::InternalError(StrCat("cxds demo: ", *line));
    return absl::OkStatus();
  }

  // The demo's `pushes`: one summary per recent change (send time, proxies written and ACKed).
  std::vector<std::string> ServerReports(int expected, absl::Duration wait) override {
    std::vector<std::string> reports;
    if (!child_->WriteLine("pushes").ok()) return reports;
    const absl::Time deadline = absl::Now() + wait;
    while (absl::Now() < deadline) {
      std::optional<std::string> line = child_->ReadLine(deadline - absl::Now());
      if (!line.has_value() || *line == "END pushes") break;
      if (line->rfind("{", 0) == 0) reports.push_back(*line);
    }
    return reports;
  }

 private:
  const LoadOptions& options_;
  std::string node_id_;
};

class FanoutDriver final : public ChildDriver {
 public:
  explicit FanoutDriver(const LoadOptions& options) : options_(options) {}
  std::string name() const override { return "fanout"; }

  absl::Status Start() override {
    std::vector<std::string> args = {"--xds-address", options_.xds_address, "--message-bytes",
                                     std::to_string(options_.message_bytes)};
    return StartChild({.binary = options_.fanout_binary,
                       .args = std::move(args),
                       .stderr_path = options_.server_log,
                       .cpu = options_.server_cpu},
                      "READY ");
  }

  void AddMarker(int k, ChangeMarkers* markers) const override { markers->by_version[StrCat("push-", k)] = k; }

  absl::Status MakeChange(int k) override { return child_->WriteLine("push"); }

  std::vector<std::string> ServerReports(int expected, absl::Duration wait) override {
    std::vector<std::string> reports;
    const absl::Time deadline = absl::Now() + wait;
    while (static_cast<int>(reports.size()) < expected && absl::Now() < deadline) {
      std::optional<std::string> line = child_->ReadLine(deadline - absl::Now());
      if (!line.has_value()) break;
      if (line->rfind("{", 0) == 0) reports.push_back(*line);
    }
    return reports;
  }

 private:
  const LoadOptions& options_;
};

class FilesDriver final : public ChildDriver {
 public:
  explicit FilesDriver(const LoadOptions& options) : options_(options) {}
  std::string name() const override { return "files"; }

  // cxds serve does not read standard input: it exits on SIGTERM.
  void Stop() override {
    if (child_ != nullptr) child_->Terminate();
    ChildDriver::Stop();
  }

  absl::Status Start() override {
    absl::StatusOr<std::pair<std::string, int>> admin = SplitLoopbackAddress(options_.admin_address, "--admin-address");
    if (!admin.ok()) return admin.status();
    admin_.emplace(admin->first, admin->second);
    // Change 0: the service exists before the server starts.
    if (absl::Status status = WriteTarget(ChangePort(0)); !status.ok()) return status;
    return StartServer();
  }

  void AddMarker(int k, ChangeMarkers* markers) const override { markers->by_endpoint_port[ChangePort(k)] = k; }

  absl::Status MakeChange(int k) override { return WriteTarget(ChangePort(k)); }

  std::vector<std::string> ServerReports(int, absl::Duration) override { return admin_->ChangeSummaries(); }

  absl::Status Restart() override {
    child_->Terminate();
    const int status = child_->Stop(absl::Seconds(5));
    Log().info("RESTART pid={} wait_status={}", child_->pid(), status);
    child_.reset();
    return StartServer();
  }

  std::optional<int> ServerStreams() override {
    // pilot_xds{version="..."} N: connected streams by client version.
    std::optional<double> total = admin_->SumOfMetric("pilot_xds{");
    if (!total.has_value()) return std::nullopt;
    return static_cast<int>(*total);
  }

  std::optional<uint64_t> ServerSerializations() override {
    std::optional<double> total = admin_->SumOfMetric("cxds_resource_serializations ");
    if (!total.has_value()) return std::nullopt;
    return static_cast<uint64_t>(*total);
  }

 private:
  std::string TargetPath() const { return StrCat(options_.config_dir, "/cxds-load-target.yaml"); }

  // The file is replaced whole (write a temporary file, then rename), so cxds never reads a
  // half-written one.
  absl::Status WriteTarget(uint32_t port) const {
    const std::string temporary = StrCat(options_.config_dir, "/.cxds-load-target.tmp");
    {
      const TargetDocuments documents = MakeTargetDocuments(port);
      std::ofstream out(temporary, std::ios::trunc);
      out << "# Written by cxds-load --drive files: the service whose endpoint port it changes.\n"
          << documents.service_entry << "---\n"
          << documents.workload_entry;
      if (!out) return absl::InternalError(StrCat("cannot write ", temporary));
    }
    if (std::rename(temporary.c_str(), TargetPath().c_str()) != 0) {
      return absl::InternalError(StrCat("cannot rename ", temporary, " to ", TargetPath()));
    }
    return absl::OkStatus();
  }

  // Starts `cxds serve` and waits until its admin says it is ready (the whole directory loaded).
  absl::Status StartServer() {
    absl::StatusOr<std::unique_ptr<ChildProcess>> child =
        ChildProcess::Spawn({.binary = options_.cxds_binary,
                             .args = ServeArgs(options_, {"--config-dir", options_.config_dir}, options_.xds_address,
                                               options_.admin_address),
                             .stderr_path = options_.server_log,
                             .cpu = options_.server_cpu});
    if (!child.ok()) return child.status();
    child_ = *std::move(child);
    return admin_->WaitReady(*child_, absl::Now() + kServeReadyTimeout, options_.cxds_binary, options_.server_log);
  }

  const LoadOptions& options_;
  std::optional<ServeAdmin> admin_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ChangeDriver>> MakeDriver(const LoadOptions& options) {
  switch (options.drive) {
    case Drive::kNone:
      return std::make_unique<NoneDriver>(options.server_pid);
    case Drive::kTeaching: {
      if (options.teaching_binary.empty()) {
        return absl::InvalidArgumentError("--drive teaching needs --teaching-binary (the cxds binary)");
      }
      // cxds demo publishes for one node id, so every stream shares it.
      std::string node_id = options.node_id;
      if (node_id.empty()) {
        node_id = options.node_style == NodeStyle::kEnvoy ? "sidecar~127.0.0.1~load.default~default.svc.cluster.local"
                                                          : "load";
      }
      return std::make_unique<TeachingDriver>(options, std::move(node_id));
    }
    case Drive::kFanout:
      if (options.fanout_binary.empty()) return absl::InvalidArgumentError("--drive fanout needs --fanout-binary");
      return std::make_unique<FanoutDriver>(options);
    case Drive::kFiles:
      if (options.cxds_binary.empty() || options.config_dir.empty()) {
        return absl::InvalidArgumentError("--drive files needs --cxds-binary and --config-dir");
      }
      return std::make_unique<FilesDriver>(options);
    case Drive::kEtcd:
      return MakeEtcdDriver(options);
  }
  return absl::InvalidArgumentError("unknown drive");
}

}  // namespace cxds::load
