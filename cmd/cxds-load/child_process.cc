#include "child_process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/logging.h"
#include "common/strings.h"

namespace cxds::load {

namespace {
absl::Status Errno(const std::string& what) { return absl::InternalError(StrCat(what, ": ", std::strerror(errno))); }
}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const Spec& spec) {
  int in_pipe[2];
  int out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return Errno("pipe");
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]);
    close(in_pipe[1]);
    return Errno("pipe");
  }
  const int err_fd = open(spec.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (err_fd < 0) return Errno(StrCat("open ", spec.stderr_path));

  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> argv_strings = {spec.binary};
  argv_strings.insert(argv_strings.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (spec.cpu >= 0) CPU_SET(spec.cpu, &cpus);
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) return Errno("fork");
  if (pid == 0) {
    // The server must not outlive a crashed or killed load tool.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    if (spec.cpu >= 0) sched_setaffinity(0, sizeof(cpus), &cpus);
    dup2(in_pipe[0], STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_fd);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  child->stdin_fd_ = in_pipe[1];
  child->stdout_fd_ = out_pipe[0];
  child->reader_ = std::thread([raw = child.get()] { raw->ReadLoop(); });
  Log().info("SPAWN pid={} binary={}", pid, spec.binary);
  return child;
}

ChildProcess::~ChildProcess() {
  Stop(absl::Seconds(2));
  if (reader_.joinable()) reader_.join();
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

void ChildProcess::ReadLoop() {
  std::string pending;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(stdout_fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      Log().debug("CHILD pid={} {}", pid_, line);
      MutexLock lock(&mu_);
      lines_.push_back(std::move(line));
    }
  }
  MutexLock lock(&mu_);
  if (!pending.empty()) lines_.push_back(std::move(pending));
  eof_ = true;
}

absl::Status ChildProcess::WriteLine(const std::string& line) {
  if (stdin_fd_ < 0) return absl::FailedPreconditionError("the child's standard input is closed");
  const std::string data = line + "\n";
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = write(stdin_fd_, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("write to child");
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

std::optional<std::string> ChildProcess::ReadLine(absl::Duration timeout) {
  MutexLock lock(&mu_);
  mu_.AwaitWithTimeout([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !lines_.empty() || eof_; }, timeout);
  if (lines_.empty()) return std::nullopt;
  std::string line = std::move(lines_.front());
  lines_.pop_front();
  return line;
}

int ChildProcess::Stop(absl::Duration grace) {
  if (wait_status_.has_value()) return *wait_status_;
  if (pid_ <= 0) return -1;
  if (stdin_fd_ >= 0) {
    close(stdin_fd_);
    stdin_fd_ = -1;
  }
  auto wait_for = [this](absl::Duration limit) {
    const absl::Time deadline = absl::Now() + limit;
    while (true) {
      int status = 0;
      const pid_t done = waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        wait_status_ = status;
        return true;
      }
      if (done < 0 || absl::Now() >= deadline) return false;
      absl::SleepFor(absl::Milliseconds(20));
    }
  };
  if (!wait_for(grace)) {
    kill(pid_, SIGTERM);
    if (!wait_for(grace)) {
      kill(pid_, SIGKILL);
      wait_for(grace);
    }
  }
  return wait_status_.value_or(-1);
}

void ChildProcess::Terminate() {
  if (pid_ > 0 && !wait_status_.has_value()) kill(pid_, SIGTERM);
}

int ChildProcess::Kill() {
  if (pid_ > 0 && !wait_status_.has_value()) kill(pid_, SIGKILL);
  // SIGKILL cannot be caught, so the wait is short; Stop escalates anyway should it not be.
  return Stop(absl::Seconds(2));
}

bool ChildProcess::Running() {
  if (wait_status_.has_value() || pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    wait_status_ = status;
    return false;
  }
  return true;
}

std::optional<int64_t> ReadRssKb(pid_t pid) {
  std::ifstream status(StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      int64_t kb = 0;
      if (fields >> kb) return kb;
    }
  }
  return std::nullopt;
}

std::optional<double> ReadCpuSeconds(pid_t pid) {
  std::ifstream stat(StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // The command name may contain spaces; fields resume after its closing parenthesis.
  const size_t close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close_paren + 2));
  std::string field;
  double utime = 0;
  double stime = 0;
  // After the name: state is field 3; utime and stime are fields 14 and 15.
  for (int i = 3; i <= 15 && (fields >> field); ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace cxds::load
