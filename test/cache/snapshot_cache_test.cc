// SnapshotCache: storing, refusing, watching, status (docs/protocol-rules.md, "SnapshotCache").
#include "cache/snapshot_cache.h"

#include <atomic>
#include <thread>

#include "common/status_matchers.h"
#include "fakes/test_resources.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using namespace cxds::testing;  // NOLINT

envoy::config::core::v3::Node NodeWithId(const std::string& id) {
  envoy::config::core::v3::Node node;
  node.set_id(id);
  return node;
}

SnapshotPtr Good(const std::string& version) {
  return MustSnapshot(version, {HttpListener("l", "r"), Routes("r", {"c"}), EdsCluster("c"), Endpoints("c", {1})});
}

// The default policy refuses an inconsistent snapshot and keeps the previous one.
TEST(SnapshotCacheTest, InconsistentSnapshotIsRefusedAndPreviousKept) {
  SnapshotCache cache;
  ASSERT_OK(cache.SetSnapshot("n", Good("1")));
  absl::Status refused = cache.SetSnapshot("n", MustSnapshot("2", {EdsCluster("c")}));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("node n"), absl::string_view::npos);
  ASSERT_OK_AND_ASSIGN(SnapshotPtr current, cache.GetSnapshot("n"));
  EXPECT_EQ(current->version(std::string(kClusterType)), "1");
}

// Policy kNone stores anything; kStrict also checks route clusters.
TEST(SnapshotCacheTest, PolicyDecidesWhatIsRefused) {
  SnapshotCache lax(SnapshotCache::Options{ConsistencyPolicy::kNone, nullptr, nullptr});
  EXPECT_OK(lax.SetSnapshot("n", MustSnapshot("1", {EdsCluster("c")})));
  SnapshotCache strict(SnapshotCache::Options{ConsistencyPolicy::kStrict, nullptr, nullptr});
  EXPECT_FALSE(strict.SetSnapshot("n", MustSnapshot("1", {HttpListener("l", "r"), Routes("r", {"ghost"})})).ok());
  EXPECT_EQ(lax.SetSnapshot("n", nullptr).code(), absl::StatusCode::kInvalidArgument);
}

// GetSnapshot of an unknown node is NotFound.
TEST(SnapshotCacheTest, UnknownNodeIsNotFound) {
  SnapshotCache cache;
  EXPECT_EQ(cache.GetSnapshot("nobody").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(cache.GetStatus("nobody").has_value());
}

// Open watches are told about every change of their node, and only of their node.
TEST(SnapshotCacheTest, WatchesAreNotifiedOfTheirNode) {
  SnapshotCache cache;
  int a_changes = 0;
  int b_changes = 0;
  auto a = cache.CreateWatch(NodeWithId("a"), [&](const ConfigChange&) { a_changes++; });
  auto b = cache.CreateWatch(NodeWithId("b"), [&](const ConfigChange&) { b_changes++; });
  EXPECT_EQ(a->Current(), nullptr);
  ASSERT_OK(cache.SetSnapshot("a", Good("1")));
  ASSERT_OK(cache.SetSnapshot("a", Good("2")));
  EXPECT_EQ(a_changes, 2);
  EXPECT_EQ(b_changes, 0);
  EXPECT_EQ(a->Current()->version(std::string(kClusterType)), "2");
}

// A destroyed watch is never called again and no longer counts as open.
TEST(SnapshotCacheTest, CancelledWatchIsNotCalled) {
  SnapshotCache cache;
  int changes = 0;
  auto watch = cache.CreateWatch(NodeWithId("a"), [&](const ConfigChange&) { changes++; });
  EXPECT_EQ(cache.GetStatus("a")->open_watches, 1);
  watch.reset();
  EXPECT_FALSE(cache.GetStatus("a").has_value()) << "no snapshot and no watch: forgotten";
  ASSERT_OK(cache.SetSnapshot("a", Good("1")));
  EXPECT_EQ(changes, 0);
  EXPECT_EQ(cache.GetStatus("a")->open_watches, 0);
}

// Streams with ever-new node ids leave nothing behind once they close (issue 11: node ids
// and their nodes were kept for every stream that ever connected).
TEST(SnapshotCacheTest, AKeyWithoutSnapshotIsForgottenWhenItsLastWatchCloses) {
  SnapshotCache cache;
  for (int i = 0; i < 100; ++i) {
    auto watch = cache.CreateWatch(NodeWithId("n" + std::to_string(i)), [](const ConfigChange&) {});
  }
  EXPECT_TRUE(cache.StatusKeys().empty());
}

// E61: ClearSnapshot keeps the watches, so the next snapshot still reaches them.
TEST(SnapshotCacheTest, ClearSnapshotKeepsWatches) {
  SnapshotCache cache;
  int changes = 0;
  auto watch = cache.CreateWatch(NodeWithId("a"), [&](const ConfigChange&) { changes++; });
  ASSERT_OK(cache.SetSnapshot("a", Good("1")));
  cache.ClearSnapshot("a");
  EXPECT_EQ(watch->Current(), nullptr);
  EXPECT_FALSE(cache.GetStatus("a")->has_snapshot);
  ASSERT_OK(cache.SetSnapshot("a", Good("2")));
  EXPECT_EQ(changes, 2);
  EXPECT_EQ(watch->Current()->version(std::string(kClusterType)), "2");
}

// Status: node, open watches, last request time (on an injected clock).
TEST(SnapshotCacheTest, StatusTracksWatchesAndRequestTime) {
  SimulatedClock clock;
  SnapshotCache cache(SnapshotCache::Options{ConsistencyPolicy::kConsistent, nullptr, &clock});
  auto w1 = cache.CreateWatch(NodeWithId("a"), [](const ConfigChange&) {});
  auto w2 = cache.CreateWatch(NodeWithId("a"), [](const ConfigChange&) {});
  EXPECT_FALSE(cache.GetStatus("a")->last_request_time.has_value());
  clock.Advance(absl::Seconds(5));
  w1->RecordRequest();
  std::optional<NodeStatus> status = cache.GetStatus("a");
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->open_watches, 2);
  EXPECT_EQ(status->node.id(), "a");
  EXPECT_EQ(status->last_request_time, clock.Now());
  EXPECT_EQ(cache.StatusKeys(), std::vector<std::string>{"a"});
}

