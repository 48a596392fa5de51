// Micro-benchmarks of the push pipeline, each beside a baseline run in the same process:
//
//   PushQueue            enqueue / merge / dequeue+MarkDone of N connections, against a bare
//                        mutex-protected FIFO that neither merges nor tracks processing.
//   Generation           one incremental EDS push generated for P proxies through the shared
//                        ResourceCache (serialize once, hand out the same bytes), against
//                        serializing the assignment once per proxy (what a per-connection
//                        generator without a shared cache does).
//   Full CDS generation  all clusters for one proxy, cache warm, against serializing them.
//
// Loopback only; nothing here opens a socket.
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/mutex.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "pipeline/resource_cache.h"
#include "protocol/resource.h"
#include "protocol/type_url.h"
#include "server/push_queue.h"

namespace cxds {
namespace {

class NullTarget final : public PushTarget {
 public:
  void DeliverPush(PushRequestPtr) override {}
  std::string PushTargetName() const override { return "bench"; }
};

PushRequestPtr EndpointRequest(int i) {
  auto r = std::make_shared<PushRequest>();
  r->configs = {ConfigKey{"Endpoints", "default", "svc-" + std::to_string(i % 50)}};
  r->reasons = {{"endpoint", 1}};
  r->start = absl::UnixEpoch();
  return r;
}

// Enqueue N connections, then dequeue and mark each done (a long-lived queue, as in a server).
void BM_PushQueueEnqueueDequeue(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<NullTarget> targets(n);
  const PushRequestPtr request = EndpointRequest(1);
  PushQueue queue;
  for (auto _ : state) {
    for (auto& t : targets) queue.Enqueue(&t, request);
    while (auto item = queue.TryDequeue()) {
      queue.DeliveryFinished(item->target);
      queue.MarkDone(item->target);
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_PushQueueEnqueueDequeue)->Arg(1000)->Arg(10000);

// Baseline: a mutex-protected FIFO of (connection, request) with no merging.
void BM_BaselineFifo(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<NullTarget> targets(n);
  const PushRequestPtr request = EndpointRequest(1);
  Mutex mu;
  std::deque<std::pair<PushTarget*, PushRequestPtr>> fifo;
  for (auto _ : state) {
    for (auto& t : targets) {
      MutexLock lock(&mu);
      fifo.emplace_back(&t, request);
    }
    for (;;) {
      MutexLock lock(&mu);
      if (fifo.empty()) break;
      benchmark::DoNotOptimize(fifo.front().first);
      fifo.pop_front();
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_BaselineFifo)->Arg(1000)->Arg(10000);

// Ten requests per connection while it is pending: nine merges and one dequeue each.
void BM_PushQueueMerge(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<NullTarget> targets(n);
  std::vector<PushRequestPtr> requests;
  for (int i = 0; i < 10; ++i) requests.push_back(EndpointRequest(i));
  PushQueue queue;
  for (auto _ : state) {
    for (const PushRequestPtr& r : requests) {
      for (auto& t : targets) queue.Enqueue(&t, r);
    }
    while (auto item = queue.TryDequeue()) {
      queue.DeliveryFinished(item->target);
      queue.MarkDone(item->target);
    }
  }
  state.SetItemsProcessed(state.iterations() * n * 10);
}
BENCHMARK(BM_PushQueueMerge)->Arg(1000);

// A realistic ClusterLoadAssignment: `endpoints` endpoints in 3 localities.
envoy::config::endpoint::v3::ClusterLoadAssignment Assignment(const std::string& name, int endpoints, int seed) {
  envoy::config::endpoint::v3::ClusterLoadAssignment cla;
  cla.set_cluster_name(name);
  for (int z = 0; z < 3; ++z) {
    auto* locality = cla.add_endpoints();
    locality->mutable_locality()->set_region("local");
    locality->mutable_locality()->set_zone("zone-" + std::to_string(z));
    for (int e = z; e < endpoints; e += 3) {
      auto* lb = locality->add_lb_endpoints();
      auto* socket = lb->mutable_endpoint()->mutable_address()->mutable_socket_address();
      socket->set_address("127.0." + std::to_string((e / 250) % 250) + "." + std::to_string(e % 250 + 1));
      socket->set_port_value(static_cast<uint32_t>(8000 + seed));
      lb->mutable_load_balancing_weight()->set_value(1);
    }
  }
  return cla;
}

envoy::config::cluster::v3::Cluster ClusterMessage(const std::string& name) {
  envoy::config::cluster::v3::Cluster cluster;
  cluster.set_name(name);
  cluster.set_type(envoy::config::cluster::v3::Cluster::EDS);
  cluster.mutable_eds_cluster_config()->mutable_eds_config()->mutable_ads();
  cluster.mutable_connect_timeout()->set_seconds(1);
  cluster.set_lb_policy(envoy::config::cluster::v3::Cluster::LEAST_REQUEST);
  cluster.mutable_circuit_breakers()->add_thresholds()->mutable_max_connections()->set_value(1024);
  cluster.mutable_outlier_detection()->mutable_consecutive_5xx()->set_value(5);
  return cluster;
}

// One endpoint change reaching P proxies: each proxy's generator asks the shared cache.
void BM_GenerateEdsPushSharedCache(benchmark::State& state) {
  const int proxies = static_cast<int>(state.range(0));
  const auto cla = Assignment("outbound|80||svc.default.svc.cluster.local", 30, 1);
  const ConfigKey dep{"Endpoints", "default", "svc"};
  uint64_t sequence = 1;
  const uint64_t serializations_before = ResourceSerializationCount();
  ResourceCache cache;
  for (auto _ : state) {
    cache.Clear({dep}, ++sequence);  // the push invalidates the service's entries
    for (int p = 0; p < proxies; ++p) {
      auto resource = cache.GetOrBuild({std::string(kEndpointType), cla.cluster_name(), ""}, {dep}, sequence,
                                       [&]() { return Resource::FromMessage(cla); });
      benchmark::DoNotOptimize(resource);
    }
  }
  state.counters["serializations_per_push"] = benchmark::Counter(
      static_cast<double>(ResourceSerializationCount() - serializations_before) / state.iterations());
  state.SetItemsProcessed(state.iterations() * proxies);
}
BENCHMARK(BM_GenerateEdsPushSharedCache)->Arg(100)->Arg(1000);

// Baseline: the same push with the assignment serialized for every proxy.
void BM_GenerateEdsPushPerProxySerialization(benchmark::State& state) {
  const int proxies = static_cast<int>(state.range(0));
  const auto cla = Assignment("outbound|80||svc.default.svc.cluster.local", 30, 1);
  for (auto _ : state) {
    for (int p = 0; p < proxies; ++p) {
      auto resource = Resource::FromMessage(cla);
      benchmark::DoNotOptimize(resource);
    }
  }
  state.SetItemsProcessed(state.iterations() * proxies);
}
BENCHMARK(BM_GenerateEdsPushPerProxySerialization)->Arg(100)->Arg(1000);

// Full CDS for one proxy from a warm cache (what a full push costs per proxy when only some
// services changed), against serializing every cluster.
void BM_GenerateCdsWarmCache(benchmark::State& state) {
  const int clusters = static_cast<int>(state.range(0));
  std::vector<envoy::config::cluster::v3::Cluster> messages;
  for (int i = 0; i < clusters; ++i) messages.push_back(ClusterMessage("outbound|80||svc-" + std::to_string(i)));
  ResourceCache cache;
  auto generate = [&] {
    std::vector<ResourcePtr> out;
    out.reserve(messages.size());
    for (const auto& m : messages) {
      out.push_back(*cache.GetOrBuild({std::string(kClusterType), m.name(), "envoy"},
                                      {ConfigKey{"ServiceEntry", "default", m.name()}}, 1,
                                      [&]() { return Resource::FromMessage(m); }));
    }
    return out;
  };
  generate();  // warm
  for (auto _ : state) benchmark::DoNotOptimize(generate());
  state.SetItemsProcessed(state.iterations() * clusters);
}
BENCHMARK(BM_GenerateCdsWarmCache)->Arg(1000);

void BM_GenerateCdsSerializeAll(benchmark::State& state) {
  const int clusters = static_cast<int>(state.range(0));
  std::vector<envoy::config::cluster::v3::Cluster> messages;
  for (int i = 0; i < clusters; ++i) messages.push_back(ClusterMessage("outbound|80||svc-" + std::to_string(i)));
  for (auto _ : state) {
    std::vector<ResourcePtr> out;
    out.reserve(messages.size());
    for (const auto& m : messages) out.push_back(*Resource::FromMessage(m));
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * clusters);
}
BENCHMARK(BM_GenerateCdsSerializeAll)->Arg(1000);

}  // namespace
}  // namespace cxds

BENCHMARK_MAIN();
