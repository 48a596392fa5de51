#include "config/yaml_loader.h"

#include <cstdlib>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/strings.h"
#include "fakes/test_pki.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

std::string Errors(const ParsedFile& parsed) {
  std::string out;
  for (const ConfigError& e : parsed.errors) out += e.ToString() + "\n";
  return out;
}

// "field: message" of the only error parsing `text` gives, or all of them if not exactly one.
std::string OnlyError(const std::string& text) {
  const ParsedFile parsed = ParseConfigFile("x.yaml", text);
  return parsed.errors.size() == 1 ? parsed.errors[0].field + ": " + parsed.errors[0].message : Errors(parsed);
}

TEST(YamlLoaderTest, ParsesEverySupportedKind) {
  const ParsedFile parsed = ParseConfigFile("mesh.yaml", R"(
apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: shop}
spec:
  selector: {app: reviews}
  ports: [{name: http, port: 9080, appProtocol: http}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: reviews-abc
  namespace: shop
  labels: {kubernetes.io/service-name: reviews}
addressType: IPv4
ports: [{name: http, port: 9080}]
endpoints:
- addresses: [127.0.0.10]
- addresses: [127.0.0.11]
  conditions: {ready: false}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: inventory}
spec:
  hosts: [inventory.mesh.local]
  ports: [{number: 8080, name: grpc, protocol: GRPC}]
  resolution: STATIC
  workloadSelector: {labels: {app: inventory}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: inventory-1}
spec: {address: 127.0.0.1, ports: {grpc: 18081}, labels: {app: inventory, version: v1}, weight: 3}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: inventory}
spec:
  hosts: [inventory.mesh.local]
  http:
  - match: [{headers: {x-canary: {exact: "yes"}}}]
    route: [{destination: {host: inventory.mesh.local, subset: v2}}]
  - route:
    - {destination: {host: inventory.mesh.local, subset: v1}, weight: 80}
    - {destination: {host: inventory.mesh.local, subset: v2, port: {number: 8080}}, weight: 20}
    timeout: 2s
    retries: {attempts: 3, perTryTimeout: 500ms, retryOn: unavailable}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: inventory}
spec:
  host: inventory.mesh.local
  trafficPolicy:
    loadBalancer: {simple: ROUND_ROBIN}
    outlierDetection: {consecutive5xxErrors: 5, interval: 10s, baseEjectionTime: 30s}
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: shop}
spec:
  egress: [{hosts: ["./*", "default/inventory.mesh.local"]}]
)");
  EXPECT_TRUE(parsed.errors.empty()) << Errors(parsed);
  ASSERT_EQ(parsed.documents.size(), 7u);
  std::vector<std::string> kinds;
  for (const auto& d : parsed.documents) kinds.push_back(KindOf(d.object));
  EXPECT_EQ(kinds, (std::vector<std::string>{"Service", "EndpointSlice", "ServiceEntry", "WorkloadEntry",
                                             "VirtualService", "DestinationRule", "Sidecar"}));
  const auto& slice = std::get<EndpointSlice>(parsed.documents[1].object);
  EXPECT_EQ(slice.service_name, "reviews");
  EXPECT_FALSE(slice.endpoints[1].ready);
  const auto& vs = std::get<VirtualService>(parsed.documents[4].object);
  ASSERT_EQ(vs.http.size(), 2u);
  EXPECT_EQ(vs.http[1].route[0].weight, 80u);
  EXPECT_EQ(vs.http[1].route[1].port, 8080u);
  EXPECT_EQ(*vs.http[1].timeout, absl::Seconds(2));
  EXPECT_EQ(vs.http[1].retries->attempts, 3u);
  const auto& we = std::get<WorkloadEntry>(parsed.documents[3].object);
  EXPECT_EQ(we.spec.ports.at("grpc"), 18081u);
  EXPECT_EQ(parsed.documents[2].position.line, 22);
}

TEST(YamlLoaderTest, ErrorsNameFileLineObjectAndField) {
  const ParsedFile parsed = ParseConfigFile("dir/vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: inventory}
spec:
  hosts: [inventory.mesh.local]
  http:
  - route:
    - destination: {host: inventory.mesh.local}
      weight: eighty
)");
  ASSERT_EQ(parsed.errors.size(), 1u) << Errors(parsed);
  EXPECT_EQ(parsed.errors[0].ToString(),
            "dir/vs.yaml:9: VirtualService default/inventory: spec.http[0].route[0].weight: must be an integer from 0 "
            "to 100, got \"eighty\"");
  EXPECT_TRUE(parsed.documents.empty());
  ASSERT_EQ(parsed.failed.size(), 1u);
  EXPECT_EQ(parsed.failed[0].name, "inventory");
}

// Every duration Istio checks with ValidateDuration is at least 1ms and a whole number of
// milliseconds: outlier detection's too, which cxds read as any duration before.
TEST(YamlLoaderTest, IstioDurationsAreWholeMilliseconds) {
  const auto dr = [](const std::string& policy) {
    return ParseConfigFile("dr.yaml", StrCat("apiVersion: networking.istio.io/v1\nkind: DestinationRule\n"
                                             "metadata: {name: api}\nspec:\n  host: api\n  trafficPolicy: ",
                                             policy, "\n"));
  };
  const auto outlier = [&](const std::string& fields) { return dr(StrCat("{outlierDetection: ", fields, "}")); };
  const ParsedFile good = outlier("{interval: 1500ms, baseEjectionTime: 1.5s}");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const auto& policy = *std::get<DestinationRule>(good.documents[0].object).traffic_policy;
  EXPECT_EQ(policy.outlier_detection->interval, absl::Milliseconds(1500));
  EXPECT_EQ(policy.outlier_detection->base_ejection_time, absl::Milliseconds(1500));

  const std::string prefix = "dr.yaml:6: DestinationRule default/api: spec.trafficPolicy.outlierDetection.";
  EXPECT_EQ(Errors(outlier("{interval: 1.5ms}")),
            prefix + "interval: must be a whole number of milliseconds, as Istio validates durations, got \"1.5ms\"\n");
  EXPECT_EQ(Errors(outlier("{baseEjectionTime: 0s}")), prefix + "baseEjectionTime: must be at least 1ms\n");
  EXPECT_EQ(Errors(outlier("{interval: 10s, baseEjectionTime: 30000001us}")),
            prefix +
                "baseEjectionTime: must be a whole number of milliseconds, as Istio validates durations, got "
                "\"30000001us\"\n");

  // A TCP idle timeout under 1ms, 0s (none) included, is not checked by Istio.
  const auto pool = [&](const std::string& idle) {
    return dr(StrCat("{connectionPool: {tcp: {idleTimeout: ", idle, "}}}"));
  };
  for (const std::string idle : {"0s", "500us"}) EXPECT_EQ(Errors(pool(idle)), "") << idle;
  EXPECT_THAT(Errors(pool("1500us")), ::testing::HasSubstr("tcp.idleTimeout: must be a whole number of milliseconds"));

  const ParsedFile timeout = ParseConfigFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: api}
spec:
  hosts: [api]
  http:
  - route: [{destination: {host: api}}]
    timeout: 2500us
)");
  EXPECT_EQ(Errors(timeout),
            "vs.yaml:8: VirtualService default/api: spec.http[0].timeout: must be a whole number of milliseconds, as "
            "Istio validates durations, got \"2500us\"\n");
}

// An explicit YAML tag must fit its text, as go-yaml v2 (Kubernetes' and Istio's decoder)
// requires: `!!int abc` fails to decode there, so the document is refused here, once, at the
// tagged value, and not read further. A tag that fits is read as before; !!float takes an
// integer; !!str makes anything a string.
TEST(YamlLoaderTest, ExplicitTagsMustFitTheirValues) {
  const auto vs = [](const std::string& subset, const std::string& weight) {
    return ParseConfigFile("vs.yaml", StrCat(R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v}
spec:
  hosts: [a.mesh.local]
  http:
  - route: [{destination: {host: a.mesh.local, subset: )",
                                             subset, "}, weight: ", weight, "}]\n"));
  };
  EXPECT_EQ(Errors(vs("!!str yes", "!!int 100")), "");
  EXPECT_EQ(Errors(vs("v1", "!!int 0x64")), "");
  EXPECT_EQ(Errors(vs("!!str 1", "100")), "");
  const ParsedFile tagged = vs("!!str on", "!!int \"100\"");
  ASSERT_EQ(tagged.documents.size(), 1u) << Errors(tagged);
  const auto& route = std::get<VirtualService>(tagged.documents[0].object).http[0].route[0];
  EXPECT_EQ(route.subset, "on");
  EXPECT_EQ(route.weight, 100u);

  const std::string at = "vs.yaml:7: VirtualService default/v: spec.http[0].route[0].";
  EXPECT_EQ(Errors(vs("!!int abc", "100")),
            at + "destination.subset: is tagged !!int but \"abc\" reads as !!str: Kubernetes and Istio cannot decode "
                 "it; remove the tag or fix the value\n");
  EXPECT_EQ(Errors(vs("v1", "!!bool 100")),
            at + "weight: is tagged !!bool but \"100\" reads as !!int: Kubernetes and Istio cannot decode it; remove "
                 "the tag or fix the value\n")
      << "said once: the weight's own check does not run on a document that cannot be decoded";
  EXPECT_THAT(Errors(vs("!!int 1.5", "100")), ::testing::HasSubstr("is tagged !!int but \"1.5\" reads as !!float"));
  EXPECT_THAT(Errors(vs("!!float v1", "100")), ::testing::HasSubstr("is tagged !!float but \"v1\" reads as !!str"));
  EXPECT_THAT(Errors(vs("!!int ~", "100")), ::testing::HasSubstr("is tagged !!int but \"~\" reads as !!null"));
  EXPECT_THAT(Errors(vs("!!bool On", "!!float 1e400")),
              ::testing::HasSubstr("weight: is tagged !!float but \"1e400\" reads as !!str"))
      << "a float that overflows stays a string in go-yaml";
  EXPECT_THAT(Errors(vs("v1", "!!float 9223372036854775808")),
              ::testing::HasSubstr("weight: is tagged !!float but \"9223372036854775808\" reads as !!int past int64"))
      << "go-yaml converts only a signed integer to a float";
  EXPECT_EQ(Errors(vs("!!int a", "!!bool 1")),
            at + "destination.subset: is tagged !!int but \"a\" reads as !!str: Kubernetes and Istio cannot decode it; "
                 "remove the tag or fix the value\n")
      << "the first mismatch only, as go-yaml stops there";
  EXPECT_THAT(Errors(vs("!!binary djE=", "100")),
              ::testing::HasSubstr("destination.subset: a !!binary (base64) scalar is not supported by cxds"));
  // !!timestamp: refused as go-yaml refuses it unless it is a timestamp as go-yaml parses one;
  // one that is (go-yaml makes it a time, written back as RFC 3339 text) is not supported.
  for (const char* bad :
       {"abc", "2001-02-29", "2000-13-01", "2001-12-14T24:00:00Z", "2001-12-14T21:59:43", "2001-12-14t21:59:43.10-5",
        "01-12-14", "2001-12-14 21:59:43 +05:00", "2001-12-14T1:2:3+25:00"}) {
    EXPECT_THAT(Errors(vs(StrCat("!!timestamp \"", bad, "\""), "100")),
                ::testing::HasSubstr(StrCat("destination.subset: is tagged !!timestamp but \"", bad, "\" reads as !!")))
        << bad;
  }
  EXPECT_THAT(Errors(vs("!!timestamp 12", "100")),
              ::testing::HasSubstr("is tagged !!timestamp but \"12\" reads as !!int"));
  for (const char* good : {"2001-12-14", "2000-2-29", "2001-12-14T21:59:43.10-05:00", "2001-1-2t3:4:5Z",
                           "2001-12-14 21:59:43,5", "2001-12-14T21:59:43+24:00", "2001-12-14   21:59:43"}) {
    EXPECT_THAT(Errors(vs(StrCat("!!timestamp \"", good, "\""), "100")),
                ::testing::HasSubstr("destination.subset: a !!timestamp scalar is not supported by cxds"))
        << good;
  }
  EXPECT_EQ(Errors(vs("\"2001-12-14\"", "100")), "") << "untagged, a timestamp-like text is a string";
  EXPECT_TRUE(vs("!!int abc", "100").documents.empty());
  EXPECT_EQ(vs("!!int abc", "100").failed.size(), 1u) << "refused as the named object it is";
}

// As Istio validates them: a count of local-origin failures without splitting them out means
// nothing, so it is an error at the field; minHealthPercent is a percentage; h2UpgradePolicy is
// one of its three names.
TEST(YamlLoaderTest, TrafficPolicyValuesAreCheckedAsIstioChecksThem) {
  const ParsedFile parsed = ParseConfigFile("dr.yaml", R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api}
spec:
  host: api
  trafficPolicy:
    outlierDetection:
      consecutiveLocalOriginFailures: 3
      minHealthPercent: 101
    connectionPool: {http: {h2UpgradePolicy: SOMETIMES}}
)");
  ASSERT_EQ(parsed.errors.size(), 3u) << Errors(parsed);
  EXPECT_THAT(Errors(parsed),
              ::testing::HasSubstr("dr.yaml:8: DestinationRule default/api: "
                                   "spec.trafficPolicy.outlierDetection.consecutiveLocalOriginFailures: needs "
                                   "splitExternalLocalOriginErrors: true"));
  EXPECT_THAT(Errors(parsed), ::testing::HasSubstr("spec.trafficPolicy.outlierDetection.minHealthPercent"));
  EXPECT_THAT(Errors(parsed), ::testing::HasSubstr("spec.trafficPolicy.connectionPool.http.h2UpgradePolicy: must be "
                                                   "one of DEFAULT, DO_NOT_UPGRADE, UPGRADE"));
  EXPECT_TRUE(parsed.documents.empty());
}

// retries as Istio validates them: retryOn lists Envoy's retry conditions and HTTP status codes
// (taken apart here, as istiod does), attempts may be left out (then 0: no retries), and
// durations are at least 1ms.
TEST(YamlLoaderTest, RetriesSplitStatusCodesFromConditions) {
  const ParsedFile parsed = ParseConfigFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: api}
spec:
  hosts: [api]
  http:
  - route: [{destination: {host: api}}]
    retries: {attempts: 3, retryOn: "5xx, 503,unavailable,,504", backoff: 50ms, retryIgnorePreviousHosts: false}
  - route: [{destination: {host: api}}]
    retries: {retryOn: reset}
)");
  ASSERT_TRUE(parsed.errors.empty()) << Errors(parsed);
  const auto& vs = std::get<VirtualService>(parsed.documents.at(0).object);
  const HttpRoute::Retries& retries = *vs.http[0].retries;
  EXPECT_EQ(retries.retry_on, "5xx,unavailable");
  EXPECT_EQ(retries.status_codes, (std::vector<uint32_t>{503, 504}));
  EXPECT_EQ(retries.backoff, absl::Milliseconds(50));
  EXPECT_EQ(retries.ignore_previous_hosts, false);
  EXPECT_FALSE(retries.remote_localities);
  EXPECT_EQ(vs.http[1].retries->attempts, 0u) << "no attempts: retries off, not an error";

  const ParsedFile bad = ParseConfigFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: api}
spec:
  hosts: [api]
  http:
  - route: [{destination: {host: api}}]
    retries: {attempts: 2, retryOn: "5xx,on-tuesdays,700", perTryTimeout: 0s}
    timeout: 0s
)");
  EXPECT_THAT(Errors(bad), ::testing::HasSubstr("spec.http[0].retries.retryOn: \"on-tuesdays\" is not a retry "
                                                "condition (one of 5xx, gateway-error"));
  EXPECT_THAT(Errors(bad), ::testing::HasSubstr("spec.http[0].retries.retryOn: \"700\" is not an HTTP status code"));
  EXPECT_THAT(Errors(bad), ::testing::HasSubstr("spec.http[0].retries.perTryTimeout: must be at least 1ms"));
  EXPECT_THAT(Errors(bad), ::testing::HasSubstr("spec.http[0].timeout: must be at least 1ms"))
      << "as Istio validates it: no timeout is written as none";
  EXPECT_TRUE(bad.documents.empty());
}

// ServiceEntry addresses: IP addresses; a CIDR range is valid Istio that cxds does not support;
// anything else is invalid, as in Istio.
TEST(YamlLoaderTest, ServiceEntryAddressesAreIpAddressesAndCidrRangesAreNotSupported) {
  const std::string head = R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api}
spec:
  hosts: [api.example.com]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.2}]
  subjectAltNames: [api.example.com]
)";
  // One spelling each (Envoy would refuse "::1" and "0:0::1" as one domain named twice); a
  // full-length prefix is the address, as istiod reads it.
  const ParsedFile good =
      ParseConfigFile("x.yaml", head + "  addresses: [127.0.0.9, \"0:0:0:0:0:0:0:1\", 127.0.0.10/32, \"::1/128\"]\n");
  ASSERT_TRUE(good.errors.empty()) << Errors(good);
  const auto& se = std::get<ServiceEntry>(good.documents.at(0).object);
  EXPECT_THAT(se.addresses, ::testing::ElementsAre("127.0.0.9", "::1", "127.0.0.10", "::1"));
  EXPECT_THAT(se.subject_alt_names, ::testing::ElementsAre("api.example.com"));
  EXPECT_THAT(OnlyError(head + "  addresses: [127.0.0.0/8]\n"),
              ::testing::StartsWith("spec.addresses[0]: a CIDR range is not supported by cxds"));
  EXPECT_EQ(OnlyError(head + "  addresses: [api.internal]\n"),
            "spec.addresses[0]: must be an IP address or a CIDR range, got \"api.internal\"");
  EXPECT_EQ(OnlyError(head + "  addresses: [banana/8]\n"),
            "spec.addresses[0]: must be an IP address or a CIDR range, got \"banana/8\"");
  EXPECT_EQ(OnlyError(head + "  addresses: [127.0.0.1/abc]\n"),
            "spec.addresses[0]: must be an IP address or a CIDR range, got \"127.0.0.1/abc\"");
  EXPECT_EQ(OnlyError(head + "  addresses: [127.0.0.1/33]\n"),
            "spec.addresses[0]: must be an IP address or a CIDR range, got \"127.0.0.1/33\"");
}

// ServiceEntry exportTo as Istio validates it; VirtualService and DestinationRule still take
// only "*".
TEST(YamlLoaderTest, ServiceEntryExportToIsCheckedAsIstioChecksIt) {
  const auto errors_of = [](const std::string& export_to) {
    return Errors(ParseConfigFile("se.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: a}
spec:
  resolution: STATIC
  hosts: [a.mesh.local]
  ports: [{number: 80, name: http}]
  exportTo: )" + export_to + "\n"));
  };
  EXPECT_EQ(errors_of("[\".\", web, shop]"), "");
  EXPECT_EQ(errors_of("[\"~\"]"), "");
  EXPECT_THAT(errors_of("[\"*\", web]"), ::testing::HasSubstr("spec.exportTo[0]: \"*\" must be the only entry"));
  EXPECT_THAT(errors_of("[web, web]"), ::testing::HasSubstr("spec.exportTo[1]: \"web\" is listed twice"));
  EXPECT_THAT(errors_of("[Web]"), ::testing::HasSubstr("spec.exportTo[0]: must be \"*\", \".\", \"~\" or a namespace"));
}

// VirtualServices and DestinationRules take exportTo as ServiceEntries do, but for "~", which
// Istio allows a ServiceEntry only; tcp and tls routes for the mesh cannot differ by namespace
// (shared listeners), so those are refused narrowed.
TEST(YamlLoaderTest, VirtualServiceAndDestinationRuleExportToAreCheckedAsIstioChecksThem) {
  const auto vs_errors = [](const std::string& export_to, const std::string& routes) {
    return Errors(ParseConfigFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: a, namespace: web}
spec:
  hosts: [a.mesh.local]
  gateways: [mesh, edge]
  exportTo: )" + export_to + "\n" + routes));
  };
  const std::string http = "  http: [{route: [{destination: {host: a.mesh.local}}]}]\n";
  const std::string tcp = "  tcp: [{route: [{destination: {host: a.mesh.local}}]}]\n";
  const std::string tcp_at_edge =
      "  tcp: [{match: [{gateways: [edge]}], route: [{destination: {host: a.mesh.local}}]}]\n";
  EXPECT_EQ(vs_errors("[\".\"]", http), "");
  EXPECT_THAT(vs_errors("[\"~\"]", http),
              ::testing::HasSubstr("spec.exportTo[0]: \"~\" (no namespace) is allowed for a ServiceEntry only, as "
                                   "Istio validates: export to \".\" to keep it to this namespace"));
  EXPECT_THAT(vs_errors("[\".\", web]", http),
              ::testing::HasSubstr("spec.exportTo[1]: \".\" and \"web\" both name this namespace: list it once"));
  EXPECT_EQ(vs_errors("[\".\", shop]", http + tcp_at_edge), "");
  EXPECT_EQ(vs_errors("[\"*\"]", tcp), "");
  EXPECT_THAT(vs_errors("[\".\"]", tcp),
              ::testing::HasSubstr("spec.exportTo: exportTo other than \"*\" on a VirtualService with tcp or tls "
                                   "routes for the mesh is not supported by cxds"));
  EXPECT_THAT(vs_errors("[\"*\", web]", http), ::testing::HasSubstr("spec.exportTo[0]: \"*\" must be the only entry"));
  const auto dr_errors = [](const std::string& export_to) {
    return Errors(ParseConfigFile("dr.yaml", R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: a}
spec:
  host: a.mesh.local
  exportTo: )" + export_to + "\n"));
  };
  EXPECT_EQ(dr_errors("[\".\", web]"), "");
  EXPECT_THAT(dr_errors("[\"~\"]"), ::testing::HasSubstr("is allowed for a ServiceEntry only"));
  EXPECT_THAT(dr_errors("[web, web]"), ::testing::HasSubstr("spec.exportTo[1]: \"web\" is listed twice"));
  EXPECT_THAT(dr_errors("[default, default]"), ::testing::HasSubstr("spec.exportTo[1]: \"default\" is listed twice"));
  EXPECT_THAT(dr_errors("[\".\", web, web]"), ::testing::HasSubstr("spec.exportTo[2]: \"web\" is listed twice"));
  EXPECT_THAT(dr_errors("[\".\", default]"),
              ::testing::HasSubstr("spec.exportTo[1]: \".\" and \"default\" both name this namespace"));
}

// An endpoint's locality (ServiceEntry endpoints, WorkloadEntries) is read as Istio writes it;
// network and serviceAccount stay unsupported.
TEST(YamlLoaderTest, EndpointLocalityIsReadAndBounded) {
  const ParsedFile ok = ParseConfigFile("we.yaml", R"(apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1}
spec: {address: 127.0.0.7, locality: us-east/us-east-1a/rack-2}
)");
  ASSERT_EQ(Errors(ok), "");
  EXPECT_EQ(std::get<WorkloadEntry>(ok.documents.at(0).object).spec.locality, "us-east/us-east-1a/rack-2");
  const ParsedFile spaced = ParseConfigFile("we.yaml", R"(apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1}
spec: {address: 127.0.0.7, locality: "us east"}
)");
  EXPECT_THAT(Errors(spaced), ::testing::HasSubstr("spec.locality: must not contain spaces or control characters"));
  const ParsedFile network = ParseConfigFile("we.yaml", R"(apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1}
spec: {address: 127.0.0.7, network: vpc-1}
)");
  EXPECT_THAT(Errors(network), ::testing::HasSubstr("spec.network: is not supported by cxds"));
}

// localityLbSetting is checked as Istio validates it.
TEST(YamlLoaderTest, LocalityLbSettingIsCheckedAsIstioChecksIt) {
  const auto errors_of = [](const std::string& setting) {
    return Errors(ParseConfigFile("dr.yaml", R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: a}
spec:
  host: a.mesh.local
  trafficPolicy:
    loadBalancer:
      localityLbSetting: )" + setting + "\n"));
  };
  EXPECT_EQ(errors_of(R"({distribute: [{from: "us-east/*", to: {"us-east/a": 70, "eu-west/*": 30}}]})"), "");
  EXPECT_EQ(errors_of(R"({enabled: false})"), "");
  EXPECT_EQ(errors_of(R"({failover: [{from: us-east, to: eu-west}]})"), "");
  EXPECT_THAT(errors_of(R"({distribute: [{from: us-east, to: {us-east: 70}}]})"),
              ::testing::HasSubstr("weights must add up to 100 (they add up to 70)"));
  EXPECT_THAT(errors_of(R"({distribute: [{from: "*/a", to: {us-east: 100}}]})"),
              ::testing::HasSubstr("distribute[0].from: may use '*' only at its end (as Istio validates)"));
  EXPECT_THAT(errors_of(R"({failover: [{from: us-east, to: us-east}]})"),
              ::testing::HasSubstr("from and to must be different regions"));
  EXPECT_THAT(errors_of(R"({failover: [{from: us-east/a, to: eu-west}]})"),
              ::testing::HasSubstr("failover[0].from: must be a region"));
  EXPECT_THAT(errors_of(R"({failover: [{from: a, to: b}], distribute: [{from: a, to: {b: 100}}]})"),
              ::testing::HasSubstr("give distribute or failover, not both"));
  // failoverPriority: labels, or "label=value"; with failover, not the labels failover orders by.
  EXPECT_EQ(errors_of(R"({failoverPriority: [topology.istio.io/network, "topology.kubernetes.io/zone=z1", x]})"), "");
  EXPECT_EQ(errors_of(R"({failoverPriority: [topology.istio.io/network], failover: [{from: a, to: b}]})"), "");
  EXPECT_THAT(errors_of(R"({failoverPriority: [app, topology.kubernetes.io/zone], failover: [{from: a, to: b}]})"),
              ::testing::HasSubstr("failoverPriority[1]: topology label topology.kubernetes.io/zone cannot be given "
                                   "with failover (as Istio validates)"));
  EXPECT_THAT(errors_of(R"({failoverPriority: [{a: b}]})"),
              ::testing::HasSubstr("failoverPriority[0]: must be a string"));
  std::string many = "{failoverPriority: [l0";
  for (int i = 1; i < 33; ++i) many += StrCat(", l", i);
  EXPECT_EQ(errors_of(many.substr(0, many.rfind(',')) + "]}"), "") << "32 labels";
  EXPECT_THAT(errors_of(many + "]}"),
              ::testing::HasSubstr("failoverPriority: more than 32 labels is not supported by cxds (there are 33)"));
}

