// References between resources, as Consistent() and the EDS-after-CDS rule use them.
#include "protocol/references.h"

#include "fakes/test_resources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace cxds::testing;  // NOLINT

// A listener's HTTP connection manager names its RDS route configuration.
TEST(ReferencesTest, ListenerReferencesItsRouteConfiguration) {
  ResourceReferences refs;
  CollectReferences(*HttpListener("l", "routes-a"), &refs);
  EXPECT_THAT(refs.route_configurations, ElementsAre("routes-a"));
}

// A proxyless gRPC API listener names its route configuration too.
TEST(ReferencesTest, ApiListenerReferencesItsRouteConfiguration) {
  ResourceReferences refs;
  CollectReferences(*ApiListener("svc:80", "routes-b"), &refs);
  EXPECT_THAT(refs.route_configurations, ElementsAre("routes-b"));
}

// An EDS cluster names its CLA: service_name if set, else its own name; others name none.
TEST(ReferencesTest, EdsClusterReferencesItsLoadAssignment) {
  ResourceReferences refs;
  CollectReferences(*EdsCluster("c1"), &refs);
  CollectReferences(*EdsCluster("c2", "svc-2"), &refs);
  CollectReferences(*StaticCluster("static"), &refs);
  EXPECT_THAT(refs.load_assignments, ElementsAre("c1", "svc-2"));
  EXPECT_EQ(EdsServiceNameOf(*StaticCluster("static")), "");
}

// A route configuration names the clusters of its routes, weighted ones included.
TEST(ReferencesTest, RouteConfigurationReferencesClusters) {
  ResourceReferences refs;
  CollectReferences(*Routes("r", {"a"}), &refs);
  CollectReferences(*Routes("r2", {"b", "c"}), &refs);
  EXPECT_THAT(refs.clusters, ElementsAre("a", "b", "c"));
}

// Endpoints and secrets refer to nothing.
TEST(ReferencesTest, LeafTypesReferenceNothing) {
  ResourceReferences refs;
  CollectReferences(*Endpoints("c", {1}), &refs);
  CollectReferences(*Secret("s"), &refs);
  EXPECT_TRUE(refs.empty());
  EXPECT_THAT(refs.clusters, IsEmpty());
}

}  // namespace
}  // namespace cxds
