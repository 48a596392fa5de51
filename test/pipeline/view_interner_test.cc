// ViewInterner: equal views are one map; different ones are not; a view lives only as long as
// someone holds it, and the table does not grow with views nobody holds.
#include "pipeline/view_interner.h"

#include <map>
#include <string>

#include "fakes/test_resources.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

std::map<std::string, ResourcePtr> Items(std::vector<uint32_t> ports) {
  std::map<std::string, ResourcePtr> items;
  for (size_t i = 0; i < ports.size(); ++i) {
    const std::string name = "c" + std::to_string(i);
    items[name] = testing::Endpoints(name, {ports[i]});
  }
  return items;
}

TEST(ViewInternerTest, EqualViewsAreOneMapAndDifferentOnesAreNot) {
  ViewInterner views;
  const std::string eds(kEndpointType);
  Snapshot::TypeResourcesPtr a = views.Intern(eds, Items({1, 2}));
  // Built again (other resource objects, same content): the same view.
  Snapshot::TypeResourcesPtr b = views.Intern(eds, Items({1, 2}));
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->items.size(), 2u);
  EXPECT_FALSE(a->version_covers_all);
  Snapshot::TypeResourcesPtr c = views.Intern(eds, Items({1, 3}));
  EXPECT_NE(c.get(), a.get());
  EXPECT_NE(c->version, a->version);
  // The same content under another type is another view.
  EXPECT_NE(views.Intern(std::string(kClusterType), Items({1, 2})).get(), a.get());
  EXPECT_EQ(views.stats().shared, 1u);
}

// An endpoint change seen by many proxies: each patches its own view, and they all end up
// holding one new map, equal to the view built whole.
TEST(ViewInternerTest, PatchedViewsAreSharedAndEqualToTheViewBuiltWhole) {
  ViewInterner views;
  const std::string eds(kEndpointType);
  Snapshot::TypeResourcesPtr base = views.Intern(eds, Items({1, 2, 3}));
  const ViewInterner::Patch patch = {{"c1", testing::Endpoints("c1", {9})}, {"c2", nullptr}};
  Snapshot::TypeResourcesPtr first = views.InternPatched(eds, base, patch);
  Snapshot::TypeResourcesPtr second = views.InternPatched(eds, base, patch);
  EXPECT_EQ(first.get(), second.get());
  ASSERT_EQ(first->items.size(), 2u);
  EXPECT_EQ(first->items.at("c1")->content_version(), testing::Endpoints("c1", {9})->content_version());
  EXPECT_FALSE(first->items.contains("c2"));
  EXPECT_EQ(base->items.size(), 3u);  // the base is untouched (snapshots given out keep it)
  std::map<std::string, ResourcePtr> whole = Items({1, 9});
  EXPECT_EQ(views.Intern(eds, std::move(whole)).get(), first.get());
  EXPECT_EQ(first->version, ViewVersion(first->items));
  // From nothing.
  Snapshot::TypeResourcesPtr fresh = views.InternPatched(eds, nullptr, {{"c0", testing::Endpoints("c0", {1})}});
  EXPECT_EQ(fresh->items.size(), 1u);
}

TEST(ViewInternerTest, AViewNobodyHoldsIsMadeAgainAndTheTableStaysBounded) {
  ViewInterner views;
  const std::string eds(kEndpointType);
  const void* first = views.Intern(eds, Items({7})).get();  // released at once
  Snapshot::TypeResourcesPtr again = views.Intern(eds, Items({7}));
  EXPECT_EQ(views.stats().shared, 0u);  // nothing alive to share
  EXPECT_EQ(views.stats().created, 2u);
  (void)first;
  for (uint32_t port = 1; port <= 1000; ++port) views.Intern(eds, Items({port}));
  EXPECT_LT(views.stats().entries, 200u);  // swept as it grew: only `again` is alive
}