TEST(YamlLoaderTest, UnknownFieldsAndKindsAreErrorsNeverIgnored) {
  const ParsedFile parsed = ParseConfigFile("x.yaml", R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: a}
spec:
  host: a.local
  trafficPolicy: {outlierDetection: {consecutiveErrors: 5}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: g}
spec: {}
)");
  ASSERT_EQ(parsed.errors.size(), 2u) << Errors(parsed);
  EXPECT_EQ(parsed.errors[0].field, "spec.trafficPolicy.outlierDetection.consecutiveErrors");
  EXPECT_EQ(parsed.errors[0].line, 6);
  EXPECT_EQ(parsed.errors[0].message, "is not supported by cxds") << "a field of Istio's API";
  EXPECT_EQ(parsed.errors[1].line, 9) << "the kind line";
  EXPECT_NE(parsed.errors[1].message.find("kind \"AuthorizationPolicy\" is not supported by cxds"), std::string::npos);
  EXPECT_TRUE(parsed.unidentified_failure);
}

// A DestinationRule's workloadSelector, as Istio validates it: matchLabels, no wildcard, and
// exported to its own namespace at most.
TEST(YamlLoaderTest, DestinationRuleWorkloadSelectorIsReadAsIstioValidatesIt) {
  const std::string head =
      "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d, "
      "namespace: shop}\nspec:\n  host: a.mesh.local\n";
  const ParsedFile good =
      ParseConfigFile("dr.yaml", head + "  workloadSelector: {matchLabels: {app: canary}}\n  exportTo: [shop]\n");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const auto& rule = std::get<DestinationRule>(good.documents[0].object);
  ASSERT_TRUE(rule.workload_selector.has_value());
  EXPECT_EQ(*rule.workload_selector, (LabelMap{{"app", "canary"}}));
  const ParsedFile empty = ParseConfigFile("dr.yaml", head + "  workloadSelector: {}\n");
  ASSERT_EQ(empty.documents.size(), 1u) << Errors(empty);
  EXPECT_EQ(std::get<DestinationRule>(empty.documents[0].object).workload_selector, LabelMap{})
      << "no labels: every workload of the namespace, as Istio reads it (with a warning there)";
  EXPECT_EQ(OnlyError(head + "  workloadSelector: {matchLabels: {app: canary}}\n  exportTo: [\"*\"]\n"),
            "spec.exportTo: with spec.workloadSelector may name only this namespace (\".\"), as Istio validates: the "
            "rule applies to this namespace's workloads alone");
  EXPECT_EQ(OnlyError(head + "  workloadSelector: {matchLabels: {app: \"*\"}}\n"),
            "spec.workloadSelector.matchLabels.app: a wildcard (*) is not supported in a selector, as Istio validates");
  EXPECT_EQ(OnlyError(head + "  workloadSelector: {labels: {app: canary}}\n"),
            "spec.workloadSelector.labels: unknown field");
}

// proxyProtocol: V1 (Istio's default) or V2; not per port, as Istio has it.
TEST(YamlLoaderTest, ProxyProtocolIsReadAsIstioHasIt) {
  const std::string head =
      "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d}\n"
      "spec:\n  host: a.mesh.local\n";
  const auto proxy_of = [&](const std::string& policy) {
    const ParsedFile file = ParseConfigFile("dr.yaml", head + "  trafficPolicy: " + policy + "\n");
    EXPECT_EQ(file.documents.size(), 1u) << Errors(file);
    return file.documents.empty() ? std::nullopt
                                  : std::get<DestinationRule>(file.documents[0].object).traffic_policy->proxy_protocol;
  };
  EXPECT_EQ(proxy_of("{proxyProtocol: {version: V2}}"), PolicyFields::ProxyProtocol::kV2);
  EXPECT_EQ(proxy_of("{proxyProtocol: {}}"), PolicyFields::ProxyProtocol::kV1);
  EXPECT_EQ(proxy_of("{proxyProtocol: ~}"), std::nullopt);
  EXPECT_EQ(OnlyError(head + "  trafficPolicy: {proxyProtocol: {version: V3}}\n"),
            "spec.trafficPolicy.proxyProtocol.version: must be V1 or V2, got \"V3\"");
  EXPECT_EQ(OnlyError(head + "  trafficPolicy: {portLevelSettings: [{port: {number: 80}, proxyProtocol: {}}]}\n"),
            "spec.trafficPolicy.portLevelSettings[0].proxyProtocol: unknown field");
}

// tunnel as Istio validates it: protocol CONNECT (the default) or POST, targetHost a DNS name or
// an IP address, targetPort 1-65535, both required; not with proxyProtocol; not per port.
TEST(YamlLoaderTest, TunnelIsReadAsIstioValidatesIt) {
  const std::string head =
      "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d}\n"
      "spec:\n  host: a.mesh.local\n";
  const auto tunnel_of = [&](const std::string& tunnel) -> std::optional<TrafficPolicy::Tunnel> {
    const ParsedFile file = ParseConfigFile("dr.yaml", head + "  trafficPolicy: {tunnel: " + tunnel + "}\n");
    EXPECT_EQ(file.documents.size(), 1u) << Errors(file);
    if (file.documents.empty()) return std::nullopt;
    return std::get<DestinationRule>(file.documents[0].object).traffic_policy->tunnel;
  };
  const auto t = tunnel_of("{targetHost: egress.example.com, targetPort: 3128}");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->target_host, "egress.example.com");
  EXPECT_EQ(t->target_port, 3128u);
  EXPECT_FALSE(t->use_post) << "CONNECT, Istio's default";
  EXPECT_TRUE(tunnel_of("{protocol: POST, targetHost: \"::1\", targetPort: 8080}").value_or(*t).use_post);
  EXPECT_FALSE(tunnel_of("{protocol: CONNECT, targetHost: 127.0.0.1, targetPort: 1}").value_or(*t).use_post);
  for (const std::string host : {"proxy.example.", "10.0.0.1.", "fe80::1%eth0"}) {
    EXPECT_EQ(tunnel_of("{targetHost: \"" + host + "\", targetPort: 65535}").value_or(*t).target_host, host)
        << "as Istio's checks allow: a trailing dot (the last label then empty), a zoned IPv6 address";
  }
  const auto error_of = [&](const std::string& policy) {
    return OnlyError(head + "  trafficPolicy: " + policy + "\n");
  };
  EXPECT_EQ(error_of("{tunnel: {protocol: connect, targetHost: a.example, targetPort: 80}}"),
            "spec.trafficPolicy.tunnel.protocol: must be CONNECT or POST, got \"connect\"");
  EXPECT_EQ(error_of("{tunnel: {targetPort: 80}}"), "spec.trafficPolicy.tunnel.targetHost: is required");
  EXPECT_EQ(error_of("{tunnel: {targetHost: {a: b}, targetPort: 80}}"),
            "spec.trafficPolicy.tunnel.targetHost: must be a string")
      << "one error for the field";
  EXPECT_EQ(error_of("{tunnel: {targetHost: a.example}}"), "spec.trafficPolicy.tunnel.targetPort: is required");
  EXPECT_EQ(error_of("{tunnel: {targetHost: a.example, targetPort: 0}}"),
            "spec.trafficPolicy.tunnel.targetPort: must be an integer from 1 to 65535, got \"0\"");
  EXPECT_EQ(error_of("{tunnel: {targetHost: Proxy.example, targetPort: 80}}"), "") << "upper case, as Istio takes it";
  EXPECT_EQ(error_of("{tunnel: {targetHost: proxy_1.example, targetPort: 80}}"),
            "spec.trafficPolicy.tunnel.targetHost: must be a DNS name or an IP address, got \"proxy_1.example\" (must "
            "contain only letters, digits, '-' and '.')");
  EXPECT_EQ(error_of("{tunnel: {targetHost: 10.0.0.300, targetPort: 80}}"),
            "spec.trafficPolicy.tunnel.targetHost: must be a DNS name or an IP address, got \"10.0.0.300\" (a DNS "
            "name's last label cannot be all digits)");
  EXPECT_EQ(error_of("{tunnel: {targetHost: \"\", targetPort: 80}}"),
            "spec.trafficPolicy.tunnel.targetHost: must be a DNS name or an IP address, got \"\" (empty)");
  EXPECT_EQ(error_of("{tunnel: {targetHost: a.example, targetPort: 80, tls: {}}}"),
            "spec.trafficPolicy.tunnel.tls: unknown field");
  EXPECT_EQ(error_of("{proxyProtocol: {}, tunnel: {targetHost: a.example, targetPort: 80}}"),
            "spec.trafficPolicy.tunnel: cannot be set with proxyProtocol, as Istio validates");
  EXPECT_EQ(error_of("{portLevelSettings: [{port: {number: 80}, tunnel: {targetHost: a.example, targetPort: 80}}]}"),
            "spec.trafficPolicy.portLevelSettings[0].tunnel: unknown field");
  // A subset's own.
  const ParsedFile subset = ParseConfigFile(
      "dr.yaml", head + "  subsets: [{name: s, trafficPolicy: {tunnel: {targetHost: b.example, targetPort: 81}}}]\n");
  ASSERT_EQ(subset.documents.size(), 1u) << Errors(subset);
  const auto& subsets = std::get<DestinationRule>(subset.documents[0].object).subsets;
  ASSERT_EQ(subsets.size(), 1u);
  EXPECT_EQ(subsets[0].traffic_policy->tunnel->target_host, "b.example");
}

// retryBudget as Istio has it: `percent` a number from 0 to 100 (istiod's default 20),
// `minRetryConcurrency` (0 or unset: istiod's 3); not per port; `budgetInterval`, which the Envoy
// API cxds builds on has no field for, is refused as not supported.
TEST(YamlLoaderTest, RetryBudgetIsReadAsIstioHasIt) {
  const std::string head =
      "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d}\n"
      "spec:\n  host: a.mesh.local\n";
  const auto budget_of = [&](const std::string& policy) -> std::optional<std::pair<double, uint32_t>> {
    const ParsedFile file = ParseConfigFile("dr.yaml", head + "  trafficPolicy: " + policy + "\n");
    EXPECT_EQ(file.documents.size(), 1u) << Errors(file);
    if (file.documents.empty()) return std::nullopt;
    const auto& budget = std::get<DestinationRule>(file.documents[0].object).traffic_policy->retry_budget;
    if (!budget.has_value()) return std::nullopt;
    return std::pair(budget->percent, budget->min_concurrency);
  };
  EXPECT_EQ(budget_of("{retryBudget: {}}"), std::pair(20.0, 3u));
  EXPECT_EQ(budget_of("{retryBudget: {percent: 0.5, minRetryConcurrency: 7}}"), std::pair(0.5, 7u));
  EXPECT_EQ(budget_of("{retryBudget: {percent: 100, minRetryConcurrency: 0}}"), std::pair(100.0, 3u));
  EXPECT_EQ(budget_of("{retryBudget: ~, tls: {mode: DISABLE}}"), std::nullopt);
  EXPECT_EQ(OnlyError(head + "  trafficPolicy: {retryBudget: {percent: 100.5}}\n"),
            "spec.trafficPolicy.retryBudget.percent: must be a number from 0 to 100, got \"100.5\"");
  EXPECT_EQ(OnlyError(head + "  trafficPolicy: {retryBudget: {percent: {value: 20}}}\n"),
            "spec.trafficPolicy.retryBudget.percent: must be a number from 0 to 100, got \"\"")
      << "a DoubleValue, not a Percent";
  EXPECT_EQ(OnlyError(head + "  trafficPolicy: {retryBudget: {minRetryConcurrency: -1}}\n"),
            "spec.trafficPolicy.retryBudget.minRetryConcurrency: must be an integer from 0 to 4294967295, got \"-1\"");
  EXPECT_EQ(OnlyError(head + "  trafficPolicy: {retryBudget: {budgetInterval: 10s}}\n"),
            "spec.trafficPolicy.retryBudget.budgetInterval: is not supported by cxds");
  EXPECT_EQ(OnlyError(head + "  trafficPolicy: {portLevelSettings: [{port: {number: 80}, retryBudget: {}}]}\n"),
            "spec.trafficPolicy.portLevelSettings[0].retryBudget: unknown field");
}

// Issue 17: manifests are kept with the Services they deploy. Kinds with no meaning for xDS are
// skipped and counted, never errors; kinds that mean something for traffic but that cxds does
// not read stay "not supported by cxds".
TEST(YamlLoaderTest, KindsWithNoMeaningForXdsAreSkippedNotRefused) {
  const ParsedFile parsed = ParseConfigFile("bookinfo.yaml", R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: bookinfo-reviews, labels: {account: reviews}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: reviews-v1, namespace: shop}
spec: {replicas: 1, template: {spec: {containers: [{name: reviews, image: x}]}}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: reviews-1}
spec: {address: 127.0.0.1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {anything: goes}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec: {}
)");
  ASSERT_EQ(parsed.documents.size(), 1u) << Errors(parsed);
  ASSERT_EQ(parsed.skipped.size(), 3u);
  EXPECT_EQ(parsed.skipped[0].ToString(), "ServiceAccount bookinfo-reviews (line 2)");
  EXPECT_EQ(parsed.skipped[1].ToString(), "Deployment shop/reviews-v1 (line 6)");
  EXPECT_EQ(parsed.skipped[2].ToString(), "ConfigMap settings (line 16)");
  ASSERT_EQ(parsed.errors.size(), 1u) << Errors(parsed);
  EXPECT_EQ(parsed.errors[0].line, 21);
  EXPECT_NE(parsed.errors[0].message.find("kind \"Ingress\" is not supported by cxds"), std::string::npos);
  EXPECT_TRUE(IsKindWithoutXdsMeaning("Deployment"));
  EXPECT_FALSE(IsKindWithoutXdsMeaning("Pod"));  // read: its labels are its endpoints' labels
  EXPECT_FALSE(IsKindWithoutXdsMeaning("Gateway"));
  // What an istioctl or cluster dump holds beside the mesh.
  EXPECT_FALSE(IsKindWithoutXdsMeaning("Node")) << "istiod takes Pods' localities from their Nodes' labels";
  EXPECT_TRUE(IsKindWithoutXdsMeaning("Lease"));
  EXPECT_TRUE(IsKindWithoutXdsMeaning("MutatingWebhookConfiguration"));
  EXPECT_FALSE(IsKindWithoutXdsMeaning("Endpoints")) << "traffic, not read: refused as not supported";
  EXPECT_FALSE(IsKindWithoutXdsMeaning("List")) << "its items are read (ListsAreReadAsTheirItems)";
}

// A dump is read as the objects it holds: `kubectl get -o yaml` prints a v1 List (items with
// their own kind), the API server a KIND-List whose items take the list's kind and apiVersion;
// every item is read where it is written, skipped kinds skipped, and lists do not nest.
TEST(YamlLoaderTest, ListsAreReadAsTheirItems) {
  const ParsedFile parsed = ParseConfigFile("dump.yaml", R"(apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: v1
  kind: Service
  metadata: {name: reviews, namespace: shop}
  spec: {ports: [{name: http, port: 9080}], selector: {app: reviews}}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: reviews-v1, namespace: shop}
- apiVersion: v1
  kind: List
  items: []
- apiVersion: v1
  kind: Service
  metadata: {name: bad, namespace: shop}
  spec: {ports: [{name: http, port: 0}]}
---
apiVersion: networking.istio.io/v1
kind: DestinationRuleList
items:
- metadata: {name: reviews, namespace: shop}
  spec: {host: reviews, subsets: [{name: v1, labels: {version: v1}}]}
---
apiVersion: v1
kind: PodList
items: null
---
apiVersion: v1
kind: ConfigMapList
items:
- metadata: {name: settings, namespace: shop}
  data: {a: b}
)");
  ASSERT_EQ(parsed.documents.size(), 2u) << Errors(parsed);
  EXPECT_EQ(KindOf(parsed.documents[0].object), "Service");
  EXPECT_EQ(parsed.documents[0].position.line, 5) << "where the item is written";
  EXPECT_EQ(MetaOf(parsed.documents[0].object).name, "reviews");
  EXPECT_EQ(KindOf(parsed.documents[1].object), "DestinationRule");
  EXPECT_EQ(MetaOf(parsed.documents[1].object).namespace_name, "shop");
  ASSERT_EQ(parsed.skipped.size(), 2u);
  EXPECT_EQ(parsed.skipped[0].ToString(), "Deployment shop/reviews-v1 (line 10)");
  EXPECT_EQ(parsed.skipped[1].ToString(), "ConfigMap shop/settings (line 33)") << "the item's line: it has no kind";
  EXPECT_EQ(Errors(parsed),
            "dump.yaml:13: List: items[2].kind: a list inside a list is not read (Kubernetes lists do not nest)\n"
            "dump.yaml:18: Service shop/bad: spec.ports[0].port: must be an integer from 1 to 65535, got \"0\"\n")
      << "the lists' own errors first, then their items'";
}

// An item that takes its kind and apiVersion from its list stands alone in its canonical text
// (what `cxds apply` stores, and what tells a change): with both, and for a Pod its IPs, so that
// a Pod whose IP alone changed is a change.
TEST(YamlLoaderTest, AListedItemsCanonicalTextCarriesWhatItTakesFromItsList) {
  const auto pod_list = [](const std::string& ip) {
    return ParseConfigFile("dump.yaml", StrCat("apiVersion: v1\nkind: PodList\nitems:\n"
                                               "- metadata: {name: web-0, namespace: shop, labels: {app: web}}\n"
                                               "  status: {podIP: ",
                                               ip, ", phase: Running}\n"));
  };
  const ParsedFile first = pod_list("10.0.0.5");
  ASSERT_EQ(first.documents.size(), 1u) << Errors(first);
  const std::string& text = first.documents[0].canonical;
  EXPECT_NE(text.find("kind: Pod"), std::string::npos) << text;
  EXPECT_NE(text.find("apiVersion: v1"), std::string::npos) << text;
  EXPECT_NE(text.find("podIP: 10.0.0.5"), std::string::npos) << text;
  EXPECT_EQ(text.find("phase"), std::string::npos) << "the rest of the status is the server's: " << text;
  const ParsedFile moved = pod_list("10.0.0.6");
  ASSERT_EQ(moved.documents.size(), 1u) << Errors(moved);
  EXPECT_NE(moved.documents[0].content_hash, first.documents[0].content_hash) << "a new IP is a change";
  // The canonical text read again alone is the same object.
  const ParsedFile alone = ParseConfigFile("stored.yaml", text);
  ASSERT_EQ(alone.documents.size(), 1u) << Errors(alone);
  EXPECT_EQ(alone.documents[0].content_hash, first.documents[0].content_hash);
  EXPECT_EQ(std::get<K8sPod>(alone.documents[0].object).ips, std::vector<std::string>{"10.0.0.5"});
}

// A list that is not well formed is refused whole (the file's last good state keeps serving,
// parsed.unidentified_failure), with one error however many items it has; what a list adds to
// its items is bounded and checked, and added to a copy (an item may be an alias of a node
// another object holds).
TEST(YamlLoaderTest, ListsThatAreNotWellFormedAreRefusedWhole) {
  const auto only = [](const std::string& text) {
    const ParsedFile parsed = ParseConfigFile("dump.yaml", text);
    EXPECT_TRUE(parsed.documents.empty()) << text;
    EXPECT_TRUE(parsed.skipped.empty()) << text;
    EXPECT_TRUE(parsed.unidentified_failure) << text;
    return Errors(parsed);
  };
  EXPECT_EQ(only("apiVersion: v1\nkind: ServiceList\nitemz: []\nitems: [{metadata: {name: a}}]\n"),
            "dump.yaml:3: ServiceList: itemz: unknown field (did you mean \"items\"?)\n");
  EXPECT_EQ(only("apiVersion: v1\nkind: ServiceList\nitems: {name: x}\n"),
            "dump.yaml:3: ServiceList: items: must be a list\n");
  EXPECT_EQ(only("apiVersion: v1\nkind: ServiceList\nitems: [{metadata: {name: a}}, x]\n"),
            "dump.yaml:3: ServiceList: items[1]: must be a map (a Service)\n");
  EXPECT_EQ(only("apiVersion: example.com/v1\nkind: List\nitems: []\n"),
            "dump.yaml:1: List: apiVersion: must be v1 for List, got \"example.com/v1\"\n");
  EXPECT_EQ(only("apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayList\nitems: [{metadata: {name: a}}, "
                 "{metadata: {name: b}}]\n"),
            "dump.yaml:1: GatewayList: apiVersion: the Kubernetes Gateway API (gateway.networking.k8s.io/v1, kind "
            "GatewayList) is not supported by cxds: write Istio's Gateway and VirtualService (networking.istio.io)\n")
      << "one error for the list, not one per item, and valid input is not called invalid";
  EXPECT_EQ(only("apiVersion: security.istio.io/v1\nkind: GatewayList\nitems: [{metadata: {name: a}}]\n"),
            "dump.yaml:1: GatewayList: apiVersion: must be networking.istio.io/v1 for GatewayList, got "
            "\"security.istio.io/v1\"\n");
  // A huge apiVersion is never copied into the items.
  std::string huge = "apiVersion: " + std::string(100'000, 'a') + "\nkind: ServiceList\nitems:\n";
  for (int i = 0; i < 5'000; ++i) huge += "- {}\n";
  const std::string error = only(huge);
  EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 1) << error.substr(0, 200);
  EXPECT_NE(error.find("ServiceList: apiVersion: must be v1 for ServiceList"), std::string::npos);

  // An aliased item: nothing is written into it, so the object it aliases keeps its labels (it is
  // read where its anchor is written).
  const ParsedFile aliased = ParseConfigFile("dump.yaml", R"(apiVersion: v1
kind: ServiceList
items:
- metadata: {name: a, namespace: shop}
  spec:
    ports: [{name: http, port: 80}]
    selector: &selector {app: a}
- *selector
)");
  ASSERT_EQ(aliased.documents.size(), 1u) << Errors(aliased);
  const auto& service = std::get<K8sService>(aliased.documents[0].object);
  EXPECT_EQ(service.selector, (LabelMap{{"app", "a"}})) << "no kind or apiVersion among its labels";
  EXPECT_NE(Errors(aliased).find("dump.yaml:7: Service"), std::string::npos) << Errors(aliased);
  EXPECT_EQ(Errors(aliased).find("invalid node"), std::string::npos)
      << "an item without metadata is said to lack it, not failed inside the YAML library";
}

// Errors come in the order the file is written: a list's own errors after those of the
// documents above it, before those of the documents below.
TEST(YamlLoaderTest, AListsErrorsComeWhereTheListIsWritten) {
  const ParsedFile parsed = ParseConfigFile("dump.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: above}
spec: {ports: [{port: 80}], colour: red}
---
apiVersion: v1
kind: ServiceList
itemz: []
---
apiVersion: v1
kind: Service
metadata: {name: below}
spec: {ports: [{port: 80}], shape: round}
)");
  EXPECT_EQ(Errors(parsed),
            "dump.yaml:4: Service default/above: spec.colour: unknown field\n"
            "dump.yaml:8: ServiceList: itemz: unknown field (did you mean \"items\"?)\n"
            "dump.yaml:13: Service default/below: spec.shape: unknown field\n");
}

// An object of a kind cxds reads under a group istiod never reads may be another product's kind
// of that name (Knative's Service): the apiVersion error says so.
TEST(YamlLoaderTest, AKindOfAnotherGroupIsNamedAsSuch) {
  const ParsedFile parsed = ParseConfigFile("knative.yaml", R"(apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: hello}
spec: {ports: [{port: 80}]}
)");
  EXPECT_EQ(Errors(parsed),
            "knative.yaml:1: Service default/hello: apiVersion: must be v1 for Service, got \"serving.knative.dev/v1\" "
            "(if this is another API group's Service, cxds does not read it: keep it out of the config it reads)\n");
}

// Objects of API groups istiod never reads (operators' and tools' own kinds, kept beside the
// mesh) are skipped as without meaning for xDS; Istio's and the Kubernetes groups istiod reads
// keep their errors, and so does a kind cxds reads under a misspelt group.
TEST(YamlLoaderTest, KindsOfGroupsIstiodNeverReadsAreSkipped) {
  const ParsedFile parsed = ParseConfigFile("deploy.yaml", R"(apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: bookinfo, namespace: argocd}
spec: {project: default}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: reviews}
---
apiVersion: skaffold/v2beta22
kind: Config
metadata: {name: build}
---
apiVersion: networking.isito.io/v1
kind: VirtualService
metadata: {name: typo}
spec: {hosts: [a.mesh.local], http: [{route: [{destination: {host: a.mesh.local}}]}]}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny}
---
apiVersion: networking.istio.io/v1
kind: ProxyConfig
metadata: {name: pc}
---
apiVersion: v1
kind: Binding
metadata: {name: b}
)");
  EXPECT_TRUE(parsed.documents.empty());
  ASSERT_EQ(parsed.skipped.size(), 3u) << Errors(parsed);
  EXPECT_EQ(parsed.skipped[0].ToString(), "Application argocd/bookinfo (line 2)");
  EXPECT_EQ(parsed.skipped[1].ToString(), "ServiceMonitor reviews (line 7)");
  EXPECT_EQ(parsed.skipped[2].ToString(), "Config build (line 11)");
  EXPECT_EQ(Errors(parsed),
            "deploy.yaml:14: VirtualService default/typo: apiVersion: must be networking.istio.io/v1 for "
            "VirtualService, got \"networking.isito.io/v1\" (if this is another API group's VirtualService, cxds does "
            "not read it: keep it out of the config it reads)\n"
            "deploy.yaml:20: kind: kind \"AuthorizationPolicy\" is not supported by cxds (supported: Service, "
            "EndpointSlice, Endpoints, Pod, ServiceEntry, WorkloadEntry, VirtualService, DestinationRule, Sidecar, "
            "Gateway, and Secrets of TLS material)\n"
            "deploy.yaml:24: kind: kind \"ProxyConfig\" is not supported by cxds (supported: Service, EndpointSlice, "
            "Endpoints, Pod, ServiceEntry, WorkloadEntry, VirtualService, DestinationRule, Sidecar, Gateway, and "
            "Secrets of TLS material)\n"
            "deploy.yaml:28: kind: kind \"Binding\" is not supported by cxds (supported: Service, EndpointSlice, "
            "Endpoints, Pod, ServiceEntry, WorkloadEntry, VirtualService, DestinationRule, Sidecar, Gateway, and "
            "Secrets of TLS material)\n");
  EXPECT_TRUE(IsApiGroupWithoutXdsMeaning("cert-manager.io/v1"));
  EXPECT_TRUE(IsApiGroupWithoutXdsMeaning("install.istio.io/v1alpha1")) << "IstioOperator: read by installers";
  EXPECT_FALSE(IsApiGroupWithoutXdsMeaning("v1"));
  EXPECT_FALSE(IsApiGroupWithoutXdsMeaning("telemetry.istio.io/v1"));
  EXPECT_FALSE(IsApiGroupWithoutXdsMeaning("gateway.networking.k8s.io/v1"));
  EXPECT_FALSE(IsApiGroupWithoutXdsMeaning("/v1"));
}

