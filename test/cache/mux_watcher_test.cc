// MuxConfigWatcher: routing types to watchers, assembling one configuration, forwarding
// interest and changes, and the no-half-configuration rule (docs/protocol-rules.md,
// "MuxConfigWatcher").
#include "cache/mux_watcher.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "cache/linear_cache.h"
#include "cache/snapshot_cache.h"
#include "common/status_matchers.h"
#include "fakes/test_resources.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using namespace cxds::testing;  // NOLINT

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);
const std::string kLds(kListenerType);
const std::string kSds(kSecretType);

envoy::config::core::v3::Node NodeWithId(const std::string& id) {
  envoy::config::core::v3::Node node;
  node.set_id(id);
  return node;
}

absl::flat_hash_set<std::string> Names(std::initializer_list<std::string> names) {
  return absl::flat_hash_set<std::string>(names.begin(), names.end());
}

// A per-node snapshot cache for everything but EDS, which a shared LinearCache serves.
class MuxConfigWatcherTest : public ::testing::Test {
 protected:
  MuxConfigWatcherTest()
      : snapshots_(SnapshotCache::Options{ConsistencyPolicy::kNone, nullptr, &clock_}),
        endpoints_(kEds, LinearCache::Options{"eds-", &clock_}),
        mux_({{kEds, &endpoints_}}, &snapshots_) {}

  // The node's own configuration; its EDS part ("stale") must never be served through the mux.
  SnapshotPtr NodeSnapshot(const std::string& version, int connect_timeout_s = 1) {
    return MustSnapshot(version, {EdsCluster("c1", "", connect_timeout_s), Secret("s"), Endpoints("stale", {9})});
  }

  SimulatedClock clock_;
  SnapshotCache snapshots_;
  LinearCache endpoints_;
  MuxConfigWatcher mux_;
};

// Each type comes from the watcher it is routed to, sharing that watcher's part; the fallback's
// parts for routed types are hidden.
TEST_F(MuxConfigWatcherTest, RoutesEachTypeToItsWatcher) {
  EXPECT_EQ(mux_.OwnerOf(kEds), &endpoints_);
  EXPECT_EQ(mux_.OwnerOf(kCds), &snapshots_);
  EXPECT_EQ(mux_.OwnerOf("type.googleapis.com/some.Other"), &snapshots_);
  ASSERT_OK(snapshots_.SetSnapshot("n", NodeSnapshot("1")));
  ASSERT_OK(endpoints_.SetResources({Endpoints("c1", {1})}));
  auto watch = mux_.CreateWatch(NodeWithId("n"), [](const ConfigChange&) {});

  SnapshotPtr current = watch->Current();
  ASSERT_NE(current, nullptr);
  SnapshotPtr node_snapshot = snapshots_.GetSnapshot("n").value();
  auto linear_watch = endpoints_.CreateWatch(NodeWithId("n"), [](const ConfigChange&) {});
  SnapshotPtr linear_snapshot = linear_watch->Current();
  EXPECT_EQ(current->resources(kCds), node_snapshot->resources(kCds));
  EXPECT_EQ(current->resources(kSds), node_snapshot->resources(kSds));
  EXPECT_EQ(current->resources(kEds), linear_snapshot->resources(kEds));
  EXPECT_EQ(current->types().size(), node_snapshot->types().size());
  EXPECT_EQ(current->Find(kEds, "stale"), nullptr);
  EXPECT_NE(current->Find(kEds, "c1"), nullptr);
  EXPECT_EQ(current->version(kEds), "eds-1");
  EXPECT_EQ(current->version(kCds), "1");
  EXPECT_FALSE(current->resources(kEds)->version_covers_all);
  EXPECT_TRUE(current->resources(kCds)->version_covers_all);
}

