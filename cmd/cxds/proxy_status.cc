// `cxds proxy-status`: the proxies of one or more replicas (their admin addresses), each of
// CDS, LDS, EDS and RDS as SYNCED / NOT SENT / STALE (age) / NACK (error), from each
// replica's /debug/proxy_status (src/admin/proxy_status.h). A table, or JSON with -o json.
#include <unistd.h>

#include <algorithm>
#include <ostream>

#include "admin/admin_server.h"
#include "common/strings.h"
#include "cxds/admin_client.h"
#include "cxds/commands.h"
#include "yaml-cpp/yaml.h"

namespace cxds {
namespace {

struct Cell {
  std::string state;
  int64_t age_ms = 0;
  std::string error;
};

struct Row {
  std::string replica;
  std::string node;
  std::string identity;
  std::string push_version;
  std::string cxds_version;
  std::vector<Cell> types;  // CDS, LDS, EDS, RDS
};

constexpr const char* kTypes[] = {"CDS", "LDS", "EDS", "RDS"};

absl::StatusOr<std::string> Fetch(const std::string& admin, const std::string& token) {
  absl::StatusOr<AdminReply> reply = AdminGet(admin, "/debug/proxy_status", token);
  if (!reply.ok()) return reply.status();
  if (reply->status != 200) {
    return absl::UnavailableError(StrCat(admin, ": HTTP ", reply->status, " for /debug/proxy_status"));
  }
  return std::move(reply->body);
}

// The page is JSON, which YAML reads; anything unexpected is an error naming the replica.
absl::Status Parse(const std::string& admin, const std::string& body, std::vector<Row>& rows) {
  try {
    const YAML::Node page = YAML::Load(body);
    for (const YAML::Node& proxy : page["proxies"]) {
      Row row{admin,
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
    absl::StatusOr<std::string> body = Fetch(admin, *token);
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
  if (options.output == "json") {
    PrintJson(rows, out);
  } else {
    PrintTable(rows, options.colour == "always" || (options.colour == "auto" && isatty(STDOUT_FILENO)), out);
  }
  return failures == 0 ? 0 : 3;
}

}  // namespace cxds
