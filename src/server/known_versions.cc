#include "server/known_versions.h"

namespace cxds {

void KnownVersions::Sent(const ResourcePtr& resource) {
  // Erase first: the key views the old entry's bytes, which the new entry does not keep.
  entries_.erase(std::string_view(resource->name()));
  entries_.emplace(std::string_view(resource->name()), Entry{resource, nullptr});
}

void KnownVersions::Reported(std::string_view name, std::string_view version) {
  entries_.erase(name);
  auto own = std::make_unique<std::pair<std::string, std::string>>(std::string(name), std::string(version));
  const std::string_view key = own->first;
  entries_.emplace(key, Entry{nullptr, std::move(own)});
}

bool KnownVersions::Erase(std::string_view name) { return entries_.erase(name) > 0; }

bool KnownVersions::HoldsSameContent(const Resource& resource) const {
  auto it = entries_.find(std::string_view(resource.name()));
  return it != entries_.end() && it->second.version() == resource.content_version();
}

const std::string* KnownVersions::Version(std::string_view name) const {
  auto it = entries_.find(name);
  return it != entries_.end() ? &it->second.version() : nullptr;
}

}  // namespace cxds
