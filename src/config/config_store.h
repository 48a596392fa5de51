// ConfigStore: the accepted mesh configuration, file by file.
//
// ApplyFile takes a file's new content (or its removal) and returns what changed. Rules:
//  - valid documents replace the object of the same kind, namespace and name; a document whose
//    content is unchanged (same canonical YAML) changes nothing;
//  - an invalid document is rejected alone; the last good version of that object keeps
//    serving; if its identity cannot be read (or the file does not parse), every object the
//    file defined is kept (nothing is lost to a half-written file);
//  - objects that disappear from a file that parsed cleanly are removed;
//  - an object defined in two files is an error in the second; the first keeps it.
// Thread-safe. Objects are shared immutably (Snapshot()).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "config/mesh_config.h"
#include "config/yaml_loader.h"
#include "pipeline/push_request.h"

namespace cxds {

struct StoredObject {
  MeshObject object;
  SourcePosition position;
  std::string content_hash;
};

using ObjectMap = std::map<ConfigKey, std::shared_ptr<const StoredObject>>;

class ConfigStore {
 public:
  struct Update {
    // Changed objects only: before (null: added) and after (null: removed).
    std::map<ConfigKey, std::pair<std::shared_ptr<const StoredObject>, std::shared_ptr<const StoredObject>>> changed;
    std::vector<ConfigError> errors;  // this file's current errors
    bool empty() const { return changed.empty(); }
  };
  struct FileStatus {
    std::string path;
    std::vector<ConfigKey> accepted;
    std::vector<ConfigError> errors;
  };

  // `content` nullopt: the file was removed.
  Update ApplyFile(const std::string& path, const std::optional<std::string>& content);

  std::shared_ptr<const ObjectMap> Snapshot() const;
  std::vector<FileStatus> Status() const;
  size_t error_count() const;

 private:
  struct FileState {
    std::set<ConfigKey> keys;  // objects this file defines (accepted)
    std::vector<ConfigError> errors;
  };
  mutable Mutex mu_;
  std::shared_ptr<const ObjectMap> objects_ ABSL_GUARDED_BY(mu_) = std::make_shared<ObjectMap>();
  std::map<ConfigKey, std::string> owner_ ABSL_GUARDED_BY(mu_);  // key -> file
  std::map<std::string, FileState> files_ ABSL_GUARDED_BY(mu_);
};

ConfigKey KeyOf(const MeshObject& object);

}  // namespace cxds