// YAML text of `pem` as an indented block scalar (stringData).
std::string Block(const std::string& pem, const std::string& indent) {
  std::string out = "|\n";
  for (absl::string_view line : absl::StrSplit(pem, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&out, indent, line, "\n");
  }
  return out;
}

// A Secret of TLS material (a gateway's credentialName) is read and checked where it is written:
// kubernetes.io/tls or Istio's generic keys, from data (base64) or stringData (text); a bad
// certificate, a key of another certificate or half a pair is refused naming the field, and
// never quoting the key. Any other Secret is skipped as before.
TEST(YamlLoaderTest, TlsSecretsAreReadAndCheckedOthersAreSkipped) {
  testing::TestPki pki;
  ASSERT_TRUE(pki.MakeCa("ca"));
  ASSERT_TRUE(pki.MakeLeaf("shop", "ca", "DNS:shop.example.com"));
  ASSERT_TRUE(pki.MakeLeaf("other", "ca", "DNS:other.example.com"));
  const std::string cert = pki.Read("shop.crt"), key = pki.Read("shop.key"), ca = pki.Read("ca.crt");
  const ParsedFile parsed =
      ParseConfigFile("secrets.yaml", StrCat(R"(apiVersion: v1
kind: Secret
metadata: {name: shop-cert, namespace: edge}
type: kubernetes.io/tls
data:
  tls.crt: )",
                                             absl::Base64Escape(cert), "\n  tls.key: ", absl::Base64Escape(key),
                                             "\n  ca.crt: ", absl::Base64Escape(ca), R"(
---
apiVersion: v1
kind: Secret
metadata: {name: partner-cert-cacert, namespace: edge}
stringData:
  cacert: )",
                                             Block(ca, "    "), R"(---
apiVersion: v1
kind: Secret
metadata: {name: db-password, namespace: edge}
type: Opaque
data: {password: aHVudGVyMg==}
)"));
  ASSERT_EQ(parsed.documents.size(), 2u) << Errors(parsed);
  EXPECT_TRUE(parsed.errors.empty()) << Errors(parsed);
  const auto& tls = std::get<K8sTlsSecret>(parsed.documents[0].object);
  EXPECT_EQ(KindOf(parsed.documents[0].object), "Secret");
  EXPECT_EQ(tls.meta.namespace_name, "edge");
  EXPECT_EQ(tls.certificate_chain, cert);
  EXPECT_EQ(tls.private_key, key);
  EXPECT_EQ(tls.ca_certificates, ca);
  const auto& ca_only = std::get<K8sTlsSecret>(parsed.documents[1].object);
  EXPECT_TRUE(ca_only.certificate_chain.empty());
  EXPECT_EQ(ca_only.ca_certificates, ca);
  ASSERT_EQ(parsed.skipped.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(parsed.skipped[0].ToString(), "Secret edge/db-password (line "))
      << parsed.skipped[0].ToString();

  const auto secret = [&](const std::string& body) {
    return OnlyError(StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: edge}\n", body));
  };
  EXPECT_EQ(secret(StrCat("type: kubernetes.io/tls\nstringData:\n  tls.crt: ", Block(cert, "    "))),
            "tls.key: is required with tls.crt (a certificate and its private key)");
  EXPECT_EQ(secret(StrCat("type: kubernetes.io/tls\nstringData:\n  tls.crt: ", Block("not a certificate", "    "),
                          "  tls.key: ", Block(key, "    "))),
            "stringData.tls.crt: holds text outside a PEM block (line 1)");
  // Text outside the blocks (a key in another form, say) is refused: OpenSSL would skip it.
  EXPECT_EQ(secret(StrCat("type: kubernetes.io/tls\nstringData:\n  tls.crt: ",
                          Block(cert + "MIIEvQIBADANBgkqhkiG9w0B\n", "    "), "  tls.key: ", Block(key, "    "))),
            StrCat("stringData.tls.crt: holds text outside a PEM block (line ",
                   std::count(cert.begin(), cert.end(), '\n') + 1, ")"));
  EXPECT_EQ(secret(StrCat("type: kubernetes.io/tls\nstringData:\n  tls.crt: ", Block(cert, "    "),
                          "  tls.key: ", Block(key + cert, "    "))),
            "stringData.tls.key: holds another PEM block after the private key (one key alone belongs here)");
  // A private key pasted into the certificate field is refused, never served as a certificate.
  EXPECT_EQ(secret(StrCat("stringData:\n  cert: ", Block(cert + key, "    "), "  key: ", Block(key, "    "))),
            "stringData.cert: holds a PEM block of type \"PRIVATE KEY\" where only certificates (CERTIFICATE) belong "
            "(a private key belongs in its own field)");
  // An encrypted key is refused, never prompted for.
  ASSERT_EQ(std::system(StrCat("openssl pkey -in ", pki.Path("shop.key"), " -aes256 -passout pass:secret -out ",
                               pki.Path("encrypted.key"), " 2>/dev/null")
                            .c_str()),
            0);
  EXPECT_EQ(
      secret(StrCat("stringData:\n  cert: ", Block(cert, "    "), "  key: ", Block(pki.Read("encrypted.key"), "    "))),
      "stringData.key: holds no PEM private key that can be read without a password");
  // Revocation lists are read beside the CA (ca.crl, or the generic crl), checked as PEM CRLs.
  ASSERT_TRUE(pki.MakeCrl("ca", "ca", "other"));
  const std::string crl = pki.Read("ca.crl");
  const ParsedFile with_crl =
      ParseConfigFile("crl.yaml", StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: edge}\n",
                                         "type: kubernetes.io/tls\nstringData:\n  tls.crt: ", Block(cert, "    "),
                                         "  tls.key: ", Block(key, "    "), "  ca.crt: ", Block(ca, "    "),
                                         "  ca.crl: ", Block(crl, "    ")));
  ASSERT_EQ(with_crl.documents.size(), 1u) << Errors(with_crl);
  EXPECT_EQ(std::get<K8sTlsSecret>(with_crl.documents[0].object).revocation_lists, crl);
  EXPECT_EQ(secret(StrCat("stringData:\n  cacert: ", Block(ca, "    "), "  crl: ", Block("crl", "    "))),
            "stringData.crl: holds text outside a PEM block (line 1)");
  // A list must be signed by the Secret's CA, and sit beside it (crl with cacert, ca.crl with
  // ca.crt, as istiod pairs them).
  ASSERT_TRUE(pki.MakeCa("other-ca"));
  ASSERT_TRUE(pki.MakeLeaf("other-leaf", "other-ca", "DNS:x.example.com"));
  ASSERT_TRUE(pki.MakeCrl("other-ca", "other-ca", "other-leaf"));
  EXPECT_EQ(
      secret(StrCat("stringData:\n  cacert: ", Block(ca, "    "), "  crl: ", Block(pki.Read("other-ca.crl"), "    "))),
      "stringData.crl: revocation list 1 is not signed by a CA of the Secret's CA certificates (Envoy would "
      "refuse every client certificate of that CA)");
  EXPECT_EQ(secret(StrCat("stringData:\n  ca.crt: ", Block(ca, "    "), "  crl: ", Block(crl, "    "))),
            "crl: is not supported by cxds without cacert beside it (revocation lists are read with their CA: crl "
            "with cacert, ca.crl with ca.crt)");
  EXPECT_EQ(secret(StrCat("stringData:\n  cacert: ", Block(ca, "    "), "  crl: ", Block(crl + ca, "    "))),
            "stringData.crl: holds a PEM block of type \"CERTIFICATE\" where only revocation lists (X509 CRL) "
            "belong (a private key belongs in its own field)");
  EXPECT_EQ(secret(StrCat("type: kubernetes.io/tls\nstringData:\n  tls.crt: ", Block(cert, "    "),
                          "  tls.key: ", Block(key, "    "), "  tls.ocsp-staple: ", Block("staple", "    "))),
            "tls.ocsp-staple: is not supported by cxds (OCSP staples are not served)");
  // An empty value is absent, as in istiod.
  EXPECT_EQ(secret(StrCat("type: kubernetes.io/tls\nstringData:\n  tls.crt: ", Block(cert, "    "),
                          "  tls.key: ", Block(key, "    "), "  ca.crt: \"\"\n")),
            "");
  const std::string wrong_key =
      secret(StrCat("stringData:\n  cert: ", Block(cert, "    "), "  key: ", Block(pki.Read("other.key"), "    ")));
  EXPECT_EQ(wrong_key,
            "stringData.key: does not belong to the first certificate of the chain (the key of another certificate?)");
  EXPECT_EQ(secret(StrCat("type: kubernetes.io/tls\ndata: {tls.crt: '%%%', tls.key: ", absl::Base64Escape(key), "}\n")),
            "data.tls.crt: is not base64 (data holds base64; stringData holds text)");
  EXPECT_EQ(secret("type: kubernetes.io/tls\ndata: {}\n"),
            "data: holds no certificate: tls.crt and tls.key (or cert and key), or ca.crt (or cacert)");
  // Secrets of other types, and generic ones whose cert/key are not PEM, are no TLS material:
  // skipped, as before, not refused (a service account token carries a ca.crt too).
  for (const std::string& other :
       {StrCat("type: kubernetes.io/service-account-token\nstringData:\n  token: abc\n  ca.crt: ", Block(ca, "    ")),
        StrCat("type: kubernetes.io/basic-auth\nstringData:\n  password: a\n  ca.crt: ", Block(ca, "    ")),
        std::string("type: Opaque\nstringData: {cert: a-password, key: another}\n"),
        std::string("type: example.com/cert\nstringData: {note: nothing of TLS}\n"),
        StrCat("type: example.com/api\nstringData:\n  key: sk_live_123\n  ca.crt: ", Block(ca, "    "))}) {
    const ParsedFile skipped =
        ParseConfigFile("x.yaml", StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n", other));
    EXPECT_TRUE(skipped.errors.empty()) << Errors(skipped);
    EXPECT_TRUE(skipped.documents.empty());
    EXPECT_EQ(skipped.skipped.size(), 1u) << other;
  }
  // A custom type with Istio's keys is TLS material, as istiod reads it by its keys.
  const ParsedFile custom =
      ParseConfigFile("custom.yaml", StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: edge}\n",
                                            "type: example.com/cert\nstringData:\n  tls.crt: ", Block(cert, "    "),
                                            "  tls.key: ", Block(key, "    ")));
  ASSERT_EQ(custom.documents.size(), 1u) << Errors(custom);
  EXPECT_EQ(std::get<K8sTlsSecret>(custom.documents[0].object).certificate_chain, cert);
  // No message quotes the material.
  const ParsedFile bad =
      ParseConfigFile("bad.yaml", StrCat("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  cert: ",
                                         Block(pki.Read("other.crt"), "    "), "  key: ", Block(key, "    ")));
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(Errors(bad).find("PRIVATE KEY"), std::string::npos) << Errors(bad);
  EXPECT_EQ(Errors(bad).find(key.substr(40, 20)), std::string::npos);
}

// The first server of the one Gateway `text` holds; a test failure, and an empty server, when the
// file is refused.
Gateway::Server FirstServer(const std::string& text) {
  const ParsedFile parsed = ParseConfigFile("gw.yaml", text);
  if (parsed.documents.size() != 1) {
    ADD_FAILURE() << Errors(parsed);
    return {};
  }
  return std::get<Gateway>(parsed.documents[0].object).servers[0];
}

// A Gateway of one HTTPS server for shop.example.com, its tls left to the test.
constexpr char kShopHttpsGateway[] = R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [shop.example.com]
)";

// An HTTPS server terminates TLS with a credentialName Secret (SIMPLE or MUTUAL); what Istio
// accepts that cxds does not serve is refused as not supported, never as invalid.
TEST(YamlLoaderTest, HttpsGatewayServersTerminateTlsWithACredentialName) {
  const std::string head = kShopHttpsGateway;
  const ParsedFile good = ParseConfigFile("gw.yaml", head + R"(    tls:
      mode: MUTUAL
      credentialName: shop-cert
      caCertificates: /ignored/beside/credentialName.pem
      minProtocolVersion: TLSV1_2
      maxProtocolVersion: TLSV1_3
      cipherSuites: [ECDHE-ECDSA-AES128-GCM-SHA256]
)");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const Gateway::Server& server = std::get<Gateway>(good.documents[0].object).servers[0];
  EXPECT_EQ(server.tls_mode, Gateway::Server::TlsMode::kMutual);
  EXPECT_EQ(server.credential_name, "shop-cert");
  EXPECT_EQ(server.min_protocol_version, "TLSV1_2");
  EXPECT_EQ(server.max_protocol_version, "TLSV1_3");
  EXPECT_THAT(server.cipher_suites, ::testing::ElementsAre("ECDHE-ECDSA-AES128-GCM-SHA256"));

  const auto tls = [&](const std::string& text) { return OnlyError(head + text); };
  EXPECT_EQ(tls(""), "spec.servers[0].tls: is required for an HTTPS server (mode, and credentialName to terminate)");
  EXPECT_EQ(tls("    tls: {credentialName: c}\n"), "")
      << "Istio's default mode is PASSTHROUGH: a credentialName without a mode does nothing, which Istio accepts "
         "with a warning (cxds's analysis: cxds_gateway_tls_ignored)";
  EXPECT_EQ(tls("    tls: {mode: STRICT, credentialName: c}\n"),
            "spec.servers[0].tls.mode: mode \"STRICT\" must be one of PASSTHROUGH, SIMPLE, MUTUAL, AUTO_PASSTHROUGH, "
            "ISTIO_MUTUAL, OPTIONAL_MUTUAL");
  EXPECT_EQ(tls("    tls: {mode: SIMPLE, credentialName: Shop_Cert}\n"),
            "spec.servers[0].tls.credentialName: must be the name of a Secret in the gateway's namespace (lower-case "
            "letters, digits, '-' and '.')");
  EXPECT_EQ(tls("    tls: {mode: SIMPLE, minProtocolVersion: TLSV1_3, maxProtocolVersion: TLSV1_2, "
                "credentialName: c}\n"),
            "spec.servers[0].tls.minProtocolVersion: is above maxProtocolVersion: no version would be left");
  // Valid Istio that cxds does not serve.
  EXPECT_EQ(tls("    tls: {mode: ISTIO_MUTUAL}\n"),
            "spec.servers[0].tls.mode: mode ISTIO_MUTUAL is not supported by cxds (SIMPLE, MUTUAL and "
            "OPTIONAL_MUTUAL, and PASSTHROUGH; cxds issues no workload certificates)");
  EXPECT_EQ(tls("    tls: {mode: AUTO_PASSTHROUGH}\n"),
            "spec.servers[0].tls.mode: mode AUTO_PASSTHROUGH is not supported by cxds (SIMPLE, MUTUAL and "
            "OPTIONAL_MUTUAL, and PASSTHROUGH; it routes to SNI-named clusters that reach only workloads serving Istio "
            "mutual TLS, and cxds issues no workload certificates)");
  EXPECT_EQ(tls("    tls: {mode: OPTIONAL_MUTUAL, credentialName: c}\n"), "");
  // Certificates from files on the gateway, which Envoy reads itself.
  const ParsedFile files = ParseConfigFile(
      "gw.yaml", head +
                     "    tls: {mode: OPTIONAL_MUTUAL, serverCertificate: /etc/certs/c.pem, privateKey: "
                     "/etc/certs/k.pem, caCertificates: /etc/certs/ca.pem, caCrl: /etc/certs/ca.crl}\n");
  ASSERT_EQ(files.documents.size(), 1u) << Errors(files);
  const Gateway::Server& from_files = std::get<Gateway>(files.documents[0].object).servers[0];
  EXPECT_EQ(from_files.ca_crl, "/etc/certs/ca.crl");
  EXPECT_EQ(from_files.tls_mode, Gateway::Server::TlsMode::kOptionalMutual);
  EXPECT_TRUE(from_files.credential_name.empty());
  EXPECT_EQ(from_files.server_certificate, "/etc/certs/c.pem");
  EXPECT_EQ(from_files.private_key, "/etc/certs/k.pem");
  EXPECT_EQ(from_files.ca_certificates, "/etc/certs/ca.pem");
  EXPECT_EQ(tls("    tls: {mode: MUTUAL, serverCertificate: /etc/certs/c.pem, privateKey: /etc/certs/k.pem}\n"),
            "spec.servers[0].tls.caCertificates: is required for mode MUTUAL without credentialName (a file on the "
            "gateway; or name a Secret of the gateway's namespace in credentialName)");
  EXPECT_EQ(tls("    tls: {mode: SIMPLE, serverCertificate: certs/c.pem, privateKey: /etc/certs/k.pem}\n"),
            "spec.servers[0].tls.serverCertificate: other than an absolute file path on the gateway is not supported "
            "by cxds (Envoy reads the file itself, from wherever it runs)");
  EXPECT_EQ(tls("    tls: {mode: SIMPLE}\n"),
            "spec.servers[0].tls.credentialName: is required for mode SIMPLE: a Secret of the gateway's namespace "
            "with the certificate (or serverCertificate and privateKey, files on the gateway)");
  EXPECT_EQ(tls("    tls: {mode: SIMPLE, credentialName: \"sds://shop\"}\n"),
            "spec.servers[0].tls.credentialName: with a scheme (sds://, kubernetes-gateway://, ...) is not supported "
            "by cxds: name a Secret of the gateway's namespace");
  EXPECT_EQ(tls("    tls: {mode: MUTUAL, credentialName: c, credentialNames: [a]}\n"),
            "spec.servers[0].tls: may have only one of credentialName, credentialNames, serverCertificate with "
            "privateKey, and tlsCertificates, as Istio validates (one source of the certificate)");
  // A CRL checks client certificates, as Istio validates it.
  EXPECT_EQ(tls("    tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem, caCrl: /ca.crl}\n"),
            "spec.servers[0].tls.caCrl: is not supported with mode SIMPLE, as Istio validates (no client certificate "
            "is checked)");
  EXPECT_EQ(tls("    tls: {mode: MUTUAL, credentialName: c, caCrl: /ca.crl}\n"), "")
      << "accepted and ignored beside a credentialName, as by Istio and istiod";
  EXPECT_EQ(tls("    tls: {mode: SIMPLE, credentialName: c, caCrl: /ca.crl}\n"), "");
  EXPECT_EQ(
      tls("    tls: {mode: MUTUAL, serverCertificate: /c.pem, privateKey: /k.pem, caCertificates: /ca.pem, caCrl: "
          "ca.crl}\n"),
      "spec.servers[0].tls.caCrl: other than an absolute file path on the gateway is not supported by cxds "
      "(Envoy reads the file itself, from wherever it runs)");
}

// What a MUTUAL server checks of a client's certificate beyond its CA (subjectAltNames, the key's
// and the certificate's SHA-256, insecureSkipVerify) and the curves it offers, each in the form
// Envoy accepts: another would have the listener refused, so the file is.
TEST(YamlLoaderTest, GatewayServersCheckClientCertificatesAsTold) {
  const std::string head = StrCat(kShopHttpsGateway, "    tls:\n");
  const std::string spki = "uLfQkXmtUdOLjShp4ksuBsKKyQyHb5ypeq2FhBsPsHQ=";
  const std::string hash = "DF6FF72FE9116521268F6F2DD4966F51DF479883FE7037B39F75916AC3049D1A";
  const Gateway::Server server = FirstServer(
      head + R"(      mode: MUTUAL
      credentialName: shop-cert
      subjectAltNames: [spiffe://cluster.local/ns/web/sa/client, client.example.com]
      verifyCertificateSpki: [)" +
      spki + R"(]
      verifyCertificateHash: [)" +
      hash + R"(, "df:6f:f7:2f:e9:11:65:21:26:8f:6f:2d:d4:96:6f:51:df:47:98:83:fe:70:37:b3:9f:75:91:6a:c3:04:9d:1a"]
      insecureSkipVerify: true
      ecdhCurves: [X25519, P-256]
)");
  EXPECT_THAT(server.client_subject_alt_names,
              ::testing::ElementsAre("spiffe://cluster.local/ns/web/sa/client", "client.example.com"));
  EXPECT_THAT(server.client_spki, ::testing::ElementsAre(spki));
  EXPECT_EQ(server.client_hashes.size(), 2u);
  EXPECT_TRUE(server.accept_untrusted_clients);
  EXPECT_THAT(server.ecdh_curves, ::testing::ElementsAre("X25519", "P-256"));
  EXPECT_THAT(server.ignored_tls_fields, ::testing::IsEmpty());

  const auto tls = [&](const std::string& fields) { return OnlyError(head + "      " + fields + "\n"); };
  const std::string mutual = "{mode: MUTUAL, serverCertificate: /c.pem, privateKey: /k.pem, caCertificates: /ca.pem, ";
  EXPECT_THAT(FirstServer(head + "      " + mutual + "subjectAltNames: [a.example.com]}\n").client_subject_alt_names,
              ::testing::ElementsAre("a.example.com"))
      << "with files too";
  // The last character before "=" holds two padding bits, which must be zero ("Q" = 010000 is
  // fine, "R" = 010001 not).
  EXPECT_EQ(tls(mutual + "verifyCertificateSpki: [" + spki.substr(0, 42) + "R=]}"),
            StrCat("spec.servers[0].tls.verifyCertificateSpki: \"", spki.substr(0, 42),
                   "R=\" is not the base64 of a SHA-256 (44 characters ending in =), which Envoy requires"));
  std::string misplaced =
      "df:6f:f7:2f:e9:11:65:21:26:8f:6f:2d:d4:96:6f:51:df:47:98:83:fe:70:37:b3:9f:75:91:6a:c3:04:9d:1a";
  std::swap(misplaced[1], misplaced[2]);
  EXPECT_EQ(tls(mutual + "verifyCertificateHash: [\"" + misplaced + "\"]}"),
            StrCat("spec.servers[0].tls.verifyCertificateHash: \"", misplaced,
                   "\" is not the hex of a SHA-256 (64 digits, or 32 pairs joined by colons), which Envoy requires"));
  EXPECT_EQ(tls(mutual + "verifyCertificateSpki: [abc=]}"),
            "spec.servers[0].tls.verifyCertificateSpki: \"abc=\" is not the base64 of a SHA-256 (44 characters ending "
            "in =), which Envoy requires");
  EXPECT_EQ(tls(mutual + "verifyCertificateHash: [" + hash.substr(1) + "Z]}"),
            StrCat("spec.servers[0].tls.verifyCertificateHash: \"", hash.substr(1),
                   "Z\" is not the hex of a SHA-256 (64 digits, or 32 pairs joined by colons), which Envoy requires"));
  EXPECT_EQ(tls(mutual + "subjectAltNames: [\"\"]}"),
            "spec.servers[0].tls.subjectAltNames: must not hold an empty name");
  EXPECT_EQ(tls(mutual + "ecdhCurves: [\"P 256\"]}"),
            "spec.servers[0].tls.ecdhCurves: \"P 256\" is not a curve name (as X25519 or P-256)");
  EXPECT_EQ(tls(mutual + "ecdhCurves: X25519}"), "spec.servers[0].tls.ecdhCurves: must be a list");
  EXPECT_THAT(FirstServer(head + "      {mode: SIMPLE, credentialName: c, ecdhCurves: [X25519]}\n").ecdh_curves,
              ::testing::ElementsAre("X25519"))
      << "curves apply to SIMPLE too";
  // On a SIMPLE server the client checks are ignored (said), not applied.
  const Gateway::Server simple =
      FirstServer(head + "      {mode: SIMPLE, credentialName: c, verifyCertificateSpki: [" + spki + "]}\n");
  EXPECT_TRUE(simple.client_spki.empty());
  EXPECT_EQ(simple.ignored_tls_fields.size(), 1u);
}

// Several certificates on one server, as Istio takes them: credentialNames (Secrets; the first
// gives the CA) or tlsCertificates (file pairs; clients checked against the server's CA file).
TEST(YamlLoaderTest, GatewayServersHoldSeveralCertificates) {
  const std::string head = StrCat(kShopHttpsGateway, "    tls:\n      ");
  const Gateway::Server by_name =
      FirstServer(head + "{mode: MUTUAL, credentialNames: [rsa-cert, ec-cert, rsa-cert]}\n");
  EXPECT_EQ(by_name.credential_name, "rsa-cert");
  EXPECT_THAT(by_name.more_credential_names, ::testing::ElementsAre("ec-cert")) << "each once";
  EXPECT_TRUE(by_name.credentials_listed);

  const Gateway::Server by_files = FirstServer(head + R"({mode: MUTUAL, caCertificates: /ca.pem, tlsCertificates: [
        {serverCertificate: /rsa.pem, privateKey: /rsa.key, caCertificates: /other-ca.pem},
        {serverCertificate: /ec.pem, privateKey: /ec.key}]}
)");
  EXPECT_EQ(by_files.server_certificate, "/rsa.pem");
  EXPECT_EQ(by_files.private_key, "/rsa.key");
  EXPECT_THAT(by_files.more_certificates,
              ::testing::ElementsAre(std::pair<std::string, std::string>("/ec.pem", "/ec.key")));
  EXPECT_EQ(by_files.ca_certificates, "/ca.pem");
  ASSERT_EQ(by_files.ignored_tls_fields.size(), 1u);
  EXPECT_EQ(by_files.ignored_tls_fields[0].first, "tlsCertificates[0].caCertificates");

  const auto tls = [&](const std::string& text) { return OnlyError(head + text + "\n"); };
  EXPECT_EQ(tls("{mode: SIMPLE, credentialNames: [ok, \"sds://x\"]}"),
            "spec.servers[0].tls.credentialNames: \"sds://x\" with a scheme (sds://, kubernetes-gateway://, ...) is "
            "not supported by cxds: name a Secret of the gateway's namespace");
  EXPECT_EQ(tls("{mode: SIMPLE, credentialNames: [a1, a2, a3, a4, a5, a6, a7, a8, a9]}"),
            "spec.servers[0].tls.credentialNames: more than 8 certificates on one server are not supported by cxds");
  EXPECT_EQ(tls("{mode: SIMPLE, tlsCertificates: [{serverCertificate: /c.pem, privateKey: /k.pem}, "
                "{serverCertificate: /d.pem}]}"),
            "spec.servers[0].tls.tlsCertificates[1].privateKey: is required for mode SIMPLE, as Istio validates");
  EXPECT_EQ(tls("{mode: SIMPLE, tlsCertificates: [{serverCertificate: c.pem, privateKey: /k.pem}]}"),
            "spec.servers[0].tls.tlsCertificates[0].serverCertificate: other than an absolute file path on the "
            "gateway is not supported by cxds (Envoy reads the file itself, from wherever it runs)");
  EXPECT_EQ(tls("{mode: MUTUAL, tlsCertificates: [{serverCertificate: /c.pem, privateKey: /k.pem}]}"),
            "spec.servers[0].tls.caCertificates: is required for mode MUTUAL with tlsCertificates, as Istio "
            "validates (a file on the gateway)");
  EXPECT_EQ(tls("{mode: SIMPLE, tlsCertificates: [{serverCertificate: /c.pem, privateKey: /k.pem, chain: x}]}"),
            "spec.servers[0].tls.tlsCertificates[0].chain: unknown field");
  EXPECT_EQ(tls("{mode: SIMPLE, credentialNames: [\"\"]}"),
            "spec.servers[0].tls.credentialNames: an empty name is not supported by cxds (it names no Secret)");
  EXPECT_EQ(tls("{mode: MUTUAL, credentialNames: [shop, shop-cacert]}"),
            "spec.servers[0].tls.credentialNames: \"shop-cacert\" is the name of the CA that checks clients here "
            "(kubernetes://shop-cacert): as a certificate it is not supported by cxds");
  EXPECT_EQ(tls("{mode: SIMPLE, credentialNames: [shop, shop-cacert]}"), "") << "no CA is read on a SIMPLE server";
  EXPECT_EQ(tls("{mode: PASSTHROUGH, tlsCertificates: [1]}"), "spec.servers[0].tls.tlsCertificates[0]: must be a map")
      << "typed where ignored too";
  std::string nine;
  for (int i = 0; i < 9; ++i)
    nine += StrCat(i == 0 ? "" : ", ", "{serverCertificate: /c", i, ".pem, privateKey: /k.pem}");
  EXPECT_EQ(tls("{mode: SIMPLE, tlsCertificates: [" + nine + "]}"),
            "spec.servers[0].tls.tlsCertificates: more than 8 certificates on one server are not supported by cxds");
  const Gateway::Server alone =
      FirstServer(head +
                  "{mode: SIMPLE, serverCertificate: /alone.pem, tlsCertificates: [{serverCertificate: /c.pem, "
                  "privateKey: /k.pem}, {serverCertificate: /c.pem, privateKey: /k.pem}]}\n");
  EXPECT_EQ(alone.server_certificate, "/c.pem");
  EXPECT_THAT(alone.more_certificates, ::testing::IsEmpty()) << "a pair twice: once";
  ASSERT_EQ(alone.ignored_tls_fields.size(), 1u);
  EXPECT_EQ(alone.ignored_tls_fields[0].first, "serverCertificate");
}

