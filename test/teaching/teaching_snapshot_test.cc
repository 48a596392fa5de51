// The teaching control plane's snapshot (README.md, "The teaching control plane").
#include "cxds/teaching_snapshot.h"

#include "common/status_matchers.h"
#include "envoy/config/route/v3/route.pb.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds::teaching {
namespace {

// Version 1 has the five resources, one version string, and is strictly consistent.
TEST(TeachingSnapshotTest, VersionOneIsConsistent) {
  ASSERT_OK_AND_ASSIGN(SnapshotPtr s, BuildTeachingSnapshot({"1", 18080, true}));
  for (std::string_view type : {kListenerType, kRouteType, kClusterType, kEndpointType}) {
    EXPECT_EQ(s->version(std::string(type)), "1");
  }
  EXPECT_EQ(s->resources(std::string(kListenerType))->items.size(), 2u);
  EXPECT_NE(s->Find(std::string(kListenerType), kApiListenerName), nullptr);
  EXPECT_NE(s->Find(std::string(kEndpointType), kClusterName), nullptr);
  EXPECT_OK(s->ConsistentStrict());
}

// `invalid`: consistent and encodable, but the first route's match has no path specifier.
TEST(TeachingSnapshotTest, InvalidRouteIsConsistentButHasNoPathSpecifier) {
  ASSERT_OK_AND_ASSIGN(SnapshotPtr s, BuildTeachingSnapshot({"3", 18081, false}));
  EXPECT_OK(s->ConsistentStrict());
  const auto& routes = dynamic_cast<const envoy::config::route::v3::RouteConfiguration&>(
      s->Find(std::string(kRouteType), kRouteName)->message());
  EXPECT_EQ(routes.virtual_hosts(0).routes(0).match().path_specifier_case(),
            envoy::config::route::v3::RouteMatch::PATH_SPECIFIER_NOT_SET);
}

// Seed 003: a snapshot missing its RDS, or its EDS, is refused by the consistency check.
TEST(TeachingSnapshotTest, DroppingRdsOrEdsMakesItInconsistent) {
  ASSERT_OK_AND_ASSIGN(SnapshotPtr s, BuildTeachingSnapshot({"1", 18080, true}));
  for (std::string_view dropped : {kRouteType, kEndpointType}) {
    std::vector<ResourcePtr> kept;
    for (const auto& [type, resources] : s->types()) {
      if (type == dropped) continue;
      for (const auto& [name, resource] : resources->items) kept.push_back(resource);
    }
    ASSERT_OK_AND_ASSIGN(SnapshotPtr partial, Snapshot::Create("2", kept));
    EXPECT_FALSE(partial->Consistent().ok()) << "without " << dropped;
  }
}

// `port N` accepts 1-65535 only, with a clear error otherwise.
TEST(TeachingSnapshotTest, PortArgumentIsChecked) {
  EXPECT_EQ(ParsePort("18081").value(), 18081u);
  EXPECT_EQ(ParsePort("1").value(), 1u);
  EXPECT_EQ(ParsePort("65535").value(), 65535u);
  for (const char* bad : {"0", "65536", "-1", "80a", "", "99999999999"}) {
    auto port = ParsePort(bad);
    EXPECT_FALSE(port.ok()) << bad;
    EXPECT_EQ(port.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_FALSE(BuildTeachingSnapshot({"1", 0, true}).ok());
}

}  // namespace
}  // namespace cxds::teaching
