// Fuzz target: what the etcd config source makes of what etcd says. Keys come from a store any
// writer can reach, so they are hostile; watch responses can overlap what was already
// delivered (a resumed watch) and whole reads replace a compacted history.
//
// The input drives a simulated store (puts and deletes of fuzzed keys at increasing
// revisions) and a consumer that sees it as EtcdSource does: watch responses cut at fuzzed
// points, sometimes repeating earlier events, and whole reads (EtcdMirror::Reconcile).
//
// Invariants (docs/fuzzing.md):
//  - applying every batch the mirror hands out, in order, to a map (present and unreadable
//    keys set, removed keys erased) gives exactly the store's keys as of mirror.revision();
//  - a batch names each key at most once, and a key handed out again was written again since
//    (nothing is applied twice); the revision never goes down;
//  - a key not of the form PREFIX/KIND/NAMESPACE/NAME comes out as unreadable, never present;
//  - ConfigKeyFromEtcdKey(EtcdKeyFor(prefix, k)) == k for segments without '/', and
//    ParseEtcdUrl never crashes and gives a prefix that starts with '/' and does not end in it.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/etcd_source.h"

namespace cxds::fuzz {
namespace {

constexpr char kPrefix[] = "/mesh";
constexpr char kUnreadable[] = "<unreadable>";  // how the model records a key of the wrong shape

bool UnderPrefix(const std::string& key) { return key.rfind(std::string(kPrefix) + "/", 0) == 0; }

void Check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "invariant broken: %s\n", what);
    abort();
  }
}

// A key: mostly well formed, sometimes anything.
std::string FuzzedKey(FuzzedDataProvider& in) {
  if (in.ConsumeBool()) return in.ConsumeRandomLengthString(40);
  static const char* kKinds[] = {"ServiceEntry", "WorkloadEntry", "Sidecar"};
  return EtcdKeyFor(kPrefix, {kKinds[in.ConsumeIntegralInRange(0, 2)], in.ConsumeBool() ? "default" : "shop",
                              std::string(1, static_cast<char>('a' + in.ConsumeIntegralInRange(0, 3)))});
}

