// DeltaRestartTest: two processes, one proof. Delta resource versions are content hashes of
// deterministic bytes, so a client that reconnects to a *different* control plane process
// serving the same configuration, and reports what it holds in initial_resource_versions, is
// sent nothing at all (docs/protocol-rules.md, R10.5, R10.6, E48).
//
// The control plane is the real binary: `cxds demo` (the teaching control plane, node
// teaching-envoy) started as a child process. Its standard input is a socket the test writes
// commands to (`quit`, `port N`); its standard output, where it reports `PUBLISHED version=N`,
// is a pipe the test reads to know when it is serving; its log goes to a file under the test's
// temporary directory, printed if the test fails. If the test process dies, the child reads
// end-of-file on its standard input and exits by itself.
//
// The client is a real gRPC Delta ADS stream (AggregatedDiscoveryService.
// DeltaAggregatedResources) that ACKs every response and keeps name -> version per type.
//
// "Nothing more comes" is decided by a probe, never by sleeping. The server handles a stream's
// requests in order, and when several types have something to send it sends them in the order
// CDS, EDS, LDS, RDS (one response per type, merged if work piles up), a type's pending work
// going out in the same response as later work for that type. After the requests under test,
// the client subscribes RDS to a name that does not exist; the server must answer it with the
// name in removed_resources (R7.3). RDS is last in that order among the types used here, so
// every response owed to an earlier request (of any of the four types, including the EDS the
// server adds after a CDS response) is written before, or in, the probe's answer. (An EDS
// probe would not do: a pending LDS or RDS response could follow its answer.) A configuration
// change is not ordered against requests, so the probe after `port 18081` is sent only once
// the change's first response has arrived: the change was handled by then, and every type it
// made dirty is sent no later than the probe's RDS answer.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "cxds/teaching_snapshot.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "fakes/delta_ads_client.h"
#include "fakes/delta_harness.h"
#include "fakes/loopback_port.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

#ifndef CXDS_BINARY_PATH
#error "CXDS_BINARY_PATH must name the cxds binary (test/CMakeLists.txt)"
#endif

extern char** environ;

