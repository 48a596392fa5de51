#include "config/dir_source.h"

#include <string_view>

#include "common/logging.h"

namespace cxds {

DirectorySource::DirectorySource(std::string dir, Scheduler& scheduler, Options options)
    : dir_(dir), scheduler_(scheduler), options_(options), reader_(std::move(dir), options.limits) {}

DirectorySource::~DirectorySource() { Stop(); }

std::string DirectorySource::Describe() const { return "dir " + dir_; }

absl::StatusOr<std::vector<FileRead>> DirectorySource::Load() {
  absl::StatusOr<ConfigDirReader::Result> result = reader_.Next();
  Log(result);
  if (!result.ok()) return result.status();
  return std::move(result->changes);
}

absl::Status DirectorySource::Start(OnBatch on_batch) {
  on_batch_ = std::move(on_batch);
  {
    MutexLock lock(&mu_);
    stopped_ = false;
  }
  if (options_.watch) {
    if (absl::Status status =
            watcher_.Start([this](const std::string& path, DirWatcher::Event event) { Poke(path, event); });
        !status.ok())
      return status;
  }
  // The first read runs at once: it sets the watches, and catches what changed since Load.
  TimerPtr old;
  MutexLock lock(&mu_);
  read_at_ = scheduler_.clock().Now();
  old = ArmLocked();
  return absl::OkStatus();
}

void DirectorySource::Stop() {
  watcher_.Stop();
  TimerPtr timer;
  {
    MutexLock lock(&mu_);
    stopped_ = true;
    timer = std::move(read_timer_);
  }
  timer.reset();  // waits for a running read, outside mu_
}

namespace {
// kubelet's AtomicWriter: a ConfigMap or Secret volume's files are symlinks through `..data`,
// which it points at a new directory, already complete, by one rename.
bool IsConfigMapSwap(std::string_view path) { return path == "..data" || path.ends_with("/..data"); }
}  // namespace

void DirectorySource::Poke(const std::string& path, DirWatcher::Event event) {
  TimerPtr old;  // destroyed after mu_ is released
  MutexLock lock(&mu_);
  if (stopped_) return;
  const absl::Time now = scheduler_.clock().Now();
  if (first_event_ == absl::InfiniteFuture()) {
    first_event_ = now;
    may_read_at_once_ = now - last_event_ >= options_.settle;
  }
  last_event_ = now;
  if (event == DirWatcher::Event::kWriting && open_writes_.size() < kMaxOpenWrites) open_writes_.insert(path);
  if (event == DirWatcher::Event::kClosed) open_writes_.erase(path);
  if (event == DirWatcher::Event::kMovedOut) {
    // A temporary file this burst wrote leaves; any other file renamed away is gone from the
    // directory, as if deleted, until something takes its name.
    if (touched_.erase(path) == 0) settle_whole_ = true;
  } else if (event != DirWatcher::Event::kMovedIn) {
    if (touched_.size() < kMaxOpenWrites) {
      touched_.insert(path);
    } else {
      settle_whole_ = true;
    }
  }
  const bool whole_files_only = open_writes_.empty() && touched_.empty() && !settle_whole_;
  if (event == DirWatcher::Event::kMovedIn && IsConfigMapSwap(path) && may_read_at_once_ && open_writes_.empty()) {
    // The whole mount switched after a quiet directory: waiting for more would only delay it.
    may_read_at_once_ = false;
    reading_at_once_ = true;
    read_at_ = now;
  } else if (!reading_at_once_) {  // events before that read are covered by it
    // Quiet for `settle` (or `rename_settle` after a whole-file replace), never past the ceiling.
    const absl::Duration quiet = event == DirWatcher::Event::kMovedIn && whole_files_only
                                     ? std::min(options_.rename_settle, options_.settle)
                                     : options_.settle;
    read_at_ = std::min(now + quiet, CeilingLocked());
  }
  old = ArmLocked();
}

absl::Time DirectorySource::CeilingLocked() const {
  return first_event_ + (open_writes_.empty() ? options_.max_settle : options_.max_open_write);
}

TimerPtr DirectorySource::ArmLocked() {
  if (timer_due_ <= read_at_ || read_at_ == absl::InfiniteFuture()) return nullptr;  // fires in time, re-arms
  TimerPtr old = std::move(read_timer_);
  timer_due_ = read_at_;
  read_timer_ = scheduler_.Schedule(read_at_ - scheduler_.clock().Now(), [this] { OnTimer(); });
  return old;
}

void DirectorySource::OnTimer() {
  TimerPtr old;
  {
    MutexLock lock(&mu_);
    timer_due_ = absl::InfiniteFuture();
    if (stopped_) return;
    const absl::Time now = scheduler_.clock().Now();
    if (now < read_at_) {  // more events came: wait for quiet
      old = ArmLocked();
      return;
    }
    if (!open_writes_.empty() && now < CeilingLocked()) {  // a writer is still at work
      reading_at_once_ = false;                            // from here its events settle again
      read_at_ = std::min(now + options_.settle, CeilingLocked());
      old = ArmLocked();
      return;
    }
    if (!open_writes_.empty()) {
      cxds::Log().warn("CONFIG {} file(s) still open for writing after {} (first: {}): reading them as they are",
                       open_writes_.size(), absl::FormatDuration(options_.max_open_write),
                       Untrusted(*open_writes_.begin()));
    }
    read_at_ = first_event_ = absl::InfiniteFuture();
    reading_at_once_ = false;
    open_writes_.clear();
    touched_.clear();
    settle_whole_ = false;
  }
  ReadNow();
}

void DirectorySource::ReadNow() {
  absl::StatusOr<ConfigDirReader::Result> result = reader_.Next();
  Log(result);
  absl::Duration next = options_.resync_interval;
  if (!result.ok()) {
    next = options_.missing_poll;
    if (options_.watch) watcher_.Watch({});
  } else {
    if (options_.watch) {
      const DirWatcher::WatchResult watched = watcher_.Watch(result->dirs);
      for (const auto& [dir, why] : watched.failed) {
        cxds::Log().warn("WATCH failed dir={} error=\"{}\": changes there are found by the periodic read", dir, why);
      }
      // What was written in a new directory before its watch raised no event: read it again.
      if (watched.added > 0) next = options_.settle;
    }
    if (result->in_flux) next = options_.settle;
    if (!result->changes.empty() && on_batch_) on_batch_(std::move(result->changes));
  }
  TimerPtr old;
  MutexLock lock(&mu_);
  if (stopped_) return;
  // An event during the read may already want an earlier read; keep the earlier.
  read_at_ = std::min(read_at_, scheduler_.clock().Now() + next);
  old = ArmLocked();
}

void DirectorySource::Log(const absl::StatusOr<ConfigDirReader::Result>& result) {
  if (!result.ok()) {
    if (!missing_) {
      cxds::Log().error("CONFIG {}: the last good config keeps serving; looking again every {}",
                        std::string(result.status().message()), absl::FormatDuration(options_.missing_poll));
    }
    missing_ = true;
    return;
  }
  if (missing_) cxds::Log().info("CONFIG directory {} is back: reading it", reader_.dir());
  missing_ = false;
  for (const std::string& note : result->notes) cxds::Log().warn("CONFIG {}", note);
  for (const FileRead& change : result->changes) {
    if (change.state == FileRead::State::kUnreadable) {
      cxds::Log().error("CONFIG cannot read {}: {}; its objects keep their last good version", change.path,
                        change.error);
    }
  }
}

}  // namespace cxds
