// DeltaSotwDifferentialTest: the Delta stream against the State-of-the-World stream, on the same
// SnapshotCache node and the same subscriptions, after every step of seeded random sequences of
// configuration changes and subscription changes.
//
// Two clients watch one node: a SotW ADS client (StreamHarness) and a Delta ADS client
// (DeltaHarness). CDS and LDS are wildcard on both; EDS and RDS subscribe to names that change
// during the run (including names that never exist). Both clients are faithful: every response
// is applied to what the client holds and ACKed. After every step, with both streams settled,
// what the clients hold is compared with each other and with the snapshot:
//  - CDS and LDS: both hold exactly the snapshot's names, with the snapshot's bytes (SotW gets
//    the full state in every response, so it is the reference);
//  - EDS and RDS: both hold every subscribed name that exists, with the snapshot's bytes; the
//    Delta client holds no name that is unsubscribed or gone (SotW cannot say "deleted" for
//    these types, so that is not required of the SotW client);
//  - Delta versions are the content versions of the snapshot's resources.
// The Delta client may not receive a resource of a non-wildcard type after it unsubscribed it
// (a response written before the unsubscribe may carry it: the client ignores it).
//
// What each client holds is modelled here, not taken from the harnesses:
//  - SotW: CDS/LDS responses replace what is held; EDS/RDS responses upsert; a name the client
//    unsubscribes is dropped by the client, and resources it does not subscribe to are
//    ignored (docs/protocol-rules.md, R4.1).
//  - Delta: resources upsert, removed_resources erase; a name the client unsubscribes is
//    dropped by the client (R10.3: the server owes no reply), and resources of names it does
//    not subscribe to are ignored. DeltaHarness::held() only follows responses, so it keeps
//    unsubscribed names; that is why the model is kept here.
//
// Each client is compared with the snapshot (so with the other), which tells which one went
// wrong. A mismatch reports the seed, the step and the sequence of actions that led to it. A
// Delta mismatch ends its seed; a SotW-only one is reported and the seed goes on, so the Delta
// client is checked at every step whatever the SotW stream does.
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cache/snapshot_cache.h"
#include "common/logging.h"
#include "common/status_matchers.h"
#include "fakes/delta_harness.h"
#include "fakes/stream_harness.h"
#include "fakes/test_resources.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using namespace cxds::testing;  // NOLINT

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);
const std::string kLds(kListenerType);
const std::string kRds(kRouteType);

constexpr char kNode[] = "node-a";
constexpr int kVariants = 4;  // content variants per resource; a "modify" may keep the content

// The names resources may have. Cluster c4 names its ClusterLoadAssignment "c4-svc" through
// eds_cluster_config.service_name; the others use the cluster name.
const std::vector<std::string> kClusterNames = {"c0", "c1", "c2", "c3", "c4"};
const std::vector<std::string> kClaNames = {"c0", "c1", "c2", "c3", "c4-svc"};
const std::vector<std::string> kListenerNames = {"l0", "l1", "l2"};
const std::vector<std::string> kRouteNames = {"r0", "r1", "r2", "r3"};
// The names clients subscribe to: every name that can exist plus some that never do ("c4" is a
// cluster, never a CLA).
const std::vector<std::string> kEdsPool = {"c0", "c1", "c2", "c3", "c4-svc", "c4", "ghost-eds"};
const std::vector<std::string> kRdsPool = {"r0", "r1", "r2", "r3", "ghost-rds"};

// ShortTypeName as a std::string (Debian's absl::StrCat does not take std::string_view).
std::string TypeName(const std::string& type_url) { return std::string(ShortTypeName(type_url)); }

std::string ClaNameOf(const std::string& cluster) { return cluster == "c4" ? "c4-svc" : cluster; }

// The configuration as name -> content variant per type; the snapshot is built from it.
struct Config {
  std::map<std::string, int> clusters;
  std::map<std::string, int> endpoints;
  std::map<std::string, int> listeners;
  std::map<std::string, int> routes;
};

ResourcePtr BuildCluster(const std::string& name, int variant) {
  return EdsCluster(name, name == "c4" ? "c4-svc" : "", 1 + variant);
}

ResourcePtr BuildEndpoints(const std::string& name, int variant) {
  std::vector<uint32_t> ports;
  for (int i = 0; i <= variant % 3; ++i) ports.push_back(static_cast<uint32_t>(8000 + 10 * variant + i));
  return Endpoints(name, ports);
}

