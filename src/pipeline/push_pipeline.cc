#include "pipeline/push_pipeline.h"

#include <algorithm>
#include <set>

#include "common/logging.h"
#include "common/strings.h"
#include "protocol/type_url.h"

namespace cxds {

// One proxy's generated configuration. `mu_` guards the view; the stream's session changes it
// from the stream's processing thread, Push only announces; the admin pages read it. Destroying
// the session waits for an announcement in progress (the ProxyGenerator contract).
class PushPipeline::WatchCore {
 public:
  WatchCore(Proxy proxy, absl::AnyInvocable<void(PushRequestPtr)> on_push)
      : proxy_(std::move(proxy)), on_push_(std::move(on_push)) {}

  const Proxy& proxy() const { return proxy_; }

  void Notify(const PushRequestPtr& push) {
    {
      MutexLock lock(&notify_mu_);
      if (cancelled_) return;
      notifying_++;
    }
    on_push_(push);
    MutexLock lock(&notify_mu_);
    notifying_--;
  }
  void Cancel() {
    MutexLock lock(&notify_mu_);
    cancelled_ = true;
    notify_mu_.Await([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(notify_mu_) { return notifying_ == 0; });
  }

  // One immutable map per type, shared with the stream it was handed to: a change makes a new
  // one (copy on write), so the view is held once, not once here and once by the stream.
  struct TypeView {
    Snapshot::TypeResourcesPtr current;  // never null once the type is viewed
  };

  // The view as a Snapshot, for the admin pages (the push path never assembles one).
  SnapshotPtr CurrentSnapshot();

  // What the proxy watches, one entry per type in push order (CDS, EDS, LDS, RDS, SDS, then the
  // rest by type URL). Replaced whole when a subscription changes, never changed in place: every
  // push reads it for every proxy, and so pays one pointer copy, not a copy of each type's URL.
  using Interest = std::vector<WatchedResources>;
  static const WatchedResources* FindIn(const Interest& interest, std::string_view type_url) {
    for (const WatchedResources& watched : interest) {
      if (watched.type_url == type_url) return &watched;
    }
    return nullptr;
  }

  Mutex mu_;
  std::shared_ptr<const Interest> interest_ ABSL_GUARDED_BY(mu_) = std::make_shared<const Interest>();
  TypeUrlMap<TypeView> view_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const PushContext> last_context_ ABSL_GUARDED_BY(mu_);
  uint64_t last_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  // The newest context anything of the view was generated from, requests included: what the
  // proxy was last shown, which the push filter compares with (istiod's PrevSidecarScope).
  std::shared_ptr<const PushContext> generated_context_ ABSL_GUARDED_BY(mu_);
  uint64_t generated_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_push_start_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();

 private:
  const Proxy proxy_;
  absl::AnyInvocable<void(PushRequestPtr)> on_push_;
  Mutex notify_mu_;
  bool cancelled_ ABSL_GUARDED_BY(notify_mu_) = false;
  int notifying_ ABSL_GUARDED_BY(notify_mu_) = 0;
};

namespace {
// The order of WatchCore::Interest.
bool PushesBefore(std::string_view a, std::string_view b) {
  const int ra = PushOrderRank(a);
  const int rb = PushOrderRank(b);
  return ra != rb ? ra < rb : a < b;
}
}  // namespace

SnapshotPtr PushPipeline::WatchCore::CurrentSnapshot() {
  std::map<std::string, Snapshot::TypeResourcesPtr> types;
  {
    MutexLock lock(&mu_);
    for (auto& [type_url, view] : view_) types[type_url] = view.current;
  }
  absl::StatusOr<SnapshotPtr> snapshot = Snapshot::FromTypes(std::move(types));
  return snapshot.ok() ? *snapshot : nullptr;
}

class PipelineSession final : public ProxyGenerator::Session {
 public:
  PipelineSession(PushPipeline* pipeline, uint64_t id, std::shared_ptr<PushPipeline::WatchCore> core)
      : pipeline_(pipeline), id_(id), core_(std::move(core)) {}
  ~PipelineSession() override {
    {
      MutexLock lock(&pipeline_->mu_);
      pipeline_->watches_.erase(id_);
    }
    core_->Cancel();
  }

