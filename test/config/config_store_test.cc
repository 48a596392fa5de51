#include "config/config_store.h"

#include "gtest/gtest.h"

namespace cxds {
namespace {

std::string We(const std::string& name, const std::string& address) {
  return "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: " + name +
         "}\nspec: {address: " + address + "}\n---\n";
}

const ConfigKey kA{"WorkloadEntry", "default", "a"};
const ConfigKey kB{"WorkloadEntry", "default", "b"};

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

}  // namespace
}  // namespace cxds
