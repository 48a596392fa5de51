#include "proxy_model.h"

#include "common/strings.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "protocol/type_url.h"

namespace cxds::load {

namespace {
using envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;

void AddRouteName(const google::protobuf::Any& typed_config, std::vector<std::string>* refs) {
  if (!typed_config.Is<HttpConnectionManager>()) return;
  HttpConnectionManager hcm;
  if (typed_config.UnpackTo(&hcm) && hcm.has_rds() && !hcm.rds().route_config_name().empty()) {
    refs->push_back(hcm.rds().route_config_name());
  }
}

void AddRouteNames(const envoy::config::listener::v3::FilterChain& chain, std::vector<std::string>* refs) {
  for (const auto& filter : chain.filters()) {
    if (filter.has_typed_config()) AddRouteName(filter.typed_config(), refs);
  }
}

absl::Status Unpack(const google::protobuf::Any& any, google::protobuf::Message* message) {
  if (!any.UnpackTo(message)) {
    return absl::InvalidArgumentError(StrCat("cannot decode ", any.type_url(), " as ", message->GetTypeName()));
  }
  return absl::OkStatus();
}
}  // namespace

std::string_view TypeUrlOf(XdsType type) {
  switch (type) {
    case kCds:
      return kClusterType;
    case kEds:
      return kEndpointType;
    case kLds:
      return kListenerType;
    case kRds:
      return kRouteType;
  }
  return "";
}

std::string_view ShortNameOf(XdsType type) {
  static constexpr std::array<std::string_view, kXdsTypeCount> kNames = {"CDS", "EDS", "LDS", "RDS"};
  return kNames[type];
}

std::optional<XdsType> TypeFromUrl(std::string_view type_url) {
  for (XdsType type : kAllTypes) {
    if (TypeUrlOf(type) == type_url) return type;
  }
  return std::nullopt;
}

absl::StatusOr<ParsedResource> ParseResource(XdsType type, const google::protobuf::Any& any) {
  if (any.type_url() != TypeUrlOf(type)) {
    return absl::InvalidArgumentError(
        StrCat("resource of type ", any.type_url(), " in a ", ShortNameOf(type), " response"));
  }
  ParsedResource parsed;
  switch (type) {
    case kLds: {
      envoy::config::listener::v3::Listener listener;
      if (absl::Status s = Unpack(any, &listener); !s.ok()) return s;
      parsed.name = listener.name();
      for (const auto& chain : listener.filter_chains()) AddRouteNames(chain, &parsed.refs);
      if (listener.has_default_filter_chain()) AddRouteNames(listener.default_filter_chain(), &parsed.refs);
      if (listener.has_api_listener()) AddRouteName(listener.api_listener().api_listener(), &parsed.refs);
      break;
    }
    case kRds: {
      envoy::config::route::v3::RouteConfiguration config;
      if (absl::Status s = Unpack(any, &config); !s.ok()) return s;
      parsed.name = config.name();
      for (const auto& vhost : config.virtual_hosts()) {
        for (const auto& route : vhost.routes()) {
          if (!route.has_route()) continue;
          if (!route.route().cluster().empty()) parsed.refs.push_back(route.route().cluster());
          for (const auto& weighted : route.route().weighted_clusters().clusters()) {
            parsed.refs.push_back(weighted.name());
          }
        }
      }
      break;
    }
    case kCds: {
      envoy::config::cluster::v3::Cluster cluster;
      if (absl::Status s = Unpack(any, &cluster); !s.ok()) return s;
      parsed.name = cluster.name();
      if (cluster.has_type() && cluster.type() == envoy::config::cluster::v3::Cluster::EDS) {
        const std::string& service = cluster.eds_cluster_config().service_name();
        parsed.refs.push_back(service.empty() ? cluster.name() : service);
      }
      break;
    }
    case kEds: {
      envoy::config::endpoint::v3::ClusterLoadAssignment cla;
      if (absl::Status s = Unpack(any, &cla); !s.ok()) return s;
      parsed.name = cla.cluster_name();
      for (const auto& locality : cla.endpoints()) {
        for (const auto& lb : locality.lb_endpoints()) {
          parsed.ports.push_back(lb.endpoint().address().socket_address().port_value());
        }
      }
      break;
    }
  }
  if (parsed.name.empty()) return absl::InvalidArgumentError(StrCat(ShortNameOf(type), " resource without a name"));
  return parsed;
}

ProxyModel::ProxyModel(NodeStyle style, const std::vector<std::string>& listeners)
    : style_(style), listeners_(listeners) {
  if (style_ == NodeStyle::kEnvoy) {
    follows_ = {{kLds, kRds}, {kCds, kEds}};
  } else {
    // Order matters only for speed: each pass sees the previous one's drops.
    follows_ = {{kLds, kRds}, {kRds, kCds}, {kCds, kEds}};
  }
}

std::vector<SubscriptionUpdate> ProxyModel::Start() {
  std::vector<SubscriptionUpdate> updates;
  if (style_ == NodeStyle::kEnvoy) {
    for (XdsType type : {kCds, kLds}) {
      types_[type].subscribed = true;
      types_[type].wildcard = true;
      SubscriptionUpdate update(type);
      update.wildcard = true;
      updates.push_back(std::move(update));
    }
  } else {
    TypeState& lds = types_[kLds];
    lds.subscribed = true;
    lds.names.insert(listeners_.begin(), listeners_.end());
    std::vector<std::string> names(lds.names.begin(), lds.names.end());
    SubscriptionUpdate update(kLds);
    update.names = names;
    update.added = names;
    updates.push_back(std::move(update));
  }
  return updates;
}

void ProxyModel::Apply(XdsType type, std::vector<ParsedResource> upserts, const std::vector<std::string>& removed,
                       bool replace_all) {
  TypeState& state = types_[type];
  state.answered = true;
  if (replace_all) state.held.clear();
  for (const std::string& name : removed) state.held.erase(name);
  for (ParsedResource& resource : upserts) {
    // A server may send names the proxy did not ask for; a proxy ignores them.
    if (!state.wildcard && !state.names.contains(resource.name)) continue;
    state.held[resource.name] = std::move(resource.refs);
  }
}

std::set<std::string> ProxyModel::Wanted(XdsType from) const {
  std::set<std::string> wanted;
  for (const auto& [name, refs] : types_[from].held) wanted.insert(refs.begin(), refs.end());
  return wanted;
}

std::vector<SubscriptionUpdate> ProxyModel::FollowReferences() {
  std::vector<SubscriptionUpdate> updates;
  for (const Follow& follow : follows_) {
    TypeState& to = types_[follow.to];
    if (to.wildcard) continue;
    std::set<std::string> wanted = Wanted(follow.from);
    if (wanted == to.names) continue;
    SubscriptionUpdate update(follow.to);
    for (const std::string& name : wanted) {
      if (!to.names.contains(name)) update.added.push_back(name);
    }
    for (const std::string& name : to.names) {
      if (!wanted.contains(name)) {
        update.removed.push_back(name);
        to.held.erase(name);
      }
    }
    update.names.assign(wanted.begin(), wanted.end());
    // The first request of a type is sent even with no names: the server then knows the
    // proxy watches the type (and a wildcard-capable type is not mistaken for wildcard,
    // because names are only ever followed into non-wildcard subscriptions).
    const bool first = !to.subscribed;
    to.names = std::move(wanted);
    to.subscribed = true;
    if (!update.names.empty() || !first) updates.push_back(std::move(update));
  }
  return updates;
}

bool ProxyModel::Complete() const {
  for (XdsType type : kAllTypes) {
    const TypeState& state = types_[type];
    if (state.wildcard) {
      if (!state.answered) return false;
      continue;
    }
    // Names are followed right after each response is applied, so a type whose referrers are
    // not held yet has no names and cannot hold the proxy back; the referrers themselves do.
    for (const std::string& name : state.names) {
      if (!state.held.contains(name)) return false;
    }
  }
  return true;
}

}  // namespace cxds::load
