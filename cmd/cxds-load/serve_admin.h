// What the drives that start `cxds serve` (files, etcd) share: its command line, the documents
// of the service they change, and its admin HTTP endpoint (loopback), through which they learn
// that it is ready, how many streams it has, and its own account of each change.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "child_process.h"
#include "load_options.h"

namespace cxds::load {

// How long `cxds serve` may take to be ready (a large config to load).
inline constexpr absl::Duration kServeReadyTimeout = absl::Seconds(120);

// "127.0.0.1:PORT" or "localhost:PORT" as (host, port); InvalidArgument naming `flag` otherwise.
absl::StatusOr<std::pair<std::string, int>> SplitLoopbackAddress(const std::string& address, absl::string_view flag);

// The arguments of `cxds --log-level L serve SOURCE... --xds-address X --admin-address A
// --eds-debounce false`, then --server-arg. Endpoint changes are pushed at once: the
// measurement is of the push, not of a debounce timer.
std::vector<std::string> ServeArgs(const LoadOptions& options, const std::vector<std::string>& source_args,
                                   const std::string& xds_address, const std::string& admin_address);

// The two documents of the changed service, endpoint port `port`: the ServiceEntry
// load-target (host kFilesTargetHost) and its WorkloadEntry load-target-1, as YAML text.
struct TargetDocuments {
  std::string service_entry;
  std::string workload_entry;
};
TargetDocuments MakeTargetDocuments(uint32_t port);

// The top-level objects of a JSON array, as text (enough for the admin's flat summaries).
std::vector<std::string> SplitJsonObjects(const std::string& array);

class ServeAdmin {
 public:
  ServeAdmin(std::string host, int port) : host_(std::move(host)), port_(port) {}

  std::string address() const;

  // Polls /ready until it answers 200 (the whole config loaded) or `deadline`; fails at once
  // if `child` exits. `log` is where the server's standard error went, for the message.
  absl::Status WaitReady(ChildProcess& child, absl::Time deadline, const std::string& binary, const std::string& log);
  // The body of GET `path` if it answered 200; the error otherwise.
  absl::StatusOr<std::string> Get(const std::string& path, absl::Duration timeout) const;
  // The sum of the /metrics samples whose line starts with `prefix`; nullopt if unreachable
  // (logged once until the error changes).
  std::optional<double> SumOfMetric(absl::string_view prefix);
  // /debug/change_summaries, one JSON object each; empty (and logged) on failure.
  std::vector<std::string> ChangeSummaries() const;

 private:
  std::string host_;
  int port_ = 0;
  std::string last_error_;
};

}  // namespace cxds::load
