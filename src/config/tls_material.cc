#include "config/tls_material.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <climits>
#include <memory>

namespace cxds {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Certificate = std::unique_ptr<X509, X509Free>;
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;

Bio ReadOnly(std::string_view text) {
  // OpenSSL takes an int length; config documents are far below that, but never trust it.
  if (text.size() > static_cast<size_t>(INT_MAX)) return nullptr;
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Whether anything but whitespace is left in `bio` (material after the last PEM block that
// OpenSSL would skip without a word).
bool OnlyWhitespaceLeft(BIO* bio) {
  char c = 0;
  while (BIO_read(bio, &c, 1) == 1) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return false;
  }
  return true;
}

}  // namespace

std::string CertificatesProblem(std::string_view pem) {
  Bio bio = ReadOnly(pem);
  if (bio == nullptr) return "is too large";
  int count = 0;
  while (true) {
    Certificate cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (cert == nullptr) break;
    ++count;
  }
  // The loop ends at the first block that is not a certificate, or at the end: a PEM_R_NO_START_LINE
  // error at the end is how OpenSSL says "no more blocks".
  const unsigned long error = ERR_peek_last_error();
  const bool clean_end =
      error == 0 || (ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE);
  ERR_clear_error();
  if (count == 0) return "holds no PEM certificate (-----BEGIN CERTIFICATE-----)";
  if (!clean_end)
    return "holds a PEM block after certificate " + std::to_string(count) + " that is not a valid certificate";
  return "";
}

std::string PrivateKeyProblem(std::string_view key_pem, std::string_view certificate_pem) {
  Bio bio = ReadOnly(key_pem);
  if (bio == nullptr) return "is too large";
  Key key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (key == nullptr) return "holds no PEM private key that can be read without a password";
  if (!OnlyWhitespaceLeft(bio.get())) return "holds more than one private key or other text after the key";
  Bio cert_bio = ReadOnly(certificate_pem);
  Certificate cert(cert_bio == nullptr ? nullptr : PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (cert == nullptr) return "";  // the certificate's own problem is reported on its field
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return "does not belong to the first certificate of the chain (the key of another certificate?)";
  }
  return "";
}

}  // namespace cxds
