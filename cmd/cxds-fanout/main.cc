// cxds-fanout: the raw fan-out baseline. A plain gRPC callback-API server for
// AggregatedDiscoveryService (StreamAggregatedResources and DeltaAggregatedResources) with no
// xDS logic: each stream's first request is answered with one pre-serialized response whose
// bytes every stream shares, and on `push` (standard input, or --push-after) a new
// pre-serialized response of --message-bytes is written to every stream. The time from the
// first write started to the last write completed is printed as one JSON line. It is the
// physical limit cxds is measured against (see docs/load.md). Loopback only; it exits on
// `quit`, after --duration, or at the end of standard input unless --push-after is given.
//
// Standard input: `push`, `status`, `quit`. Standard output: `READY ...`, then JSON lines.
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "common/mutex.h"
#include "common/strings.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "fmt/format.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "protocol/descriptors.h"
#include "protocol/type_url.h"
#include "server/transport_settings.h"

namespace cxds::fanout {

namespace {

constexpr std::string_view kSotwMethod =
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";
constexpr std::string_view kDeltaMethod =
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources";

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One response, serialized once; every stream writes the same slice (ByteBuffer copies only
// take a reference).
struct Message {
  std::string version;
  grpc::ByteBuffer buffer;
  size_t bytes = 0;
};

// One line on standard output; push reports (gRPC threads) and command replies (the input
// thread) must not interleave.
void PrintLine(const std::string& line) {
  static Mutex mu;
  MutexLock lock(&mu);
  std::cout << line << std::endl;
}

// The serialized response of `version`, exactly `bytes` long when it can be: a
// ClusterLoadAssignment grown with endpoints, then its name padded to the last byte.
std::string Serialize(bool delta, const std::string& version, size_t bytes) {
  envoy::config::endpoint::v3::ClusterLoadAssignment cla;
  cla.set_cluster_name("raw");
  auto build = [&] {
    std::string serialized;
    if (delta) {
      envoy::service::discovery::v3::DeltaDiscoveryResponse response;
      response.set_system_version_info(version);
      response.set_type_url(std::string(kEndpointType));
      response.set_nonce(version);
      auto* resource = response.add_resources();
      resource->set_name("raw");
      resource->set_version(version);
      resource->mutable_resource()->PackFrom(cla);
      response.SerializeToString(&serialized);
    } else {
      envoy::service::discovery::v3::DiscoveryResponse response;
      response.set_version_info(version);
      response.set_type_url(std::string(kEndpointType));
      response.set_nonce(version);
      response.add_resources()->PackFrom(cla);
      response.SerializeToString(&serialized);
    }
    return serialized;
  };
  auto* locality = cla.add_endpoints();
  for (uint32_t port = 1; build().size() + 40 < bytes; ++port) {
    auto* socket = locality->add_lb_endpoints()->mutable_endpoint()->mutable_address()->mutable_socket_address();
    socket->set_address("127.0.0.1");
    socket->set_port_value(port);
  }
  // Length prefixes can grow by a byte as the name grows, so pad one byte at a time.
  std::string serialized = build();
  while (serialized.size() < bytes) {
    cla.mutable_cluster_name()->push_back('x');
    serialized = build();
  }
  return serialized;
}

std::shared_ptr<const Message> MakeMessage(bool delta, const std::string& version, size_t bytes) {
  const std::string serialized = Serialize(delta, version, bytes);
  auto message = std::make_shared<Message>();
  message->version = version;
  message->bytes = serialized.size();
  grpc::Slice slice(serialized);
  message->buffer = grpc::ByteBuffer(&slice, 1);
  return message;
}

// One push to every stream: counts the writes still in flight and reports when the last ends.
class PushRound {
 public:
  PushRound(int id, size_t bytes) : id_(id), bytes_(bytes) {}

  void Begin(int writes) {
    start_ns_ = NowNanos();
    start_unix_ms_ = absl::ToUnixMillis(absl::Now());
    outstanding_ = writes + 1;  // +1: held until every write is started
    writes_ = writes;
  }
  void Started() {
    issued_ns_ = NowNanos();
    WriteDone();
  }
  void WriteDone() {
    if (outstanding_.fetch_sub(1) != 1) return;
    const int64_t end = NowNanos();
    PrintLine(fmt::format(R"({{"event": "push", "push": {}, "streams": {}, "message_bytes": {}, "send_ms": {:.3f}, )"
                          R"("issue_ms": {:.3f}, "first_write_unix_ms": {}}})",
                          id_, writes_, bytes_, (end - start_ns_) / 1e6, (issued_ns_ - start_ns_) / 1e6,
                          start_unix_ms_));
  }

 private:
  const int id_;
  const size_t bytes_;
  int writes_ = 0;
  int64_t start_ns_ = 0;
  int64_t issued_ns_ = 0;
  int64_t start_unix_ms_ = 0;
  std::atomic<int> outstanding_{0};
};

class FanoutServer;

class FanoutStream final : public grpc::ServerGenericBidiReactor {
 public:
  FanoutStream(FanoutServer& server, bool delta) : server_(server), delta_(delta) { StartRead(&request_); }

  bool delta() const { return delta_; }

  // Writes `message` now, or after the write in flight (only the newest waits).
  void Push(std::shared_ptr<const Message> message, std::shared_ptr<PushRound> round) {
    {
      MutexLock lock(&mu_);
      if (finishing_) {
        if (round != nullptr) round->WriteDone();
        return;
      }
      if (writing_) {
        if (pending_round_ != nullptr) pending_round_->WriteDone();  // superseded
        pending_ = std::move(message);
        pending_round_ = std::move(round);
        return;
      }
      writing_ = true;
      current_ = std::move(message);
      current_round_ = std::move(round);
    }
    StartWrite(&current_->buffer);
  }

 private:
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override {
    std::shared_ptr<PushRound> done_round;
    std::shared_ptr<PushRound> dropped_round;
    bool write = false;
    bool finish = false;
    {
      MutexLock lock(&mu_);
      writing_ = false;
      done_round = std::move(current_round_);
      if (!ok) finishing_ = true;  // the client is gone
      if (finishing_) {
        dropped_round = std::move(pending_round_);
        pending_ = nullptr;
        if (!finished_) finished_ = finish = true;
      } else if (pending_ != nullptr) {
        writing_ = write = true;
        current_ = std::move(pending_);
        current_round_ = std::move(pending_round_);
      }
    }
    if (done_round != nullptr) done_round->WriteDone();
    if (dropped_round != nullptr) dropped_round->WriteDone();
    if (write) StartWrite(&current_->buffer);
    if (finish) Finish(grpc::Status::OK);
  }
  void OnDone() override;

  // Ends the stream once no write is in flight (gRPC allows Finish only after writes end).
  void RequestFinish() {
    bool finish = false;
    {
      MutexLock lock(&mu_);
      finishing_ = true;
      if (!writing_ && !finished_) finished_ = finish = true;
    }
    if (finish) Finish(grpc::Status::OK);
  }

  FanoutServer& server_;
  const bool delta_;
  grpc::ByteBuffer request_;
  bool first_ = true;  // OnReadDone only
  Mutex mu_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  // Set under mu_ by whoever sets writing_, then read by gRPC until OnWriteDone.
  std::shared_ptr<const Message> current_;
  std::shared_ptr<PushRound> current_round_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const Message> pending_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<PushRound> pending_round_ ABSL_GUARDED_BY(mu_);
};

class FanoutServer final : public grpc::CallbackGenericService {
 public:
  explicit FanoutServer(size_t message_bytes) : message_bytes_(message_bytes) {
    initial_[0] = MakeMessage(false, "initial", message_bytes);
    initial_[1] = MakeMessage(true, "initial", message_bytes);
  }

  size_t initial_bytes() const { return initial_[0]->bytes; }

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override {
    if (context->method() == kSotwMethod || context->method() == kDeltaMethod) {
      return new FanoutStream(*this, context->method() == kDeltaMethod);
    }
    return CallbackGenericService::CreateReactor(context);  // UNIMPLEMENTED
  }

  // The stream's first request: it joins the fan-out and gets the current message.
  void Join(FanoutStream* stream) {
    std::shared_ptr<const Message> message;
    {
      MutexLock lock(&mu_);
      streams_.insert(stream);
      message = current_[stream->delta()] != nullptr ? current_[stream->delta()] : initial_[stream->delta()];
    }
    stream->Push(std::move(message), nullptr);
  }

  void Leave(FanoutStream* stream) {
    MutexLock lock(&mu_);
    streams_.erase(stream);
  }

  // Writes a new message to every stream, serially on this thread (the baseline's shape); the
  // streams cannot leave meanwhile (Leave waits for the lock), so the pointers stay valid.
  void Push() {
    MutexLock lock(&mu_);
    ++pushes_;
    const std::string version = StrCat("push-", pushes_);
    current_[0] = MakeMessage(false, version, message_bytes_);
    current_[1] = MakeMessage(true, version, message_bytes_);
    auto round = std::make_shared<PushRound>(pushes_, current_[0]->bytes);
    round->Begin(static_cast<int>(streams_.size()));
    for (FanoutStream* stream : streams_) stream->Push(current_[stream->delta()], round);
    round->Started();
  }

  int streams() {
    MutexLock lock(&mu_);
    return static_cast<int>(streams_.size());
  }

 private:
  const size_t message_bytes_;
  std::shared_ptr<const Message> initial_[2];
  Mutex mu_;
  std::set<FanoutStream*> streams_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const Message> current_[2] ABSL_GUARDED_BY(mu_);
  int pushes_ ABSL_GUARDED_BY(mu_) = 0;
};

void FanoutStream::OnReadDone(bool ok) {
  if (!ok) {
    RequestFinish();  // the client is gone or half-closed
    return;
  }
  if (first_) {
    first_ = false;
    server_.Join(this);
  }
  StartRead(&request_);  // later requests (ACKs) are read and ignored
}

void FanoutStream::OnDone() {
  server_.Leave(this);
  delete this;
}

}  // namespace

int Run(const std::string& address, size_t message_bytes, double push_after_s, double duration_s) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  FanoutServer service(message_bytes);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(&service);
  // The transport of cxds's own xDS server, so the baseline differs from it only by the xDS logic.
  ApplyXdsTransportSettings(builder);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::cout << "ERROR cannot listen on " << address << std::endl;
    return 1;
  }
  std::cout << "READY address=" << address << " message_bytes=" << service.initial_bytes() << std::endl;