// `mod_revision(key)`: the revision the store last wrote `key` at, as of the mirror's
// revision. A key handed out again must have been written again since: nothing is applied
// twice (`delivered_at` keeps the revision of each key's last hand-out).
template <typename ModRevision>
void Apply(const std::vector<FileRead>& batch, std::map<std::string, std::string>& delivered,
           std::map<std::string, int64_t>& delivered_at, const ModRevision& mod_revision) {
  std::set<std::string> seen;
  for (const FileRead& read : batch) {
    Check(seen.insert(read.path).second, "a batch names a key twice");
    const int64_t written = mod_revision(read.path);
    Check(written > delivered_at[read.path], "a key is handed out again without a newer write");
    delivered_at[read.path] = written;
    if (read.state == FileRead::State::kRemoved) {
      delivered.erase(read.path);
    } else {
      Check(read.state == FileRead::State::kUnreadable || ConfigKeyFromEtcdKey(kPrefix, read.path).ok(),
            "a key of the wrong shape is delivered as present");
      delivered[read.path] = read.state == FileRead::State::kUnreadable ? kUnreadable : read.content;
    }
  }
}

}  // namespace
}  // namespace cxds::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxds;
  using namespace cxds::fuzz;
  FuzzedDataProvider in(data, size);

  // Parsers on their own.
  const std::string url = in.ConsumeRandomLengthString(64);
  if (absl::StatusOr<EtcdLocation> location = ParseEtcdUrl(url); location.ok()) {
    Check(!location->prefix.empty() && location->prefix.front() == '/' && location->prefix.back() != '/',
          "a parsed prefix is not /NAME");
  }
  const ConfigKey key{in.ConsumeRandomLengthString(8), in.ConsumeRandomLengthString(8),
                      in.ConsumeRandomLengthString(8)};
  if (!key.kind.empty() && !key.namespace_name.empty() && !key.name.empty() &&
      key.kind.find('/') == std::string::npos && key.namespace_name.find('/') == std::string::npos &&
      key.name.find('/') == std::string::npos) {
    absl::StatusOr<ConfigKey> back = ConfigKeyFromEtcdKey(kPrefix, EtcdKeyFor(kPrefix, key));
    Check(back.ok() && *back == key, "a key does not survive the round trip");
  }

  // The store: its event log, and its state at each revision.
  std::vector<EtcdWatchEvent> log;
  std::map<std::string, std::pair<std::string, int64_t>> state;  // key -> value, mod revision
  int64_t revision = 1;
  EtcdMirror mirror(kPrefix);
  std::map<std::string, std::string> delivered;
  std::map<std::string, int64_t> delivered_at;
  int64_t last_revision = 0;
  size_t next_event = 0;  // the first event the consumer has not seen
  const auto state_at = [&](int64_t at) {
    std::map<std::string, std::string> out;
    for (const EtcdWatchEvent& event : log) {
      if (event.mod_revision > at) break;
      if (event.value.has_value()) {
        out[event.key] = *event.value;
      } else {
        out.erase(event.key);
      }
    }
    return out;
  };
  const auto mod_revision = [&](const std::string& key) {
    int64_t last = 0;
    for (const EtcdWatchEvent& event : log) {
      if (event.mod_revision > mirror.revision()) break;
      if (event.key == key) last = event.mod_revision;
    }
    return last;
  };
  for (int step = 0; step < 64 && in.remaining_bytes() > 0; ++step) {
    switch (in.ConsumeIntegralInRange(0, 3)) {
      case 0: {  // a transaction of a few writes, one revision
        ++revision;
        for (int n = in.ConsumeIntegralInRange(1, 4); n > 0; --n) {
          const std::string k = FuzzedKey(in);
          if (in.ConsumeBool() && state.contains(k)) {
            state.erase(k);
            log.push_back({k, std::nullopt, revision});
          } else {
            const std::string v = in.ConsumeRandomLengthString(16);
            state[k] = {v, revision};
            log.push_back({k, v, revision});
          }
        }
        break;
      }
      case 1: {  // a watch response: the next events, maybe repeating some already seen
        const size_t back = in.ConsumeIntegralInRange<size_t>(0, next_event);
        const size_t count = in.ConsumeIntegralInRange<size_t>(0, log.size() - next_event);
        EtcdWatchBatch batch;
        batch.revision = revision;
        size_t end = next_event + count;
        // A response never ends inside a revision.
        while (end < log.size() && end > 0 && log[end].mod_revision == log[end - 1].mod_revision) ++end;
        batch.events.assign(log.begin() + static_cast<ptrdiff_t>(next_event - back),
                            log.begin() + static_cast<ptrdiff_t>(end));
        next_event = end;
        // etcd sends only the keys under the watched prefix.
        std::erase_if(batch.events, [](const EtcdWatchEvent& event) { return !UnderPrefix(event.key); });
        Apply(mirror.Apply(batch), delivered, delivered_at, mod_revision);
        break;
      }
      case 2: {  // a whole read at the current revision (after a compaction)
        EtcdRangeResult range;
        range.revision = revision;
        for (const auto& [k, v] : state) {
          if (UnderPrefix(k)) range.kvs.push_back({k, v.first, v.second});
        }
        Apply(mirror.Reconcile(range), delivered, delivered_at, mod_revision);
        next_event = log.size();
        break;
      }
      default:
        break;
    }
    Check(mirror.revision() >= last_revision, "the mirror's revision went down");
    last_revision = mirror.revision();
    std::map<std::string, std::string> expected;
    for (auto& [k, v] : state_at(mirror.revision())) {
      if (UnderPrefix(k)) expected[k] = ConfigKeyFromEtcdKey(kPrefix, k).ok() ? v : kUnreadable;
    }
    Check(delivered == expected, "what was delivered is not the store at the mirror's revision");
  }
  return 0;
}
