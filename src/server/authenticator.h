// Who is on the other end of an xDS stream, and whether it may speak for the node it names.
//
// The server asks an Authenticator twice per stream: when the stream opens, with what the
// transport proved (TLS, the client certificate's URI SANs), for the client's identity; and at
// the stream's first request, whether that identity may serve as the node the request names.
// Either answer can refuse the stream with a status that says which claim did not match.
// Embedders may plug in their own (go-control-plane leaves this to the embedder; istiod has
// pluggable authenticators); SpiffeAuthenticator is the mTLS one `cxds serve` uses.
//
// Threading: an Authenticator is shared by every stream and called from any thread; it must be
// thread-safe (the ones here are immutable).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "envoy/config/core/v3/base.pb.h"

namespace cxds {

// What the transport proved about the client (taken from gRPC's auth context by the server).
struct TransportPeer {
  std::string address;                // gRPC's peer string, e.g. "ipv4:127.0.0.1:41234"
  bool tls = false;                   // the connection is TLS
  bool certificate = false;           // the client presented a certificate and it verified
  std::vector<std::string> uri_sans;  // URI SANs of the client certificate
};

// An authenticated identity; `authenticated` is false for a client nobody checked (plaintext).
struct PeerIdentity {
  bool authenticated = false;
  std::string spiffe_id;  // "spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/SERVICE_ACCOUNT"
  std::string trust_domain;
  std::string namespace_name;
  std::string service_account;

  // For logs and debug pages: the SPIFFE id, or "none".
  std::string Describe() const { return authenticated ? spiffe_id : "none"; }
};

// Parses an Istio-form SPIFFE id: spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/SERVICE_ACCOUNT. The
// error says what is wrong with it.
absl::StatusOr<PeerIdentity> ParseSpiffeId(std::string_view uri);

// The namespaces a node claims, each with where it claims it: Istio's node id
// "TYPE~IP~POD.NAMESPACE~DOMAIN" ("node.id") and the metadata field NAMESPACE
// ("node.metadata.NAMESPACE"). Empty if it claims none.
std::vector<std::pair<std::string, std::string>> NamespaceClaims(const envoy::config::core::v3::Node& node);

class Authenticator {
 public:
  virtual ~Authenticator() = default;
  // When the stream opens: the client's identity, or the status that refuses the stream
  // (UNAUTHENTICATED: no usable identity; PERMISSION_DENIED: an identity this server does not
  // serve).
  virtual absl::StatusOr<PeerIdentity> Authenticate(const TransportPeer& peer) const = 0;
  // At the stream's first request: whether `identity` may serve as `node`, or the status that
  // ends the stream (PERMISSION_DENIED, naming the claim). May rewrite `node` into what the
  // stream is served as (e.g. scoped to the authenticated namespace).
  virtual absl::Status Authorize(const PeerIdentity& identity, envoy::config::core::v3::Node& node) const = 0;
};

// mTLS with SPIFFE identities (istiod's model): the client certificate must carry exactly one
// spiffe:// URI SAN in `trust_domain`; a node may claim only its certificate's namespace, and is
// served as that namespace (its metadata NAMESPACE is set to it), whatever it claimed or left out.
class SpiffeAuthenticator final : public Authenticator {
 public:
  explicit SpiffeAuthenticator(std::string trust_domain) : trust_domain_(std::move(trust_domain)) {}

  absl::StatusOr<PeerIdentity> Authenticate(const TransportPeer& peer) const override;
  absl::Status Authorize(const PeerIdentity& identity, envoy::config::core::v3::Node& node) const override;

  const std::string& trust_domain() const { return trust_domain_; }

 private:
  const std::string trust_domain_;
};

}  // namespace cxds
