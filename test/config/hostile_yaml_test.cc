// Hostile and broken config input: every case is an error with file and line (or a refusal of
// the whole file), never an exception, a crash or a silently wrong object.
#include <string>
#include <variant>

#include "config/yaml_loader.h"
#include "gtest/gtest.h"

namespace cxds {
namespace {

std::string Errors(const ParsedFile& parsed) {
  std::string out;
  for (const ConfigError& e : parsed.errors) out += e.ToString() + "\n";
  return out;
}

bool HasError(const ParsedFile& parsed, const std::string& field, const std::string& text) {
  for (const ConfigError& e : parsed.errors) {
    if (e.field == field && e.message.find(text) != std::string::npos) return true;
  }
  return false;
}

// Annotations are strings in Kubernetes: a list where Istio reads the exportTo annotation is an
// error naming the field, and the Service is not served with a guess.
TEST(HostileYamlTest, AServiceExportToAnnotationThatIsNoStringIsAnError) {
  const ParsedFile parsed = ParseConfigFile("svc.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: s, annotations: {networking.istio.io/exportTo: [web]}}
spec: {ports: [{name: http, port: 80}]}
)");
  EXPECT_TRUE(HasError(parsed, "metadata.annotations.networking.istio.io/exportTo", "must be a string"));
  EXPECT_TRUE(parsed.documents.empty());
}

// One exportTo is bounded: every proxy's visibility checks walk it on every push.
TEST(HostileYamlTest, AnExportToOfMoreThan256NamespacesIsNotSupported) {
  std::string many;
  for (int i = 0; i < 257; ++i) many += (i ? "," : "") + std::string("ns-") + std::to_string(i);
  const ParsedFile service = ParseConfigFile("svc.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: s, annotations: {networking.istio.io/exportTo: ")" +
                                                             many + R"("}}
spec: {ports: [{name: http, port: 80}]}
)");
  EXPECT_TRUE(HasError(service, "metadata.annotations.networking.istio.io/exportTo",
                       "more than 256 namespaces are not supported by cxds"));
  const ParsedFile entry = ParseConfigFile("se.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: e}
spec:
  hosts: [e.example]
  ports: [{number: 80, name: http}]
  resolution: DNS
  exportTo: [)" + many + R"(]
)");
  EXPECT_TRUE(HasError(entry, "spec.exportTo", "more than 256 entries are not supported by cxds"));
}

TEST(HostileYamlTest, ADocumentWithoutSpecIsAnErrorForEveryKind) {
  for (const char* kind : {"ServiceEntry", "WorkloadEntry", "VirtualService", "DestinationRule", "Sidecar"}) {
    const std::string text =
        std::string("apiVersion: networking.istio.io/v1\nkind: ") + kind + "\nmetadata: {name: x, namespace: shop}\n";
    ParsedFile parsed;
    ASSERT_NO_THROW(parsed = ParseConfigFile("half.yaml", text)) << kind;
    EXPECT_TRUE(parsed.documents.empty()) << kind;
    ASSERT_TRUE(HasError(parsed, "spec", "is required")) << kind << ": " << Errors(parsed);
    EXPECT_EQ(parsed.errors[0].line, 1) << "reported at the document's line";
    ASSERT_EQ(parsed.failed.size(), 1u) << "the identity is known: its last good version keeps serving";
  }
  ParsedFile service = ParseConfigFile("s.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\n");
  EXPECT_TRUE(HasError(service, "spec", "is required")) << Errors(service);
}

