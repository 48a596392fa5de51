// The host of a Kubernetes Service, NAME.NAMESPACE.svc.SUFFIX, read back into its name and
// namespace, for the few places that start from a host and need the Service object.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

namespace cxds {

// The name and namespace of the Service whose host `host` is (views into `host`; a namespace is
// one DNS label, a name may hold dots), or nullopt for a host of another form.
inline std::optional<std::pair<std::string_view, std::string_view>> ServiceNameOfHost(std::string_view host,
                                                                                      std::string_view domain_suffix) {
  constexpr std::string_view kSvc = ".svc.";
  if (host.size() < kSvc.size() + domain_suffix.size() || !host.ends_with(domain_suffix)) return std::nullopt;
  const std::string_view head = host.substr(0, host.size() - domain_suffix.size());
  if (!head.ends_with(kSvc)) return std::nullopt;
  const std::string_view name_and_namespace = head.substr(0, head.size() - kSvc.size());
  const size_t dot = name_and_namespace.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  return std::pair{name_and_namespace.substr(0, dot), name_and_namespace.substr(dot + 1)};
}

}  // namespace cxds
