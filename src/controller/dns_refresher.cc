#include "controller/dns_refresher.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>

#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/strings.h"

namespace cxds {

namespace {

class SystemResolver final : public NameResolver {
 public:
  absl::StatusOr<std::vector<std::string>> Resolve(const std::string& name) override {
    constexpr size_t kMaxAddresses = 64;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (const int rc = getaddrinfo(name.c_str(), nullptr, &hints, &found); rc != 0) {
      return absl::UnavailableError(StrCat("resolving ", name, ": ", gai_strerror(rc)));
    }
    std::vector<std::string> v4, v6;
    std::set<std::string> seen;
    for (const addrinfo* a = found; a != nullptr && seen.size() < kMaxAddresses; a = a->ai_next) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* address =
          a->ai_family == AF_INET
              ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr)
              : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
      if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
          inet_ntop(a->ai_family, address, text, sizeof(text)) == nullptr || !seen.insert(text).second) {
        continue;
      }
      (a->ai_family == AF_INET ? v4 : v6).push_back(text);
    }
    freeaddrinfo(found);
    v4.insert(v4.end(), v6.begin(), v6.end());
    return v4;
  }
};

}  // namespace

std::unique_ptr<NameResolver> SystemNameResolver() { return std::make_unique<SystemResolver>(); }

DnsRefresher::DnsRefresher(Options options, const ConfigStore& store, MeshModel& model, PushPipeline& pipeline,
                           NameResolver& resolver, Scheduler& scheduler)
    : options_(options),
      store_(store),
      model_(model),
      pipeline_(pipeline),
      resolver_(resolver),
      ticks_(scheduler, options_.interval, [this] { Tick(); }) {}

DnsRefresher::~DnsRefresher() = default;

PushRequest DnsRefresher::Refresh() {
  std::vector<std::string> names = NamesToResolve(*store_.Snapshot());
  if (names.size() > options_.max_names) {
    Log().warn("DNS {} names to resolve, more than {}: the rest are not resolved for gRPC nodes", names.size(),
               options_.max_names);
    names.resize(options_.max_names);
  }
  ResolvedNames next;
  for (const std::string& name : names) {
    absl::StatusOr<std::vector<std::string>> addresses = resolver_.Resolve(name);
    if (addresses.ok()) {
      errors_.erase(name);
      next[name] = *std::move(addresses);
      continue;
    }
    const std::string error(addresses.status().message());
    if (errors_[name] != error) {
      Log().warn("DNS name={} failed: {}; its last addresses stay", Untrusted(name), Untrusted(error));
      errors_[name] = error;
    }
    if (auto last = last_.find(name); last != last_.end()) next[name] = last->second;
  }
  for (const auto& [name, addresses] : next) {
    auto last = last_.find(name);
    if (last == last_.end() || last->second != addresses) {
      Log().info("DNS name={} addresses=[{}]", Untrusted(name), Untrusted(absl::StrJoin(addresses, ",")));
    }
  }
  last_ = next;
  return model_.SetResolvedNames(std::move(next));
}

void DnsRefresher::Start() { ticks_.Start(absl::ZeroDuration()); }

void DnsRefresher::Tick() {
  PushRequest request = Refresh();
  if (!request.configs.empty()) pipeline_.ConfigUpdate(std::move(request));
}

}  // namespace cxds