TEST(HostileYamlTest, MissingNestedMapsAndWrongShapesAreErrors) {
  const ParsedFile parsed = ParseConfigFile("x.yaml", R"(apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v}
spec:
  hosts: [a.example.com]
  http:
  - route:
    - destination: [not, a, map]
    - {}
    - destination: {host: a.example.com, port: 7}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: d}
spec: {host: a.example.com, subsets: [{name: v1, labels: [x]}], trafficPolicy: {connectionPool: 3}}
---
- a list
---
just a string
---
? [complex, key]
: value
)");
  EXPECT_TRUE(parsed.documents.empty()) << Errors(parsed);
  EXPECT_TRUE(HasError(parsed, "spec.http[0].route[0].destination", "must be a map")) << Errors(parsed);
  EXPECT_TRUE(HasError(parsed, "spec.http[0].route[1].destination", "is required")) << Errors(parsed);
  EXPECT_TRUE(HasError(parsed, "spec.http[0].route[2].destination.port", "must be a map")) << Errors(parsed);
  EXPECT_TRUE(HasError(parsed, "spec.subsets[0].labels", "must be a map")) << Errors(parsed);
  EXPECT_TRUE(parsed.unidentified_failure);
}

TEST(HostileYamlTest, AFileOverTheSizeLimitIsRefusedWhole) {
  ParseLimits limits;
  limits.max_file_bytes = 1000;
  const std::string big = "apiVersion: v1\nkind: Service\nmetadata: {name: x}\n# " + std::string(1000, 'x') + "\n";
  const ParsedFile parsed = ParseConfigFile("big.yaml", big, limits);
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_NE(parsed.errors[0].message.find("the limit is 1000"), std::string::npos) << Errors(parsed);
  EXPECT_TRUE(parsed.unidentified_failure) << "the file's last good objects keep serving";
}

TEST(HostileYamlTest, AHugeListIsRefusedBeforeItIsParsed) {
  // 5 MB of "- a" lines took yaml-cpp to 1.3 GB; the estimate refuses it before parsing.
  std::string list = "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports:\n";
  for (int i = 0; i < 300'000; ++i) list += "  - a\n";
  const ParsedFile parsed = ParseConfigFile("list.yaml", list);
  ASSERT_EQ(parsed.errors.size(), 1u) << Errors(parsed);
  EXPECT_NE(parsed.errors[0].message.find("YAML nodes; the limit is"), std::string::npos) << Errors(parsed);
  // Flow style on one line is counted too.
  std::string flow = "[";
  for (int i = 0; i < 300'000; ++i) flow += "a,";
  flow += "a]";
  EXPECT_EQ(ParseConfigFile("flow.yaml", flow).errors.size(), 1u);
}

TEST(HostileYamlTest, AliasesThatExpandBeyondTheBudgetAreRefused) {
  // "Billion laughs": each level references the previous one ten times.
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) text += std::string(j ? ", " : "") + "*a" + std::to_string(i - 1);
    text += "]\n";
  }
  const ParsedFile parsed = ParseConfigFile("laughs.yaml", text);
  ASSERT_EQ(parsed.errors.size(), 1u) << Errors(parsed);
  EXPECT_NE(parsed.errors[0].message.find("anchors and aliases"), std::string::npos) << Errors(parsed);
}

// A few aliases of one big scalar stay within the node budget but would expand the canonical
// text (which writes aliases out) far past the file: refused by the bytes they expand to, while
// the same scalar used once loads.
TEST(HostileYamlTest, AliasesOfABigScalarAreRefusedByTheBytesTheyExpandTo) {
  const std::string big(512 * 1024, 'x');
  const auto service = [&](int aliases) {
    std::string text =
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  annotations:\n    a0: &big " + big + "\n";
    for (int i = 1; i <= aliases; ++i) text += "    a" + std::to_string(i) + ": *big\n";
    return text + "spec: {ports: [{name: http, port: 80}]}\n";
  };
  const ParsedFile once = ParseConfigFile("once.yaml", service(0));
  EXPECT_EQ(Errors(once), "");
  EXPECT_EQ(once.documents.size(), 1u);
  const ParsedFile many = ParseConfigFile("many.yaml", service(16));
  ASSERT_EQ(many.errors.size(), 1u) << Errors(many);
  EXPECT_NE(many.errors[0].message.find("bytes of text"), std::string::npos) << Errors(many);
  EXPECT_TRUE(many.documents.empty());
}