ResourcePtr BuildListener(const std::string& name, int variant) {
  const std::string& route = kRouteNames[variant % kRouteNames.size()];
  if (name == "l2") return ApiListener(name, route);
  return HttpListener(name, route, static_cast<uint32_t>(10000 + 100 * (name == "l1") + variant));
}

ResourcePtr BuildRoutes(const std::string& name, int variant) {
  static const std::vector<std::vector<std::string>> kTargets = {{"c0"}, {"c1", "c2"}, {"c3"}, {"c0", "c4"}};
  return Routes(name, kTargets[variant % kTargets.size()]);
}

SnapshotPtr BuildSnapshot(const Config& config, const std::string& version) {
  std::vector<ResourcePtr> resources;
  for (const auto& [name, variant] : config.clusters) resources.push_back(BuildCluster(name, variant));
  for (const auto& [name, variant] : config.endpoints) resources.push_back(BuildEndpoints(name, variant));
  for (const auto& [name, variant] : config.listeners) resources.push_back(BuildListener(name, variant));
  for (const auto& [name, variant] : config.routes) resources.push_back(BuildRoutes(name, variant));
  return MustSnapshot(version, std::move(resources));
}

std::vector<std::string> Sorted(const std::set<std::string>& names) { return {names.begin(), names.end()}; }

// name -> resource bytes (and, for Delta, the version the client holds).
struct Held {
  std::string version;
  std::string bytes;
};
using HeldMap = std::map<std::string, Held>;

// A faithful SotW ADS client: subscribes with full name lists, ACKs every response with its
// current names (version_info and nonce of that response), and keeps what it holds.
class SotwClient {
 public:
  explicit SotwClient(SnapshotCache& cache) : harness_(cache, "", nullptr, kNode, 1) {}

  // CDS and LDS wildcard; EDS and RDS `eds` / `rds` (a type with no names is not requested).
  void Start(const std::set<std::string>& eds, const std::set<std::string>& rds) {
    harness_.Send(Request(kCds, {}));
    names_[kEds] = eds;
    if (!eds.empty()) harness_.Send(Request(kEds, Sorted(eds)));
    harness_.Send(Request(kLds, {}));
    names_[kRds] = rds;
    if (!rds.empty()) harness_.Send(Request(kRds, Sorted(rds)));
  }

  // Changes the subscription of a non-wildcard type to `names`, as a real client does: a
  // request with the new list, the type's accepted version and last nonce. Nothing is sent if
  // the list does not change.
  void SetNames(const std::string& type_url, const std::set<std::string>& names) {
    std::set<std::string>& current = names_[type_url];
    if (names == current) return;
    for (const std::string& name : current) {
      if (!names.contains(name)) held_[type_url].erase(name);  // the client drops it
    }
    current = names;
    harness_.Send(Request(type_url, Sorted(names), accepted_[type_url], nonce_[type_url]));
  }

  // Takes and ACKs responses until the stream has nothing more to say. Returns what went
  // wrong on the way ("" if nothing).
  std::string Settle() {
    std::string problems = std::move(problems_);
    problems_.clear();
    for (int round = 0; round < 100; ++round) {
      std::vector<DiscoveryResponse> responses = harness_.Take();
      if (responses.empty()) return problems;
      for (const DiscoveryResponse& response : responses) {
        Apply(response);
        const std::string& type_url = response.type_url();
        accepted_[type_url] = response.version_info();
        nonce_[type_url] = response.nonce();
        const bool wildcard = IsWildcardCapableType(type_url);
        harness_.Send(Ack(response, wildcard ? std::vector<std::string>{} : Sorted(names_[type_url])));
      }
    }
    return problems + "the SotW stream did not settle in 100 rounds; ";
  }

  const HeldMap& held(const std::string& type_url) { return held_[type_url]; }
  bool finished() { return harness_.transport().finished.has_value(); }

 private:
  void Apply(const DiscoveryResponse& response) {
    const std::string& type_url = response.type_url();
    HeldMap& held = held_[type_url];
    if (IsFullStateType(type_url)) held.clear();  // the response is the whole state
    std::vector<std::string> names = NamesOf(response);
    for (int i = 0; i < response.resources_size(); ++i) {
      // The client ignores resources it did not ask for (R4.1). The server may legitimately
      // send them: a name list change in a request with a stale nonce waits for the next ACK
      // (R3.1), so this is not checked for SotW.
      if (!IsFullStateType(type_url) && !names_[type_url].contains(names[i])) continue;
      held[names[i]] = Held{"", response.resources(i).value()};
    }
  }

