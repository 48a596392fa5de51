// VirtualService delegation (http[].delegate), as istiod merges it: the match rules of
// MergeDelegateRoute one by one, then a MeshContext serving a root VirtualService with its
// delegates, the findings for what is not served, and the parser's refusals.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/mesh_model.h"

namespace cxds {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

StringMatch Prefix(const std::string& value) { return {StringMatch::Kind::kPrefix, value}; }
StringMatch Exact(const std::string& value) { return {StringMatch::Kind::kExact, value}; }
StringMatch Regex(const std::string& value) { return {StringMatch::Kind::kRegex, value}; }

HttpRoute::Match UriMatch(const StringMatch& uri) {
  HttpRoute::Match match;
  match.uri = uri;
  return match;
}

HttpRoute RouteWith(std::vector<HttpRoute::Match> matches, const std::string& host = "backend") {
  HttpRoute route;
  route.match = std::move(matches);
  route.route.push_back({host, "", 0, 0, {}});
  return route;
}

// Whether the delegate's route with `leaf` is served under a root route with `root`.
bool Within(const HttpRoute::Match& root, const HttpRoute::Match& leaf) {
  HttpRoute root_route;
  root_route.match = {root};
  return MergeDelegateRoute(root_route, RouteWith({leaf}), "team", "cluster.local").has_value();
}

TEST(DelegateTest, AStringMatchMustBeWithinTheRootsAndARegexIsWithinNothing) {
  EXPECT_TRUE(Within(UriMatch(Prefix("/api")), UriMatch(Prefix("/api/v1"))));
  EXPECT_TRUE(Within(UriMatch(Prefix("/api")), UriMatch(Exact("/api/status"))));
  EXPECT_TRUE(Within(UriMatch(Prefix("/api")), HttpRoute::Match{})) << "unset: the root's applies";
  EXPECT_TRUE(Within(HttpRoute::Match{}, UriMatch(Regex("/x.*"))));
  EXPECT_FALSE(Within(UriMatch(Prefix("/api")), UriMatch(Prefix("/web"))));
  EXPECT_FALSE(Within(UriMatch(Prefix("/api/v1")), UriMatch(Prefix("/api"))));
  EXPECT_TRUE(Within(UriMatch(Exact("/a")), UriMatch(Exact("/a"))));
  EXPECT_FALSE(Within(UriMatch(Exact("/a")), UriMatch(Exact("/b"))));
  EXPECT_FALSE(Within(UriMatch(Exact("/a")), UriMatch(Prefix("/a"))));
  EXPECT_FALSE(Within(UriMatch(Regex("/a.*")), UriMatch(Regex("/a.*")))) << "regexes cannot be compared";
  EXPECT_FALSE(Within(UriMatch(Prefix("/a")), UriMatch(Regex("/a.*"))));
  EXPECT_FALSE(Within(UriMatch(Regex("/a.*")), UriMatch(Prefix("/a"))));
}

TEST(DelegateTest, OtherConditionsMustAgreeWithTheRoots) {
  HttpRoute::Match root, leaf;
  root.headers["x-team"] = Exact("a");
  leaf.headers["x-team"] = Exact("b");
  EXPECT_FALSE(Within(root, leaf)) << "a header the root matches otherwise";
  leaf.headers = {{"x-other", Exact("b")}};
  EXPECT_TRUE(Within(root, leaf)) << "a header of its own";

  root = leaf = {};
  root.port = 80;
  leaf.port = 81;
  EXPECT_FALSE(Within(root, leaf));
  leaf.port = 0;
  EXPECT_TRUE(Within(root, leaf));

  root = leaf = {};
  root.source_namespace = "shop";
  EXPECT_FALSE(Within(root, leaf)) << "the root's namespace condition is not the leaf's";
  leaf.source_namespace = "shop";
  EXPECT_TRUE(Within(root, leaf));

  root = leaf = {};
  root.source_labels = {{"app", "web"}};
  leaf.source_labels = {{"app", "api"}};
  EXPECT_FALSE(Within(root, leaf));
  leaf.source_labels = {{"version", "v1"}};
  EXPECT_TRUE(Within(root, leaf));

  root = leaf = {};
  root.headers["x-team"] = Prefix("");  // Istio's "the header is present"
  leaf.headers["x-team"] = Exact("a");
  EXPECT_FALSE(Within(root, leaf)) << "istiod: nothing is within an empty match";
  leaf.headers.clear();
  EXPECT_TRUE(Within(root, leaf));

  root = leaf = {};
  leaf.ignore_uri_case = true;
  EXPECT_FALSE(Within(root, leaf));

  root = leaf = {};
  root.gateways = {"edge/ingress"};
  leaf.gateways = {"edge/other"};
  EXPECT_FALSE(Within(root, leaf));
  leaf.gateways = {"edge/ingress"};
  EXPECT_TRUE(Within(root, leaf));
}

// Every match of the delegate's route must be within some root match, and is merged with each
// it is within; the root's conditions fill in what the delegate's leave unset.
TEST(DelegateTest, MatchesAreMergedWithEveryRootMatchTheyAreWithin) {
  HttpRoute root;
  HttpRoute::Match api = UriMatch(Prefix("/api"));
  api.headers["x-team"] = Exact("a");
  api.port = 9080;
  root.match = {api, UriMatch(Prefix("/"))};
  HttpRoute::Match v1 = UriMatch(Prefix("/api/v1"));
  v1.headers["x-version"] = Exact("1");

  std::optional<HttpRoute> merged = MergeDelegateRoute(root, RouteWith({v1}), "team", "cluster.local");
  ASSERT_TRUE(merged.has_value());
  ASSERT_EQ(merged->match.size(), 2u) << "within both root matches";
  EXPECT_EQ(merged->match[0].uri->value, "/api/v1");
  EXPECT_EQ(merged->match[0].port, 9080u);
  EXPECT_EQ(merged->match[0].headers.size(), 2u);
  EXPECT_EQ(merged->match[1].port, 0u);
  EXPECT_EQ(merged->match[1].headers.size(), 1u);

  EXPECT_FALSE(MergeDelegateRoute(root, RouteWith({v1, UriMatch(Regex("/x"))}), "team", "cluster.local"))
      << "one of its matches within no root match: the route is left out, as in istiod";

  const std::optional<HttpRoute> no_leaf_match = MergeDelegateRoute(root, RouteWith({}), "team", "cluster.local");
  ASSERT_TRUE(no_leaf_match.has_value());
  EXPECT_EQ(no_leaf_match->match.size(), 2u) << "the root's matches";
  const std::optional<HttpRoute> no_root_match =
      MergeDelegateRoute(HttpRoute{}, RouteWith({v1}), "team", "cluster.local");
  ASSERT_TRUE(no_root_match.has_value());
  ASSERT_EQ(no_root_match->match.size(), 1u);
  EXPECT_EQ(no_root_match->match[0].uri->value, "/api/v1");
}

TEST(DelegateTest, TheRootsSettingsApplyWhereTheDelegatesRouteSetsNone) {
  HttpRoute root;
  root.name = "api";
  root.timeout = absl::Seconds(5);
  root.retries = HttpRoute::Retries{.attempts = 3};
  root.rewrite = HttpRoute::Rewrite{"/", "", "", ""};
  root.headers.request.set["x-root"] = "1";
  root.mirrors.push_back({{"mirror", "", 0, 0, {}}, 10});

  HttpRoute own = RouteWith({}, "reviews");
  own.name = "v1";
  own.timeout = absl::Seconds(1);
  own.mirrors.push_back({{"shadow", "", 0, 0, {}}, 50});
  std::optional<HttpRoute> merged = MergeDelegateRoute(root, own, "team", "cluster.local");
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->name, "api-v1");
  EXPECT_EQ(merged->timeout, absl::Seconds(1)) << "its own";
  ASSERT_TRUE(merged->retries.has_value());
  EXPECT_EQ(merged->retries->attempts, 3u) << "the root's";
  ASSERT_TRUE(merged->rewrite.has_value());
  EXPECT_EQ(merged->rewrite->uri, "/");
  EXPECT_EQ(merged->headers.request.set.at("x-root"), "1");
  // Its short names are of its own namespace; the root's (mirror) stay the root's to resolve.
  ASSERT_EQ(merged->route.size(), 1u);
  EXPECT_EQ(merged->route[0].host, "reviews.team.svc.cluster.local");
  ASSERT_EQ(merged->mirrors.size(), 1u);
  EXPECT_EQ(merged->mirrors[0].destination.host, "shadow.team.svc.cluster.local");
  EXPECT_EQ(merged->mirrors[0].percent, 50);

