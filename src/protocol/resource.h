// An immutable xDS resource: one protobuf message, its name and type URL, its deterministic
// serialization, a content version (hash of those bytes) and the pre-encoded bytes of the
// `resources` entry a DiscoveryResponse carries for it.
//
// A Resource is serialized exactly once, when it is created, and then shared read-only (through
// ResourcePtr) by every snapshot, stream and response that uses it: responses to N clients
// reference the same bytes instead of copying or re-encoding them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"

namespace cxds {

class Resource;
using ResourcePtr = std::shared_ptr<const Resource>;

class Resource {
 public:
  // Takes ownership of `message`. Fails with InvalidArgument if the resource has no name.
  // `ttl`, if set, is carried to clients that support TTLs.
  static absl::StatusOr<ResourcePtr> Create(std::unique_ptr<google::protobuf::Message> message,
                                            std::optional<absl::Duration> ttl = std::nullopt);

  // Copies `message` into a new resource.
  static absl::StatusOr<ResourcePtr> FromMessage(const google::protobuf::Message& message,
                                                 std::optional<absl::Duration> ttl = std::nullopt);

  Resource(const Resource&) = delete;
  Resource& operator=(const Resource&) = delete;

  const std::string& type_url() const { return type_url_; }
  const std::string& name() const { return name_; }
  const google::protobuf::Message& message() const { return *message_; }
  // Deterministic protobuf encoding of message().
  const std::string& serialized() const { return serialized_; }
  // Hex SHA-256 prefix of serialized(): equal content gives equal versions in every process.
  const std::string& content_version() const { return content_version_; }
  // The bytes of one `repeated google.protobuf.Any resources = 2` entry of a DiscoveryResponse
  // (tag, length, Any{type_url, value}), ready to be concatenated into a response.
  const std::string& encoded_any_field() const { return encoded_any_field_; }
  const std::optional<absl::Duration>& ttl() const { return ttl_; }

  // The bytes of one `repeated Resource resources = 2` entry of a DeltaDiscoveryResponse:
  // Resource{name, version = content_version(), resource, ttl if `with_ttl` and set}. Built on
  // first use (only delta clients need it) and then shared. Thread-safe.
  const std::string& encoded_delta_field(bool with_ttl) const;
  // The bytes of one DiscoveryResponse `resources` entry that wraps this resource in a
  // discovery Resource with its TTL (SotW TTL, for clients that support it). Built on first use.
  const std::string& encoded_sotw_ttl_field() const;

 private:
  Resource() = default;

  std::unique_ptr<const google::protobuf::Message> message_;
  std::string type_url_;
  std::string name_;
  std::string serialized_;
  std::string content_version_;
  std::string encoded_any_field_;
  std::optional<absl::Duration> ttl_;

  mutable std::once_flag delta_once_[2];
  mutable std::string encoded_delta_field_[2];
  mutable std::once_flag sotw_ttl_once_;
  mutable std::string encoded_sotw_ttl_field_;
};

// Encodes a google.protobuf.Duration message.
std::string EncodeDuration(absl::Duration d);
// One DeltaDiscoveryResponse `resources` entry without a body: a TTL heartbeat for `resource`.
std::string EncodeDeltaHeartbeat(const Resource& resource);
// One DiscoveryResponse `resources` entry without a body: a SotW TTL heartbeat for `resource`.
std::string EncodeSotwHeartbeat(const Resource& resource);

// The xDS name of a resource message: ClusterLoadAssignment.cluster_name, otherwise the
// message's top-level `name` string field; "" if it has neither.
std::string ResourceNameOf(const google::protobuf::Message& message);

// Hex-encoded, truncated SHA-256 of `bytes` (32 hex digits).
std::string ContentHash(std::string_view bytes);

// ContentHash of the concatenation of every Update's bytes, without holding them all: a
// version over 10,000 objects need not build a megabyte string first.
class ContentHasher {
 public:
  ContentHasher();
  ~ContentHasher();
  ContentHasher(const ContentHasher&) = delete;
  ContentHasher& operator=(const ContentHasher&) = delete;
  void Update(std::string_view bytes);
  std::string Finish();  // once; equal to ContentHash of all the bytes

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// How many resource serializations this process has performed (every Resource::Create is one).
// Tests and benchmarks use it to prove that a resource is serialized once per version.
uint64_t ResourceSerializationCount();

// What debug output (config dumps, CSDS) may show of `resource`: its own message, or for a
// Secret holding private material (a TLS private key, a generic secret, session ticket keys) a
// copy with that material replaced by "[redacted]", as Envoy's own config dump shows it. The
// copy, when one is made, is owned by `holder`.
const google::protobuf::Message& MessageForDisplay(const Resource& resource,
                                                   std::unique_ptr<google::protobuf::Message>& holder);
// The same, serialized: `resource`'s own bytes when nothing is redacted.
std::string SerializedForDisplay(const Resource& resource);
// The same as JSON (indented when `pretty`), or nullopt if it cannot be printed.
std::optional<std::string> JsonForDisplay(const Resource& resource, bool pretty = false);

// Appends a protobuf varint / a length-delimited field to `out`.
void AppendVarint(uint64_t value, std::string* out);
void AppendLengthDelimited(uint32_t field_number, std::string_view bytes, std::string* out);

}  // namespace cxds
