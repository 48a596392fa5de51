// SPIFFE identities and namespace claims (server/authenticator.h), without a network.
#include "server/authenticator.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TransportPeer MtlsPeer(std::vector<std::string> uri_sans) {
  TransportPeer peer;
  peer.tls = true;
  peer.certificate = true;
  peer.uri_sans = std::move(uri_sans);
  return peer;
}

TEST(SpiffeIdTest, ParsesTheIstioForm) {
  absl::StatusOr<PeerIdentity> id = ParseSpiffeId("spiffe://cluster.local/ns/team-a/sa/reviews");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE(id->authenticated);
  EXPECT_EQ(id->trust_domain, "cluster.local");
  EXPECT_EQ(id->namespace_name, "team-a");
  EXPECT_EQ(id->service_account, "reviews");
  EXPECT_EQ(id->Describe(), "spiffe://cluster.local/ns/team-a/sa/reviews");
}

TEST(SpiffeIdTest, RefusesOtherShapesSayingWhy) {
  EXPECT_THAT(ParseSpiffeId("https://cluster.local/ns/a/sa/b").status().message(), HasSubstr("is not a SPIFFE id"));
  EXPECT_THAT(ParseSpiffeId("spiffe://cluster.local/a/b").status().message(), HasSubstr("is not of the form"));
  EXPECT_THAT(ParseSpiffeId("spiffe://cluster.local/ns//sa/b").status().message(), HasSubstr("malformed segment"));
  EXPECT_THAT(ParseSpiffeId("spiffe://cluster.local/ns/A B/sa/b").status().message(), HasSubstr("malformed segment"));
  EXPECT_FALSE(ParseSpiffeId("spiffe://td/ns/a/sa/b/extra").ok());
}

TEST(NamespaceClaimsTest, ReadsTheIstioNodeIdAndTheMetadata) {
  envoy::config::core::v3::Node node;
  node.set_id("sidecar~10.0.0.1~reviews-1.team-a~team-a.svc.cluster.local");
  (*node.mutable_metadata()->mutable_fields())["NAMESPACE"].set_string_value("team-b");
  EXPECT_THAT(NamespaceClaims(node),
              UnorderedElementsAre(Pair("node.id", "team-a"), Pair("node.metadata.NAMESPACE", "team-b")));
  node.Clear();
  node.set_id("plain-id");
  EXPECT_TRUE(NamespaceClaims(node).empty());
}

TEST(SpiffeAuthenticatorTest, AcceptsOneSpiffeIdInTheTrustDomain) {
  SpiffeAuthenticator auth("cluster.local");
  absl::StatusOr<PeerIdentity> id = auth.Authenticate(MtlsPeer({"spiffe://cluster.local/ns/team-a/sa/app"}));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->namespace_name, "team-a");
}

TEST(SpiffeAuthenticatorTest, RefusesPlaintextNoCertificateAndAmbiguousOrMissingIds) {
  SpiffeAuthenticator auth("cluster.local");
  TransportPeer plaintext;
  EXPECT_EQ(auth.Authenticate(plaintext).status().code(), absl::StatusCode::kUnauthenticated);
  TransportPeer no_certificate;
  no_certificate.tls = true;
  EXPECT_THAT(auth.Authenticate(no_certificate).status().message(), HasSubstr("no verified certificate"));
  EXPECT_THAT(auth.Authenticate(MtlsPeer({})).status().message(), HasSubstr("0 spiffe:// URI SANs"));
  EXPECT_THAT(auth.Authenticate(MtlsPeer({"spiffe://cluster.local/ns/a/sa/x", "spiffe://cluster.local/ns/b/sa/y"}))
                  .status()
                  .message(),
              HasSubstr("2 spiffe:// URI SANs"));
  EXPECT_EQ(auth.Authenticate(MtlsPeer({"spiffe://cluster.local/bad"})).status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(SpiffeAuthenticatorTest, RefusesAnotherTrustDomainNamingBoth) {
  SpiffeAuthenticator auth("cluster.local");
  absl::Status status = auth.Authenticate(MtlsPeer({"spiffe://example.org/ns/team-a/sa/app"})).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(status.message(), HasSubstr("\"example.org\""));
  EXPECT_THAT(status.message(), HasSubstr("\"cluster.local\""));
}

TEST(SpiffeAuthenticatorTest, AuthorizesOnlyTheCertificatesNamespaceAndServesTheNodeAsIt) {
  SpiffeAuthenticator auth("cluster.local");
  absl::StatusOr<PeerIdentity> id = ParseSpiffeId("spiffe://cluster.local/ns/team-a/sa/app");
  ASSERT_TRUE(id.ok());

  envoy::config::core::v3::Node claims_nothing;
  claims_nothing.set_id("plain-id");
  EXPECT_TRUE(auth.Authorize(*id, claims_nothing).ok());
  // Scoped to the authenticated namespace, not to the default a bare id would get.
  EXPECT_EQ(claims_nothing.metadata().fields().at("NAMESPACE").string_value(), "team-a");

  envoy::config::core::v3::Node same;
  same.set_id("sidecar~10.0.0.1~app-1.team-a~team-a.svc.cluster.local");
  EXPECT_TRUE(auth.Authorize(*id, same).ok());

  envoy::config::core::v3::Node other;
  other.set_id("sidecar~10.0.0.1~app-1.team-a~team-a.svc.cluster.local");
  (*other.mutable_metadata()->mutable_fields())["NAMESPACE"].set_string_value("team-b");
  absl::Status status = auth.Authorize(*id, other);
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(status.message(), HasSubstr("node.metadata.NAMESPACE claims namespace \"team-b\""));
  EXPECT_EQ(other.metadata().fields().at("NAMESPACE").string_value(), "team-b");  // refused: left as it was

  EXPECT_EQ(auth.Authorize(PeerIdentity{}, same).code(), absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace cxds
