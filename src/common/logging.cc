#include "common/logging.h"

#include "spdlog/sinks/stdout_sinks.h"

namespace cxds {

namespace {
std::shared_ptr<spdlog::logger> MakeLogger() {
  auto logger = std::make_shared<spdlog::logger>("cxds", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v");
  logger->flush_on(spdlog::level::info);
  return logger;
}
}  // namespace

spdlog::logger& Log() {
  static std::shared_ptr<spdlog::logger>* logger = new std::shared_ptr<spdlog::logger>(MakeLogger());
  return **logger;
}

void SetLogSink(std::shared_ptr<spdlog::sinks::sink> sink) {
  Log().sinks().clear();
  Log().sinks().push_back(std::move(sink));
}

}  // namespace cxds