// caCertCredentialName: clients are checked against another Secret's CA, read as istiod reads a
// CA name (NAME-cacert, else NAME); it means something only beside credentials on a server that
// checks clients.
TEST(YamlLoaderTest, GatewayServersTakeTheirCaFromTheSecretNamed) {
  const std::string head = StrCat(kShopHttpsGateway, "    tls:\n      ");
  const Gateway::Server suffixed =
      FirstServer(head + "{mode: MUTUAL, credentialName: shop, caCertCredentialName: partners-cacert}\n");
  EXPECT_EQ(suffixed.ca_credential_name, "partners") << "stored without the suffix";
  const Gateway::Server plain =
      FirstServer(head + "{mode: OPTIONAL_MUTUAL, credentialNames: [rsa, ec], caCertCredentialName: partners}\n");
  EXPECT_EQ(plain.ca_credential_name, "partners");
  ASSERT_EQ(plain.SecretRefs().size(), 3u);
  EXPECT_EQ(plain.SecretRefs()[1].credential, "ec");
  EXPECT_EQ(plain.SecretRefs()[2].credential, "partners");
  EXPECT_TRUE(plain.SecretRefs()[2].ca);
  EXPECT_STREQ(plain.SecretRefs()[2].field, "caCertCredentialName");
  const Gateway::Server own = FirstServer(head + "{mode: MUTUAL, credentialName: shop}\n");
  ASSERT_EQ(own.SecretRefs().size(), 2u);
  EXPECT_EQ(own.SecretRefs()[1].credential, "shop") << "the credential's own CA without one";
  EXPECT_STREQ(own.SecretRefs()[1].field, "credentialName");
  EXPECT_EQ(FirstServer(head + "{mode: SIMPLE, credentialName: shop}\n").SecretRefs().size(), 1u) << "no CA";

  // Where nothing reads it, it is ignored and said, as istiod ignores it.
  const Gateway::Server simple =
      FirstServer(head + "{mode: SIMPLE, credentialName: shop, caCertCredentialName: partners}\n");
  EXPECT_EQ(simple.ca_credential_name, "");
  ASSERT_EQ(simple.ignored_tls_fields.size(), 1u);
  EXPECT_EQ(simple.ignored_tls_fields[0].first, "caCertCredentialName");
  const Gateway::Server files =
      FirstServer(head +
                  "{mode: MUTUAL, serverCertificate: /c.pem, privateKey: /k.pem, caCertificates: /ca.pem, "
                  "caCertCredentialName: partners}\n");
  EXPECT_EQ(files.ca_credential_name, "");
  ASSERT_EQ(files.ignored_tls_fields.size(), 1u);
  EXPECT_EQ(files.ignored_tls_fields[0].first, "caCertCredentialName");
  EXPECT_EQ(files.ignored_tls_fields[0].second,
            "has no effect beside certificate files: clients are checked against caCertificates, as istiod "
            "checks them");

  const auto tls = [&](const std::string& text) { return OnlyError(head + text + "\n"); };
  EXPECT_EQ(tls("{mode: MUTUAL, credentialName: shop, caCertCredentialName: \"configmap://edge/ca\"}"),
            "spec.servers[0].tls.caCertCredentialName: a ConfigMap is not supported by cxds, which reads no "
            "ConfigMaps: name a Secret of the gateway's namespace holding ca.crt");
  EXPECT_EQ(tls("{mode: MUTUAL, credentialName: shop, caCertCredentialName: \"kubernetes-gateway://ca\"}"),
            "spec.servers[0].tls.caCertCredentialName: with a scheme (sds://, kubernetes-gateway://, ...) is not "
            "supported by cxds: name a Secret of the gateway's namespace");
  EXPECT_EQ(tls("{mode: MUTUAL, credentialName: shop, caCertCredentialName: Partners}"),
            "spec.servers[0].tls.caCertCredentialName: must be the name of a Secret in the gateway's namespace "
            "(lower-case letters, digits, '-' and '.')");
  EXPECT_EQ(tls("{mode: MUTUAL, credentialName: shop, caCertCredentialName: \"-cacert\"}"),
            "spec.servers[0].tls.caCertCredentialName: \"-cacert\" alone names no Secret");
  EXPECT_EQ(tls("{mode: SIMPLE, credentialName: shop, caCertCredentialName: \"configmap://edge/ca\"}"), "")
      << "typed, not read, where ignored";
  EXPECT_EQ(tls("{mode: MUTUAL, credentialName: shop, caCertCredentialName: [a]}"),
            "spec.servers[0].tls.caCertCredentialName: must be a string");
  // One SDS name cannot be both a certificate and the CA.
  EXPECT_EQ(tls("{mode: MUTUAL, credentialNames: [shop, partners-cacert], caCertCredentialName: partners}"),
            "spec.servers[0].tls.credentialNames: \"partners-cacert\" is the name of the CA that checks clients "
            "here (kubernetes://partners-cacert): as a certificate it is not supported by cxds");
  EXPECT_EQ(tls("{mode: MUTUAL, credentialNames: [shop, shop-cacert], caCertCredentialName: partners}"), "")
      << "the first Secret's CA is not read then";
  EXPECT_EQ(tls("{mode: MUTUAL, credentialName: shop, caCertCredentialName: \"\"}"), "") << "empty: unset";
}

// TCP and TLS servers, as istiod reads them: the protocol and the tls mode say which routes
// of the bound VirtualServices a server serves.
TEST(YamlLoaderTest, TcpAndTlsGatewayServersServeTcpOrTlsRoutes) {
  const ParsedFile good = ParseConfigFile("gw.yaml", R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: edge, namespace: edge}
spec:
  servers:
  - port: {number: 31400, name: tcp, protocol: TCP}
    hosts: ["*"]
  - port: {number: 27017, name: mongo, protocol: MONGO}
    hosts: [db.example.com]
  - port: {number: 443, name: tls, protocol: TLS}
    hosts: [nginx.example.com]
    tls: {mode: PASSTHROUGH}
  - port: {number: 8443, name: https-pass, protocol: HTTPS}
    hosts: [api.example.com]
    tls: {mode: PASSTHROUGH}
  - port: {number: 9443, name: tls-end, protocol: TLS}
    hosts: [db.example.com]
    tls: {mode: SIMPLE, credentialName: db-cert}
  - port: {number: 9445, name: tls-default, protocol: TLS}
    hosts: [nginx.example.com]
    tls: {}
)");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const auto& servers = std::get<Gateway>(good.documents[0].object).servers;
  ASSERT_EQ(servers.size(), 6u);
  using Routes = Gateway::Server::Routes;
  using Mode = Gateway::Server::TlsMode;
  const std::vector<std::pair<Routes, Mode>> expected = {
      {Routes::kTcp, Mode::kNone},        {Routes::kTcp, Mode::kNone},   {Routes::kTls, Mode::kPassthrough},
      {Routes::kTls, Mode::kPassthrough}, {Routes::kTcp, Mode::kSimple}, {Routes::kTls, Mode::kPassthrough}};
  for (size_t i = 0; i < servers.size(); ++i) {
    EXPECT_EQ(servers[i].routes, expected[i].first) << "server " << i;
    EXPECT_EQ(servers[i].tls_mode, expected[i].second) << "server " << i;
  }
  EXPECT_EQ(servers[4].credential_name, "db-cert");

  const std::string head =
      "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g}\nspec:\n  servers:\n";
  EXPECT_EQ(OnlyError(head + "  - port: {number: 9444, name: tcp-end, protocol: TCP}\n    hosts: [a.example.com]\n"
                             "    tls: {mode: MUTUAL, credentialName: c}\n"),
            "spec.servers[0].tls: cannot be set on a server of protocol TCP, as Istio validates (TLS settings belong "
            "to HTTPS and TLS servers)");
  EXPECT_EQ(OnlyError(head + "  - port: {number: 443, name: tls, protocol: TLS}\n    hosts: [a.example.com]\n"
                             "    tls: {mode: SIMPLE}\n"),
            "spec.servers[0].tls.credentialName: is required for mode SIMPLE: a Secret of the gateway's namespace "
            "with the certificate (or serverCertificate and privateKey, files on the gateway)");
}

// What Istio accepts in a server's tls and istiod ignores is accepted and kept for analysis to
// name with the reason; what Istio refuses is an error; an empty string is unset, as Istio reads it.
TEST(YamlLoaderTest, GatewayTlsFieldsIstioIgnoresAreAcceptedAndNamed) {
  const ParsedFile good = ParseConfigFile("gw.yaml", R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: edge, namespace: edge}
spec:
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: [a.example.com]
    tls: {httpsRedirect: true, credentialName: c, minProtocolVersion: TLSV1_2, subjectAltNames: [x]}
  - port: {number: 443, name: tls, protocol: TLS}
    hosts: [a.example.com]
    tls: {mode: PASSTHROUGH, caCrl: /etc/crl.pem, cipherSuites: [ECDHE-RSA-AES128-GCM-SHA256], httpsRedirect: true}
  - port: {number: 8443, name: https, protocol: HTTPS}
    hosts: [b.example.com]
    tls: {mode: MUTUAL, serverCertificate: /etc/c.pem, privateKey: /etc/k.pem, caCertificates: /etc/ca.pem,
          caCrl: "", credentialName: "", subjectAltNames: []}
  - port: {number: 8080, name: http-auto, protocol: HTTP}
    hosts: [c.example.com]
    tls: {mode: AUTO_PASSTHROUGH}
  - port: {number: 9443, name: https-secret, protocol: HTTPS}
    hosts: [d.example.com]
    tls: {mode: MUTUAL, credentialName: d-cert, caCertificates: /etc/ca.pem, caCrl: /etc/crl.pem, httpsRedirect: yes}
  - port: {number: 9444, name: https-simple, protocol: HTTPS}
    hosts: [e.example.com]
    tls: {mode: SIMPLE, serverCertificate: /etc/c.pem, privateKey: /etc/k.pem, caCertificates: /etc/ca.pem}
)");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const auto& servers = std::get<Gateway>(good.documents[0].object).servers;
  ASSERT_EQ(servers.size(), 6u);
  const auto fields = [](const Gateway::Server& server) {
    std::vector<std::string> out;
    for (const auto& [field, why] : server.ignored_tls_fields) out.push_back(StrCat(field, ": ", why));
    return out;
  };
  EXPECT_TRUE(servers[0].https_redirect);
  EXPECT_EQ(servers[0].tls_mode, Gateway::Server::TlsMode::kNone);
  const std::string plain = ": has no effect on a plain-text server of protocol HTTP";
  EXPECT_THAT(fields(servers[0]),
              ::testing::ElementsAre(StrCat("credentialName", plain), StrCat("minProtocolVersion", plain),
                                     StrCat("subjectAltNames", plain)));
  EXPECT_EQ(servers[1].tls_mode, Gateway::Server::TlsMode::kPassthrough);
  EXPECT_FALSE(servers[1].https_redirect);
  EXPECT_TRUE(servers[1].cipher_suites.empty());
  const std::string pass = ": has no effect with mode PASSTHROUGH, where the gateway does not terminate TLS";
  EXPECT_THAT(fields(servers[1]), ::testing::ElementsAre(StrCat("httpsRedirect", pass), StrCat("caCrl", pass),
                                                         StrCat("cipherSuites", pass)));
  EXPECT_EQ(servers[2].tls_mode, Gateway::Server::TlsMode::kMutual);
  EXPECT_EQ(servers[2].server_certificate, "/etc/c.pem");
  EXPECT_EQ(servers[2].ca_crl, "");
  EXPECT_EQ(servers[2].credential_name, "");
  EXPECT_THAT(fields(servers[2]), ::testing::IsEmpty()) << "empty strings and lists are unset";
  EXPECT_THAT(fields(servers[3]),
              ::testing::ElementsAre("mode: has no effect on a plain-text server of protocol HTTP"));
  EXPECT_EQ(servers[4].credential_name, "d-cert");
  EXPECT_EQ(servers[4].ca_certificates, "");
  const std::string beside = ": has no effect beside credentialName, whose Secret holds the certificates";
  EXPECT_FALSE(servers[4].https_redirect);
  EXPECT_THAT(fields(servers[4]),
              ::testing::ElementsAre(
                  "httpsRedirect: has no effect on a server that terminates TLS: its connections are already TLS",
                  StrCat("caCertificates", beside), StrCat("caCrl", beside)));
  EXPECT_EQ(servers[5].ca_certificates, "");
  EXPECT_THAT(fields(servers[5]),
              ::testing::ElementsAre(
                  "caCertificates: has no effect with mode SIMPLE, where client certificates are not checked"));

  const std::string head =
      "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g}\nspec:\n  servers:\n";
  const std::string http = head + "  - port: {number: 80, name: http, protocol: HTTP}\n    hosts: [a.example.com]\n";
  EXPECT_EQ(OnlyError(http + "    tls: {mode: SIMPLE, credentialName: c}\n"),
            "spec.servers[0].tls.mode: cannot be SIMPLE on a server of protocol HTTP, as Istio validates (TLS is "
            "terminated on HTTPS and TLS servers; httpsRedirect is what a plain-text server may set)");
  EXPECT_EQ(OnlyError(http + "    tls: {httpsRedirect: true, caCertificates: /etc/ca.pem}\n"),
            "spec.servers[0].tls.caCertificates: cannot be set on a server of protocol HTTP, as Istio validates (TLS "
            "is terminated on HTTPS and TLS servers)");
  // Istio's CRL check applies in a passthrough mode, an HTTP server's default too.
  EXPECT_EQ(OnlyError(http + "    tls: {caCrl: /etc/crl.pem, credentialName: c}\n"),
            "spec.servers[0].tls.caCrl: cannot be set with credentialName, as Istio validates (the CRL belongs in the "
            "credential)");
  // Ignored or not, values are checked as Istio's schema checks them.
  EXPECT_EQ(OnlyError(http + "    tls: {minProtocolVersion: TLSV9}\n"),
            "spec.servers[0].tls.minProtocolVersion: must be one of TLS_AUTO, TLSV1_0, TLSV1_1, TLSV1_2, TLSV1_3");
  EXPECT_EQ(OnlyError(http + "    tls: {cipherSuites: foo}\n"), "spec.servers[0].tls.cipherSuites: must be a list");
  EXPECT_EQ(OnlyError(http + "    tls: {caCrl: {a: b}}\n"), "spec.servers[0].tls.caCrl: must be a string");
  const std::string https =
      head + "  - port: {number: 443, name: https, protocol: HTTPS}\n    hosts: [a.example.com]\n";
  EXPECT_EQ(OnlyError(https + "    tls: {mode: SIMPLE, credentialName: c, serverCertificate: /c, privateKey: /k}\n"),
            "spec.servers[0].tls: may have only one of credentialName, credentialNames, serverCertificate with "
            "privateKey, and tlsCertificates, as Istio validates (one source of the certificate)");
  EXPECT_EQ(OnlyError(https + "    tls: {credentialName: c, serverCertificate: /c, privateKey: /k}\n"),
            "spec.servers[0].tls: may have only one of credentialName, credentialNames, serverCertificate with "
            "privateKey, and tlsCertificates, as Istio validates (one source of the certificate)")
      << "in PASSTHROUGH too";
  // A SIMPLE server checks no client: what would is ignored and said, but for subjectAltNames
  // beside a credentialName, which istiod still matches; false is unset.
  const ParsedFile simple = ParseConfigFile(
      "gw.yaml", https +
                     "    tls: {mode: SIMPLE, credentialName: c, verifyCertificateSpki: [x], insecureSkipVerify: "
                     "true, caCertCredentialName: ca}\n");
  ASSERT_EQ(simple.documents.size(), 1u) << Errors(simple);
  EXPECT_EQ(std::get<Gateway>(simple.documents[0].object).servers[0].ignored_tls_fields.size(), 3u);
  EXPECT_EQ(OnlyError(https + "    tls: {mode: SIMPLE, credentialName: c, subjectAltNames: [a]}\n"),
            "spec.servers[0].tls.subjectAltNames: is not supported by cxds with mode SIMPLE (no client certificate "
            "is asked for; istiod would check one for these names without a CA)");
  EXPECT_EQ(OnlyError(https + "    tls: {mode: MUTUAL, credentialName: c, insecureSkipVerify: false}\n"), "");
  EXPECT_EQ(OnlyError(https + "    tls: {mode: SIMPLE, credentialName: c, subjectAltNames: a}\n"),
            "spec.servers[0].tls.subjectAltNames: must be a list");
  // An empty or null path is not given: a required one is missing.
  EXPECT_EQ(OnlyError(https + "    tls: {mode: SIMPLE, serverCertificate: \"\", privateKey: /k}\n"),
            "spec.servers[0].tls.serverCertificate: is required for mode SIMPLE without credentialName (a file on "
            "the gateway; or name a Secret of the gateway's namespace in credentialName)");
  EXPECT_EQ(OnlyError(https + "    tls: {mode: SIMPLE, serverCertificate: ~, privateKey: /k}\n"),
            "spec.servers[0].tls.serverCertificate: is required for mode SIMPLE without credentialName (a file on "
            "the gateway; or name a Secret of the gateway's namespace in credentialName)");
  EXPECT_EQ(OnlyError(https + "    tls: ~\n"),
            "spec.servers[0].tls: is required for an HTTPS server (mode, and credentialName to terminate)")
      << "a null tls is none, as Istio reads it";
  // A protocol cxds refuses is one error, not two.
  EXPECT_EQ(OnlyError(head + "  - port: {number: 80, name: web, protocol: GRPC-WEB}\n    hosts: [a.example.com]\n"
                             "    tls: {httpsRedirect: true}\n"),
            "spec.servers[0].port.protocol: protocol GRPC-WEB at a Gateway is not supported by cxds (HTTP, HTTP2, "
            "GRPC, HTTPS, TCP, MONGO, REDIS, MYSQL and TLS servers are)");
}

TEST(YamlLoaderTest, OneBadDocumentDoesNotTakeTheOthersDown) {
  const ParsedFile parsed = ParseConfigFile("x.yaml", R"(apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: good}
spec: {address: 127.0.0.1}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: bad}
spec: {address: 127.0.0.2, ports: {http: 70000}}
)");
  ASSERT_EQ(parsed.documents.size(), 1u);
  EXPECT_EQ(MetaOf(parsed.documents[0].object).name, "good");
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_EQ(parsed.errors[0].field, "spec.ports.http");
}

TEST(YamlLoaderTest, ASyntaxErrorRejectsTheFileWithItsLine) {
  const ParsedFile parsed = ParseConfigFile("half.yaml", "kind: ServiceEntry\nspec: {hosts: [a\n");
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_GT(parsed.errors[0].line, 0);
  EXPECT_TRUE(parsed.unidentified_failure);
  EXPECT_TRUE(parsed.documents.empty());
}

TEST(YamlLoaderTest, WeightsMustAddUpAndValuesAreChecked) {
  const ParsedFile parsed = ParseConfigFile("x.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v}
spec:
  hosts: [a]
  http:
  - route:
    - {destination: {host: a}, weight: 50}
    - {destination: {host: a}, weight: 40}
    timeout: soon
)");
  ASSERT_EQ(parsed.errors.size(), 2u) << Errors(parsed);
  EXPECT_EQ(parsed.errors[0].message, "weights must add up to 100, got 90");
  EXPECT_EQ(parsed.errors[1].field, "spec.http[0].timeout");
}

TEST(YamlLoaderTest, UnchangedContentHasTheSameHash) {
  const char* doc =
      "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: a}\nspec: {address: 127.0.0.1}\n";
  const ParsedFile a = ParseConfigFile("a.yaml", doc);
  const ParsedFile b = ParseConfigFile("a.yaml", std::string("# a comment\n") + doc);
  ASSERT_EQ(a.documents.size(), 1u);
  ASSERT_EQ(b.documents.size(), 1u);
  EXPECT_EQ(a.documents[0].content_hash, b.documents[0].content_hash);
}

TEST(YamlLoaderTest, ConfigFileNamesSkipEditorTemporaries) {
  EXPECT_TRUE(IsConfigFileName("a/b.yaml"));
  EXPECT_TRUE(IsConfigFileName("b.yml"));
  EXPECT_TRUE(IsConfigFileName("b.json"));
  EXPECT_FALSE(IsConfigFileName("a/.b.yaml.swp"));
  EXPECT_FALSE(IsConfigFileName("a/.#b.yaml"));
  EXPECT_FALSE(IsConfigFileName("b.yaml~"));
  EXPECT_FALSE(IsConfigFileName("b.txt"));
}

// loadBalancer.warmup and warmupDurationSecs with Istio's validation: each wrong value named by
// its field.
TEST(YamlLoaderTest, WarmupIsReadAndItsValuesChecked) {
  const std::string head = R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: d}
spec:
  host: a
  trafficPolicy:
    loadBalancer: )";
  const ParsedFile good =
      ParseConfigFile("x.yaml", head + "{warmup: {duration: 1m, minimumPercent: 0, aggression: 0.5}}\n");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const auto& warmup = std::get<DestinationRule>(good.documents[0].object).traffic_policy->warmup;
  ASSERT_TRUE(warmup.has_value());
  EXPECT_EQ(warmup->duration, absl::Minutes(1));
  EXPECT_TRUE(warmup->full_form);
  EXPECT_DOUBLE_EQ(warmup->minimum_percent, 0);
  EXPECT_DOUBLE_EQ(warmup->aggression, 0.5);
  const ParsedFile old = ParseConfigFile("x.yaml", head + "{simple: ROUND_ROBIN, warmupDurationSecs: 90s}\n");
  ASSERT_EQ(old.documents.size(), 1u) << Errors(old);
  const auto& deprecated = std::get<DestinationRule>(old.documents[0].object).traffic_policy->warmup;
  ASSERT_TRUE(deprecated.has_value());
  EXPECT_EQ(deprecated->duration, absl::Seconds(90));
  EXPECT_FALSE(deprecated->full_form);
  const auto error_of = [&](const std::string& value) { return OnlyError(head + value + "\n"); };
  const std::string f = "spec.trafficPolicy.loadBalancer.";
  EXPECT_EQ(error_of("{warmup: {minimumPercent: 5}}"), f + "warmup.duration: is required");
  EXPECT_EQ(error_of("{warmup: {duration: 0s}}"), f + "warmup.duration: must be at least 1ms");
  // The deprecated field is not validated by Istio: any duration, passed on as istiod does.
  const ParsedFile short_window = ParseConfigFile("dr.yaml", head + "{warmupDurationSecs: 0.5ms}\n");
  ASSERT_EQ(short_window.documents.size(), 1u) << Errors(short_window);
  EXPECT_EQ(error_of("{warmup: {duration: 1s, minimumPercent: 101}}"),
            f + "warmup.minimumPercent: must be a number from 0 to 100, got \"101\"");
  EXPECT_EQ(error_of("{warmup: {duration: 1s, aggression: 0}}"),
            f + "warmup.aggression: must be a number above 0, got \"0\"");
  EXPECT_EQ(error_of("{warmup: {duration: 1s, aggression: nan}}"),
            f + "warmup.aggression: must be a number above 0, got \"nan\"");
  EXPECT_EQ(error_of("{warmup: {duration: 1s, rampUp: 2}}"), f + "warmup.rampUp: unknown field");
}

// VirtualService faults with Istio's validation: each wrong value named by its field.
TEST(YamlLoaderTest, FaultsAreReadAndTheirValuesChecked) {
  const std::string head = R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v}
