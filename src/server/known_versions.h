// What a Delta client holds, by name: the content version of each resource it was sent or said
// it has (initial_resource_versions). Kept compactly, because every proxy of a large mesh holds
// thousands of resources: what cxds sent is a set of the Resources themselves, hashed by name
// (a 16-byte slot each: the name and content version are the resource's own bytes, not
// copies); only versions a client reported keep strings of their own, in a second table that is
// empty once everything reported was sent again. A name is in one of the two at most.
//
// Not thread-safe: owned by one stream, touched on its event loop.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "protocol/resource.h"

namespace cxds {

class KnownVersions {
 public:
  // The client was sent `resource` (this content version of it).
  void Sent(const ResourcePtr& resource);
  // The client reports holding `name` at `version` (reconnect).
  void Reported(std::string_view name, std::string_view version);
  bool Erase(std::string_view name);

  bool Contains(std::string_view name) const {
    return sent_.contains(name) || (!reported_.empty() && reported_.contains(Key(name)));
  }
  // The client holds `resource`'s current content.
  bool HoldsSameContent(const Resource& resource) const;
  // The version the client holds of `name`, if any (valid until the next change to this).
  const std::string* Version(std::string_view name) const;
  size_t size() const { return sent_.size() + reported_.size(); }

  template <typename Fn>  // fn(std::string_view name)
  void ForEachName(Fn fn) const {
    for (const ResourcePtr& resource : sent_) fn(std::string_view(resource->name()));
    for (const auto& [name, version] : reported_) fn(std::string_view(name));
  }

 private:
  // A Resource stands for its name: hashed, compared and looked up (by string_view) by name.
  struct ByName {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return absl::Hash<std::string_view>{}(name); }
    size_t operator()(const ResourcePtr& resource) const { return (*this)(std::string_view(resource->name())); }
  };
  struct SameName {
    using is_transparent = void;
    static std::string_view Name(std::string_view name) { return name; }
    static std::string_view Name(const ResourcePtr& resource) { return resource->name(); }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return Name(a) == Name(b);
    }
  };
  // Debian's abseil has its own string_view type: the reported table is looked up through it.
  static absl::string_view Key(std::string_view name) { return absl::string_view(name.data(), name.size()); }

  absl::flat_hash_set<ResourcePtr, ByName, SameName> sent_;
  absl::flat_hash_map<std::string, std::string> reported_;  // name -> version, until sent
};

}  // namespace cxds
