#include "common/clock.h"

namespace cxds {
namespace {
class SystemClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};
}  // namespace

Clock& RealClock() {
  static SystemClock* clock = new SystemClock();
  return *clock;
}

absl::Time SimulatedClock::Now() const {
  MutexLock lock(&mu_);
  return now_;
}

void SimulatedClock::Advance(absl::Duration d) {
  MutexLock lock(&mu_);
  now_ += d;
}

}  // namespace cxds
