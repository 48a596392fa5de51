#include "driver.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "child_process.h"
#include "common/logging.h"
#include "common/strings.h"
#include "httplib.h"

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

// The top-level objects of a JSON array, as text (enough for the admin's flat summaries).
std::vector<std::string> SplitJsonObjects(const std::string& array) {
  std::vector<std::string> objects;
  int depth = 0;
  bool in_string = false;
  size_t start = 0;
  for (size_t i = 0; i < array.size(); ++i) {
    const char c = array[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      if (depth++ == 0) start = i;
    } else if (c == '}' && depth > 0 && --depth == 0) {
      objects.push_back(array.substr(start, i - start + 1));
    }
  }
  return objects;
}

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
    const std::vector<std::string> host_port = absl::StrSplit(options_.admin_address, ':');
    if (host_port.size() != 2 || !absl::SimpleAtoi(host_port[1], &admin_port_) ||
        (host_port[0] != "127.0.0.1" && host_port[0] != "localhost")) {
      return absl::InvalidArgumentError(StrCat("--admin-address must be 127.0.0.1:PORT, not ", options_.admin_address));
    }
    admin_host_ = host_port[0];
    // Change 0: the service exists before the server starts.
    if (absl::Status status = WriteTarget(ChangePort(0)); !status.ok()) return status;
    return StartServer();
  }

  void AddMarker(int k, ChangeMarkers* markers) const override { markers->by_endpoint_port[ChangePort(k)] = k; }

  absl::Status MakeChange(int k) override { return WriteTarget(ChangePort(k)); }

  std::vector<std::string> ServerReports(int, absl::Duration) override {
    httplib::Client client(admin_host_, admin_port_);
    client.set_read_timeout(10, 0);
    httplib::Result result = client.Get("/debug/change_summaries");
    if (!result || result->status != 200) {
      Log().warn("ADMIN GET /debug/change_summaries failed: {}",
                 result ? StrCat("status ", result->status) : httplib::to_string(result.error()));
      return {};
    }
    return SplitJsonObjects(result->body);
  }

  absl::Status Restart() override {
    child_->Terminate();
    const int status = child_->Stop(absl::Seconds(5));
    Log().info("RESTART pid={} wait_status={}", child_->pid(), status);
    child_.reset();
    return StartServer();
  }

  std::optional<int> ServerStreams() override {
    // pilot_xds{version="..."} N: connected streams by client version.
    std::optional<double> total = SumOfMetric("pilot_xds{");
    if (!total.has_value()) return std::nullopt;
    return static_cast<int>(*total);
  }

  std::optional<uint64_t> ServerSerializations() override {
    std::optional<double> total = SumOfMetric("cxds_resource_serializations ");
    if (!total.has_value()) return std::nullopt;
    return static_cast<uint64_t>(*total);
  }

 private:
  // The sum of the /metrics samples whose line starts with `prefix`; nullopt if unreachable.
  std::optional<double> SumOfMetric(absl::string_view prefix) {
    httplib::Client client(admin_host_, admin_port_);
    client.set_read_timeout(5, 0);
    httplib::Result result = client.Get("/metrics");
    if (!result || result->status != 200) {
      const std::string error = result ? StrCat("status ", result->status) : httplib::to_string(result.error());
      if (error != last_admin_error_) Log().warn("ADMIN GET /metrics failed: {}", error);
      last_admin_error_ = error;
      return std::nullopt;
    }
    last_admin_error_.clear();
    double total = 0;
    for (absl::string_view line : absl::StrSplit(result->body, '\n')) {
      if (!absl::StartsWith(line, prefix)) continue;
      double value = 0;
      const size_t space = line.rfind(' ');
      if (space != absl::string_view::npos && absl::SimpleAtod(line.substr(space + 1), &value)) total += value;
    }
    return total;
  }

  std::string TargetPath() const { return StrCat(options_.config_dir, "/cxds-load-target.yaml"); }

  // The file is replaced whole (write a temporary file, then rename), so cxds never reads a
  // half-written one.
  absl::Status WriteTarget(uint32_t port) const {
    const std::string temporary = StrCat(options_.config_dir, "/.cxds-load-target.tmp");
    {
      std::ofstream out(temporary, std::ios::trunc);
      out << "# Written by cxds-load --drive files: the service whose endpoint port it changes.\n"
          << "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: load-target, namespace: "
             "default}\n"
          << "spec:\n  hosts: [" << kFilesTargetHost << "]\n  ports:\n  - {number: " << kFilesTargetPort
          << ", name: grpc, protocol: GRPC}\n  resolution: STATIC\n  workloadSelector:\n    labels: {app: "
             "load-target}\n"
          << "---\napiVersion: networking.istio.io/v1\nkind: WorkloadEntry\n"
          << "metadata: {name: load-target-1, namespace: default}\n"
          << "spec:\n  address: 127.0.0.1\n  ports: {grpc: " << port << "}\n  labels: {app: load-target}\n";
      if (!out) return absl::InternalError(StrCat("cannot write ", temporary));
    }
    if (std::rename(temporary.c_str(), TargetPath().c_str()) != 0) {
      return absl::InternalError(StrCat("cannot rename ", temporary, " to ", TargetPath()));
    }
    return absl::OkStatus();
  }

  // Starts `cxds serve` and waits until its admin says it is ready (the whole directory loaded).
  absl::Status StartServer() {
    std::vector<std::string> args = {"--log-level", options_.server_log_level, "serve", "--config-dir",
                                     options_.config_dir, "--xds-address", options_.xds_address, "--admin-address",
                                     options_.admin_address,
                                     // Endpoint changes are pushed at once: the measurement is of
                                     // the push, not of a debounce timer.
                                     "--eds-debounce", "false"};
    args.insert(args.end(), options_.server_args.begin(), options_.server_args.end());
    absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn({.binary = options_.cxds_binary,
                                                                               .args = std::move(args),
                                                                               .stderr_path = options_.server_log,
                                                                               .cpu = options_.server_cpu});
    if (!child.ok()) return child.status();
    child_ = *std::move(child);
    const absl::Time deadline = absl::Now() + kServeReadyTimeout;
    httplib::Client client(admin_host_, admin_port_);
    client.set_connection_timeout(1, 0);
    while (absl::Now() < deadline) {
      if (httplib::Result result = client.Get("/ready"); result && result->status == 200) return absl::OkStatus();
      if (!child_->Running()) {
        return absl::UnavailableError(
            StrCat(options_.cxds_binary, " serve exited before it was ready; see ", options_.server_log));
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return absl::DeadlineExceededError(StrCat(options_.cxds_binary, " serve was not ready within ",
                                              absl::FormatDuration(kServeReadyTimeout), "; see ", options_.server_log));
  }

  static constexpr absl::Duration kServeReadyTimeout = absl::Seconds(120);  // large directories
  const LoadOptions& options_;
  std::string last_admin_error_;  // logged once until it changes
  std::string admin_host_;
  int admin_port_ = 0;
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
  }
  return absl::InvalidArgumentError("unknown drive");
}

}  // namespace cxds::load
