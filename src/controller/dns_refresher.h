// DnsRefresher: resolves the names of DNS ServiceEntries for proxyless gRPC nodes, which take
// endpoints from xDS only (Envoy resolves them itself: STRICT_DNS / LOGICAL_DNS clusters).
//
// Every `interval` it resolves each name MeshModel::NamesToResolve lists (at most
// `max_names`), gives the results to MeshModel::SetResolvedNames and, when a host's endpoints
// changed, queues that endpoint-only push on the pipeline. A name that fails to resolve keeps
// its last addresses (and is logged when its error changes), so a DNS outage does not empty a
// cluster; a name no longer listed is forgotten.
//
// The resolver is injected: tests resolve from a table, on a simulated scheduler, with no
// network. Threading: Refresh and the timer run on `scheduler`'s thread (give it one of its
// own: the system resolver blocks); Start/Stop on the owner's thread.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/scheduler.h"
#include "config/config_store.h"
#include "model/mesh_model.h"
#include "pipeline/push_pipeline.h"

namespace cxds {

// Resolves a name to its IP addresses.
class NameResolver {
 public:
  virtual ~NameResolver() = default;
  virtual absl::StatusOr<std::vector<std::string>> Resolve(const std::string& name) = 0;
};

// getaddrinfo (blocking): IPv4 addresses first, at most 64, deduplicated.
std::unique_ptr<NameResolver> SystemNameResolver();

class DnsRefresher {
 public:
  struct Options {
    absl::Duration interval = absl::Seconds(30);
    size_t max_names = 1000;
  };

  DnsRefresher(Options options, const ConfigStore& store, MeshModel& model, PushPipeline& pipeline,
               NameResolver& resolver, Scheduler& scheduler);
  ~DnsRefresher();  // no refresh runs after this returns
  DnsRefresher(const DnsRefresher&) = delete;
  DnsRefresher& operator=(const DnsRefresher&) = delete;

  // Resolves every name now and updates the model; returns the push that needs (the caller
  // queues it, or makes it part of its first push). Call on the scheduler's thread, or before
  // Start.
  PushRequest Refresh();
  // Refreshes at once, then every `interval`, queueing the pushes, on the scheduler's thread:
  // the caller never waits on DNS.
  void Start();

 private:
  void Tick();

  const Options options_;
  const ConfigStore& store_;
  MeshModel& model_;
  PushPipeline& pipeline_;
  NameResolver& resolver_;
  ResolvedNames last_;                         // Refresh only
  std::map<std::string, std::string> errors_;  // Refresh only: the last error logged per name
  PeriodicTask ticks_;                         // last: stops first
};

}  // namespace cxds
