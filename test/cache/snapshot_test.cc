// Snapshots: construction rules and Consistent() (docs/protocol-rules.md, "Consistency check").
#include "cache/snapshot.h"

#include "common/status_matchers.h"
#include "fakes/test_resources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "protocol/type_url.h"

namespace cxds {
namespace {

using ::testing::HasSubstr;
using namespace cxds::testing;  // NOLINT

const std::string kCds(kClusterType);
const std::string kEds(kEndpointType);

// Every type present, and every core type, carries the snapshot's version.
TEST(SnapshotTest, EveryTypeGetsTheVersion) {
  ASSERT_OK_AND_ASSIGN(SnapshotPtr s, Snapshot::Create("7", {EdsCluster("c"), Endpoints("c", {1})}));
  EXPECT_EQ(s->version(kCds), "7");
  EXPECT_EQ(s->version(std::string(kListenerType)), "7") << "absent core type: empty at this version";
  EXPECT_EQ(s->version("type.googleapis.com/other.Type"), "");
  EXPECT_EQ(s->resources("type.googleapis.com/other.Type"), nullptr);
  EXPECT_NE(s->Find(kCds, "c"), nullptr);
  EXPECT_EQ(s->Find(kCds, "missing"), nullptr);
}

// E64 / R6.5: two resources of one type with one name are refused, not collapsed.
TEST(SnapshotTest, DuplicateNamesAreRefused) {
  auto s = Snapshot::Create("1", {EdsCluster("dup"), EdsCluster("dup", "", 2)});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("duplicate CDS resource name \"dup\""));
}

// An empty version would equal a first request's empty version_info: refused.
TEST(SnapshotTest, EmptyVersionIsRefused) {
  EXPECT_FALSE(Snapshot::Create("", {EdsCluster("c")}).ok());
  EXPECT_FALSE(Snapshot::CreateWithTypeVersions({{kCds, ""}}, {EdsCluster("c")}).ok());
}

// Per-type versions: each resource's type must have one.
TEST(SnapshotTest, PerTypeVersions) {
  ASSERT_OK_AND_ASSIGN(SnapshotPtr s, Snapshot::CreateWithTypeVersions({{kCds, "c-1"}, {kEds, "e-9"}},
                                                                       {EdsCluster("c"), Endpoints("c", {1})}));
  EXPECT_EQ(s->version(kCds), "c-1");
  EXPECT_EQ(s->version(kEds), "e-9");
  EXPECT_FALSE(Snapshot::CreateWithTypeVersions({{kCds, "c-1"}}, {Endpoints("c", {1})}).ok());
}

// A consistent snapshot passes both checks.
TEST(SnapshotTest, CompleteSnapshotIsConsistent) {
  SnapshotPtr s = MustSnapshot(
      "1", {HttpListener("l", "r"), Routes("r", {"c"}), EdsCluster("c"), Endpoints("c", {1}), StaticCluster("s")});
  EXPECT_OK(s->Consistent());
  EXPECT_OK(s->ConsistentStrict());
}

// Seed 003: a listener whose RDS is missing makes the snapshot inconsistent, naming it.
TEST(SnapshotTest, MissingRouteConfigurationIsInconsistent) {
  SnapshotPtr s = MustSnapshot("1", {HttpListener("l", "quote-route"), EdsCluster("c"), Endpoints("c", {1})});
  absl::Status status = s->Consistent();
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              HasSubstr("RouteConfiguration \"quote-route\" is referenced by a listener but missing"));
}

// Seed 003: an EDS cluster whose CLA is missing makes the snapshot inconsistent, naming it.
TEST(SnapshotTest, MissingLoadAssignmentIsInconsistent) {
  SnapshotPtr s = MustSnapshot("1", {EdsCluster("inventory")});
  absl::Status status = s->Consistent();
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              HasSubstr("ClusterLoadAssignment \"inventory\" is referenced by an EDS cluster but missing"));
}

// go-control-plane's rule is exact: an unreferenced CLA or route is an error too.
TEST(SnapshotTest, ExtraResourcesAreInconsistent) {
  SnapshotPtr s = MustSnapshot("1", {Endpoints("orphan", {1}), Routes("unused", {"c"})});
  absl::Status status = s->Consistent();
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("ClusterLoadAssignment \"orphan\" is in the snapshot but no"));
  EXPECT_THAT(status.message(), HasSubstr("RouteConfiguration \"unused\" is in the snapshot but no"));
}

// EDS service_name decides which CLA a cluster needs.
TEST(SnapshotTest, ServiceNameDecidesTheLoadAssignment) {
  EXPECT_OK(MustSnapshot("1", {EdsCluster("c", "svc"), Endpoints("svc", {1})})->Consistent());
  EXPECT_FALSE(MustSnapshot("1", {EdsCluster("c", "svc"), Endpoints("c", {1})})->Consistent().ok());
}

// Strict (opt-in): a route naming a cluster that does not exist fails; plain Consistent passes.
TEST(SnapshotTest, StrictCheckFindsMissingRouteCluster) {
  SnapshotPtr s =
      MustSnapshot("1", {HttpListener("l", "r"), Routes("r", {"c", "ghost"}), EdsCluster("c"), Endpoints("c", {1})});
  EXPECT_OK(s->Consistent());
  absl::Status strict = s->ConsistentStrict();
  ASSERT_FALSE(strict.ok());
  EXPECT_THAT(strict.message(), HasSubstr("Cluster \"ghost\" is referenced by a route configuration"));
}

// EA2: a type whose resources are the same (equal content, not only the same objects) keeps
// the previous snapshot's part, version and all; a changed type, or one whose TTL changed,
// takes the new one.
TEST(SnapshotTest, KeepUnchangedTypesKeepsOnlyTheUnchanged) {
  SnapshotPtr before = MustSnapshot("1", {EdsCluster("c1"), Endpoints("c1", {1})});
  // Built anew: equal bytes in other Resource objects.
  SnapshotPtr after = MustSnapshot("2", {EdsCluster("c1"), Endpoints("c1", {2})});
  SnapshotPtr merged = Snapshot::KeepUnchangedTypes(before, after);
  EXPECT_EQ(merged->version(kCds), "1");
  EXPECT_EQ(merged->resources(kCds), before->resources(kCds)) << "the unchanged part is shared";
  EXPECT_EQ(merged->version(kEds), "2");
  EXPECT_EQ(merged->resources(kEds), after->resources(kEds));
  // Types present only in `before` are gone, as in `after`; empty core types are kept.
  EXPECT_EQ(merged->version(std::string(kListenerType)), "1");

  EXPECT_EQ(Snapshot::KeepUnchangedTypes(before, MustSnapshot("3", {EdsCluster("c1"), Endpoints("c1", {1})})), before)
      << "nothing changed: the previous snapshot itself";
  EXPECT_EQ(Snapshot::KeepUnchangedTypes(nullptr, after), after);

  ASSERT_OK_AND_ASSIGN(ResourcePtr with_ttl, Resource::FromMessage(EdsCluster("c1")->message(), absl::Seconds(5)));
  SnapshotPtr ttl = MustSnapshot("4", {with_ttl, Endpoints("c1", {1})});
  EXPECT_EQ(Snapshot::KeepUnchangedTypes(before, ttl)->version(kCds), "4") << "a new TTL is a change";

  SnapshotPtr renamed = MustSnapshot("5", {EdsCluster("c2"), Endpoints("c2", {1})});
  EXPECT_EQ(Snapshot::KeepUnchangedTypes(before, renamed)->version(kEds), "5") << "other names are a change";
}

}  // namespace
}  // namespace cxds