  StreamHarness harness_;
  std::map<std::string, std::set<std::string>> names_;  // non-wildcard types only
  std::map<std::string, std::string> accepted_;
  std::map<std::string, std::string> nonce_;
  std::map<std::string, HeldMap> held_;
  std::string problems_;  // reported by the next Settle()
};

// A faithful Delta ADS client: subscribes and unsubscribes name by name, ACKs every response,
// and keeps what it holds.
class DeltaClient {
 public:
  explicit DeltaClient(SnapshotCache& cache) : harness_(cache, kNode, 2) {}

  // CDS and LDS wildcard (legacy: empty subscribe; or explicit "*"); EDS and RDS by name.
  void Start(bool explicit_wildcard, const std::set<std::string>& eds, const std::set<std::string>& rds) {
    const std::vector<std::string> wildcard =
        explicit_wildcard ? std::vector<std::string>{"*"} : std::vector<std::string>{};
    harness_.Send(DeltaRequest(kCds, wildcard));
    names_[kEds] = eds;
    if (!eds.empty()) Open(kEds, Sorted(eds));
    harness_.Send(DeltaRequest(kLds, wildcard));
    names_[kRds] = rds;
    if (!rds.empty()) Open(kRds, Sorted(rds));
  }

  // `with_nonce`: the request also ACKs the type's last response (R10.1 allows both at once).
  void Subscribe(const std::string& type_url, const std::string& name, bool with_nonce) {
    names_[type_url].insert(name);
    if (!started_.contains(type_url)) {
      Open(type_url, {name});
      return;
    }
    harness_.Send(DeltaRequest(type_url, {name}, {}, with_nonce ? nonce_[type_url] : ""));
  }

  void Unsubscribe(const std::string& type_url, const std::string& name, bool with_nonce) {
    names_[type_url].erase(name);
    held_[type_url].erase(name);  // the client drops it; the server owes no reply (R10.3)
    // Before its first request for the type the client has nothing to say (and the server has
    // sent nothing of the type). (A first request with an empty subscribe list would be a
    // legacy wildcard on LDS/CDS.)
    if (!started_.contains(type_url)) {
      dropped_at_[type_url].erase(name);
      return;
    }
    dropped_at_[type_url][name] = harness_.sent();  // the index of the request below
    harness_.Send(DeltaRequest(type_url, {}, {name}, with_nonce ? nonce_[type_url] : ""));
  }

  // As DeltaHarness::Settle, applying each response to the client model on the way.
  std::string Settle() {
    std::string problems;
    for (int round = 0; round < 100; ++round) {
      std::vector<DeltaDiscoveryResponse> responses = harness_.Take();
      if (responses.empty()) return problems;
      for (const DeltaDiscoveryResponse& response : responses) {
        absl::StrAppend(&problems, Apply(response, taken_++));
        nonce_[response.type_url()] = response.nonce();
        harness_.Ack(response);
      }
    }
    return problems + "the Delta stream did not settle in 100 rounds; ";
  }

  const HeldMap& held(const std::string& type_url) { return held_[type_url]; }
  bool finished() { return harness_.transport().finished.has_value(); }

 private:
  void Open(const std::string& type_url, std::vector<std::string> names) {
    started_.insert(type_url);
    harness_.Send(DeltaRequest(type_url, std::move(names)));
  }

  // `index`: the response's position among every response written on the stream.
  std::string Apply(const DeltaDiscoveryResponse& response, size_t index) {
    std::string problems;
    const std::string& type_url = response.type_url();
    HeldMap& held = held_[type_url];
    for (const auto& resource : response.resources()) {
      if (!IsWildcardCapableType(type_url) && !names_[type_url].contains(resource.name())) {
        // Ignored by the client. One written before the server took the client's unsubscribe
        // crossed it (a round is written whole before a request is taken); one written after
        // is a server error.
        auto dropped = dropped_at_[type_url].find(resource.name());
        const std::optional<size_t> taken_at = dropped == dropped_at_[type_url].end()
                                                   ? std::optional<size_t>(0)
                                                   : harness_.WritesWhenTaken(dropped->second);
        if (taken_at.has_value() && index >= *taken_at) {
          absl::StrAppend(&problems, "Delta ", TypeName(type_url), " response carries unsubscribed ", resource.name(),
                          "; ");
        }
        continue;
      }
      held[resource.name()] = Held{resource.version(), resource.resource().value()};
    }
    for (const std::string& name : response.removed_resources()) held.erase(name);
    return problems;
  }

