// FakeXdsClient: a State-of-the-World xDS client over real gRPC, for in-process integration
// tests of XdsServer. It behaves like a faithful proxy (Envoy or proxyless gRPC): the node only
// on the first request, per type the last accepted version and the last nonce received, ACKs
// that repeat the name list, NACKs that keep the last accepted version.
//
// Usage:
//   FakeXdsClient client(absl::StrCat("127.0.0.1:", port), "node-a");
//   client.Subscribe(kClusterType, {});
//   auto cds = client.WaitForResponse(kClusterType, absl::Seconds(5));
//   ASSERT_TRUE(cds.has_value());
//   client.Ack(*cds);
//   client.ExpectNoResponse(absl::Seconds(5));
//
// "No response", without sleeping: the server's nonces are `<version>-<stream id>-<seq>`, where
// seq counts the responses of one stream, one by one. ExpectNoResponse() sends a probe request
// that the server must answer and checks that the probe's answer is the very next response on
// the stream (its seq is the last one seen plus one): anything the server sent in between
// would have taken a seq before it. The probe is an SDS request with an empty nonce for
// kProbeSecretName, which the server answers with the full SDS state for that name. Requests
// are handled in order, and SDS is last in the ADS push order (CDS, EDS, LDS, RDS, SDS), so a
// response owed to an earlier request of another type is always written before the probe's
// answer, even when the server merges pending work. DrainUntilProbe() is the same probe, for
// tests that want to take whatever came before it instead of failing. A push caused by a
// configuration change is not ordered against the probe (the server handles requests before
// pushes): take the pushes a change causes before probing.
// REQUIRES for both: an ADS stream, a snapshot that contains ProbeSecret() (at a version that
// does not change, or every change pushes SDS too), and no other use of SDS on the stream.
//
// Threading: one test thread drives a client (Send, Subscribe, Ack, Nack, WaitForResponse,
// Finish); an internal reader thread reads responses into a queue. Different clients may be
// driven from different threads.
//
// Lifetime: the destructor cancels the stream if Finish() was not called, and fails the test
// if responses arrived that the test never took (DiscardUnread() allows it on purpose).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "envoy/service/cluster/v3/cds.grpc.pb.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "fakes/stream_harness.h"
#include "fakes/test_resources.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds::testing {

// The parts of a cxds nonce `<version>-<stream id>-<seq>`. The version may itself contain '-',
// so the nonce is split from the right.
struct ParsedNonce {
  std::string version;
  int64_t stream_id = 0;
  uint64_t seq = 0;
};

inline std::optional<ParsedNonce> ParseNonce(std::string_view nonce) {
  const size_t seq_dash = nonce.rfind('-');
  if (seq_dash == std::string_view::npos || seq_dash == 0) return std::nullopt;
  const size_t id_dash = nonce.rfind('-', seq_dash - 1);
  if (id_dash == std::string_view::npos) return std::nullopt;
  ParsedNonce parsed;
  parsed.version = std::string(nonce.substr(0, id_dash));
  const std::string_view id = nonce.substr(id_dash + 1, seq_dash - id_dash - 1);
  const std::string_view seq = nonce.substr(seq_dash + 1);
  if (!absl::SimpleAtoi(absl::string_view(id.data(), id.size()), &parsed.stream_id) ||
      !absl::SimpleAtoi(absl::string_view(seq.data(), seq.size()), &parsed.seq)) {
    return std::nullopt;
  }
  return parsed;
}

// The secret ExpectNoResponse() probes for; put ProbeSecret() into every snapshot of a test
// that uses it (preferably at a version that does not change, so it is never pushed).
inline constexpr char kProbeSecretName[] = "cxds-test-probe";
inline ResourcePtr ProbeSecret() { return Secret(kProbeSecretName); }

class FakeXdsClient {
 public:
  enum class Service {
    kAggregated,  // AggregatedDiscoveryService.StreamAggregatedResources (ADS)
    kClusters,    // ClusterDiscoveryService.StreamClusters (CDS only)
  };

