// The project's logger: one spdlog logger named "cxds", writing key=value lines to stderr.
#pragma once

#include <memory>
#include <string_view>

#include "common/strings.h"
#include "spdlog/spdlog.h"

namespace cxds {

// A client-provided string as a log argument: `Log().info("node={}", Untrusted(id))` prints
// EscapeUntrusted(id) (common/strings.h), and only if the line is logged at all.
struct Untrusted {
  explicit Untrusted(std::string_view text, size_t max_bytes = kUntrustedLogBytes,
                     UntrustedIn where = UntrustedIn::kBare)
      : text(text), max_bytes(max_bytes), where(where) {}
  std::string_view text;
  size_t max_bytes;
  UntrustedIn where;
};
// For values printed inside quotes (error="..."): spaces stay.
inline Untrusted UntrustedQuoted(std::string_view text, size_t max_bytes = kUntrustedLogBytes) {
  return Untrusted(text, max_bytes, UntrustedIn::kQuoted);
}

// The shared logger. Thread-safe; created on first use.
spdlog::logger& Log();

// Replaces the logger's sinks (tests capture log lines this way). Call it only while nothing
// logs (at start-up or between tests): the sink list itself is not synchronised.
void SetLogSink(std::shared_ptr<spdlog::sinks::sink> sink);

}  // namespace cxds

template <>
struct fmt::formatter<cxds::Untrusted> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(const cxds::Untrusted& value, FormatContext& ctx) const {
    const std::string escaped = cxds::EscapeUntrusted(value.text, value.max_bytes, value.where);
    return fmt::formatter<std::string_view>::format(std::string_view(escaped), ctx);
  }
};
