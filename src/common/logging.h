// The project's logger: one spdlog logger named "cxds", writing key=value lines to stderr.
#pragma once

#include <memory>

#include "spdlog/spdlog.h"

namespace cxds {

// The shared logger. Thread-safe; created on first use.
spdlog::logger& Log();

// Replaces the logger's sinks (tests capture log lines this way). Call it only while nothing
// logs (at start-up or between tests): the sink list itself is not synchronised.
void SetLogSink(std::shared_ptr<spdlog::sinks::sink> sink);

}  // namespace cxds
