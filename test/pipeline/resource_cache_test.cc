#include "pipeline/resource_cache.h"

#include <atomic>
#include <thread>
#include <vector>

#include "fakes/test_resources.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds::testing {
namespace {

const ResourceCacheKey kKey{std::string(kClusterType), "a", "envoy"};
const ConfigKey kDep{"ServiceEntry", "default", "a"};

TEST(ResourceCacheTest, ConcurrentCallersForOneKeyShareOneBuild) {
  ResourceCache cache;
  std::atomic<int> builds{0};
  std::vector<ResourcePtr> got(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto r = cache.GetOrBuild(kKey, {kDep}, 1, [&]() -> absl::StatusOr<ResourcePtr> {
        builds++;
        return EdsCluster("a");
      });
      got[i] = *r;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(builds.load(), 1);
  for (const ResourcePtr& r : got) EXPECT_EQ(r, got[0]) << "every proxy gets the same bytes";
  EXPECT_EQ(cache.stats().builds, 1u);
  EXPECT_EQ(cache.stats().hits, 7u);
}

TEST(ResourceCacheTest, ClearDropsOnlyDependentEntries) {
  ResourceCache cache;
  const ResourceCacheKey other{std::string(kClusterType), "b", "envoy"};
  const ConfigKey other_dep{"ServiceEntry", "default", "b"};
  ASSERT_TRUE(cache.GetOrBuild(kKey, {kDep}, 1, [] { return absl::StatusOr<ResourcePtr>(EdsCluster("a")); }).ok());
  ASSERT_TRUE(
      cache.GetOrBuild(other, {other_dep}, 1, [] { return absl::StatusOr<ResourcePtr>(EdsCluster("b")); }).ok());
  cache.Clear({kDep}, 2);
  EXPECT_EQ(cache.stats().size, 1u);
  EXPECT_EQ(cache.stats().invalidations, 1u);
  int rebuilt = 0;
  ASSERT_TRUE(cache
                  .GetOrBuild(other, {other_dep}, 2,
                              [&] {
                                rebuilt++;
                                return absl::StatusOr<ResourcePtr>(EdsCluster("b"));
                              })
                  .ok());
  EXPECT_EQ(rebuilt, 0) << "b did not depend on a";
  cache.ClearAll(3);
  EXPECT_EQ(cache.stats().size, 0u);
}

// Edge 43: a generator still working for an old push must not store what a newer push
// invalidated.
TEST(ResourceCacheTest, ABuildForAnOlderPushIsReturnedButNotStored) {
  ResourceCache cache;
  cache.Clear({kDep}, 5);  // push 5 invalidated `a`
  auto stale = cache.GetOrBuild(kKey, {kDep}, 4, [] { return absl::StatusOr<ResourcePtr>(EdsCluster("a", "", 9)); });
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(cache.stats().size, 0u);
  EXPECT_EQ(cache.stats().stale_builds, 1u);
  int builds = 0;
  auto fresh = cache.GetOrBuild(kKey, {kDep}, 5, [&] {
    builds++;
    return absl::StatusOr<ResourcePtr>(EdsCluster("a"));
  });
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(builds, 1) << "the stale value was not served";
  EXPECT_NE((*fresh)->content_version(), (*stale)->content_version());
}

TEST(ResourceCacheTest, AFailedBuildIsNotCached) {
  ResourceCache cache;
  auto failed = cache.GetOrBuild(kKey, {kDep}, 1, [] { return absl::StatusOr<ResourcePtr>(absl::InternalError("x")); });
  EXPECT_FALSE(failed.ok());
  int builds = 0;
  auto ok = cache.GetOrBuild(kKey, {kDep}, 1, [&] {
    builds++;
    return absl::StatusOr<ResourcePtr>(EdsCluster("a"));
  });
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(builds, 1);
}

}  // namespace
}  // namespace cxds::testing
