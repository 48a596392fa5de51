// Generators: per type URL, what a proxy is sent. The pipeline calls a generator when a push
// reaches a proxy (after the PushQueue and throttle) and when a proxy subscribes to new names.
#pragma once

#include <any>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "envoy/config/core/v3/base.pb.h"
#include "pipeline/push_context.h"
#include "pipeline/resource_cache.h"
#include "protocol/resource.h"
#include "protocol/subscription.h"
#include "push/push_request.h"
#include "server/authenticator.h"

namespace cxds {

// The proxy a push is for, as its stream identified it.
struct Proxy {
  std::string id;
  envoy::config::core::v3::Node node;
  // Who the stream's authenticator proved the client to be (ProxyGenerator::Open);
  // `authenticated` false: nobody checked (plaintext).
  PeerIdentity identity;
};

// What the proxy subscribes to for one type.
struct WatchedResources {
  std::string type_url;
  bool wildcard = false;
  // Explicit names (with or without wildcard): the stream's own set, shared, not a copy.
  SubscribedNames names = NoSubscribedNames();

  bool Wants(const std::string& name) const { return wildcard || names->contains(name); }
};

struct GeneratedResources {
  std::vector<ResourcePtr> resources;
  // False: `resources` is everything of the type for this proxy (names not listed are gone).
  // True: only these resources changed; `removed` lists names that no longer exist.
  bool incremental = false;
  std::vector<std::string> removed;
};

// What generators share during one call: one generation of one proxy, every type it watches,
// one type after another on one thread.
struct GeneratorEnv {
  const PushContext& context;
  ResourceCache& cache;  // key resources by name and every other input (ResourceCacheKey)
  // What a model derives from the proxy once per generation, for all its types (the mesh model:
  // who the proxy is by its workload registry), so that every type of one generation sees the
  // same answer even if the model changes meanwhile. Empty at the start of each generation.
  mutable std::any per_proxy;
};

class Generator {
 public:
  virtual ~Generator() = default;
  // The resources of this type for `proxy`, or nullopt when the request does not concern this
  // type for this proxy (then nothing is sent for it: no response at all). `watched` is what
  // the proxy subscribes to; when the request has a delta scope, `watched` holds only the
  // newly subscribed names and an incremental result is expected. Called concurrently for
  // different proxies; implementations must be thread-safe.
  virtual absl::StatusOr<std::optional<GeneratedResources>> Generate(const Proxy& proxy,
                                                                     const WatchedResources& watched,
                                                                     const PushRequest& request,
                                                                     const GeneratorEnv& env) = 0;
};

// A generator for one kind of PushContext (a config model's own subclass). The context's kind
// is checked on every call, so a pipeline fed another builder's contexts gets an error for the
// push, never a wrong downcast; the implementation receives the context typed.
template <typename Context>
class TypedGenerator : public Generator {
 public:
  absl::StatusOr<std::optional<GeneratedResources>> Generate(const Proxy& proxy, const WatchedResources& watched,
                                                             const PushRequest& request,
                                                             const GeneratorEnv& env) final {
    const auto* context = dynamic_cast<const Context*>(&env.context);
    if (context == nullptr) {
      return absl::FailedPreconditionError("generator for " + watched.type_url +
                                           ": the push context is not of the kind this generator reads");
    }
    return GenerateFor(proxy, watched, request, *context, env);
  }

 protected:
  // As Generate, with the context typed (`env` gives the rest). Same threading rule.
  virtual absl::StatusOr<std::optional<GeneratedResources>> GenerateFor(const Proxy& proxy,
                                                                        const WatchedResources& watched,
                                                                        const PushRequest& request,
                                                                        const Context& context,
                                                                        const GeneratorEnv& env) = 0;
};

}  // namespace cxds
