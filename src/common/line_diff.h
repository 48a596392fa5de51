// A unified diff of two texts by lines, for showing an operator how what a proxy was sent
// differs from what it would be sent now (`cxds proxy-status PROXY`). The texts come from
// resources cxds generated, not from clients, but they can be large: the work is bounded.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cxds {

struct LineDiffLimits {
  // Lines around each change that are shown unchanged.
  size_t context = 3;
  // The lines between the common head and tail are compared pairwise; above this many pairs the
  // diff says only how many lines each side has (the comparison is quadratic).
  size_t max_compared_pairs = 4'000'000;
  // Lines of output at most; a longer diff ends with a line saying how many were left out.
  size_t max_output_lines = 400;
};

// "--- OLD_LABEL\n+++ NEW_LABEL\n" and hunks "@@ -a,b +c,d @@" with " ", "-" and "+" lines,
// as `diff -u` prints them; "" when the texts are equal. A missing final newline is ignored.
std::string UnifiedLineDiff(std::string_view old_text, std::string_view new_text, std::string_view old_label,
                            std::string_view new_label, const LineDiffLimits& limits = {});

}  // namespace cxds
