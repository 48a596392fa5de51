// The --config settings file's rules (cmd/cxds/settings_file.h) on a CLI11 app of its own: what
// is stored, what the command line keeps, and each refusal with its file and line.
#include "cxds/settings_file.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "fakes/test_pki.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class SettingsFileTest : public ::testing::Test {
 protected:
  SettingsFileTest() {
    flags_["secret-reader"] =
        app_.add_option("--secret-reader", readers_)->check([](const std::string& value) -> std::string {
          return value.find('/') == std::string::npos ? "NAMESPACE/SERVICE_ACCOUNT expected" : "";
        });
    flags_["root-namespace"] = app_.add_option("--root-namespace", root_);
  }
  // Parses `command_line` (flags), then applies `text` as the settings file.
  std::string Apply(const std::string& text, std::vector<std::string> command_line = {}) {
    std::reverse(command_line.begin(), command_line.end());  // CLI11 takes them last first
    app_.parse(command_line);
    const std::string path = pki_.Path("settings.yaml");
    std::ofstream(path) << text;
    const std::string problem = ApplySettingsFile(path, flags_);
    return problem.empty() ? "" : problem.substr(path.size());  // ":LINE: what"
  }

  testing::TestPki pki_;  // a temporary directory
  CLI::App app_;
  std::map<std::string, CLI::Option*> flags_;
  std::vector<std::string> readers_;
  std::string root_ = "istio-system";
};

TEST_F(SettingsFileTest, ARepeatableSettingTakesAListAndEachValueIsChecked) {
  EXPECT_EQ(Apply("root-namespace: mesh-root\nsecret-reader: [edge/ingress, shop/gateway]\n"), "");
  EXPECT_THAT(readers_, ElementsAre("edge/ingress", "shop/gateway"));
  EXPECT_EQ(root_, "mesh-root");
}

TEST_F(SettingsFileTest, OneValueIsTakenToo) {
  EXPECT_EQ(Apply("secret-reader: edge/ingress\n"), "");
  EXPECT_THAT(readers_, ElementsAre("edge/ingress"));
}

TEST_F(SettingsFileTest, AnEmptyListGivesNone) {
  EXPECT_EQ(Apply("secret-reader: []\n"), "");
  EXPECT_THAT(readers_, IsEmpty());
}

TEST_F(SettingsFileTest, TheCommandLineWins) {
  EXPECT_EQ(Apply("secret-reader: [a/b]\nroot-namespace: x\n", {"--secret-reader", "edge/ingress"}), "");
  EXPECT_THAT(readers_, ElementsAre("edge/ingress"));
  EXPECT_EQ(root_, "x");
}

TEST_F(SettingsFileTest, ProblemsAreRefusedWithTheirLine) {
  EXPECT_EQ(Apply("\nsecret-reader: [edge/ingress, nobody]\n"),
            ":2: secret-reader: --secret-reader: NAMESPACE/SERVICE_ACCOUNT expected");
}

TEST_F(SettingsFileTest, AListForASingleValueIsRefused) {
  EXPECT_EQ(Apply("root-namespace: [a, b]\n"), ":1: root-namespace: must be one value (not a list, a map or nothing)");
}

TEST_F(SettingsFileTest, NothingForAValueIsRefused) {
  EXPECT_EQ(Apply("root-namespace:\n"), ":1: root-namespace: must be one value (not a list, a map or nothing)");
}

TEST_F(SettingsFileTest, ARepeatedKeyIsRefused) {
  EXPECT_EQ(Apply("secret-reader: a/b\nsecret-reader: c/d\n"), ":2: setting \"secret-reader\" is given twice");
}

TEST_F(SettingsFileTest, UnknownKeysAreRefused) {
  EXPECT_EQ(Apply("secret-readers: [a/b]\n"), ":1: unknown setting \"secret-readers\"");
}

TEST_F(SettingsFileTest, NestedListsAreRefused) {
  EXPECT_EQ(Apply("secret-reader: [[a/b]]\n"), ":1: secret-reader: each value must be a plain string");
}

TEST_F(SettingsFileTest, AFileThatIsNotAMapIsRefused) {
  EXPECT_EQ(Apply("- a\n- b\n"), ":1: must be a map of setting: value");
}

}  // namespace
}  // namespace cxds
