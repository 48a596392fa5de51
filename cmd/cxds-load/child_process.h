// A server process cxds-load starts and drives: its standard input is a pipe the driver writes
// command lines to, its standard output is read line by line (by a thread, so a slow reader
// never blocks the server), its standard error goes to a file.
#pragma once

#include <sys/types.h>

#include <deque>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/mutex.h"

namespace cxds::load {

class ChildProcess {
 public:
  struct Spec {
    std::string binary;
    std::vector<std::string> args;
    std::string stderr_path = "/dev/null";
    int cpu = -1;  // pin the child to this core; -1: no pinning
  };

  // Forks and executes `spec`. Call before gRPC starts threads: only the calling thread
  // survives a fork.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(const Spec& spec);
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  absl::Status WriteLine(const std::string& line);
  // The next line of standard output, or nullopt after `timeout` or at its end.
  std::optional<std::string> ReadLine(absl::Duration timeout);
  // Closes standard input (cxds demo and cxds-fanout then exit), waits up to `grace`, then
  // sends SIGTERM and, after another `grace`, SIGKILL to this child only. Returns the wait
  // status, or -1. Idempotent.
  int Stop(absl::Duration grace);
  // Sends SIGTERM now (cxds serve exits on it; it does not read standard input).
  void Terminate();
  // Sends SIGKILL now (a crash, for a failover) and reaps the child; returns the wait status.
  int Kill();
  // False once the child has exited (its status is then kept for Stop).
  bool Running();

 private:
  ChildProcess() = default;
  void ReadLoop();

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::optional<int> wait_status_;
  std::thread reader_;
  Mutex mu_;
  std::deque<std::string> lines_ ABSL_GUARDED_BY(mu_);
  bool eof_ ABSL_GUARDED_BY(mu_) = false;
};

// From /proc/PID/status: VmRSS in KiB, or nullopt.
std::optional<int64_t> ReadRssKb(pid_t pid);
// From /proc/PID/stat: user + system CPU seconds, or nullopt.
std::optional<double> ReadCpuSeconds(pid_t pid);

}  // namespace cxds::load
