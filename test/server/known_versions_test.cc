// KnownVersions: what a Delta client holds. Entries sent are the resources themselves, entries a
// client reported own their strings; a name moves between the two and is held once.
#include "server/known_versions.h"

#include <algorithm>
#include <string>
#include <vector>

#include "fakes/test_resources.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

TEST(KnownVersionsTest, SentAndReportedVersionsAreComparedByContent) {
  KnownVersions known;
  const ResourcePtr v1 = testing::Endpoints("c1", {1});
  const ResourcePtr v2 = testing::Endpoints("c1", {2});
  EXPECT_FALSE(known.Contains("c1"));
  EXPECT_FALSE(known.HoldsSameContent(*v1));

  known.Reported("c1", v1->content_version());  // a reconnecting client holds v1
  EXPECT_TRUE(known.HoldsSameContent(*v1));
  EXPECT_FALSE(known.HoldsSameContent(*v2));
  EXPECT_EQ(*known.Version("c1"), v1->content_version());

  known.Sent(v2);  // replaces the reported entry and its key
  EXPECT_TRUE(known.HoldsSameContent(*v2));
  EXPECT_FALSE(known.HoldsSameContent(*v1));
  known.Reported("c1", "client-says");  // and back
  EXPECT_EQ(*known.Version("c1"), "client-says");
  known.Sent(testing::Endpoints("c1", {3}));
  known.Sent(v2);  // sent over sent
  EXPECT_TRUE(known.HoldsSameContent(*v2));
  EXPECT_EQ(known.size(), 1u);

  // The same content built again (a cache rebuild) is the same content.
  EXPECT_TRUE(known.HoldsSameContent(*testing::Endpoints("c1", {2})));
}

TEST(KnownVersionsTest, EraseAndIterateByName) {
  KnownVersions known;
  for (const char* name : {"a", "b", "c"}) known.Sent(testing::Endpoints(name, {1}));
  known.Reported("d", "1");
  EXPECT_TRUE(known.Erase("b"));
  EXPECT_FALSE(known.Erase("b"));
  std::vector<std::string> names;
  known.ForEachName([&](std::string_view name) { names.emplace_back(name); });
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_EQ(known.Version("b"), nullptr);
}

TEST(KnownVersionsTest, ANameIsHeldOnceWhetherSentOrReported) {
  KnownVersions known;
  known.Reported("a", "old");
  known.Sent(testing::Endpoints("a", {1}));
  known.Reported("a", "older");
  EXPECT_EQ(known.size(), 1u);
  EXPECT_EQ(*known.Version("a"), "older");
  EXPECT_TRUE(known.Erase("a"));
  EXPECT_FALSE(known.Contains("a"));
  EXPECT_EQ(known.size(), 0u);
  int seen = 0;
  known.ForEachName([&](std::string_view) { seen++; });
  EXPECT_EQ(seen, 0);
}

}  // namespace
}  // namespace cxds
