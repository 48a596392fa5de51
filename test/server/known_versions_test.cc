// KnownVersions: what a Delta client holds. Entries sent share the resource's bytes, entries a
// client reported own theirs; replacing one by the other keeps every key valid (the table's
// keys view the entries' own names), which ASan checks in its tree.
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

}  // namespace
}  // namespace cxds
