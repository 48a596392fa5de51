#include "serve_admin.h"

#include <chrono>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "common/strings.h"
#include "httplib.h"

namespace cxds::load {

absl::StatusOr<std::pair<std::string, int>> SplitLoopbackAddress(const std::string& address, absl::string_view flag) {
  const std::vector<std::string> host_port = absl::StrSplit(address, ':');
  int port = 0;
  if (host_port.size() != 2 || !absl::SimpleAtoi(host_port[1], &port) || port <= 0 || port > 65535 ||
      (host_port[0] != "127.0.0.1" && host_port[0] != "localhost")) {
    return absl::InvalidArgumentError(StrCat(flag, " must be 127.0.0.1:PORT, not ", address));
  }
  return std::pair{host_port[0], port};
}

std::vector<std::string> ServeArgs(const LoadOptions& options, const std::vector<std::string>& source_args,
                                   const std::string& xds_address, const std::string& admin_address) {
  std::vector<std::string> args = {"--log-level", options.server_log_level, "serve"};
  args.insert(args.end(), source_args.begin(), source_args.end());
  for (const std::string& arg :
       {std::string("--xds-address"), xds_address, std::string("--admin-address"), admin_address}) {
    args.push_back(arg);
  }
  args.insert(args.end(), {"--eds-debounce", "false"});
  args.insert(args.end(), options.server_args.begin(), options.server_args.end());
  return args;
}

TargetDocuments MakeTargetDocuments(uint32_t port) {
  std::ostringstream service;
  service << "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: load-target, namespace: "
             "default}\n"
          << "spec:\n  hosts: [" << kFilesTargetHost << "]\n  ports:\n  - {number: " << kFilesTargetPort
          << ", name: grpc, protocol: GRPC}\n  resolution: STATIC\n  workloadSelector:\n    labels: {app: "
             "load-target}\n";
  std::ostringstream workload;
  workload << "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\n"
           << "metadata: {name: load-target-1, namespace: default}\n"
           << "spec:\n  address: 127.0.0.1\n  ports: {grpc: " << port << "}\n  labels: {app: load-target}\n";
  return {service.str(), workload.str()};
}

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

std::string ServeAdmin::address() const { return StrCat(host_, ":", port_); }

absl::Status ServeAdmin::WaitReady(ChildProcess& child, absl::Time deadline, const std::string& binary,
                                   const std::string& log) {
  httplib::Client client(host_, port_);
  client.set_connection_timeout(1, 0);
  // The admin answers /ready only once it listens, and has no way to tell us sooner: poll.
  while (absl::Now() < deadline) {
    if (httplib::Result result = client.Get("/ready"); result && result->status == 200) return absl::OkStatus();
    if (!child.Running()) {
      return absl::UnavailableError(
          StrCat(binary, " serve (admin ", address(), ") exited before it was ready; see ", log));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(StrCat(binary, " serve (admin ", address(), ") was not ready in time; see ", log));
}

absl::StatusOr<std::string> ServeAdmin::Get(const std::string& path, absl::Duration timeout) const {
  httplib::Client client(host_, port_);
  client.set_connection_timeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
  client.set_read_timeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
  httplib::Result result = client.Get(path);
  if (!result) {
    return absl::UnavailableError(StrCat("GET ", address(), path, ": ", httplib::to_string(result.error())));
  }
  if (result->status != 200) {
    return absl::UnavailableError(StrCat("GET ", address(), path, ": status ", result->status));
  }
  return std::move(result->body);
}

std::optional<double> ServeAdmin::SumOfMetric(absl::string_view prefix) {
  absl::StatusOr<std::string> body = Get("/metrics", absl::Seconds(5));
  if (!body.ok()) {
    const std::string error(body.status().message());
    if (error != last_error_) Log().warn("ADMIN {}", error);
    last_error_ = error;
    return std::nullopt;
  }
  last_error_.clear();
  double total = 0;
  for (absl::string_view line : absl::StrSplit(*body, '\n')) {
    if (!absl::StartsWith(line, prefix)) continue;
    double value = 0;
    const size_t space = line.rfind(' ');
    if (space != absl::string_view::npos && absl::SimpleAtod(line.substr(space + 1), &value)) total += value;
  }
  return total;
}

std::vector<std::string> ServeAdmin::ChangeSummaries() const {
  absl::StatusOr<std::string> body = Get("/debug/change_summaries", absl::Seconds(10));
  if (!body.ok()) {
    Log().warn("ADMIN {}", std::string(body.status().message()));
    return {};
  }
  return SplitJsonObjects(*body);
}

}  // namespace cxds::load