// Current() is null while any part is missing (the node's snapshot, or the shared EDS), so a
// node is never served half of its configuration; it comes back when both exist.
TEST_F(MuxConfigWatcherTest, CurrentIsNullUntilEveryPartExists) {
  auto watch = mux_.CreateWatch(NodeWithId("n"), [](const ConfigChange&) {});
  EXPECT_EQ(watch->Current(), nullptr);
  ASSERT_OK(snapshots_.SetSnapshot("n", NodeSnapshot("1")));
  EXPECT_EQ(watch->Current(), nullptr);  // no EDS yet
  ASSERT_OK(endpoints_.SetResources({Endpoints("c1", {1})}));
  EXPECT_NE(watch->Current(), nullptr);

  auto other = mux_.CreateWatch(NodeWithId("other"), [](const ConfigChange&) {});
  EXPECT_EQ(other->Current(), nullptr);  // shared EDS, but no snapshot of its own

  snapshots_.ClearSnapshot("n");
  EXPECT_EQ(watch->Current(), nullptr);
  ASSERT_OK(snapshots_.SetSnapshot("n", NodeSnapshot("2")));
  ASSERT_NE(watch->Current(), nullptr);
  EXPECT_EQ(watch->Current()->version(kCds), "2");
}

// The assembled snapshot is the same object while no part changes, and a new one after.
TEST_F(MuxConfigWatcherTest, CurrentIsStableBetweenChanges) {
  ASSERT_OK(snapshots_.SetSnapshot("n", NodeSnapshot("1")));
  ASSERT_OK(endpoints_.SetResources({Endpoints("c1", {1})}));
  auto watch = mux_.CreateWatch(NodeWithId("n"), [](const ConfigChange&) {});
  SnapshotPtr first = watch->Current();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(watch->Current(), first);
  ASSERT_OK(endpoints_.UpdateResource(Endpoints("c1", {1})));  // no change
  EXPECT_EQ(watch->Current(), first);
  ASSERT_OK(endpoints_.UpdateResource(Endpoints("c1", {2})));
  SnapshotPtr second = watch->Current();
  EXPECT_NE(second, first);
  EXPECT_EQ(second->version(kEds), "eds-2");
  EXPECT_EQ(second->resources(kCds), first->resources(kCds));
}

// Interest reaches only the watcher owning the type: EDS names index the linear cache, the
// interest in CDS does not touch it, and the watch is then told only about its EDS names.
TEST_F(MuxConfigWatcherTest, SetInterestGoesToTheOwningWatcher) {
  ASSERT_OK(snapshots_.SetSnapshot("n", NodeSnapshot("1")));
  ASSERT_OK(endpoints_.SetResources({Endpoints("c1", {1}), Endpoints("c2", {1})}));
  std::vector<ConfigChange> seen;
  auto watch = mux_.CreateWatch(NodeWithId("n"), [&seen](const ConfigChange& change) { seen.push_back(change); });
  watch->SetInterest(kEds, /*wildcard=*/false, Names({"c1"}));
  watch->SetInterest(kCds, /*wildcard=*/true, {});
  EXPECT_EQ(endpoints_.num_watches_for("c1"), 1u);
  EXPECT_EQ(endpoints_.num_wildcard_watches(), 0u);

  ASSERT_OK(endpoints_.UpdateResource(Endpoints("c2", {2})));
  EXPECT_TRUE(seen.empty());
  ASSERT_OK(endpoints_.UpdateResource(Endpoints("c1", {2})));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_FALSE(seen[0].everything);
  ASSERT_EQ(seen[0].types.size(), 1u);
  EXPECT_EQ(*seen[0].types.at(kEds), std::vector<std::string>{"c1"});
}

