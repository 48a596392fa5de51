// LinearCache: per-resource versions, change-only version bumps, interest-indexed notifications
// (docs/protocol-rules.md, "LinearCache": what we do differently from go-control-plane).
#include "cache/linear_cache.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "common/status_matchers.h"
#include "fakes/test_resources.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using namespace cxds::testing;  // NOLINT

const std::string kEds(kEndpointType);

envoy::config::core::v3::Node NodeWithId(const std::string& id) {
  envoy::config::core::v3::Node node;
  node.set_id(id);
  return node;
}

// Records what one watch is told.
struct Recorder {
  std::vector<ConfigChange> changes;
  absl::AnyInvocable<void(const ConfigChange&)> Callback() {
    return [this](const ConfigChange& change) { changes.push_back(change); };
  }
  // The names of the last change for EDS; fails if it was not a per-name change.
  std::vector<std::string> LastNames() const {
    EXPECT_FALSE(changes.empty());
    if (changes.empty()) return {};
    EXPECT_FALSE(changes.back().everything);
    auto it = changes.back().types.find(kEds);
    EXPECT_NE(it, changes.back().types.end());
    if (it == changes.back().types.end() || it->second == nullptr) return {};
    return *it->second;
  }
};

absl::flat_hash_set<std::string> Names(std::initializer_list<std::string> names) {
  return absl::flat_hash_set<std::string>(names.begin(), names.end());
}

// The version counts real changes only: equal content, unknown deletions and identical sets
// change nothing and notify nobody.
TEST(LinearCacheTest, VersionBumpsOnlyOnRealChange) {
  LinearCache cache(kEds, LinearCache::Options{"eds-", nullptr});
  Recorder recorder;
  auto watch = cache.CreateWatch(NodeWithId("n"), recorder.Callback());
  EXPECT_EQ(cache.version(), "eds-0");
  ASSERT_OK(cache.UpdateResource(Endpoints("a", {1})));
  EXPECT_EQ(cache.version(), "eds-1");
  ASSERT_EQ(recorder.changes.size(), 1u);

  ASSERT_OK(cache.UpdateResource(Endpoints("a", {1})));  // another object, same content
  ASSERT_OK(cache.DeleteResource("unknown"));
  ASSERT_OK(cache.SetResources({Endpoints("a", {1})}));
  ASSERT_OK(cache.UpdateResources({Endpoints("a", {1})}, {"unknown"}));
  EXPECT_EQ(cache.version(), "eds-1");
  EXPECT_EQ(recorder.changes.size(), 1u);

  ASSERT_OK(cache.UpdateResource(Endpoints("a", {2})));
  EXPECT_EQ(cache.version(), "eds-2");
  EXPECT_EQ(recorder.LastNames(), std::vector<std::string>{"a"});
  EXPECT_EQ(cache.notifications_delivered(), 2u);
  // Per-resource versions are content hashes, equal in every process for equal content.
  EXPECT_EQ(watch->Current()->Find(kEds, "a")->content_version(), Endpoints("a", {2})->content_version());
}

// Identical mutation sequences give identical versions: the default prefix is not per process.
TEST(LinearCacheTest, VersionsAreReproducible) {
  LinearCache first(kEds);
  LinearCache second(kEds);
  for (LinearCache* cache : {&first, &second}) {
    ASSERT_OK(cache->SetResources({Endpoints("a", {1}), Endpoints("b", {2})}));
    ASSERT_OK(cache->UpdateResource(Endpoints("a", {3})));
  }
  EXPECT_EQ(first.version(), second.version());
  EXPECT_EQ(first.version(), "2");
}

