// A small metrics registry with Prometheus text exposition (format 0.0.4).
//
// Metrics are grouped in families (one name, help text and type; children per label set).
// Look a child up once and keep the pointer: children live as long as the registry, and
// updating one is a lock-free atomic (counters, gauges) or a short per-histogram lock.
//
// cxds uses istiod's metric names where the meaning is the same, so existing dashboards work
// (pilot_xds_pushes, pilot_inbound_updates, pilot_debounce_time, ...), and `cxds_` names for
// the rest. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace cxds {

using Labels = std::map<std::string, std::string>;

class Counter {
 public:
  void Add(double amount = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double amount);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // upper bounds, ascending (+Inf implied)
  void Observe(double value);

  struct Data {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf
    uint64_t count = 0;
    double sum = 0;
  };
  Data Read() const;
  // The smallest bucket bound under which at least `quantile` of observations fall
  // (+Inf if beyond the last bound; 0 if empty). Coarse, but enough for summaries.
  double QuantileUpperBound(double quantile) const;

 private:
  const std::vector<double> bounds_;
  mutable Mutex mu_;
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);  // per bucket, last is +Inf
  uint64_t count_ ABSL_GUARDED_BY(mu_) = 0;
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
};

// Bucket bounds in seconds used by istiod for debounce and push times (0.01 s to 30 s), and
// finer ones for cxds's own latencies (which are often sub-millisecond).
std::vector<double> IstiodTimeBuckets();
std::vector<double> FineTimeBuckets();  // 0.0001 s to 30 s

class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Returns the child of family `name` with `labels`, creating either as needed. A name
  // registered with another type is a programming error (it aborts).
  Counter& GetCounter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& GetGauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& GetHistogram(const std::string& name, const std::string& help, const std::vector<double>& bounds,
                          const Labels& labels = {});

  // Every family, sorted by name, in Prometheus text format.
  std::string RenderPrometheus() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Child {
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  struct Family {
    Type type;
    std::string help;
    std::map<Labels, Child> children;
  };
  Child& GetChild(const std::string& name, const std::string& help, Type type, const Labels& labels,
                  const std::vector<double>* bounds);

  mutable Mutex mu_;
  std::map<std::string, Family> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cxds
