// Fuzz target: node identity, as a client sends it. The node (id in Istio's form
// TYPE~IP~NAME.NAMESPACE~NAMESPACE.svc.SUFFIX or anything else, metadata NAMESPACE, LABELS,
// GENERATOR, CLUSTER_ID, NODE_NAME, NETWORK, locality, user agent) is built from the input, or (first byte even) parsed
// from it as protobuf wire bytes, as gRPC would.
//
// Invariants (docs/fuzzing.md):
//  - ParseProxyInfo follows its documented rules: the 4-part id gives type, ip and the
//    namespace after the first '.' of the third part; metadata NAMESPACE (a non-empty string)
//    wins; LABELS string values become labels, the topology labels AugmentLabels sets aside
//    (CLUSTER_ID and NODE_NAME metadata give theirs); GENERATOR "grpc" marks proxyless gRPC;
//  - the Sidecar scope chosen for the node is one of its own namespace, or none;
//  - EscapeUntrusted (how client strings reach log lines and metric labels) gives printable
//    ASCII, no line break, at most 4 bytes per kept byte plus the "…(N bytes)" mark, and can be
//    decoded back to exactly the kept prefix (nothing is lost or forged); in bare fields no
//    space or '=' survives;
//  - TruncateUntrusted (what the ledger keeps) keeps a prefix of at most max bytes, never ends
//    inside a UTF-8 sequence, and says the full size;
//  - the pilot_xds{version} label from the client's user agent renders as one Prometheus line.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/strings.h"
#include "config/config_store.h"
#include "fuzz_common.h"
#include "metrics/metrics.h"
#include "model/mesh_model.h"
#include "model/proxy.h"

namespace cxds::fuzz {
namespace {

using envoy::config::core::v3::Node;

// A mesh with Sidecars in two namespaces (one default, one per workload label) and services.
constexpr char kMesh[] = R"(apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: shop}
spec: {ports: [{port: 9080}], selector: {app: reviews}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ext, namespace: default}
spec:
  resolution: STATIC
  hosts: [api.example.com]
  ports: [{number: 443, protocol: HTTP}]
  endpoints: [{address: 127.0.0.1}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: shop}
spec: {egress: [{hosts: ["./*"]}]}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: frontend, namespace: shop}
spec:
  workloadSelector: {labels: {app: frontend}}
  egress: [{hosts: ["*/api.example.com", "shop/*"]}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: only-ext, namespace: default}
spec: {egress: [{hosts: ["*/*.example.com"]}]}
)";

std::unique_ptr<MeshContext>& Mesh() {
  static std::unique_ptr<MeshContext> mesh;
  return mesh;
}

std::string Piece(FuzzedDataProvider& in, size_t max) {
  static const std::vector<std::string> kWords = {
      "sidecar", "router", "10.0.0.1", "::1",          "pod-1.shop", "shop", "shop.svc.cluster.local",
      "default", ".",      "frontend", "grpc",         "~",          "\n",   "\"",
      "=",       " ",      "\\",       "\xe2\x80\xa6", "\xff"};
  if (in.ConsumeBool()) return kWords[in.ConsumeIntegralInRange<size_t>(0, kWords.size() - 1)];
  return in.ConsumeRandomLengthString(max);
}

void SetValue(FuzzedDataProvider& in, google::protobuf::Value& value, int depth) {
  switch (in.ConsumeIntegralInRange(0, depth > 2 ? 2 : 4)) {
    case 0:
      value.set_string_value(Piece(in, 64));
      break;
    case 1:
      value.set_number_value(in.ConsumeFloatingPoint<double>());
      break;
    case 2:
      value.set_bool_value(in.ConsumeBool());
      break;
    case 3: {
      auto* fields = value.mutable_struct_value()->mutable_fields();
      for (int i = in.ConsumeIntegralInRange(0, 4); i > 0; --i) SetValue(in, (*fields)[Piece(in, 16)], depth + 1);
      break;
    }
    default:
      for (int i = in.ConsumeIntegralInRange(0, 3); i > 0; --i) {
        SetValue(in, *value.mutable_list_value()->add_values(), depth + 1);
      }
  }
}