  HttpRoute redirect;
  redirect.redirect = HttpRoute::Redirect{.uri = "/new"};
  merged = MergeDelegateRoute(root, redirect, "team", "cluster.local");
  ASSERT_TRUE(merged.has_value());
  EXPECT_FALSE(merged->timeout.has_value()) << "nothing goes upstream from a redirect";
  EXPECT_FALSE(merged->rewrite.has_value());
  EXPECT_TRUE(merged->mirrors.empty());
  EXPECT_EQ(merged->headers.request.set.at("x-root"), "1") << "headers still apply";
  EXPECT_FALSE(merged->fault.has_value());
  root.fault = FaultInjection{.abort = FaultInjection::Abort{.http_status = 503}};
  merged = MergeDelegateRoute(root, redirect, "team", "cluster.local");
  ASSERT_TRUE(merged.has_value());
  ASSERT_TRUE(merged->fault.has_value()) << "the fault filter runs before the redirect, as istiod merges it";
  EXPECT_EQ(merged->fault->abort->http_status, 503u);
}

// istiod merges mirror, mirrorPercentage, mirrorPercent and mirrors each on its own.
TEST(DelegateTest, MirrorsAndTheirPercentagesAreMergedFieldByField) {
  HttpRoute root;
  root.mirrors.push_back({{"root-single", "", 0, 0, {}}, 30, /*single=*/true});
  root.mirrors.push_back({{"root-listed", "", 0, 0, {}}, 40});
  root.mirror_percentage = 30;

  HttpRoute own = RouteWith({}, "reviews");
  own.mirrors.push_back({{"own-single", "", 0, 0, {}}, 100, /*single=*/true});  // no percentage written
  std::optional<HttpRoute> merged = MergeDelegateRoute(root, own, "team", "cluster.local");
  ASSERT_TRUE(merged.has_value());
  ASSERT_EQ(merged->mirrors.size(), 2u) << "its mirror and the root's mirrors, both";
  EXPECT_EQ(merged->mirrors[0].destination.host, "own-single.team.svc.cluster.local");
  EXPECT_TRUE(merged->mirrors[0].single);
  EXPECT_EQ(merged->mirrors[0].percent, 30) << "the root's percentage";
  EXPECT_EQ(merged->mirrors[1].destination.host, "root-listed");
  EXPECT_FALSE(merged->mirrors[1].single);
  EXPECT_EQ(merged->mirrors[1].percent, 40);

  HttpRoute percentage_only = RouteWith({}, "reviews");
  percentage_only.mirror_percent = 5;  // the deprecated field: the root's mirrorPercentage still wins
  merged = MergeDelegateRoute(root, percentage_only, "team", "cluster.local");
  ASSERT_TRUE(merged.has_value());
  ASSERT_EQ(merged->mirrors.size(), 2u);
  EXPECT_EQ(merged->mirrors[0].destination.host, "root-single");
  EXPECT_EQ(merged->mirrors[0].percent, 30);

  root.mirror_percentage.reset();
  merged = MergeDelegateRoute(root, percentage_only, "team", "cluster.local");
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->mirrors.at(0).percent, 5) << "the delegate's mirrorPercent on the root's mirror";

  HttpRoute listed = RouteWith({}, "reviews");
  listed.mirrors.push_back({{"own-listed", "", 0, 0, {}}, 60});
  merged = MergeDelegateRoute(root, listed, "team", "cluster.local");
  ASSERT_TRUE(merged.has_value());
  ASSERT_EQ(merged->mirrors.size(), 2u) << "the root's mirror and its own mirrors";
  EXPECT_EQ(merged->mirrors[0].destination.host, "root-single");
  EXPECT_EQ(merged->mirrors[1].destination.host, "own-listed.team.svc.cluster.local");
}