  DeltaHarness harness_;
  std::map<std::string, std::set<std::string>> names_;  // non-wildcard types only
  std::set<std::string> started_;
  std::map<std::string, std::string> nonce_;
  std::map<std::string, HeldMap> held_;
  // type -> name -> number of responses written when the client last unsubscribed the name.
  std::map<std::string, std::map<std::string, size_t>> dropped_at_;  // name -> index of its unsubscribe request
  size_t taken_ = 0;                                                 // responses taken so far
};

// What went wrong at one step, per client (each is compared with the snapshot, so a mismatch
// between them is attributed to the client that does not hold the configuration).
struct Problems {
  std::string sotw;
  std::string delta;
  bool empty() const { return sotw.empty() && delta.empty(); }
  std::string All() const {
    return absl::StrCat(sotw.empty() ? "" : "SotW: ", sotw, delta.empty() ? "" : "Delta: ", delta);
  }
};

// Both clients on one node, with the configuration and the subscriptions they share.
class Differential {
 public:
  Differential(Config config, std::set<std::string> eds, std::set<std::string> rds, bool explicit_wildcard,
               bool snapshot_before_clients)
      : cache_(SnapshotCache::Options{ConsistencyPolicy::kNone, nullptr, nullptr}),
        config_(std::move(config)),
        sotw_(cache_),
        delta_(cache_) {
    names_[kEds] = std::move(eds);
    names_[kRds] = std::move(rds);
    Note(absl::StrCat("start eds=[", absl::StrJoin(names_[kEds], ","), "] rds=[", absl::StrJoin(names_[kRds], ","),
                      "] wildcard=", explicit_wildcard ? "\"*\"" : "legacy",
                      snapshot_before_clients ? "" : " (snapshot after the first requests)"));
    if (snapshot_before_clients) Publish();
    sotw_.Start(names_[kEds], names_[kRds]);
    delta_.Start(explicit_wildcard, names_[kEds], names_[kRds]);
    if (!snapshot_before_clients) Publish();
  }

  Config& config() { return config_; }

  // Sets the snapshot of `config()` at a new version. Streams are not settled: several
  // publications may reach them before the clients take anything.
  void Publish(const std::string& what = "") {
    const std::string version = absl::StrCat("v", ++version_);
    Note(absl::StrCat("publish ", version, what.empty() ? "" : ": ", what));
    snapshot_ = BuildSnapshot(config_, version);
    EXPECT_OK(cache_.SetSnapshot(kNode, snapshot_));
  }

  void Subscribe(const std::string& type_url, const std::string& name, bool with_nonce = false) {
    Note(absl::StrCat("subscribe ", TypeName(type_url), " ", name, with_nonce ? " (with nonce)" : ""));
    names_[type_url].insert(name);
    sotw_.SetNames(type_url, names_[type_url]);
    delta_.Subscribe(type_url, name, with_nonce);
  }

  void Unsubscribe(const std::string& type_url, const std::string& name, bool with_nonce = false) {
    Note(absl::StrCat("unsubscribe ", TypeName(type_url), " ", name, with_nonce ? " (with nonce)" : ""));
    names_[type_url].erase(name);
    sotw_.SetNames(type_url, names_[type_url]);
    delta_.Unsubscribe(type_url, name, with_nonce);
  }

  const std::set<std::string>& names(const std::string& type_url) { return names_[type_url]; }

  // Settles both streams and compares what the clients hold with the snapshot.
  Problems SettleAndCompare() {
    Problems problems{sotw_.Settle(), delta_.Settle()};
    if (sotw_.finished()) absl::StrAppend(&problems.sotw, "the SotW stream ended; ");
    if (delta_.finished()) absl::StrAppend(&problems.delta, "the Delta stream ended; ");
    for (const std::string& type_url : {kCds, kLds}) CompareFullState(type_url, problems);
    for (const std::string& type_url : {kEds, kRds}) CompareNamed(type_url, problems);
    return problems;
  }

  std::string Trace() const { return absl::StrJoin(trace_, "\n  "); }
  void Note(std::string line) { trace_.push_back(std::move(line)); }