// A string field given a number of 100,000 digits is refused without the message carrying
// the number (twice, as a short one's does).
TEST(HostileYamlTest, AHugeUnquotedNumberInAStringFieldGivesAShortMessage) {
  const ParsedFile parsed =
      ParseConfigFile("big.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s, labels: {v: 0." +
                                      std::string(100'000, '1') + "}}\nspec: {ports: [{name: http, port: 80}]}\n");
  ASSERT_EQ(parsed.errors.size(), 1u) << Errors(parsed).substr(0, 300);
  EXPECT_EQ(parsed.errors[0].message,
            "must be a string: this unquoted value of 100002 characters is a number in YAML as Kubernetes and Istio "
            "read it; quote it");
}

// Mismatched YAML tags everywhere, under long keys at every level, cost one short error per
// document (go-yaml stops at the first), whatever their number.
TEST(HostileYamlTest, ManyMismatchedTagsGiveOneErrorPerDocument) {
  std::string hosts;
  for (int i = 0; i < 20'000; ++i) hosts += "!!int x, ";
  const std::string key(60, 'k');
  const std::string document =
      "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: s}\nspec:\n"
      "  " +
      key + ": {" + key + ": [" + hosts + "!!int x]}\n  hosts: [" + hosts + "a]\n";
  const ParsedFile parsed = ParseConfigFile("tags.yaml", document + "---\n" + document);
  ASSERT_EQ(parsed.errors.size(), 2u) << Errors(parsed).substr(0, 300);
  EXPECT_EQ(parsed.errors[0].field, "spec." + key + "." + key + "[0]");
  EXPECT_LT(parsed.errors[0].message.size(), 200u);
  EXPECT_TRUE(parsed.documents.empty());
}

TEST(HostileYamlTest, DeepNestingIsRefused) {
  const std::string deep = std::string(500, '[') + std::string(500, ']');
  ParsedFile parsed;
  ASSERT_NO_THROW(parsed = ParseConfigFile("deep.yaml", deep));
  ASSERT_EQ(parsed.errors.size(), 1u) << Errors(parsed);
  EXPECT_TRUE(parsed.documents.empty());
}

TEST(HostileYamlTest, BinaryAndInvalidUtf8DoNotCrash) {
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk += static_cast<char>((i * 7919) % 256);
  ParsedFile parsed;
  ASSERT_NO_THROW(parsed = ParseConfigFile("junk.yaml", junk));
  EXPECT_TRUE(parsed.documents.empty());
  ASSERT_NO_THROW(parsed = ParseConfigFile("nul.yaml", std::string("kind: \0Service\n", 16)));
}

TEST(HostileYamlTest, HostsThatWouldCollideInClusterNamesAreRefused) {
  const ParsedFile parsed = ParseConfigFile("x.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: a}
spec:
  hosts: ["a|b.example.com", "with space.example.com", "UPPER.example.com", "*.ok.example.com", "ok.example.com"]
  resolution: STATIC
  ports: [{number: 80, name: http}]
  endpoints: [{address: 127.0.0.1}]
)" + std::string("---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d}\nspec: {host: ") +
                                                          std::string(300, 'h') + ", subsets: [{name: \"v|1\"}]}\n");
  EXPECT_TRUE(HasError(parsed, "spec.hosts[0]", "only letters, digits")) << Errors(parsed);
  EXPECT_TRUE(HasError(parsed, "spec.hosts[1]", "only letters, digits")) << Errors(parsed);
  EXPECT_TRUE(HasError(parsed, "spec.hosts[2]", "upper-case letters are not supported by cxds")) << Errors(parsed);
  EXPECT_FALSE(HasError(parsed, "spec.hosts[3]", "")) << "a leading wildcard label is a valid host";
  EXPECT_FALSE(HasError(parsed, "spec.hosts[4]", ""));
  EXPECT_TRUE(HasError(parsed, "spec.host", "at most 253")) << Errors(parsed);
  EXPECT_TRUE(HasError(parsed, "spec.subsets[0].name", "DNS label")) << Errors(parsed);
  EXPECT_EQ(parsed.errors[0].line, 5);
  EXPECT_TRUE(parsed.documents.empty());
}

TEST(HostileYamlTest, EndpointAddressesMustBeIpAddresses) {
  const ParsedFile parsed = ParseConfigFile("x.yaml", R"(apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: by-name}
spec: {address: inventory.example.com}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: v6}
spec: {address: "::1"}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: socket}
spec: {address: "unix:///var/run/x.sock"}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: s, labels: {kubernetes.io/service-name: s}}
addressType: IPv4
endpoints: [{addresses: [127.0.0.1, "10.0.0.300"]}]
)");
  EXPECT_TRUE(HasError(parsed, "spec.address", "DNS resolution, which is not supported by cxds")) << Errors(parsed);
  EXPECT_TRUE(HasError(parsed, "spec.address", "Unix domain socket addresses are not supported by cxds"));
  EXPECT_TRUE(HasError(parsed, "endpoints[0].addresses[1]", "must be an IPv4 or IPv6 address")) << Errors(parsed);
  ASSERT_EQ(parsed.documents.size(), 1u) << Errors(parsed);
  EXPECT_EQ(MetaOf(parsed.documents[0].object).name, "v6");
}

