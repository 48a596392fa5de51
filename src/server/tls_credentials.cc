#include "server/tls_credentials.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>

#include "common/files.h"
#include "common/openssl_ptr.h"
#include "common/strings.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace cxds {

namespace {
// Larger PEM files are refused: a certificate chain or CA bundle is a few KiB to a few hundred.
constexpr size_t kMaxPemBytes = 4 << 20;

// OpenSSL's reason for the last failure, and the error queue cleared.
std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no PEM data";
  char buffer[256];
  ERR_error_string_n(code, buffer, sizeof(buffer));
  return buffer;
}

absl::StatusOr<std::string> ReadPem(const std::string& path, std::string_view what) {
  return ReadSmallFile(path, kMaxPemBytes, what);
}

absl::StatusOr<X509Ptr> FirstCertificate(const std::string& pem, const std::string& path, std::string_view what) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(StrCat(path, ": the ", what, " holds no PEM certificate (", OpenSslError(), ")"));
  }
  return cert;
}
}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeTlsServerCredentials(const TlsFiles& files) {
  if (files.cert_file.empty() || files.key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate file and a key file (--tls-cert, --tls-key)");
  }
  absl::StatusOr<std::string> cert_pem = ReadPem(files.cert_file, "certificate");
  if (!cert_pem.ok()) return cert_pem.status();
  absl::StatusOr<X509Ptr> cert = FirstCertificate(*cert_pem, files.cert_file, "certificate file");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key_pem = ReadPem(files.key_file, "private key");
  if (!key_pem.ok()) return key_pem.status();
  {
    BioPtr bio(BIO_new_mem_buf(key_pem->data(), static_cast<int>(key_pem->size())));
    KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    if (key == nullptr) {
      return absl::InvalidArgumentError(StrCat(files.key_file, ": no PEM private key (", OpenSslError(), ")"));
    }
    if (X509_check_private_key(cert->get(), key.get()) != 1) {
      ERR_clear_error();
      return absl::InvalidArgumentError(
          StrCat(files.key_file, ": the private key does not match the certificate in ", files.cert_file));
    }
  }
  if (!files.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca_pem = ReadPem(files.client_ca_file, "client CA bundle");
    if (!ca_pem.ok()) return ca_pem.status();
    absl::StatusOr<X509Ptr> ca = FirstCertificate(*ca_pem, files.client_ca_file, "client CA file");
    if (!ca.ok()) return ca.status();
  }
  const auto refresh_seconds =
      static_cast<unsigned int>(std::max<int64_t>(1, absl::ToInt64Seconds(files.refresh_interval)));
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key_file, files.cert_file, files.client_ca_file, refresh_seconds);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (files.client_ca_file.empty()) {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  } else {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::experimental::TlsServerCredentials(options);
  if (credentials == nullptr) return absl::InternalError("gRPC could not make TLS server credentials");
  return credentials;
}

absl::StatusOr<absl::Time> CertificateExpiry(const std::string& path) {
  absl::StatusOr<std::string> pem = ReadPem(path, "certificate");
  if (!pem.ok()) return pem.status();
  absl::StatusOr<X509Ptr> cert = FirstCertificate(*pem, path, "certificate file");
  if (!cert.ok()) return cert.status();
  struct tm not_after = {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert->get()), &not_after) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(StrCat(path, ": the certificate's notAfter cannot be read"));
  }
  return absl::FromTM(not_after, absl::UTCTimeZone());
}

absl::StatusOr<XdsSecurity> MakeXdsSecurity(const XdsSecurityOptions& options) {
  XdsSecurity security;
  const TlsFiles& files = options.files;
  if (files.cert_file.empty() && files.key_file.empty()) {
    if (!files.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--client-ca needs --tls-cert and --tls-key (mTLS is TLS with client certificates)");
    }
    security.mode = "plaintext";
    return security;
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = MakeTlsServerCredentials(files);
  if (!credentials.ok()) return credentials.status();
  security.credentials = *std::move(credentials);
  if (files.client_ca_file.empty()) {
    security.mode = "tls";
    return security;
  }
  if (options.trust_domain.empty())
    return absl::InvalidArgumentError("--trust-domain must not be empty with --client-ca");
  security.authenticator = std::make_unique<SpiffeAuthenticator>(options.trust_domain);
  security.mode = "mtls";
  return security;
}

void ExportCertificateExpiry(const std::string& cert_file, MetricsRegistry& metrics) {
  absl::StatusOr<absl::Time> expiry = CertificateExpiry(cert_file);
  if (!expiry.ok()) {
    metrics.GetCounter("cxds_tls_certificate_read_errors", "Failed reads of the TLS certificate for its expiry.").Add();
    return;
  }
  metrics
      .GetGauge("cxds_tls_certificate_expiry_timestamp_seconds",
                "When the xDS server's TLS certificate expires (Unix s).", {{"file", cert_file}})
      .Set(static_cast<double>(absl::ToUnixSeconds(*expiry)));
}

TransportPeer PeerOf(const grpc::ServerContextBase& context) {
  TransportPeer peer;
  peer.address = context.peer();
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) return peer;
  for (const grpc::string_ref& type : auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME)) {
    // "ssl" from SslServerCredentials, "tls" from TlsServerCredentials (what cxds uses).
    const std::string_view name(type.data(), type.size());
    if (name == GRPC_SSL_TRANSPORT_SECURITY_TYPE || name == GRPC_TLS_TRANSPORT_SECURITY_TYPE) peer.tls = true;
  }
  peer.certificate = peer.tls && !auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME).empty();
  for (const grpc::string_ref& uri : auth->FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
    peer.uri_sans.emplace_back(uri.data(), uri.size());
  }
  return peer;
}

}  // namespace cxds