 private:
  const Snapshot::TypeResources& Current(const std::string& type_url) {
    static const Snapshot::TypeResources kEmpty;
    const Snapshot::TypeResources* resources = snapshot_ != nullptr ? snapshot_->resources(type_url) : nullptr;
    return resources != nullptr ? *resources : kEmpty;
  }

  // The Delta client's copy of `resource` must be its bytes at its content version.
  void CheckDeltaCopy(const std::string& type_url, const ResourcePtr& resource, std::string& problems) {
    const HeldMap& held = delta_.held(type_url);
    auto it = held.find(resource->name());
    const std::string type = TypeName(type_url);
    if (it == held.end()) {
      absl::StrAppend(&problems, type, ": the Delta client lacks ", resource->name(), "; ");
    } else if (it->second.bytes != resource->serialized()) {
      absl::StrAppend(&problems, type, ": the Delta client holds stale bytes of ", resource->name(), "; ");
    } else if (it->second.version != resource->content_version()) {
      absl::StrAppend(&problems, type, ": the Delta client holds ", resource->name(), " at version ",
                      it->second.version, ", not its content version ", resource->content_version(), "; ");
    }
  }

  void CheckSotwCopy(const std::string& type_url, const ResourcePtr& resource, std::string& problems) {
    const HeldMap& held = sotw_.held(type_url);
    auto it = held.find(resource->name());
    const std::string type = TypeName(type_url);
    if (it == held.end()) {
      absl::StrAppend(&problems, type, ": the SotW client lacks ", resource->name(), "; ");
    } else if (it->second.bytes != resource->serialized()) {
      absl::StrAppend(&problems, type, ": the SotW client holds stale bytes of ", resource->name(), "; ");
    }
  }

  // CDS/LDS: both clients hold exactly the snapshot.
  void CompareFullState(const std::string& type_url, Problems& problems) {
    const Snapshot::TypeResources& current = Current(type_url);
    const std::string type = TypeName(type_url);
    for (const auto& [name, resource] : current.items) {
      CheckSotwCopy(type_url, resource, problems.sotw);
      CheckDeltaCopy(type_url, resource, problems.delta);
    }
    for (const auto& [name, held] : sotw_.held(type_url)) {
      if (!current.items.contains(name)) {
        absl::StrAppend(&problems.sotw, type, ": the SotW client still holds ", name, " (deleted); ");
      }
    }
    for (const auto& [name, held] : delta_.held(type_url)) {
      if (!current.items.contains(name)) {
        absl::StrAppend(&problems.delta, type, ": the Delta client still holds ", name, " (deleted); ");
      }
    }
  }

  // EDS/RDS: both hold every subscribed name that exists; Delta holds nothing else.
  void CompareNamed(const std::string& type_url, Problems& problems) {
    const Snapshot::TypeResources& current = Current(type_url);
    const std::set<std::string>& subscribed = names_[type_url];
    const std::string type = TypeName(type_url);
    for (const std::string& name : subscribed) {
      auto it = current.items.find(name);
      if (it == current.items.end()) continue;
      CheckSotwCopy(type_url, it->second, problems.sotw);
      CheckDeltaCopy(type_url, it->second, problems.delta);
    }
    for (const auto& [name, held] : delta_.held(type_url)) {
      if (!subscribed.contains(name)) {
        absl::StrAppend(&problems.delta, type, ": the Delta client holds unsubscribed ", name, "; ");
      } else if (!current.items.contains(name)) {
        absl::StrAppend(&problems.delta, type, ": the Delta client still holds ", name, " (deleted, never removed); ");
      }
    }
  }

  SnapshotCache cache_;
  Config config_;
  SotwClient sotw_;
  DeltaClient delta_;
  std::map<std::string, std::set<std::string>> names_;
  SnapshotPtr snapshot_;
  int version_ = 0;
  std::vector<std::string> trace_;
};

// ---- Random sequences ----------------------------------------------------------------------

size_t Pick(std::mt19937& rng, size_t n) { return rng() % n; }
bool Chance(std::mt19937& rng, int percent) { return static_cast<int>(rng() % 100) < percent; }

