// OpenConfigSource: the source a --config-source URL names, and a clear error for one it cannot.
#include "config/source_url.h"

#include "common/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

using ::testing::HasSubstr;

TEST(SourceUrlTest, OpensTheSourceTheUrlNames) {
  SimulatedScheduler scheduler;
  ConfigSourceSettings settings;
  settings.config_dir = "/nonexistent/default-dir";
  absl::StatusOr<std::unique_ptr<ConfigSource>> dir = OpenConfigSource(settings, scheduler);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_THAT((*dir)->Describe(), HasSubstr("/nonexistent/default-dir")) << "an empty URL is dir://config_dir";

  settings.url = "dir:///nonexistent/named";
  dir = OpenConfigSource(settings, scheduler);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_THAT((*dir)->Describe(), HasSubstr("/nonexistent/named"));

  settings.url = "etcd://127.0.0.1:2379/mesh";  // not connected until Load
  absl::StatusOr<std::unique_ptr<ConfigSource>> etcd = OpenConfigSource(settings, scheduler);
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  EXPECT_THAT((*etcd)->Describe(), HasSubstr("etcd 127.0.0.1:2379"));
}

TEST(SourceUrlTest, RefusesWhatItCannotOpenAndSaysWhy) {
  SimulatedScheduler scheduler;
  ConfigSourceSettings settings;
  settings.url = "consul://127.0.0.1:8500/mesh";
  absl::StatusOr<std::unique_ptr<ConfigSource>> source = OpenConfigSource(settings, scheduler);
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(source.status().message(), HasSubstr("consul://127.0.0.1:8500/mesh"));

  settings.url = "etcd://127.0.0.1:2379/mesh";
  settings.etcd_tls.ca = "/nonexistent/etcd-ca.pem";
  source = OpenConfigSource(settings, scheduler);
  EXPECT_FALSE(source.ok());
  EXPECT_THAT(source.status().message(), HasSubstr("/nonexistent/etcd-ca.pem"));
}

}  // namespace
}  // namespace cxds
