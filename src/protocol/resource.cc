#include "protocol/resource.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "absl/strings/escaping.h"
#include "common/strings.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/json_util.h"
#include "protocol/type_url.h"

namespace cxds {

namespace {
std::atomic<uint64_t> g_serializations{0};

std::string SerializeDeterministic(const google::protobuf::Message& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  g_serializations.fetch_add(1, std::memory_order_relaxed);
  return out;
}
}  // namespace

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void AppendLengthDelimited(uint32_t field_number, std::string_view bytes, std::string* out) {
  AppendVarint((static_cast<uint64_t>(field_number) << 3) | 2, out);
  AppendVarint(bytes.size(), out);
  out->append(bytes.data(), bytes.size());
}

std::string ResourceNameOf(const google::protobuf::Message& message) {
  if (const auto* cla = dynamic_cast<const envoy::config::endpoint::v3::ClusterLoadAssignment*>(&message)) {
    return cla->cluster_name();
  }
  const google::protobuf::FieldDescriptor* field = message.GetDescriptor()->FindFieldByName("name");
  if (field == nullptr || field->is_repeated() || field->type() != google::protobuf::FieldDescriptor::TYPE_STRING) {
    return "";
  }
  return message.GetReflection()->GetString(message, field);
}

std::string ContentHash(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), 16));
}

struct ContentHasher::State {
  ~State() { EVP_MD_CTX_free(context); }
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  std::string fallback;  // the bytes, when OpenSSL could not give a digest context
};

ContentHasher::ContentHasher() : state_(std::make_unique<State>()) {
  // Only allocation can fail here; then the bytes are kept and hashed whole by Finish().
  if (state_->context != nullptr && EVP_DigestInit_ex(state_->context, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(state_->context);
    state_->context = nullptr;
  }
}
ContentHasher::~ContentHasher() = default;

void ContentHasher::Update(std::string_view bytes) {
  // SHA-256 over an initialised context does not fail.
  if (state_->context != nullptr) {
    EVP_DigestUpdate(state_->context, bytes.data(), bytes.size());
  } else {
    state_->fallback.append(bytes);
  }
}

std::string ContentHasher::Finish() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (state_->context == nullptr) return ContentHash(state_->fallback);
  if (EVP_DigestFinal_ex(state_->context, digest, &length) != 1 || length < 16) return ContentHash("");
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), 16));
}

uint64_t ResourceSerializationCount() { return g_serializations.load(std::memory_order_relaxed); }

absl::StatusOr<ResourcePtr> Resource::Create(std::unique_ptr<google::protobuf::Message> message,
                                             std::optional<absl::Duration> ttl) {
  if (message == nullptr) {
    return absl::InvalidArgumentError("resource message is null");
  }
  std::string name = ResourceNameOf(*message);
  const std::string type_url = TypeUrlOf(message->GetDescriptor()->full_name());
  if (name.empty()) {
    return absl::InvalidArgumentError(StrCat("resource of type ", type_url, " has no name"));
  }
  if (ttl.has_value() && *ttl <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(StrCat("resource ", name, " has a non-positive TTL"));
  }
  std::shared_ptr<Resource> resource(new Resource());
  resource->type_url_ = type_url;
  resource->name_ = std::move(name);
  resource->serialized_ = SerializeDeterministic(*message);
  resource->content_version_ = ContentHash(resource->serialized_);
  std::string any;
  AppendLengthDelimited(1, resource->type_url_, &any);
  AppendLengthDelimited(2, resource->serialized_, &any);
  AppendLengthDelimited(2, any, &resource->encoded_any_field_);
  resource->ttl_ = ttl;
  resource->message_ = std::move(message);
  return resource;
}

std::string EncodeDuration(absl::Duration d) {
  std::string out;
  const int64_t seconds = absl::ToInt64Seconds(d);
  const int64_t nanos = absl::ToInt64Nanoseconds(d - absl::Seconds(seconds));
  if (seconds != 0) {
    AppendVarint(1 << 3, &out);
    AppendVarint(static_cast<uint64_t>(seconds), &out);
  }
  if (nanos != 0) {
    AppendVarint(2 << 3, &out);
    AppendVarint(static_cast<uint64_t>(nanos), &out);
  }
  return out;
}