constexpr char kDelegation[] = R"(apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: shop}
spec:
  ports: [{name: http, port: 9080}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: shop}
spec:
  hosts: [reviews]
  http:
  - name: api
    match: [{uri: {prefix: /api}}]
    delegate: {name: reviews-api, namespace: team}
    timeout: 5s
  - delegate: {name: missing}
  - delegate: {name: private, namespace: team}
  - route: [{destination: {host: reviews}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews-api, namespace: team}
spec:
  http:
  - name: v1
    match: [{uri: {prefix: /api/v1}}]
    route: [{destination: {host: reviews.shop.svc.cluster.local}}]
  - name: web
    match: [{uri: {prefix: /web}}]
    route: [{destination: {host: reviews.shop.svc.cluster.local}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: private, namespace: team}
spec:
  exportTo: ["."]
  http: [{route: [{destination: {host: reviews.shop.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: orphan, namespace: team}
spec:
  http: [{route: [{destination: {host: reviews.shop.svc.cluster.local}}]}]
)";

std::vector<std::string> Findings(const MeshContext& context) {
  std::vector<std::string> out;
  for (const ConfigWarning& w : context.findings()) {
    out.push_back(StrCat(w.key.namespace_name, "/", w.key.name, " ", w.field, " [", w.code, "] ", w.message));
  }
  return out;
}

TEST(DelegateTest, AContextServesTheRootWithItsDelegatesRoutesAndSaysWhatItLeavesOut) {
  ConfigStore store;
  const ConfigStore::Update update = store.ApplyFile("mesh.yaml", kDelegation);
  ASSERT_THAT(update.errors, IsEmpty()) << update.errors.front().ToString();
  MeshContext context("v", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");

  const std::vector<const VirtualService*> served = context.VirtualServicesFor("reviews.shop.svc.cluster.local");
  ASSERT_EQ(served.size(), 1u);
  std::vector<std::string> names;
  for (const HttpRoute& route : served[0]->http) names.push_back(route.name);
  EXPECT_THAT(names, ElementsAre("api-v1", "")) << "the delegate's /api/v1 route, then the root's own last route";
  EXPECT_EQ(served[0]->http[0].timeout, absl::Seconds(5));
  EXPECT_EQ(served[0]->http[0].match.at(0).uri->value, "/api/v1");
  EXPECT_FALSE(served[0]->http[0].delegate.has_value());
  // The stored objects are not changed by the merge.
  const auto& stored = std::get<VirtualService>(store.Snapshot()->at({"VirtualService", "shop", "reviews"})->object);
  EXPECT_EQ(stored.http.size(), 4u);

  const std::vector<std::string> findings = Findings(context);
  EXPECT_THAT(findings, ::testing::Contains(
                            "team/reviews-api spec.http[1].match [cxds_delegate_conflict] a match conflicts with every "
                            "match of spec.http[0] of VirtualService shop/reviews, which delegates to this one (it is "
                            "not within them): the route is not served there, as in istiod"));
  EXPECT_THAT(findings, ::testing::Contains("shop/reviews spec.http[1].delegate [IST0101] VirtualService shop/missing "
                                            "does not exist: this route is not served, as in istiod"));
  EXPECT_THAT(findings, ::testing::Contains("shop/reviews spec.http[2].delegate [IST0101] VirtualService team/private "
                                            "is not exported to namespace shop: this route is not served, as in "
                                            "istiod"));
  EXPECT_THAT(findings, ::testing::Contains(HasSubstr("team/orphan  [cxds_delegate_unused] no VirtualService with "
                                                      "hosts delegates to this one")));
  EXPECT_THAT(findings, ::testing::Contains(HasSubstr("team/private  [cxds_delegate_unused]")));
  EXPECT_EQ(findings.size(), 5u) << ::testing::PrintToString(findings);
}

// Delegation at a Gateway: the VirtualService bound to it is served merged there too; each
// merged route says where it was written (what config status names).
TEST(DelegateTest, AGatewayGetsTheMergedRoutesAndEachRouteKnowsWhereItWasWritten) {
  ConfigStore store;
  const ConfigStore::Update update = store.ApplyFile("edge.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: edge, namespace: shop}
spec:
  hosts: [shop.example.com]
  gateways: [ingress]
  http:
  - route: [{destination: {host: reviews}}]
    match: [{uri: {prefix: /static}}]
  - delegate: {name: shop-routes}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop-routes, namespace: shop}
spec:
  http:
  - route: [{destination: {host: reviews}}]
)");
  ASSERT_THAT(update.errors, IsEmpty()) << update.errors.front().ToString();
  MeshContext context("v", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  const std::vector<const VirtualService*> served = context.VirtualServicesOfGateway("shop/ingress", "shop");
  ASSERT_EQ(served.size(), 1u);
  ASSERT_EQ(served[0]->http.size(), 2u);
  ASSERT_TRUE(served[0]->http[0].origin.has_value());
  EXPECT_EQ(served[0]->http[0].origin->virtual_service, "shop/edge");
  EXPECT_EQ(served[0]->http[0].origin->index, 0u);
  ASSERT_TRUE(served[0]->http[1].origin.has_value());
  EXPECT_EQ(served[0]->http[1].origin->virtual_service, "shop/shop-routes");
  EXPECT_EQ(served[0]->http[1].origin->index, 0u);
  EXPECT_EQ(served[0]->http[1].route.at(0).host, "reviews.shop.svc.cluster.local");
}

// Delegation multiplies routes and matches: a context makes at most a bounded number, says
// where it stopped, and serves the rest of the VirtualService.
TEST(DelegateTest, TheMergeIsBounded) {
  std::string root_matches, delegate_matches;
  for (int i = 0; i < 300; ++i) root_matches += StrCat("{uri: {prefix: /p", i, "}}, ");
  for (int i = 0; i < 400; ++i) delegate_matches += StrCat("{uri: {prefix: /p0/", i, "}}, ");
  ConfigStore store;
  const ConfigStore::Update update = store.ApplyFile("big.yaml", StrCat(R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: big}
spec:
  hosts: [big.example.com]
  http:
  - match: [)",
                                                                        root_matches, R"(]
    delegate: {name: many}
  - route: [{destination: {host: big.example.com}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: many}
spec:
  http:
  - match: [)",
                                                                        delegate_matches, R"(]
    route: [{destination: {host: big.example.com}}]
)"));
  ASSERT_THAT(update.errors, IsEmpty()) << update.errors.front().ToString();
  MeshContext context("v", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  const std::vector<const VirtualService*> served = context.VirtualServicesFor("big.example.com");
  ASSERT_EQ(served.size(), 1u);
  ASSERT_EQ(served[0]->http.size(), 1u) << "the 120,000 merged matches are not made; the last route stays";
  EXPECT_THAT(Findings(context), ::testing::Contains(HasSubstr(
                                     "default/big spec.http[0].delegate [cxds_delegate_bound] merging the routes of "
                                     "default/many would copy more than 20000 route and match conditions for this "
                                     "VirtualService")));
}

// The delegate's side counts too: one match of many headers, merged with each of many root
// matches, is as much to copy as many matches.
TEST(DelegateTest, TheBoundCountsWhatTheDelegateBrings) {
  std::string root_matches, headers;
  for (int i = 0; i < 100; ++i) root_matches += StrCat("{uri: {prefix: /p", i, "}}, ");
  for (int i = 0; i < 300; ++i) headers += StrCat("h", i, ": {exact: v}, ");
  ConfigStore store;
  const ConfigStore::Update update = store.ApplyFile("wide.yaml", StrCat(R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: wide}
spec:
  hosts: [wide.example.com]
  http:
  - match: [)",
                                                                         root_matches, R"(]
    delegate: {name: headers}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: headers}
spec:
  http:
  - match: [{headers: {)",
                                                                         headers, R"(}}]
    route: [{destination: {host: wide.example.com}}]
)"));
  ASSERT_THAT(update.errors, IsEmpty()) << update.errors.front().ToString();
  MeshContext context("v", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  ASSERT_EQ(context.VirtualServicesFor("wide.example.com").size(), 1u);
  EXPECT_TRUE(context.VirtualServicesFor("wide.example.com")[0]->http.empty())
      << "over 30,000 header copies: over 20,000";
  EXPECT_THAT(Findings(context), ElementsAre(HasSubstr("[cxds_delegate_bound]")));
}

// Below each VirtualService's share, the context's bound still holds: the VirtualService that
// would pass it is told, and those before it are served.
TEST(DelegateTest, TheContextsBoundHoldsAcrossVirtualServices) {
  std::string root_matches, delegate_matches;
  for (int i = 0; i < 100; ++i) root_matches += StrCat("{uri: {prefix: /p", i, "}}, ");
  for (int i = 0; i < 90; ++i) delegate_matches += StrCat("{uri: {prefix: /p0/", i, "}}, ");
  std::string yaml = StrCat(R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: many}
spec:
  http:
  - match: [)",
                            delegate_matches, R"(]
    route: [{destination: {host: big.example.com}}]
)");
  // Each copies both routes (1 + 2) and 100 x 90 matches with the conditions of both sides
  // (2 x 9,000): 18,003, under its own share; five of them fit in the context's 100,000.
  for (int r = 1; r <= 6; ++r) {
    yaml += StrCat(R"(---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: r)",
                   r, R"(}
spec:
  hosts: [r)",
                   r, R"(.example.com]
  http:
  - match: [)",
                   root_matches, R"(]
    delegate: {name: many}
)");
  }
  ConfigStore store;
  const ConfigStore::Update update = store.ApplyFile("many.yaml", yaml);
  ASSERT_THAT(update.errors, IsEmpty()) << update.errors.front().ToString();
  MeshContext context("v", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  for (int r = 1; r <= 5; ++r) {
    ASSERT_EQ(context.VirtualServicesFor(StrCat("r", r, ".example.com")).size(), 1u);
    EXPECT_EQ(context.VirtualServicesFor(StrCat("r", r, ".example.com"))[0]->http.size(), 1u) << r;
  }
  ASSERT_EQ(context.VirtualServicesFor("r6.example.com").size(), 1u);
  EXPECT_TRUE(context.VirtualServicesFor("r6.example.com")[0]->http.empty());
  EXPECT_THAT(Findings(context), ElementsAre(HasSubstr("default/r6 spec.http[0].delegate [cxds_delegate_bound] "
                                                       "merging the routes of default/many would copy more than "
                                                       "100000 route and match conditions in all")));
}

// Service reviews of shop, whose DestinationRule (subset v2) is exported to shop alone.
constexpr char kReviewsWithAPrivateRule[] = R"(apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: shop}
spec:
  ports: [{name: http, port: 9080}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: shop}
spec:
  host: reviews
  exportTo: ["."]
  subsets: [{name: v2, labels: {version: v2}}]
---
)";

// A delegate's subsets are checked against the rule the proxies that get its routes use: those
// of the delegating VirtualService's namespace, not the delegate's own.
TEST(DelegateTest, ADelegatesSubsetsAreCheckedWhereItsRoutesAreServed) {
  ConfigStore store(ConfigStore::Options{.check_references = MeshReferenceCheck("cluster.local")});
  const std::string mesh = std::string(kReviewsWithAPrivateRule) + R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: shop}
spec:
  hosts: [reviews]
  http: [{delegate: {name: rollout, namespace: team}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: rollout, namespace: team}
spec:
  http: [{route: [{destination: {host: reviews.shop.svc.cluster.local, subset: SUBSET}}]}]
)";
  const ConfigStore::Update good = store.ApplyFile("mesh.yaml", absl::StrReplaceAll(mesh, {{"SUBSET", "v2"}}));
  EXPECT_THAT(good.errors, IsEmpty()) << "the rule of shop, where the routes are served, defines v2";
  const ConfigStore::Update bad = store.ApplyFile("mesh.yaml", absl::StrReplaceAll(mesh, {{"SUBSET", "v9"}}));
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_THAT(
      bad.errors[0].ToString(),
      HasSubstr("VirtualService team/rollout: spec.http[0].route[0].destination.subset: subset \"v9\" is not "
                "defined by DestinationRule shop/reviews (host reviews.shop.svc.cluster.local, the rule proxies "
                "of namespace shop get, where a VirtualService delegating to this one is served)"));
}

// Where several rules by workload selector apply in the namespace a delegate's routes are served
// in, the message names them and says why that namespace, which is not the delegate's own.
TEST(DelegateTest, ADelegatesSubsetMissingFromSelectedRulesSaysWhereItIsServed) {
  ConfigStore store(ConfigStore::Options{.check_references = MeshReferenceCheck("cluster.local")});
  const ConfigStore::Update update = store.ApplyFile("mesh.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: shop}
spec:
  ports: [{name: http, port: 9080}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: canary, namespace: shop}
spec:
  host: reviews
  workloadSelector: {matchLabels: {app: canary}}
  subsets: [{name: v2, labels: {version: v2}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: beta, namespace: shop}
spec:
  host: reviews
  workloadSelector: {matchLabels: {track: beta}}
  subsets: [{name: v3, labels: {version: v3}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: shop}
spec:
  hosts: [reviews]
  http: [{delegate: {name: rollout, namespace: team}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: rollout, namespace: team}
spec:
  http: [{route: [{destination: {host: reviews.shop.svc.cluster.local, subset: v9}}]}]
)");
  ASSERT_EQ(update.errors.size(), 1u);
  EXPECT_THAT(update.errors[0].ToString(),
              HasSubstr("VirtualService team/rollout: spec.http[0].route[0].destination.subset: subset \"v9\" of "
                        "reviews.shop.svc.cluster.local is not defined by any DestinationRule proxies of namespace "
                        "shop get (shop/beta, shop/canary: by their workload selectors, or none); a VirtualService "
                        "delegating to this one is served there"));
}

// A VirtualService that starts delegating from a namespace whose rule lacks the delegate's
// subset is what is refused: neither the delegate nor the rule changed.
TEST(DelegateTest, ANewDelegatingVirtualServiceThatBreaksADelegatesSubsetIsRefused) {
  ConfigStore store(ConfigStore::Options{.check_references = MeshReferenceCheck("cluster.local")});
  const ConfigStore::Update base =
      store.ApplyFile("mesh.yaml", std::string(kReviewsWithAPrivateRule) + R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: rollout, namespace: team}
spec:
  http: [{route: [{destination: {host: reviews.shop.svc.cluster.local, subset: v2}}]}]
)");
  ASSERT_THAT(base.errors, IsEmpty());
  const ConfigStore::Update added = store.ApplyFile("elsewhere.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: other}
spec:
  hosts: [web.other.svc.cluster.local]
  http: [{delegate: {name: rollout, namespace: team}}]
)");
  ASSERT_EQ(added.errors.size(), 1u) << "the rule of shop is not exported to other";
  EXPECT_EQ(added.errors[0].file, "elsewhere.yaml");
  EXPECT_EQ(store.Snapshot()->count({"VirtualService", "other", "web"}), 0u) << "refused, not served";
}

// Istio's validation of delegation, each refusal where it is.
TEST(DelegateTest, TheParserRefusesWhatIstioRefuses) {
  const auto errors_of = [](const std::string& spec) {
    ConfigStore store;
    std::vector<std::string> out;
    const ConfigStore::Update update = store.ApplyFile(
        "vs.yaml", "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec:\n" + spec);
    for (const ConfigError& e : update.errors) out.push_back(e.ToString());
    return out;
  };
  EXPECT_THAT(errors_of("  gateways: [edge]\n  http: [{route: [{destination: {host: a}}]}]\n"),
              ElementsAre(HasSubstr("spec.gateways: must not be set without spec.hosts")));
  EXPECT_THAT(errors_of("  tcp: [{route: [{destination: {host: a}}]}]\n"),
              ElementsAre(HasSubstr("spec.tcp: must not be set without spec.hosts"),
                          HasSubstr("spec.http: is required without spec.hosts")));
  EXPECT_THAT(errors_of("  http: [{delegate: {name: d}}]\n"),
              ElementsAre(HasSubstr("spec.http[0].delegate: cannot be set in a delegate VirtualService")));
  EXPECT_THAT(errors_of("  hosts: [a]\n  http: [{delegate: {name: d}, redirect: {uri: /b}}]\n"),
              ElementsAre(HasSubstr("spec.http[0].redirect: cannot be used with delegate")));
  EXPECT_THAT(errors_of("  hosts: [a]\n  http: [{delegate: {name: d}, directResponse: {status: 200}}]\n"),
              ElementsAre(HasSubstr("spec.http[0].directResponse: with delegate is not supported by cxds")));
  EXPECT_THAT(errors_of("  hosts: [a]\n  http: [{delegate: {namespace: team}}]\n"),
              ElementsAre(HasSubstr("spec.http[0].delegate.name: is required")));
  EXPECT_THAT(errors_of("  hosts: [a]\n  http: [{delegate: {name: d, namespace: Team}}]\n"),
              ElementsAre(HasSubstr("spec.http[0].delegate.namespace: must be a namespace name")));
  EXPECT_THAT(errors_of("  hosts: [a]\n  http: [{delegate: {name: d}, timeout: 1s}]\n"), IsEmpty());
}

}  // namespace
}  // namespace cxds