spec:
  hosts: [a]
  http:
  - route: [{destination: {host: a}}]
    fault: )";
  const ParsedFile good =
      ParseConfigFile("x.yaml", head +
                                    "{delay: {fixedDelay: 250ms, percentage: {value: 0.5}}, abort: {grpcStatus: "
                                    "NOT_FOUND, percentage: {value: 20}}}\n");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const auto& fault = std::get<VirtualService>(good.documents[0].object).http[0].fault;
  ASSERT_TRUE(fault.has_value());
  EXPECT_EQ(fault->delay->fixed_delay, absl::Milliseconds(250));
  EXPECT_DOUBLE_EQ(fault->delay->percent, 0.5);
  EXPECT_FALSE(fault->delay->whole_percent.has_value());
  EXPECT_EQ(fault->abort->grpc_status, 5u);
  EXPECT_DOUBLE_EQ(fault->abort->percent, 20);
  // A delay's deprecated integer percent (istiod sends it in hundredths), or neither given (0,
  // in the same form); `percentage: {}` is 0, as Istio reads a Percent without a value.
  const auto delay_of = [&](const std::string& value) {
    const ParsedFile file = ParseConfigFile("x.yaml", head + value + "\n");
    EXPECT_EQ(file.documents.size(), 1u) << value << ": " << Errors(file);
    return file.documents.empty() ? FaultInjection::Delay{}
                                  : *std::get<VirtualService>(file.documents[0].object).http[0].fault->delay;
  };
  const FaultInjection::Delay whole = delay_of("{delay: {fixedDelay: 1s, percent: 30}}");
  EXPECT_EQ(whole.whole_percent, 30);
  // Istio takes any int32 (its validation checks only percentage); istiod sends it as a uint32.
  EXPECT_EQ(delay_of("{delay: {fixedDelay: 1s, percent: 150}}").whole_percent, 150);
  EXPECT_EQ(delay_of("{delay: {fixedDelay: 1s, percent: -5}}").whole_percent, -5);
  // The forms Istio's YAML (1.1) and JSON reading take as an integer.
  EXPECT_EQ(delay_of("{delay: {fixedDelay: 1s, percent: 0x10}}").whole_percent, 16);
  EXPECT_EQ(delay_of("{delay: {fixedDelay: 1s, percent: 010}}").whole_percent, 8) << "YAML 1.1 octal";
  EXPECT_EQ(delay_of("{delay: {fixedDelay: 1s, percent: 1e2}}").whole_percent, 100);
  EXPECT_EQ(delay_of("{delay: {fixedDelay: 1s, percent: 50.0}}").whole_percent, 50);
  EXPECT_EQ(delay_of("{delay: {fixedDelay: 1s, percent: 1_0}}").whole_percent, 10);
  EXPECT_EQ(delay_of("{delay: {fixedDelay: 1s, percent: -0b11}}").whole_percent, -3);
  const FaultInjection::Delay neither = delay_of("{delay: {fixedDelay: 1s}}");
  EXPECT_EQ(neither.whole_percent, 0);
  const FaultInjection::Delay empty = delay_of("{delay: {fixedDelay: 1s, percentage: {}}}");
  EXPECT_DOUBLE_EQ(empty.percent, 0);
  EXPECT_FALSE(empty.whole_percent.has_value());
  const FaultInjection::Delay both = delay_of("{delay: {fixedDelay: 1s, percentage: {value: 5}, percent: 30}}");
  EXPECT_DOUBLE_EQ(both.percent, 5) << "percentage wins, as in istiod";
  EXPECT_FALSE(both.whole_percent.has_value());
  const auto error_of = [&](const std::string& value) { return OnlyError(head + value + "\n"); };
  EXPECT_EQ(error_of("{}"), "spec.http[0].fault: needs a delay or an abort");
  EXPECT_EQ(error_of("{delay: {percentage: {value: 10}}}"), "spec.http[0].fault.delay.fixedDelay: is required");
  EXPECT_EQ(error_of("{delay: {fixedDelay: 0s}}"), "spec.http[0].fault.delay.fixedDelay: must be at least 1ms");
  EXPECT_EQ(error_of("{delay: {fixedDelay: 1s, percentage: {value: 101}}}"),
            "spec.http[0].fault.delay.percentage.value: must be a number from 0 to 100, got \"101\"");
  EXPECT_EQ(error_of("{abort: {httpStatus: 700}}"),
            "spec.http[0].fault.abort.httpStatus: must be an integer from 200 to 599, got \"700\"");
  EXPECT_EQ(error_of("{abort: {grpcStatus: \"14\"}}"),
            "spec.http[0].fault.abort.grpcStatus: must be a gRPC status name such as UNAVAILABLE or NOT_FOUND, got "
            "\"14\"");
  EXPECT_EQ(error_of("{abort: {percentage: {value: 1}}}"), "spec.http[0].fault.abort: needs httpStatus or grpcStatus");
  EXPECT_EQ(error_of("{abort: {httpStatus: 503, grpcStatus: UNAVAILABLE}}"),
            "spec.http[0].fault.abort: has both httpStatus and grpcStatus: give one");
  EXPECT_EQ(error_of("{abort: {http2Error: CANCEL}}"), "spec.http[0].fault.abort.http2Error: is not supported by cxds");
  // Istio's abort has no integer percent (its CRD refuses one).
  EXPECT_EQ(error_of("{abort: {httpStatus: 503, percent: 50}}"),
            "spec.http[0].fault.abort.percent: is not a field of Istio's abort (only a delay has the deprecated "
            "integer percent): use percentage.value");
  EXPECT_EQ(error_of("{delay: {fixedDelay: 1s, percent: half}}"),
            "spec.http[0].fault.delay.percent: must be an integer from -2147483648 to 2147483647, got \"half\"");
  EXPECT_EQ(error_of("{delay: {fixedDelay: 1s, percentage: {value: 5}, percent: 2147483648}}"),
            "spec.http[0].fault.delay.percent: must be an integer from -2147483648 to 2147483647, got "
            "\"2147483648\"")
      << "checked even where percentage wins";
  EXPECT_EQ(error_of("{delay: {fixedDelay: 315576000000s}}"), "") << "protobuf's largest whole-second duration";
  EXPECT_EQ(error_of("{delay: {fixedDelay: 315576000000.5s}}"), "") << "with nanos on top, still protobuf's";
  EXPECT_EQ(error_of("{delay: {fixedDelay: 315576000001s}}"),
            "spec.http[0].fault.delay.fixedDelay: must be at most 315576000000.999999999s (10,000 years, the largest "
            "duration a proxy accepts), got \"315576000001s\"");
  EXPECT_EQ(error_of("{delay: {fixedDelay: 1s, percent: 50.5}}"),
            "spec.http[0].fault.delay.percent: must be an integer from -2147483648 to 2147483647, got \"50.5\"");
  EXPECT_EQ(error_of("{delay: {fixedDelay: 1s, percent: 0x80000000}}"),
            "spec.http[0].fault.delay.percent: must be an integer from -2147483648 to 2147483647, got "
            "\"0x80000000\"");
  EXPECT_EQ(error_of("{delay: {fixedDelay: 100000000000h}}"),
            "spec.http[0].fault.delay.fixedDelay: must be at most 315576000000.999999999s (10,000 years, the largest "
            "duration a proxy accepts), got \"100000000000h\"");
}

// redirect and directResponse replace route[]: Istio's exclusions are errors, the rest of what
// acts on the upstream request is not supported with them.
TEST(YamlLoaderTest, RedirectsAndDirectResponsesAreReadAndChecked) {
  const std::string head = R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v}
spec:
  hosts: [a]
  http:
  - )";
  const ParsedFile good = ParseConfigFile(
      "x.yaml", head +
                    "redirect: {uri: /b, authority: c, port: 81, scheme: https, redirectCode: 302}\n  - "
                    "directResponse: {status: 404, body: {bytes: \"aGk=\"}}\n");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const VirtualService& vs = std::get<VirtualService>(good.documents[0].object);
  ASSERT_EQ(vs.http.size(), 2u);
  ASSERT_TRUE(vs.http[0].redirect.has_value());
  EXPECT_EQ(vs.http[0].redirect->uri, "/b");
  EXPECT_EQ(vs.http[0].redirect->authority, "c");
  EXPECT_EQ(vs.http[0].redirect->port, 81u);
  EXPECT_EQ(vs.http[0].redirect->scheme, "https");
  EXPECT_EQ(vs.http[0].redirect->code, 302u);
  EXPECT_TRUE(vs.http[0].route.empty());
  ASSERT_TRUE(vs.http[1].direct_response.has_value());
  EXPECT_EQ(vs.http[1].direct_response->status, 404u);
  EXPECT_EQ(vs.http[1].direct_response->body, "hi");

  const auto error_of = [&](const std::string& rule) { return OnlyError(head + rule + "\n"); };
  EXPECT_EQ(error_of("{redirect: {uri: /b}, route: [{destination: {host: a}}]}"),
            "spec.http[0].route: cannot be used with redirect");
  EXPECT_EQ(error_of("{directResponse: {status: 200}, rewrite: {uri: /x}}"),
            "spec.http[0].rewrite: cannot be used with directResponse");
  EXPECT_EQ(error_of("{redirect: {uri: /b}, directResponse: {status: 200}}"),
            "spec.http[0].directResponse: cannot be used with redirect");
  EXPECT_EQ(error_of("{redirect: {uri: /b}, timeout: 1s}"),
            "spec.http[0].timeout: with redirect is not supported by cxds (nothing goes upstream)");
  EXPECT_EQ(error_of("{redirect: {}}"), "spec.http[0].redirect: needs uri, authority, port or scheme");
  EXPECT_EQ(error_of("{redirect: {uri: b}}"), "spec.http[0].redirect.uri: must start with /");
  EXPECT_EQ(error_of("{redirect: {uri: /b, redirectCode: 304}}"),
            "spec.http[0].redirect.redirectCode: 304 is not supported by cxds (Envoy redirects with 301, 302, 303, "
            "307 or 308)");
  EXPECT_EQ(error_of("{redirect: {derivePort: FROM_SOMEWHERE}}"),
            "spec.http[0].redirect.derivePort: must be one of FROM_PROTOCOL_DEFAULT, FROM_REQUEST_PORT");
  EXPECT_EQ(error_of("{redirect: {port: 8443, derivePort: FROM_REQUEST_PORT}}"),
            "spec.http[0].redirect.derivePort: give port or derivePort, not both");
  EXPECT_EQ(error_of("{directResponse: {body: {string: x}}}"), "spec.http[0].directResponse.status: is required");
  EXPECT_EQ(error_of("{directResponse: {status: 200, body: {bytes: \"%%%\"}}}"),
            "spec.http[0].directResponse.body.bytes: is not base64");
  EXPECT_EQ(error_of("{directResponse: {status: 200, body: {string: " + std::string(4097, 'x') + "}}}"),
            "spec.http[0].directResponse.body: is 4097 bytes: longer than 4096 bytes is not supported by cxds "
            "(Envoy's default max_direct_response_body_size_bytes)");
}

TEST(YamlLoaderTest, ConsistentHashIsOneKeyOnARing) {
  const std::string head = R"(apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: d}
spec:
  host: a
  trafficPolicy:
    loadBalancer: )";
  const ParsedFile good = ParseConfigFile(
      "x.yaml", head +
                    "{consistentHash: {httpCookie: {name: user, path: /, ttl: 10s}, ringHash: {minimumRingSize: "
                    "64}}}\n");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const auto& hash = std::get<DestinationRule>(good.documents[0].object).traffic_policy->consistent_hash;
  ASSERT_TRUE(hash.has_value());
  EXPECT_EQ(hash->key, TrafficPolicy::ConsistentHash::Key::kCookie);
  EXPECT_EQ(hash->name, "user");
  EXPECT_EQ(hash->cookie_path, "/");
  EXPECT_EQ(hash->cookie_ttl, absl::Seconds(10));
  EXPECT_EQ(hash->minimum_ring_size, 64u);
  const auto error_of = [&](const std::string& value) { return OnlyError(head + value + "\n"); };
  EXPECT_EQ(error_of("{consistentHash: {}}"),
            "spec.trafficPolicy.loadBalancer.consistentHash: needs one of httpHeaderName, httpCookie, useSourceIp, "
            "httpQueryParameterName");
  EXPECT_EQ(error_of("{consistentHash: {httpHeaderName: x, useSourceIp: true}}"),
            "spec.trafficPolicy.loadBalancer.consistentHash: give one of httpHeaderName, httpCookie, useSourceIp, "
            "httpQueryParameterName");
  EXPECT_EQ(error_of("{simple: RANDOM, consistentHash: {useSourceIp: true}}"),
            "spec.trafficPolicy.loadBalancer.consistentHash: give simple or consistentHash, not both");
  EXPECT_EQ(error_of("{consistentHash: {httpHeaderName: x, minimumRingSize: 0}}"),
            "spec.trafficPolicy.loadBalancer.consistentHash.minimumRingSize: must be an integer from 1 to 8388608, "
            "got \"0\"");
  EXPECT_EQ(error_of("{consistentHash: {maglev: {tableSize: 65537}}}"),
            "spec.trafficPolicy.loadBalancer.consistentHash.maglev: is not supported by cxds");
}

// A VirtualService with one HTTP route, which tests extend by appending the route's fields.
constexpr char kOneRouteVirtualService[] = R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v}
spec:
  hosts: [a]
  http:
  - route: [{destination: {host: a}}]
)";

TEST(YamlLoaderTest, RouteHeadersRewritesMirrorsAndMatchesAreChecked) {
  const std::string head = kOneRouteVirtualService;
  const auto error_of = [&](const std::string& more) { return OnlyError(head + more); };
  EXPECT_EQ(error_of("    headers: {request: {set: {Host: x}}}\n"),
            "spec.http[0].headers.request.set.Host: changing the host header by header operations is not supported "
            "by cxds (use rewrite.authority)");
  EXPECT_EQ(error_of("    headers: {request: {add: {\":authority\": x}}}\n"),
            "spec.http[0].headers.request.add.:authority: changing the host header by header operations is not "
            "supported by cxds (use rewrite.authority)")
      << "Istio takes it as the authority rewrite";
  EXPECT_EQ(error_of("    match: [{headers: {\"@Request.Auth.Claims.group\": {exact: a}}}]\n"),
            "spec.http[0].match[0].headers.@Request.Auth.Claims.group: routing by JWT claim is not supported by cxds "
            "(it needs a RequestAuthentication, which cxds does not read)")
      << "Istio compares the prefix ignoring case";
  EXPECT_EQ(
      error_of("    corsPolicy: {allowOrigins: [{exact: \"https://a.example\"}], allowHeaders: [x.custom, \"*\"], "
               "exposeHeaders: [x-b]}\n"),
      "")
      << "CORS header names are HTTP tokens too";
  EXPECT_EQ(error_of("    corsPolicy: {allowOrigins: [{exact: \"https://a.example\"}], allowHeaders: [\"a,b\"]}\n"),
            "spec.http[0].corsPolicy.allowHeaders[0]: must be a method or header name (an HTTP token: letters, digits "
            "and !#$%&'*+-.^_`|~), or *");
  EXPECT_EQ(error_of("    headers: {response: {remove: [\"bad header\"]}}\n"),
            "spec.http[0].headers.response.remove[0]: a header name other than an HTTP token (letters, digits and "
            "!#$%&'*+-.^_`|~) is not supported by cxds")
      << "Istio takes it";
  EXPECT_EQ(error_of("    headers: {response: {remove: [\":status\"]}}\n"),
            "spec.http[0].headers.response.remove[0]: must be a header name (an HTTP token: letters, digits and "
            "!#$%&'*+-.^_`|~)")
      << "Istio refuses a ':' prefix in an operation";
  EXPECT_EQ(error_of("    headers: {request: {set: {x.trace~id: v}}}\n"), "") << "an HTTP token";
  // Match names: an HTTP token or a pseudo-header; a JWT claim, which Istio takes too, is not
  // served.
  EXPECT_EQ(error_of("    match: [{headers: {\"x.custom!\": {exact: a}}, withoutHeaders: {\"X_B\": {exact: b}}}]\n"),
            "");
  EXPECT_EQ(error_of("    match: [{headers: {\"@request.auth.claims.group\": {exact: a}}}]\n"),
            "spec.http[0].match[0].headers.@request.auth.claims.group: routing by JWT claim is not supported by cxds "
            "(it needs a RequestAuthentication, which cxds does not read)");
  EXPECT_EQ(error_of("    match: [{withoutHeaders: {\":path\": {prefix: /a}}, headers: {\":status\": {exact: "
                     "\"200\"}}}]\n"),
            "")
      << "Istio's five pseudo-headers";
  EXPECT_EQ(error_of("    match: [{headers: {\":Path\": {prefix: /a}}}]\n"),
            "spec.http[0].match[0].headers.:Path: must be a header name (an HTTP token: letters, digits and "
            "!#$%&'*+-.^_`|~)")
      << "as Istio's list has them";
  EXPECT_EQ(error_of("    match: [{headers: {\"a b\": {exact: a}}}]\n"),
            "spec.http[0].match[0].headers.a b: must be a header name (an HTTP token: letters, digits and "
            "!#$%&'*+-.^_`|~)");
  EXPECT_EQ(error_of("    rewrite: {uri: v2}\n"), "spec.http[0].rewrite.uri: must start with /");
  EXPECT_EQ(error_of("    rewrite: {}\n"), "spec.http[0].rewrite: needs uri, authority or uriRegexRewrite");
  EXPECT_EQ(error_of("    rewrite: {uri: /x, uriRegexRewrite: {match: a, rewrite: b}}\n"),
            "spec.http[0].rewrite.uriRegexRewrite: cannot be used with rewrite.uri");
  EXPECT_EQ(error_of("    rewrite: {uriRegexRewrite: {match: \"a(\", rewrite: b}}\n"),
            "spec.http[0].rewrite.uriRegexRewrite.match: is not an RE2 regular expression: missing ): a(");
  EXPECT_EQ(error_of("    rewrite: {uriRegexRewrite: {rewrite: b}}\n"),
            "spec.http[0].rewrite.uriRegexRewrite.match: is required");
  EXPECT_EQ(error_of("    mirror: {host: b}\n    mirrors: [{destination: {host: c}}]\n"),
            "spec.http[0].mirrors: cannot be used with mirror");
  EXPECT_EQ(error_of("    mirrors: [{percentage: {value: 5}}]\n"), "spec.http[0].mirrors[0].destination: is required");
  EXPECT_EQ(error_of("    mirrors: [{destination: {host: c}, percentage: {value: 101}}]\n"),
            "spec.http[0].mirrors[0].percentage.value: must be a number from 0 to 100, got \"101\"");
  EXPECT_EQ(error_of("    mirrorPercentage: {value: 101}\n"),
            "spec.http[0].mirrorPercentage.value: must be a number from 0 to 100, got \"101\"")
      << "checked without a mirror too";
  EXPECT_EQ(error_of("    mirror: {host: b, subset: V1}\n"),
            "spec.http[0].mirror.subset: must be a DNS label (a-z, 0-9, '-')");
  EXPECT_EQ(error_of("    match: [{queryParams: {q: {prefx: x}}}]\n"),
            "spec.http[0].match[0].queryParams.q.prefx: unknown field (did you mean \"prefix\"?)");
  EXPECT_EQ(error_of("    match: [{method: {exact: GET}, statPrefix: [x]}]\n"),
            "spec.http[0].match[0].statPrefix: must be a string");
  EXPECT_EQ(error_of("    match: [{sourceNamespace: Web}]\n"),
            "spec.http[0].match[0].sourceNamespace: must be a namespace name, a DNS label (a-z, 0-9, '-'; at most 63 "
            "characters)");
  EXPECT_EQ(error_of("    match: [{sourceLabels: {app: [x]}}]\n"),
            "spec.http[0].match[0].sourceLabels.app: must be a string");
  EXPECT_EQ(error_of("    match: [{gateways: [mesh, ingress.istio-system]}]\n"),
            "spec.http[0].match[0].gateways[1]: gateway \"ingress.istio-system\": the name.namespace form is not "
            "supported by cxds (write namespace/name)");
  EXPECT_EQ(error_of("    match: [{gateways: [Istio-System/ingress]}]\n"),
            "spec.http[0].match[0].gateways[0]: gateway \"Istio-System/ingress\": the namespace must be a DNS label "
            "(a-z, 0-9, '-')");
  {
    const ParsedFile sourced = ParseConfigFile(
        "x.yaml", head +
                      "    match: [{sourceLabels: {app: web, track: canary}, sourceNamespace: shop}, "
                      "{gateways: [mesh]}, {gateways: []}, {gateways: [istio-system/ingress, edge]}]\n");
    ASSERT_EQ(sourced.documents.size(), 1u) << Errors(sourced);
    const auto& matches = std::get<VirtualService>(sourced.documents[0].object).http[0].match;
    ASSERT_EQ(matches.size(), 4u);
    EXPECT_EQ(matches[0].source_labels, (LabelMap{{"app", "web"}, {"track", "canary"}}));
    EXPECT_EQ(matches[0].source_namespace, "shop");
    EXPECT_THAT(matches[0].gateways, ::testing::IsEmpty());
    EXPECT_THAT(matches[1].gateways, ::testing::ElementsAre("mesh"));
    EXPECT_THAT(matches[2].gateways, ::testing::IsEmpty()) << "an empty list is no gateways, as in Istio";
    EXPECT_THAT(matches[3].gateways, ::testing::ElementsAre("istio-system/ingress", "default/edge"))
        << "a bare name is of the VirtualService's namespace";
  }
  const ParsedFile good = ParseConfigFile(
      "x.yaml", head +
                    "    mirror: {host: b}\n    mirrorPercent: 5\n    match: [{withoutHeaders: {x-a: {prefix: b}}, "
                    "ignoreUriCase: true, scheme: {exact: http}}]\n");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const HttpRoute& route = std::get<VirtualService>(good.documents[0].object).http[0];
  ASSERT_EQ(route.mirrors.size(), 1u);
  EXPECT_TRUE(route.mirrors[0].single);
  EXPECT_EQ(route.mirrors[0].destination.host, "b");
  EXPECT_DOUBLE_EQ(route.mirrors[0].percent, 5);
  EXPECT_EQ(route.mirror_percent, 5u);
  EXPECT_FALSE(route.mirror_percentage.has_value());
  EXPECT_TRUE(route.match[0].ignore_uri_case);
  EXPECT_EQ(route.match[0].without_headers.at("x-a").value, "b");
  EXPECT_EQ(route.match[0].scheme->value, "http");
}

TEST(YamlLoaderTest, MirrorsAndARegexRewriteAreRead) {
  const ParsedFile good = ParseConfigFile("x.yaml", std::string(kOneRouteVirtualService) + R"(    rewrite:
      uriRegexRewrite: {match: "^/service/([^/]+)(/.*)$", rewrite: "\\2/instance/\\1"}
    mirrors:
    - destination: {host: b, subset: v2}
      percentage: {value: 12.5}
    - destination: {host: c}
)");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const HttpRoute& route = std::get<VirtualService>(good.documents[0].object).http[0];
  ASSERT_TRUE(route.rewrite.has_value());
  EXPECT_EQ(route.rewrite->regex_match, "^/service/([^/]+)(/.*)$");
  EXPECT_EQ(route.rewrite->regex_rewrite, "\\2/instance/\\1");
  EXPECT_TRUE(route.rewrite->uri.empty());
  ASSERT_EQ(route.mirrors.size(), 2u);
  EXPECT_FALSE(route.mirrors[0].single);
  EXPECT_FALSE(route.mirrors[1].single);
  EXPECT_EQ(route.mirrors[0].destination.subset, "v2");
  EXPECT_DOUBLE_EQ(route.mirrors[0].percent, 12.5);
  EXPECT_EQ(route.mirrors[1].destination.host, "c");
  EXPECT_DOUBLE_EQ(route.mirrors[1].percent, 100);  // Istio's default: all of it
}

// Istio accepts mirrorPercentage without a mirror: a delegate's route sets its delegating
// route's mirror's percentage that way. mirrorPercentage wins over mirrorPercent.
TEST(YamlLoaderTest, AMirrorPercentageWithoutAMirrorIsKept) {
  const ParsedFile parsed = ParseConfigFile(
      "x.yaml", std::string(kOneRouteVirtualService) + "    mirrorPercentage: {value: 7.5}\n    mirrorPercent: 40\n");
  ASSERT_EQ(parsed.documents.size(), 1u) << Errors(parsed);
  const HttpRoute& route = std::get<VirtualService>(parsed.documents[0].object).http[0];
  EXPECT_TRUE(route.mirrors.empty());
  EXPECT_EQ(route.mirror_percentage, 7.5);
  EXPECT_EQ(route.mirror_percent, 40u);
  EXPECT_DOUBLE_EQ(route.SingleMirrorPercent(), 7.5);
}

// A Percent without a value is 0, as Istio reads it: `mirrorPercentage: {}` mirrors nothing.
TEST(YamlLoaderTest, AnEmptyMirrorPercentageIsZero) {
  const ParsedFile parsed = ParseConfigFile(
      "x.yaml", std::string(kOneRouteVirtualService) + "    mirror: {host: b}\n    mirrorPercentage: {}\n");
  ASSERT_EQ(parsed.documents.size(), 1u) << Errors(parsed);
  const HttpRoute& route = std::get<VirtualService>(parsed.documents[0].object).http[0];
  EXPECT_EQ(route.mirror_percentage, 0.0);
  ASSERT_EQ(route.mirrors.size(), 1u);
  EXPECT_DOUBLE_EQ(route.mirrors[0].percent, 0);
}