TEST(HostileYamlTest, ValidIstioThatCxdsDoesNotServeIsNotSupportedNeverInvalid) {
  const ParsedFile parsed = ParseConfigFile("x.yaml", R"(apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: a}
spec:
  hosts: [a.example.com]
  resolution: NONE
  ports: [{number: 8080, name: web, protocol: GRPC-WEB}]
  exportTo: ["."]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: g}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: ["*"]
    tls: {mode: ISTIO_MUTUAL}
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
    bind: 127.0.0.1
---
apiVersion: v1
kind: Service
metadata: {name: s, annotations: {networking.istio.io/exportTo: "."}}  # supported: no error
spec:
  type: ExternalName  # supported: an alias of the host externalName names
  externalName: concrete.default.svc.cluster.local
---
apiVersion: v1
kind: Service
metadata: {name: t}
spec:
  selector: {app: t}
  sessionAffinity: ClientIP
  externalIPs: [127.0.0.9]
  ports: [{name: http, port: 80}, {name: dns, port: 53, protocol: UDP}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v}
spec:
  hosts: [a.example.com]
  gateways: [mesh, istio-system/ingress]
  tls:
  - match:
    - sniHosts: [a.example.com]
      destinationSubnets: [10.0.0.0/8]
      sourceLabels: {app: web}
      sourceNamespace: web
      gateways: [mesh, istio-system/egress]
    route: [{destination: {host: a.example.com}}]
  http:
  - match: [{sourceLabels: {app: web}, port: 80, statPrefix: web}]
    fault: {abort: {http2Error: CANCEL}, delay: {exponentialDelay: 1s}}
    corsPolicy: {allowOrigins: [{exact: "https://example.com"}], unmatchedPreflights: FORWARD}
    route: [{destination: {host: a.example.com}}]
    retries: {attempts: 2, retryRemoteLocalities: true, retryOn: "5xx,503"}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: d}
spec:
  host: a.example.com
  trafficPolicy:
    tls: {mode: ISTIO_MUTUAL}
    loadBalancer: {consistentHash: {maglev: {tableSize: 65537}}}
    connectionPool: {tcp: {idleTimeout: 1s, tcpKeepalive: {time: 1s}}, http: {h2UpgradePolicy: UPGRADE, idleTimeout: 1s}}
    outlierDetection: {consecutiveErrors: 5}
  subsets: [{name: v1, labels: {version: v1}, trafficPolicy: {loadBalancer: {simple: PASSTHROUGH}}}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default}
