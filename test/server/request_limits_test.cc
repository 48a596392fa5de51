// Unbounded input (issue 11): every limit of server/limits.h ends the stream with a status
// naming it, before anything is kept; a NACK's error_detail is kept cut to its limit; a client
// string cannot forge a log line.
#include "cache/snapshot_cache.h"
#include "common/logging.h"
#include "common/status_matchers.h"
#include "fakes/captured_log.h"
#include "fakes/delta_harness.h"
#include "fakes/stream_harness.h"
#include "fakes/test_resources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using namespace cxds::testing;  // NOLINT

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);
const std::string kLds(kListenerType);
const std::string kRds(kRouteType);

class RequestLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(cache_.SetSnapshot("node-a", MustSnapshot("1", {EdsCluster("c1"), Endpoints("c1", {80})})));
  }
  static StreamHarnessOptions With(StreamLimits limits) {
    StreamHarnessOptions options;
    options.limits = limits;
    return options;
  }
  static void ExpectEnded(const std::optional<absl::Status>& finished, absl::StatusCode code,
                          const std::string& limit_name) {
    ASSERT_TRUE(finished.has_value()) << "the stream must end (" << limit_name << ")";
    EXPECT_EQ(finished->code(), code) << finished->ToString();
    EXPECT_THAT(std::string(finished->message()), HasSubstr(limit_name));
  }

  SnapshotCache cache_{SnapshotCache::Options{ConsistencyPolicy::kNone, nullptr, nullptr}};
};

// With the default limits, a 1 MiB node id is refused before it is kept anywhere.
TEST_F(RequestLimitsTest, AHugeNodeIdIsRefusedWithTheDefaultLimits) {
  const std::string huge(1 << 20, 'n');
  StreamHarness h(cache_, "", nullptr, huge);
  h.Send(Request(kCds, {}));
  ExpectEnded(h.transport().finished, absl::StatusCode::kInvalidArgument, "max_node_id_bytes");
  EXPECT_THAT(h.transport().writes, IsEmpty());
  ASSERT_TRUE(h.ledger().GetStream(1).has_value());
  EXPECT_EQ(h.ledger().GetStream(1)->node_id, "") << "the node id must not be kept";
  EXPECT_FALSE(cache_.GetStatus(huge).has_value()) << "no watch may be made for it";
}

TEST_F(RequestLimitsTest, NodeClusterAndMetadataOverTheirLimitsAreRefused) {
  StreamLimits limits;
  limits.max_node_cluster_bytes = 16;
  limits.max_node_metadata_bytes = 64;
  {
    StreamHarness h(cache_, "", nullptr, "node-a", 1, With(limits));
    DiscoveryRequest request = Request(kCds, {});
    request.mutable_node()->set_id("node-a");
    request.mutable_node()->set_cluster(std::string(17, 'c'));
    h.Send(request);
    ExpectEnded(h.transport().finished, absl::StatusCode::kInvalidArgument, "max_node_cluster_bytes");
  }
  {
    StreamHarness h(cache_, "", nullptr, "node-a", 1, With(limits));
    DiscoveryRequest request = Request(kCds, {});
    request.mutable_node()->set_id("node-a");
    (*request.mutable_node()->mutable_metadata()->mutable_fields())["k"].set_string_value(std::string(100, 'v'));
    h.Send(request);
    ExpectEnded(h.transport().finished, absl::StatusCode::kResourceExhausted, "max_node_metadata_bytes");
  }
  {
    StreamHarness h(cache_, "", nullptr, "node-a", 1, With(limits));
    DiscoveryRequest request = Request(kCds, {});
    request.mutable_node()->set_id("node-a");
    request.mutable_node()->set_cluster(std::string(16, 'c'));
    h.Send(request);
    EXPECT_FALSE(h.transport().finished.has_value()) << "at the limit is allowed";
    EXPECT_EQ(h.Take().size(), 1u);
  }
}

