#include "pipeline/debouncer.h"

#include <algorithm>
#include <utility>

#include "common/logging.h"
#include "common/strings.h"

namespace cxds {

namespace {
std::string Millis(absl::Duration d) { return StrCat(absl::ToInt64Milliseconds(d), "ms"); }

// "for config ServiceEntry/ns/a and 2 more configs", or the reasons when no config is named.
std::string DescribeConfigs(const PushRequest& request) {
  if (request.configs.empty()) return StrCat("for reasons ", request.ReasonsString());
  std::string out = StrCat("for config ", request.configs.begin()->ToString());
  if (request.configs.size() > 1) out += StrCat(" and ", request.configs.size() - 1, " more configs");
  return out;
}
}  // namespace

Debouncer::Debouncer(Scheduler& scheduler, DebounceOptions options, PushFn push, MetricsRegistry* metrics,
                     PushObserver* observer)
    : scheduler_(scheduler), clock_(scheduler.clock()), options_(options), push_(std::move(push)), observer_(observer) {
  if (metrics != nullptr) {
    const std::string inbound_help = "Config updates received by the pipeline, by type.";
    inbound_config_ = &metrics->GetCounter("pilot_inbound_updates", inbound_help, {{"type", "config"}});
    inbound_eds_ = &metrics->GetCounter("pilot_inbound_updates", inbound_help, {{"type", "eds"}});
    committed_ = &metrics->GetCounter("cxds_committed_updates",
                                      "Config updates whose push has run (inbound minus committed is the backlog).");
    debounce_time_ = &metrics->GetHistogram(
        "pilot_debounce_time", "From a batch's first update until its push returns (s).", FineTimeBuckets());
  }
}

Debouncer::~Debouncer() {
  TimerPtr timer;
  TimerPtr bypass_timer;
  {
    MutexLock lock(&mu_);
    destroying_ = true;
    timer = std::move(timer_);
    bypass_timer = std::move(bypass_timer_);
  }
  // Destroyed outside the lock: a callback running now may need it before it returns.
}

void Debouncer::ConfigUpdate(PushRequest request) {
  MutexLock lock(&mu_);
  if (destroying_) return;
  const absl::Time now = clock_.Now();
  if (request.reasons.empty()) request.reasons[reason::kUnknown] = 1;
  if (request.start == absl::InfiniteFuture()) request.start = now;
  if (observer_ != nullptr) observer_->OnReceived(request, now);
  inbound_++;
  const bool endpoint_only = request.EndpointOnly();
  if (endpoint_only ? inbound_eds_ != nullptr : inbound_config_ != nullptr) {
    (endpoint_only ? inbound_eds_ : inbound_config_)->Add();
  }
  if (!options_.eds_debounce && endpoint_only) {
    bypass_.push_back(std::move(request));
    if (bypass_timer_ == nullptr) bypass_timer_ = scheduler_.Schedule(absl::ZeroDuration(), [this] { OnBypass(); });
    return;
  }
  last_update_ = now;
  if (batch_events_ == 0) batch_start_ = now;
  batch_events_++;
  if (batch_.has_value()) {
    batch_->Merge(request);
  } else {
    batch_ = std::move(request);
  }
  // A push in progress looks at the batch when it returns; a pending timer re-arms itself.
  if (!pushing_ && timer_ == nullptr) {
    timer_ = scheduler_.Schedule(options_.debounce_after, [this] { OnTimer(); });
  }
}

void Debouncer::OnTimer() {
  TimerPtr self;
  {
    MutexLock lock(&mu_);
    self = std::move(timer_);  // this timer has fired; a new one may be armed below
  }
  PushIfReady();
}

void Debouncer::PushIfReady() {
  for (;;) {
    PushRequest request;
    uint64_t events = 0;
    uint64_t number = 0;
    absl::Time batch_start;
    {
      MutexLock lock(&mu_);
      if (pushing_ || !batch_.has_value() || destroying_) return;
      const absl::Time now = clock_.Now();
      const absl::Duration since_first = now - batch_start_;
      const absl::Duration quiet = now - last_update_;
      if (since_first < options_.debounce_max && quiet < options_.debounce_after) {
        if (timer_ == nullptr) {
          const absl::Duration wait = std::min(options_.debounce_after - quiet, options_.debounce_max - since_first);
          timer_ = scheduler_.Schedule(wait, [this] { OnTimer(); });
        }
        return;
      }
      request = std::move(*batch_);
      batch_.reset();
      events = batch_events_;
      batch_events_ = 0;
      batch_start = batch_start_;
      number = ++push_counter_;
      pushing_ = true;
      Log().info("Push debounce stable[{}] {} {}: {} since last change, {} since first change, full={}", number, events,
                 DescribeConfigs(request), Millis(quiet), Millis(since_first), request.full);
    }
    RunPush(std::move(request), number, events, batch_start);
    MutexLock lock(&mu_);
    pushing_ = false;
  }
}

void Debouncer::RunPush(PushRequest request, uint64_t push_number, uint64_t events, absl::Time batch_start) {
  if (observer_ != nullptr) observer_->OnDebounced(request, push_number, clock_.Now());
  push_(std::move(request), push_number);
  const absl::Time now = clock_.Now();
  if (debounce_time_ != nullptr && push_number > 0) {
    debounce_time_->Observe(absl::ToDoubleSeconds(now - batch_start));
  }
  if (committed_ != nullptr) committed_->Add(static_cast<double>(events));
  MutexLock lock(&mu_);
  committed_count_ += events;
}

void Debouncer::OnBypass() {
  TimerPtr self;
  std::deque<PushRequest> requests;
  {
    MutexLock lock(&mu_);
    self = std::move(bypass_timer_);
    requests.swap(bypass_);
  }
  for (PushRequest& request : requests) {
    Log().debug("Push EDS bypass (eds debounce off) {}", DescribeConfigs(request));
    const absl::Time start = request.start;
    RunPush(std::move(request), 0, 1, start);
  }
}

uint64_t Debouncer::inbound_updates() const {
  MutexLock lock(&mu_);
  return inbound_;
}

uint64_t Debouncer::committed_updates() const {
  MutexLock lock(&mu_);
  return committed_count_;
}

uint64_t Debouncer::pushes() const {
  MutexLock lock(&mu_);
  return push_counter_;
}

}  // namespace cxds
