// What a Delta client holds, by name: the content version of each resource it was sent or said
// it has (initial_resource_versions). Kept compactly, because every proxy of a large mesh holds
// thousands of resources: an entry sent by cxds shares the Resource it was sent (its name and
// content version are the resource's own bytes, not copies), so it costs a pointer and a table
// slot; only versions a client reported keep strings of their own.
//
// Not thread-safe: owned by one stream, touched on its event loop.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "protocol/resource.h"

namespace cxds {

class KnownVersions {
 public:
  // The client was sent `resource` (this content version of it).
  void Sent(const ResourcePtr& resource);
  // The client reports holding `name` at `version` (reconnect).
  void Reported(std::string_view name, std::string_view version);
  bool Erase(std::string_view name);

  bool Contains(std::string_view name) const { return entries_.contains(name); }
  // The client holds `resource`'s current content.
  bool HoldsSameContent(const Resource& resource) const;
  // The version the client holds of `name`, if any (valid until the next change to this).
  const std::string* Version(std::string_view name) const;
  size_t size() const { return entries_.size(); }

  template <typename Fn>  // fn(std::string_view name)
  void ForEachName(Fn fn) const {
    for (const auto& [name, entry] : entries_) fn(name);
  }

 private:
  struct Entry {
    ResourcePtr resource;                                      // sent: owns the key's bytes
    std::unique_ptr<std::pair<std::string, std::string>> own;  // reported: name, version
    const std::string& version() const { return resource != nullptr ? resource->content_version() : own->second; }
  };
  // Keys view the entry's own name (resource->name() or own->first), which outlives them.
  absl::flat_hash_map<std::string_view, Entry> entries_;
};

}  // namespace cxds
