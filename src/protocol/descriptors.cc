#include "protocol/descriptors.h"

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace cxds {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;

// The messages cxds sends and receives, and the types it packs into an Any (which no field
// walk can reach). Everything they reference is found from these.
constexpr std::string_view kRootTypes[] = {
    "envoy.service.discovery.v3.DiscoveryRequest",
    "envoy.service.discovery.v3.DiscoveryResponse",
    "envoy.service.discovery.v3.DeltaDiscoveryRequest",
    "envoy.service.discovery.v3.DeltaDiscoveryResponse",
    "envoy.service.discovery.v3.Resource",
    "envoy.service.status.v3.ClientStatusRequest",
    "envoy.service.status.v3.ClientStatusResponse",
    "envoy.config.cluster.v3.Cluster",
    "envoy.config.endpoint.v3.ClusterLoadAssignment",
    "envoy.config.listener.v3.Listener",
    "envoy.config.route.v3.RouteConfiguration",
    "envoy.extensions.transport_sockets.tls.v3.Secret",
    "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
    "envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
    "envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer",
    "envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport",
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
    "envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
    "envoy.extensions.filters.http.router.v3.Router",
    "envoy.extensions.filters.http.fault.v3.HTTPFault",
    "envoy.extensions.filters.http.cors.v3.Cors",
    "envoy.extensions.filters.http.cors.v3.CorsPolicy",
    "envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector",
    "envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate",
    "envoy.extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig",
    "envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
};

// Builds the closure of the root types' descriptors: a worklist, not recursion (the closure is
// hundreds of types deep in places), on the calling thread.
class Walker {
 public:
  void Add(const Descriptor* message) {
    if (message != nullptr && seen_messages_.insert(message).second) pending_.push_back(message);
  }

  void Run() {
    while (!pending_.empty()) {
      const Descriptor* message = pending_.back();
      pending_.pop_back();
      File(message->file());
      for (int i = 0; i < message->field_count(); ++i) Field(message->field(i));
      for (int i = 0; i < message->nested_type_count(); ++i) Add(message->nested_type(i));
      // The generated class's default instance and reflection are set up lazily too.
      if (const google::protobuf::Message* prototype =
              google::protobuf::MessageFactory::generated_factory()->GetPrototype(message)) {
        prototype->GetReflection();
      }
    }
  }

  int message_count() const { return static_cast<int>(seen_messages_.size()); }

 private:
  // type() is what resolves a lazily linked field; message_type() and enum_type() go through it.
  void Field(const FieldDescriptor* field) {
    if (field->type() == FieldDescriptor::TYPE_MESSAGE || field->type() == FieldDescriptor::TYPE_GROUP) {
      Add(field->message_type());
    } else if (field->type() == FieldDescriptor::TYPE_ENUM) {
      File(field->enum_type()->file());
    }
  }

  // A file's imports are also built lazily; the walk builds them and every message they define.
  void File(const FileDescriptor* file) {
    std::vector<const FileDescriptor*> files;
    if (file != nullptr && seen_files_.insert(file).second) files.push_back(file);
    while (!files.empty()) {
      const FileDescriptor* next = files.back();
      files.pop_back();
      for (int i = 0; i < next->dependency_count(); ++i) {
        const FileDescriptor* dependency = next->dependency(i);
        if (dependency != nullptr && seen_files_.insert(dependency).second) files.push_back(dependency);
      }
      for (int i = 0; i < next->message_type_count(); ++i) Add(next->message_type(i));
    }
  }

  std::vector<const Descriptor*> pending_;
  absl::flat_hash_set<const Descriptor*> seen_messages_;
  absl::flat_hash_set<const FileDescriptor*> seen_files_;
};

struct PreloadResult {
  absl::Status status;
  int count = 0;
};

// Once per process: the descriptors never change after they are built.
const PreloadResult& Preload() {
  static const PreloadResult* const result = [] {
    auto* out = new PreloadResult;
    const DescriptorPool* pool = DescriptorPool::generated_pool();
    Walker walker;
    for (std::string_view name : kRootTypes) {
      const Descriptor* root = pool->FindMessageTypeByName(std::string(name));
      if (root == nullptr) {
        out->status =
            absl::NotFoundError(absl::StrCat("message type ", std::string(name), " is not linked into this binary"));
        return out;
      }
      walker.Add(root);
    }
    walker.Run();
    out->count = walker.message_count();
    return out;
  }();
  return *result;
}

}  // namespace

absl::Status PreloadXdsDescriptors() { return Preload().status; }

int PreloadedDescriptorCount() { return Preload().count; }

}  // namespace cxds
