// TestPki: certificates made at test time with Debian's openssl (never committed keys), in a
// fresh temporary directory removed by the destructor. Keys are ECDSA P-256, valid one day.
//
// Usage:
//   TestPki pki;
//   ASSERT_TRUE(pki.MakeCa("ca"));
//   ASSERT_TRUE(pki.MakeLeaf("server", "ca", "IP:127.0.0.1"));
//   ASSERT_TRUE(pki.MakeLeaf("client", "ca", "URI:spiffe://cluster.local/ns/team-a/sa/app"));
//   pki.Path("server.crt"), pki.Read("client.key"), ...
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace cxds::testing {

class TestPki {
 public:
  TestPki() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cxds-pki-XXXXXX").string();
    dir_ = mkdtemp(pattern.data()) != nullptr ? pattern : "";
    EXPECT_FALSE(dir_.empty()) << "cannot make a temporary directory";
  }
  ~TestPki() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  // A self-signed CA: NAME.crt and NAME.key.
  bool MakeCa(const std::string& name) {
    return Run(absl::StrCat("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1",
                            " -subj /CN=", name, " -addext basicConstraints=critical,CA:TRUE",
                            " -addext keyUsage=critical,keyCertSign,cRLSign -keyout ", Path(name + ".key"), " -out ",
                            Path(name + ".crt")));
  }

  // A certificate for `sans` ("IP:127.0.0.1", "URI:spiffe://...", comma-separated) signed by
  // the CA `ca`: NAME.crt and NAME.key.
  bool MakeLeaf(const std::string& name, const std::string& ca, const std::string& sans) {
    const std::string ext = Path(name + ".ext");
    std::ofstream(ext) << "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                       << "extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=" << sans << "\n";
    return Run(absl::StrCat("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=", name,
                            " -keyout ", Path(name + ".key"), " -out ", Path(name + ".csr"))) &&
           Run(absl::StrCat("openssl x509 -req -days 1 -in ", Path(name + ".csr"), " -CA ", Path(ca + ".crt"),
                            " -CAkey ", Path(ca + ".key"), " -CAcreateserial -extfile ", ext, " -out ",
                            Path(name + ".crt")));
  }

  // A revocation list NAME.crl of the CA `ca` revoking the certificate `revoked` (NAME.crt of an
  // earlier MakeLeaf), made with `openssl ca` over a database of its own.
  bool MakeCrl(const std::string& name, const std::string& ca, const std::string& revoked) {
    const std::string config = Path(name + ".cnf");
    std::ofstream(Path(name + ".index")).flush();
    std::ofstream(Path(name + ".crlnumber")) << "01\n";
    std::ofstream(config) << "[ca]\ndefault_ca = test\n[test]\ndatabase = " << Path(name + ".index")
                          << "\ncrlnumber = " << Path(name + ".crlnumber")
                          << "\ndefault_md = sha256\ndefault_crl_days = 1\ncertificate = " << Path(ca + ".crt")
                          << "\nprivate_key = " << Path(ca + ".key") << "\n";
    return Run(absl::StrCat("openssl ca -config ", config, " -revoke ", Path(revoked + ".crt"))) &&
           Run(absl::StrCat("openssl ca -config ", config, " -gencrl -out ", Path(name + ".crl")));
  }

  std::string Path(const std::string& file) const { return dir_ + "/" + file; }
  std::string Read(const std::string& file) const {
    std::ifstream in(Path(file));
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }
  // Replaces `to` by a copy of `from` in one rename, so a reader never sees half a file.
  bool Replace(const std::string& to, const std::string& from) const {
    std::error_code error;
    std::filesystem::copy_file(Path(from), Path(to + ".new"), std::filesystem::copy_options::overwrite_existing, error);
    if (!error) std::filesystem::rename(Path(to + ".new"), Path(to), error);
    return !error;
  }

 private:
  static bool Run(const std::string& command) {
    const int status = std::system((command + " >/dev/null 2>&1").c_str());
    EXPECT_EQ(status, 0) << command;
    return status == 0;
  }

  std::string dir_;
};

}  // namespace cxds::testing