TEST_F(RequestLimitsTest, SotwNamesPerRequestAndNameLengthAreLimited) {
  StreamLimits limits;
  limits.max_resource_names_per_request = 3;
  limits.max_resource_name_bytes = 8;
  {
    StreamHarness h(cache_, "", nullptr, "node-a", 1, With(limits));
    h.Send(Request(kEds, {"c1", "a", "b"}));
    EXPECT_EQ(h.Take().size(), 1u) << "at the limit is allowed";
    h.Send(Request(kEds, {"c1", "a", "b", "d"}));
    ExpectEnded(h.transport().finished, absl::StatusCode::kResourceExhausted, "max_resource_names_per_request");
  }
  {
    StreamHarness h(cache_, "", nullptr, "node-a", 1, With(limits));
    h.Send(Request(kEds, {std::string(9, 'x')}));
    ExpectEnded(h.transport().finished, absl::StatusCode::kInvalidArgument, "max_resource_name_bytes");
  }
}

// Delta adds names request by request: the cap is on the subscription, not only per request.
TEST_F(RequestLimitsTest, DeltaSubscriptionIsCappedAcrossRequests) {
  StreamLimits limits;
  limits.max_resource_names_per_request = 5;
  DeltaHarness h(cache_, "node-a", 1, {}, nullptr, absl::ZeroDuration(), nullptr, limits);
  h.Send(DeltaRequest(kEds, {"a", "b", "c"}));
  h.Take();
  EXPECT_FALSE(h.transport().finished.has_value());
  h.Send(DeltaRequest(kEds, {"d", "e", "f"}));
  ExpectEnded(h.transport().finished, absl::StatusCode::kResourceExhausted, "max_resource_names_per_request");
}

TEST_F(RequestLimitsTest, TypesPerStreamAreLimited) {
  StreamLimits limits;
  limits.max_types_per_stream = 2;
  StreamHarness h(cache_, "", nullptr, "node-a", 1, With(limits));
  h.Send(Request(kCds, {}));
  h.Send(Request(kEds, {"c1"}));
  h.Take();
  EXPECT_FALSE(h.transport().finished.has_value());
  h.Send(Request("type.googleapis.com/example.Other", {"x"}));
  ExpectEnded(h.transport().finished, absl::StatusCode::kResourceExhausted, "max_types_per_stream");
}

TEST_F(RequestLimitsTest, TypeUrlLengthIsLimited) {
  StreamHarness h(cache_, "", nullptr, "node-a", 1);
  h.Send(Request("type.googleapis.com/" + std::string(1000, 'x'), {"x"}));
  ExpectEnded(h.transport().finished, absl::StatusCode::kInvalidArgument, "max_type_url_bytes");
}

// A 1 MB NACK message is kept (ledger, feedback events) cut to the limit, with its size.
TEST_F(RequestLimitsTest, NackErrorDetailIsKeptTruncatedWithItsSize) {
  StreamLimits limits;
  limits.max_error_detail_bytes = 16;
  StreamHarness h(cache_, "", nullptr, "node-a", 1, With(limits));
  h.Send(Request(kCds, {}));
  std::vector<DiscoveryResponse> sent = h.Take();
  ASSERT_EQ(sent.size(), 1u);
  const std::string error = "rejected: " + std::string(1'000'000, 'e');
  h.Send(Nack(sent[0], {}, "", error));
  std::optional<StreamSyncStatus> status = h.ledger().GetStream(1);
  ASSERT_TRUE(status.has_value());
  ASSERT_EQ(status->types.size(), 1u);
  ASSERT_TRUE(status->types[0].last_nack.has_value());
  EXPECT_EQ(status->types[0].last_nack->error, "rejected: eeeeee\u2026(1000010 bytes)");
}

