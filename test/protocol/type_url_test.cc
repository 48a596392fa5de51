#include "protocol/type_url.h"

#include <string>
#include <vector>

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

}  // namespace
}  // namespace cxds