Node BuildNode(FuzzedDataProvider& in) {
  Node node;
  std::string id;
  for (int parts = in.ConsumeIntegralInRange(1, 6), i = 0; i < parts; ++i) {
    if (i > 0) id += "~";
    id += Piece(in, 48);
  }
  node.set_id(id);
  node.set_cluster(Piece(in, 32));
  node.set_user_agent_version(Piece(in, 96));
  auto* fields = node.mutable_metadata()->mutable_fields();
  for (const char* key : {"NAMESPACE", "LABELS", "GENERATOR"}) {
    if (in.ConsumeBool()) SetValue(in, (*fields)[key], 0);
  }
  if (in.ConsumeBool()) {  // LABELS as a struct of (mostly) strings, as Istio sends it
    auto* labels = (*fields)["LABELS"].mutable_struct_value()->mutable_fields();
    for (int i = in.ConsumeIntegralInRange(0, 4); i > 0; --i) SetValue(in, (*labels)[Piece(in, 16)], 3);
  }
  // What istiod's setTopologyLabels adds as labels (read last: older inputs keep their meaning).
  for (const char* key : {"CLUSTER_ID", "NODE_NAME", "NETWORK"}) {
    if (in.ConsumeBool()) SetValue(in, (*fields)[key], 2);
  }
  if (in.ConsumeBool()) {
    node.mutable_locality()->set_region(Piece(in, 32));
    node.mutable_locality()->set_zone(Piece(in, 32));
    node.mutable_locality()->set_sub_zone(Piece(in, 32));
  }
  return node;
}

// Decodes EscapeUntrusted's escapes; false if `escaped` is not a sequence of them.
bool Unescape(std::string_view escaped, std::string& out) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] != '\\') {
      out += escaped[i];
      continue;
    }
    if (++i == escaped.size()) return false;
    switch (escaped[i]) {
      case '\\':
        out += '\\';
        break;
      case '"':
        out += '"';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'x': {
        if (i + 2 >= escaped.size()) return false;
        const int high = hex(escaped[i + 1]);
        const int low = hex(escaped[i + 2]);
        if (high < 0 || low < 0) return false;
        out += static_cast<char>(high * 16 + low);
        i += 2;
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

void CheckEscape(std::string_view text, size_t max_bytes, UntrustedIn where) {
  const std::string escaped = EscapeUntrusted(text, max_bytes, where);
  const size_t kept = std::min(text.size(), max_bytes);
  std::string_view body = escaped;
  if (kept < text.size()) {
    const std::string mark = "\u2026(" + std::to_string(text.size()) + " bytes)";
    FUZZ_CHECK(body.ends_with(mark), "a cut text does not end with its size: " + escaped.substr(0, 200));
    body.remove_suffix(mark.size());
  }
  FUZZ_CHECK(body.size() <= 4 * kept, "escaping more than quadrupled the text");
  for (char c : body) {
    const auto byte = static_cast<unsigned char>(c);
    FUZZ_CHECK(byte >= 0x20 && byte < 0x7f, "an escaped text has byte " + std::to_string(byte));
    if (where == UntrustedIn::kBare) FUZZ_CHECK(c != ' ' && c != '=', "a bare field keeps a space or '='");
  }
  std::string decoded;
  FUZZ_CHECK(Unescape(body, decoded), "an escaped text does not decode: " + std::string(body.substr(0, 200)));
  FUZZ_CHECK(decoded == text.substr(0, kept), "an escaped text decodes to something else than the kept text");
}

// Well-formed UTF-8 as far as sequence lengths go (what a cut must respect).
bool IsUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t length = lead < 0x80             ? 1
                          : (lead & 0xE0) == 0xC0 ? 2
                          : (lead & 0xF0) == 0xE0 ? 3
                          : (lead & 0xF8) == 0xF0 ? 4
                                                  : 0;
    if (length == 0 || i + length > text.size()) return false;
    for (size_t j = 1; j < length; ++j) {
      if ((static_cast<unsigned char>(text[i + j]) & 0xC0) != 0x80) return false;
    }
    i += length;
  }
  return true;
}