  GeneratedConfig Subscribe(const std::string& type_url, bool wildcard, const SubscribedNames& shared) override {
    const absl::flat_hash_set<std::string>& names = *shared;
    GeneratedConfig out;
    PushRequest request;
    bool first = false;
    std::set<std::string> added;
    {
      MutexLock lock(&core_->mu_);
      const PushPipeline::WatchCore::Interest& interest = *core_->interest_;
      const WatchedResources* before = PushPipeline::WatchCore::FindIn(interest, type_url);
      first = before == nullptr || (wildcard && !before->wildcard);
      if (before != nullptr && shared != before->names) {
        for (const std::string& name : names) {
          if (!before->names->contains(name)) added.insert(name);
        }
      }
      if (before == nullptr || before->wildcard != wildcard || before->names != shared) {
        auto replaced = std::make_shared<PushPipeline::WatchCore::Interest>(interest);
        auto it = replaced->begin() + (before != nullptr ? before - interest.data() : 0);  // its copy
        if (before == nullptr) {
          it = replaced->insert(std::upper_bound(replaced->begin(), replaced->end(), type_url,
                                                 [](const std::string& url, const WatchedResources& watched) {
                                                   return PushesBefore(url, watched.type_url);
                                                 }),
                                WatchedResources{.type_url = type_url});
        }
        it->wildcard = wildcard;
        it->names = shared;  // the stream's set itself: a proxy's names are held once
        core_->interest_ = std::move(replaced);
      }
      if (!wildcard && !IsFullStateType(type_url)) {
        // Forget what is no longer wanted, so the view stays the size of the interest.
        auto view = core_->view_.find(type_url);
        if (view != core_->view_.end() && view->second.current != nullptr &&
            std::any_of(view->second.current->items.begin(), view->second.current->items.end(),
                        [&](const auto& item) { return !names.contains(item.first); })) {
          std::map<std::string, ResourcePtr> kept = view->second.current->items;
          std::erase_if(kept, [&](const auto& item) { return !names.contains(item.first); });
          view->second.current = pipeline_->views_.Intern(type_url, std::move(kept));
          // Handed back so the stream lets go of the larger map too.
          out[type_url] = GeneratedType{view->second.current, std::make_shared<const std::vector<std::string>>()};
        }
      }
      if (!first && added.empty()) return out;
      // The request path generates from the proxy's last push (istiod: LastPushContext and
      // LastPushTime), so its cache writes cannot overwrite a newer push's entries.
      request.context = core_->last_context_;
      request.push_sequence = core_->last_sequence_;
      request.start = core_->last_push_start_;
    }
    if (request.context == nullptr) {
      request.context = pipeline_->context();
      MutexLock lock(&pipeline_->mu_);
      request.push_sequence = pipeline_->push_sequence_;
    }
    if (request.context == nullptr) return out;  // nothing pushed yet: the first push generates
    request.reasons[reason::kProxyRequest] = 1;
    request.forced = true;
    if (!first && !IsFullStateType(type_url)) {
      request.delta_scope = DeltaScope{};
      request.delta_scope->subscribed = std::move(added);
    }
    for (auto& [generated_type, generated] : pipeline_->Generate(*core_, request, type_url)) {
      out[generated_type] = std::move(generated);  // newer than a pruned view of the same type
    }
    return out;
  }

  GeneratedConfig Generate(const PushRequest& push) override { return pipeline_->Generate(*core_, push); }

