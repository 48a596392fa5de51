#include "config/tls_material.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <climits>
#include <optional>
#include <string>
#include <vector>

#include "common/openssl_ptr.h"
#include "common/strings.h"

namespace cxds {
namespace {

// One PEM block: its type ("CERTIFICATE", "PRIVATE KEY", ...) and its DER bytes.
struct PemBlock {
  std::string name;
  std::string der;
};

// The next PEM block of `bio`, or nullopt at the end; then `broken` says whether the end was a
// broken block rather than no more blocks. The error queue is left empty.
std::optional<PemBlock> NextBlock(BIO* bio, bool& broken) {
  char* name = nullptr;
  char* header = nullptr;
  unsigned char* data = nullptr;
  long length = 0;
  const bool read = PEM_read_bio(bio, &name, &header, &data, &length) == 1;
  std::optional<PemBlock> block;
  if (read) block = PemBlock{name != nullptr ? name : "", std::string(reinterpret_cast<const char*>(data), length)};
  OPENSSL_free(name);
  OPENSSL_free(header);
  OPENSSL_free(data);
  if (!read) {
    // OpenSSL says "no start line" when no block is left.
    const unsigned long error = ERR_peek_last_error();
    broken = !(ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE);
  }
  ERR_clear_error();
  return block;
}

BioPtr ReadOnly(std::string_view text) {
  // OpenSSL takes an int length; config documents are far below that, but never trust it.
  if (text.size() > static_cast<size_t>(INT_MAX)) return nullptr;
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// OpenSSL's default for an encrypted PEM block asks for a passphrase on the terminal (or
// standard input): a config loader must never wait for one. This refuses instead.
int NoPassword(char* /*buffer*/, int /*size*/, int /*writing*/, void* /*user*/) { return -1; }

// "" when every line that is not blank lies inside a -----BEGIN/-----END block; else what is
// outside. OpenSSL skips such text without a word, and material in it (a key in another form)
// would then be served and shown where no key is expected.
std::string TextOutsideBlocks(std::string_view text) {
  bool inside = false;
  size_t line_number = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty()) continue;
    if (!inside) {
      if (!line.starts_with("-----BEGIN ")) return StrCat("holds text outside a PEM block (line ", line_number, ")");
      inside = true;
    } else if (line.starts_with("-----END ")) {
      inside = false;
    }
  }
  return inside ? "holds a PEM block without its -----END line" : "";
}

}  // namespace

namespace {

// "" when `pem` holds at least one PEM block of type `type`, each of which `parses` whole, and
// nothing else; else the problem, naming blocks as `what` ("certificate").
std::string TypedBlocksProblem(std::string_view pem, std::string_view type, std::string_view what,
                               bool (*parses)(const std::string& der)) {
  if (std::string outside = TextOutsideBlocks(pem); !outside.empty()) return outside;
  BioPtr bio = ReadOnly(pem);
  if (bio == nullptr) return "is too large";
  // Block by block, not with PEM_read_bio_X509 and the like, which skip blocks of other types
  // without a word: a private key pasted into a certificate field would be taken, and then
  // served and shown where only certificates are expected.
  int count = 0;
  bool broken = false;
  while (std::optional<PemBlock> block = NextBlock(bio.get(), broken)) {
    if (block->name != type) {
      return StrCat("holds a PEM block of type \"", block->name.substr(0, 40), "\" where only ", what, "s (", type,
                    ") belong (a private key belongs in its own field)");
    }
    if (!parses(block->der)) return StrCat(what, " ", count + 1, " is not a valid X.509 ", what);
    ++count;
  }
  if (broken) return StrCat("holds a broken PEM block after ", what, " ", count);
  if (count == 0) return StrCat("holds no PEM ", what, " (-----BEGIN ", type, "-----)");
  return "";
}

// Whether `der` is exactly one X.509 certificate (bytes after it are no certificate either).
bool ParsesAsCertificate(const std::string& der) {
  const auto* begin = reinterpret_cast<const unsigned char*>(der.data());
  const unsigned char* cursor = begin;
  X509Ptr cert(d2i_X509(nullptr, &cursor, static_cast<long>(der.size())));
  ERR_clear_error();
  return cert != nullptr && cursor == begin + der.size();
}

bool ParsesAsCrl(const std::string& der) {
  const auto* begin = reinterpret_cast<const unsigned char*>(der.data());
  const unsigned char* cursor = begin;
  X509_CRL* crl = d2i_X509_CRL(nullptr, &cursor, static_cast<long>(der.size()));
  ERR_clear_error();
  const bool whole = crl != nullptr && cursor == begin + der.size();
  X509_CRL_free(crl);
  return whole;
}

}  // namespace

std::string CertificatesProblem(std::string_view pem) {
  return TypedBlocksProblem(pem, "CERTIFICATE", "certificate", ParsesAsCertificate);
}

std::string RevocationListProblem(std::string_view pem, std::string_view ca_pem) {
  if (std::string problem = TypedBlocksProblem(pem, "X509 CRL", "revocation list", ParsesAsCrl); !problem.empty()) {
    return problem;
  }
  // Each list must be signed by one of the CAs it is served with: Envoy (OpenSSL) refuses every
  // client certificate of a CA whose list it cannot verify.
  std::vector<X509Ptr> cas;
  BioPtr ca_bio = ReadOnly(ca_pem);
  while (ca_bio != nullptr) {
    X509Ptr ca(PEM_read_bio_X509(ca_bio.get(), nullptr, NoPassword, nullptr));
    if (ca == nullptr) break;
    cas.push_back(std::move(ca));
  }
  ERR_clear_error();
  BioPtr bio = ReadOnly(pem);
  for (int index = 1; bio != nullptr; ++index) {
    X509_CRL* crl = PEM_read_bio_X509_CRL(bio.get(), nullptr, NoPassword, nullptr);
    if (crl == nullptr) break;
    bool signed_by_ca = false;
    for (const X509Ptr& ca : cas) {
      if (X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(ca.get())) != 0) continue;
      EVP_PKEY* key = X509_get0_pubkey(ca.get());
      signed_by_ca = signed_by_ca || (key != nullptr && X509_CRL_verify(crl, key) == 1);
    }
    X509_CRL_free(crl);
    ERR_clear_error();
    if (!signed_by_ca) {
      return StrCat("revocation list ", index,
                    " is not signed by a CA of the Secret's CA certificates (Envoy would refuse every client "
                    "certificate of that CA)");
    }
  }
  ERR_clear_error();
  return "";
}

std::string PrivateKeyProblem(std::string_view key_pem, std::string_view certificate_pem) {
  if (std::string outside = TextOutsideBlocks(key_pem); !outside.empty()) return outside;
  BioPtr bio = ReadOnly(key_pem);
  if (bio == nullptr) return "is too large";
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassword, nullptr));
  ERR_clear_error();
  if (key == nullptr) return "holds no PEM private key that can be read without a password";
  // Nothing but the key: another block after it (a second key, a certificate) is refused.
  bool broken = false;
  if (NextBlock(bio.get(), broken).has_value() || broken) {
    return "holds another PEM block after the private key (one key alone belongs here)";
  }
  BioPtr cert_bio = ReadOnly(certificate_pem);
  X509Ptr cert(cert_bio == nullptr ? nullptr : PEM_read_bio_X509(cert_bio.get(), nullptr, NoPassword, nullptr));
  ERR_clear_error();
  if (cert == nullptr) return "";  // the certificate's own problem is reported on its field
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return "does not belong to the first certificate of the chain (the key of another certificate?)";
  }
  return "";
}

}  // namespace cxds
