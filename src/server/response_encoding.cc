#include "server/response_encoding.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "grpc/slice.h"
#include "grpcpp/support/slice.h"

namespace cxds {

namespace {
void ReleaseResource(void* user_data) { delete static_cast<ResourcePtr*>(user_data); }

// A slice over bytes owned by `resource`, which it keeps alive until gRPC releases the slice.
grpc::Slice SharedSlice(const ResourcePtr& resource, const std::string& bytes) {
  return grpc::Slice(const_cast<char*>(bytes.data()), bytes.size(), &ReleaseResource, new ResourcePtr(resource));
}

// Appends `resources` to `slices`: each run of consecutive small ones copied once into one slice
// of gRPC's own (inlined when tiny), each large one by reference to its own bytes.
template <typename Bytes>
void AddResources(const std::vector<ResourcePtr>& resources, Bytes bytes, std::vector<grpc::Slice>& slices) {
  const bool copy_small = resources.size() >= kCopyFromResources;
  size_t i = 0;
  while (i < resources.size()) {
    const std::string& first = bytes(*resources[i]);
    if (!copy_small || first.size() >= kCopyResourcesBelowBytes) {
      slices.push_back(SharedSlice(resources[i], first));
      ++i;
      continue;
    }
    size_t end = i;
    size_t total = 0;
    for (; end < resources.size(); ++end) {
      const size_t size = bytes(*resources[end]).size();
      if (size >= kCopyResourcesBelowBytes) break;
      total += size;
    }
    grpc_slice run = grpc_slice_malloc(total);
    uint8_t* out = GRPC_SLICE_START_PTR(run);
    for (; i < end; ++i) {
      const std::string& part = bytes(*resources[i]);
      std::memcpy(out, part.data(), part.size());
      out += part.size();
    }
    slices.emplace_back(run, grpc::Slice::STEAL_REF);
  }
}

// `fixed` bytes and each resource's `bytes`, counted only until they reach kOneSliceBelowBytes
// (a response of many resources is not walked twice).
template <typename Bytes>
size_t SizeUpToOneSlice(size_t fixed, const std::vector<ResourcePtr>& resources, Bytes bytes) {
  size_t total = fixed;
  for (const ResourcePtr& resource : resources) {
    if (total >= kOneSliceBelowBytes) break;
    total += bytes(*resource).size();
  }
  return total;
}

// `head`, each resource's `bytes` and `tail`, `total` bytes in all, copied into one slice of
// gRPC's own: a response below kOneSliceBelowBytes.
template <typename Bytes>
grpc::ByteBuffer OneSlice(std::initializer_list<const std::string*> head, const std::vector<ResourcePtr>& resources,
                          Bytes bytes, std::initializer_list<const std::string*> tail, size_t total) {
  grpc_slice slice = grpc_slice_malloc(total);
  uint8_t* out = GRPC_SLICE_START_PTR(slice);
  const auto put = [&out](const std::string& part) {
    std::memcpy(out, part.data(), part.size());
    out += part.size();
  };
  for (const std::string* part : head) put(*part);
  for (const ResourcePtr& resource : resources) put(bytes(*resource));
  for (const std::string* part : tail) put(*part);
  grpc::Slice owned(slice, grpc::Slice::STEAL_REF);
  return grpc::ByteBuffer(&owned, 1);
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
  const auto bytes = [&](const Resource& resource) -> const std::string& {
    return response.wrap_ttl && resource.ttl().has_value() ? resource.encoded_sotw_ttl_field()
                                                           : resource.encoded_any_field();
  };
  if (!response.heartbeat) {
    const size_t total = SizeUpToOneSlice(header.size() + trailer.size(), response.resources, bytes);
    if (total < kOneSliceBelowBytes) return OneSlice({&header}, response.resources, bytes, {&trailer}, total);
  }
  std::vector<grpc::Slice> slices;
  slices.reserve(std::min(response.resources.size(), kCopyFromResources) + 3);
  slices.emplace_back(header);
  if (response.heartbeat) {
    // TTL renewals (rare, and small): the bodies of resources with a TTL are left out.
    std::string heartbeats;
    for (const ResourcePtr& resource : response.resources) {
      if (resource->ttl().has_value()) {
        heartbeats += EncodeSotwHeartbeat(*resource);
      } else {
        slices.push_back(SharedSlice(resource, resource->encoded_any_field()));
      }
    }
    if (!heartbeats.empty()) slices.emplace_back(heartbeats);
  } else {
    AddResources(response.resources, bytes, slices);
  }
  slices.emplace_back(trailer);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

grpc::ByteBuffer EncodeDeltaResponse(const OutgoingDeltaResponse& response, const std::string& control_plane_id) {
  std::string header;
  AppendLengthDelimited(1, response.system_version, &header);  // system_version_info
  std::string trailer;
  AppendLengthDelimited(4, response.type_url, &trailer);  // type_url
  AppendLengthDelimited(5, response.nonce, &trailer);     // nonce
  for (const std::string& name : response.removed) AppendLengthDelimited(6, name, &trailer);
  if (!control_plane_id.empty()) {
    std::string control_plane;
    AppendLengthDelimited(1, control_plane_id, &control_plane);
    AppendLengthDelimited(7, control_plane, &trailer);
  }
  std::string heartbeats;
  for (const ResourcePtr& resource : response.heartbeats) heartbeats += EncodeDeltaHeartbeat(*resource);
  const auto bytes = [&](const Resource& resource) -> const std::string& {
    return resource.encoded_delta_field(response.with_ttl);
  };
  const size_t total = SizeUpToOneSlice(header.size() + heartbeats.size() + trailer.size(), response.resources, bytes);
  if (total < kOneSliceBelowBytes) {
    return OneSlice({&header}, response.resources, bytes, {&heartbeats, &trailer}, total);
  }
  std::vector<grpc::Slice> slices;
  slices.reserve(std::min(response.resources.size(), kCopyFromResources) + 3);
  slices.emplace_back(header);
  AddResources(response.resources, bytes, slices);
  if (!heartbeats.empty()) slices.emplace_back(heartbeats);
  slices.emplace_back(trailer);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

envoy::service::discovery::v3::DeltaDiscoveryResponse ToDeltaDiscoveryResponse(const OutgoingDeltaResponse& response,
                                                                               const std::string& control_plane_id) {
  envoy::service::discovery::v3::DeltaDiscoveryResponse proto;
  std::string bytes;
  grpc::ByteBuffer buffer = EncodeDeltaResponse(response, control_plane_id);
  std::vector<grpc::Slice> slices;
  (void)buffer.Dump(&slices);
  for (const grpc::Slice& slice : slices) bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  proto.ParseFromString(bytes);
  return proto;
}

envoy::service::discovery::v3::DiscoveryResponse ToDiscoveryResponse(const OutgoingResponse& response,
                                                                     const std::string& control_plane_id) {
  envoy::service::discovery::v3::DiscoveryResponse proto;
  proto.set_version_info(response.version);
  proto.set_type_url(response.type_url);
  proto.set_nonce(response.nonce);
  if (!control_plane_id.empty()) proto.mutable_control_plane()->set_identifier(control_plane_id);
  // Built field by field (not by decoding EncodeSotwResponse), so tests compare two encoders.
  std::vector<const Resource*> heartbeats;
  for (const ResourcePtr& resource : response.resources) {
    const bool wrapped = (response.wrap_ttl || response.heartbeat) && resource->ttl().has_value();
    if (response.heartbeat && wrapped) {
      heartbeats.push_back(resource.get());
      continue;
    }
    google::protobuf::Any* any = proto.add_resources();
    if (!wrapped) {
      any->set_type_url(resource->type_url());
      any->set_value(resource->serialized());
      continue;
    }
    envoy::service::discovery::v3::Resource wrapper;
    wrapper.set_name(resource->name());
    wrapper.set_version(resource->content_version());
    wrapper.mutable_resource()->set_type_url(resource->type_url());
    wrapper.mutable_resource()->set_value(resource->serialized());
    wrapper.mutable_ttl()->set_seconds(absl::ToInt64Seconds(*resource->ttl()));
    wrapper.mutable_ttl()->set_nanos(static_cast<int32_t>(
        absl::ToInt64Nanoseconds(*resource->ttl() - absl::Seconds(absl::ToInt64Seconds(*resource->ttl())))));
    any->PackFrom(wrapper);
  }
  for (const Resource* resource : heartbeats) {
    envoy::service::discovery::v3::Resource wrapper;
    wrapper.set_name(resource->name());
    wrapper.set_version(resource->content_version());
    wrapper.mutable_ttl()->set_seconds(absl::ToInt64Seconds(*resource->ttl()));
    wrapper.mutable_ttl()->set_nanos(static_cast<int32_t>(
        absl::ToInt64Nanoseconds(*resource->ttl() - absl::Seconds(absl::ToInt64Seconds(*resource->ttl())))));
    proto.add_resources()->PackFrom(wrapper);
  }
  return proto;
}

}  // namespace cxds