// A custom NodeHash groups nodes onto one snapshot.
TEST(SnapshotCacheTest, NodeHashGroupsNodes) {
  class ClusterHash : public NodeHash {
   public:
    std::string Key(const envoy::config::core::v3::Node& node) const override { return node.cluster(); }
  };
  SnapshotCache cache(SnapshotCache::Options{ConsistencyPolicy::kConsistent, std::make_shared<ClusterHash>(), nullptr});
  envoy::config::core::v3::Node n1 = NodeWithId("pod-1");
  n1.set_cluster("frontend");
  envoy::config::core::v3::Node n2 = NodeWithId("pod-2");
  n2.set_cluster("frontend");
  auto w1 = cache.CreateWatch(n1, [](const ConfigChange&) {});
  auto w2 = cache.CreateWatch(n2, [](const ConfigChange&) {});
  ASSERT_OK(cache.SetSnapshot("frontend", Good("1")));
  EXPECT_EQ(w1->Current(), w2->Current());
  EXPECT_NE(w1->Current(), nullptr);
}

// E63: concurrent snapshot updates and watch creation for many nodes race-free;
// every watch ends up seeing the final snapshot of its node (run under TSan in CI).
TEST(SnapshotCacheTest, ConcurrentSetAndWatch) {
  SnapshotCache cache;
  constexpr int kNodes = 8;
  constexpr int kVersions = 40;
  std::atomic<int> notifications{0};
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<ConfigWatcher::Watch>> watches(kNodes * 4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < kNodes; ++n) {
        watches[t * kNodes + n] =
            cache.CreateWatch(NodeWithId("node-" + std::to_string(n)), [&](const ConfigChange&) { notifications++; });
      }
    });
  }
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int v = 1; v <= kVersions; ++v) {
        for (int n = 0; n < kNodes; ++n) {
          EXPECT_OK(cache.SetSnapshot("node-" + std::to_string(n), Good(std::to_string(v))));
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int n = 0; n < kNodes; ++n) {
    EXPECT_EQ(cache.GetSnapshot("node-" + std::to_string(n)).value()->version(std::string(kClusterType)),
              std::to_string(kVersions));
  }
  for (auto& watch : watches) EXPECT_NE(watch->Current(), nullptr);
  EXPECT_GT(notifications.load(), 0);
}

}  // namespace
}  // namespace cxds