// Changes are forwarded with the owner's types only; a change only to types the watcher does
// not serve here is not forwarded at all; a first configuration is forwarded as everything.
TEST_F(MuxConfigWatcherTest, ChangesAreForwardedWithTheOwnersTypesOnly) {
  ASSERT_OK(endpoints_.SetResources({Endpoints("c1", {1})}));
  std::vector<ConfigChange> seen;
  auto watch = mux_.CreateWatch(NodeWithId("n"), [&seen](const ConfigChange& change) { seen.push_back(change); });

  ASSERT_OK(snapshots_.SetSnapshot("n", NodeSnapshot("1")));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].everything);

  ASSERT_OK(snapshots_.SetSnapshot("n", NodeSnapshot("2", /*connect_timeout_s=*/5)));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_FALSE(seen[1].everything);
  EXPECT_EQ(*seen[1].types.at(kCds), std::vector<std::string>{"c1"});
  EXPECT_FALSE(seen[1].types.contains(kEds));  // the snapshot's EDS version moved, but it is not served

  // Only the node snapshot's (hidden) EDS part changes: nothing to forward.
  auto only_eds = [](const std::string& eds_version, uint32_t port) {
    auto snapshot = Snapshot::CreateWithTypeVersions({{kCds, "1"}, {kEds, eds_version}},
                                                     {EdsCluster("c1"), Endpoints("stale", {port})});
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
    return *snapshot;
  };
  ASSERT_OK(snapshots_.SetSnapshot("n", only_eds("a", 1)));
  const size_t before = seen.size();
  ASSERT_OK(snapshots_.SetSnapshot("n", only_eds("b", 2)));
  EXPECT_EQ(seen.size(), before);

  ASSERT_OK(endpoints_.DeleteResource("c1"));
  ASSERT_EQ(seen.size(), before + 1);
  ASSERT_EQ(seen.back().types.size(), 1u);
  EXPECT_EQ(*seen.back().types.at(kEds), std::vector<std::string>{"c1"});
}

// The linear cache's first write completes the configuration: forwarded as everything.
TEST_F(MuxConfigWatcherTest, CompletingWriteIsForwardedAsEverything) {
  ASSERT_OK(snapshots_.SetSnapshot("n", NodeSnapshot("1")));
  std::vector<ConfigChange> seen;
  auto watch = mux_.CreateWatch(NodeWithId("n"), [&seen](const ConfigChange& change) { seen.push_back(change); });
  ASSERT_OK(endpoints_.SetResources({}));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].everything);
  EXPECT_NE(watch->Current(), nullptr);
}

// RecordRequest reaches every underlying watcher; there is one underlying watch per distinct
// watcher, and destroying the mux watch destroys them.
TEST_F(MuxConfigWatcherTest, OneUnderlyingWatchPerDistinctWatcher) {
  // The snapshot cache is both routed (CDS, LDS) and the fallback: still one watch on it.
  MuxConfigWatcher mux({{kCds, &snapshots_}, {kLds, &snapshots_}, {kEds, &endpoints_}}, &snapshots_);
  auto watch = mux.CreateWatch(NodeWithId("n"), [](const ConfigChange&) {});
  EXPECT_EQ(snapshots_.GetStatus("n")->open_watches, 1);
  EXPECT_EQ(endpoints_.num_watches(), 1u);
  clock_.Advance(absl::Seconds(7));
  watch->RecordRequest();
  EXPECT_EQ(snapshots_.GetStatus("n")->last_request_time, clock_.Now());
  EXPECT_EQ(endpoints_.GetStatus("n")->last_request_time, clock_.Now());
  watch.reset();
  EXPECT_FALSE(snapshots_.GetStatus("n").has_value()) << "no snapshot and no watch: forgotten";
  EXPECT_EQ(endpoints_.num_watches(), 0u);
}

