// Zero-copy response encoding produces exactly the bytes of the equivalent protobuf message.
#include "server/response_encoding.h"

#include "fakes/test_resources.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using namespace cxds::testing;  // NOLINT

envoy::service::discovery::v3::DiscoveryResponse Decode(grpc::ByteBuffer buffer) {
  envoy::service::discovery::v3::DiscoveryResponse response;
  grpc::Status status =
      grpc::SerializationTraits<envoy::service::discovery::v3::DiscoveryResponse>::Deserialize(&buffer, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response;
}

// The slices decode to the same message as ToDiscoveryResponse builds.
TEST(ResponseEncodingTest, EncodedBytesDecodeToTheResponse) {
  OutgoingResponse response{std::string(kEndpointType), "v7", "v7-1-3", {Endpoints("a", {1, 2}), Endpoints("b", {3})}};
  auto decoded = Decode(EncodeSotwResponse(response, "cxds"));
  auto expected = ToDiscoveryResponse(response, "cxds");
  EXPECT_EQ(decoded.SerializeAsString(), expected.SerializeAsString());
  EXPECT_EQ(decoded.version_info(), "v7");
  EXPECT_EQ(decoded.nonce(), "v7-1-3");
  EXPECT_EQ(decoded.control_plane().identifier(), "cxds");
  ASSERT_EQ(decoded.resources_size(), 2);
  EXPECT_EQ(decoded.resources(1).value(), response.resources[1]->serialized());

  // A response too large for one slice (kOneSliceBelowBytes): header, shared resource, trailer.
  std::vector<uint32_t> ports;
  for (uint32_t port = 1000; port < 1200; ++port) ports.push_back(port);
  OutgoingResponse large{std::string(kEndpointType), "v8", "v8-1", {Endpoints("big", ports), Endpoints("c", {4})}};
  grpc::ByteBuffer buffer = EncodeSotwResponse(large, "cxds");
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer.Dump(&slices).ok());
  EXPECT_EQ(slices.size(), 4u);
  EXPECT_EQ(Decode(std::move(buffer)).SerializeAsString(), ToDiscoveryResponse(large, "cxds").SerializeAsString());
}

// An empty response (meaningful for LDS/CDS) encodes with no resources.
TEST(ResponseEncodingTest, EmptyResponse) {
  OutgoingResponse response{std::string(kClusterType), "3", "3-1-1", {}};
  auto decoded = Decode(EncodeSotwResponse(response, ""));
  EXPECT_EQ(decoded.resources_size(), 0);
  EXPECT_EQ(decoded.type_url(), kClusterType);
  EXPECT_FALSE(decoded.has_control_plane());
}

// The buffer keeps the resources alive after every other reference is gone.
TEST(ResponseEncodingTest, BufferOwnsItsResources) {
  grpc::ByteBuffer buffer;
  std::string expected_value;
  {
    std::vector<uint32_t> ports;  // large enough to be shared, not copied (kOneSliceBelowBytes)
    for (uint32_t port = 1000; port < 1200; ++port) ports.push_back(port);
    ResourcePtr cla = Endpoints("short-lived", ports);
    expected_value = cla->serialized();
    buffer = EncodeSotwResponse(OutgoingResponse{std::string(kEndpointType), "1", "n", {cla}}, "cxds");
  }
  ASSERT_GE(expected_value.size(), kOneSliceBelowBytes);
  auto decoded = Decode(std::move(buffer));
  ASSERT_EQ(decoded.resources_size(), 1);
  EXPECT_EQ(decoded.resources(0).value(), expected_value);
}