void CheckTruncate(std::string_view text, size_t max_bytes) {
  const std::string out = TruncateUntrusted(text, max_bytes);
  if (text.size() <= max_bytes) {
    FUZZ_CHECK(out == text, "a text within the limit was changed");
    return;
  }
  const std::string mark = "\u2026(" + std::to_string(text.size()) + " bytes)";
  FUZZ_CHECK(std::string_view(out).ends_with(mark), "a truncated text does not say its size");
  const std::string_view kept = std::string_view(out).substr(0, out.size() - mark.size());
  FUZZ_CHECK(kept.size() <= max_bytes && text.starts_with(kept), "a truncated text is not a prefix within the limit");
  FUZZ_CHECK(kept.size() + 3 >= max_bytes, "a truncated text gave up more than a partial character");
  if (IsUtf8(text)) {
    FUZZ_CHECK((static_cast<unsigned char>(text[kept.size()]) & 0xC0) != 0x80,
               "a truncated text ends inside a UTF-8 sequence");
  }
}

void CheckProxy(const Node& node) {
  const ProxyInfo proxy = ParseProxyInfo(node);
  FUZZ_CHECK(proxy.id == node.id(), "the proxy id is not the node id");
  const std::vector<std::string> parts = absl::StrSplit(node.id(), '~');
  std::string ns = "default";
  if (parts.size() == 4) {
    FUZZ_CHECK(proxy.type == parts[0] && proxy.ip == parts[1], "type and ip are not the id's first two parts");
    if (size_t dot = parts[2].find('.'); dot != std::string::npos) ns = parts[2].substr(dot + 1);
  } else {
    FUZZ_CHECK(proxy.type.empty() && proxy.ip.empty(), "a plain id has a type or an ip");
  }
  const auto& fields = node.metadata().fields();
  if (auto it = fields.find("NAMESPACE"); it != fields.end() && !it->second.string_value().empty()) {
    ns = it->second.string_value();
  }
  FUZZ_CHECK(proxy.namespace_name == ns, "namespace " + proxy.namespace_name + " instead of " + ns);
  // LABELS become labels; AugmentLabels may add (or set) the topology labels: the locality's
  // parts, CLUSTER_ID, NODE_NAME, and NETWORK where no network label is given.
  const auto augmentable = [](const std::string& key) {
    return IsAugmentedKey(key) || key == "topology.istio.io/network";
  };
  const google::protobuf::Struct* given = nullptr;
  if (auto it = fields.find("LABELS"); it != fields.end()) given = &it->second.struct_value();
  if (given != nullptr) {
    for (const auto& [key, value] : given->fields()) {
      if (augmentable(key) && (key != "topology.istio.io/network" || value.string_value().empty())) continue;
      auto label = proxy.labels.find(key);
      FUZZ_CHECK(label != proxy.labels.end() && label->second == value.string_value(), "label " + key + " is lost");
    }
  }
  for (const auto& [key, value] : proxy.labels) {
    FUZZ_CHECK(augmentable(key) || (given != nullptr && given->fields().contains(key)),
               "label " + key + " without LABELS naming it");
  }
  const auto metadata = [&](const char* key) {
    auto it = fields.find(key);
    return it != fields.end() ? it->second.string_value() : std::string();
  };
  const auto label_of = [&](const std::string& key) -> std::optional<std::string> {
    auto it = proxy.labels.find(key);
    return it == proxy.labels.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  const auto given_label = [&](const std::string& key) -> std::optional<std::string> {
    if (given == nullptr) return std::nullopt;
    auto it = given->fields().find(key);
    return it == given->fields().end() ? std::nullopt : std::optional<std::string>(it->second.string_value());
  };
  // CLUSTER_ID and NODE_NAME, when given, are their labels; else a label LABELS gives is kept.
  for (const auto& [label, key] :
       {std::pair{"topology.istio.io/cluster", "CLUSTER_ID"}, std::pair{"kubernetes.io/hostname", "NODE_NAME"}}) {
    const std::string value = metadata(key);
    FUZZ_CHECK(label_of(label) == (value.empty() ? given_label(label) : std::optional<std::string>(value)),
               StrCat("label ", label, " is neither ", key, " nor the one LABELS gives"));
  }
  // NETWORK where LABELS gives no (non-empty) network label.
  const std::optional<std::string> network = given_label("topology.istio.io/network");
  if (!metadata("NETWORK").empty() && (!network.has_value() || network->empty())) {
    FUZZ_CHECK(label_of("topology.istio.io/network") == metadata("NETWORK"), "NETWORK is not the network label");
  }
  // The proxy's locality is in its labels as istiod writes it ("region/zone/subzone", a
  // subzone only after a zone), each part that is not empty and holds no '/' (which would
  // shift the parts that follow).
  const auto& locality = proxy.locality;
  const std::string locality_parts[] = {locality.region(), locality.zone(),
                                        locality.zone().empty() ? "" : locality.sub_zone()};
  const char* keys[] = {"topology.kubernetes.io/region", "topology.kubernetes.io/zone", "topology.istio.io/subzone"};
  bool shifted = false;
  for (size_t i = 0; i < 3; ++i) {
    shifted = shifted || locality_parts[i].find('/') != std::string::npos;
    if (locality_parts[i].empty() || shifted) continue;
    FUZZ_CHECK(label_of(keys[i]) == locality_parts[i], StrCat("label ", keys[i], " is not the locality's"));
  }
  auto generator = fields.find("GENERATOR");
  FUZZ_CHECK(proxy.grpc == (generator != fields.end() && generator->second.string_value() == "grpc"),
             "proxyless gRPC is decided by something else than GENERATOR");

  const ProxyScope scope(proxy, *Mesh());
  const std::string& key = scope.key();
  FUZZ_CHECK(key == "all" || key.starts_with("sidecar:" + proxy.namespace_name + "/"),
             "a node of namespace " + proxy.namespace_name + " got the Sidecar scope " + key);
  for (const auto& [host, service] : Mesh()->services()) {
    FUZZ_CHECK(scope.Visible(service) == scope.VisibleHost(host), "Visible and VisibleHost disagree on " + host);
  }
  FUZZ_CHECK(!scope.VisibleHost("no-such-host.example.org"), "an unknown host is visible");
}

void CheckVersionLabel(const Node& node) {
  MetricsRegistry registry;
  const std::string version =
      node.user_agent_version().empty() ? "unknown" : EscapeUntrusted(node.user_agent_version(), 64);
  registry.GetGauge("pilot_xds", "Connected xDS streams, by client version.", {{"version", version}}).Add(1);
  const std::string text = registry.RenderPrometheus();
  size_t samples = 0;
  for (const std::string& line : std::vector<std::string>(absl::StrSplit(text, '\n'))) {
    if (line.empty() || line.starts_with("#")) continue;
    samples++;
    FUZZ_CHECK(line.starts_with("pilot_xds{version=\"") && line.ends_with("\"} 1"),
               "a bad pilot_xds line: " + line.substr(0, 300));
  }
  FUZZ_CHECK(samples == 1, "pilot_xds rendered as " + std::to_string(samples) + " lines");
}

}  // namespace
}  // namespace cxds::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using namespace cxds;  // NOLINT
  fuzz::InstallCheckingLog(spdlog::level::info);
  ConfigStore store;
  store.ApplyFile("mesh.yaml", std::string(fuzz::kMesh));
  FUZZ_CHECK(store.error_count() == 0 && store.Snapshot()->size() == 5, "the fuzzer's own mesh does not load");
  fuzz::Mesh() = std::make_unique<MeshContext>("v1", 1, absl::UnixEpoch(), store.Snapshot(), "cluster.local");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxds;        // NOLINT
  using namespace cxds::fuzz;  // NOLINT
  if (size == 0) return 0;
  Node node;
  if (data[0] % 2 == 0) {
    if (!node.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  } else {
    FuzzedDataProvider in(data + 1, size - 1);
    node = BuildNode(in);
  }
  CheckProxy(node);
  CheckVersionLabel(node);
  FuzzedDataProvider sizes(data, std::min<size_t>(size, 4));
  for (const std::string* text : {&node.id(), &node.user_agent_version(), &node.cluster()}) {
    const size_t max_bytes = sizes.ConsumeIntegralInRange<size_t>(0, 300);
    CheckEscape(*text, max_bytes, UntrustedIn::kBare);
    CheckEscape(*text, max_bytes, UntrustedIn::kQuoted);
    CheckEscape(*text, kUntrustedLogBytes, UntrustedIn::kBare);
    CheckTruncate(*text, max_bytes);
  }
  return 0;
}
