// The SotW subscription state machine (docs/protocol-rules.md, R4.1, R4.2).
#include "protocol/subscription.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// R4.2: [] -> wildcard; ["*","A"] -> wildcard + A; ["A"] -> A only; [] -> nothing.
TEST(SotwSubscriptionTest, LegacyWildcardSequence) {
  SotwSubscription sub(kClusterType);
  sub.Apply({});
  EXPECT_TRUE(sub.wildcard());
  EXPECT_TRUE(sub.legacy_wildcard());
  auto change = sub.Apply({"*", "A"});
  EXPECT_TRUE(sub.wildcard());
  EXPECT_FALSE(sub.legacy_wildcard());
  EXPECT_THAT(change.added, ElementsAre("A"));
  EXPECT_THAT(sub.names(), UnorderedElementsAre("A"));
  change = sub.Apply({"A"});
  EXPECT_FALSE(sub.wildcard());
  EXPECT_TRUE(change.wildcard_removed);
  EXPECT_TRUE(sub.Covers("A"));
  EXPECT_FALSE(sub.Covers("B"));
  change = sub.Apply({});
  EXPECT_FALSE(sub.wildcard()) << "an empty list after names is not wildcard";
  EXPECT_TRUE(sub.empty());
  EXPECT_THAT(change.removed, ElementsAre("A"));
}

// E22: explicit "*" from the start; [] then means nothing, ["*"] wildcard again.
TEST(SotwSubscriptionTest, ExplicitWildcardFromStart) {
  SotwSubscription sub(kListenerType);
  sub.Apply({"*"});
  EXPECT_TRUE(sub.wildcard());
  EXPECT_FALSE(sub.legacy_wildcard());
  sub.Apply({});
  EXPECT_TRUE(sub.empty());
  auto change = sub.Apply({"*"});
  EXPECT_TRUE(change.wildcard_added);
  EXPECT_TRUE(sub.wildcard());
}

// R4.1 / E28: for EDS an empty list is "nothing" and "*" is an ordinary name.
TEST(SotwSubscriptionTest, NonWildcardTypesTakeNamesLiterally) {
  SotwSubscription sub(kEndpointType);
  sub.Apply({});
  EXPECT_FALSE(sub.wildcard());
  EXPECT_TRUE(sub.empty());
  sub.Apply({"*"});
  EXPECT_FALSE(sub.wildcard());
  EXPECT_TRUE(sub.Covers("*"));
  EXPECT_FALSE(sub.Covers("other"));
}

// Changes report exactly the names added and removed.
TEST(SotwSubscriptionTest, ChangeListsAddedAndRemoved) {
  SotwSubscription sub(kRouteType);
  sub.Apply({"a", "b"});
  auto change = sub.Apply({"b", "c"});
  EXPECT_THAT(change.added, ElementsAre("c"));
  EXPECT_THAT(change.removed, ElementsAre("a"));
  EXPECT_TRUE(change.adds_something());
  change = sub.Apply({"c", "b"});
  EXPECT_FALSE(change.any());
}

}  // namespace
}  // namespace cxds