spec:
  ingress: [{port: {number: 80, protocol: HTTP, name: http}, defaultEndpoint: 127.0.0.1:8080}]
  egress: [{port: {number: 80, protocol: HTTP, name: http}, hosts: ["./*"]}]
  outboundTrafficPolicy: {mode: REGISTRY_ONLY}
)");
  EXPECT_TRUE(HasError(parsed, "spec.resolution",
                       "resolution NONE (pass-through to the address dialled) is not supported by cxds"))
      << Errors(parsed);
  EXPECT_TRUE(HasError(parsed, "spec.ports[0].protocol", "protocol GRPC-WEB is not supported by cxds"));
  EXPECT_FALSE(HasError(parsed, "spec.exportTo", "")) << "a ServiceEntry's exportTo is supported";
  EXPECT_FALSE(HasError(parsed, "kind", "")) << "Gateways are supported";
  EXPECT_FALSE(HasError(parsed, "spec.servers[0].port.protocol", "")) << "HTTPS servers are supported";
  EXPECT_TRUE(HasError(parsed, "spec.servers[0].tls.mode", "mode ISTIO_MUTUAL is not supported by cxds"));
  EXPECT_TRUE(HasError(parsed, "spec.servers[1].bind", "is not supported by cxds"));
  EXPECT_FALSE(HasError(parsed, "spec.type", "")) << "type ExternalName is supported";
  EXPECT_FALSE(HasError(parsed, "spec.externalName", "")) << Errors(parsed);
  EXPECT_FALSE(HasError(parsed, "metadata.annotations.networking.istio.io/exportTo", ""));
  EXPECT_TRUE(HasError(parsed, "spec.sessionAffinity", "ClientIP (client IP stickiness) is not supported by cxds"));
  EXPECT_TRUE(HasError(parsed, "spec.externalIPs", "is not supported by cxds"));
  EXPECT_TRUE(HasError(parsed, "spec.ports[1].protocol", "UDP ports are not supported by cxds"));
  EXPECT_FALSE(HasError(parsed, "spec.gateways", "")) << "gateways are supported";
  EXPECT_FALSE(HasError(parsed, "spec.tls", "")) << "tls routes are supported";
  EXPECT_TRUE(HasError(parsed, "spec.tls[0].match[0].destinationSubnets", "is not supported by cxds"));
  EXPECT_FALSE(HasError(parsed, "spec.tls[0].match[0]", "")) << "source conditions at a Gateway: ignored, as by istiod";
  EXPECT_FALSE(HasError(parsed, "spec.tls[0].match[0].gateways", "")) << "tls routes at a Gateway are supported";
  EXPECT_FALSE(HasError(parsed, "spec.tls[0].match[0].sniHosts", "")) << Errors(parsed);
  EXPECT_FALSE(HasError(parsed, "spec.http[0].match[0].sourceLabels", "")) << "http sourceLabels are supported";
  EXPECT_FALSE(HasError(parsed, "spec.http[0].match[0].statPrefix", "")) << "supported";
  EXPECT_FALSE(HasError(parsed, "spec.http[0].match[0].port", "")) << "match.port is supported";
  EXPECT_TRUE(HasError(parsed, "spec.http[0].fault.abort.http2Error", "is not supported by cxds"));
  EXPECT_TRUE(HasError(parsed, "spec.http[0].fault.delay.exponentialDelay", "is not supported by cxds"));
  EXPECT_FALSE(HasError(parsed, "spec.http[0].corsPolicy.unmatchedPreflights", "")) << "supported";
  EXPECT_FALSE(HasError(parsed, "spec.http[0].retries", "")) << "retries as Istio takes them are supported";
  EXPECT_TRUE(HasError(parsed, "spec.trafficPolicy.tls.mode", "TLS mode ISTIO_MUTUAL is not supported by cxds"));
  EXPECT_TRUE(HasError(parsed, "spec.trafficPolicy.loadBalancer.consistentHash.maglev", "is not supported by cxds"));
  EXPECT_FALSE(HasError(parsed, "spec.trafficPolicy.connectionPool.tcp.idleTimeout", "")) << "supported";
  EXPECT_FALSE(HasError(parsed, "spec.trafficPolicy.connectionPool.http.h2UpgradePolicy", "")) << "supported";
  EXPECT_FALSE(HasError(parsed, "spec.trafficPolicy.connectionPool.tcp.tcpKeepalive", "")) << "supported";
  EXPECT_FALSE(HasError(parsed, "spec.trafficPolicy.connectionPool.http.idleTimeout", "")) << "supported";
  EXPECT_TRUE(HasError(parsed, "spec.trafficPolicy.outlierDetection.consecutiveErrors", "is not supported by cxds"));
  EXPECT_TRUE(
      HasError(parsed, "spec.subsets[0].trafficPolicy.loadBalancer.simple", "PASSTHROUGH is not supported by cxds"));
  EXPECT_TRUE(HasError(parsed, "spec.ingress", "is not supported by cxds"));
  EXPECT_TRUE(HasError(parsed, "spec.egress[0].port", "is not supported by cxds"));
  EXPECT_TRUE(HasError(parsed, "spec.outboundTrafficPolicy", "is not supported by cxds"));
  // Every document but the alias (which has nothing cxds does not serve) is refused.
  ASSERT_EQ(parsed.documents.size(), 1u);
  EXPECT_EQ(std::get<K8sService>(parsed.documents[0].object).meta.name, "s");
  for (const ConfigError& e : parsed.errors) EXPECT_EQ(e.message.find("invalid"), std::string::npos) << e.message;
}

