// TLS and mTLS for the xDS port, from PEM files that are re-read while the server runs.
//
// Rotation: gRPC's file-watcher certificate provider re-reads the files every
// `refresh_interval`; a new handshake uses the newest pair that loaded, an established
// connection keeps the one it was made with. A half-written or mismatched pair is not taken
// (gRPC keeps the previous one), so replace the files by renaming complete ones into place.
//
// Threading: the functions are thread-safe; the credentials are shared by gRPC's threads.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_context.h"
#include "metrics/metrics.h"
#include "server/authenticator.h"

namespace cxds {

struct TlsFiles {
  std::string cert_file;       // the server's certificate chain (PEM)
  std::string key_file;        // its private key (PEM)
  std::string client_ca_file;  // "": TLS only; otherwise clients must present a certificate it verifies
  absl::Duration refresh_interval = absl::Seconds(5);  // how often the files are re-read (at least 1 s)
};

// Checks the files now (readable, PEM, the key matches the certificate, the CA bundle parses),
// naming the file in any error, and returns credentials that keep re-reading them.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeTlsServerCredentials(const TlsFiles& files);

// When the first certificate in the PEM file `path` expires; the error names the file.
absl::StatusOr<absl::Time> CertificateExpiry(const std::string& path);

// The xDS port's security as the daemon configures it: plaintext (no files), TLS (a certificate
// and key), or mTLS with SPIFFE identities (and a client CA).
struct XdsSecurityOptions {
  TlsFiles files;
  std::string trust_domain = "cluster.local";  // with mTLS: the SPIFFE trust domain clients must be in
};
struct XdsSecurity {
  std::shared_ptr<grpc::ServerCredentials> credentials;  // null: plaintext
  std::unique_ptr<Authenticator> authenticator;          // set for mTLS (SpiffeAuthenticator)
  std::string mode;                                      // "plaintext", "tls" or "mtls"
};
// A client CA without a certificate and key, or a bad file, is an error naming it.
absl::StatusOr<XdsSecurity> MakeXdsSecurity(const XdsSecurityOptions& options);

// Sets cxds_tls_certificate_expiry_timestamp_seconds{file="cert_file"} from the certificate now
// in `cert_file` (called at each /metrics scrape, so a rotated file shows at once). A file that
// cannot be read leaves the gauge as it was and counts cxds_tls_certificate_read_errors.
void ExportCertificateExpiry(const std::string& cert_file, MetricsRegistry& metrics);

// What the transport proved about the peer of a call (TLS, client certificate, URI SANs).
TransportPeer PeerOf(const grpc::ServerContextBase& context);

}  // namespace cxds