  // Opens the stream at once. `target` is "127.0.0.1:<port>". The stream gets a deadline of
  // `stream_deadline` so that a server that never answers cannot hang the test. `credentials`:
  // TLS or mTLS (null: plaintext).
  FakeXdsClient(const std::string& target, std::string node_id, Service service = Service::kAggregated,
                absl::Duration stream_deadline = absl::Seconds(60),
                std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr)
      : node_id_(std::move(node_id)),
        channel_(
            grpc::CreateChannel(target, credentials != nullptr ? credentials : grpc::InsecureChannelCredentials())) {
    context_.set_deadline(absl::ToChronoTime(absl::Now() + stream_deadline));
    if (service == Service::kAggregated) {
      ads_stub_ = envoy::service::discovery::v3::AggregatedDiscoveryService::NewStub(channel_);
      stream_ = ads_stub_->StreamAggregatedResources(&context_);
    } else {
      cds_stub_ = envoy::service::cluster::v3::ClusterDiscoveryService::NewStub(channel_);
      stream_ = cds_stub_->StreamClusters(&context_);
    }
    reader_ = std::thread([this] { ReadLoop(); });
  }

  ~FakeXdsClient() {
    if (!finished_) {
      context_.TryCancel();
      reader_.join();
      stream_->Finish();
    }
    MutexLock lock(&mu_);
    if (!discard_unread_ && !queue_.empty()) {
      std::string unread;
      for (const DiscoveryResponse& response : queue_) {
        absl::StrAppend(&unread, " [", std::string(ShortTypeName(response.type_url())),
                        " version=", response.version_info(), " nonce=", response.nonce(), "]");
      }
      ADD_FAILURE() << "FakeXdsClient(" << node_id_ << ") destroyed with " << queue_.size()
                    << " response(s) never taken:" << unread;
    }
  }

  FakeXdsClient(const FakeXdsClient&) = delete;
  FakeXdsClient& operator=(const FakeXdsClient&) = delete;

  // Writes `request`, adding node.id to the stream's first request if it has no node. Returns
  // false if the stream is broken.
  bool Send(DiscoveryRequest request) {
    if (!sent_first_) {
      if (!request.has_node()) request.mutable_node()->set_id(node_id_);
      sent_first_ = true;
    }
    return stream_->Write(request);
  }
  // Writes `request` as it is (no node is added, even to the first request).
  bool SendRaw(const DiscoveryRequest& request) {
    sent_first_ = true;
    return stream_->Write(request);
  }

  // Subscribes to exactly `names` of `type_url` (an empty list is a wildcard for LDS/CDS and
  // "nothing" for other types), carrying the type's last accepted version and last nonce as a
  // real client does.
  bool Subscribe(const std::string& type_url, std::vector<std::string> names) {
    TypeState& state = types_[type_url];
    state.names = names;
    return Send(Request(type_url, std::move(names), state.accepted_version, state.last_nonce));
  }

  // ACKs `response` with `names` (by default the current subscription of its type); its version
  // becomes the accepted version of the type.
  bool Ack(const DiscoveryResponse& response, std::optional<std::vector<std::string>> names = std::nullopt) {
    TypeState& state = types_[response.type_url()];
    if (names.has_value()) state.names = *names;
    state.accepted_version = response.version_info();
    return Send(cxds::testing::Ack(response, state.names));
  }

  // NACKs `response`: version_info stays the last accepted version of the type (or
  // `accepted_version` if given, to imitate a client that lies), error_detail carries `message`.
  bool Nack(const DiscoveryResponse& response, const std::string& message,
            std::optional<std::vector<std::string>> names = std::nullopt,
            std::optional<std::string> accepted_version = std::nullopt) {
    TypeState& state = types_[response.type_url()];
    if (names.has_value()) state.names = *names;
    return Send(cxds::testing::Nack(response, state.names, accepted_version.value_or(state.accepted_version), message));
  }

  // The next response, waiting at most `deadline`; nullopt if none arrived in time or the
  // stream ended. Taking a response updates the client's state (last nonce of its type).
  std::optional<DiscoveryResponse> WaitForResponse(absl::Duration deadline) {
    std::optional<DiscoveryResponse> response;
    {
      MutexLock lock(&mu_);
      mu_.AwaitWithTimeout([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ResponseOrEndLocked(); }, deadline);
      if (queue_.empty()) return std::nullopt;
      response = std::move(queue_.front());
      queue_.pop_front();
    }
    Took(*response);
    return response;
  }