// Nothing is served before the first write; the first write (even of nothing) publishes the
// cache and tells every watch that everything changed.
TEST(LinearCacheTest, FirstWritePublishesAndNotifiesEveryWatch) {
  LinearCache cache(kEds);
  Recorder named;
  Recorder nothing;
  auto named_watch = cache.CreateWatch(NodeWithId("n1"), named.Callback());
  auto nothing_watch = cache.CreateWatch(NodeWithId("n2"), nothing.Callback());
  named_watch->SetInterest(kEds, /*wildcard=*/false, Names({"a"}));
  nothing_watch->SetInterest(kEds, /*wildcard=*/false, {});
  EXPECT_EQ(named_watch->Current(), nullptr);
  EXPECT_FALSE(cache.GetStatus("n1")->has_snapshot);

  ASSERT_OK(cache.SetResources({}));
  ASSERT_EQ(named.changes.size(), 1u);
  ASSERT_EQ(nothing.changes.size(), 1u);
  EXPECT_TRUE(named.changes[0].everything);
  EXPECT_TRUE(cache.GetStatus("n1")->has_snapshot);
  SnapshotPtr current = named_watch->Current();
  ASSERT_NE(current, nullptr);
  ASSERT_NE(current->resources(kEds), nullptr);
  EXPECT_TRUE(current->resources(kEds)->items.empty());
  EXPECT_EQ(current->version(kEds), "1");

  ASSERT_OK(cache.SetResources({}));  // published and still empty: no change
  EXPECT_EQ(cache.version(), "1");
  EXPECT_EQ(named.changes.size(), 1u);
}

// After a change, only the watches whose interest covers a changed name are called, and the
// counters show that no other watch was.
TEST(LinearCacheTest, OnlyInterestedWatchesAreNotified) {
  LinearCache cache(kEds);
  ASSERT_OK(cache.SetResources({Endpoints("a", {1}), Endpoints("b", {1})}));
  Recorder want_a;
  Recorder want_b;
  Recorder want_both;
  auto a = cache.CreateWatch(NodeWithId("n"), want_a.Callback());
  auto b = cache.CreateWatch(NodeWithId("n"), want_b.Callback());
  auto both = cache.CreateWatch(NodeWithId("n"), want_both.Callback());
  a->SetInterest(kEds, false, Names({"a"}));
  b->SetInterest(kEds, false, Names({"b"}));
  both->SetInterest(kEds, false, Names({"a", "b"}));
  // Interest in another type is not this cache's business.
  b->SetInterest(std::string(kClusterType), /*wildcard=*/true, {});
  EXPECT_EQ(cache.num_watches(), 3u);
  EXPECT_EQ(cache.num_watches_for("a"), 2u);
  EXPECT_EQ(cache.num_wildcard_watches(), 0u);

  const uint64_t before = cache.notifications_delivered();
  ASSERT_OK(cache.UpdateResource(Endpoints("a", {2})));
  EXPECT_EQ(cache.notifications_delivered() - before, 2u);
  EXPECT_EQ(want_a.LastNames(), std::vector<std::string>{"a"});
  EXPECT_EQ(want_both.LastNames(), std::vector<std::string>{"a"});
  EXPECT_TRUE(want_b.changes.empty());

  // A watch wanting both changed names is called once, with both.
  ASSERT_OK(cache.UpdateResources({Endpoints("a", {3}), Endpoints("b", {3})}, {}));
  EXPECT_EQ(cache.notifications_delivered() - before, 5u);
  ASSERT_EQ(want_both.changes.size(), 2u);
  EXPECT_EQ(want_both.LastNames(), (std::vector<std::string>{"a", "b"}));
}

// With one named watch per resource, changing one resource calls exactly one watch out of many.
TEST(LinearCacheTest, NotificationCostFollowsInterestNotWatchCount) {
  LinearCache cache(kEds);
  constexpr int kWatches = 500;
  std::vector<ResourcePtr> resources;
  for (int i = 0; i < kWatches; ++i) resources.push_back(Endpoints(StrCat("cla-", i), {1}));
  ASSERT_OK(cache.SetResources(resources));
  int calls = 0;
  std::vector<std::unique_ptr<ConfigWatcher::Watch>> watches;
  for (int i = 0; i < kWatches; ++i) {
    watches.push_back(cache.CreateWatch(NodeWithId(StrCat("n", i)), [&calls](const ConfigChange&) { calls++; }));
    watches.back()->SetInterest(kEds, false, Names({StrCat("cla-", i)}));
  }
  const uint64_t before = cache.notifications_delivered();
  ASSERT_OK(cache.UpdateResource(Endpoints("cla-7", {2})));
  EXPECT_EQ(cache.notifications_delivered() - before, 1u);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(cache.num_watches(), static_cast<size_t>(kWatches));
}

