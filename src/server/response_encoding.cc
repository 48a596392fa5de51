#include "server/response_encoding.h"

#include "grpcpp/support/slice.h"

namespace cxds {

namespace {
void ReleaseResource(void* user_data) { delete static_cast<ResourcePtr*>(user_data); }

grpc::Slice SharedSlice(const ResourcePtr& resource) {
  const std::string& bytes = resource->encoded_any_field();
  return grpc::Slice(const_cast<char*>(bytes.data()), bytes.size(), &ReleaseResource,
                     new ResourcePtr(resource));
}
}  // namespace

grpc::ByteBuffer EncodeSotwResponse(const OutgoingResponse& response, const std::string& control_plane_id) {
  std::string header;
  AppendLengthDelimited(1, response.version, &header);  // version_info
  std::string trailer;
  AppendLengthDelimited(4, response.type_url, &trailer);  // type_url
  AppendLengthDelimited(5, response.nonce, &trailer);     // nonce
  if (!control_plane_id.empty()) {
    std::string control_plane;
    AppendLengthDelimited(1, control_plane_id, &control_plane);  // ControlPlane.identifier
    AppendLengthDelimited(6, control_plane, &trailer);
  }
  std::vector<grpc::Slice> slices;
  slices.reserve(response.resources.size() + 2);
  slices.emplace_back(header);
  for (const ResourcePtr& resource : response.resources) slices.push_back(SharedSlice(resource));
  slices.emplace_back(trailer);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

envoy::service::discovery::v3::DiscoveryResponse ToDiscoveryResponse(const OutgoingResponse& response,
                                                                     const std::string& control_plane_id) {
  envoy::service::discovery::v3::DiscoveryResponse proto;
  proto.set_version_info(response.version);
  proto.set_type_url(response.type_url);
  proto.set_nonce(response.nonce);
  if (!control_plane_id.empty()) proto.mutable_control_plane()->set_identifier(control_plane_id);
  for (const ResourcePtr& resource : response.resources) {
    google::protobuf::Any* any = proto.add_resources();
    any->set_type_url(resource->type_url());
    any->set_value(resource->serialized());
  }
  return proto;
}

}  // namespace cxds
