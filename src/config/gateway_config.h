// The edge of the mesh: networking.istio.io Gateway, and the v1 Secrets its HTTPS servers name
// (credentialName). Plain values, as the rest of config/mesh_config.h.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/object_meta.h"

namespace cxds {

// v1 Secret holding TLS material (type kubernetes.io/tls, or generic with Istio's keys), which
// Gateways name in credentialName; other Secrets are skipped as kinds without xDS meaning.
// Checked when read: the certificates parse, the key parses and belongs to the first
// certificate. The key is served only to gateway proxies of the Secret's namespace whose stream
// proved an allowed service account (model/generators.h SecretsRefusal), and never shown by
// debug output (protocol/resource.h MessageForDisplay).
struct K8sTlsSecret {
  ObjectMeta meta;
  std::string certificate_chain;  // PEM (tls.crt or cert); empty in a CA-only Secret
  std::string private_key;        // PEM (tls.key or key); set exactly when certificate_chain is
  std::string ca_certificates;    // PEM (ca.crt or cacert); optional
  // PEM revocation lists (ca.crl or crl), checked with the CA: a client certificate they revoke
  // is refused. Used from the Secret that gives a MUTUAL server its CA.
  std::string revocation_lists;
};

// networking.istio.io Gateway: the servers of the gateway proxies (router~ nodes) whose labels
// include the selector. cxds serves plain HTTP servers (HTTP, HTTP2, GRPC), optionally
// redirecting to HTTPS; HTTPS servers terminating TLS (SIMPLE or MUTUAL) with a credentialName
// Secret; TCP servers (TCP, MONGO, REDIS, MYSQL: proxied as TCP); TLS servers that terminate
// TLS the same way, then proxy TCP; and TLS or HTTPS servers passing TLS through (PASSTHROUGH).
struct Gateway {
  ObjectMeta meta;
  LabelMap selector;  // empty: every gateway proxy
  struct Server {
    std::string name;
    uint32_t port = 0;
    std::string port_name;
    std::string protocol;  // HTTP, HTTP2, GRPC, HTTPS, TCP, MONGO, REDIS, MYSQL or TLS
    // Which routes of the bound VirtualServices it serves: http (HTTP, HTTP2, GRPC, and HTTPS
    // that terminates), tcp (TCP, MONGO, REDIS, MYSQL, and TLS that terminates), or tls by SNI
    // name (TLS or HTTPS with mode PASSTHROUGH).
    enum class Routes { kHttp, kTcp, kTls };
    Routes routes = Routes::kHttp;
    // "namespace/host": VirtualServices of that namespace ("*": any, ".": the Gateway's) bound
    // to the Gateway serve the host (a wildcard such as "*.example.com" or "*" allowed). A
    // host without a namespace in the file is "*/host".
    std::vector<std::string> hosts;
    bool https_redirect = false;  // tls.httpsRedirect: answer every request with a 301 to https
    // SIMPLE and MUTUAL terminate TLS with the certificate of Secret `credential_name` in the
    // gateway proxy's namespace (SDS kubernetes://NAME); MUTUAL also asks for the client's
    // certificate and checks it against the Secret's CA (kubernetes://NAME-cacert), or that of
    // ca_credential_name.
    // PASSTHROUGH forwards the TLS bytes by the SNI name, holding no certificate.
    // OPTIONAL_MUTUAL asks for a client certificate and checks one that is presented, but lets
    // a client without one in. Without a credential name, the certificate, key and (to check
    // clients) CA are files on the gateway, which Envoy reads itself.
    enum class TlsMode { kNone, kSimple, kMutual, kPassthrough, kOptionalMutual };
    TlsMode tls_mode = TlsMode::kNone;
    std::string credential_name;
    std::string server_certificate, private_key, ca_certificates;  // absolute paths; with no credential
    std::string ca_crl;  // caCrl (MUTUAL, OPTIONAL_MUTUAL, with files): revoked client certificates
    // credentialNames after the first (credential_name, whose Secret also gives the CA unless
    // ca_credential_name is set), or
    // tlsCertificates after the first (server_certificate, private_key): more certificates the
    // server holds, Envoy choosing one per handshake by SNI name and key type (RSA, ECDSA).
    std::vector<std::string> more_credential_names;
    bool credentials_listed = false;  // the Secrets were given as credentialNames
    // caCertCredentialName (MUTUAL, OPTIONAL_MUTUAL, beside credentials): the Secret whose CA
    // checks clients instead of the first credential's, without its "-cacert" suffix (the CA is
    // read from NAME-cacert, else NAME, as for a credential's). Empty: the first credential's.
    std::string ca_credential_name;
    std::vector<std::pair<std::string, std::string>> more_certificates;  // certificate and key paths
    bool Terminates() const {
      return tls_mode == TlsMode::kSimple || tls_mode == TlsMode::kMutual || tls_mode == TlsMode::kOptionalMutual;
    }
    bool ChecksClients() const { return tls_mode == TlsMode::kMutual || tls_mode == TlsMode::kOptionalMutual; }
    // One Secret a server with credentials takes over SDS: the certificate and key of
    // `credential`, or with `ca` the CA that checks clients; `field` is the tls field naming it.
    struct SecretRef {
      std::string credential;
      bool ca = false;
      const char* field = "";
    };
    // Each certificate's, in order, then the CA's when the server checks clients. One list for
    // what is sent (SDS), what is said missing (/debug/config_status) and analysis (IST0101).
    std::vector<SecretRef> SecretRefs() const {
      std::vector<SecretRef> refs;
      if (credential_name.empty()) return refs;
      const char* field = credentials_listed ? "credentialNames" : "credentialName";
      refs.push_back({credential_name, false, field});
      for (const std::string& more : more_credential_names) refs.push_back({more, false, field});
      if (ChecksClients()) {
        refs.push_back(ca_credential_name.empty() ? SecretRef{credential_name, true, field}
                                                  : SecretRef{ca_credential_name, true, "caCertCredentialName"});
      }
      return refs;
    }
    std::string min_protocol_version;  // TLSV1_0 .. TLSV1_3; empty: Envoy's default
    std::string max_protocol_version;
    std::vector<std::string> cipher_suites;
    std::vector<std::string> ecdh_curves;  // ecdhCurves: the key exchange groups offered; empty: Envoy's
    // What a client's certificate is checked for beyond the CA (MUTUAL, OPTIONAL_MUTUAL): one of
    // the SANs in subjectAltNames, and, when either list is given, its own hex SHA-256 among
    // verifyCertificateHash or its key's base64 SHA-256 among verifyCertificateSpki (Envoy takes
    // either); insecureSkipVerify: its chain is not checked against the CA (ACCEPT_UNTRUSTED).
    std::vector<std::string> client_subject_alt_names, client_spki, client_hashes;
    bool accept_untrusted_clients = false;
    // tls fields Istio accepts here and istiod ignores (certificates of a PASSTHROUGH server,
    // what a plain-text HTTP server's tls holds besides httpsRedirect, files beside a
    // credentialName, a SIMPLE server's CA): field -> why ("has no effect ..."), for analysis.
    std::vector<std::pair<std::string, std::string>> ignored_tls_fields;
  };
  std::vector<Server> servers;
};

}  // namespace cxds