// Wildcard watches hear about every change; watches that declared nothing yet too.
TEST(LinearCacheTest, WildcardAndUndeclaredWatchesSeeEveryChange) {
  LinearCache cache(kEds);
  ASSERT_OK(cache.SetResources({}));
  Recorder wildcard;
  Recorder undeclared;
  Recorder named;
  auto w = cache.CreateWatch(NodeWithId("n"), wildcard.Callback());
  auto u = cache.CreateWatch(NodeWithId("n"), undeclared.Callback());
  auto x = cache.CreateWatch(NodeWithId("n"), named.Callback());
  w->SetInterest(kEds, /*wildcard=*/true, {});
  x->SetInterest(kEds, false, Names({"x"}));
  EXPECT_EQ(cache.num_wildcard_watches(), 1u);

  ASSERT_OK(cache.UpdateResource(Endpoints("a", {1})));
  ASSERT_OK(cache.UpdateResource(Endpoints("b", {1})));
  ASSERT_OK(cache.DeleteResource("a"));
  EXPECT_EQ(wildcard.changes.size(), 3u);
  EXPECT_EQ(undeclared.changes.size(), 3u);
  EXPECT_TRUE(named.changes.empty());
  EXPECT_EQ(wildcard.LastNames(), std::vector<std::string>{"a"});
}

// A deletion is a change of that name: interested watches are told, the version moves, and the
// resource leaves the served snapshot.
TEST(LinearCacheTest, DeleteNotifiesInterestedWatches) {
  LinearCache cache(kEds);
  ASSERT_OK(cache.SetResources({Endpoints("a", {1}), Endpoints("b", {1})}));
  Recorder recorder;
  auto watch = cache.CreateWatch(NodeWithId("n"), recorder.Callback());
  watch->SetInterest(kEds, false, Names({"a"}));
  const std::string version = cache.version();

  ASSERT_OK(cache.DeleteResource("b"));
  EXPECT_TRUE(recorder.changes.empty());
  ASSERT_OK(cache.DeleteResource("a"));
  EXPECT_EQ(recorder.LastNames(), std::vector<std::string>{"a"});
  EXPECT_EQ(cache.version(), "3");
  EXPECT_NE(cache.version(), version);
  EXPECT_EQ(cache.Get("a"), nullptr);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(watch->Current()->Find(kEds, "a"), nullptr);
}

// SetResources replaces the set: the change lists added, modified and removed names (sorted),
// unchanged ones are left out, and it is one version bump.
TEST(LinearCacheTest, SetResourcesListsAddedModifiedAndRemovedNames) {
  LinearCache cache(kEds);
  ResourcePtr a = Endpoints("a", {1});
  ASSERT_OK(cache.SetResources({a, Endpoints("b", {1}), Endpoints("c", {1})}));
  Recorder recorder;
  auto watch = cache.CreateWatch(NodeWithId("n"), recorder.Callback());
  watch->SetInterest(kEds, /*wildcard=*/true, {});

  ASSERT_OK(cache.SetResources({Endpoints("d", {1}), Endpoints("b", {2}), Endpoints("a", {1})}));
  ASSERT_EQ(recorder.changes.size(), 1u);
  EXPECT_EQ(recorder.LastNames(), (std::vector<std::string>{"b", "c", "d"}));
  EXPECT_EQ(cache.version(), "2");
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.Get("c"), nullptr);
  EXPECT_EQ(cache.Get("a"), a);  // unchanged content keeps the stored object
  EXPECT_NE(cache.Get("d"), nullptr);
}

// UpdateResources is one change: one bump, one call per watch, every changed name listed.
TEST(LinearCacheTest, UpdateResourcesIsOneChange) {
  LinearCache cache(kEds);
  ASSERT_OK(cache.SetResources({Endpoints("a", {1}), Endpoints("b", {1}), Endpoints("c", {1})}));
  Recorder recorder;
  auto watch = cache.CreateWatch(NodeWithId("n"), recorder.Callback());
  ASSERT_OK(cache.UpdateResources({Endpoints("z", {1}), Endpoints("a", {2}), Endpoints("b", {1})}, {"c", "c", "q"}));
  ASSERT_EQ(recorder.changes.size(), 1u);
  EXPECT_EQ(recorder.LastNames(), (std::vector<std::string>{"a", "c", "z"}));
  EXPECT_EQ(cache.version(), "2");
}

