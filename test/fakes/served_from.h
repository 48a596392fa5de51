// Where a test stream gets its configuration: a cache (through the ConfigWatcher seam) or a
// generator (the push pipeline, through ProxyGenerator). Converts from either, so harnesses
// take both.
#pragma once

#include "cache/config_watcher.h"
#include "server/proxy_generator.h"

namespace cxds::testing {

struct ServedFrom {
  ServedFrom(ConfigWatcher& cache) : watcher(&cache) {}             // NOLINT: implicit on purpose
  ServedFrom(ProxyGenerator& generator) : generator(&generator) {}  // NOLINT: implicit on purpose
  ConfigWatcher* watcher = nullptr;
  ProxyGenerator* generator = nullptr;
};

}  // namespace cxds::testing
