// The soak's verdicts (cmd/cxds-load/soak_check.h): each check can fail.
#include "../../cmd/cxds-load/soak_check.h"

#include "gtest/gtest.h"

namespace cxds::load {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(SoakCheckTest, AllOpenStreamsWithTheLastChangeAndShortGapsPass) {
  const std::vector<SoakStreamOutcome> streams = {
      {0, true, 42, 2 * kSecond}, {1, true, 42, 1 * kSecond}, {1, false, 17, 3 * kSecond}};
  const SoakVerdict verdict = JudgeStreams(streams, 42, 10 * kSecond);
  EXPECT_EQ(verdict.connected, 2);
  EXPECT_EQ(verdict.lost_updates, 0);
  EXPECT_EQ(verdict.starved, 0);
  EXPECT_EQ(verdict.max_gap_ns, 3 * kSecond);
}

// A closed stream may hold an old change; an open one may not.
TEST(SoakCheckTest, AnOpenStreamWithoutTheLastChangeIsALostUpdate) {
  const std::vector<SoakStreamOutcome> streams = {{0, true, 42, 0}, {1, true, 41, 0}, {2, false, 3, 0}};
  const SoakVerdict verdict = JudgeStreams(streams, 42, 10 * kSecond);
  EXPECT_EQ(verdict.lost_updates, 1);
  EXPECT_EQ(verdict.lost_examples, std::vector<int>{1});
}

// Starvation counts every stream, closed ones too: a long wait before a disconnect is one.
TEST(SoakCheckTest, AWaitLongerThanTheBoundIsStarvationOpenOrClosed) {
  const std::vector<SoakStreamOutcome> streams = {
      {0, true, 42, 11 * kSecond}, {1, false, 40, 12 * kSecond}, {2, true, 42, 10 * kSecond}};
  const SoakVerdict verdict = JudgeStreams(streams, 42, 10 * kSecond);
  EXPECT_EQ(verdict.starved, 2);
  EXPECT_EQ(verdict.starved_examples, (std::vector<int>{0, 1}));
  EXPECT_EQ(verdict.lost_updates, 0);
}

TEST(SoakCheckTest, RssFlatAfterWarmupPassesAndGrowthFails) {
  const std::vector<RssSample> flat = {{0, 20'000},  {10, 90'000},  {20, 100'000}, {30, 101'000},
                                       {40, 99'000}, {50, 102'000}, {60, 100'500}, {70, 101'500}};
  RssVerdict verdict = JudgeRss(flat, 20, 0.10);
  EXPECT_TRUE(verdict.ok) << verdict.why;
  EXPECT_EQ(verdict.start_kb, 20'000);
  EXPECT_EQ(verdict.warm_kb, 100'000);  // median of 100,000 101,000 99,000
  EXPECT_EQ(verdict.end_kb, 101'500);   // median of 102,000 100,500 101,500
  EXPECT_EQ(verdict.max_kb, 102'000);

  const std::vector<RssSample> growing = {{20, 100'000}, {30, 100'000}, {40, 100'000},
                                          {50, 120'000}, {60, 125'000}, {70, 130'000}};
  verdict = JudgeRss(growing, 20, 0.10);
  EXPECT_FALSE(verdict.ok);
  ASSERT_TRUE(verdict.growth.has_value());
  EXPECT_NEAR(*verdict.growth, 0.25, 1e-9);
  EXPECT_TRUE(JudgeRss(growing, 20, -1).ok) << "a negative limit only reports";
}

// One spike at the end does not decide; too few samples after warm-up is a failure.
TEST(SoakCheckTest, RssOneSpikeDoesNotDecideAndTooFewSamplesFail) {
  const std::vector<RssSample> spike = {{20, 100'000}, {30, 100'000}, {40, 100'000},
                                        {50, 100'000}, {60, 100'000}, {70, 150'000}};
  EXPECT_TRUE(JudgeRss(spike, 20, 0.10).ok);
  const std::vector<RssSample> short_run = {{0, 100'000}, {10, 100'000}, {25, 100'000}};
  const RssVerdict verdict = JudgeRss(short_run, 20, 0.10);
  EXPECT_FALSE(verdict.ok);
  EXPECT_FALSE(verdict.growth.has_value());
}

}  // namespace
}  // namespace cxds::load