// Current() builds the snapshot once per version: the same object until the next real change,
// with the per-resource flag and the cache version on its only type.
TEST(LinearCacheTest, CurrentIsBuiltOncePerVersion) {
  LinearCache cache(kEds, LinearCache::Options{"v", nullptr});
  ASSERT_OK(cache.SetResources({Endpoints("a", {1})}));
  auto w1 = cache.CreateWatch(NodeWithId("n1"), [](const ConfigChange&) {});
  auto w2 = cache.CreateWatch(NodeWithId("n2"), [](const ConfigChange&) {});
  SnapshotPtr first = w1->Current();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(w1->Current(), first);
  EXPECT_EQ(w2->Current(), first);
  EXPECT_EQ(cache.snapshots_built(), 1u);
  EXPECT_EQ(first->types().size(), 1u);
  const Snapshot::TypeResources* part = first->resources(kEds);
  ASSERT_NE(part, nullptr);
  EXPECT_FALSE(part->version_covers_all);
  EXPECT_EQ(part->version, "v1");

  ASSERT_OK(cache.UpdateResource(Endpoints("a", {1})));  // no change
  EXPECT_EQ(w1->Current(), first);
  ASSERT_OK(cache.UpdateResource(Endpoints("b", {1})));
  ASSERT_OK(cache.UpdateResource(Endpoints("c", {1})));  // two versions, none read in between
  SnapshotPtr second = w2->Current();
  EXPECT_NE(second, first);
  EXPECT_EQ(w1->Current(), second);
  EXPECT_EQ(cache.snapshots_built(), 2u);
  EXPECT_EQ(second->version(kEds), "v3");
  EXPECT_EQ(second->resources(kEds)->items.size(), 3u);
  // The old snapshot is immutable.
  EXPECT_EQ(first->resources(kEds)->items.size(), 1u);
}

