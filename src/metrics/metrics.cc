#include "metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/logging.h"
#include "common/strings.h"

namespace cxds {

namespace {
void AtomicAdd(std::atomic<double>& target, double amount) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + amount, std::memory_order_relaxed)) {
  }
}

std::string FormatNumber(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (std::isnan(value)) return "NaN";
  // The shortest form that reads back as the same double ("0.1", not "0.10000000000000001").
  char buf[64];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

// Help text escapes backslash and newline; label values also escape double quotes.
std::string Escape(const std::string& text, bool quotes) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

// `{a="x",b="y"}` with an optional extra label (le for histogram buckets); "" if none.
std::string LabelString(const Labels& labels, const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  for (const auto& [name, value] : labels) {
    out += out.empty() ? "{" : ",";
    out += StrCat(name, "=\"", Escape(value, /*quotes=*/true), "\"");
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += StrCat(extra_name, "=\"", extra_value, "\"");
  }
  if (!out.empty()) out += "}";
  return out;
}
}  // namespace

void Counter::Add(double amount) { AtomicAdd(value_, amount); }
void Gauge::Add(double amount) { AtomicAdd(value_, amount); }

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  MutexLock lock(&mu_);
  counts_[bucket]++;
  count_++;
  sum_ += value;
}

Histogram::Data Histogram::Read() const {
  Data data;
  data.bounds = bounds_;
  MutexLock lock(&mu_);
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    data.cumulative.push_back(running);
  }
  data.count = count_;
  data.sum = sum_;
  return data;
}

double Histogram::QuantileUpperBound(double quantile) const {
  const Data data = Read();
  if (data.count == 0) return 0;
  const double wanted = quantile * static_cast<double>(data.count);
  for (size_t i = 0; i < data.bounds.size(); ++i) {
    if (static_cast<double>(data.cumulative[i]) >= wanted) return data.bounds[i];
  }
  return INFINITY;
}

std::vector<double> IstiodTimeBuckets() { return {.01, .1, 1, 3, 5, 10, 20, 30}; }

std::vector<double> FineTimeBuckets() {
  return {.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30};
}

MetricsRegistry::Child& MetricsRegistry::GetChild(const std::string& name, const std::string& help, Type type,
                                                  const Labels& labels, const std::vector<double>* bounds) {
  MutexLock lock(&mu_);
  auto [it, inserted] = families_.try_emplace(name);
  Family& family = it->second;
  if (inserted) {
    family.type = type;
    family.help = help;
  } else if (family.type != type) {
    Log().critical("metric {} registered twice with different types", name);
    std::abort();
  }
  Child& child = family.children[labels];
  switch (type) {
    case Type::kCounter:
      if (child.counter == nullptr) child.counter = std::make_unique<Counter>();
      break;
    case Type::kGauge:
      if (child.gauge == nullptr) child.gauge = std::make_unique<Gauge>();
      break;
    case Type::kHistogram:
      if (child.histogram == nullptr) child.histogram = std::make_unique<Histogram>(*bounds);
      break;
  }
  return child;
}

Counter& MetricsRegistry::GetCounter(const std::string& name, const std::string& help, const Labels& labels) {
  return *GetChild(name, help, Type::kCounter, labels, nullptr).counter;
}

Gauge& MetricsRegistry::GetGauge(const std::string& name, const std::string& help, const Labels& labels) {
  return *GetChild(name, help, Type::kGauge, labels, nullptr).gauge;
}

Histogram& MetricsRegistry::GetHistogram(const std::string& name, const std::string& help,
                                         const std::vector<double>& bounds, const Labels& labels) {
  return *GetChild(name, help, Type::kHistogram, labels, &bounds).histogram;
}

std::string MetricsRegistry::RenderPrometheus() const {
  std::string out;
  MutexLock lock(&mu_);
  for (const auto& [name, family] : families_) {
    const char* type = family.type == Type::kCounter ? "counter" : family.type == Type::kGauge ? "gauge" : "histogram";
    out += StrCat("# HELP ", name, " ", Escape(family.help, /*quotes=*/false), "\n# TYPE ", name, " ", type, "\n");
    for (const auto& [labels, child] : family.children) {
      switch (family.type) {
        case Type::kCounter:
          out += StrCat(name, LabelString(labels), " ", FormatNumber(child.counter->value()), "\n");
          break;
        case Type::kGauge:
          out += StrCat(name, LabelString(labels), " ", FormatNumber(child.gauge->value()), "\n");
          break;
        case Type::kHistogram: {
          const Histogram::Data data = child.histogram->Read();
          for (size_t i = 0; i < data.bounds.size(); ++i) {
            out += StrCat(name, "_bucket", LabelString(labels, "le", FormatNumber(data.bounds[i])), " ",
                          data.cumulative[i], "\n");
          }
          out += StrCat(name, "_bucket", LabelString(labels, "le", "+Inf"), " ", data.count, "\n");
          out += StrCat(name, "_sum", LabelString(labels), " ", FormatNumber(data.sum), "\n");
          out += StrCat(name, "_count", LabelString(labels), " ", data.count, "\n");
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace cxds
