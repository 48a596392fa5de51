// `cxds proxy-status`: the proxies of one or more replicas (their admin addresses), each of
// CDS, LDS, EDS and RDS as SYNCED / NOT SENT / STALE (age) / NACK (error), from each
// replica's /debug/proxy_status (src/admin/proxy_status.h). A table, or JSON with -o json.
// With a PROXY, also what its newest stream was sent against what its replica would send it
// now, per type, with a diff per changed resource (/debug/proxy_diff).
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <ostream>

#include "admin/admin_server.h"
#include "common/strings.h"
#include "cxds/admin_client.h"
#include "cxds/commands.h"
#include "httplib.h"
#include "protocol/type_url.h"
#include "yaml-cpp/yaml.h"

namespace cxds {
namespace {

struct Cell {
  std::string state;
  int64_t age_ms = 0;
  std::string error;
};

// What the proxy was last sent against what the replica would send it now
// (/debug/proxy_diff): the page as served, for -o json, and what the text shows.
struct TypeDiff {
  std::string type_url;
  bool match = false;
  std::string state;
  int64_t sent = 0;
  int64_t now = 0;
  std::vector<std::string> only_sent;
  std::vector<std::string> only_now;
  std::vector<std::pair<std::string, std::string>> changed;  // name, unified diff
  std::string error;
};
struct ProxyDiff {
  std::string page;
  int64_t stream = 0;
  std::vector<TypeDiff> types;
};

struct Row {
  std::string replica;
  int64_t stream = 0;
  std::string node;
  std::string identity;
  std::string push_version;
  std::string cxds_version;
  std::vector<Cell> types;        // CDS, LDS, EDS, RDS
  std::optional<ProxyDiff> diff;  // with a PROXY argument
};

constexpr const char* kTypes[] = {"CDS", "LDS", "EDS", "RDS"};

absl::StatusOr<std::string> Fetch(const std::string& admin, const std::string& path, const std::string& token) {
  absl::StatusOr<AdminReply> reply = AdminGet(admin, path, token);
  if (!reply.ok()) return reply.status();
  if (reply->status != 200) return absl::UnavailableError(StrCat(admin, ": HTTP ", reply->status, " for ", path));
  return std::move(reply->body);
}

std::vector<std::string> Names(const YAML::Node& list) {
  std::vector<std::string> names;
  for (const YAML::Node& name : list) names.push_back(name.as<std::string>());
  return names;
}

absl::StatusOr<ProxyDiff> ParseDiff(const std::string& admin, std::string body) {
  ProxyDiff diff;
  try {
    const YAML::Node page = YAML::Load(body);
    diff.stream = page["stream"].as<int64_t>();
    for (const auto& entry : page["types"]) {
      const YAML::Node& type = entry.second;
      TypeDiff parsed{entry.first.as<std::string>(),   type["match"].as<bool>(),
                      type["state"].as<std::string>(), type["sent"].as<int64_t>(),
                      type["now"].as<int64_t>(),       Names(type["only_sent"]),
                      Names(type["only_now"]),         {},
                      type["error"].as<std::string>()};
      for (const YAML::Node& changed : type["changed"]) {
        parsed.changed.emplace_back(changed["name"].as<std::string>(), changed["diff"].as<std::string>());
      }
      diff.types.push_back(std::move(parsed));
    }
  } catch (const YAML::Exception& e) {
    return absl::DataLossError(StrCat(admin, ": /debug/proxy_diff is not what cxds serves: ", e.what()));
  }
  while (!body.empty() && body.back() == '\n') body.pop_back();
  diff.page = std::move(body);
  return diff;
}

std::string TypeTitle(const std::string& type_url) {
  if (type_url == kClusterType) return "Clusters";
  if (type_url == kListenerType) return "Listeners";
  if (type_url == kEndpointType) return "Endpoints";
  if (type_url == kRouteType) return "Routes";
  return std::string(ShortTypeName(type_url));
}

// istioctl's words: "Clusters Match", "Routes Don't Match", then what differs.
void PrintDiff(const Row& row, bool colour, std::ostream& out) {
  const auto paint = [&](const std::string& text, const char* code) {
    return colour ? StrCat("\x1b[", code, "m", text, "\x1b[0m") : text;
  };
  out << "\n"
      << row.node << " on " << row.replica << " (stream " << row.diff->stream
      << "): what was sent against what would be sent now\n";
  for (const TypeDiff& type : row.diff->types) {
    const std::string title = TypeTitle(type.type_url);
    if (!type.error.empty()) {
      out << title << " " << paint("cannot be generated now", "31") << ": " << type.error << "\n";
      continue;
    }
    if (type.match) {
      out << title << " " << paint("Match", "32") << " (" << type.sent << " resources, " << type.state << ")\n";
      continue;
    }
    out << title << " " << paint("Don't Match", "33") << " (" << type.state << "; sent " << type.sent
        << " resources, would send " << type.now << ")\n";
    for (const std::string& name : type.only_sent)
      out << paint(StrCat("  - ", name, " (sent, gone now)"), "31") << "\n";
    for (const std::string& name : type.only_now) out << paint(StrCat("  + ", name, " (new, not sent)"), "32") << "\n";
    for (const auto& [name, text] : type.changed) {
      out << "  ~ " << name << " (changed)\n";
      std::string_view rest = text;
      while (!rest.empty()) {
        const size_t end = rest.find('\n');
        const std::string line(rest.substr(0, end));
        const bool header = line.starts_with("---") || line.starts_with("+++") || line.starts_with("@@");
        out << "    "
            << (header           ? paint(line, "36")
                : line[0] == '-' ? paint(line, "31")
                : line[0] == '+' ? paint(line, "32")
                                 : line)
            << "\n";
        if (end == std::string_view::npos) break;
        rest.remove_prefix(end + 1);
      }
      if (text.empty()) out << "    (diff left out: too many changed resources)\n";
    }
  }
}

// The page is JSON, which YAML reads; anything unexpected is an error naming the replica.
absl::Status Parse(const std::string& admin, const std::string& body, std::vector<Row>& rows) {
  try {
    const YAML::Node page = YAML::Load(body);
    for (const YAML::Node& proxy : page["proxies"]) {
      Row row{admin,
              proxy["stream"].as<int64_t>(),
              proxy["node"].as<std::string>(),
              proxy["identity"].as<std::string>(),
              page["push_version"].as<std::string>(),
              page["cxds_version"].as<std::string>(),
              {}};
      for (const char* type : kTypes) {
        const YAML::Node cell = proxy[type];
        row.types.push_back(
            {cell["state"].as<std::string>(), cell["age_ms"].as<int64_t>(), cell["error"].as<std::string>()});
      }
      rows.push_back(std::move(row));
    }
  } catch (const YAML::Exception& e) {
    return absl::DataLossError(StrCat(admin, ": /debug/proxy_status is not what cxds serves: ", e.what()));
  }
  return absl::OkStatus();
}

std::string CellText(const Cell& cell) {
  if (cell.state == "STALE") return StrCat("STALE (", cell.age_ms / 1000, "s)");
  if (cell.state == "NACK") return StrCat("NACK: ", cell.error.substr(0, 60));
  return cell.state;
}

std::string Colour(const std::string& text, const std::string& state, bool colour) {
  if (!colour) return text;
  const char* code = state == "SYNCED" ? "32" : state == "NACK" ? "31" : state == "STALE" ? "33" : "0";
  return StrCat("\x1b[", code, "m", text, "\x1b[0m");
}

void PrintTable(const std::vector<Row>& rows, bool colour, std::ostream& out) {
  std::vector<std::vector<std::string>> cells = {
      {"NAME", "REPLICA", "CDS", "LDS", "EDS", "RDS", "IDENTITY", "VERSION"}};
  for (const Row& row : rows) {
    std::vector<std::string> line = {row.node, row.replica};
    for (const Cell& cell : row.types) line.push_back(CellText(cell));
    line.push_back(row.identity);
    line.push_back(StrCat(row.push_version, " (cxds ", row.cxds_version, ")"));
    cells.push_back(std::move(line));
  }
  std::vector<size_t> width(cells.front().size(), 0);
  for (const auto& line : cells) {
    for (size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  }
  for (size_t r = 0; r < cells.size(); ++r) {
    for (size_t i = 0; i < cells[r].size(); ++i) {
      std::string text = cells[r][i];
      if (i + 1 < cells[r].size()) text.resize(width[i] + 3, ' ');
      // Colour wraps the padded text so that the columns stay aligned.
      out << (r > 0 && i >= 2 && i < 6 ? Colour(text, rows[r - 1].types[i - 2].state, colour) : text);
    }
    out << "\n";
  }
}

void PrintJson(const std::vector<Row>& rows, std::ostream& out) {
  out << "[";
  for (size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    out << (r ? "," : "") << "{\"node\":" << AdminJsonQuote(row.node) << ",\"replica\":" << AdminJsonQuote(row.replica)
        << ",\"identity\":" << AdminJsonQuote(row.identity) << ",\"push_version\":" << AdminJsonQuote(row.push_version)
        << ",\"cxds_version\":" << AdminJsonQuote(row.cxds_version);
    for (size_t i = 0; i < row.types.size(); ++i) {
      out << ",\"" << kTypes[i] << "\":{\"state\":" << AdminJsonQuote(row.types[i].state)
          << ",\"age_ms\":" << row.types[i].age_ms << ",\"error\":" << AdminJsonQuote(row.types[i].error) << "}";
    }
    if (row.diff.has_value()) out << ",\"diff\":" << row.diff->page;
    out << "}";
  }
  out << "]\n";
}

}  // namespace

int RunProxyStatus(const ProxyStatusOptions& options, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::string> token = ReadBearerToken(options.token_file);
  if (!token.ok()) {
    err << "error: " << token.status().message() << "\n";
    return 2;
  }
  std::vector<Row> rows;
  int failures = 0;
  for (const std::string& admin : options.admins) {
    absl::StatusOr<std::string> body = Fetch(admin, "/debug/proxy_status", *token);
    absl::Status parsed = body.ok() ? Parse(admin, *body, rows) : body.status();
    if (!parsed.ok()) {
      err << "error: " << parsed.message() << "\n";
      failures++;
    }
  }
  if (!options.proxy.empty()) {
    std::erase_if(rows, [&](const Row& row) { return row.node != options.proxy; });
    if (rows.empty() && failures == 0) {
      err << "error: no proxy \"" << options.proxy << "\" is connected to " << options.admins.size() << " replica(s)\n";
      return 1;
    }
  }
  // With a PROXY: each of its streams compared with what its replica would send it now.
  for (Row& row : rows) {
    if (options.proxy.empty()) break;
    absl::StatusOr<std::string> body =
        Fetch(row.replica, StrCat("/debug/proxy_diff?proxy=", httplib::detail::encode_query_param(row.node)), *token);
    absl::StatusOr<ProxyDiff> diff = body.ok() ? ParseDiff(row.replica, *std::move(body)) : body.status();
    if (!diff.ok()) {
      err << "error: " << diff.status().message() << "\n";
      failures++;
      continue;
    }
    if (diff->stream == row.stream) row.diff = *std::move(diff);
  }
  const bool colour = options.colour == "always" || (options.colour == "auto" && isatty(STDOUT_FILENO));
  if (options.output == "json") {
    PrintJson(rows, out);
  } else {
    PrintTable(rows, colour, out);
    for (const Row& row : rows) {
      if (row.diff.has_value()) PrintDiff(row, colour, out);
    }
  }
  return failures == 0 ? 0 : 3;
}

}  // namespace cxds
