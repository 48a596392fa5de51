#include "protocol/type_url.h"

#include <array>

namespace cxds {

namespace {
constexpr std::array<std::string_view, 5> kPushOrder = {kClusterType, kEndpointType, kListenerType, kRouteType,
                                                        kSecretType};
constexpr std::array<std::string_view, 6> kKnownTypes = {kClusterType, kEndpointType, kListenerType,
                                                         kRouteType,   kSecretType,   kResourceWrapperType};
}  // namespace

std::string_view KnownTypeUrl(std::string_view type_url) {
  for (std::string_view known : kKnownTypes) {
    if (known == type_url) return known;
  }
  return {};
}

bool IsFullStateType(std::string_view type_url) { return type_url == kListenerType || type_url == kClusterType; }

bool IsWildcardCapableType(std::string_view type_url) { return IsFullStateType(type_url); }

int PushOrderRank(std::string_view type_url) {
  for (size_t i = 0; i < kPushOrder.size(); ++i) {
    if (kPushOrder[i] == type_url) {
      return static_cast<int>(i);
    }
  }
  return static_cast<int>(kPushOrder.size());
}

std::string_view ShortTypeName(std::string_view type_url) {
  if (type_url == kClusterType) return "CDS";
  if (type_url == kEndpointType) return "EDS";
  if (type_url == kListenerType) return "LDS";
  if (type_url == kRouteType) return "RDS";
  if (type_url == kSecretType) return "SDS";
  const size_t slash = type_url.rfind('/');
  return slash == std::string_view::npos ? type_url : type_url.substr(slash + 1);
}

std::string TypeUrlOf(std::string_view full_message_name) {
  std::string url(kTypePrefix);
  url.append(full_message_name);
  return url;
}

}  // namespace cxds
