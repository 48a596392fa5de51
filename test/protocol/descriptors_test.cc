#include "protocol/descriptors.h"

#include "common/status_matchers.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

// Every test process builds the descriptors before its first test, as the daemon and XdsServer
// do before their threads start: tests that create resources on several threads (for example
// MuxConfigWatcherTest.ConcurrentChangesAndWatches) otherwise race protobuf's lazy building,
// which ThreadSanitizer reports because it cannot see inside libprotobuf.
class PreloadDescriptorsEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { ASSERT_OK(PreloadXdsDescriptors()); }
};
[[maybe_unused]] ::testing::Environment* const kPreloadEnvironment =
    ::testing::AddGlobalTestEnvironment(new PreloadDescriptorsEnvironment);

TEST(PreloadDescriptorsTest, EveryRootTypeIsLinkedAndTheirImportsAreReached) {
  ASSERT_OK(PreloadXdsDescriptors());
  // The five resource types, the discovery messages and the packed filters alone are over 26;
  // their imports (core, route matchers, type, annotations) take the closure far beyond.
  EXPECT_GT(PreloadedDescriptorCount(), 300);
  const auto* endpoint = envoy::config::endpoint::v3::ClusterLoadAssignment::descriptor();
  EXPECT_EQ(endpoint->full_name(), "envoy.config.endpoint.v3.ClusterLoadAssignment");
}

}  // namespace
}  // namespace cxds
