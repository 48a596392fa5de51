// Parses and validates mesh config files (YAML or JSON, several documents per file).
//
// Each document is checked on its own. Anything not understood is an error that names the
// file, the line, the object and the field; nothing is silently ignored: an unknown kind, an
// unknown field, a field of the Istio or Kubernetes API that cxds does not serve ("not supported
// by cxds"), a value of the wrong type or out of range. Only what the API server sets
// (metadata.uid, status, ...) and fields with no meaning for xDS are accepted and not read
// (docs/config.md lists them). A file's valid documents are returned even when others in it
// are not.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/mesh_config.h"

namespace cxds {

struct ConfigError {
  std::string file;
  int line = 0;        // 1-based; 0: the whole file
  std::string object;  // "Kind namespace/name" when known
  std::string field;   // "spec.http[0].route[1].weight" when known
  std::string message;

  // "file:line: Kind ns/name: field: message", always one line of at most about 2.5 KiB: the
  // parts quote the file (keys, scalars, the YAML parser's messages, the path), so control
  // characters are escaped (\xNN) and each part is cut ("…(N bytes)"). Every error is
  // printed or logged through this.
  std::string ToString() const;
};

// The identity of a document that failed validation, when it could be read: its last good
// version keeps serving.
struct FailedDocument {
  std::string kind;
  std::string namespace_name;
  std::string name;
};

// A document of a kind that has no meaning for xDS (a Deployment, a ConfigMap, ...): manifests
// are kept with the Services they deploy, so such documents are skipped and counted, not
// refused (docs/config.md).
struct SkippedDocument {
  std::string kind;
  std::string name;  // "namespace/name" as far as the document says
  int line = 0;
  std::string ToString() const;  // "Deployment default/reviews-v1 (line 12)"
};

struct ParsedFile {
  std::vector<ConfigDocument> documents;
  std::vector<SkippedDocument> skipped;
  std::vector<ConfigError> errors;
  std::vector<FailedDocument> failed;  // identities of invalid documents that had one
  bool unidentified_failure = false;   // an invalid document whose identity is unknown
};

// Bounds on what one file may cost to parse. A file over a bound is refused whole (its last good
// objects keep serving) with an error that names the bound: yaml-cpp holds about 1 KiB per
// node, so an unbounded 5 MB list would cost over a gigabyte.
struct ParseLimits {
  size_t max_file_bytes = 4 << 20;  // 4 MiB: Kubernetes objects are at most ~1.5 MiB each
  // Nodes as estimated from the text before parsing (lines and flow separators), so that the
  // estimate, not the parser, is what meets a hostile file.
  size_t max_nodes = 200'000;
  // Nodes visited per file with aliases expanded, and nesting depth: anchors and aliases can
  // make a small text describe a huge (or cyclic) tree.
  size_t max_expanded_nodes = 400'000;
  int max_depth = 64;
};

// `path` is used in messages only. Never throws: anything the YAML library throws is an error.
ParsedFile ParseConfigFile(const std::string& path, std::string_view content, const ParseLimits& limits = {});

// Whether `path` is a config file cxds reads (.yaml, .yml, .json; not hidden or editor
// temporaries such as ".#x.yaml", "x.yaml~", "x.yaml.swp").
bool IsConfigFileName(std::string_view path);

// Istio's protocol of a Kubernetes Service port: `app_protocol` if set (including Kubernetes'
// "kubernetes.io/h2c", "kubernetes.io/ws", "kubernetes.io/wss"), else the port name's prefix
// before '-' ("http-web" -> HTTP, "tcp" -> TCP, "grpc-web..." -> GRPC-WEB), case-insensitive.
// "" when neither names a protocol (Istio would sniff it; cxds serves such ports as HTTP).
std::string KubernetesPortProtocol(std::string_view name, std::optional<std::string_view> app_protocol);

// Whether documents of `kind` have no meaning for xDS and are skipped (Kubernetes workload,
// configuration and access-control kinds). Kinds that do mean something for traffic but that
// cxds does not read (Ingress, Gateway, AuthorizationPolicy, ...) are not among them:
// those are refused as not supported.
bool IsKindWithoutXdsMeaning(std::string_view kind);

// Whether `api_version` ("GROUP/VERSION") is of an API group istiod never reads (its config
// schema's groups are Istio's own, the Kubernetes Gateway API and the Kubernetes groups of
// Services, endpoints, Ingress and what it manages): an Argo CD Application, a Prometheus
// ServiceMonitor, a cert-manager Certificate, a tool's own file such as Skaffold's. A document
// of such a group whose kind cxds does not read has no meaning for xDS and is skipped (one of a
// kind cxds reads stays an apiVersion error: a misspelt group must not pass unread). False for
// the core group ("v1") and a missing group.
bool IsApiGroupWithoutXdsMeaning(std::string_view api_version);

}  // namespace cxds
