// TypeUrlMap: the small per-stream maps keyed by xDS type URL.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/container/inlined_vector.h"

namespace cxds {

// Orders type URLs by length, then by bytes: a total order, like std::less, that rarely reads
// the bytes (type URLs share long prefixes and mostly differ in length). A TypeUrlMap iterates
// in this order, which is not type URL order: code that sends types uses PushOrderRank, and what
// lists types for readers sorts them.
struct TypeUrlLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  }
};

// The process-wide copy of a type URL this server knows (kClusterType and the others of
// type_url.h), or an empty view for any other URL. Lookups compare against it: it stays in the
// cache, where the copy a map or a request holds is one of thousands.
std::string_view KnownTypeUrl(std::string_view type_url);

// A map from type URL to Value for the handful of types a stream or proxy holds, with the part
// of std::map's interface the server uses and its guarantees: references and iterators stay
// valid until their own entry is erased, and iteration is in TypeUrlLess order. Unlike std::map,
// an iterator does not survive moving the map (references do).
//
// Why not std::map: every request and response looks up several of these, one per stream, so
// their nodes are rarely in the cache; a std::map lookup walked two or three nodes and read the
// key's heap bytes, a cache miss each (~5% of the server's CPU during a 5,000-stream push,
// docs/load.md). Here the keys to compare sit in one array, inside the map for up to five types,
// each a view of KnownTypeUrl's copy when the type is known, and a lookup among known types
// touches only the entry it finds. Keys of unknown types are compared in their own allocations,
// one by one: a stream holds at most max_types_per_stream (64) of them, of at most
// max_type_url_bytes (512) each (server/limits.h), so a lookup's worst case is bounded.
//
// Not thread-safe; its owner's lock or thread confines it, as for std::map.
template <typename Value>
class TypeUrlMap {
 public:
  using key_type = std::string;
  using mapped_type = Value;
  using value_type = std::pair<const std::string, Value>;
  using size_type = size_t;

 private:
  struct Slot {
    std::string_view key;  // KnownTypeUrl's copy, or the entry's own key
    std::unique_ptr<value_type> entry;
  };
  // Five: the types of an Envoy's ADS stream (CDS, EDS, LDS, RDS) and SDS; more go to the heap.
  using Slots = absl::InlinedVector<Slot, 5>;

 public:
  template <bool kConst>
  class Iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = TypeUrlMap::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<kConst, const value_type*, value_type*>;
    using reference = std::conditional_t<kConst, const value_type&, value_type&>;

    Iterator() = default;
    // A mutable iterator converts to a const one.
    template <bool kOther, typename = std::enable_if_t<kConst && !kOther>>
    Iterator(const Iterator<kOther>& other) : map_(other.map_), entry_(other.entry_), index_(other.index_) {}  // NOLINT

    reference operator*() const { return *entry_; }
    pointer operator->() const { return entry_; }
    // An iterator names its entry, not a position, so inserting or erasing other entries does
    // not move it; stepping finds the entry's slot again (where it was, unless the map changed).
    Iterator& operator++() {
      const size_t next = map_->IndexOf(entry_, index_) + 1;
      index_ = next;
      entry_ = next < map_->slots_.size() ? map_->slots_[next].entry.get() : nullptr;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++*this;
      return before;
    }
    Iterator& operator--() {
      const size_t index = entry_ == nullptr ? map_->slots_.size() : map_->IndexOf(entry_, index_);
      index_ = index - 1;
      entry_ = map_->slots_[index_].entry.get();
      return *this;
    }
    Iterator operator--(int) {
      Iterator before = *this;
      --*this;
      return before;
    }
    template <bool kOther>
    bool operator==(const Iterator<kOther>& other) const {
      return entry_ == other.entry_;
    }

   private:
    friend class TypeUrlMap;
    template <bool>
    friend class Iterator;
    Iterator(const TypeUrlMap* map, value_type* entry, size_t index) : map_(map), entry_(entry), index_(index) {}