 private:
  PushPipeline* const pipeline_;
  const uint64_t id_;
  const std::shared_ptr<PushPipeline::WatchCore> core_;
};

PushPipeline::PushPipeline(std::shared_ptr<PushContextBuilder> builder, Options options)
    : builder_(std::move(builder)),
      options_(std::move(options)),
      clock_(options_.scheduler->clock()),
      debouncer_(
          *options_.scheduler, options_.debounce,
          [this](PushRequest request, uint64_t) { (void)Push(std::move(request)); }, options_.metrics,
          options_.observer) {
  if (options_.metrics != nullptr) {
    full_pushes_metric_ = &options_.metrics->GetCounter("cxds_pushes", "Pushes started, by kind.", {{"kind", "full"}});
    incremental_pushes_metric_ =
        &options_.metrics->GetCounter("cxds_pushes", "Pushes started, by kind.", {{"kind", "incremental"}});
    context_init_time_ = &options_.metrics->GetHistogram("pilot_pushcontext_init_seconds",
                                                         "Time to build a PushContext (s).", FineTimeBuckets());
  }
  if (options_.summary_interval > absl::ZeroDuration()) {
    MutexLock lock(&mu_);
    summary_timer_ = options_.scheduler->Schedule(options_.summary_interval, [this] { LogSummary(); });
  }
}

PushPipeline::~PushPipeline() {
  TimerPtr timer;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    timer = std::move(summary_timer_);
  }
}

void PushPipeline::AddGenerator(const std::string& type_url, std::shared_ptr<Generator> generator) {
  MutexLock lock(&mu_);
  Histogram* push_time = nullptr;
  if (options_.metrics != nullptr) {
    push_time = &options_.metrics->GetHistogram("pilot_xds_push_time", "Time to generate one type for one proxy (s).",
                                                FineTimeBuckets(), {{"type", std::string(ShortTypeName(type_url))}});
  }
  auto replaced = std::make_shared<GeneratorMap>(*generators_);
  (*replaced)[type_url] = GeneratorEntry{std::move(generator), push_time};
  generators_ = std::move(replaced);
}

std::shared_ptr<const PushPipeline::GeneratorMap> PushPipeline::generators() const {
  MutexLock lock(&mu_);
  return generators_;
}

void PushPipeline::ConfigUpdate(PushRequest request) {
  if (request.change_ids.empty()) request.change_ids.insert(NewChangeId());
  debouncer_.ConfigUpdate(std::move(request));
}

std::shared_ptr<const PushContext> PushPipeline::context() const {
  MutexLock lock(&mu_);
  return context_;
}

PushPipeline::Stats PushPipeline::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

std::vector<PushPipeline::PushRecord> PushPipeline::RecentPushes() const {
  MutexLock lock(&mu_);
  return {history_.begin(), history_.end()};
}

std::shared_ptr<PushPipeline::WatchCore> PushPipeline::FindWatch(const std::string& node_id) const {
  MutexLock lock(&mu_);
  for (const auto& [id, core] : watches_) {
    if (core->proxy().id == node_id) return core;
  }
  return nullptr;
}

SnapshotPtr PushPipeline::ProxyView(const std::string& node_id) {
  std::shared_ptr<WatchCore> found = FindWatch(node_id);
  return found != nullptr ? found->CurrentSnapshot() : nullptr;
}

std::optional<envoy::config::core::v3::Node> PushPipeline::ProxyNode(const std::string& node_id) {
  std::shared_ptr<WatchCore> found = FindWatch(node_id);
  if (found == nullptr) return std::nullopt;
  return found->proxy().node;
}

std::optional<Proxy> PushPipeline::FindProxy(const std::string& node_id) {
  std::shared_ptr<WatchCore> found = FindWatch(node_id);
  if (found == nullptr) return std::nullopt;
  return found->proxy();
}

std::optional<std::map<std::string, PushPipeline::RegeneratedType>> PushPipeline::RegenerateView(
    const std::string& node_id) {
  std::shared_ptr<WatchCore> core = FindWatch(node_id);
  const std::shared_ptr<const PushContext> current = context();
  if (core == nullptr || current == nullptr) return std::nullopt;
  std::shared_ptr<const WatchCore::Interest> interest;
  std::map<std::string, std::map<std::string, ResourcePtr>> view;  // for incremental results
  {
    MutexLock lock(&core->mu_);
    interest = core->interest_;
    for (const auto& [type_url, type_view] : core->view_) {
      if (type_view.current != nullptr) view[type_url] = type_view.current->items;
    }
  }
  // A forced full request: every generator answers for everything the proxy watches.
  PushRequest request;
  request.full = true;
  request.forced = true;
  request.context = current;
  GeneratorEnv env{*current, cache_};
  std::map<std::string, RegeneratedType> out;
  const std::shared_ptr<const GeneratorMap> generators = this->generators();
  for (const WatchedResources& watched : *interest) {
    const std::string& type_url = watched.type_url;
    auto generator = generators->find(type_url);
    if (generator == generators->end()) continue;
    RegeneratedType& type = out[type_url];
    absl::StatusOr<std::optional<GeneratedResources>> generated =
        generator->second.generator->Generate(core->proxy(), watched, request, env);
    if (!generated.ok()) {
      type.error = std::string(generated.status().message());
      continue;
    }
    if (!generated->has_value()) {
      type.resources = view[type_url];  // nothing to send for it now: what it has stays
      continue;
    }
    if ((*generated)->incremental) {
      type.resources = view[type_url];
      for (const std::string& name : (*generated)->removed) type.resources.erase(name);
    }
    for (ResourcePtr& resource : (*generated)->resources) type.resources[resource->name()] = std::move(resource);
    // Generators may produce more than was asked for (the stream sends only what is subscribed).
    std::erase_if(type.resources, [&watched](const auto& entry) { return !watched.Wants(entry.first); });
  }
  return out;
}

size_t PushPipeline::watches() const {
  MutexLock lock(&mu_);
  return watches_.size();
}

absl::StatusOr<std::shared_ptr<const PushContext>> PushPipeline::Push(PushRequest request) {
  const absl::Time started = clock_.Now();
  std::shared_ptr<const PushContext> previous;
  uint64_t sequence;
  {
    MutexLock lock(&mu_);
    previous = context_;
    sequence = ++push_sequence_;
  }
  if (request.start == absl::InfiniteFuture()) request.start = started;
  // An endpoint-only request reuses the context; anything else (or the first push) builds one.
  const bool full = previous == nullptr || !request.EndpointOnly();
  request.full = full;
  std::shared_ptr<const PushContext> context = previous;
  absl::Duration context_time = absl::ZeroDuration();
  if (full) {
    absl::StatusOr<std::shared_ptr<const PushContext>> built =
        builder_->Build(previous.get(), request, sequence, started);
    if (!built.ok()) {
      MutexLock lock(&mu_);
      stats_.context_errors++;
      Log().error("PUSH failed: building the PushContext: {}; version {} keeps serving",
                  std::string(built.status().message()), previous != nullptr ? previous->version() : "(none)");
      return built.status();
    }
    context = *built;
    context_time = clock_.Now() - started;
    if (context_init_time_ != nullptr) context_init_time_->Observe(absl::ToDoubleSeconds(context_time));
  }
  if (request.forced) {
    cache_.ClearAll(sequence);
  } else {
    std::set<ConfigKey> dropped = request.configs;
    if (full) dropped.insert(ConfigKey{kind::kPushContext, "", ""});
    cache_.Clear(dropped, sequence);
  }
  request.context = context;
  request.push_sequence = sequence;

  std::vector<std::shared_ptr<WatchCore>> watches;
  {
    MutexLock lock(&mu_);
    context_ = context;
    for (const auto& [id, core] : watches_) watches.push_back(core);
  }
  if (options_.observer != nullptr) options_.observer->OnPushStarted(request, clock_.Now());

  auto shared = std::make_shared<const PushRequest>(request);
  // For the proxies the push names as workloads: the same push, forced (made at most once).
  PushRequestPtr forced_for_workload;
  const bool names_workloads = !request.forced && options_.proxy_update && request.HasKind(kind::kWorkload);
  std::vector<std::pair<WatchCore*, PushRequestPtr>> to_notify;
  for (const std::shared_ptr<WatchCore>& core : watches) {
    if (names_workloads && options_.proxy_update(core->proxy(), request)) {
      if (forced_for_workload == nullptr) {
        PushRequest forced = request;
        forced.forced = true;
        forced.reasons[reason::kProxyUpdate]++;
        forced_for_workload = std::make_shared<const PushRequest>(std::move(forced));
      }
      to_notify.emplace_back(core.get(), forced_for_workload);
      continue;
    }
    if (!request.forced && options_.proxy_filter) {
      // What this proxy was last shown; the push before, for one shown nothing yet.
      std::shared_ptr<const PushContext> shown;
      {
        MutexLock lock(&core->mu_);
        shown = core->generated_context_;
      }
      if (!options_.proxy_filter(core->proxy(), request, *context, shown != nullptr ? shown.get() : previous.get())) {
        continue;
      }
    }
    to_notify.emplace_back(core.get(), shared);
  }
  const uint64_t notified = to_notify.size();
  {
    // Counted before any proxy hears of the push: a stream may answer, and its ACK be seen,
    // before this thread runs again.
    MutexLock lock(&mu_);
    stats_.proxies_notified += notified;
    stats_.proxies_filtered_out += watches.size() - notified;
    if (full) {
      stats_.full_pushes++;
      stats_.contexts_built++;
    } else {
      stats_.incremental_pushes++;
    }
  }
  if (full) {
    if (full_pushes_metric_ != nullptr) full_pushes_metric_->Add();
  } else if (incremental_pushes_metric_ != nullptr) {
    incremental_pushes_metric_->Add();
  }
  for (const auto& [core, push] : to_notify) core->Notify(push);
  {
    MutexLock lock(&mu_);
    PushRecord record;
    record.sequence = sequence;
    record.version = context->version();
    record.full = full;
    record.reasons = request.ReasonsString();
    for (const ConfigKey& key : request.configs) {
      if (record.configs.size() < 20) record.configs.push_back(key.ToString());
    }
    record.configs_total = request.configs.size();
    record.change_ids_total = request.change_ids.size();
    const size_t skipped = request.change_ids.size() - std::min(request.change_ids.size(), kMaxChangeIdsNamed);
    record.change_ids.assign(std::next(request.change_ids.begin(), static_cast<std::ptrdiff_t>(skipped)),
                             request.change_ids.end());
    record.proxies_notified = notified;
    record.proxies_total = watches.size();
    record.first_change = request.start;
    record.started = started;
    record.context_time = context_time;
    record.push_time = clock_.Now() - started;
    history_.push_back(std::move(record));
    if (history_.size() > kMaxPushRecords) history_.pop_front();
    if (full) {
      summary_full_++;
    } else {
      summary_incremental_++;
      summary_incremental_proxies_ += notified;
    }
  }
  if (full) {
    Log().info("XDS: Pushing version={} full=true configs={} reasons=\"{}\" proxies={}/{}", context->version(),
               request.configs.size(), request.ReasonsString(), notified, watches.size());
  } else {
    Log().debug("XDS: Incremental push version={} configs={} reasons=\"{}\" proxies={}/{}", context->version(),
                request.configs.size(), request.ReasonsString(), notified, watches.size());
  }
  return context;
}

GeneratedConfig PushPipeline::Generate(WatchCore& core, const PushRequest& request,
                                       std::optional<std::string_view> only_type) {
  GeneratedConfig change;
  std::shared_ptr<const PushContext> context = request.context != nullptr ? request.context : this->context();
  if (context == nullptr) return change;
  std::shared_ptr<const WatchCore::Interest> interest;
  {
    MutexLock lock(&core.mu_);
    interest = core.interest_;
    if (core.generated_context_ == nullptr || request.push_sequence >= core.generated_sequence_) {
      core.generated_context_ = context;
      core.generated_sequence_ = request.push_sequence;
    }
    if (request.push_sequence >= core.last_sequence_ && request.TotalReasons() > 0 &&
        !request.reasons.contains(reason::kProxyRequest)) {
      core.last_context_ = context;
      core.last_sequence_ = request.push_sequence;
      core.last_push_start_ = request.start;
    }
  }
  const std::shared_ptr<const GeneratorMap> generators = this->generators();
  GeneratorEnv env{*context, cache_};
  for (const WatchedResources& watching : *interest) {
    const std::string& type_url = watching.type_url;
    if (only_type.has_value() && type_url != *only_type) continue;
    auto generator = generators->find(type_url);
    if (generator == generators->end()) continue;
    const WatchedResources* watched = &watching;
    WatchedResources narrowed;
    if (request.delta_scope.has_value()) {
      // Narrowed to what was just subscribed (docs/protocol-rules.md, "Narrowed generation").
      narrowed.type_url = type_url;
      narrowed.names = std::make_shared<const absl::flat_hash_set<std::string>>(request.delta_scope->subscribed.begin(),
                                                                                request.delta_scope->subscribed.end());
      watched = &narrowed;
    }
    const absl::Time started = clock_.Now();
    absl::StatusOr<std::optional<GeneratedResources>> generated =
        generator->second.generator->Generate(core.proxy(), *watched, request, env);
    if (generator->second.push_time != nullptr) {
      generator->second.push_time->Observe(absl::ToDoubleSeconds(clock_.Now() - started));
    }
    if (!generated.ok()) {
      {
        MutexLock lock(&mu_);
        stats_.generate_errors++;
      }
      Log().error("GENERATE failed node={} type={}: {}; what the proxy has keeps serving", Untrusted(core.proxy().id),
                  Untrusted(ShortTypeName(type_url)), std::string(generated.status().message()));
      continue;
    }
    if (!generated->has_value()) continue;  // nothing for this type: no response
    GeneratedResources& result = **generated;
    auto names = std::make_shared<std::vector<std::string>>();
    MutexLock lock(&core.mu_);
    WatchCore::TypeView& view = core.view_[type_url];
    const bool existed = view.current != nullptr;
    const std::map<std::string, ResourcePtr>& old_items = existed ? view.current->items : NoViewItems();
    if (!result.incremental) {
      std::map<std::string, ResourcePtr> all;
      for (ResourcePtr& resource : result.resources) all[resource->name()] = std::move(resource);
      for (const auto& [name, old] : old_items) {
        auto it = all.find(name);
        if (it == all.end() || it->second->content_version() != old->content_version()) names->push_back(name);
      }
      for (const auto& [name, resource] : all) {
        if (!old_items.contains(name)) names->push_back(name);
      }
      if (!names->empty() || !existed) view.current = views_.Intern(type_url, std::move(all));
    } else {
      // Copy on write through the interner: proxies given the same change share the result.
      std::map<std::string, ResourcePtr> changed;  // by name; null: removed
      for (ResourcePtr& resource : result.resources) {
        auto it = old_items.find(resource->name());
        if (it == old_items.end() || it->second->content_version() != resource->content_version()) {
          changed[resource->name()] = std::move(resource);
        }
      }
      for (const std::string& name : result.removed) {
        if (old_items.contains(name) && !changed.contains(name)) changed[name] = nullptr;
      }
      for (const auto& [name, resource] : changed) names->push_back(name);
      if (!changed.empty() || !existed) {
        view.current =
            views_.InternPatched(type_url, view.current, ViewInterner::Patch(changed.begin(), changed.end()));
      }
    }
    if (!names->empty() || !existed) {
      std::sort(names->begin(), names->end());
      names->erase(std::unique(names->begin(), names->end()), names->end());
      change[type_url] = GeneratedType{view.current, std::move(names)};
    }
  }
  return change;
}

std::unique_ptr<ProxyGenerator::Session> PushPipeline::Open(const envoy::config::core::v3::Node& node,
                                                            absl::AnyInvocable<void(PushRequestPtr)> on_push,
                                                            const PeerIdentity& identity) {
  auto core = std::make_shared<WatchCore>(Proxy{node.id(), node, identity}, std::move(on_push));
  MutexLock lock(&mu_);
  const uint64_t id = next_watch_id_++;
  watches_[id] = core;
  return std::make_unique<PipelineSession>(this, id, std::move(core));
}

void PushPipeline::LogSummary() {
  uint64_t incremental;
  uint64_t proxies;
  uint64_t full;
  TimerPtr self;  // this timer; released (outside the lock) from its own callback, as allowed
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    incremental = std::exchange(summary_incremental_, 0);
    proxies = std::exchange(summary_incremental_proxies_, 0);
    full = std::exchange(summary_full_, 0);
    self = std::move(summary_timer_);
    summary_timer_ = options_.scheduler->Schedule(options_.summary_interval, [this] { LogSummary(); });
  }
  Log().info("Push summary: {} full and {} incremental pushes (to {} proxies) in the last {}s", full, incremental,
             proxies, absl::ToInt64Seconds(options_.summary_interval));
}

}  // namespace cxds
