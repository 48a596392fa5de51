// `cxds proxy-config clusters|listeners|routes|endpoints|all PROXY`: what cxds last sent that
// proxy, from a replica's /debug/proxy_config (the ACK/NACK ledger), as short tables like
// istioctl's, or as the resources themselves (-o json|yaml).
#include <unistd.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <utility>

#include "admin/admin_server.h"
#include "common/strings.h"
#include "cxds/admin_client.h"
#include "cxds/commands.h"
#include "httplib.h"
#include "protocol/type_url.h"
#include "yaml-cpp/yaml.h"

namespace cxds {
namespace {

const std::map<std::string, std::string_view> kTypes = {
    {"clusters", kClusterType}, {"listeners", kListenerType}, {"routes", kRouteType}, {"endpoints", kEndpointType}};

std::string Scalar(const YAML::Node& node, const std::string& fallback = "-") {
  return node && node.IsScalar() ? node.as<std::string>() : fallback;
}

// node[path[0]][path[1]]...; an empty node where a level is missing (yaml-cpp throws when
// indexing a missing key's node).
YAML::Node At(const YAML::Node& node, std::initializer_list<const char*> path) {
  // Node assignment in yaml-cpp writes into the node referred to; reset() rebinds.
  YAML::Node current;
  current.reset(node);
  for (const char* key : path) {
    if (!current || !current.IsMap()) return YAML::Node();
    const YAML::Node next = std::as_const(current)[key];
    if (!next) return YAML::Node();
    current.reset(next);
  }
  return current;
}

// The page is JSON (flow style): YAML output is block style, as people read it.
void SetBlockStyle(YAML::Node node) {
  node.SetStyle(YAML::EmitterStyle::Block);
  if (node.IsMap()) {
    for (auto entry : node) SetBlockStyle(entry.second);
  } else if (node.IsSequence()) {
    for (auto item : node) SetBlockStyle(item);
  }
}

void PrintRows(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      std::string text = row[i];
      if (i + 1 < row.size()) text.resize(width[i] + 3, ' ');
      out << text;
    }
    out << "\n";
  }
}

// One short table per type, from the resources' JSON (proto3 JSON field names).
void PrintShort(const std::string& kind, const YAML::Node& type, std::ostream& out) {
  const std::string state = Scalar(At(type, {"state"}));
  std::vector<std::vector<std::string>> rows;
  if (kind == "clusters") {
    rows.push_back({"NAME", "TYPE", "EDS SERVICE", "VERSION", "STATE"});
  } else if (kind == "listeners") {
    rows.push_back({"NAME", "ADDRESS", "PORT", "ROUTE", "VERSION", "STATE"});
  } else if (kind == "routes") {
    rows.push_back({"NAME", "VIRTUAL HOSTS", "DOMAINS", "VERSION", "STATE"});
  } else {
    rows.push_back({"CLUSTER", "ENDPOINTS", "VERSION", "STATE"});
  }
  for (const YAML::Node& resource : At(type, {"resources"})) {
    const YAML::Node config = At(resource, {"config"});
    const std::string name = Scalar(At(resource, {"name"}));
    const std::string version = Scalar(At(resource, {"version"})).substr(0, 16);
    if (kind == "clusters") {
      rows.push_back({name, Scalar(At(config, {"type"}), "EDS"),
                      Scalar(At(config, {"edsClusterConfig", "serviceName"})), version, state});
    } else if (kind == "listeners") {
      const YAML::Node socket = At(config, {"address", "socketAddress"});
      // An API listener (proxyless gRPC) names its route configuration in its HCM.
      const std::string route = Scalar(At(config, {"apiListener", "apiListener", "rds", "routeConfigName"}));
      rows.push_back({name, socket.IsMap() ? Scalar(At(socket, {"address"})) : "(api listener)",
                      Scalar(At(socket, {"portValue"})), route, version, state});
    } else if (kind == "routes") {
      std::vector<std::string> domains;
      size_t hosts = 0;
      for (const YAML::Node& host : At(config, {"virtualHosts"})) {
        hosts++;
        for (const YAML::Node& domain : At(host, {"domains"})) domains.push_back(Scalar(domain));
      }
      std::string shown;
      for (size_t i = 0; i < domains.size() && i < 3; ++i) shown += (i ? ", " : "") + domains[i];
      if (domains.size() > 3) shown += StrCat(" +", domains.size() - 3);
      rows.push_back({name, std::to_string(hosts), shown.empty() ? "-" : shown, version, state});
    } else {
      std::string endpoints;
      for (const YAML::Node& locality : At(config, {"endpoints"})) {
        for (const YAML::Node& lb : At(locality, {"lbEndpoints"})) {
          const YAML::Node socket = At(lb, {"endpoint", "address", "socketAddress"});
          endpoints += StrCat(endpoints.empty() ? "" : " ", Scalar(At(socket, {"address"})), ":",
                              Scalar(At(socket, {"portValue"})));
        }
      }
      rows.push_back({Scalar(At(config, {"clusterName"}), name), endpoints.empty() ? "-" : endpoints, version, state});
    }
  }
  PrintRows(rows, out);
}

}  // namespace

int RunProxyConfig(const ProxyConfigOptions& options, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::string> token = ReadBearerToken(options.token_file);
  if (!token.ok()) {
    err << "error: " << token.status().message() << "\n";
    return 2;
  }
  // JSON is the page itself, narrowed to one type by the server when one is asked for.
  const std::string type = options.kind == "all" ? "" : std::string(kTypes.at(options.kind));
  absl::StatusOr<AdminReply> result =
      AdminGet(options.admin,
               StrCat("/debug/proxy_config?proxy=", httplib::detail::encode_query_param(options.proxy),
                      type.empty() ? "" : StrCat("&type=", httplib::detail::encode_query_param(type))),
               *token);
  if (!result.ok()) {
    err << "error: " << result.status().message() << "\n";
    return result.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 3;
  }
  if (result->status == 404) {
    err << "error: no proxy \"" << options.proxy << "\" is connected to " << options.admin << "\n";
    return 1;
  }
  if (result->status != 200) {
    err << "error: " << options.admin << ": HTTP " << result->status << " for /debug/proxy_config\n";
    return 3;
  }
  try {
    const YAML::Node page = YAML::Load(result->body);
    std::vector<std::string> kinds;
    if (options.kind == "all") {
      kinds = {"clusters", "listeners", "routes", "endpoints"};
    } else {
      kinds = {options.kind};
    }
    if (options.output == "json") {
      out << result->body << "\n";
      return 0;
    }
    if (options.output == "yaml") {
      YAML::Node copy = YAML::Clone(page);
      SetBlockStyle(copy);
      YAML::Emitter emitter;
      emitter << copy;
      out << emitter.c_str() << "\n";
      return 0;
    }
    for (size_t i = 0; i < kinds.size(); ++i) {
      if (kinds.size() > 1) out << (i ? "\n" : "") << kinds[i] << ":\n";
      const YAML::Node type = At(page, {"types", kTypes.at(kinds[i]).data()});
      if (!type || At(type, {"resources"}).size() == 0) {
        out << "(nothing sent)\n";
        continue;
      }
      PrintShort(kinds[i], type, out);
    }
  } catch (const YAML::Exception& e) {
    err << "error: " << options.admin << ": /debug/proxy_config is not what cxds serves: " << e.what() << "\n";
    return 3;
  }
  return 0;
}

}  // namespace cxds