// Adds, modifies (possibly to the same content) or deletes `name` in `items`; returns what it did.
std::string MutateOne(std::mt19937& rng, const char* type, std::map<std::string, int>& items, const std::string& name,
                      std::optional<bool> remove = std::nullopt) {
  auto it = items.find(name);
  const bool present = it != items.end();
  const bool do_remove = remove.has_value() ? *remove : (present && Chance(rng, 40));
  if (do_remove) {
    if (!present) return "";
    items.erase(it);
    return absl::StrCat("-", type, " ", name);
  }
  const int variant = static_cast<int>(Pick(rng, kVariants));
  items[name] = variant;
  return absl::StrCat(present ? "~" : "+", type, " ", name, "#", variant);
}

// One random change of the configuration: a cluster (with its CLA half of the time), a CLA
// alone, a listener or a route.
std::string MutateConfig(std::mt19937& rng, Config& config) {
  switch (Pick(rng, 4)) {
    case 0: {
      const std::string& cluster = kClusterNames[Pick(rng, kClusterNames.size())];
      const bool had = config.clusters.contains(cluster);
      std::string what = MutateOne(rng, "CDS", config.clusters, cluster);
      if (Chance(rng, 50)) {  // the cluster's endpoints follow it
        const bool removed = had && !config.clusters.contains(cluster);
        std::string cla = MutateOne(rng, "EDS", config.endpoints, ClaNameOf(cluster), removed);
        if (!cla.empty()) absl::StrAppend(&what, " ", cla);
      }
      return what;
    }
    case 1:
      return MutateOne(rng, "EDS", config.endpoints, kClaNames[Pick(rng, kClaNames.size())]);
    case 2:
      return MutateOne(rng, "LDS", config.listeners, kListenerNames[Pick(rng, kListenerNames.size())]);
    default:
      return MutateOne(rng, "RDS", config.routes, kRouteNames[Pick(rng, kRouteNames.size())]);
  }
}

Config RandomConfig(std::mt19937& rng) {
  Config config;
  auto fill = [&rng](std::map<std::string, int>& items, const std::vector<std::string>& names) {
    for (const std::string& name : names) {
      if (Chance(rng, 70)) items[name] = static_cast<int>(Pick(rng, kVariants));
    }
  };
  fill(config.clusters, kClusterNames);
  fill(config.endpoints, kClaNames);
  fill(config.listeners, kListenerNames);
  fill(config.routes, kRouteNames);
  return config;
}

std::set<std::string> RandomNames(std::mt19937& rng, const std::vector<std::string>& pool) {
  std::set<std::string> names;
  for (const std::string& name : pool) {
    if (Chance(rng, 35)) names.insert(name);
  }
  return names;
}

// One subscription change of EDS or RDS: mostly a subscribe of an unsubscribed name or an
// unsubscribe of a subscribed one, sometimes a redundant one (which must change nothing).
void MutateSubscription(std::mt19937& rng, Differential& d) {
  const bool eds = Chance(rng, 50);
  const std::string& type_url = eds ? kEds : kRds;
  const std::vector<std::string>& pool = eds ? kEdsPool : kRdsPool;
  const std::set<std::string>& current = d.names(type_url);
  const bool with_nonce = Chance(rng, 30);
  if (current.empty() || Chance(rng, 50)) {
    d.Subscribe(type_url, pool[Pick(rng, pool.size())], with_nonce);
    return;
  }
  if (Chance(rng, 85)) {
    std::vector<std::string> subscribed(current.begin(), current.end());
    d.Unsubscribe(type_url, subscribed[Pick(rng, subscribed.size())], with_nonce);
  } else {
    d.Unsubscribe(type_url, pool[Pick(rng, pool.size())], with_nonce);
  }
}

// The first mismatch of each client in one seed: a one-line summary and the full report.
struct SeedResult {
  std::string delta_summary, delta_report;
  std::string sotw_summary, sotw_report;
};