namespace cxds {
namespace {

using namespace cxds::testing;  // NOLINT

// Watches learn which names changed: added, modified and removed, per type, and nothing for
// unchanged resources (so a stream can look at the changed names only).
TEST(SnapshotDiffTest, ListsAddedModifiedAndRemovedNames) {
  auto c1 = EdsCluster("c1");
  SnapshotPtr before = MustSnapshot("1", {c1, EdsCluster("c2"), Endpoints("c1", {1}), Endpoints("c2", {2})});
  SnapshotPtr after = MustSnapshot("2", {c1, EdsCluster("c3"), Endpoints("c1", {1}), Endpoints("c2", {9})});
  ConfigChange change = DiffSnapshots(before.get(), after.get());
  EXPECT_FALSE(change.everything);
  ASSERT_NE(change.types.at(std::string(kClusterType)), nullptr);
  EXPECT_EQ(*change.types.at(std::string(kClusterType)), (std::vector<std::string>{"c2", "c3"}));
  EXPECT_EQ(*change.types.at(std::string(kEndpointType)), (std::vector<std::string>{"c2"}));
  // Version changed, nothing else: listed with no names.
  EXPECT_TRUE(change.types.at(std::string(kListenerType))->empty());
  EXPECT_TRUE(DiffSnapshots(nullptr, after.get()).everything);
}

// SetSnapshot passes the diff to the watches.
TEST(SnapshotDiffTest, WatchesReceiveTheDiff) {
  SnapshotCache cache(SnapshotCache::Options{ConsistencyPolicy::kNone, nullptr, nullptr});
  std::vector<ConfigChange> seen;
  envoy::config::core::v3::Node node;
  node.set_id("a");
  auto watch = cache.CreateWatch(node, [&](const ConfigChange& change) { seen.push_back(change); });
  ASSERT_OK(cache.SetSnapshot("a", MustSnapshot("1", {EdsCluster("c1")})));
  ASSERT_OK(cache.SetSnapshot("a", MustSnapshot("2", {EdsCluster("c1", "", 5)})));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen[0].everything);
  EXPECT_EQ(*seen[1].types.at(std::string(kClusterType)), (std::vector<std::string>{"c1"}));
}

// EA2: with keep_unchanged_types, a snapshot versioned as a whole stores new versions only for
// the types that changed, watches hear only of those, and the same content again is silent.
TEST(SnapshotCacheTest, KeepUnchangedTypesStoresNewVersionsOnlyForChangedTypes) {
  SnapshotCache::Options options;
  options.keep_unchanged_types = true;
  SnapshotCache cache(options);
  std::vector<ConfigChange> seen;
  auto watch = cache.CreateWatch(NodeWithId("a"), [&](const ConfigChange& change) { seen.push_back(change); });
  auto build = [](const std::string& version, uint32_t port) {
    return MustSnapshot(version, {HttpListener("l", "r"), Routes("r", {"c"}), EdsCluster("c"), Endpoints("c", {port})});
  };
  ASSERT_OK(cache.SetSnapshot("a", build("1", 1)));
  ASSERT_OK(cache.SetSnapshot("a", build("2", 2)));
  ASSERT_OK_AND_ASSIGN(SnapshotPtr stored, cache.GetSnapshot("a"));
  EXPECT_EQ(stored->version(std::string(kEndpointType)), "2");
  for (std::string_view kept : {kClusterType, kListenerType, kRouteType, kSecretType}) {
    EXPECT_EQ(stored->version(std::string(kept)), "1") << kept;
  }
  ASSERT_EQ(seen.size(), 2u);
  ASSERT_EQ(seen[1].types.size(), 1u);
  EXPECT_TRUE(seen[1].types.contains(std::string(kEndpointType)));

  ASSERT_OK(cache.SetSnapshot("a", build("3", 2)));
  EXPECT_EQ(seen.size(), 2u) << "the same content again notifies nobody";
  ASSERT_OK_AND_ASSIGN(SnapshotPtr unchanged, cache.GetSnapshot("a"));
  EXPECT_EQ(unchanged, stored);

  // Without the option every type carries the version it was given.
  SnapshotCache plain;
  ASSERT_OK(plain.SetSnapshot("a", build("1", 1)));
  ASSERT_OK(plain.SetSnapshot("a", build("2", 2)));
  ASSERT_OK_AND_ASSIGN(SnapshotPtr given, plain.GetSnapshot("a"));
  EXPECT_EQ(given->version(std::string(kClusterType)), "2");
}

}  // namespace
}  // namespace cxds
