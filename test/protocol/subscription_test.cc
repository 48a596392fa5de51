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

// The names a subscription hands out (to the generator, which keeps them as the proxy's interest)
// never change under the holder: a change makes a new set; no change keeps the same one.
TEST(SubscriptionNamesTest, SharedNamesAreCopiedOnWriteAndKeptWhenUnchanged) {
  DeltaSubscription delta(kEndpointType);
  delta.Initial({"a", "b"}, {});
  const SubscribedNames before = delta.shared_names();
  delta.Update({"a"}, {"zzz"});  // nothing new, nothing subscribed removed
  EXPECT_EQ(delta.shared_names(), before) << "an update that changes nothing keeps the set";
  delta.Update({"c"}, {"a"});
  EXPECT_THAT(*before, UnorderedElementsAre("a", "b")) << "the set handed out changed";
  EXPECT_THAT(delta.names(), UnorderedElementsAre("b", "c"));
  delta.Update({}, {"b", "c"});
  EXPECT_TRUE(delta.names().empty());

  SotwSubscription sotw(kEndpointType);
  sotw.Apply({"a", "b"});
  const SubscribedNames first = sotw.shared_names();
  sotw.Apply({"b", "a"});
  EXPECT_EQ(sotw.shared_names(), first) << "the same names in another order are no change";
  sotw.Apply({"a"});
  EXPECT_THAT(*first, UnorderedElementsAre("a", "b"));
  EXPECT_THAT(sotw.names(), UnorderedElementsAre("a"));
}

// Equal subscriptions on different streams hold one set (a mesh's sidecars ask EDS for the same
// clusters); a set no subscription holds any more is not kept alive by the interner.
TEST(SubscriptionNamesTest, EqualSubscriptionsShareOneSet) {
  DeltaSubscription first(kEndpointType);
  first.Initial({"outbound|80||a", "outbound|80||b"}, {});
  DeltaSubscription second(kEndpointType);
  second.Initial({"outbound|80||b"}, {});
  EXPECT_NE(second.shared_names(), first.shared_names());
  second.Update({"outbound|80||a"}, {});
  EXPECT_EQ(second.shared_names(), first.shared_names()) << "built in other steps, the same names";
  SotwSubscription third(kEndpointType);
  third.Apply({"outbound|80||b", "outbound|80||a"});
  EXPECT_EQ(third.shared_names(), first.shared_names()) << "SotW and Delta alike";

  std::weak_ptr<const absl::flat_hash_set<std::string>> only_here;
  {
    DeltaSubscription alone(kEndpointType);
    alone.Initial({"outbound|80||only-here"}, {});
    only_here = alone.shared_names();
  }
  EXPECT_TRUE(only_here.expired());
}

}  // namespace
}  // namespace cxds
