// Happens-before annotations for ThreadSanitizer at the points where gRPC hands an object from
// one thread to another through its (uninstrumented) completion queues. They model gRPC's
// documented guarantee: a reaction runs after the operation that started it, and after the
// reactor was constructed. No-ops unless built with CXDS_TSAN.
#pragma once

#if defined(CXDS_TSAN)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace cxds {

inline void TsanRelease(void* addr) {
#if defined(CXDS_TSAN)
  __tsan_release(addr);
#else
  (void)addr;
#endif
}

inline void TsanAcquire(void* addr) {
#if defined(CXDS_TSAN)
  __tsan_acquire(addr);
#else
  (void)addr;
#endif
}

}  // namespace cxds
