#include "config/config_store.h"

#include "gtest/gtest.h"
#include "model/mesh_model.h"

namespace cxds {
namespace {

std::string We(const std::string& name, const std::string& address) {
  return "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: " + name +
         "}\nspec: {address: " + address + "}\n---\n";
}

const ConfigKey kA{"WorkloadEntry", "default", "a"};
const ConfigKey kB{"WorkloadEntry", "default", "b"};

// ObjectsOfKind is the kind's whole range and nothing else, also where one kind's name is the
// start of another's ("Service" and "ServiceEntry").
TEST(ConfigStoreTest, ObjectsOfKindIsExactlyThatKind) {
  ObjectMap objects;
  for (const ConfigKey& key :
       {ConfigKey{"EndpointSlice", "a", "x"}, ConfigKey{"Service", "a", "x"}, ConfigKey{"Service", "b", ""},
        ConfigKey{"Service", "b", "y"}, ConfigKey{"ServiceEntry", "a", "x"}, ConfigKey{"Sidecar", "", ""}}) {
    objects[key] = std::make_shared<StoredObject>();
  }
  const auto keys = [&](std::string_view kind) {
    std::vector<ConfigKey> out;
    for (const auto& [key, object] : ObjectsOfKind(objects, kind)) out.push_back(key);
    return out;
  };
  EXPECT_EQ(keys("Service"),
            (std::vector<ConfigKey>{{"Service", "a", "x"}, {"Service", "b", ""}, {"Service", "b", "y"}}));
  EXPECT_EQ(keys("ServiceEntry"), (std::vector<ConfigKey>{{"ServiceEntry", "a", "x"}}));
  EXPECT_EQ(keys("Sidecar"), (std::vector<ConfigKey>{{"Sidecar", "", ""}}));
  EXPECT_TRUE(keys("Servic").empty());
  EXPECT_TRUE(keys("Pod").empty());
  EXPECT_TRUE(ObjectsOfKind(ObjectMap{}, "Service").empty());
}

TEST(ConfigStoreTest, AddChangeUnchangedAndRemove) {
  ConfigStore store;
  auto u = store.ApplyFile("f.yaml", We("a", "127.0.0.1") + We("b", "127.0.0.2"));
  EXPECT_EQ(u.changed.size(), 2u);
  u = store.ApplyFile("f.yaml", "# edited comment only\n" + We("a", "127.0.0.1") + We("b", "127.0.0.2"));
  EXPECT_TRUE(u.empty()) << "an unchanged document changes nothing";
  u = store.ApplyFile("f.yaml", We("a", "127.0.0.9"));
  ASSERT_EQ(u.changed.size(), 2u);
  EXPECT_NE(u.changed.at(kA).first, nullptr);
  EXPECT_NE(u.changed.at(kA).second, nullptr);
  EXPECT_EQ(u.changed.at(kB).second, nullptr) << "b left the file: removed";
  u = store.ApplyFile("f.yaml", std::nullopt);
  EXPECT_EQ(u.changed.size(), 1u);
  EXPECT_TRUE(store.Snapshot()->empty());
}

TEST(ConfigStoreTest, AnInvalidDocumentKeepsItsLastGoodVersionAndTouchesNothingElse) {
  ConfigStore store;
  store.ApplyFile("f.yaml", We("a", "127.0.0.1") + We("b", "127.0.0.2"));
  const std::string bad_b =
      "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: b}\nspec: {address: 127.0.0.3, "
      "weight: heavy}\n";
  auto u = store.ApplyFile("f.yaml", We("a", "127.0.0.5") + bad_b);
  ASSERT_EQ(u.changed.size(), 1u) << "a changed; b is kept as it was";
  EXPECT_TRUE(u.changed.contains(kA));
  ASSERT_EQ(u.errors.size(), 1u);
  EXPECT_EQ(u.errors[0].line, 9);
  const auto snapshot = store.Snapshot();
  ASSERT_TRUE(snapshot->contains(kB));
  EXPECT_EQ(std::get<WorkloadEntry>(snapshot->at(kB)->object).spec.address, "127.0.0.2");
  EXPECT_EQ(store.error_count(), 1u);
  // Fixing the document clears the error.
  u = store.ApplyFile("f.yaml", We("a", "127.0.0.5") + We("b", "127.0.0.3"));
  EXPECT_EQ(u.changed.size(), 1u);
  EXPECT_EQ(store.error_count(), 0u);
}

TEST(ConfigStoreTest, AHalfWrittenFileKeepsEverythingItDefined) {
  ConfigStore store;
  store.ApplyFile("f.yaml", We("a", "127.0.0.1") + We("b", "127.0.0.2"));
  auto u = store.ApplyFile("f.yaml", "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: a");
  EXPECT_TRUE(u.empty());
  EXPECT_EQ(u.errors.size(), 1u);
  EXPECT_EQ(store.Snapshot()->size(), 2u);
}

TEST(ConfigStoreTest, AnObjectDefinedInTwoFilesBelongsToTheFirst) {
  ConfigStore store;
  store.ApplyFile("one.yaml", We("a", "127.0.0.1"));
  auto u = store.ApplyFile("two.yaml", We("a", "127.0.0.2"));
  EXPECT_TRUE(u.empty());
  ASSERT_EQ(u.errors.size(), 1u);
  EXPECT_NE(u.errors[0].message.find("already defined in one.yaml"), std::string::npos);
  EXPECT_EQ(std::get<WorkloadEntry>(store.Snapshot()->at(kA)->object).spec.address, "127.0.0.1");
}

std::string Address(const ConfigStore& store, const ConfigKey& key) {
  auto snapshot = store.Snapshot();
  auto it = snapshot->find(key);
  return it == snapshot->end() ? "" : std::get<WorkloadEntry>(it->second->object).spec.address;
}

TEST(ConfigStoreTest, DuplicatesAreOwnedByPathOrderWhateverOrderEventsArriveIn) {
  // At start files are read in path order; at run time events come in any order. The owner
  // must be the same either way.
  ConfigStore at_start;
  at_start.ApplyFiles(
      {FileRead::Present("a.yaml", We("a", "127.0.0.1")), FileRead::Present("b.yaml", We("a", "127.0.0.2"))});
  ConfigStore at_run_time;
  at_run_time.ApplyFile("b.yaml", We("a", "127.0.0.2"));
  auto u = at_run_time.ApplyFile("a.yaml", We("a", "127.0.0.1"));
  EXPECT_EQ(Address(at_start, kA), "127.0.0.1");
  EXPECT_EQ(Address(at_run_time, kA), "127.0.0.1") << "a.yaml sorts first, so it owns the object";
  ASSERT_EQ(u.changed.size(), 1u);
  EXPECT_EQ(at_run_time.error_count(), 1u) << "b.yaml's definition is reported as a duplicate";
  for (const auto& status : at_run_time.Status()) {
    if (status.path == "b.yaml") {
      ASSERT_EQ(status.errors.size(), 1u);
      EXPECT_NE(status.errors[0].message.find("already defined in a.yaml:1"), std::string::npos);
    }
  }
}

TEST(ConfigStoreTest, AnObjectSurvivesWhileAnyDefinitionOfItRemains) {
  ConfigStore store;
  store.ApplyFiles(
      {FileRead::Present("a.yaml", We("a", "127.0.0.1")), FileRead::Present("b.yaml", We("a", "127.0.0.2"))});
  auto u = store.ApplyFile("a.yaml", std::nullopt);
  ASSERT_EQ(u.changed.size(), 1u) << "b.yaml's definition takes over: changed, not removed";
  EXPECT_NE(u.changed.at(kA).second, nullptr);
  EXPECT_EQ(Address(store, kA), "127.0.0.2");
  EXPECT_EQ(store.error_count(), 0u) << "no duplicate any more";
  const auto status = store.Status();
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(status[0].path, "b.yaml") << "the status says where the object comes from now";
  EXPECT_EQ(status[0].accepted.size(), 1u);
  store.ApplyFile("b.yaml", std::nullopt);
  EXPECT_TRUE(store.Snapshot()->empty());
}

TEST(ConfigStoreTest, AFileMovedInOneBatchChangesNothing) {
  ConfigStore store;
  store.ApplyFile("old.yaml", We("a", "127.0.0.1"));
  auto u = store.ApplyFiles({FileRead::Removed("old.yaml"), FileRead::Present("new.yaml", We("a", "127.0.0.1"))});
  EXPECT_TRUE(u.empty()) << "the object is the same; no push";
  EXPECT_EQ(Address(store, kA), "127.0.0.1");
}

TEST(ConfigStoreTest, AnUnreadableFileKeepsItsObjectsAndSaysWhy) {
  ConfigStore store;
  store.ApplyFile("f.yaml", We("a", "127.0.0.1"));
  auto u = store.ApplyFiles({FileRead::Unreadable("f.yaml", "Permission denied")});
  EXPECT_TRUE(u.empty());
  ASSERT_EQ(u.errors.size(), 1u);
  EXPECT_NE(u.errors[0].message.find("Permission denied"), std::string::npos);
  EXPECT_EQ(Address(store, kA), "127.0.0.1");
  // Readable again with the same content: the error clears, nothing changes.
  u = store.ApplyFile("f.yaml", We("a", "127.0.0.1"));
  EXPECT_TRUE(u.empty());
  EXPECT_EQ(store.error_count(), 0u);
}

TEST(ConfigStoreTest, ADocumentWithoutSpecKeepsTheLastGoodVersion) {
  // What an editor's half-written save looks like.
  ConfigStore store;
  store.ApplyFile("f.yaml", We("a", "127.0.0.1"));
  auto u = store.ApplyFile("f.yaml", "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: a}\n");
  EXPECT_TRUE(u.empty());
  EXPECT_EQ(Address(store, kA), "127.0.0.1");
  EXPECT_EQ(store.error_count(), 1u);
}

const char* kRule = R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: inventory}
spec:
  host: inventory.example.com
  subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]
