// ConfigStore: the accepted mesh configuration, file by file.
//
// ApplyFiles takes a batch of files as a config source read them (new content, removal, or a
// read that failed) and returns what changed, as one step. Rules:
//  - valid documents replace the object of the same kind, namespace and name; a document whose
//    content is unchanged (same canonical YAML) changes nothing;
//  - an invalid document is rejected alone; the last good version of that object keeps
//    serving; if its identity cannot be read (or the file does not parse, or is over a limit,
//    or cannot be read), every object the file defined is kept: nothing is lost to a
//    half-written or unreadable file;
//  - objects that disappear from a file that parsed cleanly are removed;
//  - duplicates: an object defined more than once is served from the first definition in
//    path order (byte order of the path; within a file, document order); the others are
//    errors. The answer depends only on the files, never on the order events arrived in, and
//    when the serving definition goes, the next one takes over;
//  - cross-object rules (ReferenceCheck, e.g. a route to a subset no DestinationRule defines):
//    the change that would break one is refused, and the object it touched keeps its last
//    good version (or stays absent), with an error naming both objects;
//  - analysis (Analyzer, like `istioctl analyze`): warnings about the served state that is
//    valid but probably not what was meant (a duplicate host, a service without endpoints).
//    They refuse nothing; they are kept by file beside the errors, and every step says which
//    are new.
// Thread-safe. Objects are shared immutably (Snapshot()).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "config/mesh_config.h"
#include "config/yaml_loader.h"
#include "push/push_request.h"

namespace cxds {

struct StoredObject {
  MeshObject object;
  SourcePosition position;
  std::string content_hash;
};

using ObjectMap = std::map<ConfigKey, std::shared_ptr<const StoredObject>>;

// The objects of one kind ("Service", "DestinationRule", ...), in key order. Keys sort by kind
// first, so they are one range of the map: found in O(log n), without visiting (and missing the
// cache on) the objects of every other kind, such as 10,000 EndpointSlices.
// (A plain pair of iterators: clang 14 with libstdc++ 12 cannot check std::ranges::subrange.)
struct ObjectRange {
  ObjectMap::const_iterator first;
  ObjectMap::const_iterator last;
  ObjectMap::const_iterator begin() const { return first; }
  ObjectMap::const_iterator end() const { return last; }
  bool empty() const { return first == last; }
};
ObjectRange ObjectsOfKind(const ObjectMap& objects, std::string_view kind);

// One file as a config source found it.
struct FileRead {
  enum class State { kPresent, kRemoved, kUnreadable };
  std::string path;
  State state = State::kPresent;
  std::string content;  // kPresent
  std::string error;    // kUnreadable: why, for the file's status