    const TypeUrlMap* map_ = nullptr;
    value_type* entry_ = nullptr;  // null: end()
    size_t index_ = 0;             // the entry's slot when last seen: a hint only
  };
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;

  TypeUrlMap() = default;
  TypeUrlMap(const TypeUrlMap& other) {
    slots_.reserve(other.slots_.size());
    for (const Slot& slot : other.slots_) {  // already in order
      auto entry = std::make_unique<value_type>(*slot.entry);
      const std::string_view key = KnownTypeUrl(entry->first);
      slots_.push_back(Slot{key.empty() ? std::string_view(entry->first) : key, std::move(entry)});
    }
  }
  TypeUrlMap& operator=(const TypeUrlMap& other) {
    if (this != &other) *this = TypeUrlMap(other);
    return *this;
  }
  // Moving keeps every entry where it is: references to `other`'s values stay valid (its
  // iterators do not), and `other` is left empty.
  TypeUrlMap(TypeUrlMap&& other) noexcept : slots_(std::move(other.slots_)) { other.slots_.clear(); }
  TypeUrlMap& operator=(TypeUrlMap&& other) noexcept {
    if (this != &other) {
      slots_ = std::move(other.slots_);
      other.slots_.clear();
    }
    return *this;
  }
  ~TypeUrlMap() = default;

  iterator begin() { return At<iterator>(0); }
  iterator end() { return At<iterator>(slots_.size()); }
  const_iterator begin() const { return At<const_iterator>(0); }
  const_iterator end() const { return At<const_iterator>(slots_.size()); }
  const_iterator cbegin() const { return begin(); }
  const_iterator cend() const { return end(); }

  size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }
  void clear() { slots_.clear(); }

  iterator find(std::string_view type_url) { return At<iterator>(Find(type_url)); }
  const_iterator find(std::string_view type_url) const { return At<const_iterator>(Find(type_url)); }
  bool contains(std::string_view type_url) const { return Find(type_url) < slots_.size(); }
  size_t count(std::string_view type_url) const { return contains(type_url) ? 1 : 0; }

  Value& at(std::string_view type_url) {
    const size_t index = Find(type_url);
    if (index >= slots_.size()) throw std::out_of_range("TypeUrlMap::at");
    return slots_[index].entry->second;
  }
  const Value& at(std::string_view type_url) const {
    const size_t index = Find(type_url);
    if (index >= slots_.size()) throw std::out_of_range("TypeUrlMap::at");
    return slots_[index].entry->second;
  }

  Value& operator[](std::string_view type_url) { return try_emplace(type_url).first->second; }

  template <typename... Args>
  std::pair<iterator, bool> try_emplace(std::string_view type_url, Args&&... args) {
    const size_t index = Find(type_url);
    if (index < slots_.size()) return {At<iterator>(index), false};
    auto entry = std::make_unique<value_type>(std::piecewise_construct, std::forward_as_tuple(type_url),
                                              std::forward_as_tuple(std::forward<Args>(args)...));
    value_type* added = entry.get();
    const std::string_view known = KnownTypeUrl(type_url);
    Slot slot{known.empty() ? std::string_view(added->first) : known, std::move(entry)};
    size_t at = 0;
    while (at < slots_.size() && TypeUrlLess()(slots_[at].key, type_url)) ++at;
    slots_.insert(slots_.begin() + static_cast<std::ptrdiff_t>(at), std::move(slot));
    return {iterator(this, added, at), true};
  }
  template <typename Key, typename... Args>
  std::pair<iterator, bool> emplace(Key&& type_url, Args&&... args) {
    return try_emplace(std::string_view(type_url), std::forward<Args>(args)...);
  }

  iterator erase(const_iterator position) {
    const size_t index = IndexOf(position.entry_, position.index_);
    slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(index));
    return At<iterator>(index);
  }
  iterator erase(iterator position) { return erase(const_iterator(position)); }
  size_t erase(std::string_view type_url) {
    const size_t index = Find(type_url);
    if (index >= slots_.size()) return 0;
    slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(index));
    return 1;
  }

  friend bool operator==(const TypeUrlMap& a, const TypeUrlMap& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.slots_.size(); ++i) {
      if (*a.slots_[i].entry != *b.slots_[i].entry) return false;
    }
    return true;
  }

 private:
  // The slot holding `type_url`, or size() when none does.
  size_t Find(std::string_view type_url) const {
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].key == type_url) return i;
    }
    return slots_.size();
  }
  // The slot of `entry`, which must be in the map; `hint` is where it was last seen.
  size_t IndexOf(const value_type* entry, size_t hint) const {
    if (hint < slots_.size() && slots_[hint].entry.get() == entry) return hint;
    size_t i = 0;
    while (slots_[i].entry.get() != entry) ++i;
    return i;
  }
  // An iterator to the slot at `index`; end() past the last.
  template <typename It>
  It At(size_t index) const {
    value_type* entry = index < slots_.size() ? slots_[index].entry.get() : nullptr;
    return It(this, entry, index);
  }

  Slots slots_;
};

}  // namespace cxds
