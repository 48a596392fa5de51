// What every cxds fuzz target shares: invariant checks that abort with a message (libFuzzer
// then saves the input as a crash), and a log sink that checks every line cxds logs.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/logging.h"
#include "spdlog/sinks/base_sink.h"

namespace cxds::fuzz {

[[noreturn]] inline void Fail(const char* file, int line, const char* condition, const std::string& detail) {
  std::fprintf(stderr, "\nINVARIANT VIOLATED at %s:%d: %s\n  %s\n", file, line, condition, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace cxds::fuzz

// An invariant of the code under test; `detail` (a std::string expression) is evaluated only
// when it fails.
#define FUZZ_CHECK(condition, detail)                                               \
  do {                                                                              \
    if (!(condition)) ::cxds::fuzz::Fail(__FILE__, __LINE__, #condition, (detail)); \
  } while (0)

namespace cxds::fuzz {

// Every log line cxds writes must stay one line and bounded, whatever a client or a config
// file sends (issue 11: node ids with newlines forged log lines; 1 MB NACK messages were
// logged whole). Lines are formatted (that is the point) but not written anywhere.
class CheckingSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  static constexpr size_t kMaxLineBytes = 8192;
  size_t lines = 0;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    lines++;
    FUZZ_CHECK(payload.find('\n') == std::string_view::npos && payload.find('\r') == std::string_view::npos,
               "a log line contains a line break: " + std::string(payload.substr(0, 512)));
    FUZZ_CHECK(payload.size() <= kMaxLineBytes,
               "a log line has " + std::to_string(payload.size()) + " bytes: " + std::string(payload.substr(0, 512)));
  }
  void flush_() override {}
};

// How often the conditional invariants were actually checked, printed at exit when
// CXDS_FUZZ_STATS is set: a check that never runs proves nothing.
inline std::map<std::string, size_t>& Stats() {
  static std::map<std::string, size_t>* stats = new std::map<std::string, size_t>();
  return *stats;
}
inline void Count(const char* what) { Stats()[what]++; }
inline void PrintStatsAtExit() {
  if (std::getenv("CXDS_FUZZ_STATS") == nullptr) return;
  std::atexit([] {
    for (const auto& [what, count] : Stats()) std::fprintf(stderr, "stat::cxds_%s: %zu\n", what.c_str(), count);
  });
}

// Installs the checking sink at `level` (once per process).
inline void InstallCheckingLog(spdlog::level::level_enum level) {
  static bool installed = false;
  if (installed) return;
  installed = true;
  SetLogSink(std::make_shared<CheckingSink>());
  Log().set_level(level);
  PrintStatsAtExit();
}

}  // namespace cxds::fuzz