// A Sidecar of outboundTrafficPolicy alone is valid Istio that cxds does not serve: said so, and
// nothing else (no "egress is required"); an empty one Istio refuses too.
TEST(HostileYamlTest, ASidecarWithoutEgressIsRefusedForWhatItHas) {
  const std::string head = "apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: s}\n";
  const ParsedFile policy = ParseConfigFile("x.yaml", head + "spec: {outboundTrafficPolicy: {mode: REGISTRY_ONLY}}\n");
  ASSERT_EQ(policy.errors.size(), 1u) << Errors(policy);
  EXPECT_EQ(policy.errors[0].field, "spec.outboundTrafficPolicy");
  const ParsedFile no_hosts =
      ParseConfigFile("x.yaml", head + "spec: {workloadSelector: {labels: {a: b}}, egress: []}\n");
  ASSERT_EQ(no_hosts.errors.size(), 1u) << Errors(no_hosts);
  EXPECT_EQ(no_hosts.errors[0].message, "must not be empty (an empty Sidecar is refused, as Istio validates)")
      << "else its proxies would see no host at all";
  const ParsedFile empty = ParseConfigFile("x.yaml", head + "spec: {}\n");
  ASSERT_EQ(empty.errors.size(), 1u) << Errors(empty);
  EXPECT_EQ(empty.errors[0].field, "spec.egress");
  EXPECT_EQ(empty.errors[0].message,
            "is required (an empty Sidecar is refused, as Istio validates; cxds scopes egress)");
}

