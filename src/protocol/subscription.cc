#include "protocol/subscription.h"

#include <algorithm>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "common/mutex.h"
#include "protocol/type_url.h"

namespace cxds {

namespace {

class NamesInterner {
 public:
  SubscribedNames Intern(absl::flat_hash_set<std::string> names) {
    if (names.empty()) return NoSubscribedNames();
    // Order-independent: a hash set's iteration order is not its content.
    uint64_t key = names.size();
    for (const std::string& name : names) key += absl::Hash<std::string>{}(name)*0x9E3779B97F4A7C15ull;
    SubscribedNames existing;
    {
      MutexLock lock(&mu_);
      auto it = table_.find(key);
      if (it != table_.end()) existing = it->second.lock();
    }
    // Equal hashes are checked whole, outside the lock.
    if (existing != nullptr && *existing == names) return existing;
    SubscribedNames made = std::make_shared<const absl::flat_hash_set<std::string>>(std::move(names));
    MutexLock lock(&mu_);
    table_[key] = made;  // a different set under the same hash is replaced: only sharing is lost
    if (table_.size() >= sweep_at_) {
      absl::erase_if(table_, [](const auto& entry) { return entry.second.expired(); });
      sweep_at_ = std::max<size_t>(64, 2 * table_.size());
    }
    return made;
  }

 private:
  Mutex mu_;
  absl::flat_hash_map<uint64_t, std::weak_ptr<const absl::flat_hash_set<std::string>>> table_ ABSL_GUARDED_BY(mu_);
  size_t sweep_at_ ABSL_GUARDED_BY(mu_) = 64;
};

NamesInterner& Interner() {
  static NamesInterner* const interner = new NamesInterner();
  return *interner;
}

}  // namespace

SubscribedNames InternSubscribedNames(absl::flat_hash_set<std::string> names) {
  return Interner().Intern(std::move(names));
}

const SubscribedNames& NoSubscribedNames() {
  static const SubscribedNames* const none = new SubscribedNames(std::make_shared<absl::flat_hash_set<std::string>>());
  return *none;
}

SotwSubscription::SotwSubscription(std::string_view type_url) : wildcard_capable_(IsWildcardCapableType(type_url)) {}

SotwSubscription::Change SotwSubscription::Apply(absl::Span<const std::string> resource_names) {
  bool wildcard = false;
  absl::flat_hash_set<std::string> names;
  if (wildcard_capable_ && legacy_ && resource_names.empty()) {
    wildcard = true;
  } else {
    // Once the client has named anything, an empty list means "nothing", never wildcard.
    legacy_ = false;
    for (const std::string& name : resource_names) {
      if (wildcard_capable_ && name == kWildcardName) {
        wildcard = true;
      } else {
        names.insert(name);
      }
    }
  }

  Change change;
  change.wildcard_added = wildcard && !wildcard_;
  change.wildcard_removed = !wildcard && wildcard_;
  for (const std::string& name : names) {
    if (!names_->contains(name)) change.added.push_back(name);
  }
  for (const std::string& name : *names_) {
    if (!names.contains(name)) change.removed.push_back(name);
  }
  std::sort(change.added.begin(), change.added.end());
  std::sort(change.removed.begin(), change.removed.end());
  wildcard_ = wildcard;
  // Unchanged names stay the shared set they were (whoever holds them holds the current ones).
  if (!change.added.empty() || !change.removed.empty()) names_ = InternSubscribedNames(std::move(names));
  return change;
}

DeltaSubscription::DeltaSubscription(std::string_view type_url) : wildcard_capable_(IsWildcardCapableType(type_url)) {}

DeltaSubscription::Change DeltaSubscription::Initial(absl::Span<const std::string> subscribe,
                                                     absl::Span<const std::string> unsubscribe) {
  Change change;
  if (wildcard_capable_ && subscribe.empty()) {
    wildcard_ = true;
    legacy_ = true;
    change.wildcard_added = true;
  }
  Change rest = Update(subscribe, unsubscribe);
  rest.wildcard_added = rest.wildcard_added || change.wildcard_added;
  return rest;
}

DeltaSubscription::Change DeltaSubscription::Update(absl::Span<const std::string> subscribe,
                                                    absl::Span<const std::string> unsubscribe) {
  Change change;
  // Never changed in place (other streams and threads may hold the shared set): the first
  // change of this request copies it, the rest go to the copy, which is interned at the end.
  std::optional<absl::flat_hash_set<std::string>> changed;
  auto mutable_names = [&]() -> absl::flat_hash_set<std::string>& {
    if (!changed.has_value()) changed.emplace(*names_);
    return *changed;
  };
  auto current = [&]() -> const absl::flat_hash_set<std::string>& { return changed.has_value() ? *changed : *names_; };
  for (const std::string& name : subscribe) {
    if (wildcard_capable_ && name == kWildcardName) {
      if (!wildcard_) change.wildcard_added = true;
      wildcard_ = true;
    } else if (!current().contains(name)) {
      mutable_names().insert(name);
      change.added.push_back(name);
    }
  }
  if (!subscribe.empty()) legacy_ = false;  // any named subscription leaves legacy mode
  for (const std::string& name : unsubscribe) {
    if (wildcard_capable_ && name == kWildcardName) {
      if (wildcard_) change.wildcard_removed = true;
      wildcard_ = false;
      legacy_ = false;
    } else if (current().contains(name)) {
      mutable_names().erase(name);
      change.removed.push_back(name);
    }
  }
  std::sort(change.added.begin(), change.added.end());
  std::sort(change.removed.begin(), change.removed.end());
  if (changed.has_value()) names_ = InternSubscribedNames(*std::move(changed));
  return change;
}

}  // namespace cxds
