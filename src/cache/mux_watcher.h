// MuxConfigWatcher: serves each type URL from the ConfigWatcher it is routed to, e.g. EDS from a
// LinearCache shared by every node and everything else from a per-node SnapshotCache. The
// counterpart of go-control-plane's MuxCache, except that a stream gets one watch and one
// assembled configuration instead of being handed to a different cache per request
// (docs/protocol-rules.md, "MuxConfigWatcher").
//
// Which watcher owns a type: the route for that type URL if there is one, otherwise the
// fallback (if there is none, nothing serves the type and it is never in the configuration).
// A watch on the mux holds one watch on each distinct underlying watcher, and:
//  - Current() assembles, from each underlying Current(), only the types that watcher owns
//    (sharing the TypeResources parts, no copy). It is null while ANY underlying Current() is
//    null: a node is never served part of its configuration (say its CDS without the EDS it
//    depends on, or the shared EDS before its own snapshot exists) as if it were the whole.
//    A type its owner's configuration lacks is simply absent (the owner decides). With no
//    watcher at all (no route, no fallback) Current() is null. The assembled snapshot is
//    reused while the underlying ones are unchanged (same pointers), so it is stable by
//    pointer between changes;
//  - SetInterest goes to the owner of the type only; RecordRequest goes to every watcher;
//  - a change from an underlying watcher is forwarded with only the types that watcher owns,
//    and not at all if none remain. A change marked `everything` is forwarded as everything:
//    watchers report their first configuration that way, and that may be what completes the
//    assembled configuration (null before), so every type may be new to the stream.
//
// Threading: thread-safe if the underlying watchers are. The mux keeps no state of its own
// beyond routes fixed at construction. A watch's change callback runs on the thread of the
// underlying change, with no lock of the mux held, one at a time per watch; destroying the
// watch waits for a running callback, as the ConfigWatcher contract requires. The routed
// watchers must outlive the mux and its watches.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/config_watcher.h"

namespace cxds {

class MuxConfigWatcher final : public ConfigWatcher {
 public:
  // `routes`: type URL -> the watcher serving it; a route to null means nothing serves that
  // type (not even the fallback). `fallback` serves every type without a route; it may be
  // null, and may also appear in `routes`.
  MuxConfigWatcher(std::map<std::string /*type_url*/, ConfigWatcher*> routes, ConfigWatcher* fallback);
  ~MuxConfigWatcher() override;
  MuxConfigWatcher(const MuxConfigWatcher&) = delete;
  MuxConfigWatcher& operator=(const MuxConfigWatcher&) = delete;

  // The watcher that serves `type_url`, or nullptr.
  ConfigWatcher* OwnerOf(const std::string& type_url) const;

  std::unique_ptr<Watch> CreateWatch(const envoy::config::core::v3::Node& node,
                                     absl::AnyInvocable<void(const ConfigChange&)> on_change) override;

 private:
  class WatchImpl;

  // Index in watchers_ of the owner of `type_url`, or nullopt.
  std::optional<size_t> OwnerIndex(const std::string& type_url) const;
  // The part of `change` (from watchers_[index]) about the types that watcher owns; nullopt if
  // none is left.
  std::optional<ConfigChange> Restrict(size_t index, const ConfigChange& change) const;

  // Immutable after construction.
  std::vector<ConfigWatcher*> watchers_;                      // distinct, in a fixed order
  std::map<std::string, std::optional<size_t>> route_index_;  // type URL -> index in watchers_
  std::optional<size_t> fallback_index_;
};

}  // namespace cxds
