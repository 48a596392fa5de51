#include "push/push_request.h"

#include <algorithm>

#include "common/strings.h"

namespace cxds {

std::string ConfigKey::ToString() const { return StrCat(kind, "/", namespace_name, "/", name); }

void MergeConfigChange(ConfigChange& into, const ConfigChange& other) {
  into.everything = into.everything || other.everything;
  for (const auto& [type_url, names] : other.types) {
    auto [it, inserted] = into.types.emplace(type_url, names);
    if (inserted) continue;
    if (it->second == nullptr) continue;  // already "anything"
    if (names == nullptr) {
      it->second = nullptr;
      continue;
    }
    if (it->second == names) continue;  // the same shared list
    // Lists are not necessarily sorted (watchers report names in their own order).
    std::set<std::string> merged(it->second->begin(), it->second->end());
    merged.insert(names->begin(), names->end());
    it->second = std::make_shared<const std::vector<std::string>>(merged.begin(), merged.end());
  }
}

void PushRequest::Merge(const PushRequest& other) {
  full = full || other.full;
  forced = forced || other.forced;
  configs.insert(other.configs.begin(), other.configs.end());
  for (const auto& [reason, count] : other.reasons) reasons[reason] += count;
  start = std::min(start, other.start);
  change_ids.insert(other.change_ids.begin(), other.change_ids.end());
  while (change_ids.size() > kMaxChangeIds) change_ids.erase(change_ids.begin());
  if (other.context != nullptr && other.push_sequence >= push_sequence) context = other.context;
  push_sequence = std::max(push_sequence, other.push_sequence);
  MergeConfigChange(resources, other.resources);
  if (delta_scope.has_value() && other.delta_scope.has_value()) {
    delta_scope->subscribed.insert(other.delta_scope->subscribed.begin(), other.delta_scope->subscribed.end());
    delta_scope->unsubscribed.insert(other.delta_scope->unsubscribed.begin(), other.delta_scope->unsubscribed.end());
  } else {
    delta_scope.reset();
  }
}

PushRequestPtr MergedRequest(const PushRequestPtr& a, const PushRequestPtr& b) {
  if (a == nullptr) return b;
  if (b == nullptr) return a;
  auto merged = std::make_shared<PushRequest>(*a);
  merged->Merge(*b);
  return merged;
}

bool PushRequest::EndpointOnly() const {
  if (full || forced || configs.empty()) return false;
  return std::all_of(configs.begin(), configs.end(),
                     [](const ConfigKey& key) { return key.kind == kind::kEndpoints || key.kind == kind::kWorkload; });
}

bool PushRequest::HasKind(std::string_view k) const {
  return std::any_of(configs.begin(), configs.end(), [k](const ConfigKey& key) { return key.kind == k; });
}

int64_t PushRequest::TotalReasons() const {
  int64_t total = 0;
  for (const auto& [reason, count] : reasons) total += count;
  return total;
}

std::string PushRequest::ReasonsString() const {
  std::string out;
  for (const auto& [reason, count] : reasons) {
    if (!out.empty()) out += ' ';
    out += StrCat(reason, ":", count);
  }
  return out;
}

}  // namespace cxds
