// Parses and validates mesh config files (YAML or JSON, several documents per file).
//
// Each document is checked on its own. Anything not understood is an error that names the
// file, the line, the object and the field; nothing is silently ignored: an unknown kind, an
// unknown or unsupported field, a value of the wrong type or out of range. A file's valid
// documents are returned even when others in it are not.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/mesh_config.h"

namespace cxds {

struct ConfigError {
  std::string file;
  int line = 0;  // 1-based; 0: the whole file
  std::string object;  // "Kind namespace/name" when known
  std::string field;   // "spec.http[0].route[1].weight" when known
  std::string message;

  // "file:line: Kind ns/name: field: message"
  std::string ToString() const;
};

// The identity of a document that failed validation, when it could be read: its last good
// version keeps serving.
struct FailedDocument {
  std::string kind;
  std::string namespace_name;
  std::string name;
};

struct ParsedFile {
  std::vector<ConfigDocument> documents;
  std::vector<ConfigError> errors;
  std::vector<FailedDocument> failed;  // identities of invalid documents that had one
  bool unidentified_failure = false;   // an invalid document whose identity is unknown
};

// `path` is used in messages only.
ParsedFile ParseConfigFile(const std::string& path, std::string_view content);

// Whether `path` is a config file cxds reads (.yaml, .yml, .json; not hidden or editor
// temporaries such as ".#x.yaml", "x.yaml~", "x.yaml.swp").
bool IsConfigFileName(std::string_view path);

}  // namespace cxds