TEST(YamlLoaderTest, ACorsPolicyIsReadAndItsNamesChecked) {
  const ParsedFile good = ParseConfigFile("x.yaml", std::string(kOneRouteVirtualService) + R"(    corsPolicy:
      allowOrigins: [{exact: "https://shop.example.com"}, {regex: "https://.*[.]example[.]org"}]
      allowMethods: [GET, POST]
      allowHeaders: [x-custom, content-type]
      exposeHeaders: [x-trace]
      maxAge: 24h
      allowCredentials: true
)");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const HttpRoute& route = std::get<VirtualService>(good.documents[0].object).http[0];
  ASSERT_TRUE(route.cors.has_value());
  ASSERT_EQ(route.cors->allow_origins.size(), 2u);
  EXPECT_EQ(route.cors->allow_origins[1].kind, StringMatch::Kind::kRegex);
  EXPECT_THAT(route.cors->allow_methods, ::testing::ElementsAre("GET", "POST"));
  EXPECT_THAT(route.cors->expose_headers, ::testing::ElementsAre("x-trace"));
  EXPECT_EQ(route.cors->max_age, absl::Hours(24));
  EXPECT_EQ(route.cors->allow_credentials, true);

  const auto error_of = [](const std::string& more) { return OnlyError(kOneRouteVirtualService + more); };
  EXPECT_EQ(
      error_of("    corsPolicy: {allowMethods: [\"GET,POST\"]}\n"),
      "spec.http[0].corsPolicy.allowMethods[0]: must be a method or header name (an HTTP token: letters, digits and "
      "!#$%&'*+-.^_`|~), or *");
  EXPECT_EQ(error_of("    corsPolicy: {allowOrigins: [{regex: \"(\"}]}\n"),
            "spec.http[0].corsPolicy.allowOrigins[0].regex: is not an RE2 regular expression: missing ): (");
  EXPECT_EQ(error_of("    corsPolicy: {allowOrigin: [\"*\"], allowOrigins: [{exact: a}]}\n"),
            "spec.http[0].corsPolicy.allowOrigin: cannot be used with allowOrigins");
  EXPECT_EQ(error_of("    corsPolicy: {unmatchedPreflights: DROP}\n"),
            "spec.http[0].corsPolicy.unmatchedPreflights: must be one of UNSPECIFIED, FORWARD, IGNORE");
  // maxAge as Istio validates it: a duration of at least 1ms, in whole seconds (the header's unit).
  EXPECT_EQ(error_of("    corsPolicy: {maxAge: 1500ms}\n"),
            "spec.http[0].corsPolicy.maxAge: must be a whole number of seconds (Access-Control-Max-Age)");
  EXPECT_EQ(error_of("    corsPolicy: {maxAge: 0s}\n"), "spec.http[0].corsPolicy.maxAge: must be at least 1ms");
  // The deprecated allowOrigin: exact strings.
  const ParsedFile legacy =
      ParseConfigFile("x.yaml", std::string(kOneRouteVirtualService) + "    corsPolicy: {allowOrigin: [\"*\"]}\n");
  ASSERT_EQ(legacy.documents.size(), 1u) << Errors(legacy);
  const auto& origins = std::get<VirtualService>(legacy.documents[0].object).http[0].cors->allow_origins;
  ASSERT_EQ(origins.size(), 1u);
  EXPECT_EQ(origins[0].kind, StringMatch::Kind::kExact);
  EXPECT_EQ(origins[0].value, "*");
}

// Envoy NACKs a whole route configuration for one regex RE2 refuses or finds too large.
TEST(YamlLoaderTest, ARegexEnvoyWouldRefuseIsAnErrorWhereverItIs) {
  const std::string head = kOneRouteVirtualService;
  const auto error_of = [&](const std::string& more) { return OnlyError(head + more); };
  EXPECT_EQ(error_of("    match: [{uri: {regex: \"[a-\"}}]\n"),
            "spec.http[0].match[0].uri.regex: is not an RE2 regular expression: missing ]: [a-");
  // A backreference is Perl's, not RE2's.
  EXPECT_EQ(error_of("    match: [{headers: {x-a: {regex: \"(a)\\\\1\"}}}]\n"),
            "spec.http[0].match[0].headers.x-a.regex: is not an RE2 regular expression: invalid escape sequence: \\1");
  const std::string big = OnlyError(head + "    match: [{authority: {regex: \"(abc|def){1,60}\"}}]\n");
  EXPECT_TRUE(
      absl::StartsWith(big, "spec.http[0].match[0].authority.regex: is too complex for Envoy: RE2 program size "))
      << big;
  EXPECT_TRUE(absl::EndsWith(big, ", Envoy's default limit is 100")) << big;
  EXPECT_EQ(error_of("    match: [{uri: {regex: \"\"}}]\n"), "spec.http[0].match[0].uri.regex: must not be empty");
  const ParsedFile fine = ParseConfigFile("x.yaml", head + "    match: [{uri: {regex: \"/api/v[0-9]+/.*\"}}]\n");
  EXPECT_EQ(fine.documents.size(), 1u) << Errors(fine);
}

// A Gateway's HTTP servers are read; Istio's validation (hosts, port names, protocols) is
// Istio's; what cxds does not serve (TLS termination, TCP servers, bind) is refused as not
// supported, never as invalid.
TEST(YamlLoaderTest, GatewaysAreReadWithIstiosRules) {
  const std::string head = R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
)";
  const ParsedFile good = ParseConfigFile("gw.yaml", head + R"(  - port: {number: 8080, name: http, protocol: http}
    hosts: [shop.example.com, "./*.example.org", "*/*"]
  - name: redirect
    port: {number: 8081, name: http-redirect, protocol: HTTP2}
    hosts: ["*"]
    tls: {httpsRedirect: true}
)");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const auto& gateway = std::get<Gateway>(good.documents[0].object);
  EXPECT_EQ(gateway.selector, (LabelMap{{"istio", "ingressgateway"}}));
  ASSERT_EQ(gateway.servers.size(), 2u);
  EXPECT_EQ(gateway.servers[0].port, 8080u);
  EXPECT_EQ(gateway.servers[0].protocol, "HTTP") << "protocols are case-insensitive, as in Istio";
  EXPECT_THAT(gateway.servers[0].hosts, ::testing::ElementsAre("*/shop.example.com", "./*.example.org", "*/*"));
  EXPECT_FALSE(gateway.servers[0].https_redirect);
  EXPECT_EQ(gateway.servers[1].name, "redirect");
  EXPECT_TRUE(gateway.servers[1].https_redirect);
  EXPECT_EQ(KindOf(good.documents[0].object), "Gateway");

  const auto server = [&](const std::string& text) { return OnlyError(head + text); };
  EXPECT_EQ(server("  - port: {number: 80, name: http, protocol: HTTP}\n    hosts: []\n"),
            "spec.servers[0].hosts: must not be empty");
  EXPECT_EQ(server("  - port: {number: 80, name: http, protocol: HTTP}\n"), "spec.servers[0].hosts: is required");
  EXPECT_EQ(server("  - port: {number: 80, protocol: HTTP}\n    hosts: [a.example.com]\n"),
            "spec.servers[0].port.name: is required");
  EXPECT_EQ(server("  - port: {number: 80, name: http, protocol: HTTP}\n    hosts: [a.example.com]\n"
                   "  - port: {number: 81, name: http, protocol: HTTP}\n    hosts: [b.example.com]\n"),
            "spec.servers[1].port.name: port name \"http\" is used by another server");
  EXPECT_EQ(server("  - port: {number: 80, name: http, protocol: SPDY}\n    hosts: [a.example.com]\n"),
            "spec.servers[0].port.protocol: protocol \"SPDY\" must be one of HTTP, HTTPS, GRPC, GRPC-WEB, HTTP2, "
            "MONGO, REDIS, MYSQL, TCP, TLS, UDP");
  EXPECT_EQ(server("  - port: {number: 80, name: http, protocol: HTTP}\n    hosts: [Shop/a.example.com]\n"),
            "spec.servers[0].hosts[0]: the namespace of \"Shop/a.example.com\" must be *, . or a namespace");
  EXPECT_EQ(server("  - port: {number: 80, name: http, protocol: HTTP}\n    hosts: [\"a.*.com\"]\n"),
            "spec.servers[0].hosts[0]: host \"a.*.com\": may use '*' only as a whole first label (\"*.example.com\")");
  // Valid in Istio, not served by cxds: said so.
  EXPECT_EQ(server("  - port: {number: 80, name: http, protocol: HTTP}\n    hosts: [\"*-shop.example.com\"]\n"),
            "spec.servers[0].hosts[0]: host \"*-shop.example.com\": a '*' that begins a label (\"*-foo.example.com\") "
            "is not supported by cxds: write '*' as a whole first label (\"*.example.com\")");
  EXPECT_EQ(server("  - port: {number: 80, name: http, protocol: HTTP}\n    hosts: [\"edge/Shop.example.com\"]\n"),
            "spec.servers[0].hosts[0]: host \"Shop.example.com\": upper-case letters are not supported by cxds "
            "(Istio accepts them; DNS names compare ignoring case, so write the host in lower case)");
  EXPECT_EQ(server("  - port: {number: 70000, name: http, protocol: HTTP}\n    hosts: [a.example.com]\n"),
            "spec.servers[0].port.number: must be an integer from 1 to 65535, got \"70000\"");
  EXPECT_EQ(server("  - port: {number: 443, name: tls, protocol: TLS}\n    hosts: [a.example.com]\n"),
            "spec.servers[0].tls: is required for a TLS server (mode, and credentialName to terminate)");
  // Valid Istio that cxds does not serve.
  EXPECT_EQ(server("  - port: {number: 53, name: dns, protocol: UDP}\n    hosts: [a.example.com]\n"),
            "spec.servers[0].port.protocol: protocol UDP at a Gateway is not supported by cxds (HTTP, HTTP2, GRPC, "
            "HTTPS, TCP, MONGO, REDIS, MYSQL and TLS servers are)");
  EXPECT_EQ(server("  - port: {number: 80, name: http, protocol: HTTP}\n    hosts: [a.example.com]\n"
                   "    tls: {credentialName: cert}\n"),
            "")
      << "accepted by Istio and ignored by istiod on a plain-text server (cxds_gateway_tls_ignored)";
  EXPECT_EQ(server("  - port: {number: 80, name: http, protocol: HTTP}\n    hosts: [a.example.com]\n"
                   "    defaultEndpoint: 127.0.0.1:8080\n"),
            "spec.servers[0].defaultEndpoint: is not supported by cxds");
  EXPECT_EQ(OnlyError(R"(apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: g}
spec: {servers: []}
)"),
            "spec.servers: must list at least one server");

  // A VirtualService binds to Gateways by namespace/name or by a name of its own namespace;
  // so does a tcp route match.
  const ParsedFile bound = ParseConfigFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop, namespace: web}
spec:
  hosts: [shop.example.com]
  gateways: [edge/ingress, public]
  http: [{route: [{destination: {host: shop}}]}]
)");
  ASSERT_EQ(bound.documents.size(), 1u) << Errors(bound);
  EXPECT_THAT(std::get<VirtualService>(bound.documents[0].object).gateways,
              ::testing::ElementsAre("edge/ingress", "web/public"));
  const ParsedFile tcp_at_gateway = ParseConfigFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: db, namespace: data}
spec:
  hosts: [db.example.com]
  gateways: [edge/ingress, mesh]
  tcp:
  - match: [{port: 31400, gateways: [edge/ingress]}]
    route: [{destination: {host: db.example.com}}]
)");
  ASSERT_EQ(tcp_at_gateway.documents.size(), 1u) << Errors(tcp_at_gateway);
  const auto& db = std::get<VirtualService>(tcp_at_gateway.documents[0].object);
  ASSERT_EQ(db.tcp.size(), 1u);
  ASSERT_EQ(db.tcp[0].match.size(), 1u);
  EXPECT_EQ(db.tcp[0].match[0].port, 31400u);
  EXPECT_THAT(db.tcp[0].match[0].gateways, ::testing::ElementsAre("edge/ingress"));
  const ParsedFile plain = ParseConfigFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop}
spec:
  hosts: [shop.example.com]
  http: [{route: [{destination: {host: shop}}]}]
)");
  ASSERT_EQ(plain.documents.size(), 1u) << Errors(plain);
  EXPECT_THAT(std::get<VirtualService>(plain.documents[0].object).gateways, ::testing::ElementsAre("mesh"))
      << "no gateways: the mesh, as in Istio";
  const ParsedFile null_gateways = ParseConfigFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop}
spec:
  hosts: [shop.example.com]
  gateways:
  http: [{route: [{destination: {host: shop}}]}]
)");
  ASSERT_EQ(null_gateways.documents.size(), 1u) << Errors(null_gateways);
  EXPECT_THAT(std::get<VirtualService>(null_gateways.documents[0].object).gateways, ::testing::ElementsAre("mesh"))
      << "a null list (as templates write it) is the default too";
}

TEST(YamlLoaderTest, TcpRoutesAreReadAndAVirtualServiceNeedsHttpOrTcp) {
  const std::string head =
      "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec:\n"
      "  hosts: [db]\n";
  const ParsedFile good = ParseConfigFile(
      "x.yaml", head +
                    "  tcp:\n  - match: [{port: 3306}]\n    route:\n    - {destination: {host: db, subset: a}, "
                    "weight: 60}\n    - {destination: {host: db, subset: b}, weight: 40}\n");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const auto& vs = std::get<VirtualService>(good.documents[0].object);
  ASSERT_EQ(vs.tcp.size(), 1u);
  ASSERT_EQ(vs.tcp[0].match.size(), 1u);
  EXPECT_EQ(vs.tcp[0].match[0].port, 3306u);
  EXPECT_TRUE(vs.tcp[0].match[0].gateways.empty()) << "none given: the VirtualService's";
  EXPECT_EQ(vs.tcp[0].route[1].weight, 40u);
  EXPECT_EQ(OnlyError(head), "spec.http: is required (or spec.tcp or spec.tls: cxds serves HTTP, TCP and TLS routes)");
  EXPECT_EQ(OnlyError(head + "  tcp: [{route: []}]\n"), "spec.tcp[0].route: must list at least one destination")
      << "Envoy refuses a TCP proxy to nowhere, and the whole listener with it";
  EXPECT_EQ(OnlyError(head + "  tcp: [{route: [{destination: {host: db}, weight: 60}, {destination: {host: db}}]}]\n"),
            "spec.tcp[0].route: weights must add up to 100, got 60");
  // Source conditions, as for http matches.
  const ParsedFile sourced = ParseConfigFile(
      "x.yaml", head +
                    "  tcp: [{match: [{sourceLabels: {app: web}, sourceNamespace: shop}], route: [{destination: "
                    "{host: db}}]}]\n");
  ASSERT_EQ(sourced.documents.size(), 1u) << Errors(sourced);
  const auto& match = std::get<VirtualService>(sourced.documents[0].object).tcp.at(0).match.at(0);
  EXPECT_EQ(match.source_labels, (LabelMap{{"app", "web"}}));
  EXPECT_EQ(match.source_namespace, "shop");
  EXPECT_EQ(OnlyError(head + "  tcp: [{match: [{sourceNamespace: Shop}], route: [{destination: {host: db}}]}]\n"),
            "spec.tcp[0].match[0].sourceNamespace: must be a namespace name, a DNS label (a-z, 0-9, '-'; at most 63 "
            "characters)");
  // At a Gateway too: valid Istio, which istiod ignores there (analysis says so).
  EXPECT_EQ(OnlyError(head + "  tcp: [{match: [{sourceLabels: {a: b}, gateways: [edge]}], route: [{destination: "
                             "{host: db}}]}]\n"),
            "");
  EXPECT_EQ(OnlyError(head + "  tcp: [{match: [{sourceSubnet: 10.0.0.0/8}], route: [{destination: {host: db}}]}]\n"),
            "spec.tcp[0].match[0].sourceSubnet: is not supported by cxds");
  EXPECT_EQ(OnlyError(head + "  tcp: [{route: [{destination: {host: db}, headers: {}}]}]\n"),
            "spec.tcp[0].route[0].headers: unknown field");
}

// tls routes by SNI name, with Istio's validation: matches are required, each names sniHosts
// that are the VirtualService's hosts or under them; weights as for tcp routes.
TEST(YamlLoaderTest, TlsRoutesAreReadWithIstiosSniHostRules) {
  const std::string head =
      "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec:\n"
      "  hosts: [api.example.com, \"*.cdn.example.com\"]\n";
  const ParsedFile good = ParseConfigFile(
      "x.yaml", head +
                    "  tls:\n  - match:\n    - {sniHosts: [api.example.com], port: 443, gateways: [mesh]}\n"
                    "    - sniHosts: [\"*.cdn.example.com\", a.cdn.example.com, \"*.eu.cdn.example.com\"]\n"
                    "    route:\n    - {destination: {host: api.example.com, subset: a}, weight: 60}\n"
                    "    - {destination: {host: api.example.com, subset: b, port: {number: 8443}}, weight: 40}\n");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const auto& vs = std::get<VirtualService>(good.documents[0].object);
  EXPECT_TRUE(vs.http.empty());
  ASSERT_EQ(vs.tls.size(), 1u);
  ASSERT_EQ(vs.tls[0].match.size(), 2u);
  EXPECT_EQ(vs.tls[0].match[0].sni_hosts, std::vector<std::string>{"api.example.com"});
  EXPECT_EQ(vs.tls[0].match[0].port, 443u);
  EXPECT_EQ(vs.tls[0].match[1].sni_hosts,
            (std::vector<std::string>{"*.cdn.example.com", "a.cdn.example.com", "*.eu.cdn.example.com"}));
  EXPECT_EQ(vs.tls[0].match[1].port, 0u) << "no port: every TLS port of the host";
  ASSERT_EQ(vs.tls[0].route.size(), 2u);
  EXPECT_EQ(vs.tls[0].route[0].subset, "a");
  EXPECT_EQ(vs.tls[0].route[0].weight, 60u);
  EXPECT_EQ(vs.tls[0].route[1].port, 8443u);

  const std::string any_head =
      "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec:\n  hosts: [\"*\"]\n";
  const std::string any_tls =
      "  tls: [{match: [{sniHosts: [\"*\", x.example.com]}], route: [{destination: {host: x.example.com}}]}]\n";
  const ParsedFile any = ParseConfigFile("x.yaml", any_head + "  gateways: [edge]\n" + any_tls);
  EXPECT_EQ(any.documents.size(), 1u) << "everything is under the host *: " << Errors(any);
  // The host * in the mesh, as Istio validates it: so no sniHosts * reaches sidecars either.
  const ParsedFile named = ParseConfigFile("x.yaml", any_head + "  gateways: [edge.istio-system]\n" + any_tls);
  EXPECT_EQ(named.errors.size(), 1u) << "the gateway's name alone: " << Errors(named);
  for (const std::string gateways : {"", "  gateways: [mesh, edge]\n", "  gateways: []\n"}) {
    EXPECT_EQ(OnlyError(any_head + gateways + any_tls),
              "spec.hosts[0]: the wildcard host * is not allowed for a VirtualService bound to the mesh (gateways "
              "unset or naming mesh), as Istio validates; it may be bound to Gateways only")
        << gateways;
  }
  // A destination may be a wildcard host (a ServiceEntry's), but not "*", as Istio validates.
  const std::string to =
      "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec:\n  "
      "hosts: [shop.example.com]\n  http: [{route: [{destination: {host: ";
  EXPECT_EQ(OnlyError(to + "\"*.eu.example.com\"}}]}]\n"), "");
  EXPECT_EQ(OnlyError(to + "\"*\"}}]}]\n"),
            "spec.http[0].route[0].destination.host: must not be \"*\", as Istio validates (it names no host)");
  // Valid in Istio, not served by cxds: said so.
  EXPECT_EQ(OnlyError("apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec:\n  "
                      "hosts: [Shop.example.com]\n  http: [{route: [{destination: {host: shop.example.com}}]}]\n"),
            "spec.hosts[0]: upper-case letters are not supported by cxds (Istio accepts them; DNS names compare "
            "ignoring case, so write the host in lower case)");

  const auto route = [](const std::string& match) {
    return "  tls:\n  - match: [" + match + "]\n    route: [{destination: {host: api.example.com}}]\n";
  };
  // Invalid, as Istio says it.
  EXPECT_EQ(OnlyError(head + "  tls: [{route: [{destination: {host: api.example.com}}]}]\n"),
            "spec.tls[0].match: is required");
  EXPECT_EQ(OnlyError(head + "  tls: [{match: [], route: [{destination: {host: api.example.com}}]}]\n"),
            "spec.tls[0].match: must not be empty (a tls route matches by sniHosts)");
  EXPECT_EQ(OnlyError(head + route("{port: 443}")), "spec.tls[0].match[0].sniHosts: is required");
  EXPECT_EQ(OnlyError(head + route("{sniHosts: []}")), "spec.tls[0].match[0].sniHosts: must not be empty");
  EXPECT_EQ(OnlyError(head + route("{sniHosts: [api.example.com, web.example.com]}")),
            "spec.tls[0].match[0].sniHosts[1]: \"web.example.com\" is not one of the VirtualService's hosts nor "
            "under one (spec.hosts: api.example.com, *.cdn.example.com)");
  EXPECT_EQ(OnlyError(head + route("{sniHosts: [\"*.example.com\"]}")),
            "spec.tls[0].match[0].sniHosts[0]: \"*.example.com\" is not one of the VirtualService's hosts nor under "
            "one (spec.hosts: api.example.com, *.cdn.example.com)")
      << "a wildcard wider than the hosts";
  EXPECT_EQ(OnlyError(head + route("{sniHosts: [cdn.example.com]}")),
            "spec.tls[0].match[0].sniHosts[0]: \"cdn.example.com\" is not one of the VirtualService's hosts nor "
            "under one (spec.hosts: api.example.com, *.cdn.example.com)")
      << "*.cdn.example.com does not match cdn.example.com itself";
  EXPECT_EQ(OnlyError(head + route("{sniHosts: [\"API.example.com\"]}")),
            "spec.tls[0].match[0].sniHosts[0]: upper-case letters are not supported by cxds (Istio accepts them; DNS "
            "names compare ignoring case, so write the host in lower case)");
  EXPECT_EQ(OnlyError(head + route("{sniHosts: [\"api_1.example.com\"]}")),
            "spec.tls[0].match[0].sniHosts[0]: must contain only letters, digits, '-' and '.'");
  EXPECT_EQ(OnlyError(head + route("{sniHosts: [api.example.com], port: 0}")),
            "spec.tls[0].match[0].port: must be an integer from 1 to 65535, got \"0\"");
  EXPECT_EQ(OnlyError(head + "  tls:\n  - match: [{sniHosts: [api.example.com]}]\n    route:\n"
                             "    - {destination: {host: api.example.com, subset: a}, weight: 60}\n"
                             "    - {destination: {host: api.example.com, subset: b}, weight: 30}\n"),
            "spec.tls[0].route: weights must add up to 100, got 90");
  EXPECT_EQ(OnlyError(head + "  tls: [{match: [{sniHosts: [api.example.com]}]}]\n"), "spec.tls[0].route: is required");
  EXPECT_EQ(OnlyError(head + "  tls: [{match: [{sniHosts: [api.example.com]}], route: [{destination: {host: "
                             "api.example.com}, headers: {}}]}]\n"),
            "spec.tls[0].route[0].headers: unknown field");
  EXPECT_NE(OnlyError(head + route("{sniHost: [api.example.com]}"))
                .find("spec.tls[0].match[0].sniHost: unknown field (did you mean \"sniHosts\"?)"),
            std::string::npos);
  // Valid Istio that cxds does not serve.
  EXPECT_EQ(OnlyError(head + route("{sniHosts: [api.example.com], destinationSubnets: [10.0.0.0/8]}")),
            "spec.tls[0].match[0].destinationSubnets: is not supported by cxds");
  // Source conditions, as for tcp.
  const ParsedFile sourced = ParseConfigFile(
      "vs.yaml", head + route("{sniHosts: [api.example.com], sourceLabels: {app: web}, sourceNamespace: shop}"));
  ASSERT_EQ(sourced.documents.size(), 1u) << Errors(sourced);
  const TlsRoute::Match& sourced_match = std::get<VirtualService>(sourced.documents[0].object).tls[0].match[0];
  EXPECT_EQ(sourced_match.source_labels, (LabelMap{{"app", "web"}}));
  EXPECT_EQ(sourced_match.source_namespace, "shop");
  EXPECT_EQ(OnlyError(head + route("{sniHosts: [api.example.com], sourceNamespace: Web}")),
            "spec.tls[0].match[0].sourceNamespace: must be a namespace name, a DNS label (a-z, 0-9, '-'; at most 63 "
            "characters)");
  EXPECT_EQ(OnlyError(head + route("{sniHosts: [api.example.com], sourceLabels: {a: b}, gateways: [edge]}")), "")
      << "valid Istio, which istiod ignores at a Gateway";
  // A match may name the Gateways it applies at (a passthrough server's routes).
  const ParsedFile at_gateway =
      ParseConfigFile("vs.yaml", head + route("{sniHosts: [api.example.com], gateways: [mesh, istio-system/egress]}"));
  ASSERT_EQ(at_gateway.documents.size(), 1u) << Errors(at_gateway);
  EXPECT_THAT(std::get<VirtualService>(at_gateway.documents[0].object).tls[0].match[0].gateways,
              ::testing::ElementsAre("mesh", "istio-system/egress"));
  EXPECT_EQ(OnlyError(head + route("{sniHosts: [api.example.com], gateways: [egress.istio-system]}")),
            "spec.tls[0].match[0].gateways[0]: gateway \"egress.istio-system\": the name.namespace form is not "
            "supported by cxds (write namespace/name)");
  // Line numbers: the error is at the offending sniHost.
  const ParsedFile bad = ParseConfigFile(
      "vs.yaml", head +
                     "  tls:\n  - match:\n    - sniHosts:\n      - api.example.com\n      - other.example.org\n"
                     "    route: [{destination: {host: api.example.com}}]\n");
  ASSERT_EQ(bad.errors.size(), 1u) << Errors(bad);
  EXPECT_EQ(bad.errors[0].file, "vs.yaml");
  EXPECT_EQ(bad.errors[0].line, 10);
  EXPECT_EQ(bad.errors[0].field, "spec.tls[0].match[0].sniHosts[1]");
}