// Without a fallback, unrouted types are served by nobody; a route to null removes a type even
// when there is a fallback; with no watcher at all there is no configuration.
TEST_F(MuxConfigWatcherTest, TypesWithoutOwnerAreNotServed) {
  ASSERT_OK(snapshots_.SetSnapshot("n", NodeSnapshot("1")));
  ASSERT_OK(endpoints_.SetResources({Endpoints("c1", {1})}));

  MuxConfigWatcher eds_only({{kEds, &endpoints_}}, nullptr);
  EXPECT_EQ(eds_only.OwnerOf(kCds), nullptr);
  auto watch = eds_only.CreateWatch(NodeWithId("n"), [](const ConfigChange&) {});
  watch->SetInterest(kCds, /*wildcard=*/true, {});  // nobody to tell: ignored
  SnapshotPtr current = watch->Current();
  ASSERT_NE(current, nullptr);
  EXPECT_EQ(current->types().size(), 1u);
  EXPECT_NE(current->resources(kEds), nullptr);

  MuxConfigWatcher no_secrets({{kEds, &endpoints_}, {kSds, nullptr}}, &snapshots_);
  EXPECT_EQ(no_secrets.OwnerOf(kSds), nullptr);
  auto no_secrets_watch = no_secrets.CreateWatch(NodeWithId("n"), [](const ConfigChange&) {});
  ASSERT_NE(no_secrets_watch->Current(), nullptr);
  EXPECT_EQ(no_secrets_watch->Current()->resources(kSds), nullptr);
  EXPECT_NE(no_secrets_watch->Current()->resources(kCds), nullptr);

  MuxConfigWatcher empty({}, nullptr);
  auto empty_watch = empty.CreateWatch(NodeWithId("n"), [](const ConfigChange&) {});
  EXPECT_EQ(empty_watch->Current(), nullptr);
}

// Changes from both watchers on different threads while mux watches are created, used and
// destroyed, race-free (ThreadSanitizer); a destroyed watch's callback never runs afterwards.
TEST_F(MuxConfigWatcherTest, ConcurrentChangesAndWatches) {
  constexpr int kRounds = 50;
  struct Probe {
    std::atomic<bool> destroyed{false};
    std::atomic<int> running{0};
    std::atomic<int> late_calls{0};
  };
  std::vector<std::thread> threads;
  threads.emplace_back([this] {
    for (int round = 0; round < kRounds; ++round) {
      EXPECT_OK(endpoints_.SetResources({Endpoints("c1", {static_cast<uint32_t>(round)}), Endpoints("c2", {1})}));
    }
  });
  threads.emplace_back([this] {
    for (int round = 1; round <= kRounds; ++round) {
      for (const char* node : {"n0", "n1"}) {
        EXPECT_OK(snapshots_.SetSnapshot(node, NodeSnapshot(StrCat(round), round)));
      }
    }
  });
  std::atomic<int> late_total{0};
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([this, &late_total, t] {
      for (int round = 0; round < kRounds; ++round) {
        auto probe = std::make_shared<Probe>();
        auto watch = mux_.CreateWatch(NodeWithId(StrCat("n", t)), [probe](const ConfigChange&) {
          probe->running++;
          if (probe->destroyed) probe->late_calls++;
          probe->running--;
        });
        watch->SetInterest(kEds, /*wildcard=*/false, Names({"c1"}));
        watch->SetInterest(kCds, /*wildcard=*/true, {});
        watch->RecordRequest();
        SnapshotPtr current = watch->Current();
        if (current != nullptr) {
          EXPECT_NE(current->resources(kEds), nullptr);
          EXPECT_NE(current->resources(kCds), nullptr);
          EXPECT_EQ(current->Find(kEds, "stale"), nullptr);
        }
        watch.reset();
        if (probe->running.load() != 0) late_total++;
        probe->destroyed = true;
        late_total += probe->late_calls.load();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(late_total.load(), 0);
  EXPECT_EQ(endpoints_.num_watches(), 0u);
  auto watch = mux_.CreateWatch(NodeWithId("n1"), [](const ConfigChange&) {});
  SnapshotPtr current = watch->Current();
  ASSERT_NE(current, nullptr);
  EXPECT_EQ(current->version(kCds), StrCat(kRounds));
  EXPECT_EQ(current->version(kEds), endpoints_.version());
}

}  // namespace
}  // namespace cxds