namespace {
// discovery.v3.Resource fields: version 1, resource 2, name 3, ttl 6.
std::string EncodeDiscoveryResource(const Resource& r, bool with_body, bool with_ttl) {
  std::string out;
  AppendLengthDelimited(3, r.name(), &out);
  AppendLengthDelimited(1, r.content_version(), &out);
  if (with_body) {
    std::string any;
    AppendLengthDelimited(1, r.type_url(), &any);
    AppendLengthDelimited(2, r.serialized(), &any);
    AppendLengthDelimited(2, any, &out);
  }
  if (with_ttl && r.ttl().has_value()) AppendLengthDelimited(6, EncodeDuration(*r.ttl()), &out);
  return out;
}

// A DiscoveryResponse `resources` entry holding a wrapped discovery Resource.
std::string WrapForSotw(const std::string& resource_bytes) {
  std::string any;
  AppendLengthDelimited(1, kResourceWrapperType, &any);
  AppendLengthDelimited(2, resource_bytes, &any);
  std::string out;
  AppendLengthDelimited(2, any, &out);
  return out;
}
}  // namespace

const std::string& Resource::encoded_delta_field(bool with_ttl) const {
  const int i = with_ttl && ttl_.has_value() ? 1 : 0;
  std::call_once(delta_once_[i], [&] {
    AppendLengthDelimited(2, EncodeDiscoveryResource(*this, /*with_body=*/true, i == 1), &encoded_delta_field_[i]);
  });
  return encoded_delta_field_[i];
}

const std::string& Resource::encoded_sotw_ttl_field() const {
  std::call_once(sotw_ttl_once_, [&] {
    encoded_sotw_ttl_field_ = WrapForSotw(EncodeDiscoveryResource(*this, /*with_body=*/true, /*with_ttl=*/true));
  });
  return encoded_sotw_ttl_field_;
}

std::string EncodeDeltaHeartbeat(const Resource& resource) {
  std::string out;
  AppendLengthDelimited(2, EncodeDiscoveryResource(resource, /*with_body=*/false, /*with_ttl=*/true), &out);
  return out;
}

std::string EncodeSotwHeartbeat(const Resource& resource) {
  return WrapForSotw(EncodeDiscoveryResource(resource, /*with_body=*/false, /*with_ttl=*/true));
}

absl::StatusOr<ResourcePtr> Resource::FromMessage(const google::protobuf::Message& message,
                                                  std::optional<absl::Duration> ttl) {
  std::unique_ptr<google::protobuf::Message> copy(message.New());
  copy->CopyFrom(message);
  return Create(std::move(copy), ttl);
}

const google::protobuf::Message& MessageForDisplay(const Resource& resource,
                                                   std::unique_ptr<google::protobuf::Message>& holder) {
  using envoy::extensions::transport_sockets::tls::v3::Secret;
  if (resource.type_url() != kSecretType) return resource.message();
  const auto* secret = dynamic_cast<const Secret*>(&resource.message());
  if (secret == nullptr) return resource.message();
  auto copy = std::make_unique<Secret>(*secret);
  bool redacted = false;
  // Inline material only: a file name or an environment variable's name is no secret.
  const auto redact = [&](envoy::config::core::v3::DataSource* source) {
    if (!source->has_inline_bytes() && !source->has_inline_string()) return;
    source->set_inline_string("[redacted]");
    redacted = true;
  };
  if (copy->has_tls_certificate()) {
    auto* certificate = copy->mutable_tls_certificate();
    if (certificate->has_private_key()) redact(certificate->mutable_private_key());
    if (certificate->has_password()) redact(certificate->mutable_password());
  }
  if (copy->has_generic_secret()) redact(copy->mutable_generic_secret()->mutable_secret());
  if (copy->has_session_ticket_keys()) {
    for (auto& key : *copy->mutable_session_ticket_keys()->mutable_keys()) redact(&key);
  }
  if (!redacted) return resource.message();
  holder = std::move(copy);
  return *holder;
}

std::optional<std::string> JsonForDisplay(const Resource& resource, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  std::unique_ptr<google::protobuf::Message> holder;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(MessageForDisplay(resource, holder), &json, options).ok()) {
    return std::nullopt;
  }
  return json;
}

std::string SerializedForDisplay(const Resource& resource) {
  std::unique_ptr<google::protobuf::Message> holder;
  const google::protobuf::Message& message = MessageForDisplay(resource, holder);
  if (&message == &resource.message()) return resource.serialized();
  std::string out;
  message.SerializeToString(&out);
  return out;
}

}  // namespace cxds
