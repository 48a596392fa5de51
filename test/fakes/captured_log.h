// Replaces the log's sink for the life of one test object, to read what was logged; the
// default sink (stderr) is put back afterwards.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/logging.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/sinks/stdout_sinks.h"

namespace cxds::testing {

class CapturedLog {
 public:
  CapturedLog() { SetLogSink(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)); }
  ~CapturedLog() { SetLogSink(std::make_shared<spdlog::sinks::stderr_sink_mt>()); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  std::vector<std::string> Lines() const {
    std::vector<std::string> lines;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  // The lines that contain `text`.
  std::vector<std::string> LinesWith(const std::string& text) const {
    std::vector<std::string> out;
    for (std::string& line : Lines()) {
      if (line.find(text) != std::string::npos) out.push_back(std::move(line));
    }
    return out;
  }

 private:
  std::ostringstream out_;
};

}  // namespace cxds::testing
