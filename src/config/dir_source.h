// DirectorySource: a watched config directory as a series of consistent batches of file
// changes, for ConfigStore::ApplyFiles.
//
// Every batch comes from reading the whole directory again (ConfigDirReader: only files whose
// stat changed are read), never from interpreting single events, so the answer depends only
// on what the directory holds: renames, ConfigMap symlink swaps, permission changes, new
// subdirectories and lost events all end in the same read. Reads are scheduled:
//  - `settle` after the last inotify event, so that a tool's several writes become one batch
//    (an editor's save, a file written in two steps, a `git checkout`), but at most
//    `max_settle` after the first, so that a directory written continuously is still read;
//  - at once for a ConfigMap's swap (its `..data` symlink renamed into place, which switches
//    every file of the mount at once) when the directory had been quiet for `settle` before
//    that burst of events began and no writer is at work; once per burst, the events after it
//    settle as above;
//  - `rename_settle` (shorter) after a file renamed into place when everything else in the
//    burst was a temporary file written and renamed away: such a file is complete when it
//    lands, so only a tool's next rename is waited for (back-to-back renames of several files
//    are still read once, after the last). Any other event in the burst (a file written in
//    place, created, deleted or renamed away, a lost event) makes the burst settle as above;
//  - not while a file still has a writer at work (written, not yet closed: see DirWatcher),
//    up to `max_open_write` after the first event, so that a file written in place in several
//    steps with pauses longer than `settle` is still read once, complete;
//  - again `settle` later when a file changed while it was read;
//  - every `resync_interval` in any case (inotify can lose events);
//  - every `missing_poll` while the directory is gone (deleted, or its mount swapped): the
//    last good config keeps serving and the directory is read again when it is back.
//
// Threading: batches are delivered on the scheduler's thread, one at a time; Start and Stop
// on the owner's thread.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "common/scheduler.h"
#include "config/config_dir.h"
#include "config/config_source.h"
#include "config/dir_watcher.h"

namespace cxds {

class DirectorySource final : public ConfigSource {
 public:
  struct Options {
    absl::Duration settle = absl::Milliseconds(100);
    // Used instead of `settle` after a whole-file replace (see above); at most `settle`.
    absl::Duration rename_settle = absl::Milliseconds(10);
    absl::Duration max_settle = absl::Seconds(1);
    // The ceiling while a written file is still open (a writer that never closes, or whose
    // close event was lost, delays reads by at most this).
    absl::Duration max_open_write = absl::Seconds(5);
    absl::Duration resync_interval = absl::Seconds(30);
    absl::Duration missing_poll = absl::Seconds(1);
    ConfigDirLimits limits;
    bool watch = true;  // false: timers only (tests on a simulated scheduler)
  };
  DirectorySource(std::string dir, Scheduler& scheduler, Options options);
  ~DirectorySource();
  DirectorySource(const DirectorySource&) = delete;
  DirectorySource& operator=(const DirectorySource&) = delete;

  std::string Describe() const override;
  // The first read: every file. NotFound/Unavailable if the directory is missing or unreadable.
  absl::StatusOr<std::vector<FileRead>> Load() override;
  // Watches from here on; batches that change something go to `on_batch`.
  absl::Status Start(OnBatch on_batch) override;
  void Stop() override;

  // An event happened (inotify, or a test): schedules a read. `path` and `event` say whether a
  // writer is still at work on a file and whether a file was renamed in or away
  // (DirWatcher::Event).
  void Poke(const std::string& path = "", DirWatcher::Event event = DirWatcher::Event::kChanged);

 private:
  // Timers are never cancelled under mu_ (a running read takes mu_): a timer that fires
  // before the read is due arms a new one, and replaced timers are destroyed outside mu_.
  void OnTimer();
  void ReadNow();
  [[nodiscard]] TimerPtr ArmLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Time CeilingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Log(const absl::StatusOr<ConfigDirReader::Result>& result);

  const std::string dir_;
  Scheduler& scheduler_;
  const Options options_;
  ConfigDirReader reader_;  // used on the scheduler's thread (or by Load before Start)
  DirWatcher watcher_;
  OnBatch on_batch_;
  bool missing_ = false;  // scheduler thread

  Mutex mu_;
  TimerPtr read_timer_ ABSL_GUARDED_BY(mu_);
  absl::Time timer_due_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();    // of read_timer_, if pending
  absl::Time read_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();      // when the next read is wanted
  absl::Time first_event_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();  // of the pending read
  absl::Time last_event_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // The pending read's burst began after a quiet `settle` and has not yet been read at once.
  bool may_read_at_once_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_at_once_ ABSL_GUARDED_BY(mu_) = false;  // the pending read is due now
  bool stopped_ ABSL_GUARDED_BY(mu_) = true;
  // Files written and not yet closed since the pending read was scheduled; bounded (beyond
  // kMaxOpenWrites the set stops growing: its files are then covered by the ceiling only).
  static constexpr size_t kMaxOpenWrites = 1024;
  std::set<std::string> open_writes_ ABSL_GUARDED_BY(mu_);
  // Paths the pending read's burst touched other than by a rename into place, less those
  // renamed away since (an atomic replace's temporary file); bounded like open_writes_.
  std::set<std::string> touched_ ABSL_GUARDED_BY(mu_);
  // The burst settles the whole `settle` whatever touched_ holds: a path was left out of it
  // (the bound), or a file the burst had not written was renamed away.
  bool settle_whole_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace cxds