---
)";
const char* kRuleV1Only = R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: inventory}
spec:
  host: inventory.example.com
  subsets: [{name: v1, labels: {version: v1}}]
---
)";
std::string Routes(const std::string& subset) {
  return R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: inventory}
spec:
  hosts: [inventory.example.com]
  http:
  - route: [{destination: {host: inventory.example.com, subset: )" +
         subset + "}}]\n";
}
const ConfigKey kRoutes{"VirtualService", "default", "inventory"};
const ConfigKey kRuleKey{"DestinationRule", "default", "inventory"};

ConfigStore::Options Checked() { return {.check_references = MeshReferenceCheck("cluster.local")}; }

TEST(ConfigStoreTest, ARouteToAnUndefinedSubsetIsRefusedWithItsField) {
  ConfigStore store(Checked());
  auto u = store.ApplyFiles({FileRead::Present("rules.yaml", kRule), FileRead::Present("routes.yaml", Routes("v3"))});
  EXPECT_FALSE(store.Snapshot()->contains(kRoutes)) << "a new VirtualService to a missing subset is not served";
  ASSERT_EQ(store.error_count(), 1u);
  bool found = false;
  for (const ConfigError& e : u.errors) {
    if (e.field == "spec.http[0].route[0].destination.subset") {
      found = true;
      EXPECT_EQ(e.file, "routes.yaml");
      EXPECT_EQ(e.line, 1);
      EXPECT_NE(e.message.find("subset \"v3\" is not defined by DestinationRule default/inventory"), std::string::npos)
          << e.message;
    }
  }
  EXPECT_TRUE(found);
  // Fixed: served, error gone.
  store.ApplyFile("routes.yaml", Routes("v2"));
  EXPECT_TRUE(store.Snapshot()->contains(kRoutes));
  EXPECT_EQ(store.error_count(), 0u);
  // Broken again: the last good version (v2) keeps serving.
  store.ApplyFile("routes.yaml", Routes("v9"));
  ASSERT_TRUE(store.Snapshot()->contains(kRoutes));
  EXPECT_EQ(std::get<VirtualService>(store.Snapshot()->at(kRoutes)->object).http[0].route[0].subset, "v2");
  EXPECT_EQ(store.error_count(), 1u);
}

TEST(ConfigStoreTest, RemovingASubsetStillRoutedToIsRefused) {
  ConfigStore store(Checked());
  store.ApplyFiles({FileRead::Present("rules.yaml", kRule), FileRead::Present("routes.yaml", Routes("v2"))});
  ASSERT_EQ(store.error_count(), 0u);
  auto u = store.ApplyFile("rules.yaml", kRuleV1Only);
  EXPECT_TRUE(u.empty()) << "the DestinationRule keeps its last good version";
  ASSERT_EQ(u.errors.size(), 1u);
  EXPECT_EQ(u.errors[0].file, "rules.yaml");
  EXPECT_NE(u.errors[0].message.find("VirtualService default/inventory (routes.yaml:1)"), std::string::npos)
      << u.errors[0].message;
  // Deleting the rule's file is refused the same way; moving the route off v2 first works.
  u = store.ApplyFile("rules.yaml", std::nullopt);
  EXPECT_TRUE(store.Snapshot()->contains(kRuleKey));
  u = store.ApplyFiles({FileRead::Present("routes.yaml", Routes("v1")), FileRead::Present("rules.yaml", kRuleV1Only)});
  EXPECT_EQ(store.error_count(), 0u);
  EXPECT_EQ(std::get<DestinationRule>(store.Snapshot()->at(kRuleKey)->object).subsets.size(), 1u);
}

}  // namespace
}  // namespace cxds
