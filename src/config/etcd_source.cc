#include "config/etcd_source.h"

#include <algorithm>
#include <set>

#include "absl/time/clock.h"
#include "common/logging.h"
#include "common/strings.h"

namespace cxds {

FileRead EtcdMirror::Read(const std::string& key, const std::string& value) const {
  // A key of another shape is reported on its own and defines nothing; it cannot shadow a
  // document of its proper key.
  if (absl::StatusOr<ConfigKey> parsed = ConfigKeyFromEtcdKey(prefix_, key); !parsed.ok()) {
    return FileRead::Unreadable(key, std::string(parsed.status().message()));
  }
  return FileRead::Present(key, value);
}

std::vector<FileRead> EtcdMirror::Reconcile(const EtcdRangeResult& range) {
  std::vector<FileRead> batch;
  std::map<std::string, int64_t> next;
  for (const EtcdKeyValue& kv : range.kvs) {
    next[kv.key] = kv.mod_revision;
    auto it = mod_revisions_.find(kv.key);
    if (it == mod_revisions_.end() || it->second != kv.mod_revision) batch.push_back(Read(kv.key, kv.value));
  }
  for (const auto& [key, unused] : mod_revisions_) {
    if (!next.contains(key)) batch.push_back(FileRead::Removed(key));
  }
  mod_revisions_ = std::move(next);
  revision_ = std::max(revision_, range.revision);
  return batch;
}

std::vector<FileRead> EtcdMirror::Apply(const EtcdWatchBatch& batch) {
  std::map<std::string, const EtcdWatchEvent*> last;  // per key, in key order
  for (const EtcdWatchEvent& event : batch.events) {
    if (event.mod_revision <= revision_) continue;  // delivered before (a resumed watch overlaps)
    last[event.key] = &event;
  }
  int64_t newest = revision_;
  std::vector<FileRead> out;
  for (const auto& [key, event] : last) {
    newest = std::max(newest, event->mod_revision);
    if (event->value.has_value()) {
      mod_revisions_[key] = event->mod_revision;
      out.push_back(Read(key, *event->value));
    } else if (mod_revisions_.erase(key) > 0) {
      out.push_back(FileRead::Removed(key));
    }
  }
  revision_ = newest;
  return out;
}

EtcdSource::EtcdSource(EtcdLocation location, Options options)
    : location_(std::move(location)),
      options_(options),
      client_(location_.address, options_.client),
      mirror_(location_.prefix) {}

EtcdSource::~EtcdSource() { Stop(); }

std::string EtcdSource::Describe() const { return StrCat("etcd ", location_.address, " prefix ", location_.prefix); }

absl::StatusOr<std::vector<FileRead>> EtcdSource::Load() {
  absl::StatusOr<EtcdRangeResult> range = client_.RangePrefix(location_.prefix);
  if (!range.ok()) {
    SetConnected(false, std::string(range.status().message()));
    return range.status();
  }
  std::vector<FileRead> batch = mirror_.Reconcile(*range);
  Log().info("ETCD_LOADED address={} prefix={} keys={} revision={}", location_.address, location_.prefix,
             range->kvs.size(), range->revision);
  MutexLock lock(&mu_);
  status_ = {true, mirror_.revision(), ""};
  return batch;
}

absl::Status EtcdSource::Start(OnBatch on_batch) {
  on_batch_ = std::move(on_batch);
  {
    MutexLock lock(&mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void EtcdSource::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    if (watch_ != nullptr) watch_->Cancel();
  }
  if (thread_.joinable()) thread_.join();
}

SourceStatus EtcdSource::status() const {
  MutexLock lock(&mu_);
  return status_;
}

void EtcdSource::SetConnected(bool connected, const std::string& detail) {
  MutexLock lock(&mu_);
  if (connected && !status_.connected) {
    Log().info("ETCD_CONNECTED address={} prefix={} resume_revision={}", location_.address, location_.prefix,
               mirror_.revision());
  } else if (!connected && status_.connected) {
    Log().warn("ETCD_DISCONNECTED address={} prefix={} revision={} serving=last-good error={}", location_.address,
               location_.prefix, mirror_.revision(), UntrustedQuoted(detail, 1024));
  } else if (!connected) {
    Log().debug("ETCD_RETRY address={} error={}", location_.address, UntrustedQuoted(detail, 1024));
  }
  status_.connected = connected;
  status_.detail = connected ? "" : detail;
}

void EtcdSource::Deliver(std::vector<FileRead> batch, int64_t revision) {
  if (!batch.empty()) on_batch_(std::move(batch));
  MutexLock lock(&mu_);
  status_.revision = revision;  // applied: on_batch_ has returned
}

bool EtcdSource::Sleep(absl::Duration d) {
  MutexLock lock(&mu_);
  return !mu_.AwaitWithDeadline([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; }, absl::Now() + d);
}

void EtcdSource::Run() {
  absl::Duration backoff = options_.min_backoff;
  for (;;) {
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
    }
    watch_created_ = false;
    if (!WatchOnce()) return;
    // A watch etcd accepted was healthy: the next retry starts from the shortest wait.
    backoff = watch_created_ ? options_.min_backoff : std::min(backoff * 2, options_.max_backoff);
    if (!Sleep(backoff)) return;
  }
}

bool EtcdSource::WatchOnce() {
  absl::StatusOr<std::unique_ptr<EtcdWatch>> watch = client_.Watch(location_.prefix, mirror_.revision() + 1);
  if (!watch.ok()) {
    SetConnected(false, std::string(watch.status().message()));
    return true;
  }
  {
    MutexLock lock(&mu_);
    if (stopping_) return false;
    watch_ = watch->get();
  }
  const auto forget_watch = [this] {
    MutexLock lock(&mu_);
    watch_ = nullptr;
  };
  for (;;) {
    absl::StatusOr<EtcdWatchBatch> batch = (*watch)->Next();
    if (!batch.ok() && batch.status().code() == absl::StatusCode::kResourceExhausted) {
      // One response too large to take (a watch far behind): the paged read is bounded.
      forget_watch();
      Log().warn("ETCD_WATCH_TOO_LARGE prefix={} delivered_revision={} error={}: reading everything again",
                 location_.prefix, mirror_.revision(), UntrustedQuoted(std::string(batch.status().message()), 1024));
      Reload();
      return true;
    }
    if (!batch.ok()) {
      forget_watch();
      bool stopping = false;
      {
        MutexLock lock(&mu_);
        stopping = stopping_;
      }
      if (stopping) return false;
      SetConnected(false, std::string(batch.status().message()));
      return true;
    }
    SetConnected(true, "");
    watch_created_ = watch_created_ || batch->created;
    if (batch->compact_revision > 0) {
      forget_watch();
      Log().warn("ETCD_COMPACTED prefix={} delivered_revision={} compact_revision={}: reading everything again",
                 location_.prefix, mirror_.revision(), batch->compact_revision);
      Reload();
      return true;  // watch again from the new revision
    }
    std::vector<FileRead> changes = mirror_.Apply(*batch);
    Deliver(std::move(changes), mirror_.revision());
  }
}

void EtcdSource::Reload() {
  absl::StatusOr<EtcdRangeResult> range = client_.RangePrefix(location_.prefix);
  if (!range.ok()) {
    SetConnected(false, std::string(range.status().message()));
    return;
  }
  std::vector<FileRead> changes = mirror_.Reconcile(*range);
  Log().info("ETCD_RELOADED prefix={} revision={} changed_keys={}", location_.prefix, range->revision, changes.size());
  Deliver(std::move(changes), mirror_.revision());
}

}  // namespace cxds
