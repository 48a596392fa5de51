// Subcommands of the cxds binary.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>

#include "absl/time/time.h"

namespace cxds {

struct DemoOptions {
  std::string xds_address = "127.0.0.1:18000";
  std::string node_id = "teaching-envoy";
  uint32_t inventory_port = 18080;
  int push_throttle = 0;  // 0: min(15 + 5 * cores, 100)
  int push_workers = 2;   // dispatcher threads
  absl::Duration send_timeout = absl::Seconds(20);  // a stalled response write ends its stream
};

// The teaching control plane (seed 003): serves version 1, then reads `port N`, `invalid`,
// `status`, `pushes` (one JSON summary line per recent change, then `END pushes`) and `quit`
// from `in`, writing results to `out`. Returns the process exit code.
int RunDemo(const DemoOptions& options, std::istream& in, std::ostream& out);

struct ServeOptions {
  std::string config_dir = "examples/mesh";
  std::string xds_address = "127.0.0.1:15010";
  std::string admin_address = "127.0.0.1:15014";
  absl::Duration debounce_after = absl::Milliseconds(100);
  absl::Duration debounce_max = absl::Seconds(10);
  bool eds_debounce = true;
  int push_throttle = 0;  // 0: min(15 + 5 * cores, 100)
  double max_new_streams_per_second = 0;  // 0: no limit
  std::string domain_suffix = "cluster.local";
  absl::Duration send_timeout = absl::Seconds(20);  // a stalled response write ends its stream
};

// The daemon: serves the mesh config under `config_dir` until SIGINT/SIGTERM.
int RunServe(const ServeOptions& options);

// Checks every config file under `dir` offline: errors (file:line: object: field: message) go
// to `err`, a summary to `out`. Returns 0 if all is valid, 1 if not, 2 if `dir` is unusable.
int RunValidate(const std::string& dir, std::ostream& out, std::ostream& err);

}  // namespace cxds
