#include "metrics/metrics.h"

#include <cmath>

#include "gtest/gtest.h"

namespace cxds {
namespace {

TEST(MetricsRegistryTest, RendersPrometheusTextWithHelpTypeAndLabels) {
  MetricsRegistry registry;
  registry.GetCounter("pilot_xds_pushes", "Pushes.", {{"type", "cds"}}).Add(3);
  registry.GetCounter("pilot_xds_pushes", "Pushes.", {{"type", "eds"}}).Add();
  registry.GetGauge("pilot_xds", "Connected.", {{"version", "1.2\"x"}}).Set(2);
  const std::string text = registry.RenderPrometheus();
  EXPECT_NE(text.find("# HELP pilot_xds_pushes Pushes.\n# TYPE pilot_xds_pushes counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("pilot_xds_pushes{type=\"cds\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("pilot_xds_pushes{type=\"eds\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("pilot_xds{version=\"1.2\\\"x\"} 2\n"), std::string::npos) << text;
  EXPECT_LT(text.find("pilot_xds "), text.find("pilot_xds_pushes ")) << "families sorted by name";
}

TEST(MetricsRegistryTest, HistogramBucketsAreCumulativeWithSumAndCount) {
  MetricsRegistry registry;
  Histogram& h = registry.GetHistogram("pilot_debounce_time", "Debounce.", {0.1, 1});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(5);
  const std::string text = registry.RenderPrometheus();
  EXPECT_NE(text.find("pilot_debounce_time_bucket{le=\"0.1\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("pilot_debounce_time_bucket{le=\"1\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("pilot_debounce_time_bucket{le=\"+Inf\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("pilot_debounce_time_sum 5.5"), std::string::npos) << text;
  EXPECT_NE(text.find("pilot_debounce_time_count 3\n"), std::string::npos) << text;
  EXPECT_EQ(h.QuantileUpperBound(0.5), 1);
  EXPECT_TRUE(std::isinf(h.QuantileUpperBound(0.99)));
}

TEST(MetricsRegistryTest, TheSameLabelsGiveTheSameChild) {
  MetricsRegistry registry;
  Counter& a = registry.GetCounter("c", "h", {{"k", "v"}});
  Counter& b = registry.GetCounter("c", "h", {{"k", "v"}});
  EXPECT_EQ(&a, &b);
}

}  // namespace
}  // namespace cxds
