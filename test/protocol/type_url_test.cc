#include "protocol/type_url.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

// The per-stream maps order type URLs by length, then bytes. What they rely on: a strict weak
// order that tells every two different URLs apart (so no two types share an entry), and
// lookups by a view without building a string.
TEST(TypeUrlLessTest, OrdersByLengthThenBytes) {
  const TypeUrlLess less;
  EXPECT_TRUE(less("type.googleapis.com/b", "type.googleapis.com/aa"));  // shorter first, whatever the bytes
  EXPECT_FALSE(less("type.googleapis.com/aa", "type.googleapis.com/b"));
  EXPECT_TRUE(less("type.googleapis.com/ab", "type.googleapis.com/ac"));  // same length: by bytes
  EXPECT_FALSE(less(kClusterType, kClusterType));                         // irreflexive
}

TEST(TypeUrlLessTest, MapKeepsEveryTypeApartAndFindsByView) {
  TypeUrlMap<int> types;
  const std::vector<std::string_view> urls = {kClusterType, kEndpointType, kListenerType,
                                              kRouteType,   kSecretType,   kResourceWrapperType};
  for (size_t i = 0; i < urls.size(); ++i) types[std::string(urls[i])] = static_cast<int>(i);
  ASSERT_EQ(types.size(), urls.size());
  for (size_t i = 0; i < urls.size(); ++i) {
    auto found = types.find(urls[i]);  // transparent: no std::string built
    ASSERT_NE(found, types.end()) << urls[i];
    EXPECT_EQ(found->second, static_cast<int>(i));
  }
  // Two URLs of one length differ only in their bytes.
  types["type.googleapis.com/x.A"] = 100;
  types["type.googleapis.com/x.B"] = 200;
  EXPECT_EQ(types.at("type.googleapis.com/x.A"), 100);
  EXPECT_EQ(types.at("type.googleapis.com/x.B"), 200);
  EXPECT_EQ(types.find(std::string_view("type.googleapis.com/x.C")), types.end());
}

TEST(TypeUrlMapTest, KnownTypesAreFoundByAnyCopyOfTheirUrl) {
  TypeUrlMap<int> types;
  types[std::string(kEndpointType)] = 1;
  const std::string request_copy(kEndpointType);  // as a request's type URL arrives
  ASSERT_TRUE(types.contains(request_copy));
  EXPECT_EQ(types.find(request_copy)->second, 1);
  EXPECT_EQ(types.find(request_copy)->first, kEndpointType);
  EXPECT_EQ(KnownTypeUrl(request_copy), kEndpointType);
  // One copy for the process, not the caller's: every lookup returns the same bytes.
  EXPECT_EQ(KnownTypeUrl(request_copy).data(), KnownTypeUrl(std::string(kEndpointType)).data());
  EXPECT_NE(KnownTypeUrl(request_copy).data(), request_copy.data());
  EXPECT_TRUE(KnownTypeUrl("type.googleapis.com/x.Unknown").empty());
  EXPECT_FALSE(types.contains(std::string(kEndpointType) + "x"));
  EXPECT_FALSE(types.contains(std::string(kEndpointType).substr(1)));
}

TEST(TypeUrlMapTest, IteratesInTypeUrlLessOrderWhateverTheInsertionOrder) {
  TypeUrlMap<int> types;
  const std::vector<std::string> urls = {std::string(kSecretType), "type.googleapis.com/x.B", std::string(kClusterType),
                                         "type.googleapis.com/x.A", std::string(kRouteType)};
  for (const std::string& url : urls) types[url] = 0;
  std::vector<std::string> iterated;
  for (const auto& [url, value] : types) iterated.push_back(url);
  std::vector<std::string> expected = urls;
  std::sort(expected.begin(), expected.end(), TypeUrlLess());
  EXPECT_EQ(iterated, expected);
  // And backwards.
  std::vector<std::string> backwards;
  for (auto it = types.end(); it != types.begin();) backwards.push_back((--it)->first);
  std::reverse(backwards.begin(), backwards.end());
  EXPECT_EQ(backwards, expected);
}

// What std::map guarantees and the streams rely on: an iterator or reference to an entry stays
// valid while other entries are added and erased.
TEST(TypeUrlMapTest, IteratorsAndReferencesSurviveOtherInsertionsAndErasures) {
  TypeUrlMap<std::string> types;
  auto [route, added] = types.try_emplace(std::string(kRouteType), "route");
  ASSERT_TRUE(added);
  std::string& route_value = route->second;
  for (int i = 0; i < 10; ++i) types[absl::StrCat("type.googleapis.com/x.T", i)] = "other";  // past the inline four
  types[std::string(kClusterType)] = "cluster";  // sorts before the route type
  EXPECT_EQ(types.find(kRouteType), route);
  EXPECT_EQ(&types.find(kRouteType)->second, &route_value);
  EXPECT_EQ(types.erase("type.googleapis.com/x.T3"), 1u);
  EXPECT_EQ(types.erase("type.googleapis.com/x.T3"), 0u);
  EXPECT_EQ(types.find(kRouteType), route);
  EXPECT_EQ(&types.find(kRouteType)->second, &route_value);
  EXPECT_EQ(types.size(), 11u);
  EXPECT_FALSE(types.try_emplace(std::string(kRouteType), "again").second);  // an existing key keeps its value
  EXPECT_EQ(route_value, "route");
}