// Null resources, resources of another type, duplicate names and contradictory batches are
// refused with InvalidArgument, and nothing changes.
TEST(LinearCacheTest, InvalidWritesAreRefused) {
  LinearCache cache(kEds);
  ASSERT_OK(cache.SetResources({Endpoints("a", {1})}));
  int calls = 0;
  auto watch = cache.CreateWatch(NodeWithId("n"), [&calls](const ConfigChange&) { calls++; });
  EXPECT_EQ(cache.UpdateResource(EdsCluster("a")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.UpdateResource(nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.SetResources({Endpoints("b", {1}), Endpoints("b", {2})}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.SetResources({Endpoints("b", {1}), StaticCluster("c")}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.UpdateResources({Endpoints("b", {1})}, {"b"}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.UpdateResources({Endpoints("b", {1}), nullptr}, {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.version(), "1");
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.Get("b"), nullptr);
  EXPECT_EQ(calls, 0);
}

// Changing interest moves the watch in the index, and destroying the watch removes it.
TEST(LinearCacheTest, InterestIndexFollowsTheWatch) {
  LinearCache cache(kEds);
  auto watch = cache.CreateWatch(NodeWithId("n"), [](const ConfigChange&) {});
  watch->SetInterest(kEds, false, Names({"a", "b"}));
  EXPECT_EQ(cache.num_watches_for("a"), 1u);
  watch->SetInterest(kEds, false, Names({"b", "c"}));
  EXPECT_EQ(cache.num_watches_for("a"), 0u);
  EXPECT_EQ(cache.num_watches_for("b"), 1u);
  EXPECT_EQ(cache.num_watches_for("c"), 1u);
  watch->SetInterest(kEds, /*wildcard=*/true, {});
  EXPECT_EQ(cache.num_watches_for("b"), 0u);
  EXPECT_EQ(cache.num_wildcard_watches(), 1u);
  watch->SetInterest(kEds, false, Names({"d"}));
  EXPECT_EQ(cache.num_wildcard_watches(), 0u);
  EXPECT_EQ(cache.num_watches_for("d"), 1u);
  watch.reset();
  EXPECT_EQ(cache.num_watches_for("d"), 0u);
  EXPECT_EQ(cache.num_watches(), 0u);
}

// A destroyed watch is never called again; status follows the node's open watches and
// requests (on an injected clock), and is forgotten with the last watch.
TEST(LinearCacheTest, CancelledWatchAndStatus) {
  SimulatedClock clock;
  LinearCache cache(kEds, LinearCache::Options{"", &clock});
  int calls = 0;
  auto w1 = cache.CreateWatch(NodeWithId("n"), [&calls](const ConfigChange&) { calls++; });
  auto w2 = cache.CreateWatch(NodeWithId("n"), [](const ConfigChange&) {});
  EXPECT_EQ(cache.GetStatus("n")->open_watches, 2);
  EXPECT_FALSE(cache.GetStatus("n")->last_request_time.has_value());
  clock.Advance(absl::Seconds(3));
  w2->RecordRequest();
  EXPECT_EQ(cache.GetStatus("n")->last_request_time, clock.Now());
  EXPECT_EQ(cache.GetStatus("n")->node.id(), "n");
  w1.reset();
  ASSERT_OK(cache.UpdateResource(Endpoints("a", {1})));
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(cache.GetStatus("n")->open_watches, 1);
  w2.reset();
  EXPECT_FALSE(cache.GetStatus("n").has_value());
}

// Writers, watch creation/destruction, interest changes and Current() race-free (run under
// ThreadSanitizer); no callback runs after its watch's destructor returned, and the final
// state is the last write.
TEST(LinearCacheTest, ConcurrentWritesAndWatches) {
  LinearCache cache(kEds);
  constexpr int kNames = 16;
  constexpr int kRounds = 60;
  // One probe per watch, shared with its callback, to catch calls after destruction.
  struct Probe {
    std::atomic<bool> destroyed{false};
    std::atomic<int> running{0};
    std::atomic<int> late_calls{0};
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&cache, t] {
      for (int round = 0; round < kRounds; ++round) {
        std::vector<ResourcePtr> upserts;
        for (int i = t; i < kNames; i += 2) {
          upserts.push_back(Endpoints(StrCat("cla-", i), {static_cast<uint32_t>(round)}));
        }
        EXPECT_OK(cache.UpdateResources(std::move(upserts), {}));
        if (round % 10 == 5) {
          EXPECT_OK(cache.DeleteResource(StrCat("cla-", t)));
        }
      }
    });
  }
  std::atomic<int> late_total{0};
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&cache, &late_total, t] {
      for (int round = 0; round < kRounds; ++round) {
        auto probe = std::make_shared<Probe>();
        auto watch = cache.CreateWatch(NodeWithId(StrCat("node-", t)), [probe](const ConfigChange&) {
          probe->running++;
          if (probe->destroyed) probe->late_calls++;
          probe->running--;
        });
        if (round % 3 == 1) watch->SetInterest(kEds, /*wildcard=*/true, {});
        if (round % 3 == 2) watch->SetInterest(kEds, false, Names({StrCat("cla-", round % kNames)}));
        watch->RecordRequest();
        SnapshotPtr current = watch->Current();
        if (current != nullptr) {
          EXPECT_NE(current->resources(kEds), nullptr);
        }
        watch.reset();
        // The destructor waited for a running callback, and none starts afterwards.
        if (probe->running.load() != 0) late_total++;
        probe->destroyed = true;
        late_total += probe->late_calls.load();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(late_total.load(), 0);
  EXPECT_EQ(cache.num_watches(), 0u);
  EXPECT_FALSE(cache.GetStatus("node-0").has_value());
  // The last round wrote every name with port kRounds - 1 (deletions happen in earlier rounds).
  ASSERT_EQ(cache.size(), static_cast<size_t>(kNames));
  auto watch = cache.CreateWatch(NodeWithId("reader"), [](const ConfigChange&) {});
  SnapshotPtr current = watch->Current();
  ASSERT_NE(current, nullptr);
  EXPECT_EQ(current->version(kEds), cache.version());
  EXPECT_EQ(current->Find(kEds, "cla-3")->content_version(), Endpoints("cla-3", {kRounds - 1})->content_version());
}

}  // namespace
}  // namespace cxds