TEST(YamlLoaderTest, PortLevelSettingsAndTlsModes) {
  const std::string head =
      "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d}\nspec:\n"
      "  host: a\n  trafficPolicy:\n";
  const ParsedFile good =
      ParseConfigFile("x.yaml", head +
                                    "    tls: {mode: DISABLE}\n    portLevelSettings:\n    - port: {number: 8080}\n"
                                    "      connectionPool: {tcp: {connectTimeout: 250ms}, http: {maxRetries: 2}}\n");
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const auto& policy = *std::get<DestinationRule>(good.documents[0].object).traffic_policy;
  ASSERT_EQ(policy.port_level.size(), 1u);
  EXPECT_EQ(policy.port_level[0].port, 8080u);
  EXPECT_EQ(policy.port_level[0].policy.connection_pool->connect_timeout, absl::Milliseconds(250));
  EXPECT_EQ(policy.port_level[0].policy.connection_pool->max_retries, 2u);
  // Upstream TLS with certificate files on the proxy.
  const ParsedFile tls = ParseConfigFile(
      "x.yaml", head +
                    "    tls: {mode: MUTUAL, clientCertificate: /etc/certs/c.pem, privateKey: /etc/certs/k.pem, "
                    "caCertificates: /etc/certs/ca.pem, sni: a.example.com, subjectAltNames: [a.example.com]}\n");
  ASSERT_EQ(tls.documents.size(), 1u) << Errors(tls);
  const auto& client = *std::get<DestinationRule>(tls.documents[0].object).traffic_policy->tls;
  EXPECT_EQ(client.mode, PolicyFields::ClientTls::Mode::kMutual);
  EXPECT_EQ(client.client_certificate, "/etc/certs/c.pem");
  EXPECT_EQ(client.private_key, "/etc/certs/k.pem");
  EXPECT_EQ(client.ca_certificates, "/etc/certs/ca.pem");
  EXPECT_EQ(client.sni, "a.example.com");
  EXPECT_THAT(client.subject_alt_names, ::testing::ElementsAre("a.example.com"));
  EXPECT_EQ(OnlyError(head + "    tls: {mode: MUTUAL}\n"),
            "spec.trafficPolicy.tls.clientCertificate: is required for mode MUTUAL (the proxy's certificate and key "
            "files), unless credentialName names a Secret (at gateways)");
  EXPECT_EQ(OnlyError(head + "    tls: {mode: SIMPLE, caCertificates: certs/ca.pem}\n"),
            "spec.trafficPolicy.tls.caCertificates: other than an absolute file path on the proxy is not supported by "
            "cxds (Envoy reads the file itself, from wherever it runs)");
  EXPECT_EQ(OnlyError(head + "    tls: {mode: SIMPLE, caCertificates: /ca.pem, insecureSkipVerify: true}\n"),
            "spec.trafficPolicy.tls.insecureSkipVerify: cannot be set with caCertificates or subjectAltNames (they "
            "would not be checked)");
  EXPECT_EQ(OnlyError(head + "    tls: {mode: DISABLE, caCertificates: certs/ca.pem}\n"), "")
      << "under DISABLE the other fields mean nothing, as in istiod";
  EXPECT_EQ(OnlyError(head + "    tls: {mode: ISTIO_MUTUAL}\n"),
            "spec.trafficPolicy.tls.mode: TLS mode ISTIO_MUTUAL is not supported by cxds (it issues no workload "
            "certificates; SIMPLE and MUTUAL with certificate files are)");
  // credentialName (at gateways): the Secret holds the certificates, so no files beside it.
  const ParsedFile credential =
      ParseConfigFile("dr.yaml", head + "    tls: {mode: MUTUAL, credentialName: egress-cert}\n");
  ASSERT_EQ(credential.documents.size(), 1u) << Errors(credential);
  EXPECT_EQ(std::get<DestinationRule>(credential.documents[0].object).traffic_policy->tls->credential_name,
            "egress-cert");
  EXPECT_EQ(OnlyError(head + "    tls: {mode: SIMPLE, credentialName: c, caCertificates: /ca.pem}\n"),
            "spec.trafficPolicy.tls.credentialName: cannot be set with clientCertificate, privateKey, caCertificates "
            "or caCrl (the Secret holds them)");
  EXPECT_EQ(OnlyError(head + "    tls: {mode: SIMPLE, credentialName: c, caCrl: /ca.crl}\n"),
            "spec.trafficPolicy.tls.credentialName: cannot be set with clientCertificate, privateKey, caCertificates "
            "or caCrl (the Secret holds them)");
  EXPECT_EQ(OnlyError(head + "    tls: {mode: SIMPLE, credentialName: \"sds://c\"}\n"),
            "spec.trafficPolicy.tls.credentialName: with a scheme (sds://, kubernetes-gateway://, ...) is not "
            "supported by cxds: name a Secret of the gateway's namespace");
  const ParsedFile crl = ParseConfigFile("dr.yaml", head + "    tls: {mode: SIMPLE, caCrl: /etc/certs/ca.crl}\n");
  ASSERT_EQ(crl.documents.size(), 1u) << Errors(crl);
  EXPECT_EQ(std::get<DestinationRule>(crl.documents[0].object).traffic_policy->tls->ca_crl, "/etc/certs/ca.crl");
  // "" is unset, as Istio's proto3 reads a string.
  const ParsedFile empty = ParseConfigFile(
      "dr.yaml", head + "    tls: {mode: SIMPLE, caCrl: \"\", credentialName: \"\", caCertificates: \"\"}\n");
  ASSERT_EQ(empty.documents.size(), 1u) << Errors(empty);
  const auto& empty_tls = *std::get<DestinationRule>(empty.documents[0].object).traffic_policy->tls;
  EXPECT_EQ(empty_tls.ca_crl, "");
  EXPECT_EQ(empty_tls.credential_name, "");
  EXPECT_EQ(empty_tls.ca_certificates, "");
  EXPECT_EQ(OnlyError(head + "    tls: {mode: SIMPLE, caCrl: crl.pem}\n"),
            "spec.trafficPolicy.tls.caCrl: other than an absolute file path on the proxy is not supported by cxds "
            "(Envoy reads the file itself, from wherever it runs)");
  EXPECT_EQ(OnlyError(head + "    portLevelSettings: [{loadBalancer: {simple: RANDOM}}]\n"),
            "spec.trafficPolicy.portLevelSettings[0].port: is required");
  EXPECT_EQ(OnlyError(head + "    portLevelSettings: [{port: {number: 80}}, {port: {number: 80}}]\n"),
            "spec.trafficPolicy.portLevelSettings[1].port: port 80 has settings twice");
}

// A key that is in no API is unknown, never "not supported"; one or two edits from a known key,
// the error names that key.
TEST(YamlLoaderTest, UnknownFieldsAreToldApartFromUnsupportedOnesWithTheNearestKey) {
  const ParsedFile parsed = ParseConfigFile("x.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v}
spec:
  hosts: [a]
  http:
  - route: [{destination: {host: a}}]
    retires: {attempts: 2}
    faults: {}
    zzzzzz: 1
)");
  ASSERT_EQ(parsed.errors.size(), 3u) << Errors(parsed);
  EXPECT_EQ(parsed.errors[0].ToString(),
            "x.yaml:8: VirtualService default/v: spec.http[0].retires: unknown field (did you mean \"retries\"?)");
  EXPECT_EQ(parsed.errors[1].message, "unknown field (did you mean \"fault\"?)") << "near an unsupported key too";
  EXPECT_EQ(parsed.errors[2].message, "unknown field");
}

// What `kubectl get -o yaml` prints reads unchanged: the API server's fields are accepted, and
// those it rewrites on every update do not change the content hash (no push for a re-export).
TEST(YamlLoaderTest, ServerSetFieldsAreIgnoredAndDoNotChangeTheHash) {
  const std::string exported = R"(apiVersion: v1
kind: Service
metadata:
  name: reviews
  namespace: shop
  uid: 0b3c9e1e-7f4a-4a53-9d1c-4a1f2c3d4e5f
  resourceVersion: "RV"
  generation: 3
  creationTimestamp: "2026-11-30T10:00:00Z"
  managedFields: [{manager: kubectl, operation: Update}]
  annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}
spec:
  clusterIP: 10.96.0.12
  clusterIPs: [10.96.0.12]
  ipFamilies: [IPv4]
  ipFamilyPolicy: SingleStack
  sessionAffinity: None
  internalTrafficPolicy: Cluster
  type: ClusterIP
  selector: {app: reviews}
  ports: [{name: http, port: 9080, protocol: TCP, targetPort: http-web}]
status: {loadBalancer: {}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: reviews-x1
  namespace: shop
  labels: {kubernetes.io/service-name: reviews}
  ownerReferences: [{apiVersion: v1, kind: Service, name: reviews, uid: u}]
  generateName: reviews-
addressType: IPv4
ports: [{name: http, port: 9080, protocol: TCP}]
endpoints:
- addresses: [127.0.0.10]
  conditions: {ready: true, serving: true, terminating: false}
  hostname: reviews-0
  zone: zone-a
  hints: {forZones: [{name: zone-a}]}
  nodeName: node-1
  targetRef: {kind: Pod, name: reviews-v1-abc, namespace: shop}
)";
  const ParsedFile first = ParseConfigFile("svc.yaml", absl::StrReplaceAll(exported, {{"RV", "1001"}}));
  const ParsedFile again = ParseConfigFile("svc.yaml", absl::StrReplaceAll(exported, {{"RV", "1002"}}));
  ASSERT_EQ(first.documents.size(), 2u) << Errors(first);
  ASSERT_EQ(again.documents.size(), 2u) << Errors(again);
  EXPECT_EQ(first.documents[0].content_hash, again.documents[0].content_hash);
  EXPECT_EQ(first.documents[0].canonical.find("resourceVersion"), std::string::npos);
  EXPECT_EQ(first.documents[0].canonical.find("status"), std::string::npos);
  EXPECT_NE(first.documents[0].canonical.find("last-applied-configuration"), std::string::npos)
      << "annotations are the user's: kept";
  const auto& service = std::get<K8sService>(first.documents[0].object);
  ASSERT_EQ(service.ports.size(), 1u);
  EXPECT_EQ(service.ports[0].target_port, 0u) << "a named targetPort: the slice carries the number";
}

// An ExternalName Service is read as an alias of the name it gives, checked as Kubernetes checks
// it; with another type, externalName is dropped, as Kubernetes drops it.
TEST(YamlLoaderTest, AnExternalNameServiceIsReadAsAnAliasOfItsName) {
  const auto service = [](const std::string& fields) {
    return ParseConfigFile("svc.yaml", StrCat("apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: shop}\n"
                                              "spec:\n  ports: [{name: http, port: 80}]\n",
                                              fields));
  };
  const ParsedFile alias = service("  type: ExternalName\n  externalName: db.data.svc.cluster.local.\n");
  ASSERT_EQ(alias.documents.size(), 1u) << Errors(alias);
  EXPECT_EQ(std::get<K8sService>(alias.documents[0].object).external_name, "db.data.svc.cluster.local")
      << "an absolute name (trailing dot) names the same host";
  const ParsedFile other_type = service("  type: ClusterIP\n  externalName: db.example.com\n");
  ASSERT_EQ(other_type.documents.size(), 1u) << Errors(other_type);
  EXPECT_EQ(std::get<K8sService>(other_type.documents[0].object).external_name, "");

  EXPECT_EQ(Errors(service("  type: ExternalName\n")),
            "svc.yaml:5: Service shop/s: spec.externalName: is required for type ExternalName, as Kubernetes "
            "validates\n");
  EXPECT_EQ(Errors(service("  type: ExternalName\n  externalName: Db_Example.com\n")),
            "svc.yaml:7: Service shop/s: spec.externalName: \"Db_Example.com\" must be a lowercase DNS name (RFC "
            "1123 labels of letters, digits and '-', joined by dots), as Kubernetes validates\n");
  EXPECT_NE(Errors(service("  type: ExternalName\n  externalName: a..b\n")).find("\"a..b\" must be a lowercase DNS"),
            std::string::npos)
      << "an empty label";
  EXPECT_EQ(Errors(service("  type: ExternalName\n  externalName: db.example.com\n  clusterIP: 10.96.0.9\n")),
            "svc.yaml:8: Service shop/s: spec.clusterIP: must not be set for type ExternalName, as Kubernetes "
            "validates\n");
  EXPECT_EQ(Errors(service("  type: ExternalName\n  externalName: db.example.com\n  clusterIP: \"\"\n")), "")
      << "an empty clusterIP is none";
}

// An alias serves its host's ports and has no endpoints of its own: what cxds refuses on other
// Services as not supported (UDP ports, client IP affinity, node-local endpoints, protocols it
// cannot place) changes nothing on it, and is only typed.
TEST(YamlLoaderTest, AnExternalNameServiceIsNotRefusedForFieldsAnAliasDoesNotUse) {
  const std::string head = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: shop}\nspec:\n";
  const std::string unused =
      "  ports: [{name: dns, port: 53, protocol: UDP}, {name: web, port: 80, appProtocol: example.com/custom}, "
      "{name: grpc-web, port: 81}, {name: dns-tcp, port: 53}]\n"
      "  sessionAffinity: ClientIP\n  internalTrafficPolicy: Local\n  publishNotReadyAddresses: true\n"
      "  externalIPs: [127.0.0.9]\n  trafficDistribution: PreferClose\n";
  const ParsedFile alias =
      ParseConfigFile("svc.yaml", StrCat(head, "  type: ExternalName\n  externalName: db.example.com\n", unused));
  ASSERT_EQ(alias.documents.size(), 1u) << Errors(alias);
  EXPECT_EQ(std::get<K8sService>(alias.documents[0].object).external_name, "db.example.com");
  // The same fields on a Service that serves endpoints are refused, each as not supported.
  const std::string refused = Errors(ParseConfigFile("svc.yaml", StrCat(head, "  selector: {app: s}\n", unused)));
  for (const char* field :
       {"spec.ports[0].protocol: UDP ports are not supported by cxds",
        "spec.ports[1].appProtocol: appProtocol \"example.com/custom\" is not supported by cxds", "spec.ports[2].name:",
        "spec.sessionAffinity: sessionAffinity: ClientIP", "spec.internalTrafficPolicy: internalTrafficPolicy: Local",
        "spec.publishNotReadyAddresses: publishNotReadyAddresses: true", "spec.externalIPs: is not supported by cxds",
        "spec.trafficDistribution: is not supported by cxds"}) {
    EXPECT_NE(refused.find(field), std::string::npos) << field << " in:\n" << refused;
  }
  EXPECT_EQ(refused.find("listed twice"), std::string::npos)
      << "Kubernetes takes a port once per protocol: 53 over UDP and over TCP is no repeat";
  // Still typed as Kubernetes types them, each error naming its field.
  const std::string typed = Errors(ParseConfigFile(
      "svc.yaml", StrCat(head,
                         "  type: ExternalName\n  externalName: db.example.com\n"
                         "  ports: [{port: 53, protocol: QUIC}, {port: 54}, {port: 54, protocol: TCP}]\n"
                         "  publishNotReadyAddresses: sometimes\n  sessionAffinity: Sticky\n"
                         "  internalTrafficPolicy: Node\n  externalIPs: 127.0.0.9\n")));
  for (const char* field : {"spec.ports[0].protocol: must be TCP, UDP or SCTP",
                            "spec.ports[2]: port 54 (TCP) is listed twice", "spec.publishNotReadyAddresses: must be",
                            "spec.sessionAffinity: \"Sticky\" must be None or ClientIP, as Kubernetes validates",
                            "spec.internalTrafficPolicy: \"Node\" must be Cluster or Local, as Kubernetes validates",
                            "spec.externalIPs: must be a list"}) {
    EXPECT_NE(typed.find(field), std::string::npos) << field << " in:\n" << typed;
  }
  // As Kubernetes: an empty sessionAffinity is defaulted, an empty internalTrafficPolicy refused;
  // a value outside Kubernetes' is invalid on any Service, not "not supported".
  const std::string empty =
      Errors(ParseConfigFile("svc.yaml", StrCat(head,
                                                "  selector: {app: s}\n  ports: [{port: 80}]\n  sessionAffinity: \"\"\n"
                                                "  internalTrafficPolicy: \"\"\n  trafficDistribution: [x]\n")));
  EXPECT_EQ(empty.find("spec.sessionAffinity"), std::string::npos) << empty;
  EXPECT_NE(empty.find("spec.internalTrafficPolicy: \"\" must be Cluster or Local"), std::string::npos) << empty;
  EXPECT_EQ(Errors(ParseConfigFile("svc.yaml", StrCat(head,
                                                      "  selector: {app: s}\n  ports: [{port: 80}]\n"
                                                      "  sessionAffinity: Sticky\n"))),
            "svc.yaml:7: Service shop/s: spec.sessionAffinity: \"Sticky\" must be None or ClientIP, as Kubernetes "
            "validates\n");
  EXPECT_NE(Errors(ParseConfigFile("svc.yaml", StrCat(head,
                                                      "  type: ExternalName\n  externalName: db.example.com\n"
                                                      "  trafficDistribution: [x]\n")))
                .find("spec.trafficDistribution: must be a string"),
            std::string::npos)
      << "an alias's trafficDistribution is typed";
}

// As Kubernetes validates a Service: each port of several is named, each name once (a slice's
// endpoints are matched to the Service's ports by name); a single port may go unnamed.
TEST(YamlLoaderTest, AServiceOfSeveralPortsNamesEachOnce) {
  const auto errors = [](const std::string& ports) {
    return Errors(ParseConfigFile("svc.yaml", StrCat("apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: "
                                                     "shop}\nspec:\n  selector: {app: s}\n  ports: ",
                                                     ports, "\n")));
  };
  EXPECT_EQ(errors("[{port: 80}]"), "");
  EXPECT_EQ(errors("[{name: http, port: 80}, {name: grpc, port: 81}]"), "");
  EXPECT_EQ(errors("[{name: http, port: 80}, {port: 81}]"),
            "svc.yaml:6: Service shop/s: spec.ports[1].name: is required when the Service has more than one port, "
            "as Kubernetes validates\n");
  EXPECT_EQ(errors("[{name: http, port: 80}, {name: http, port: 81}]"),
            "svc.yaml:6: Service shop/s: spec.ports[1].name: \"http\" is listed twice, as Kubernetes refuses\n");
}