// A ServiceEntry without ports is valid Istio: accepted, serving nothing; resolution DYNAMIC_DNS
// is valid Istio that cxds does not serve.
TEST(HostileYamlTest, ServiceEntriesAsIstioTakesThem) {
  const std::string head =
      "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: e}\nspec:\n  hosts: [a.example.com]\n";
  const ParsedFile portless = ParseConfigFile("x.yaml", head + "  resolution: DNS\n");
  ASSERT_EQ(portless.documents.size(), 1u) << Errors(portless);
  EXPECT_TRUE(std::get<ServiceEntry>(portless.documents[0].object).ports.empty());
  const ParsedFile null_ports = ParseConfigFile("x.yaml", head + "  resolution: DNS\n  ports: ~\n");
  EXPECT_EQ(null_ports.documents.size(), 1u) << Errors(null_ports);
  const ParsedFile dynamic =
      ParseConfigFile("x.yaml", head + "  resolution: DYNAMIC_DNS\n  ports: [{number: 80, name: http}]\n");
  EXPECT_TRUE(HasError(dynamic, "spec.resolution",
                       "resolution DYNAMIC_DNS (names resolved per request by a dynamic "
                       "forward proxy) is not supported by cxds"))
      << Errors(dynamic);
  const ParsedFile unset_protocol =
      ParseConfigFile("x.yaml", head + "  resolution: DNS\n  ports: [{number: 80, name: web, protocol: \"\"}]\n");
  ASSERT_EQ(unset_protocol.documents.size(), 1u) << Errors(unset_protocol);
  EXPECT_EQ(std::get<ServiceEntry>(unset_protocol.documents[0].object).ports[0].protocol, "HTTP")
      << "\"\" is unset, as Istio reads it";
  const ParsedFile empty_ports = ParseConfigFile("x.yaml", head + "  resolution: DNS\n  ports: []\n");
  EXPECT_EQ(empty_ports.documents.size(), 1u) << "[] is none, as Istio reads it: " << Errors(empty_ports);
  const ParsedFile unknown = ParseConfigFile("x.yaml", head + "  resolution: MAGIC\n");
  EXPECT_TRUE(HasError(unknown, "spec.resolution", "must be one of NONE, STATIC, DNS, DNS_ROUND_ROBIN, DYNAMIC_DNS"));
}

// Kubernetes Services as Kubernetes takes them: a headless one without ports (serving nothing);
// a port Istio cannot place by name is TCP on the well-known ports, as Istio's ConvertProtocol.
TEST(HostileYamlTest, KubernetesServicePortsAsIstioReadsThem) {
  const std::string head = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: shop}\nspec:\n";
  const ParsedFile headless = ParseConfigFile("x.yaml", head + "  clusterIP: None\n  selector: {app: s}\n");
  EXPECT_EQ(headless.documents.size(), 1u) << Errors(headless);
  const ParsedFile portless = ParseConfigFile("x.yaml", head + "  selector: {app: s}\n");
  EXPECT_TRUE(HasError(portless, "spec.ports", "is required")) << "Kubernetes requires them";
  const ParsedFile mysql = ParseConfigFile("x.yaml", head +
                                                         "  ports: [{name: db, port: 3306}, {name: web, port: 8080}, "
                                                         "{name: store, port: 27017, appProtocol: mqtt}]\n");
  ASSERT_EQ(mysql.documents.size(), 1u) << Errors(mysql);
  const auto& ports = std::get<K8sService>(mysql.documents[0].object).ports;
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(ports[0].protocol, "TCP");
  EXPECT_EQ(ports[1].protocol, "HTTP") << "not a well-known port: cxds serves HTTP where Istio would sniff";
  EXPECT_EQ(ports[2].protocol, "TCP");
}

// The Kubernetes Gateway API is valid input cxds does not read: its Gateway (a kind name Istio's
// shares) is refused as not supported, in one error, not as an Istio Gateway with unknown fields.
TEST(HostileYamlTest, TheKubernetesGatewayApiIsNotSupportedRatherThanInvalid) {
  const ParsedFile parsed = ParseConfigFile("x.yaml", R"(apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: shop}
spec:
  gatewayClassName: istio
  listeners: [{name: http, port: 80, protocol: HTTP}]
)");
  ASSERT_EQ(parsed.errors.size(), 1u) << Errors(parsed);
  EXPECT_EQ(parsed.errors[0].field, "apiVersion");
  EXPECT_EQ(parsed.errors[0].message,
            "the Kubernetes Gateway API (gateway.networking.k8s.io/v1, kind Gateway) is not supported by cxds: write "
            "Istio's Gateway and VirtualService (networking.istio.io)");
  EXPECT_TRUE(parsed.documents.empty());
}

