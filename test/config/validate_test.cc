#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/config_dir.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

class ValidateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("cxds-validate-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ / "nested");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::filesystem::path dir_;
};

TEST_F(ValidateTest, AValidDirectoryExitsZero) {
  Write("a.yaml",
        "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: a}\nspec: {address: 127.0.0.1}\n");
  Write("nested/b.json", R"({"apiVersion": "networking.istio.io/v1", "kind": "WorkloadEntry",
    "metadata": {"name": "b"}, "spec": {"address": "127.0.0.2"}})");
  Write("notes.txt", "not config");
  std::ostringstream out, err;
  EXPECT_EQ(ValidateDirectory(dir_.string(), out, err), 0) << err.str();
  EXPECT_EQ(out.str(), "2 files, 2 objects accepted, 0 errors\n");
}

TEST_F(ValidateTest, ErrorsAreListedAndTheExitIsOne) {
  Write("nested/vs.yaml",
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec:\n"
        "  hosts: [a]\n  http:\n  - route: [{destination: {host: a}}]\n    delegate: {name: d}\n");
  std::ostringstream out, err;
  EXPECT_EQ(ValidateDirectory(dir_.string(), out, err), 1);
  // Istio refuses it too: a route that delegates has no destinations of its own.
  EXPECT_NE(err.str().find("nested/vs.yaml:7: VirtualService default/v: spec.http[0].route: cannot be used with "
                           "delegate"),
            std::string::npos)
      << err.str();
  EXPECT_EQ(out.str(), "1 files, 0 objects accepted, 1 errors\n");
}

// A tls route's sniHost outside the VirtualService's hosts: invalid as Istio says, where it is.
TEST_F(ValidateTest, ATlsRouteErrorNamesFileLineAndField) {
  Write("vs.yaml",
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec:\n"
        "  hosts: [api.example.com]\n  tls:\n  - match:\n    - sniHosts: [web.example.com]\n"
        "    route: [{destination: {host: api.example.com}}]\n");
  std::ostringstream out, err;
  EXPECT_EQ(ValidateDirectory(dir_.string(), out, err), 1);
  EXPECT_NE(err.str().find("vs.yaml:8: VirtualService default/v: spec.tls[0].match[0].sniHosts[0]: "
                           "\"web.example.com\" is not one of the VirtualService's hosts nor under one (spec.hosts: "
                           "api.example.com)"),
            std::string::npos)
      << err.str();
  EXPECT_EQ(out.str(), "1 files, 0 objects accepted, 1 errors\n");
}

TEST_F(ValidateTest, AMissingDirectoryExitsTwo) {
  std::ostringstream out, err;
  EXPECT_EQ(ValidateDirectory((dir_ / "nope").string(), out, err), 2);
}

// Issue 17: a manifest with a Deployment beside its Service validates, and says what it skipped.
TEST_F(ValidateTest, SkippedKindsAreCountedNotErrors) {
  Write("app.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec: {}\n---\n"
        "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: a}\nspec: {address: 127.0.0.1}\n");
  std::ostringstream out, err;
  EXPECT_EQ(ValidateDirectory(dir_.string(), out, err), 0) << err.str();
  EXPECT_EQ(out.str(), "1 files, 1 objects accepted, 0 errors, 1 skipped (no meaning for xDS)\n");
  EXPECT_NE(err.str().find("app.yaml: skipped Deployment app (line 2): no meaning for xDS"), std::string::npos)
      << err.str();
}

}  // namespace
}  // namespace cxds
