// A small config model for pipeline tests: services (name -> EDS cluster) live in the
// PushContext; endpoints (service -> ports) live outside it, in an index the EDS generator
// reads, as in istiod. CDS and EDS generators serialize through the ResourceCache.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/strings.h"
#include "fakes/test_resources.h"
#include "model/mesh_kinds.h"
#include "pipeline/generator.h"
#include "pipeline/push_context.h"
#include "protocol/type_url.h"

namespace cxds::testing {

inline ConfigKey ServiceKey(const std::string& name) { return {kind::kServiceEntry, "default", name}; }
inline ConfigKey EndpointsKey(const std::string& name) { return {kind::kEndpoints, "default", name}; }

// What the config source holds. Thread-safe.
class TestModel {
 public:
  void SetService(const std::string& name) {
    MutexLock lock(&mu_);
    services_.insert(name);
  }
  void RemoveService(const std::string& name) {
    MutexLock lock(&mu_);
    services_.erase(name);
  }
  void SetEndpoints(const std::string& service, std::vector<uint32_t> ports) {
    MutexLock lock(&mu_);
    endpoints_[service] = std::move(ports);
  }
  std::set<std::string> services() const {
    MutexLock lock(&mu_);
    return services_;
  }
  std::vector<uint32_t> endpoints(const std::string& service) const {
    MutexLock lock(&mu_);
    auto it = endpoints_.find(service);
    return it == endpoints_.end() ? std::vector<uint32_t>{} : it->second;
  }

 private:
  mutable Mutex mu_;
  std::set<std::string> services_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<uint32_t>> endpoints_ ABSL_GUARDED_BY(mu_);
};

class TestContext final : public PushContext {
 public:
  TestContext(std::string version, uint64_t sequence, absl::Time created, std::set<std::string> services)
      : PushContext(std::move(version), sequence, created), services(std::move(services)) {}
  const std::set<std::string> services;
};

class TestContextBuilder final : public PushContextBuilder {
 public:
  explicit TestContextBuilder(const TestModel& model) : model_(model) {}
  absl::StatusOr<std::shared_ptr<const PushContext>> Build(const PushContext* previous, const PushRequest& request,
                                                           uint64_t sequence, absl::Time now) override {
    builds++;
    if (fail) return absl::InvalidArgumentError("test: the model is broken");
    std::set<std::string> services = model_.services();
    std::string content;
    for (const std::string& name : services) content += name + "\n";
    return std::make_shared<TestContext>(ContentHash(content).substr(0, 16), sequence, now, std::move(services));
  }
  std::atomic<int> builds{0};
  std::atomic<bool> fail{false};

 private:
  const TestModel& model_;
};

// CDS: one EDS cluster per service. Not concerned by endpoint-only pushes.
class TestClusterGenerator final : public Generator {
 public:
  absl::StatusOr<std::optional<GeneratedResources>> Generate(const Proxy& proxy, const WatchedResources& watched,
                                                             const PushRequest& request,
                                                             const GeneratorEnv& env) override {
    calls++;
    if (request.EndpointOnly()) return std::nullopt;
    const auto& context = static_cast<const TestContext&>(env.context);
    GeneratedResources out;
    for (const std::string& name : context.services) {
      absl::StatusOr<ResourcePtr> resource =
          env.cache.GetOrBuild({std::string(kClusterType), name, ""}, {ServiceKey(name)}, request.push_sequence,
                               [&]() -> absl::StatusOr<ResourcePtr> { return EdsCluster(name); });
      if (!resource.ok()) return resource.status();
      out.resources.push_back(*resource);
    }
    return out;
  }
  std::atomic<int> calls{0};
};

// EDS: one ClusterLoadAssignment per watched service. An endpoint-only push regenerates only
// the services whose endpoints changed (an incremental result).
class TestEndpointGenerator final : public Generator {
 public:
  explicit TestEndpointGenerator(const TestModel& model) : model_(model) {}
  absl::StatusOr<std::optional<GeneratedResources>> Generate(const Proxy& proxy, const WatchedResources& watched,
                                                             const PushRequest& request,
                                                             const GeneratorEnv& env) override {
    calls++;
    {
      MutexLock lock(&mu_);
      last_watched_ = std::set<std::string>(watched.names->begin(), watched.names->end());
    }
    const auto& context = static_cast<const TestContext&>(env.context);
    GeneratedResources out;
    std::vector<std::string> names;
    if (request.EndpointOnly()) {
      out.incremental = true;
      for (const ConfigKey& key : request.configs) {
        if (watched.Wants(key.name) && context.services.contains(key.name)) names.push_back(key.name);
      }
      if (names.empty()) return std::nullopt;
    } else {
      out.incremental = request.delta_scope.has_value();
      for (const std::string& name : context.services) {
        if (watched.Wants(name)) names.push_back(name);
      }
    }
    for (const std::string& name : names) {
      absl::StatusOr<ResourcePtr> resource = env.cache.GetOrBuild(
          {std::string(kEndpointType), name, ""}, {ServiceKey(name), EndpointsKey(name)}, request.push_sequence,
          [&]() -> absl::StatusOr<ResourcePtr> { return Endpoints(name, model_.endpoints(name)); });
      if (!resource.ok()) return resource.status();
      out.resources.push_back(*resource);
    }
    return out;
  }
  std::atomic<int> calls{0};
  // The names the last call was asked for (narrowed by a delta scope).
  std::set<std::string> last_watched() const {
    MutexLock lock(&mu_);
    return last_watched_;
  }

 private:
  const TestModel& model_;
  mutable Mutex mu_;
  std::set<std::string> last_watched_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cxds::testing