// An iterator steps from its entry, wherever the entries before it have moved.
TEST(TypeUrlMapTest, AnIteratorStepsCorrectlyAfterEntriesBeforeItChange) {
  TypeUrlMap<int> types;
  for (int i : {2, 4, 6}) types[absl::StrCat("type.googleapis.com/x.T", i)] = i;
  auto four = types.find("type.googleapis.com/x.T4");
  types["type.googleapis.com/x.T1"] = 1;  // before it: its slot moves up
  types["type.googleapis.com/x.T3"] = 3;
  EXPECT_EQ(std::next(four)->second, 6);
  EXPECT_EQ(std::prev(four)->second, 3);
  types.erase("type.googleapis.com/x.T1");  // before it: its slot moves down
  EXPECT_EQ(std::next(four)->second, 6);
  EXPECT_EQ(std::prev(four)->second, 3);
  auto six = types.find("type.googleapis.com/x.T6");  // the last of four slots
  types.erase("type.googleapis.com/x.T2");
  types.erase("type.googleapis.com/x.T3");  // two slots left: where six was is past the end
  EXPECT_EQ(std::prev(six)->second, 4);
  EXPECT_EQ(std::next(six), types.end());
  EXPECT_EQ(std::next(four, 2), types.end());
  EXPECT_EQ(std::prev(types.end())->second, 6);
}

TEST(TypeUrlMapTest, ConstIteratorsCompareWithMutableOnesAndAtRefusesAMissingKey) {
  TypeUrlMap<int> types;
  types[std::string(kListenerType)] = 7;
  const TypeUrlMap<int>& view = types;
  TypeUrlMap<int>::const_iterator found = types.find(kListenerType);  // converted
  EXPECT_EQ(found, view.find(kListenerType));
  EXPECT_EQ(types.find(kListenerType), view.begin());
  EXPECT_NE(view.find(kClusterType), types.find(kListenerType));
  EXPECT_EQ(view.find(kClusterType), types.end());
  EXPECT_EQ(view.at(kListenerType), 7);
  EXPECT_THROW((void)view.at(kClusterType), std::out_of_range);
  EXPECT_EQ(types.count(kListenerType), 1u);
  EXPECT_EQ(types.count(kClusterType), 0u);
}

TEST(TypeUrlMapTest, EraseReturnsTheNextEntrySoALoopCanEraseAsItGoes) {
  TypeUrlMap<int> types;
  for (int i = 0; i < 6; ++i) types[absl::StrCat("type.googleapis.com/x.T", i)] = i;
  for (auto it = types.begin(); it != types.end();) {
    it = it->second % 2 == 0 ? types.erase(it) : std::next(it);
  }
  std::vector<int> left;
  for (const auto& [url, value] : types) left.push_back(value);
  EXPECT_EQ(left, (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(types.erase(std::prev(types.end())), types.end());  // the last: end()
  EXPECT_EQ(types.size(), 2u);
}

TEST(TypeUrlMapTest, CopiesAreDeepAndMovesKeepEntriesInPlace) {
  TypeUrlMap<std::vector<int>> types;
  types[std::string(kClusterType)] = {1};
  types["type.googleapis.com/x.Unknown"] = {2};
  TypeUrlMap<std::vector<int>> copy = types;
  copy[std::string(kClusterType)].push_back(10);
  EXPECT_EQ(types.at(kClusterType), (std::vector<int>{1}));
  EXPECT_EQ(copy.at(kClusterType), (std::vector<int>{1, 10}));
  EXPECT_EQ(copy.at("type.googleapis.com/x.Unknown"), (std::vector<int>{2}));
  EXPECT_FALSE(copy == types);

  const std::vector<int>* unknown = &types.at("type.googleapis.com/x.Unknown");
  TypeUrlMap<std::vector<int>> moved = std::move(types);
  EXPECT_EQ(&moved.at("type.googleapis.com/x.Unknown"), unknown);  // not reallocated: still valid
  EXPECT_TRUE(moved.contains("type.googleapis.com/x.Unknown"));    // its key still finds it
  EXPECT_TRUE(types.empty());  // NOLINT(bugprone-use-after-move): left empty, as documented
  types = moved;
  EXPECT_TRUE(types == moved);
  types.clear();
  EXPECT_EQ(types.begin(), types.end());

  // A copy of more entries than fit inline, its source gone: it holds keys of its own.
  auto many = std::make_unique<TypeUrlMap<std::vector<int>>>();
  for (int i = 0; i < 8; ++i) (*many)[absl::StrCat("type.googleapis.com/x.T", i)] = {i};
  (*many)[std::string(kSecretType)] = {100};
  const TypeUrlMap<std::vector<int>> kept = *many;
  many.reset();
  ASSERT_EQ(kept.size(), 9u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(kept.at(absl::StrCat("type.googleapis.com/x.T", i)), (std::vector<int>{i}));
  EXPECT_EQ(kept.at(kSecretType), (std::vector<int>{100}));
  std::vector<std::string> order;
  for (const auto& [url, value] : kept) order.push_back(url);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end(), TypeUrlLess()));
}

}  // namespace
}  // namespace cxds
