#include "push/push_request.h"

#include "gtest/gtest.h"
#include "model/mesh_kinds.h"
#include "pipeline/push_context.h"

namespace cxds {
namespace {

ConfigKey Key(const std::string& kind, const std::string& name) { return {kind, "ns", name}; }

TEST(PushRequestTest, MergeOrsFullUnionsConfigsSumsReasonsKeepsEarliestStart) {
  PushRequest a;
  a.configs = {Key(kind::kEndpoints, "a")};
  a.reasons = {{reason::kEndpoint, 2}};
  a.start = absl::FromUnixSeconds(20);
  a.change_ids = {1};
  PushRequest b;
  b.full = true;
  b.configs = {Key(kind::kServiceEntry, "b"), Key(kind::kEndpoints, "a")};
  b.reasons = {{reason::kEndpoint, 1}, {reason::kConfig, 1}};
  b.start = absl::FromUnixSeconds(10);
  b.change_ids = {2};
  a.Merge(b);
  EXPECT_TRUE(a.full);
  EXPECT_FALSE(a.forced);
  EXPECT_EQ(a.configs.size(), 2u);
  EXPECT_EQ(a.reasons[reason::kEndpoint], 3);
  EXPECT_EQ(a.reasons[reason::kConfig], 1);
  EXPECT_EQ(a.start, absl::FromUnixSeconds(10));
  EXPECT_EQ(a.change_ids, (std::set<uint64_t>{1, 2}));
  EXPECT_EQ(a.TotalReasons(), 4);
}

TEST(PushRequestTest, MergeKeepsTheNewestContextAndNeverNullsIt) {
  auto older = std::make_shared<PushContext>("v1", 1, absl::UnixEpoch());
  auto newer = std::make_shared<PushContext>("v2", 2, absl::UnixEpoch());
  PushRequest a;
  a.context = newer;
  a.push_sequence = 2;
  PushRequest b;  // no context
  a.Merge(b);
  EXPECT_EQ(a.context, newer);
  PushRequest c;
  c.context = older;
  c.push_sequence = 1;
  a.Merge(c);
  EXPECT_EQ(a.context, newer) << "an older context must not replace a newer one";
  EXPECT_EQ(a.push_sequence, 2u);
}

TEST(PushRequestTest, DeltaScopeSurvivesOnlyWhenBothSidesNarrow) {
  PushRequest a;
  a.delta_scope = DeltaScope{{"x"}, {}};
  PushRequest b;
  b.delta_scope = DeltaScope{{"y"}, {}};
  a.Merge(b);
  ASSERT_TRUE(a.delta_scope.has_value());
  EXPECT_EQ(a.delta_scope->subscribed, (std::set<std::string>{"x", "y"}));
  PushRequest unnarrowed;
  a.Merge(unnarrowed);
  EXPECT_FALSE(a.delta_scope.has_value()) << "merged with an unnarrowed push, nothing may be left out";
}

TEST(PushRequestTest, ResourceChangesUnionAndAnythingDominates) {
  PushRequest a;
  a.resources.types["t"] = std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"b", "a"});
  PushRequest b;
  b.resources.types["t"] = std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"c", "a"});
  b.resources.types["u"] = nullptr;
  a.Merge(b);
  ASSERT_NE(a.resources.types["t"], nullptr);
  EXPECT_EQ(*a.resources.types["t"], (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(a.resources.types["u"], nullptr);
  PushRequest c;
  c.resources.types["t"] = nullptr;
  a.Merge(c);
  EXPECT_EQ(a.resources.types["t"], nullptr);
}

TEST(PushRequestTest, EndpointOnlyNeedsOnlyEndpointKeysAndNothingForced) {
  PushRequest r;
  EXPECT_FALSE(r.EndpointOnly()) << "no configs is not endpoint-only";
  r.configs = {Key(kind::kEndpoints, "a")};
  EXPECT_TRUE(r.EndpointOnly());
  r.forced = true;
  EXPECT_FALSE(r.EndpointOnly());
  r.forced = false;
  r.configs.insert(Key(kind::kDestinationRule, "a"));
  EXPECT_FALSE(r.EndpointOnly());
}

// A request that keeps merging (a slow stream's pending push) carries only the newest change
// ids, so it does not grow with every change made meanwhile.
TEST(PushRequestTest, MergeKeepsTheNewestChangeIdsOnly) {
  PushRequest merged;
  for (uint64_t id = 1; id <= PushRequest::kMaxChangeIds + 100; ++id) {
    PushRequest one;
    one.change_ids.insert(id);
    merged.Merge(one);
  }
  ASSERT_EQ(merged.change_ids.size(), PushRequest::kMaxChangeIds);
  EXPECT_EQ(*merged.change_ids.begin(), 101u);
  EXPECT_EQ(*merged.change_ids.rbegin(), PushRequest::kMaxChangeIds + 100);
}

}  // namespace
}  // namespace cxds