  // The next response, which must be of `type_url`; otherwise the test fails (at the caller's
  // line) and nullopt is returned.
  std::optional<DiscoveryResponse> WaitForResponse(const std::string& type_url, absl::Duration deadline,
                                                   std::source_location where = std::source_location::current()) {
    std::optional<DiscoveryResponse> response = WaitForResponse(deadline);
    if (!response.has_value()) {
      ADD_FAILURE_AT(where.file_name(), where.line())
          << "no " << ShortTypeName(type_url) << " response within " << deadline << " (node " << node_id_
          << (stream_ended() ? ", stream ended)" : ")");
      return std::nullopt;
    }
    if (response->type_url() != type_url) {
      ADD_FAILURE_AT(where.file_name(), where.line())
          << "expected a " << ShortTypeName(type_url) << " response, got " << ShortTypeName(response->type_url())
          << " version=" << response->version_info() << " nonce=" << response->nonce();
      return std::nullopt;
    }
    return response;
  }

  // Sends the probe (see the file comment) and returns every response the server sent before
  // answering it, in order, taken but not ACKed; the probe's answer is taken and ACKed. Returns
  // nullopt (and fails the test at the caller's line) if the probe's answer did not come in
  // time. Use it to reach a quiescent point: after it, the server owes nothing to the requests
  // sent so far.
  // REQUIRES: an ADS stream whose snapshot contains ProbeSecret().
  std::optional<std::vector<DiscoveryResponse>> DrainUntilProbe(
      absl::Duration deadline, std::source_location where = std::source_location::current()) {
    const std::string sds(kSecretType);
    const uint64_t before = last_seq_;
    // The probe has an empty nonce: the server answers it with the full SDS state for the
    // probe name whether or not the subscription changed (the client "starts over").
    TypeState& probe = types_[sds];
    probe.names = {kProbeSecretName};
    if (!Send(Request(sds, probe.names, probe.accepted_version, /*nonce=*/""))) {
      ADD_FAILURE_AT(where.file_name(), where.line()) << "the probe could not be written: the stream is broken";
      return std::nullopt;
    }
    std::vector<DiscoveryResponse> before_probe;
    const absl::Time end = absl::Now() + deadline;
    for (;;) {
      std::optional<DiscoveryResponse> next = WaitForResponse(std::max(end - absl::Now(), absl::ZeroDuration()));
      if (!next.has_value()) {
        ADD_FAILURE_AT(where.file_name(), where.line())
            << "the probe got no answer within " << deadline << " (does the snapshot contain ProbeSecret()?)";
        return std::nullopt;
      }
      if (next->type_url() != sds) {
        before_probe.push_back(std::move(*next));
        continue;
      }
      // Consecutive seqs (checked as responses are taken) mean nothing else was sent.
      const std::optional<ParsedNonce> parsed = ParseNonce(next->nonce());
      if (!parsed.has_value() || parsed->seq != before + before_probe.size() + 1) {
        ADD_FAILURE_AT(where.file_name(), where.line())
            << "the probe's answer " << next->nonce() << " does not follow seq " << before << " and "
            << before_probe.size() << " response(s)";
      }
      Ack(*next);  // like a real client; a correct server does not answer it
      return before_probe;
    }
  }

  // Checks that the server sent nothing since the last response the test took, with the probe
  // (DrainUntilProbe). Returns false, and fails the test at the caller's line, if something
  // came before the probe's answer (those responses are taken and listed in the failure).
  // REQUIRES: an ADS stream whose snapshot contains ProbeSecret().
  bool ExpectNoResponse(absl::Duration deadline, std::source_location where = std::source_location::current()) {
    std::optional<std::vector<DiscoveryResponse>> unexpected = DrainUntilProbe(deadline, where);
    if (!unexpected.has_value()) return false;
    if (unexpected->empty()) return true;
    std::string sent;
    for (const DiscoveryResponse& response : *unexpected) {
      absl::StrAppend(&sent, " [", std::string(ShortTypeName(response.type_url())),
                      " version=", response.version_info(), " nonce=", response.nonce(), "]");
    }
    ADD_FAILURE_AT(where.file_name(), where.line()) << "expected no response, but the server sent" << sent;
    return false;
  }

