// SotwStream under real concurrency, without gRPC: a client thread sends requests and ACKs,
// a transport thread completes writes late, and a config thread publishes snapshots, all at
// once. Checks the stream's threading contract (one write outstanding, events processed by one
// thread at a time) and that the client converges on the final version. Meant for TSan.
#include <atomic>
#include <deque>
#include <thread>

#include "common/mutex.h"
#include "common/status_matchers.h"
#include "fakes/stream_harness.h"
#include "fakes/test_resources.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using namespace cxds::testing;  // NOLINT

// A transport whose writes complete on another thread, in order, one at a time.
class ThreadedTransport final : public StreamTransport {
 public:
  void ReadNext() override {}
  void WriteResponse(const OutgoingResponse& response, bool /*more_follows*/) override {
    MutexLock lock(&mu_);
    if (in_flight_) overlapping_writes_++;
    in_flight_ = true;
    pending_.push_back(ToDiscoveryResponse(response, "cxds"));
  }
  void FinishStream(const absl::Status& status) override {
    MutexLock lock(&mu_);
    finished_ = true;
  }

  // Transport thread: delivers the written response to the client and completes the write.
  bool DeliverOne(SotwStream& stream) {
    {
      MutexLock lock(&mu_);
      if (pending_.empty()) return false;
      delivered_.push_back(std::move(pending_.front()));
      pending_.pop_front();
      in_flight_ = false;
    }
    stream.OnWriteDone(true);
    return true;
  }
  // Client thread: takes what was delivered.
  std::vector<DiscoveryResponse> TakeDelivered() {
    MutexLock lock(&mu_);
    std::vector<DiscoveryResponse> out(std::make_move_iterator(delivered_.begin()),
                                       std::make_move_iterator(delivered_.end()));
    delivered_.clear();
    return out;
  }
  int overlapping_writes() {
    MutexLock lock(&mu_);
    return overlapping_writes_;
  }

 private:
  Mutex mu_;
  std::deque<DiscoveryResponse> pending_ ABSL_GUARDED_BY(mu_);
  std::vector<DiscoveryResponse> delivered_ ABSL_GUARDED_BY(mu_);
  bool in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  int overlapping_writes_ ABSL_GUARDED_BY(mu_) = 0;
};

SnapshotPtr Version(int v) {
  const std::string version = std::to_string(v);
  return MustSnapshot(version, {HttpListener("l", "r", 10000 + v % 7), Routes("r", {"c"}),
                                EdsCluster("c", "", 1 + v % 3), Endpoints("c", {static_cast<uint32_t>(8000 + v)})});
}

// Events from three threads at once; one write outstanding at a time; the client ends on the
// final version of every type it subscribes to.
TEST(SotwStreamConcurrencyTest, ClientTransportAndConfigThreadsConverge) {
  constexpr int kVersions = 60;
  SnapshotCache cache;
  ASSERT_OK(cache.SetSnapshot("node-a", Version(1)));
  AckLedger ledger;
  ThreadedTransport transport;
  StreamEnvironment env{&cache, &ledger, nullptr, &RealClock(), "cxds"};
  SotwStream stream(env, 1, "", &transport);
  stream.Start();

  std::atomic<bool> config_done{false};
  std::atomic<bool> stop{false};
  std::thread config([&] {
    for (int v = 2; v <= kVersions; ++v) EXPECT_OK(cache.SetSnapshot("node-a", Version(v)));
    config_done = true;
  });
  std::thread deliverer([&] {
    while (!stop) {
      if (!transport.DeliverOne(stream)) std::this_thread::yield();
    }
  });

  // The client: subscribe like Envoy, then ACK everything it receives until every type holds
  // the final version (bounded by a deadline).
  std::map<std::string, std::string> accepted;
  DiscoveryRequest first = Request(std::string(kClusterType), {});
  first.mutable_node()->set_id("node-a");
  stream.OnRequest(first);
  stream.OnRequest(Request(std::string(kEndpointType), {"c"}));
  stream.OnRequest(Request(std::string(kListenerType), {}));
  stream.OnRequest(Request(std::string(kRouteType), {"r"}));
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  const std::string final_version = std::to_string(kVersions);
  auto converged = [&] {
    if (!config_done) return false;
    for (std::string_view type : {kClusterType, kEndpointType, kListenerType, kRouteType}) {
      if (accepted[std::string(type)] != final_version) return false;
    }
    return true;
  };
  while (!converged() && absl::Now() < deadline) {
    std::vector<DiscoveryResponse> responses = transport.TakeDelivered();
    if (responses.empty()) {
      std::this_thread::yield();
      continue;
    }
    for (const DiscoveryResponse& response : responses) {
      accepted[response.type_url()] = response.version_info();
      const bool wildcard = response.type_url() == kClusterType || response.type_url() == kListenerType;
      stream.OnRequest(Ack(response, wildcard ? std::vector<std::string>{} : NamesOf(response)));
    }
  }
  stop = true;
  config.join();
  deliverer.join();
  EXPECT_TRUE(converged()) << "CDS=" << accepted[std::string(kClusterType)]
                           << " EDS=" << accepted[std::string(kEndpointType)];
  EXPECT_EQ(transport.overlapping_writes(), 0) << "a second write started before the first completed";
  stream.Close();
}

}  // namespace
}  // namespace cxds