// A node id, nonce or error_detail with a newline cannot start a log line of its own, and a
// huge one does not make a huge line.
TEST_F(RequestLimitsTest, ClientStringsCannotForgeOrFloodLogLines) {
  const std::string forged_id = "node-a\n[2026-01-01 00:00:00.000] [cxds] [info] FORGED node=admin";
  ASSERT_OK(cache_.SetSnapshot(forged_id, MustSnapshot("1", {EdsCluster("c1")})));
  CapturedLog log;
  {
    StreamHarness h(cache_, "", nullptr, forged_id, 1);
    h.Send(Request(kCds, {}));
    std::vector<DiscoveryResponse> sent = h.Take();
    ASSERT_EQ(sent.size(), 1u);
    h.Send(
        Nack(sent[0], {}, "", "bad\n[2026-01-01 00:00:00.000] [cxds] [info] FORGED too " + std::string(100'000, 'x')));
    DiscoveryRequest stale = Request(kCds, {}, "1", "nonce\nFORGED");
    h.Send(stale);
  }
  const std::vector<std::string> lines = log.Lines();
  ASSERT_FALSE(lines.empty());
  bool open_seen = false;
  for (const std::string& line : lines) {
    EXPECT_THAT(line, ::testing::Not(StartsWith("[2026-01-01"))) << "a line forged by a client string";
    EXPECT_LT(line.size(), 4096u) << "a client string must not make a line this long";
    if (line.find("OPEN stream=1") != std::string::npos) {
      open_seen = true;
      EXPECT_THAT(line, HasSubstr("node=node-a\\n[2026-01-01\\x2000:00:00.000]"));
    }
  }
  EXPECT_TRUE(open_seen);
}

// The pilot_xds{version} label carries the client's user_agent_version escaped and short.
TEST_F(RequestLimitsTest, ClientVersionLabelIsEscapedAndShort) {
  MetricsRegistry registry;
  ServerMetrics metrics(&registry);
  StreamHarnessOptions options;
  options.metrics = &metrics;
  StreamHarness h(cache_, "", nullptr, "node-a", 1, options);
  DiscoveryRequest request = Request(kCds, {});
  request.mutable_node()->set_id("node-a");
  request.mutable_node()->set_user_agent_version("1.0\"} forged 1\n" + std::string(10'000, 'v'));
  h.Send(request);
  h.Take();
  const std::string text = registry.RenderPrometheus();
  const size_t start = text.find("\npilot_xds{version=\"");
  ASSERT_NE(start, std::string::npos) << text.substr(0, 2000);
  const std::string line = text.substr(start + 1, text.find('\n', start + 1) - start - 1);
  EXPECT_THAT(line, StartsWith("pilot_xds{version=\"1.0"));
  EXPECT_LT(line.size(), 200u) << "the label must be cut short: " << line.substr(0, 300);
}

// The version label set is bounded: clients naming ever new versions share "other" once the
// first kMaxClientVersions have theirs, and the gauges still return to zero when they leave.
TEST(ServerMetricsBoundsTest, ClientVersionLabelsAreCappedAndGaugesBalance) {
  MetricsRegistry registry;
  ServerMetrics metrics(&registry);
  const size_t versions = ServerMetrics::kMaxClientVersions + 10;
  for (size_t i = 0; i < versions; ++i) metrics.StreamOpened("v" + std::to_string(i));
  std::string text = registry.RenderPrometheus();
  size_t labels = 0;
  for (size_t at = text.find("\npilot_xds{version="); at != std::string::npos;
       at = text.find("\npilot_xds{version=", at + 1)) {
    labels++;
  }
  EXPECT_EQ(labels, ServerMetrics::kMaxClientVersions + 1) << text;
  EXPECT_THAT(text, HasSubstr("pilot_xds{version=\"other\"} 10"));
  for (size_t i = 0; i < versions; ++i) metrics.StreamClosed("v" + std::to_string(i));
  text = registry.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr("pilot_xds{version=\"other\"} 0"));
  EXPECT_THAT(text, HasSubstr("pilot_xds{version=\"v0\"} 0"));
}

}  // namespace
}  // namespace cxds
