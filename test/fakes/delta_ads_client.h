// DeltaAdsClient: a Delta ADS stream over real gRPC, as a test's proxy (DeltaAggregatedResources),
// with the bookkeeping a Delta client keeps (HeldVersions) and the probe that tells when the
// server has nothing more to send (DrainUntilProbe).
#pragma once

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "fakes/delta_harness.h"
#include "grpcpp/grpcpp.h"
#include "protocol/type_url.h"

namespace cxds::testing {

using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using envoy::service::discovery::v3::DeltaDiscoveryResponse;

// A Delta ADS client over real gRPC. One thread drives it; a reader thread queues responses.
class DeltaAdsClient {
 public:
  DeltaAdsClient(const std::string& target, std::string node_id)
      : node_id_(std::move(node_id)),
        channel_(grpc::CreateChannel(target, grpc::InsecureChannelCredentials())),
        stub_(envoy::service::discovery::v3::AggregatedDiscoveryService::NewStub(channel_)) {
    context_.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));  // never hang
    stream_ = stub_->DeltaAggregatedResources(&context_);
    reader_ = std::thread([this] { ReadLoop(); });
  }

  ~DeltaAdsClient() { Close(); }
  DeltaAdsClient(const DeltaAdsClient&) = delete;
  DeltaAdsClient& operator=(const DeltaAdsClient&) = delete;

  // Writes `request`; the stream's first request carries the node.
  bool Send(DeltaDiscoveryRequest request) {
    if (!sent_first_) {
      request.mutable_node()->set_id(node_id_);
      sent_first_ = true;
    }
    return stream_->Write(request);
  }

  bool Ack(const DeltaDiscoveryResponse& response) {
    return Send(DeltaRequest(response.type_url(), {}, {}, response.nonce()));
  }

  // The next response, waiting at most until `deadline`; nullopt if none came or the stream ended.
  std::optional<DeltaDiscoveryResponse> Next(absl::Time deadline) {
    MutexLock lock(&mu_);
    mu_.AwaitWithDeadline([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || ended_; }, deadline);
    if (queue_.empty()) return std::nullopt;
    DeltaDiscoveryResponse response = std::move(queue_.front());
    queue_.pop_front();
    return response;
  }

  // Waits (at most `timeout`) for the server to end the stream; true if it did.
  bool WaitForEnd(absl::Duration timeout) {
    MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ended_; }, timeout);
  }

  // Cancels the stream if it is still open and collects its status.
  void Close() {
    if (closed_) return;
    closed_ = true;
    context_.TryCancel();
    reader_.join();
    stream_->Finish();
  }

 private:
  void ReadLoop() {
    DeltaDiscoveryResponse response;
    while (stream_->Read(&response)) {
      MutexLock lock(&mu_);
      queue_.push_back(std::move(response));
      response = DeltaDiscoveryResponse();
    }
    MutexLock lock(&mu_);
    ended_ = true;
  }

  const std::string node_id_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<envoy::service::discovery::v3::AggregatedDiscoveryService::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<DeltaDiscoveryRequest, DeltaDiscoveryResponse>> stream_;
  std::thread reader_;
  bool sent_first_ = false;
  bool closed_ = false;

  Mutex mu_;
  std::deque<DeltaDiscoveryResponse> queue_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

// type -> name -> version, as a Delta client keeps it.
using HeldVersions = std::map<std::string, std::map<std::string, std::string>>;

inline void Apply(const DeltaDiscoveryResponse& response, HeldVersions& held) {
  auto& state = held[response.type_url()];
  for (const auto& resource : response.resources()) state[resource.name()] = resource.version();
  for (const std::string& name : response.removed_resources()) state.erase(name);
}

inline std::string Describe(const DeltaDiscoveryResponse& response) {
  std::vector<std::string> names;
  for (const auto& resource : response.resources()) names.push_back(resource.name());
  return absl::StrCat(std::string(ShortTypeName(response.type_url())), " nonce=", response.nonce(), " resources=[",
                      absl::StrJoin(names, ","), "] removed=[", absl::StrJoin(response.removed_resources(), ","), "]");
}

// Subscribes RDS to `probe` (a name that does not exist) and takes, applies and ACKs every
// response until the one listing `probe` in removed_resources (see the file comment). Returns
// the responses before it and the probe's answer last; nullopt if the answer did not come.
inline std::optional<std::vector<DeltaDiscoveryResponse>> DrainUntilProbe(DeltaAdsClient& client,
                                                                          const std::string& probe, HeldVersions& held,
                                                                          absl::Duration wait = absl::Seconds(10)) {
  if (!client.Send(DeltaRequest(std::string(kRouteType), {probe}))) return std::nullopt;
  std::vector<DeltaDiscoveryResponse> taken;
  const absl::Time deadline = absl::Now() + wait;
  for (;;) {
    std::optional<DeltaDiscoveryResponse> next = client.Next(deadline);
    if (!next.has_value()) return std::nullopt;
    Apply(*next, held);
    client.Ack(*next);
    const bool answer = next->type_url() == kRouteType &&
                        std::find(next->removed_resources().begin(), next->removed_resources().end(), probe) !=
                            next->removed_resources().end();
    taken.push_back(std::move(*next));
    if (answer) return taken;
  }
}

}  // namespace cxds::testing
