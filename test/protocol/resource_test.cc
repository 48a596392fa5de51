// Resources: names, deterministic serialization, content versions and pre-encoded bytes.
#include "protocol/resource.h"

#include "common/status_matchers.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "fakes/test_resources.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using testing::EdsCluster;
using testing::Endpoints;

// The content version is a hash of the bytes: identical in every process (a known answer,
// SHA-256 of "abc"), so a restarted server gives unchanged resources unchanged versions.
TEST(ResourceTest, ContentHashIsStableAcrossProcesses) {
  EXPECT_EQ(ContentHash("abc"), "ba7816bf8f01cfea414140de5dae2223");
}

// The streaming hasher gives what ContentHash gives for all its bytes at once, however they
// were split; a hasher of nothing is the hash of "".
TEST(ResourceTest, ContentHasherEqualsContentHashOfTheConcatenation) {
  ContentHasher split;
  split.Update("a");
  split.Update("");
  split.Update("bc");
  EXPECT_EQ(split.Finish(), ContentHash("abc"));
  ContentHasher empty;
  EXPECT_EQ(empty.Finish(), ContentHash(""));
  ContentHasher other;
  other.Update("abd");
  EXPECT_NE(other.Finish(), ContentHash("abc"));
}

// Equal messages give equal versions; a one-field change gives a different version.
TEST(ResourceTest, ContentVersionFollowsContent) {
  auto a = EdsCluster("c1");
  auto b = EdsCluster("c1");
  auto c = EdsCluster("c1", "", 2);
  EXPECT_EQ(a->content_version(), b->content_version());
  EXPECT_NE(a->content_version(), c->content_version());
  EXPECT_EQ(a->serialized(), b->serialized());
}

// The name of a ClusterLoadAssignment is its cluster_name; of others, their `name`.
TEST(ResourceTest, NamesComeFromTheRightField) {
  EXPECT_EQ(Endpoints("svc", {1})->name(), "svc");
  EXPECT_EQ(Endpoints("svc", {1})->type_url(), kEndpointType);
  EXPECT_EQ(EdsCluster("c9")->name(), "c9");
  EXPECT_EQ(EdsCluster("c9")->type_url(), kClusterType);
}

// A resource without a name cannot be served (nothing could subscribe to it).
TEST(ResourceTest, ResourceWithoutNameIsRefused) {
  envoy::config::cluster::v3::Cluster unnamed;
  auto resource = Resource::FromMessage(unnamed);
  EXPECT_EQ(resource.status().code(), absl::StatusCode::kInvalidArgument);
}

// A non-positive TTL is refused.
TEST(ResourceTest, NonPositiveTtlIsRefused) {
  envoy::config::cluster::v3::Cluster cluster;
  cluster.set_name("c");
  EXPECT_FALSE(Resource::FromMessage(cluster, absl::ZeroDuration()).ok());
  ASSERT_OK_AND_ASSIGN(ResourcePtr ok, Resource::FromMessage(cluster, absl::Seconds(30)));
  EXPECT_EQ(ok->ttl(), absl::Seconds(30));
}

// The pre-encoded bytes are exactly one `resources` entry of a DiscoveryResponse.
TEST(ResourceTest, EncodedAnyFieldIsAResponseEntry) {
  auto cla = Endpoints("svc", {8080, 8081});
  envoy::service::discovery::v3::DiscoveryResponse response;
  ASSERT_TRUE(response.ParseFromString(cla->encoded_any_field()));
  ASSERT_EQ(response.resources_size(), 1);
  EXPECT_EQ(response.resources(0).type_url(), kEndpointType);
  EXPECT_EQ(response.resources(0).value(), cla->serialized());
}

// Creating a resource serializes it exactly once; reading it never serializes again.
TEST(ResourceTest, SerializedOncePerResource) {
  const uint64_t before = ResourceSerializationCount();
  auto cluster = EdsCluster("counted");
  EXPECT_EQ(ResourceSerializationCount(), before + 1);
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(cluster->encoded_any_field().empty());
    EXPECT_FALSE(cluster->serialized().empty());
  }
  EXPECT_EQ(ResourceSerializationCount(), before + 1);
}

}  // namespace
}  // namespace cxds
