// TLS credentials from files (server/tls_credentials.h): the checks at start and the expiry
// metric. Certificates are made at test time with openssl (fakes/test_pki.h).
#include "server/tls_credentials.h"

#include <filesystem>
#include <fstream>

#include "absl/time/clock.h"
#include "fakes/test_pki.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

using ::testing::HasSubstr;

class TlsCredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pki_.MakeCa("ca"));
    ASSERT_TRUE(pki_.MakeLeaf("server", "ca", "IP:127.0.0.1"));
  }
  testing::TestPki pki_;
};

TEST_F(TlsCredentialsTest, ModesFollowTheFilesGiven) {
  absl::StatusOr<XdsSecurity> plaintext = MakeXdsSecurity({});
  ASSERT_TRUE(plaintext.ok());
  EXPECT_EQ(plaintext->mode, "plaintext");
  EXPECT_EQ(plaintext->credentials, nullptr);

  XdsSecurityOptions tls;
  tls.files = {pki_.Path("server.crt"), pki_.Path("server.key"), "", absl::Seconds(1)};
  absl::StatusOr<XdsSecurity> tls_only = MakeXdsSecurity(tls);
  ASSERT_TRUE(tls_only.ok()) << tls_only.status();
  EXPECT_EQ(tls_only->mode, "tls");
  EXPECT_NE(tls_only->credentials, nullptr);
  EXPECT_EQ(tls_only->authenticator, nullptr);

  tls.files.client_ca_file = pki_.Path("ca.crt");
  absl::StatusOr<XdsSecurity> mtls = MakeXdsSecurity(tls);
  ASSERT_TRUE(mtls.ok()) << mtls.status();
  EXPECT_EQ(mtls->mode, "mtls");
  ASSERT_NE(mtls->authenticator, nullptr);

  tls.trust_domain = "";
  EXPECT_THAT(MakeXdsSecurity(tls).status().message(), HasSubstr("--trust-domain"));
}

TEST_F(TlsCredentialsTest, BadFilesAreRefusedNamingThem) {
  std::ofstream(pki_.Path("garbage.pem")) << "not a certificate\n";
  TlsFiles files{pki_.Path("garbage.pem"), pki_.Path("server.key"), "", absl::Seconds(1)};
  EXPECT_THAT(MakeTlsServerCredentials(files).status().message(), HasSubstr(pki_.Path("garbage.pem")));
  files = {pki_.Path("server.crt"), pki_.Path("ca.key"), "", absl::Seconds(1)};
  EXPECT_THAT(MakeTlsServerCredentials(files).status().message(), HasSubstr("does not match"));
  files = {pki_.Path("server.crt"), pki_.Path("server.key"), pki_.Path("garbage.pem"), absl::Seconds(1)};
  EXPECT_THAT(MakeTlsServerCredentials(files).status().message(), HasSubstr("client CA file"));
  // A huge file (or a device) is refused after reading one byte over the limit, not read whole.
  std::ofstream(pki_.Path("huge.pem")).close();
  std::filesystem::resize_file(pki_.Path("huge.pem"), 64 << 20);
  files = {pki_.Path("huge.pem"), pki_.Path("server.key"), "", absl::Seconds(1)};
  EXPECT_THAT(MakeTlsServerCredentials(files).status().message(),
              HasSubstr(pki_.Path("huge.pem") + ": the certificate is over 4194304 bytes"));
}

TEST_F(TlsCredentialsTest, TheExpiryMetricIsTheCertificatesNotAfter) {
  absl::StatusOr<absl::Time> expiry = CertificateExpiry(pki_.Path("server.crt"));
  ASSERT_TRUE(expiry.ok()) << expiry.status();
  // openssl -days 1: notAfter is a day after it was made, within this test's lifetime.
  EXPECT_GT(*expiry, absl::Now() + absl::Hours(23));
  EXPECT_LT(*expiry, absl::Now() + absl::Hours(25));
  MetricsRegistry metrics;
  ExportCertificateExpiry(pki_.Path("server.crt"), metrics);
  EXPECT_EQ(metrics.GetGauge("cxds_tls_certificate_expiry_timestamp_seconds", "", {{"file", pki_.Path("server.crt")}})
                .value(),
            static_cast<double>(absl::ToUnixSeconds(*expiry)));
  ExportCertificateExpiry(pki_.Path("missing.crt"), metrics);
  EXPECT_EQ(metrics.GetCounter("cxds_tls_certificate_read_errors", "").value(), 1);
}

}  // namespace
}  // namespace cxds