// The memo of patches: a second proxy given the same patch on the same base is answered from
// it; another patch, another base, or a base freed meanwhile are worked out again.
TEST(ViewInternerTest, TheSamePatchOnTheSameBaseIsAnsweredFromTheMemo) {
  ViewInterner views;
  const std::string eds(kEndpointType);
  Snapshot::TypeResourcesPtr base = views.Intern(eds, Items({1, 2}));
  const ViewInterner::Patch to9 = {{"c1", testing::Endpoints("c1", {9})}};
  Snapshot::TypeResourcesPtr first = views.InternPatched(eds, base, to9);
  EXPECT_EQ(views.stats().patches_memoized, 0u);
  // Another resource object with the same content: the same patch.
  Snapshot::TypeResourcesPtr second = views.InternPatched(eds, base, {{"c1", testing::Endpoints("c1", {9})}});
  EXPECT_EQ(second.get(), first.get());
  EXPECT_EQ(views.stats().patches_memoized, 1u);

  // Other content, a removal instead, another type: not from the memo, and right.
  Snapshot::TypeResourcesPtr to8 = views.InternPatched(eds, base, {{"c1", testing::Endpoints("c1", {8})}});
  EXPECT_NE(to8.get(), first.get());
  EXPECT_EQ(to8->items.at("c1")->content_version(), testing::Endpoints("c1", {8})->content_version());
  Snapshot::TypeResourcesPtr removed = views.InternPatched(eds, base, {{"c1", nullptr}});
  EXPECT_EQ(removed->items.size(), 1u);
  EXPECT_FALSE(removed->items.contains("c1"));
  Snapshot::TypeResourcesPtr cds = views.InternPatched(std::string(kClusterType), base, to9);
  EXPECT_NE(cds.get(), first.get());
  EXPECT_EQ(views.stats().patches_memoized, 1u);

  // From another base holding other items, the same patch gives another view.
  Snapshot::TypeResourcesPtr other_base = views.Intern(eds, Items({4, 2}));
  Snapshot::TypeResourcesPtr from_other = views.InternPatched(eds, other_base, to9);
  EXPECT_NE(from_other.get(), first.get());
  EXPECT_EQ(from_other->items.at("c0")->content_version(), other_base->items.at("c0")->content_version());
  EXPECT_EQ(views.stats().patches_memoized, 1u);
}

TEST(ViewInternerTest, AMemoizedPatchOfAFreedBaseIsNotReusedForANewOne) {
  ViewInterner views;
  const std::string eds(kEndpointType);
  const ViewInterner::Patch patch = {{"c1", testing::Endpoints("c1", {9})}};
  Snapshot::TypeResourcesPtr result;
  {
    Snapshot::TypeResourcesPtr base = views.Intern(eds, Items({1, 2}));
    result = views.InternPatched(eds, base, patch);
  }
  // The first base is gone; whatever address the next one gets, its patch is worked out on it.
  for (int i = 0; i < 50; ++i) {
    Snapshot::TypeResourcesPtr base = views.Intern(eds, Items({1, 2, 3, static_cast<uint32_t>(100 + i)}));
    Snapshot::TypeResourcesPtr patched = views.InternPatched(eds, base, patch);
    ASSERT_EQ(patched->items.size(), 4u);
    EXPECT_EQ(patched->items.at("c3")->content_version(), base->items.at("c3")->content_version());
  }
  EXPECT_EQ(views.stats().patches_memoized, 0u);
}

TEST(ViewInternerTest, ThePatchMemoStaysBoundedByTheViewsAlive) {
  ViewInterner views;
  const std::string eds(kEndpointType);
  Snapshot::TypeResourcesPtr base = views.Intern(eds, Items({1}));
  for (uint32_t port = 1; port <= 2000; ++port) {
    // Each result is released at once: nothing holds it, so its entry goes at the next sweep.
    views.InternPatched(eds, base, {{"c0", testing::Endpoints("c0", {port})}});
  }
  EXPECT_LT(views.stats().patch_entries, 200u);
}

}  // namespace
}  // namespace cxds
