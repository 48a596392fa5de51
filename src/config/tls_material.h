// Checks of TLS material read from configuration (a Secret's certificates and key), so that a
// bad Secret is refused where it is written, naming its field, instead of being served and
// refused by every gateway that loads it.
//
// The answers describe what is wrong and never quote the material: a private key must not
// reach a log or an error page.
#pragma once

#include <string>
#include <string_view>

namespace cxds {

// "" when `pem` holds at least one certificate and nothing that is not one; else the problem.
std::string CertificatesProblem(std::string_view pem);

// "" when `pem` holds at least one certificate revocation list (X509 CRL) and nothing else,
// each signed by a certificate of `ca_pem` (already checked with CertificatesProblem); else the
// problem.
std::string RevocationListProblem(std::string_view pem, std::string_view ca_pem);

// "" when `key_pem` is one private key and it belongs to the first certificate of
// `certificate_pem` (already checked with CertificatesProblem); else the problem.
std::string PrivateKeyProblem(std::string_view key_pem, std::string_view certificate_pem);

}  // namespace cxds