// In a large response small resources are copied into runs (gRPC keeps a slot per slice per
// stream); a large resource is still its own bytes, shared; a small response shares them all.
TEST(ResponseEncodingTest, SmallResourcesAreCopiedInRunsLargeOnesShared) {
  std::vector<uint32_t> many_ports;
  for (uint32_t port = 1000; port < 1400; ++port) many_ports.push_back(port);
  const ResourcePtr large = Endpoints("large", many_ports);
  ASSERT_GE(large->encoded_delta_field(false).size(), kCopyResourcesBelowBytes);
  OutgoingDeltaResponse response;
  response.type_url = std::string(kEndpointType);
  response.system_version = "v1";
  response.nonce = "v1-1-1";
  for (int i = 0; i < 100; ++i) response.resources.push_back(Endpoints("small-" + std::to_string(i), {80}));
  response.resources.push_back(large);
  response.resources.push_back(Endpoints("after", {81}));
  grpc::ByteBuffer buffer = EncodeDeltaResponse(response, "cxds");
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer.Dump(&slices).ok());
  // header, the 100 small ones as one run, the large one, the last one, trailer
  ASSERT_EQ(slices.size(), 5u);
  const std::string& shared = large->encoded_delta_field(false);
  EXPECT_EQ(reinterpret_cast<const char*>(slices[2].begin()), shared.data()) << "the large resource was copied";
  EXPECT_EQ(slices[2].size(), shared.size());
  size_t small_bytes = 0;
  for (int i = 0; i < 100; ++i) small_bytes += response.resources[i]->encoded_delta_field(false).size();
  EXPECT_EQ(slices[1].size(), small_bytes);

  envoy::service::discovery::v3::DeltaDiscoveryResponse decoded = ToDeltaDiscoveryResponse(response, "cxds");
  ASSERT_EQ(decoded.resources_size(), 102);
  EXPECT_EQ(decoded.resources(100).resource().value(), large->serialized());
  EXPECT_EQ(decoded.resources(101).name(), "after");

  OutgoingDeltaResponse small = response;
  small.resources.resize(kCopyFromResources - 1);
  slices.clear();
  ASSERT_TRUE(EncodeDeltaResponse(small, "cxds").Dump(&slices).ok());
  ASSERT_EQ(slices.size(), kCopyFromResources + 1);
  EXPECT_EQ(reinterpret_cast<const char*>(slices[1].begin()), small.resources[0]->encoded_delta_field(false).data());
}

// A response below kOneSliceBelowBytes (a change's EDS update) is one slice of its own, with
// every field of the multi-slice encoding.
TEST(ResponseEncodingTest, ASmallResponseIsOneSliceOfItsOwn) {
  OutgoingDeltaResponse response;
  response.type_url = std::string(kEndpointType);
  response.system_version = "v2";
  response.nonce = "v2-7-1";
  response.resources = {Endpoints("a", {80}), Endpoints("b", {81})};
  response.removed = {"gone"};
  grpc::ByteBuffer buffer = EncodeDeltaResponse(response, "cxds");
  ASSERT_LT(buffer.Length(), kOneSliceBelowBytes);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer.Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_NE(reinterpret_cast<const char*>(slices[0].begin()), response.resources[0]->encoded_delta_field(false).data());

  envoy::service::discovery::v3::DeltaDiscoveryResponse decoded = ToDeltaDiscoveryResponse(response, "cxds");
  EXPECT_EQ(decoded.system_version_info(), "v2");
  EXPECT_EQ(decoded.nonce(), "v2-7-1");
  EXPECT_EQ(decoded.type_url(), kEndpointType);
  ASSERT_EQ(decoded.resources_size(), 2);
  EXPECT_EQ(decoded.resources(0).name(), "a");
  EXPECT_EQ(decoded.resources(1).resource().value(), response.resources[1]->serialized());
  ASSERT_EQ(decoded.removed_resources_size(), 1);
  EXPECT_EQ(decoded.removed_resources(0), "gone");
  EXPECT_EQ(decoded.control_plane().identifier(), "cxds");

  // A resource that alone does not fit is shared again.
  std::vector<uint32_t> ports;
  for (uint32_t port = 1000; Endpoints("big", ports)->encoded_delta_field(false).size() < kOneSliceBelowBytes; ++port) {
    ports.push_back(port);
  }
  response.resources = {Endpoints("big", ports)};
  slices.clear();
  ASSERT_TRUE(EncodeDeltaResponse(response, "cxds").Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 3u) << "header, the shared resource, trailer";
  EXPECT_EQ(reinterpret_cast<const char*>(slices[1].begin()), response.resources[0]->encoded_delta_field(false).data());

  // SotW alike.
  OutgoingResponse sotw{std::string(kEndpointType), "v3", "v3-1", {Endpoints("a", {80})}};
  slices.clear();
  ASSERT_TRUE(EncodeSotwResponse(sotw, "cxds").Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 1u);
  envoy::service::discovery::v3::DiscoveryResponse sotw_decoded = Decode(EncodeSotwResponse(sotw, "cxds"));
  EXPECT_EQ(sotw_decoded.SerializeAsString(), ToDiscoveryResponse(sotw, "cxds").SerializeAsString());
  EXPECT_EQ(sotw_decoded.version_info(), "v3");
  EXPECT_EQ(sotw_decoded.nonce(), "v3-1");
  EXPECT_EQ(sotw_decoded.type_url(), kEndpointType);
  ASSERT_EQ(sotw_decoded.resources_size(), 1);
  EXPECT_EQ(sotw_decoded.resources(0).value(), sotw.resources[0]->serialized());
  EXPECT_EQ(sotw_decoded.control_plane().identifier(), "cxds");
}

}  // namespace
}  // namespace cxds