  Mutex mu;
  bool quit = false;  // guarded by mu
  const absl::Time deadline = absl::Now() + absl::Seconds(duration_s);
  // Standard input on its own thread, so the deadline and --push-after still work while it
  // blocks; it is detached because a blocking read cannot be interrupted.
  const bool unattended = push_after_s > 0;
  std::thread([&service, &mu, &quit, unattended] {
    std::string line;
    while (std::getline(std::cin, line)) {
      if (line == "push") {
        service.Push();
      } else if (line == "status") {
        PrintLine(fmt::format(R"({{"event": "status", "streams": {}}})", service.streams()));
      } else if (line == "quit") {
        break;
      } else if (!line.empty()) {
        PrintLine(StrCat("ERROR unknown command \"", line, "\"; commands: push, status, quit"));
      }
    }
    // With --push-after it runs unattended (e.g. stdin from /dev/null) until --duration.
    if (!unattended || line == "quit") {
      MutexLock lock(&mu);
      quit = true;
    }
  }).detach();

  bool pushed = push_after_s <= 0;
  const absl::Time push_at = absl::Now() + absl::Seconds(push_after_s);
  while (true) {
    bool push = false;
    {
      MutexLock lock(&mu);
      const absl::Time wake = pushed ? deadline : std::min(push_at, deadline);
      mu.AwaitWithDeadline([&quit]() { return quit; }, wake);
      if (quit || absl::Now() >= deadline) break;
      if (!pushed && absl::Now() >= push_at) pushed = push = true;
    }
    if (push) service.Push();
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server->Wait();
  // The detached stdin thread may still use `service`: end the process without destructors.
  std::cout.flush();
  std::_Exit(0);
}

}  // namespace cxds::fanout

