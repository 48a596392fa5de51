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
    ResourcePtr cla = Endpoints("short-lived", {9});
    expected_value = cla->serialized();
    buffer = EncodeSotwResponse(OutgoingResponse{std::string(kEndpointType), "1", "n", {cla}}, "cxds");
  }
  auto decoded = Decode(std::move(buffer));
  ASSERT_EQ(decoded.resources_size(), 1);
  EXPECT_EQ(decoded.resources(0).value(), expected_value);
}

}  // namespace
}  // namespace cxds
