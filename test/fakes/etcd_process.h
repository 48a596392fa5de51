// EtcdProcess: a real etcd (Debian's etcd-server) for tests, started as a child process on two
// kernel-picked loopback ports with a fresh temporary data directory, removed by the
// destructor. Stop() and Start() again keep the data (a store outage and its return).
//
// Usage:
//   EtcdProcess etcd;
//   ASSERT_TRUE(etcd.Start()) << etcd.Log();
//   EtcdClient client(etcd.address());
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "config/etcd_client.h"
#include "fakes/loopback_port.h"
#include "gtest/gtest.h"

namespace cxds::testing {

class EtcdProcess {
 public:
  // etcd over TLS: its certificate and key, and (client_ca non-empty) --client-cert-auth
  // with that CA. `probe` is what Start's readiness check connects with.
  struct Tls {
    std::string cert_file;
    std::string key_file;
    std::string client_ca_file;
    EtcdClient::Options probe;
  };
  // `max_txn_ops`: etcd's --max-txn-ops (its default is 128).
  explicit EtcdProcess(int max_txn_ops = 10'000, std::optional<Tls> tls = std::nullopt)
      : max_txn_ops_(max_txn_ops), tls_(std::move(tls)) {
    std::string pattern = (std::filesystem::temp_directory_path() / "cxds-etcd-XXXXXX").string();
    dir_ = mkdtemp(pattern.data()) != nullptr ? pattern : "";
    EXPECT_FALSE(dir_.empty()) << "cannot make a temporary directory";
    client_port_ = PickLoopbackPort();
    peer_port_ = PickLoopbackPort();
  }
  ~EtcdProcess() {
    Stop();
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  std::string address() const { return absl::StrCat("127.0.0.1:", client_port_); }

  // Starts etcd and waits (up to 20 s) until it answers a read.
  bool Start() {
    if (pid_ > 0) return true;
    const std::string client_url = absl::StrCat(tls_.has_value() ? "https" : "http", "://127.0.0.1:", client_port_);
    const std::string peer_url = absl::StrCat("http://127.0.0.1:", peer_port_);
    std::vector<std::string> args = {"etcd",
                                     "--name=test",
                                     absl::StrCat("--data-dir=", dir_, "/data"),
                                     absl::StrCat("--listen-client-urls=", client_url),
                                     absl::StrCat("--advertise-client-urls=", client_url),
                                     absl::StrCat("--listen-peer-urls=", peer_url),
                                     absl::StrCat("--initial-advertise-peer-urls=", peer_url),
                                     absl::StrCat("--initial-cluster=test=", peer_url),
                                     absl::StrCat("--max-txn-ops=", max_txn_ops_),
                                     "--log-level=info"};
    if (tls_.has_value()) {
      args.push_back(absl::StrCat("--cert-file=", tls_->cert_file));
      args.push_back(absl::StrCat("--key-file=", tls_->key_file));
      if (!tls_->client_ca_file.empty()) {
        args.push_back(absl::StrCat("--trusted-ca-file=", tls_->client_ca_file));
        args.push_back("--client-cert-auth");
      }
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // fork + exec rather than posix_spawn, to ask for SIGKILL when the test process dies (a
    // crash or a ctest timeout): an orphaned etcd would hold its ports and data directory.
    const int log_fd = open(LogPath().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      // Only async-signal-safe calls until exec.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);  // the parent died before prctl
      if (log_fd >= 0) {
        dup2(log_fd, 1);
        dup2(log_fd, 2);
      }
      execvp("etcd", argv.data());
      _exit(127);
    }
    if (log_fd >= 0) close(log_fd);
    const int rc = pid_ > 0 ? 0 : -1;
    if (rc != 0) {
      pid_ = 0;
      return false;
    }
    // A connection made while etcd starts is accepted but not served for about ten seconds:
    // first wait for etcd to say it serves, then for a read to succeed.
    const size_t log_start = Log().size();
    std::optional<EtcdClient> client;
    for (const absl::Time deadline = absl::Now() + absl::Seconds(20); absl::Now() < deadline;) {
      if (!client.has_value() && Log().find("ready to serve client requests", log_start) != std::string::npos) {
        EtcdClient::Options probe = tls_.has_value() ? tls_->probe : EtcdClient::Options{};
        probe.deadline = absl::Seconds(2);
        client.emplace(address(), probe);
      }
      if (client.has_value() && client->RangePrefix("/ready-probe").ok()) return true;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return false;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }

  // Kills etcd (SIGKILL: an outage, not a goodbye) and reaps it. The data stays.
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
  }

  std::string Log() const {
    std::ifstream in(LogPath());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string LogPath() const { return dir_ + "/etcd.log"; }

  const int max_txn_ops_;
  const std::optional<Tls> tls_;
  std::string dir_;
  uint16_t client_port_ = 0;
  uint16_t peer_port_ = 0;
  pid_t pid_ = 0;
};

}  // namespace cxds::testing
