// The seam between a stream and a control plane that generates each proxy's configuration
// (the push pipeline), as opposed to serving a cache (ConfigWatcher, cache/config_watcher.h).
//
// The path runs one way: the generator only *announces* a push (on_push, into the stream's
// PushQueue); when the dispatcher hands the push to the stream, the stream calls Generate on
// its own processing thread, inside its throttle slot, and gets back for each type the
// proxy's new view and the names that changed against the previous one. The stream diffs
// those names against what it sent the client, encodes and writes; nothing calls back into
// the generator to read the result again.
//
// Threading: Open from any thread. A Session is used only by its stream's event processing
// (one thread at a time), except that destroying it may race with on_push: once the
// destructor returns, on_push is not running and will not run again.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "cache/config_watcher.h"
#include "cache/snapshot.h"
#include "envoy/config/core/v3/base.pb.h"
#include "protocol/subscription.h"
#include "protocol/type_url.h"
#include "push/push_request.h"
#include "server/authenticator.h"

namespace cxds {

// One type of a proxy's generated configuration after a generation.
struct GeneratedType {
  // Everything of the type the proxy has now, immutable and shared (proxies that see the same
  // resources hold one map). Never null.
  Snapshot::TypeResourcesPtr view;
  // The names added, changed or removed against the type's previous view, sorted. Empty for a
  // type viewed for the first time with nothing in it, and when only the view's extent changed
  // (Subscribe dropped names the proxy no longer wants).
  ChangedNames changed;
};

// What one generation produced, by type URL. A type that is absent did not change.
using GeneratedConfig = TypeUrlMap<GeneratedType>;

class ProxyGenerator {
 public:
  // One proxy's generated configuration, owned by the stream that serves it.
  class Session {
   public:
    virtual ~Session() = default;
    // The stream's subscription to `type_url` is now (`wildcard`, `names`). Names the proxy
    // did not want before are generated at once, from the proxy's last push (the request
    // path: not queued, not throttled); names it no longer wants leave its view.
    // `names` is the subscription's own set (immutable, shared): keep it rather than copy it.
    virtual GeneratedConfig Subscribe(const std::string& type_url, bool wildcard, const SubscribedNames& names) = 0;
    // Generates `push` for every type the proxy subscribes to, in push order, through the
    // generator's shared resource cache.
    virtual GeneratedConfig Generate(const PushRequest& push) = 0;
  };

  virtual ~ProxyGenerator() = default;

  // Opens the session of the proxy `node`. `on_push` announces each push that concerns it;
  // it runs on the pushing thread with no lock of the generator held, must be quick, and must
  // not destroy the session. `identity` is who the stream's authenticator proved the client to
  // be (mTLS; unauthenticated when nobody checked): what may be served only to a proven
  // identity (a gateway's private keys) depends on it, never on what the node claims.
  // Thread-safe.
  virtual std::unique_ptr<Session> Open(const envoy::config::core::v3::Node& node,
                                        absl::AnyInvocable<void(PushRequestPtr)> on_push,
                                        const PeerIdentity& identity = PeerIdentity{}) = 0;
};

}  // namespace cxds