int main(int argc, char** argv) {
  // Before any client or server thread reads a descriptor (protocol/descriptors.h).
  if (absl::Status preload = cxds::PreloadXdsDescriptors(); !preload.ok()) {
    std::cerr << preload << "\n";
    return 70;  // EX_SOFTWARE
  }
  CLI::App app{"cxds-fanout: raw gRPC fan-out baseline (no xDS logic); commands on stdin: push, status, quit"};
  std::string address = "127.0.0.1:18001";
  size_t message_bytes = 1200;
  double push_after = 0;
  double duration = 600;
  app.add_option("--xds-address", address, "listen address (loopback)")->capture_default_str();
  app.add_option("--message-bytes", message_bytes, "size of each pre-serialized response")
      ->check(CLI::Range(64, 4 << 20))
      ->capture_default_str();
  app.add_option("--push-after", push_after, "push once after this many seconds (0: only on `push`)")
      ->capture_default_str();
  app.add_option("--duration", duration, "exit after this many seconds")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (address.rfind("127.0.0.1:", 0) != 0 && address.rfind("[::1]:", 0) != 0) {
    std::cerr << "cxds-fanout: --xds-address must be a loopback address" << std::endl;
    return 2;
  }
  cxds::Log().set_level(spdlog::level::warn);
  // Debian's abseil keeps absl::Mutex deadlock detection on: every gRPC mutex acquisition
  // updates a global lock graph, which took about an eighth of the CPU of a 3,000-stream run
  // (perf). Deadlock detection is a debugging aid, so the load tools turn it off.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return cxds::fanout::Run(address, message_bytes, push_after, duration);
}
