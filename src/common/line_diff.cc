#include "common/line_diff.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/strings.h"

namespace cxds {
namespace {

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

enum class Op : char { kSame = ' ', kRemoved = '-', kAdded = '+' };

struct Edit {
  Op op;
  size_t old_line;  // 0-based; for kAdded, the old line it comes before
  size_t new_line;  // 0-based; for kRemoved, the new line it comes before
};

// The edit script of a[lo_a, hi_a) against b[lo_b, hi_b) by longest common subsequence.
void LcsEdits(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b, size_t lo_a, size_t hi_a,
              size_t lo_b, size_t hi_b, std::vector<Edit>& edits) {
  const size_t n = hi_a - lo_a;
  const size_t m = hi_b - lo_b;
  // table[i][j]: LCS length of a[lo_a+i..hi_a) and b[lo_b+j..hi_b).
  std::vector<uint32_t> table((n + 1) * (m + 1), 0);
  const auto at = [&](size_t i, size_t j) -> uint32_t& { return table[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      at(i, j) = a[lo_a + i] == b[lo_b + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
    }
  }
  size_t i = 0;
  size_t j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[lo_a + i] == b[lo_b + j]) {
      edits.push_back({Op::kSame, lo_a + i, lo_b + j});
      ++i;
      ++j;
    } else if (j < m && (i == n || at(i, j + 1) > at(i + 1, j))) {  // on a tie, "-" first, as diff does
      edits.push_back({Op::kAdded, lo_a + i, lo_b + j});
      ++j;
    } else {
      edits.push_back({Op::kRemoved, lo_a + i, lo_b + j});
      ++i;
    }
  }
}

}  // namespace

std::string UnifiedLineDiff(std::string_view old_text, std::string_view new_text, std::string_view old_label,
                            std::string_view new_label, const LineDiffLimits& limits) {
  const std::vector<std::string_view> a = SplitLines(old_text);
  const std::vector<std::string_view> b = SplitLines(new_text);
  if (a == b) return "";
  std::string out = StrCat("--- ", old_label, "\n+++ ", new_label, "\n");

  // The common head and tail are matched directly, so a small change in a large resource
  // compares only the lines around it.
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) ++tail;
  const size_t middle_a = a.size() - head - tail;
  const size_t middle_b = b.size() - head - tail;
  if (middle_a > 0 && middle_b > 0 && (middle_a + 1) * (middle_b + 1) > limits.max_compared_pairs) {
    return StrCat(out, "@@ lines ", head + 1, "-", a.size() - tail, " (", middle_a, " lines) became lines ", head + 1,
                  "-", b.size() - tail, " (", middle_b, " lines): too large to compare line by line @@\n");
  }
  std::vector<Edit> edits;
  for (size_t i = 0; i < head; ++i) edits.push_back({Op::kSame, i, i});
  LcsEdits(a, b, head, a.size() - tail, head, b.size() - tail, edits);
  for (size_t k = 0; k < tail; ++k) edits.push_back({Op::kSame, a.size() - tail + k, b.size() - tail + k});

  // Hunks: runs of changes with `context` unchanged lines around them; runs closer than twice
  // that are one hunk.
  size_t lines_out = 0;
  size_t left_out = 0;
  size_t k = 0;
  while (k < edits.size()) {
    while (k < edits.size() && edits[k].op == Op::kSame) ++k;
    if (k == edits.size()) break;
    const size_t start = k >= limits.context ? k - limits.context : 0;
    size_t end = k;  // one past the hunk's last edit
    size_t same_run = 0;
    for (size_t e = k; e < edits.size(); ++e) {
      if (edits[e].op != Op::kSame) {
        same_run = 0;
        end = e + 1;
      } else if (++same_run > 2 * limits.context) {
        break;
      }
    }
    end = std::min(edits.size(), end + limits.context);
    size_t old_count = 0;
    size_t new_count = 0;
    for (size_t e = start; e < end; ++e) {
      old_count += edits[e].op != Op::kAdded;
      new_count += edits[e].op != Op::kRemoved;
    }
    // diff -u numbers an empty side's hunk by the line before it.
    const size_t old_start = old_count > 0 ? edits[start].old_line + 1 : edits[start].old_line;
    const size_t new_start = new_count > 0 ? edits[start].new_line + 1 : edits[start].new_line;
    std::string hunk = StrCat("@@ -", old_start, ",", old_count, " +", new_start, ",", new_count, " @@\n");
    for (size_t e = start; e < end; ++e) {
      const std::string_view line = edits[e].op == Op::kAdded ? b[edits[e].new_line] : a[edits[e].old_line];
      hunk += StrCat(std::string(1, static_cast<char>(edits[e].op)), line, "\n");
    }
    const size_t hunk_lines = end - start + 1;
    if (lines_out + hunk_lines > limits.max_output_lines) {
      left_out += hunk_lines;
    } else {
      out += hunk;
      lines_out += hunk_lines;
    }
    k = end;
  }
  if (left_out > 0) out += StrCat("@@ ", left_out, " more lines of diff left out @@\n");
  return out;
}

}  // namespace cxds