  // WritesDone, then waits (at most `deadline`) for the server to end the stream, and returns
  // its status. After `deadline` the stream is cancelled. Call at most once.
  grpc::Status Finish(absl::Duration deadline = absl::Seconds(10)) {
    stream_->WritesDone();
    return AwaitEnd(deadline);
  }

  // Waits (at most `deadline`) for the server to end the stream without closing the client's
  // side, and returns its status (CANCELLED if it did not end in time). Call at most once,
  // instead of Finish().
  grpc::Status WaitForStreamEnd(absl::Duration deadline = absl::Seconds(10)) { return AwaitEnd(deadline); }

  bool stream_ended() const {
    MutexLock lock(&mu_);
    return reads_done_;
  }

  // The stream id the server gave this stream, from the nonces (0 before the first response).
  int64_t stream_id() const { return stream_id_; }
  const std::string& node_id() const { return node_id_; }
  // The seq of the last response taken (0 before the first).
  uint64_t last_seq() const { return last_seq_; }
  const std::string& accepted_version(const std::string& type_url) { return types_[type_url].accepted_version; }
  const std::string& last_nonce(const std::string& type_url) { return types_[type_url].last_nonce; }

  // Drops untaken responses; the destructor will not complain about them.
  void DiscardUnread() {
    MutexLock lock(&mu_);
    queue_.clear();
    discard_unread_ = true;
  }

 private:
  struct TypeState {
    std::vector<std::string> names;  // the current subscription
    std::string accepted_version;    // the version of the last ACKed response
    std::string last_nonce;          // the nonce of the last response taken
  };

  void ReadLoop() {
    DiscoveryResponse response;
    while (stream_->Read(&response)) {
      MutexLock lock(&mu_);
      queue_.push_back(std::move(response));
      response = DiscoveryResponse();
    }
    MutexLock lock(&mu_);
    reads_done_ = true;
  }

  bool ResponseOrEndLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || reads_done_; }
  bool EndLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return reads_done_; }

  // Client state after the test took `response`; also checks the nonce sequence that
  // ExpectNoResponse relies on.
  void Took(const DiscoveryResponse& response) {
    types_[response.type_url()].last_nonce = response.nonce();
    const std::optional<ParsedNonce> parsed = ParseNonce(response.nonce());
    if (!parsed.has_value()) {
      ADD_FAILURE() << "nonce \"" << response.nonce() << "\" is not <version>-<stream id>-<seq>";
      return;
    }
    if (parsed->seq != last_seq_ + 1 || (stream_id_ != 0 && parsed->stream_id != stream_id_)) {
      ADD_FAILURE() << "nonce " << response.nonce() << " does not follow seq " << last_seq_ << " of stream "
                    << stream_id_ << "; FakeXdsClient::ExpectNoResponse relies on consecutive seqs";
    }
    if (parsed->version != response.version_info()) {
      ADD_FAILURE() << "nonce " << response.nonce() << " does not start with version " << response.version_info();
    }
    last_seq_ = parsed->seq;
    stream_id_ = parsed->stream_id;
  }

  grpc::Status AwaitEnd(absl::Duration deadline) {
    {
      MutexLock lock(&mu_);
      if (!mu_.AwaitWithTimeout([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return EndLocked(); }, deadline)) {
        context_.TryCancel();
      }
    }
    reader_.join();
    finished_ = true;
    return stream_->Finish();
  }

  const std::string node_id_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<envoy::service::discovery::v3::AggregatedDiscoveryService::Stub> ads_stub_;
  std::unique_ptr<envoy::service::cluster::v3::ClusterDiscoveryService::Stub> cds_stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<DiscoveryRequest, DiscoveryResponse>> stream_;
  std::thread reader_;

  // Shared with the reader thread.
  mutable Mutex mu_;
  std::deque<DiscoveryResponse> queue_ ABSL_GUARDED_BY(mu_);
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool discard_unread_ ABSL_GUARDED_BY(mu_) = false;

  // Client state, touched only by the driving thread.
  std::map<std::string, TypeState> types_;
  bool sent_first_ = false;
  bool finished_ = false;
  uint64_t last_seq_ = 0;
  int64_t stream_id_ = 0;
};

}  // namespace cxds::testing