TEST(HostileYamlTest, NamespacesMustBeDnsLabels) {
  const ParsedFile parsed = ParseConfigFile("x.yaml",
                                            "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\n"
                                            "metadata: {name: a, namespace: \"a/b|c\"}\nspec: {address: 127.0.0.1}\n");
  EXPECT_TRUE(HasError(parsed, "metadata.namespace", "DNS label")) << Errors(parsed);
  EXPECT_TRUE(parsed.documents.empty());
}

// Found by yaml_loader_fuzzer: errors quote the file (keys, scalars, the YAML parser's own
// messages), and `cxds serve` logs them and `cxds validate` prints them one per line. A newline
// in a quoted key split the line (and could forge one); a huge scalar made a huge line.
TEST(HostileYamlTest, ErrorsPrintAsOneBoundedLineWhateverTheFileQuotes) {
  const ParsedFile parsed = ParseConfigFile("dir/x\n.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: s, "forged\nCONFIG accepted\r": 1}
spec: {ports: [{port: ")" + std::string(5000, '9') + R"("}]}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: sc}
spec: {egress: [{hosts: ["a\x01\x7f\nb"]}]}
)");
  ASSERT_EQ(parsed.errors.size(), 3u) << Errors(parsed);
  for (const ConfigError& e : parsed.errors) {
    const std::string line = e.ToString();
    EXPECT_EQ(line.find_first_of("\n\r\x01\x7f"), std::string::npos) << line;
    EXPECT_LT(line.size(), 2600u);
  }
  EXPECT_EQ(parsed.errors[0].ToString(), "dir/x\\x0a.yaml:3: metadata.forged\\x0aCONFIG accepted\\x0d: unknown field");
  EXPECT_NE(parsed.errors[1].ToString().find("\u2026("), std::string::npos) << "the 5,000-digit scalar is cut";
  EXPECT_NE(parsed.errors[2].ToString().find("a\\x01\\x7f\\x0ab"), std::string::npos) << parsed.errors[2].ToString();
  // A syntax error's message comes from yaml-cpp and quotes the offending character.
  const ParsedFile syntax = ParseConfigFile("y.yaml", "a: \"\\\x01\"\n");
  ASSERT_EQ(syntax.errors.size(), 1u);
  EXPECT_EQ(syntax.errors[0].ToString().find('\x01'), std::string::npos) << syntax.errors[0].ToString();
}

// Found by yaml_loader_fuzzer: yaml-cpp 0.7's LoadAll loops for ever, allocating, when a
// document starts with a token its parser does not consume (yaml-cpp issue 1040). A file that
// starts with "," hung the loader (and with it cxds serve's config reading or cxds validate).
TEST(HostileYamlTest, ADocumentThatStallsTheYamlParserIsRefusedNotHung) {
  for (const std::string& text : {std::string(","), std::string(", \0\0\0", 5), std::string("{a: 1}, b\n"),
                                  std::string("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"
                                              "spec: {ports: [{port: 80}]}\n---\n- a\n, b\n")}) {
    const ParsedFile parsed = ParseConfigFile("stall.yaml", text);
    ASSERT_EQ(parsed.errors.size(), 1u) << Errors(parsed);
    EXPECT_NE(parsed.errors[0].message.find("cannot read past this point"), std::string::npos) << Errors(parsed);
    EXPECT_TRUE(parsed.documents.empty()) << "the file is refused whole; its last good objects keep serving";
    EXPECT_TRUE(parsed.unidentified_failure);
  }
  EXPECT_EQ(ParseConfigFile("ok.yaml", "a, b\n").errors.size(), 1u) << "a plain scalar with a comma is no stall";
  EXPECT_EQ(ParseConfigFile("ok.yaml", "a, b\n").errors[0].message.find("cannot read past"), std::string::npos);
}

}  // namespace
}  // namespace cxds