// Runs one seed. A Delta mismatch ends the run; a SotW-only mismatch is recorded (the first)
// and the run goes on, so the Delta client is checked at every step whatever SotW does.
SeedResult RunSeed(uint32_t seed, int steps) {
  std::mt19937 rng(seed);
  Config config = RandomConfig(rng);
  std::set<std::string> eds = RandomNames(rng, kEdsPool);
  std::set<std::string> rds = RandomNames(rng, kRdsPool);
  const bool explicit_wildcard = Chance(rng, 50);
  const bool snapshot_first = Chance(rng, 80);
  Differential d(std::move(config), std::move(eds), std::move(rds), explicit_wildcard, snapshot_first);
  SeedResult result;
  // True when the run must stop.
  auto record = [&](const std::string& step, const Problems& problems) {
    const std::string summary = absl::StrCat("seed ", seed, " step ", step, ": ", problems.All());
    const std::string report = absl::StrCat(summary, "\n sequence:\n  ", d.Trace());
    if (!problems.sotw.empty() && result.sotw_summary.empty()) {
      result.sotw_summary = summary;
      result.sotw_report = report;
    }
    if (problems.delta.empty()) return false;
    result.delta_summary = summary;
    result.delta_report = report;
    return true;
  };
  if (record("start", d.SettleAndCompare())) return result;

  for (int step = 0; step < steps; ++step) {
    d.Note(absl::StrCat("-- step ", step));
    // Nothing is taken within a step: responses cross the requests and publications that
    // follow them (a subscription change after a publication carries a nonce that is stale
    // for SotW; an unsubscribe may cross a response carrying the name).
    const bool subscription = Chance(rng, 55);
    const bool publication = !subscription || Chance(rng, 50);
    const bool publish_first = Chance(rng, 30);
    auto change_subscriptions = [&] {
      MutateSubscription(rng, d);
      if (Chance(rng, 25)) MutateSubscription(rng, d);
    };
    auto publish = [&] {
      const int publications = Chance(rng, 25) ? 2 : 1;
      for (int p = 0; p < publications; ++p) {
        std::vector<std::string> what;
        const int mutations = Chance(rng, 10) ? 0 : 1 + static_cast<int>(Pick(rng, 3));  // 0: same content
        for (int m = 0; m < mutations; ++m) {
          std::string change = MutateConfig(rng, d.config());
          if (!change.empty()) what.push_back(std::move(change));
        }
        d.Publish(what.empty() ? "same content" : absl::StrJoin(what, " "));
      }
    };
    if (publication && publish_first) publish();
    if (subscription) change_subscriptions();
    if (publication && !publish_first) publish();
    if (record(absl::StrCat(step), d.SettleAndCompare())) return result;
  }
  return result;
}

class DeltaSotwDifferentialTest : public ::testing::Test {
 protected:
  // Thousands of responses: keep the per-response info lines off stderr.
  void SetUp() override {
    level_ = Log().level();
    Log().set_level(spdlog::level::warn);
  }
  void TearDown() override { Log().set_level(level_); }

 private:
  spdlog::level::level_enum level_ = spdlog::level::info;
};

TEST_F(DeltaSotwDifferentialTest, RandomSequencesAgree) {
  constexpr uint32_t kSeeds = 40;
  constexpr int kSteps = 60;
  const absl::Time start = absl::Now();
  // Every seed runs. The first reports of each client come in full (with the sequence), the
  // others as one line each.
  std::vector<std::string> delta_failed;
  std::vector<std::string> sotw_failed;
  for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
    const SeedResult result = RunSeed(seed, kSteps);
    if (!result.delta_summary.empty()) {
      if (delta_failed.size() < 3) ADD_FAILURE() << "Delta diverged: " << result.delta_report;
      delta_failed.push_back(result.delta_summary);
    }
    if (!result.sotw_summary.empty()) {
      if (sotw_failed.size() < 2) ADD_FAILURE() << "SotW diverged: " << result.sotw_report;
      sotw_failed.push_back(result.sotw_summary);
    }
  }
  EXPECT_TRUE(delta_failed.empty()) << "the Delta client diverged in " << delta_failed.size() << " of " << kSeeds
                                    << " seeds:\n"
                                    << absl::StrJoin(delta_failed, "\n");
  EXPECT_TRUE(sotw_failed.empty()) << "the SotW client diverged in " << sotw_failed.size() << " of " << kSeeds
                                   << " seeds:\n"
                                   << absl::StrJoin(sotw_failed, "\n");
  RecordProperty("runtime_ms", static_cast<int>(absl::ToInt64Milliseconds(absl::Now() - start)));
}

