// A PushDispatcher for deterministic tests: deliveries run on the calling thread.
#pragma once

#include <memory>

#include "server/push_dispatcher.h"

namespace cxds::testing {

// Inline (no worker threads), with `max_in_flight` slots: by default room for every push a
// test makes, so only throttle tests see the limit.
inline std::unique_ptr<PushDispatcher> InlineDispatcher(int max_in_flight = 100000, PushObserver* observer = nullptr,
                                                        MetricsRegistry* metrics = nullptr, Clock* clock = nullptr) {
  PushDispatcher::Options options;
  options.max_in_flight = max_in_flight;
  options.worker_threads = 0;
  options.observer = observer;
  options.metrics = metrics;
  options.clock = clock;
  return std::make_unique<PushDispatcher>(options);
}

}  // namespace cxds::testing