  static FileRead Present(std::string path, std::string content) {
    return {std::move(path), State::kPresent, std::move(content), ""};
  }
  static FileRead Removed(std::string path) { return {std::move(path), State::kRemoved, "", ""}; }
  static FileRead Unreadable(std::string path, std::string error) {
    return {std::move(path), State::kUnreadable, "", std::move(error)};
  }
};

// A cross-object rule broken by `key` (the referring object) at `field`. `target`, when its
// kind is not empty, is the object whose change broke it (e.g. the DestinationRule that
// served the subset in the current state).
struct ReferenceError {
  ConfigKey key;
  std::string field;
  std::string message;
  ConfigKey target;
};
// Checks a candidate state; `current` is what is served now (to name a removed target).
using ReferenceCheck = std::function<std::vector<ReferenceError>(const ObjectMap& candidate, const ObjectMap& current)>;

// A finding about the served state, on object `key` at `field`. `code` names its kind: istiod's
// metric name where it has one (pilot_vservice_dup_domain, pilot_eds_no_instances, ...).
struct ConfigWarning {
  ConfigKey key;
  std::string field;
  std::string code;
  std::string message;
};
using Analyzer = std::function<std::vector<ConfigWarning>(const ObjectMap& served)>;

class ConfigStore {
 public:
  struct Options {
    ParseLimits limits;
    ReferenceCheck check_references;  // none: no cross-object rules
    Analyzer analyze;                 // none: no warnings
    // Warnings kept at most (a config of 10,000 services without endpoints must not make
    // 10,000 status lines); the counts by code stay exact.
    size_t max_warnings = 1000;
  };
  struct Update {
    // Changed objects only: before (null: added) and after (null: removed).
    std::map<ConfigKey, std::pair<std::shared_ptr<const StoredObject>, std::shared_ptr<const StoredObject>>> changed;
    // The current errors of the files in the batch, and any other error this step raised
    // (a duplicate or a refused reference elsewhere).
    std::vector<ConfigError> errors;
    // The batch's files that hold kinds with no meaning for xDS, and those documents.
    std::map<std::string, std::vector<SkippedDocument>> skipped;
    // Warnings this step raised that the previous one did not (message "... [code]").
    std::vector<ConfigError> warnings;
    bool empty() const { return changed.empty(); }
  };
  struct FileStatus {
    std::string path;
    std::vector<ConfigKey> accepted;  // served from this file
    std::vector<ConfigError> errors;
    std::vector<SkippedDocument> skipped;  // kinds with no meaning for xDS, not refused
    std::vector<ConfigError> warnings;     // analysis of the served state (Analyzer)
  };

  ConfigStore() : ConfigStore(Options{}) {}
  explicit ConfigStore(Options options) : options_(std::move(options)) {}

  Update ApplyFiles(const std::vector<FileRead>& files);
  // One file: `content` nullopt means it was removed.
  Update ApplyFile(const std::string& path, const std::optional<std::string>& content);

  std::shared_ptr<const ObjectMap> Snapshot() const;
  std::vector<FileStatus> Status() const;
  size_t error_count() const;
  size_t skipped_count() const;  // documents skipped as kinds with no meaning for xDS
  // The current warnings by code (all of them, also beyond max_warnings).
  std::map<std::string, size_t> WarningCounts() const;
  // Every path the store has state for (accepted objects or errors).
  std::vector<std::string> Paths() const;

 private:
  struct FileState {
    std::string content_hash;  // of the last content parsed; "" if none
    // The definitions this file offers, in document order, each its newest valid version or,
    // where the newest failed, the last good one.
    std::vector<std::shared_ptr<const StoredObject>> definitions;
    std::vector<ConfigError> errors;       // parse and read errors
    std::vector<SkippedDocument> skipped;  // documents with no meaning for xDS
  };
  void UpdateFile(const FileRead& read) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The served state from every file's definitions, and the duplicate errors by path.
  ObjectMap Resolve(std::map<std::string, std::vector<ConfigError>>& duplicates) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies the reference check to `candidate`, reverting what breaks a rule; errors by path.
  void EnforceReferences(ObjectMap& candidate, std::map<std::string, std::vector<ConfigError>>& errors) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<ConfigError> ErrorsOf(const std::string& path) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable Mutex mu_;
  std::shared_ptr<const ObjectMap> objects_ ABSL_GUARDED_BY(mu_) = std::make_shared<ObjectMap>();
  std::map<std::string, FileState> files_ ABSL_GUARDED_BY(mu_);  // path order is precedence order
  // Errors derived from the whole state, recomputed by every step.
  std::map<std::string, std::vector<ConfigError>> derived_errors_ ABSL_GUARDED_BY(mu_);
  // The Analyzer's warnings of the served state, by path; and their counts by code.
  std::map<std::string, std::vector<ConfigError>> warnings_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, size_t> warning_counts_ ABSL_GUARDED_BY(mu_);
  // Applies the analyzer to `served`: warnings_ and warning_counts_; the new ones into `fresh`.
  void Analyze(const ObjectMap& served, std::vector<ConfigError>& fresh) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

ConfigKey KeyOf(const MeshObject& object);

}  // namespace cxds
