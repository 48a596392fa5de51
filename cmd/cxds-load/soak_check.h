// The verdicts of a soak run (soak.h), as pure functions of what the run observed, so the checks
// themselves are unit-tested (test/load/soak_check_test.cc): a soak that cannot fail proves
// nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cxds::load {

// One stream (one connection of one simulated proxy) as the soak saw it.
struct SoakStreamOutcome {
  int index = 0;                  // the proxy
  bool connected_at_end = false;  // still open when the run checked
  int latest_change = 0;          // the newest change it ACKed (0: none)
  int64_t max_update_gap_ns = 0;  // its longest wait, while open, for a newer change
};

struct SoakVerdict {
  int connected = 0;     // streams open at the end
  int lost_updates = 0;  // of those, streams without the last change
  int starved = 0;       // streams (any, open or closed) that waited longer than the bound
  int64_t max_gap_ns = 0;
  std::vector<int> lost_examples;     // proxy indexes, at most 5
  std::vector<int> starved_examples;  // at most 5
};

// `last_change`: the last change made (and published: the caller checks the server's view).
inline SoakVerdict JudgeStreams(const std::vector<SoakStreamOutcome>& streams, int last_change,
                                int64_t starve_after_ns) {
  SoakVerdict verdict;
  for (const SoakStreamOutcome& stream : streams) {
    verdict.max_gap_ns = std::max(verdict.max_gap_ns, stream.max_update_gap_ns);
    if (stream.max_update_gap_ns > starve_after_ns) {
      verdict.starved++;
      if (verdict.starved_examples.size() < 5) verdict.starved_examples.push_back(stream.index);
    }
    if (!stream.connected_at_end) continue;
    verdict.connected++;
    if (stream.latest_change != last_change) {
      verdict.lost_updates++;
      if (verdict.lost_examples.size() < 5) verdict.lost_examples.push_back(stream.index);
    }
  }
  return verdict;
}

struct RssSample {
  double elapsed_s = 0;
  int64_t rss_kb = 0;
};

struct RssVerdict {
  std::optional<int64_t> start_kb;  // the first sample
  std::optional<int64_t> warm_kb;   // median of the (up to) three samples from the end of warm-up
  std::optional<int64_t> end_kb;    // median of the (up to) three last samples
  std::optional<int64_t> max_kb;    // the highest sample after warm-up
  std::optional<double> growth;     // end_kb / warm_kb - 1
  bool ok = true;
  std::string why;  // when not ok
};

namespace soak_internal {
inline int64_t Median(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}
}  // namespace soak_internal

// RSS is flat after warm-up when the end (median of the last three samples, so one spike does
// not decide) has grown at most `limit` over the level right after warm-up. A limit < 0 only
// reports. Too few samples after warm-up (fewer than two) is a failure: nothing was shown.
inline RssVerdict JudgeRss(const std::vector<RssSample>& samples, double warmup_s, double limit) {
  RssVerdict verdict;
  if (!samples.empty()) verdict.start_kb = samples.front().rss_kb;
  std::vector<int64_t> after;
  for (const RssSample& sample : samples) {
    if (sample.elapsed_s >= warmup_s) after.push_back(sample.rss_kb);
  }
  if (after.size() < 2) {
    verdict.ok = limit < 0;
    verdict.why = "fewer than two RSS samples after warm-up";
    return verdict;
  }
  const size_t n = std::min<size_t>(3, after.size() / 2);
  verdict.warm_kb = soak_internal::Median({after.begin(), after.begin() + static_cast<std::ptrdiff_t>(n)});
  verdict.end_kb = soak_internal::Median({after.end() - static_cast<std::ptrdiff_t>(n), after.end()});
  verdict.max_kb = *std::max_element(after.begin(), after.end());
  verdict.growth = static_cast<double>(*verdict.end_kb) / static_cast<double>(*verdict.warm_kb) - 1;
  if (limit >= 0 && *verdict.growth > limit) {
    verdict.ok = false;
    verdict.why = "RSS grew after warm-up by more than the limit";
  }
  return verdict;
}

}  // namespace cxds::load
