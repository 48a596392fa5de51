#include "server/authenticator.h"

#include "common/strings.h"

namespace cxds {

namespace {
constexpr std::string_view kSpiffeScheme = "spiffe://";

// What a log line or status message may carry of a client-provided string.
std::string Shown(std::string_view untrusted) { return EscapeUntrusted(std::string(untrusted), 256); }

bool StartsWith(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

bool IsDnsLabelish(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
    if (!ok) return false;
  }
  return true;
}
}  // namespace

absl::StatusOr<PeerIdentity> ParseSpiffeId(std::string_view uri) {
  if (!StartsWith(uri, kSpiffeScheme)) {
    return absl::InvalidArgumentError(StrCat("\"", Shown(uri), "\" is not a SPIFFE id (spiffe://...)"));
  }
  const std::vector<std::string_view> parts = Split(uri.substr(kSpiffeScheme.size()), '/');
  if (parts.size() != 5 || parts[1] != "ns" || parts[3] != "sa") {
    return absl::InvalidArgumentError(
        StrCat("SPIFFE id \"", Shown(uri), "\" is not of the form spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/ACCOUNT"));
  }
  for (std::string_view part : {parts[0], parts[2], parts[4]}) {
    if (!IsDnsLabelish(part)) {
      return absl::InvalidArgumentError(
          StrCat("SPIFFE id \"", Shown(uri), "\" has an empty or malformed segment \"", Shown(part), "\""));
    }
  }
  PeerIdentity identity;
  identity.authenticated = true;
  identity.spiffe_id = std::string(uri);
  identity.trust_domain = std::string(parts[0]);
  identity.namespace_name = std::string(parts[2]);
  identity.service_account = std::string(parts[4]);
  return identity;
}

std::vector<std::pair<std::string, std::string>> NamespaceClaims(const envoy::config::core::v3::Node& node) {
  std::vector<std::pair<std::string, std::string>> claims;
  const std::vector<std::string_view> parts = Split(node.id(), '~');
  if (parts.size() == 4) {
    const size_t dot = parts[2].find('.');
    if (dot != std::string_view::npos) claims.emplace_back("node.id", std::string(parts[2].substr(dot + 1)));
  }
  const auto& fields = node.metadata().fields();
  if (auto ns = fields.find("NAMESPACE"); ns != fields.end() && !ns->second.string_value().empty()) {
    claims.emplace_back("node.metadata.NAMESPACE", ns->second.string_value());
  }
  return claims;
}

absl::StatusOr<PeerIdentity> SpiffeAuthenticator::Authenticate(const TransportPeer& peer) const {
  if (!peer.tls) return absl::UnauthenticatedError("the connection is not TLS; this server requires mTLS");
  if (!peer.certificate) {
    return absl::UnauthenticatedError("the client presented no verified certificate; this server requires mTLS");
  }
  std::vector<const std::string*> spiffe;
  for (const std::string& uri : peer.uri_sans) {
    if (StartsWith(uri, kSpiffeScheme)) spiffe.push_back(&uri);
  }
  if (spiffe.size() != 1) {
    return absl::UnauthenticatedError(
        StrCat("the client certificate carries ", spiffe.size(), " spiffe:// URI SANs; exactly one is required"));
  }
  absl::StatusOr<PeerIdentity> identity = ParseSpiffeId(*spiffe[0]);
  if (!identity.ok()) return absl::UnauthenticatedError(identity.status().message());
  if (identity->trust_domain != trust_domain_) {
    return absl::PermissionDeniedError(StrCat("the client certificate is from trust domain \"",
                                              Shown(identity->trust_domain), "\" (", Shown(identity->spiffe_id),
                                              "); this server serves trust domain \"", trust_domain_, "\""));
  }
  return identity;
}

absl::Status SpiffeAuthenticator::Authorize(const PeerIdentity& identity, envoy::config::core::v3::Node& node) const {
  if (!identity.authenticated) return absl::UnauthenticatedError("the stream has no authenticated identity");
  for (const auto& [where, claimed] : NamespaceClaims(node)) {
    if (claimed != identity.namespace_name) {
      return absl::PermissionDeniedError(StrCat(where, " claims namespace \"", Shown(claimed),
                                                "\" but the client certificate (", Shown(identity.spiffe_id),
                                                ") is for namespace \"", Shown(identity.namespace_name), "\""));
    }
  }
  // Served as the authenticated namespace, also when the node claimed none.
  (*node.mutable_metadata()->mutable_fields())["NAMESPACE"].set_string_value(identity.namespace_name);
  return absl::OkStatus();
}

}  // namespace cxds