// Removals at their most awkward: a name deleted and re-added (also between two publications
// the clients never see apart), unsubscribed and re-subscribed (also without a response in
// between), subscribed before it exists, deleted while unsubscribed, and a type emptied.
TEST_F(DeltaSotwDifferentialTest, RemoveThenReAddAgree) {
  Config config;
  config.clusters = {{"c0", 0}, {"c1", 0}};
  config.endpoints = {{"c0", 0}, {"c1", 0}};
  config.listeners = {{"l0", 0}};
  config.routes = {{"r0", 0}};
  Differential d(config, {"c0", "c1"}, {"r0"}, /*explicit_wildcard=*/false, /*snapshot_before_clients=*/true);
  auto check = [&d](const std::string& label) {
    const Problems problems = d.SettleAndCompare();
    EXPECT_EQ(problems.delta, "") << label << "\n sequence:\n  " << d.Trace();
    EXPECT_EQ(problems.sotw, "") << label << "\n sequence:\n  " << d.Trace();
  };
  check("start");

  // Delete a cluster and its CLA, then re-add both with the same content.
  d.config().clusters.erase("c1");
  d.config().endpoints.erase("c1");
  d.Publish("-CDS c1 -EDS c1");
  check("c1 deleted");
  d.config().clusters["c1"] = 0;
  d.config().endpoints["c1"] = 0;
  d.Publish("+CDS c1 +EDS c1 (same content as before)");
  check("c1 re-added");

  // Delete and re-add between two publications the clients take together.
  d.config().endpoints.erase("c0");
  d.Publish("-EDS c0");
  d.config().endpoints["c0"] = 0;
  d.Publish("+EDS c0 (same content)");
  check("c0 deleted and re-added unseen");
  d.config().endpoints.erase("c0");
  d.Publish("-EDS c0");
  d.config().endpoints["c0"] = 2;
  d.Publish("+EDS c0#2");
  check("c0 deleted and re-added changed, unseen");

  // Unsubscribe, then re-subscribe (after a settle, then without one, then with nonces).
  d.Unsubscribe(kEds, "c0");
  check("c0 unsubscribed");
  d.Subscribe(kEds, "c0");
  check("c0 re-subscribed");
  d.Unsubscribe(kEds, "c0");
  d.Subscribe(kEds, "c0");
  check("c0 unsubscribed and re-subscribed at once");
  d.Unsubscribe(kEds, "c1", /*with_nonce=*/true);
  d.Subscribe(kEds, "c1", /*with_nonce=*/true);
  check("c1 unsubscribed and re-subscribed with nonces");

  // A route deleted and changed while unsubscribed, then re-subscribed.
  d.Unsubscribe(kRds, "r0");
  check("r0 unsubscribed (RDS now subscribes to nothing)");
  d.config().routes.erase("r0");
  d.Publish("-RDS r0");
  check("r0 deleted while unsubscribed");
  d.config().routes["r0"] = 1;
  d.Publish("+RDS r0#1");
  check("r0 re-added while unsubscribed");
  d.Subscribe(kRds, "r0");
  check("r0 re-subscribed");

  // A name subscribed before it exists, appearing, deleted, unsubscribed, re-added.
  d.Subscribe(kEds, "c9");
  check("c9 subscribed, absent");
  d.config().endpoints["c9"] = 1;
  d.Publish("+EDS c9#1");
  check("c9 appeared");
  d.config().endpoints.erase("c9");
  d.Publish("-EDS c9");
  check("c9 deleted");
  d.Unsubscribe(kEds, "c9");
  d.config().endpoints["c9"] = 1;
  d.Publish("+EDS c9#1 while unsubscribed");
  check("c9 re-added while unsubscribed");
  d.Subscribe(kEds, "c9");
  d.Unsubscribe(kEds, "c9");
  check("c9 subscribed and unsubscribed at once");

  // Empty CDS and LDS, then the same names back.
  d.config().clusters.clear();
  d.config().listeners.clear();
  d.Publish("no clusters, no listeners");
  check("CDS and LDS empty");
  d.config().clusters = {{"c0", 0}, {"c1", 3}};
  d.config().listeners = {{"l0", 0}};
  d.Publish("+CDS c0 +CDS c1#3 +LDS l0");
  check("CDS and LDS back");

  // Unsubscribe everything of EDS, then subscribe again.
  d.Unsubscribe(kEds, "c0");
  d.Unsubscribe(kEds, "c1");
  check("EDS subscribes to nothing");
  d.config().endpoints["c1"] = 3;
  d.Publish("~EDS c1#3 while EDS subscribes to nothing");
  check("c1 changed while nothing is subscribed");
  d.Subscribe(kEds, "c1");
  d.Subscribe(kEds, "c0");
  check("EDS subscribed again");
}

}  // namespace
}  // namespace cxds