namespace cxds {
namespace {

using ::cxds::testing::Apply;
using ::cxds::testing::DeltaAdsClient;
using ::cxds::testing::DeltaRequest;
using ::cxds::testing::Describe;
using ::cxds::testing::DrainUntilProbe;
using ::cxds::testing::HeldVersions;
using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using envoy::service::discovery::v3::DeltaDiscoveryResponse;

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);
const std::string kLds(kListenerType);
const std::string kRds(kRouteType);

constexpr char kNodeId[] = "teaching-envoy";
constexpr absl::Duration kWait = absl::Seconds(10);

int RemainingMs(absl::Time deadline) {
  return static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `cxds demo --xds-address 127.0.0.1:<port> --node-id teaching-envoy --inventory-port 18080`
// as a child process.
class DemoProcess {
 public:
  // Spawns the process and waits (at most `deadline`) until it reports its first publication.
  // Returns nullptr, with the reason in `error`, if it could not start or serve.
  static std::unique_ptr<DemoProcess> Start(uint16_t port, const std::string& log_path, std::string* error) {
    std::unique_ptr<DemoProcess> process(new DemoProcess(port, log_path));
    if (!process->Spawn(error)) return nullptr;
    if (!process->WaitForLine("PUBLISHED version=1", kWait)) {
      *error = absl::StrCat("cxds demo on port ", port, " did not publish version 1; stdout:\n", process->output_,
                            "log:\n", ReadFile(log_path));
      return nullptr;
    }
    return process;
  }

  ~DemoProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);  // SIGKILL cannot be ignored: this returns promptly
    }
    if (stdin_fd_ >= 0) close(stdin_fd_);
    if (stdout_fd_ >= 0) close(stdout_fd_);
  }

  DemoProcess(const DemoProcess&) = delete;
  DemoProcess& operator=(const DemoProcess&) = delete;

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  uint16_t port() const { return port_; }
  const std::string& log_path() const { return log_path_; }

  // Writes one command line to the process's standard input.
  bool Command(const std::string& line) {
    const std::string text = line + "\n";
    size_t written = 0;
    while (written < text.size()) {
      const ssize_t n = send(stdin_fd_, text.data() + written, text.size() - written, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      written += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads standard output until a line starting with `prefix` (true), a line starting with
  // "ERROR", end of file or `timeout` (false).
  bool WaitForLine(const std::string& prefix, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      for (size_t end = pending_.find('\n'); end != std::string::npos; end = pending_.find('\n')) {
        const std::string line = pending_.substr(0, end);
        pending_.erase(0, end + 1);
        absl::StrAppend(&output_, line, "\n");
        if (absl::StartsWith(line, prefix)) return true;
        if (absl::StartsWith(line, "ERROR")) return false;
      }
      pollfd fd{stdout_fd_, POLLIN, 0};
      const int ready = poll(&fd, 1, RemainingMs(deadline));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return false;  // timeout or error
      char buffer[4096];
      const ssize_t n = read(stdout_fd_, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;  // the process closed its standard output: it is gone
      pending_.append(buffer, static_cast<size_t>(n));
    }
  }

  // Sends `quit` and waits (at most `timeout`) for the process to exit. Returns its exit code,
  // or nullopt if it had to be killed or did not exit normally.
  std::optional<int> Quit(absl::Duration timeout) {
    Command("quit");
    return WaitForExit(timeout);
  }

  const std::string& output() const { return output_; }

 private:
  DemoProcess(uint16_t port, std::string log_path) : port_(port), log_path_(std::move(log_path)) {}

  bool Spawn(std::string* error) {
    int in[2];   // standard input: a socket pair, so writing to an exited process is EPIPE, not SIGPIPE
    int out[2];  // standard output: a pipe
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
      *error = absl::StrCat("socketpair: ", strerror(errno));
      return false;
    }
    if (pipe2(out, O_CLOEXEC) != 0) {
      *error = absl::StrCat("pipe2: ", strerror(errno));
      close(in[0]);
      close(in[1]);
      return false;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // dup2 clears close-on-exec on the copies; every other end is closed by exec.
    posix_spawn_file_actions_adddup2(&actions, in[1], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const std::string binary = CXDS_BINARY_PATH;
    const std::string address = absl::StrCat("127.0.0.1:", port_);
    std::vector<std::string> args = {binary,      "demo",  "--xds-address",    address,
                                     "--node-id", kNodeId, "--inventory-port", "18080"};
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const int spawned = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in[1]);
    close(out[1]);
    stdin_fd_ = in[0];
    stdout_fd_ = out[0];
    if (spawned != 0) {
      pid_ = -1;
      *error = absl::StrCat("posix_spawn ", binary, ": ", strerror(spawned));
      return false;
    }
    return true;
  }

  // Waits for the process to end: on a pidfd (an event), or, where pidfds do not exist, on
  // end of file of its standard output (closed when it exits). Kills it after `timeout`.
  std::optional<int> WaitForExit(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
#ifdef SYS_pidfd_open
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
#else
    const int pidfd = -1;
#endif
    const int fd = pidfd >= 0 ? pidfd : stdout_fd_;
    bool ended = false;
    while (!ended) {
      pollfd wait{fd, POLLIN, 0};
      const int ready = poll(&wait, 1, RemainingMs(deadline));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) break;  // deadline
      if (pidfd >= 0) {
        ended = true;
      } else {
        char buffer[4096];
        const ssize_t n = read(stdout_fd_, buffer, sizeof(buffer));
        if (n > 0) output_.append(buffer, static_cast<size_t>(n));
        ended = n == 0;
      }
    }
    if (pidfd >= 0) close(pidfd);
    int status = 0;
    pid_t reaped = ended ? waitpid(pid_, &status, 0) : 0;
    if (reaped != pid_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      return std::nullopt;
    }
    pid_ = -1;
    if (!WIFEXITED(status)) return std::nullopt;
    return WEXITSTATUS(status);
  }

  const uint16_t port_;
  const std::string log_path_;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string pending_;  // standard output read but not yet split into lines
  std::string output_;   // every line read so far
};

// Starts the demo on `preferred` (0: any free port), trying other free ports if that fails.
std::unique_ptr<DemoProcess> StartDemo(uint16_t preferred, const std::string& log_name, std::string* errors) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint16_t port = attempt == 0 && preferred != 0 ? preferred : testing::PickLoopbackPort();
    std::string error;
    auto process = DemoProcess::Start(port, absl::StrCat(::testing::TempDir(), log_name, "-", attempt, ".log"), &error);
    if (process != nullptr) return process;
    absl::StrAppend(errors, "attempt ", attempt, ": ", error, "\n");
  }
  return nullptr;
}

class DeltaRestartTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (!HasFailure()) return;
    for (const std::string& path : logs_) {
      std::cout << "---- " << path << " ----\n" << ReadFile(path) << std::endl;
    }
  }
  void KeepLog(const DemoProcess& process) { logs_.push_back(process.log_path()); }

 private:
  std::vector<std::string> logs_;
};

TEST_F(DeltaRestartTest, ReconnectToNewProcessWithHeldVersionsReceivesNothing) {
  // ---- First process: subscribe like Envoy, hold everything. ----
  std::string errors;
  std::unique_ptr<DemoProcess> first = StartDemo(0, "delta-restart-first", &errors);
  ASSERT_NE(first, nullptr) << errors;
  KeepLog(*first);
  const uint16_t port = first->port();

  HeldVersions held;
  {
    DeltaAdsClient client(first->address(), kNodeId);
    ASSERT_TRUE(client.Send(DeltaRequest(kLds, {})));  // legacy wildcard
    ASSERT_TRUE(client.Send(DeltaRequest(kCds, {})));  // legacy wildcard
    ASSERT_TRUE(client.Send(DeltaRequest(kRds, {teaching::kRouteName})));
    ASSERT_TRUE(client.Send(DeltaRequest(kEds, {teaching::kClusterName})));
    std::optional<std::vector<DeltaDiscoveryResponse>> first_responses = DrainUntilProbe(client, "probe", held);
    ASSERT_TRUE(first_responses.has_value()) << "the first process did not answer the probe";

    const HeldVersions expected_names = {{kLds, {{teaching::kApiListenerName, ""}, {teaching::kEnvoyListenerName, ""}}},
                                         {kCds, {{teaching::kClusterName, ""}}},
                                         {kRds, {{teaching::kRouteName, ""}}},
                                         {kEds, {{teaching::kClusterName, ""}}}};
    for (const auto& [type_url, names] : expected_names) {
      std::vector<std::string> got;
      for (const auto& [name, version] : held[type_url]) got.push_back(name);
      std::vector<std::string> want;
      for (const auto& [name, version] : names) want.push_back(name);
      EXPECT_EQ(got, want) << ShortTypeName(type_url) << " after the first stream";
    }
    // The versions are the content versions of the teaching snapshot built in this process
    // too: a third process, so to speak.
    absl::StatusOr<SnapshotPtr> local = teaching::BuildTeachingSnapshot({"local", 18080, true});
    ASSERT_TRUE(local.ok()) << local.status();
    for (const auto& [type_url, names] : held) {
      for (const auto& [name, version] : names) {
        ResourcePtr resource = (*local)->Find(type_url, name);
        ASSERT_NE(resource, nullptr) << name;
        EXPECT_EQ(version, resource->content_version()) << ShortTypeName(type_url) << " " << name;
      }
    }

    // ---- Stop the first process while the stream is open (a control plane restart; its
    // shutdown gives open streams a second before cancelling them). ----
    const std::optional<int> exit_code = first->Quit(kWait);
    EXPECT_EQ(exit_code, std::optional<int>(0)) << "cxds demo did not quit cleanly; stdout:\n" << first->output();
    EXPECT_TRUE(client.WaitForEnd(kWait)) << "the stream outlived the first process";
  }

  // ---- Second process, same arguments (same port if it is still free). ----
  std::unique_ptr<DemoProcess> second = StartDemo(port, "delta-restart-second", &errors);
  ASSERT_NE(second, nullptr) << errors;
  KeepLog(*second);

  auto client = std::make_unique<DeltaAdsClient>(second->address(), kNodeId);
  // The first request per type reports what is held (R10.5): the legacy wildcard form for
  // LDS/CDS (empty subscribe, R10.4), the same names for RDS/EDS.
  ASSERT_TRUE(client->Send(DeltaRequest(kLds, {}, {}, "", held[kLds])));
  ASSERT_TRUE(client->Send(DeltaRequest(kCds, {}, {}, "", held[kCds])));
  ASSERT_TRUE(client->Send(DeltaRequest(kRds, {teaching::kRouteName}, {}, "", held[kRds])));
  ASSERT_TRUE(client->Send(DeltaRequest(kEds, {teaching::kClusterName}, {}, "", held[kEds])));
  const HeldVersions held_before = held;
  std::optional<std::vector<DeltaDiscoveryResponse>> reconnect = DrainUntilProbe(*client, "probe", held);
  ASSERT_TRUE(reconnect.has_value()) << "the second process did not answer the probe";

  int bodies = 0;
  std::vector<std::string> seen;
  for (const DeltaDiscoveryResponse& response : *reconnect) {
    bodies += response.resources_size();
    seen.push_back(Describe(response));
    for (const std::string& name : response.removed_resources()) {
      EXPECT_EQ(name, "probe") << "removed on reconnect: " << Describe(response);
    }
  }
  // LDS/CDS may be answered (a wildcard request without a nonce always is), but with nothing.
  EXPECT_EQ(bodies, 0) << "resource bodies sent to a client that holds every current version:\n  "
                       << absl::StrJoin(seen, "\n  ");
  EXPECT_EQ(held, held_before);

  // ---- Control: the stream works. A new port changes the ClusterLoadAssignment only. ----
  ASSERT_TRUE(second->Command("port 18081"));
  std::optional<DeltaDiscoveryResponse> pushed = client->Next(absl::Now() + kWait);
  ASSERT_TRUE(pushed.has_value()) << "no push after `port 18081`; stdout:\n" << second->output();
  Apply(*pushed, held);
  client->Ack(*pushed);
  EXPECT_EQ(pushed->type_url(), kEds) << Describe(*pushed);
  ASSERT_EQ(pushed->resources_size(), 1) << Describe(*pushed);
  EXPECT_EQ(pushed->removed_resources_size(), 0) << Describe(*pushed);
  const auto& resource = pushed->resources(0);
  EXPECT_EQ(resource.name(), teaching::kClusterName);
  EXPECT_NE(resource.version(), held_before.at(kEds).at(teaching::kClusterName));
  envoy::config::endpoint::v3::ClusterLoadAssignment cla;
  ASSERT_TRUE(resource.resource().UnpackTo(&cla));
  ASSERT_EQ(cla.endpoints_size(), 1);
  ASSERT_EQ(cla.endpoints(0).lb_endpoints_size(), 1);
  EXPECT_EQ(cla.endpoints(0).lb_endpoints(0).endpoint().address().socket_address().port_value(), 18081u);

  std::optional<std::vector<DeltaDiscoveryResponse>> after = DrainUntilProbe(*client, "probe-2", held);
  ASSERT_TRUE(after.has_value()) << "the second process did not answer the second probe";
  std::vector<std::string> extra;
  for (const DeltaDiscoveryResponse& response : *after) {
    if (response.resources_size() > 0 || response.removed_resources_size() != 1) extra.push_back(Describe(response));
  }
  EXPECT_EQ(after->size(), 1u) << "more than the ClusterLoadAssignment after `port 18081`:\n  "
                               << absl::StrJoin(extra, "\n  ");
  EXPECT_TRUE(extra.empty()) << absl::StrJoin(extra, "\n  ");

  // This time the client leaves first (stream and channel), so the server's shutdown has
  // nothing to wait for.
  client.reset();
  const std::optional<int> exit_code = second->Quit(kWait);
  EXPECT_EQ(exit_code, std::optional<int>(0)) << "cxds demo did not quit cleanly; stdout:\n" << second->output();
}

}  // namespace
}  // namespace cxds