// v1 Endpoints are read as the slices Kubernetes mirrors from them: a slice per subset, ready and
// not-ready addresses, Pods by targetRef; their fields are checked as Kubernetes checks them,
// except that loopback addresses are taken (cxds's tests and examples run on them).
TEST(YamlLoaderTest, V1EndpointsAreReadAsTheSlicesMirroredFromThem) {
  const ParsedFile parsed = ParseConfigFile("ep.yaml", R"(apiVersion: v1
kind: Endpoints
metadata: {name: db, namespace: shop, labels: {endpointslice.kubernetes.io/skip-mirror: "true"}}
subsets:
- addresses: [{ip: 127.0.0.5, nodeName: node-1, hostname: db-0, targetRef: {kind: Pod, name: db-0}}]
  notReadyAddresses: [{ip: "::1"}]
  ports: [{name: sql, port: 5432, protocol: TCP}, {name: admin, port: 8080}]
- addresses: [{ip: 127.0.0.6}]
  ports: [{port: 5433}]
)");
  ASSERT_EQ(parsed.documents.size(), 1u) << Errors(parsed);
  const auto& endpoints = std::get<K8sEndpoints>(parsed.documents[0].object);
  EXPECT_TRUE(endpoints.skip_mirror);
  ASSERT_EQ(endpoints.mirrored.size(), 2u);
  const EndpointSlice& first = endpoints.mirrored[0];
  EXPECT_EQ(first.service_name, "db");
  EXPECT_EQ(first.meta.namespace_name, "shop");
  EXPECT_TRUE(first.meta.labels.empty())
      << "a slice per subset carries no copy of the labels (one long label times many subsets would not fit)";
  ASSERT_EQ(first.ports.size(), 2u);
  EXPECT_EQ(first.ports[1].name, "admin");
  EXPECT_EQ(first.ports[1].port, 8080u);
  ASSERT_EQ(first.endpoints.size(), 2u);
  EXPECT_TRUE(first.endpoints[0].ready);
  EXPECT_EQ(first.endpoints[0].addresses, std::vector<std::string>{"127.0.0.5"});
  EXPECT_EQ(first.endpoints[0].pod_name, "db-0");
  EXPECT_EQ(first.endpoints[0].pod_namespace, "shop");
  EXPECT_FALSE(first.endpoints[1].ready);
  EXPECT_EQ(endpoints.mirrored[1].ports[0].name, "") << "one port may be unnamed";
  const ParsedFile lock =
      ParseConfigFile("ep.yaml",
                      "apiVersion: v1\nkind: Endpoints\nmetadata: {name: lock, annotations: "
                      "{control-plane.alpha.kubernetes.io/leader: '{\"holderIdentity\":\"a\"}'}}\nsubsets: null\n");
  ASSERT_EQ(lock.documents.size(), 1u) << Errors(lock);
  EXPECT_TRUE(std::get<K8sEndpoints>(lock.documents[0].object).skip_mirror) << "a leader-election lock";
  EXPECT_EQ(
      Errors(ParseConfigFile("ep.yaml", "apiVersion: v1\nkind: Endpoints\nmetadata: {name: db}\nsubsets: null\n")), "")
      << "as kubectl prints a Service's Endpoints with none";

  EXPECT_EQ(Errors(ParseConfigFile("ep.yaml", R"(apiVersion: v1
kind: Endpoints
metadata: {name: db}
subsets:
- addresses: [{ip: db.example.com}, {hostname: x}]
  ports: [{port: 1}, {name: a, port: 70000}, {name: a, port: 2}]
  weight: 1
)")),
            "ep.yaml:7: Endpoints default/db: subsets[0].weight: unknown field\n"
            "ep.yaml:6: Endpoints default/db: subsets[0].ports[0].name: is required\n"
            "ep.yaml:6: Endpoints default/db: subsets[0].ports[1].port: must be an integer from 1 to 65535, got "
            "\"70000\"\n"
            "ep.yaml:6: Endpoints default/db: subsets[0].ports[2].name: is the name of another port of the subset\n"
            "ep.yaml:5: Endpoints default/db: subsets[0].addresses[0].ip: must be an IPv4 or IPv6 address, got "
            "\"db.example.com\" (hostnames need DNS resolution, which is not supported by cxds)\n"
            "ep.yaml:5: Endpoints default/db: subsets[0].addresses[1].ip: is required\n");
}

// The Service and Secret fields cxds ignores are still typed as Kubernetes types them: a value
// its API server would refuse is refused, with the field, rather than loaded.
TEST(YamlLoaderTest, IgnoredKubernetesFieldsAreStillTypeChecked) {
  const auto service = [](const std::string& field) {
    return ParseConfigFile("svc.yaml", StrCat(R"(apiVersion: v1
kind: Service
metadata: {name: s, namespace: shop}
spec:
  ports: [{name: http, port: 80}]
  )",
                                              field, "\n"));
  };
  for (const std::string good :
       {"allocateLoadBalancerNodePorts: false", "healthCheckNodePort: 30123", "clusterIPs: [10.96.0.1, \"fd00::1\"]",
        "ipFamilies: [IPv4, IPv6]", "loadBalancerSourceRanges: [10.0.0.0/8]", "clusterIP: None",
        "ipFamilyPolicy: PreferDualStack", "sessionAffinityConfig: {clientIP: {timeoutSeconds: 10800}}",
        "type: NodePort", "type: LoadBalancer", "type: ClusterIP"}) {
    EXPECT_EQ(Errors(service(good)), "") << good;
  }
  EXPECT_EQ(
      Errors(service("type: Headless")),
      "svc.yaml:6: Service shop/s: spec.type: type \"Headless\" must be one of ClusterIP, NodePort, LoadBalancer, "
      "ExternalName, as Kubernetes validates\n");
  const std::string at = "svc.yaml:6: Service shop/s: spec.";
  EXPECT_EQ(Errors(service("allocateLoadBalancerNodePorts: \"false\"")),
            at + "allocateLoadBalancerNodePorts: must be true or false, not a quoted string\n");
  EXPECT_EQ(Errors(service("healthCheckNodePort: high")),
            at + "healthCheckNodePort: must be an integer from 0 to 65535, got \"high\"\n");
  EXPECT_EQ(Errors(service("clusterIPs: 10.96.0.1")), at + "clusterIPs: must be a list\n");
  EXPECT_EQ(Errors(service("ipFamilies: [{v: 4}]")), at + "ipFamilies[0]: must be a string\n");
  EXPECT_EQ(Errors(service("loadBalancerIP: [a]")), at + "loadBalancerIP: must be a string\n");
  EXPECT_EQ(Errors(service("sessionAffinityConfig: [a]")), at + "sessionAffinityConfig: must be a map\n");

  const auto secret = [](const std::string& immutable) {
    return ParseConfigFile("secret.yaml", StrCat(R"(apiVersion: v1
kind: Secret
metadata: {name: cert, namespace: shop}
type: kubernetes.io/tls
stringData: {tls.crt: x, tls.key: k}
immutable: )",
                                                 immutable, "\n"));
  };
  EXPECT_EQ(Errors(secret("true")).find("immutable"), std::string::npos);
  EXPECT_THAT(Errors(secret("\"true\"")),
              ::testing::HasSubstr("secret.yaml:6: Secret shop/cert: immutable: must be true or false, not a quoted "
                                   "string\n"));

  const auto slice = [](const std::string& port_field, const std::string& endpoint_field) {
    return ParseConfigFile("slice.yaml", StrCat(R"(apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: s-1, namespace: shop, labels: {kubernetes.io/service-name: s}}
addressType: IPv4
ports: [{name: http, port: 80, )",
                                                port_field, R"(}]
endpoints: [{addresses: [127.0.0.1], )",
                                                endpoint_field, "}]\n"));
  };
  EXPECT_EQ(Errors(slice("protocol: TCP, appProtocol: http",
                         "nodeName: n1, hostname: h, zone: z, hints: {forZones: [{name: z}]}, "
                         "conditions: {ready: true, serving: true, terminating: false}")),
            "");
  EXPECT_THAT(Errors(slice("protocol: [TCP]", "zone: z")), ::testing::HasSubstr("ports[0].protocol: must be a string"));
  EXPECT_THAT(Errors(slice("appProtocol: http", "nodeName: {a: b}")),
              ::testing::HasSubstr("endpoints[0].nodeName: must be a string"));
  EXPECT_THAT(Errors(slice("appProtocol: http", "conditions: {serving: \"yes\"}")),
              ::testing::HasSubstr("endpoints[0].conditions.serving: must be true or false, not a quoted string"));
  EXPECT_EQ(Errors(ParseConfigFile("empty.yaml", R"(apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: s-1, namespace: shop, labels: {kubernetes.io/service-name: s}}
addressType: IPv4
ports: null
endpoints: null
)")),
            "")
      << "as kubectl prints the slice of a Service with no Pods";
  EXPECT_EQ(Errors(slice("appProtocol: http", "deprecatedTopology: {kubernetes.io/hostname: }")), "");
  EXPECT_THAT(Errors(slice("appProtocol: http", "hints: [z]")),
              ::testing::HasSubstr("endpoints[0].hints: must be a map"));
}

// Integers in the forms Istio's and Kubernetes' YAML 1.1 reading takes from a plain scalar
// (hexadecimal, octal, binary, '_', an integral float); a quoted one is a string, read in base
// 10 as protobuf's JSON reads it.
TEST(YamlLoaderTest, PlainIntegersAreReadInYaml11Forms) {
  const auto vs = [](const std::string& port, const std::string& weight, const std::string& mirror) {
    return ParseConfigFile("vs.yaml", StrCat(R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v}
spec:
  hosts: [a.mesh.local]
  http:
  - route:
    - {destination: {host: a.mesh.local, port: {number: )",
                                             port, "}}, weight: ", weight, R"(}
    - {destination: {host: b.mesh.local}, weight: 50}
    mirror: {host: c.mesh.local}
    mirrorPercentage: {value: )",
                                             mirror, "}\n"));
  };
  const auto read = [&](const std::string& port, const std::string& weight, const std::string& mirror) {
    const ParsedFile parsed = vs(port, weight, mirror);
    EXPECT_EQ(parsed.documents.size(), 1u) << Errors(parsed);
    if (parsed.documents.empty()) return std::tuple<uint32_t, uint32_t, double>{};
    const HttpRoute& route = std::get<VirtualService>(parsed.documents[0].object).http[0];
    return std::tuple<uint32_t, uint32_t, double>{route.route[0].port, route.route[0].weight,
                                                  route.SingleMirrorPercent()};
  };
  EXPECT_EQ(read("0x1F90", "0o62", "010"), (std::tuple<uint32_t, uint32_t, double>{8080, 50, 8}));
  EXPECT_EQ(read("8_080", "5e1", "0b1010"), (std::tuple<uint32_t, uint32_t, double>{8080, 50, 10}));
  EXPECT_EQ(read("+8080", "050.0", "12.5"), (std::tuple<uint32_t, uint32_t, double>{8080, 50, 12.5}))
      << "\"050.0\" is a float: 50";
  EXPECT_EQ(read("\"8080\"", "\"50\"", "\"1.25e1\""), (std::tuple<uint32_t, uint32_t, double>{8080, 50, 12.5}))
      << "quoted: a JSON number";
  EXPECT_EQ(read("!!int 0x1F90", "!!float 5e1", "!!int 010"), (std::tuple<uint32_t, uint32_t, double>{8080, 50, 8}))
      << "tagged a number: read as a plain one";
  for (const std::string bad : {"\"0x1f90\"", "\"08080\"", "\"+8080\"", "8080.5", "0x", "-0x1F90"}) {
    const std::string shown = bad.front() == '"' ? bad.substr(1, bad.size() - 2) : bad;
    EXPECT_EQ(Errors(vs(bad, "50", "1")),
              StrCat("vs.yaml:8: VirtualService default/v: spec.http[0].route[0].destination.port.number: must be an "
                     "integer from 1 to 65535, got \"",
                     shown, "\"\n"));
  }

  // A Service's targetPort: a plain number in any form is a number, else a port name.
  const auto target = [](const std::string& value) {
    const ParsedFile parsed = ParseConfigFile("svc.yaml", StrCat(R"(apiVersion: v1
kind: Service
metadata: {name: s, namespace: shop}
spec:
  ports: [{name: http, port: 80, targetPort: )",
                                                                 value, "}]\n"));
    EXPECT_EQ(parsed.documents.size(), 1u) << Errors(parsed);
    return parsed.documents.empty() ? 0u : std::get<K8sService>(parsed.documents[0].object).ports[0].target_port;
  };
  EXPECT_EQ(target("0x1f90"), 8080u);
  EXPECT_EQ(target("8080"), 8080u);
  EXPECT_EQ(target("\"0x1f90\""), 0u) << "quoted: a port name";
  EXPECT_EQ(target("http-web"), 0u);
}

// Booleans in the forms YAML 1.1 reads from a plain scalar, as Kubernetes and Istio read their
// YAML; a quoted one is a string, which their schemas refuse for a boolean.
TEST(YamlLoaderTest, PlainBooleansAreReadInYaml11Forms) {
  const auto vs = [](const std::string& value) {
    return ParseConfigFile("vs.yaml", StrCat(R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v}
spec:
  hosts: [a.mesh.local]
  http:
  - match: [{uri: {prefix: /a}, ignoreUriCase: )",
                                             value, R"(}]
    route: [{destination: {host: a.mesh.local}}]
)"));
  };
  const auto read = [&](const std::string& value) -> std::optional<bool> {
    const ParsedFile parsed = vs(value);
    if (parsed.documents.size() != 1) return std::nullopt;
    return std::get<VirtualService>(parsed.documents[0].object).http[0].match[0].ignore_uri_case;
  };
  for (const std::string yes :
       {"true", "True", "TRUE", "yes", "Yes", "YES", "y", "Y", "on", "On", "ON", "!!bool yes"}) {
    EXPECT_EQ(read(yes), true) << yes << ": " << Errors(vs(yes));
  }
  for (const std::string no : {"false", "False", "FALSE", "no", "No", "NO", "n", "N", "off", "Off", "OFF"}) {
    EXPECT_EQ(read(no), false) << no << ": " << Errors(vs(no));
  }
  const std::string field = "vs.yaml:7: VirtualService default/v: spec.http[0].match[0].ignoreUriCase: ";
  EXPECT_EQ(Errors(vs("\"true\"")), field + "must be true or false, not a quoted string\n");
  EXPECT_EQ(Errors(vs("'yes'")), field + "must be true or false, not a quoted string\n");
  EXPECT_EQ(Errors(vs("1")), field + "must be true or false\n");
  EXPECT_EQ(Errors(vs("yEs")), field + "must be true or false\n") << "mixed case is a string in YAML 1.1";
  EXPECT_EQ(Errors(vs("!!str true")), field + "must be true or false\n");

  // A boolean that means "unset" when false is unset in any of its forms.
  const auto service = [](const std::string& value) {
    return ParseConfigFile("svc.yaml", StrCat(R"(apiVersion: v1
kind: Service
metadata: {name: s, namespace: shop}
spec:
  ports: [{name: http, port: 80}]
  publishNotReadyAddresses: )",
                                              value, "\n"));
  };
  EXPECT_EQ(Errors(service("no")), "");
  EXPECT_EQ(Errors(service("off")), "");
  EXPECT_EQ(Errors(service("yes")),
            "svc.yaml:6: Service shop/s: spec.publishNotReadyAddresses: publishNotReadyAddresses: true (serving "
            "endpoints that are not ready) is not supported by cxds\n");
}

// A string field, a label value or a list of strings given a plain scalar that YAML 1.1 reads as
// a boolean or a number is refused, as Kubernetes' and Istio's schemas refuse it; quoted, or a
// word YAML 1.1 leaves a string, it loads.
TEST(YamlLoaderTest, UnquotedBooleansAndNumbersAreRefusedWhereAStringIsExpected) {
  const auto vs = [](const std::string& subset, const std::string& label, const std::string& host) {
    return ParseConfigFile("vs.yaml", StrCat(R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v, labels: {version: )",
                                             label, R"(}}
spec:
  hosts: [a.mesh.local, )",
                                             host, R"(]
  http:
  - route: [{destination: {host: a.mesh.local, subset: )",
                                             subset, R"(}}]
)"));
  };
  EXPECT_EQ(Errors(vs("\"on\"", "\"1\"", "\"0x1f\"")), "");
  EXPECT_EQ(Errors(vs("'yes'", "v1", "b.mesh.local")), "");
  EXPECT_EQ(Errors(vs("v2", "yEs", "1.2.3")), "") << "words and forms YAML 1.1 leaves strings";
  EXPECT_EQ(Errors(vs("v2", "1e", "b.mesh.local")), "");

  const std::string object = "VirtualService default/v: ";
  EXPECT_EQ(Errors(vs("on", "v1", "b.mesh.local")),
            "vs.yaml:7: " + object +
                "spec.http[0].route[0].destination.subset: must be a string: unquoted on is a boolean in YAML as "
                "Kubernetes and Istio read it; quote it (\"on\")\n");
  EXPECT_EQ(Errors(vs("v1", "1", "b.mesh.local")),
            "vs.yaml:3: "
            "metadata.labels.version: must be a string: unquoted 1 is a number in YAML as Kubernetes and Istio "
            "read it; quote it (\"1\")\n");
  EXPECT_EQ(Errors(vs("v1", "v1", "1.5")),
            "vs.yaml:5: " + object +
                "spec.hosts[1]: must be a string: unquoted 1.5 is a number in YAML as Kubernetes and Istio read it; "
                "quote it (\"1.5\")\n");
  for (const std::string number : {"0x1f", "0X1F", "0o17", "017", "08", "0b101", "1_000", "-2", "+.5", "1.", ".5",
                                   "1e3", "1E3", ".inf", ".NaN", "0xFFFFFFFFFFFFFFFF", "-0x8000000000000000"}) {
    EXPECT_NE(Errors(vs(number, "v1", "b.mesh.local")).find("is a number"), std::string::npos) << number;
  }
  // What go-yaml v2 leaves a string: not starting with a digit, sign or '.', a float that
  // overflows, '_' on the '.' path, an integer past 64 bits with a sign, sexagesimal, a date.
  for (const std::string text : {"_1", "1e400", "1e45678", ".5_", "-0x8000000000000001", "1:20", "2026-12-05", "0x",
                                 "+", "-", ".", "1.2.3", "v1.5"}) {
    EXPECT_EQ(Errors(vs("v2", text, "b.mesh.local")), "") << text;
  }
  for (const std::string word : {"y", "N", "Off", "TRUE", "!!bool no"}) {
    EXPECT_NE(Errors(vs(word, "v1", "b.mesh.local")).find("is a boolean"), std::string::npos) << word;
  }
}

// Annotations are strings too (Kubernetes refuses `sidecar.istio.io/inject: false`); a null
// value in metadata's maps is "", as Kubernetes reads it.
TEST(YamlLoaderTest, AnnotationsAreStrings) {
  const auto service = [](const std::string& annotations) {
    return ParseConfigFile("svc.yaml", StrCat("apiVersion: v1\nkind: Service\nmetadata: {name: s, annotations: ",
                                              annotations, "}\nspec: {ports: [{name: http, port: 80}]}\n"));
  };
  EXPECT_EQ(Errors(service("{sidecar.istio.io/inject: \"false\", note: }")), "");
  EXPECT_EQ(
      Errors(service("{sidecar.istio.io/inject: false}")),
      "svc.yaml:3: metadata.annotations.sidecar.istio.io/inject: must be a string: unquoted false is a boolean in "
      "YAML as Kubernetes and Istio read it; quote it (\"false\")\n");
  EXPECT_EQ(Errors(service("{networking.istio.io/exportTo: [web]}")),
            "svc.yaml:3: metadata.annotations.networking.istio.io/exportTo: must be a string\n")
      << "said once";
}

// The canonical text (what `cxds apply` stores in etcd) keeps the quotes of a string that would
// read back as a boolean, a number or null without them, so it loads again as the same object.
TEST(YamlLoaderTest, CanonicalTextKeepsTheQuotesAStringNeeds) {
  const ParsedFile first = ParseConfigFile("vs.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v, labels: {version: "1", flag: 'yes', empty: "", nothing: "null", plain: v1}}
spec:
  hosts: [a.mesh.local]
  http:
  - match: [{headers: {x-canary: {exact: "on"}}}]
    route: [{destination: {host: a.mesh.local, subset: "0x10"}}]
)");
  ASSERT_EQ(Errors(first), "");
  ASSERT_EQ(first.documents.size(), 1u);
  const std::string& canonical = first.documents[0].canonical;
  for (const char* quoted : {"\"1\"", "\"yes\"", "\"\"", "\"null\"", "\"on\"", "\"0x10\""}) {
    EXPECT_NE(canonical.find(quoted), std::string::npos) << quoted << " in\n" << canonical;
  }
  EXPECT_EQ(canonical.find("\"v1\""), std::string::npos) << "a string that needs no quotes keeps none";

  const ParsedFile again = ParseConfigFile("stored.yaml", canonical);
  ASSERT_EQ(Errors(again), "");
  ASSERT_EQ(again.documents.size(), 1u);
  EXPECT_EQ(again.documents[0].canonical, canonical);
  const auto& vs = std::get<VirtualService>(again.documents[0].object);
  EXPECT_EQ(vs.meta.labels.at("version"), "1");
  EXPECT_EQ(vs.meta.labels.at("flag"), "yes");
  EXPECT_EQ(vs.meta.labels.at("empty"), "");
  EXPECT_EQ(vs.http[0].route[0].subset, "0x10");
}

// A Pod as kubectl prints it: the spec is not read, the status only for its IPs, which stay in
// the canonical text (a new IP is a change) while the rest of the status does not.
TEST(YamlLoaderTest, APodIsReadForItsLabelsAndIpsAndItsSliceEndpointsNameIt) {
  const std::string pod = R"(apiVersion: v1
kind: Pod
metadata:
  name: reviews-v1-7f9
  namespace: shop
  generateName: reviews-v1-
  labels: {app: reviews, version: v1, pod-template-hash: 7f9}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: reviews-v1, uid: u, controller: true}]
  uid: 1b2c
  resourceVersion: "RV"
spec:
  serviceAccountName: bookinfo-reviews
  nodeName: node-a.example
  containers: [{name: reviews, image: "reviews:v1", ports: [{containerPort: 9080}], anythingAtAll: 1}]
status:
  phase: Running
  conditions: [{type: Ready, status: "True", lastProbeTime: null, lastTransitionTime: "TIME"}]
  podIP: 127.0.0.11
  podIPs: [{ip: 127.0.0.11}, {ip: "::1"}]
  startTime: "TIME"
)";
  const ParsedFile first =
      ParseConfigFile("pod.yaml", absl::StrReplaceAll(pod, {{"RV", "1"}, {"TIME", "2026-12-01T10:00:00Z"}}));
  const ParsedFile again =
      ParseConfigFile("pod.yaml", absl::StrReplaceAll(pod, {{"RV", "2"}, {"TIME", "2026-12-02T10:00:00Z"}}));
  ASSERT_EQ(first.documents.size(), 1u) << Errors(first);
  const auto& read = std::get<K8sPod>(first.documents[0].object);
  EXPECT_EQ(read.meta.labels.at("version"), "v1");
  EXPECT_THAT(read.ips, ::testing::ElementsAre("127.0.0.11", "::1"));
  EXPECT_EQ(read.node_name, "node-a.example") << "spec.nodeName, its endpoints' kubernetes.io/hostname";
  EXPECT_EQ(KindOf(first.documents[0].object), "Pod");
  EXPECT_EQ(first.documents[0].content_hash, again.documents[0].content_hash) << "probe times are not a change";
  const ParsedFile moved =
      ParseConfigFile("pod.yaml", absl::StrReplaceAll(pod, {{"RV", "3"}, {"TIME", "x"}, {"127.0.0.11", "127.0.0.12"}}));
  ASSERT_EQ(moved.documents.size(), 1u) << Errors(moved);
  EXPECT_NE(first.documents[0].content_hash, moved.documents[0].content_hash) << "a new IP is";

  const ParsedFile bad = ParseConfigFile("pod.yaml",
                                         "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                                         "status: {podIP: reviews.example.com}\n");
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0].field, "status.podIP");
  for (const std::string& node_name : std::vector<std::string>{"Node_A", "[a]", "a b", std::string(254, 'n')}) {
    const ParsedFile bad_node = ParseConfigFile(
        "pod.yaml", StrCat("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeName: ", node_name, "}\n"));
    ASSERT_EQ(bad_node.errors.size(), 1u) << node_name;
    EXPECT_EQ(bad_node.errors[0].field, "spec.nodeName") << node_name;
  }
  const ParsedFile unscheduled =
      ParseConfigFile("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeName: \"\"}\n");
  ASSERT_EQ(unscheduled.documents.size(), 1u) << Errors(unscheduled);
  EXPECT_EQ(std::get<K8sPod>(unscheduled.documents[0].object).node_name, "") << "not scheduled yet";

  const std::string slice = R"(apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: s, namespace: shop, labels: {kubernetes.io/service-name: reviews}}
addressType: IPv4
ports: [{name: http, port: 9080}]
endpoints:
- addresses: [127.0.0.11]
  targetRef: {kind: Pod, name: reviews-v1-7f9, uid: 1b2c}
- addresses: [127.0.0.12]
  targetRef: {kind: Pod, name: other, namespace: elsewhere}
- addresses: [127.0.0.13]
  targetRef: {kind: WorkloadEntry, name: vm}
)";
  const ParsedFile good = ParseConfigFile("slice.yaml", slice);
  ASSERT_EQ(good.documents.size(), 1u) << Errors(good);
  const auto& endpoints = std::get<EndpointSlice>(good.documents[0].object).endpoints;
  ASSERT_EQ(endpoints.size(), 3u);
  EXPECT_EQ(endpoints[0].pod_namespace + "/" + endpoints[0].pod_name, "shop/reviews-v1-7f9")
      << "the slice's namespace by default";
  EXPECT_EQ(endpoints[1].pod_namespace + "/" + endpoints[1].pod_name, "elsewhere/other");
  EXPECT_EQ(endpoints[2].pod_name, "") << "only a Pod gives labels";
  const ParsedFile typo = ParseConfigFile("slice.yaml", slice +
                                                            "- addresses: [127.0.0.14]\n"
                                                            "  targetRef: {kind: Pod, nam: typo}\n");
  ASSERT_EQ(typo.errors.size(), 2u) << Errors(typo);
  EXPECT_EQ(typo.errors[0].field, "endpoints[3].targetRef.nam");
  EXPECT_EQ(typo.errors[1].field, "endpoints[3].targetRef.name");
}

// Istio's protocol selection for Service ports: appProtocol, else the name's prefix.
TEST(YamlLoaderTest, ServicePortProtocolFollowsAppProtocolThenThePortName) {
  EXPECT_EQ(KubernetesPortProtocol("http-web", std::nullopt), "HTTP");
  EXPECT_EQ(KubernetesPortProtocol("http2", std::nullopt), "HTTP2");
  EXPECT_EQ(KubernetesPortProtocol("grpc-api", std::nullopt), "GRPC");
  EXPECT_EQ(KubernetesPortProtocol("tcp", std::nullopt), "TCP");
  EXPECT_EQ(KubernetesPortProtocol("TCP-db", std::nullopt), "TCP") << "case-insensitive";
  EXPECT_EQ(KubernetesPortProtocol("mongo", std::nullopt), "MONGO");
  EXPECT_EQ(KubernetesPortProtocol("grpc-web-x", std::nullopt), "GRPC-WEB");
  EXPECT_EQ(KubernetesPortProtocol("web", std::nullopt), "") << "Istio would sniff it";
  EXPECT_EQ(KubernetesPortProtocol("", std::nullopt), "");
  EXPECT_EQ(KubernetesPortProtocol("http", std::string_view("tcp")), "TCP") << "appProtocol first";
  EXPECT_EQ(KubernetesPortProtocol("tcp", std::string_view("kubernetes.io/h2c")), "HTTP2");
  EXPECT_EQ(KubernetesPortProtocol("x", std::string_view("kubernetes.io/wss")), "HTTPS");
  EXPECT_TRUE(IsHttpProtocol("GRPC"));
  EXPECT_FALSE(IsHttpProtocol("HTTPS")) << "opaque to the proxy: TCP";

  const std::string service = R"(apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  ports:
  - {name: tcp-mysql, port: 3306}
  - {name: web, port: 8080}
  - {name: api, port: 9090, appProtocol: grpc}
  - LAST
)";
  const ParsedFile parsed =
      ParseConfigFile("svc.yaml", absl::StrReplaceAll(service, {{"LAST", "{name: x, port: 9091, appProtocol: mqtt}"}}));
  ASSERT_EQ(parsed.errors.size(), 1u) << Errors(parsed);
  EXPECT_EQ(parsed.errors[0].field, "spec.ports[3].appProtocol");
  EXPECT_EQ(parsed.errors[0].message,
            "appProtocol \"mqtt\" is not supported by cxds: Istio would detect the protocol from the traffic, which "
            "cxds does not do; use one cxds serves (http, http2, grpc, tcp, https, tls, mongo, mysql, redis, "
            "kubernetes.io/h2c, kubernetes.io/ws, kubernetes.io/wss)")
      << "Kubernetes takes any appProtocol: not called invalid";
  const ParsedFile valid =
      ParseConfigFile("svc.yaml", absl::StrReplaceAll(service, {{"LAST", "{name: tls, port: 443}"}}));
  ASSERT_EQ(valid.documents.size(), 1u) << Errors(valid);
  const auto& ports = std::get<K8sService>(valid.documents[0].object).ports;
  ASSERT_EQ(ports.size(), 4u);
  EXPECT_EQ(ports[0].protocol, "TCP");
  EXPECT_EQ(ports[1].protocol, "HTTP");
  EXPECT_EQ(ports[2].protocol, "GRPC");
  EXPECT_EQ(ports[3].protocol, "TLS");
}

// Istio's default resolution is NONE: a ServiceEntry without one is not taken as STATIC.
TEST(YamlLoaderTest, ServiceEntryResolutionDefaultsToNoneAsInIstio) {
  const ParsedFile parsed = ParseConfigFile("se.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: with-endpoints}
spec:
  hosts: [a.example.com]
  ports: [{number: 80, name: http}]
  endpoints: [{address: 127.0.0.1}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: external}
spec:
  hosts: [b.example.com]
  ports: [{number: 443, name: tls, protocol: TLS}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: static}
spec:
  hosts: [c.example.com]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.1}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: no-endpoints}
spec:
  hosts: [d.example.com]
  ports: [{number: 80, name: http}]
  resolution: NONE
  endpoints: []
)");
  ASSERT_EQ(parsed.errors.size(), 3u) << Errors(parsed);
  EXPECT_EQ(parsed.errors[0].field, "spec.endpoints");
  EXPECT_EQ(parsed.errors[0].message,
            "cannot be used with resolution NONE (NONE is Istio's default when spec.resolution is not set); set "
            "spec.resolution: STATIC");
  EXPECT_EQ(parsed.errors[1].field, "spec.resolution");
  EXPECT_NE(parsed.errors[1].message.find("is not supported by cxds (NONE is Istio's default"), std::string::npos);
  // An empty list is valid Istio: NONE is refused as not supported, the list not as invalid.
  EXPECT_EQ(parsed.errors[2].field, "spec.resolution") << Errors(parsed);
  EXPECT_NE(parsed.errors[2].message.find("resolution NONE (pass-through to the address dialled) is not supported"),
            std::string::npos);
  ASSERT_EQ(parsed.documents.size(), 1u);
  EXPECT_EQ(MetaOf(parsed.documents[0].object).name, "static");
}

// As Istio validates it: a ServiceEntry host may be a wildcard ("*.example.com") but not "*".
TEST(YamlLoaderTest, AServiceEntryForEveryHostIsInvalid) {
  const ParsedFile parsed = ParseConfigFile("se.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: everything}
spec:
  hosts: [api.example.com, "*"]
  ports: [{number: 80, name: http}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.1}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: partners}
spec:
  hosts: ["*.partner.example"]
  ports: [{number: 80, name: http}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.2}]
)");
  ASSERT_EQ(parsed.errors.size(), 1u) << Errors(parsed);
  EXPECT_EQ(parsed.errors[0].field, "spec.hosts[1]");
  EXPECT_EQ(parsed.errors[0].line, 5);
  EXPECT_NE(parsed.errors[0].message.find("must not be \"*\""), std::string::npos) << parsed.errors[0].message;
  ASSERT_EQ(parsed.documents.size(), 1u);
  EXPECT_EQ(MetaOf(parsed.documents[0].object).name, "partners");
}

// Found by the fuzzer: an empty name given as a string (quoted, or tagged !!str) was accepted.
TEST(YamlLoaderTest, AnEmptyNameIsRefusedHoweverItIsWritten) {
  for (const std::string name : {"\"\"", "!!str", "''"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(
        OnlyError("apiVersion: v1\nkind: Service\nmetadata: {name: " + name + " }\nspec: {ports: [{port: 80}]}\n"),
        "metadata.name: must not be empty");
  }
}

// DNS and DNS_ROUND_ROBIN: endpoint addresses may be names (Envoy resolves them), with Istio's
// rules; STATIC endpoints stay IP addresses.
TEST(YamlLoaderTest, DnsServiceEntriesTakeNamesWithIstiosRules) {
  const ParsedFile good = ParseConfigFile("se.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api}
spec:
  hosts: [api.example.com]
  ports: [{number: 443, name: https, protocol: HTTPS}]
  resolution: DNS
  endpoints:
  - {address: us.api.example.com, labels: {region: us}}
  - {address: 127.0.0.7, weight: 2}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ledger}
spec: {hosts: [ledger.example.com], ports: [{number: 5432, name: tcp, protocol: TCP}], resolution: DNS_ROUND_ROBIN}
)");
  ASSERT_EQ(good.documents.size(), 2u) << Errors(good);
  const auto& api = std::get<ServiceEntry>(good.documents[0].object);
  EXPECT_EQ(api.resolution, ServiceEntry::Resolution::kDns);
  ASSERT_EQ(api.endpoints.size(), 2u);
  EXPECT_EQ(api.endpoints[0].address, "us.api.example.com");
  EXPECT_EQ(std::get<ServiceEntry>(good.documents[1].object).resolution, ServiceEntry::Resolution::kDnsRoundRobin);

  const std::string head =
      "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: x}\nspec:\n"
      "  ports: [{number: 80, name: http}]\n";
  EXPECT_EQ(OnlyError(head + "  hosts: [\"*.example.com\"]\n  resolution: DNS\n"),
            "spec.hosts[0]: a wildcard host needs spec.endpoints with resolution DNS (without them the host itself "
            "is the name resolved)");
  EXPECT_EQ(OnlyError(head + "  hosts: [a.example.com]\n  resolution: DNS_ROUND_ROBIN\n"
                             "  endpoints: [{address: a1.example.com}, {address: a2.example.com}]\n"),
            "spec.endpoints: resolution DNS_ROUND_ROBIN takes at most one endpoint");
  EXPECT_EQ(OnlyError(head + "  hosts: [a.example.com]\n  resolution: DNS\n  workloadSelector: {labels: {app: a}}\n"),
            "spec.workloadSelector: with resolution DNS is not supported by cxds");
  EXPECT_EQ(OnlyError(head + "  hosts: [a.example.com]\n  resolution: DNS\n  endpoints: [{address: \"bad name!\"}]\n")
                .substr(0, 27),
            "spec.endpoints[0].address: ");
  EXPECT_THAT(
      OnlyError(head + "  hosts: [a.example.com]\n  resolution: STATIC\n  endpoints: [{address: a1.example.com}]\n"),
      ::testing::HasSubstr("must be an IPv4 or IPv6 address"));
}

}  // namespace
}  // namespace cxds
