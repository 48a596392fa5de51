#include "server/known_versions.h"

namespace cxds {

void KnownVersions::Sent(const ResourcePtr& resource) {
  const std::string_view name = resource->name();
  if (!reported_.empty()) reported_.erase(Key(name));
  // A set element cannot be replaced in place: the old content version goes first.
  sent_.erase(name);
  sent_.insert(resource);
}

void KnownVersions::Reported(std::string_view name, std::string_view version) {
  sent_.erase(name);
  reported_.insert_or_assign(std::string(name), std::string(version));
}

bool KnownVersions::Erase(std::string_view name) {
  if (sent_.erase(name) > 0) return true;
  return !reported_.empty() && reported_.erase(Key(name)) > 0;
}

bool KnownVersions::HoldsSameContent(const Resource& resource) const {
  const std::string* version = Version(resource.name());
  return version != nullptr && *version == resource.content_version();
}

const std::string* KnownVersions::Version(std::string_view name) const {
  if (auto it = sent_.find(name); it != sent_.end()) return &(*it)->content_version();
  if (reported_.empty()) return nullptr;
  auto it = reported_.find(Key(name));
  return it != reported_.end() ? &it->second : nullptr;
}

}  // namespace cxds
