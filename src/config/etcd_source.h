// EtcdSource: config documents stored in etcd under a prefix (one document per key,
// PREFIX/KIND/NAMESPACE/NAME), delivered as batches of "files" whose path is the key, so that
// parse errors, the last-good rule and /debug/config_status work exactly as for a directory.
//
//  - Load reads every key under the prefix at one revision R.
//  - Start watches from R+1; each watch response is one batch (etcd sends a transaction's
//    events together, so `cxds apply` of many documents is one batch).
//  - The stream breaks (etcd stopped, network): the source reports itself disconnected, keeps
//    what it delivered, and resumes from the last revision it delivered, with a backoff.
//  - That revision was compacted, or one watch response is too large to take (a watch far
//    behind; responses come in fragments, joined up to EtcdClient's max_message_bytes): it
//    reads everything again at a fresh revision, in bounded pages, and delivers only the
//    difference to what it had (EtcdMirror): nothing lost, nothing delivered twice.
//
// Threading: Load, Start and Stop on the owner's thread; batches on the source's own thread,
// one at a time; status() from any thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "config/config_source.h"
#include "config/etcd_client.h"

namespace cxds {

// What a source has delivered from etcd: key -> the revision it was last changed at. It turns
// reads and watch responses into batches that change exactly what changed. Not thread-safe.
class EtcdMirror {
 public:
  explicit EtcdMirror(std::string prefix) : prefix_(std::move(prefix)) {}

  // A whole read (the first, or one after a compaction): the difference to what was
  // delivered (everything the first time).
  std::vector<FileRead> Reconcile(const EtcdRangeResult& range);
  // A watch response. Events at or below revision() were delivered already and are skipped;
  // several events on one key leave its last state.
  std::vector<FileRead> Apply(const EtcdWatchBatch& batch);

  int64_t revision() const { return revision_; }
  size_t size() const { return mod_revisions_.size(); }

 private:
  FileRead Read(const std::string& key, const std::string& value) const;

  const std::string prefix_;
  std::map<std::string, int64_t> mod_revisions_;
  int64_t revision_ = 0;
};

class EtcdSource final : public ConfigSource {
 public:
  struct Options {
    EtcdClient::Options client;
    absl::Duration min_backoff = absl::Milliseconds(200);  // first retry after a broken watch
    absl::Duration max_backoff = absl::Seconds(5);
  };
  EtcdSource(EtcdLocation location, Options options);
  ~EtcdSource() override;
  EtcdSource(const EtcdSource&) = delete;
  EtcdSource& operator=(const EtcdSource&) = delete;

  std::string Describe() const override;  // "etcd 127.0.0.1:2379 prefix /cxds"
  // Unavailable if etcd cannot be reached.
  absl::StatusOr<std::vector<FileRead>> Load() override;
  absl::Status Start(OnBatch on_batch) override;
  void Stop() override;
  SourceStatus status() const override;

 private:
  void Run();
  // Watches until the stream breaks or Stop; false if stopping.
  bool WatchOnce();
  // Reads everything again (after a compaction, or a watch response too large to take) and
  // delivers the difference to what was delivered.
  void Reload();
  void Deliver(std::vector<FileRead> batch, int64_t revision);
  void SetConnected(bool connected, const std::string& detail);
  // Waits `d` or until Stop; false if stopping.
  bool Sleep(absl::Duration d);

  const EtcdLocation location_;
  const Options options_;
  EtcdClient client_;
  EtcdMirror mirror_;           // Load, then the source thread
  bool watch_created_ = false;  // source thread: the current watch was accepted by etcd
  OnBatch on_batch_;
  std::thread thread_;

  mutable Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  EtcdWatch* watch_ ABSL_GUARDED_BY(mu_) = nullptr;  // the open watch, to cancel on Stop
  SourceStatus status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cxds
