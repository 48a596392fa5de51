// UnifiedLineDiff prints what `diff -u` prints for the same texts (the expected hunks below were
// written from diff -u's output), and stays bounded on large inputs.
#include "common/line_diff.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

using ::testing::HasSubstr;

std::string Lines(int from, int to) {
  std::string out;
  for (int i = from; i <= to; ++i) out += "line" + std::to_string(i) + "\n";
  return out;
}

TEST(LineDiffTest, EqualTextsHaveNoDiff) {
  EXPECT_EQ(UnifiedLineDiff("a\nb\n", "a\nb\n", "x", "y"), "");
  EXPECT_EQ(UnifiedLineDiff("a\nb", "a\nb\n", "x", "y"), "");  // a missing final newline
  EXPECT_EQ(UnifiedLineDiff("", "", "x", "y"), "");
}

TEST(LineDiffTest, AChangedLineHasThreeLinesOfContext) {
  std::string changed = Lines(1, 10);
  changed.replace(changed.find("line5\n"), 6, "LINE5\n");
  EXPECT_EQ(UnifiedLineDiff(Lines(1, 10), changed, "sent", "now"),
            "--- sent\n+++ now\n"
            "@@ -2,7 +2,7 @@\n line2\n line3\n line4\n-line5\n+LINE5\n line6\n line7\n line8\n");
}

TEST(LineDiffTest, DistantChangesAreSeparateHunksAndCloseOnesOne) {
  std::string changed = Lines(1, 20);
  changed.replace(changed.find("line2\n"), 6, "");
  changed.replace(changed.find("line18\n"), 7, "line18\nextra\n");
  EXPECT_EQ(UnifiedLineDiff(Lines(1, 20), changed, "a", "b"),
            "--- a\n+++ b\n"
            "@@ -1,5 +1,4 @@\n line1\n-line2\n line3\n line4\n line5\n"
            "@@ -16,5 +15,6 @@\n line16\n line17\n line18\n+extra\n line19\n line20\n");
  std::string close = Lines(1, 12);
  close.replace(close.find("line3\n"), 6, "");
  close.replace(close.find("line9\n"), 6, "");
  EXPECT_EQ(UnifiedLineDiff(Lines(1, 12), close, "a", "b"),
            "--- a\n+++ b\n"
            "@@ -1,12 +1,10 @@\n line1\n line2\n-line3\n line4\n line5\n line6\n line7\n line8\n-line9\n line10\n"
            " line11\n line12\n");
}

TEST(LineDiffTest, AddingToOrEmptyingATextNumbersTheEmptySideAsDiffDoes) {
  EXPECT_EQ(UnifiedLineDiff("", "a\nb\n", "old", "new"), "--- old\n+++ new\n@@ -0,0 +1,2 @@\n+a\n+b\n");
  EXPECT_EQ(UnifiedLineDiff("a\nb\n", "", "old", "new"), "--- old\n+++ new\n@@ -1,2 +0,0 @@\n-a\n-b\n");
}

TEST(LineDiffTest, LargeDifferencesAreSummarizedAndLongOutputIsCut) {
  LineDiffLimits small;
  small.max_compared_pairs = 100;
  const std::string summary = UnifiedLineDiff(Lines(1, 50), Lines(101, 150), "a", "b", small);
  EXPECT_THAT(summary, HasSubstr("@@ lines 1-50 (50 lines) became lines 1-50 (50 lines): too large"));

  std::string every_other;
  for (int i = 1; i <= 400; ++i) every_other += (i % 8 == 0 ? "changed" : "line") + std::to_string(i) + "\n";
  LineDiffLimits short_output;
  short_output.max_output_lines = 30;
  const std::string cut = UnifiedLineDiff(Lines(1, 400), every_other, "a", "b", short_output);
  EXPECT_THAT(cut, HasSubstr("more lines of diff left out @@\n"));
  EXPECT_LT(std::count(cut.begin(), cut.end(), '\n'), 40);
}

}  // namespace
}  // namespace cxds
