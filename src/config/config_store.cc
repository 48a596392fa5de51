#include "config/config_store.h"

#include <algorithm>

#include "common/strings.h"
#include "protocol/resource.h"

namespace cxds {

ObjectRange ObjectsOfKind(const ObjectMap& objects, std::string_view kind) {
  // Every key of `kind` is at least {kind, "", ""} and below {kind + '\0', "", ""}, the next
  // string after kind.
  std::string after(kind);
  after.push_back('\0');
  return {objects.lower_bound(ConfigKey{std::string(kind), "", ""}), objects.lower_bound(ConfigKey{after, "", ""})};
}

namespace {

std::string Describe(const ConfigKey& key) { return StrCat(key.kind, " ", key.namespace_name, "/", key.name); }

std::string Where(const SourcePosition& position) {
  return position.line > 0 ? StrCat(position.file, ":", position.line) : position.file;
}

// Whether the served version of `key` differs between two states.
bool Differs(const ObjectMap& a, const ObjectMap& b, const ConfigKey& key) {
  auto x = a.find(key);
  auto y = b.find(key);
  if (x == a.end() || y == b.end()) return (x == a.end()) != (y == b.end());
  return x->second->content_hash != y->second->content_hash;
}

}  // namespace

ConfigKey KeyOf(const MeshObject& object) {
  const ObjectMeta& meta = MetaOf(object);
  return ConfigKey{KindOf(object), meta.namespace_name, meta.name};
}

void ConfigStore::UpdateFile(const FileRead& read) {
  if (read.state == FileRead::State::kRemoved) {
    files_.erase(read.path);
    return;
  }
  FileState& file = files_[read.path];
  if (read.state == FileRead::State::kUnreadable) {
    // We cannot tell what the file says now, so everything it offered keeps serving.
    file.content_hash.clear();  // parse again once it can be read, even if unchanged
    file.errors = {ConfigError{read.path, 0, "", "",
                               StrCat("cannot be read (", read.error, "); its objects keep their last good version")}};
    return;
  }
  const std::string hash = ContentHash(read.content);
  if (!file.content_hash.empty() && file.content_hash == hash) return;
  ParsedFile parsed = ParseConfigFile(read.path, read.content, options_.limits);

  std::map<ConfigKey, std::shared_ptr<const StoredObject>> previous;
  for (const auto& definition : file.definitions) previous[KeyOf(definition->object)] = definition;
  std::vector<std::shared_ptr<const StoredObject>> definitions;
  std::set<ConfigKey> seen;
  std::vector<ConfigError> errors = std::move(parsed.errors);
  for (ConfigDocument& doc : parsed.documents) {
    const ConfigKey key = KeyOf(doc.object);
    if (!seen.insert(key).second) {
      errors.push_back(ConfigError{read.path, doc.position.line, Describe(key), "",
                                   "is defined twice in this file; the first definition is used"});
      continue;
    }
    auto old = previous.find(key);
    if (old != previous.end() && old->second->content_hash == doc.content_hash) {
      definitions.push_back(old->second);  // unchanged: same object, same identity
      continue;
    }
    definitions.push_back(std::make_shared<const StoredObject>(
        StoredObject{std::move(doc.object), std::move(doc.position), std::move(doc.content_hash)}));
  }
  const auto keep = [&](const ConfigKey& key) {
    auto old = previous.find(key);
    if (old != previous.end() && seen.insert(key).second) definitions.push_back(old->second);
  };
  for (const FailedDocument& failed : parsed.failed) keep({failed.kind, failed.namespace_name, failed.name});
  if (parsed.unidentified_failure) {
    for (const auto& [key, definition] : previous) keep(key);
  }
  file.content_hash = hash;
  file.definitions = std::move(definitions);
  file.errors = std::move(errors);
  file.skipped = std::move(parsed.skipped);
}

ObjectMap ConfigStore::Resolve(std::map<std::string, std::vector<ConfigError>>& duplicates) const {
  ObjectMap objects;
  for (const auto& [path, file] : files_) {
    for (const auto& definition : file.definitions) {
      const ConfigKey key = KeyOf(definition->object);
      auto [it, inserted] = objects.emplace(key, definition);
      if (!inserted) {
        duplicates[path].push_back(
            ConfigError{path, definition->position.line, Describe(key), "",
                        StrCat("is already defined in ", Where(it->second->position),
                               "; this definition is ignored (the first definition in path order is served)")});
      }
    }
  }
  return objects;
}

void ConfigStore::EnforceReferences(ObjectMap& candidate,
                                    std::map<std::string, std::vector<ConfigError>>& errors) const {
  if (!options_.check_references) return;
  const ObjectMap& current = *objects_;
  const auto revert = [&](const ConfigKey& key) {
    auto served = current.find(key);
    if (served != current.end()) {
      candidate[key] = served->second;
    } else {
      candidate.erase(key);
    }
  };
  // Each pass reverts at least one changed object, so this ends within (changes + 1) passes;
  // the cap is a guard against a check that is not a function of its input.
  for (size_t pass = 0; pass <= candidate.size() + current.size() + 1; ++pass) {
    std::vector<ReferenceError> broken = options_.check_references(candidate, current);
    bool reverted = false;
    std::vector<std::pair<std::string, ConfigError>> standing;
    for (const ReferenceError& e : broken) {
      auto referrer = candidate.find(e.key);
      const SourcePosition position = referrer != candidate.end() ? referrer->second->position : SourcePosition{};
      if (referrer != candidate.end() && Differs(candidate, current, e.key)) {
        const bool had_version = current.contains(e.key);
        errors[position.file].push_back(
            ConfigError{position.file, position.line, Describe(e.key), e.field,
                        StrCat(e.message, had_version ? "; this version is refused and the last good one keeps serving"
                                                      : "; this object is refused until that is fixed")});
        revert(e.key);
        reverted = true;
      } else if (!e.target.kind.empty() && Differs(candidate, current, e.target)) {
        auto changed = candidate.find(e.target);
        const SourcePosition target_position =
            changed != candidate.end() ? changed->second->position : current.at(e.target)->position;
        errors[target_position.file].push_back(
            ConfigError{target_position.file, target_position.line, Describe(e.target), "",
                        StrCat("this change is refused and the last good version keeps serving: ", Describe(e.key),
                               " (", Where(position), ") ", e.field, ": ", e.message)});
        revert(e.target);
        reverted = true;
      } else {
        // Broken before this step too (nothing it changed is involved): reported, served.
        standing.push_back(
            {position.file, ConfigError{position.file, position.line, Describe(e.key), e.field, e.message}});
      }
    }
    if (!reverted) {
      for (auto& [path, error] : standing) errors[path].push_back(std::move(error));
      return;
    }
  }
}

std::vector<ConfigError> ConfigStore::ErrorsOf(const std::string& path) const {
  std::vector<ConfigError> out;
  if (auto file = files_.find(path); file != files_.end()) out = file->second.errors;
  if (auto derived = derived_errors_.find(path); derived != derived_errors_.end()) {
    out.insert(out.end(), derived->second.begin(), derived->second.end());
  }
  return out;
}

ConfigStore::Update ConfigStore::ApplyFiles(const std::vector<FileRead>& files) {
  MutexLock lock(&mu_);
  for (const FileRead& read : files) UpdateFile(read);
  std::map<std::string, std::vector<ConfigError>> derived;
  ObjectMap candidate = Resolve(derived);
  EnforceReferences(candidate, derived);

  Update update;
  const ObjectMap& current = *objects_;
  for (const auto& [key, object] : current) {
    auto next = candidate.find(key);
    if (next == candidate.end()) {
      update.changed[key] = {object, nullptr};
    } else if (next->second->content_hash != object->content_hash) {
      update.changed[key] = {object, next->second};
    }
  }
  for (const auto& [key, object] : candidate) {
    if (!current.contains(key)) update.changed[key] = {nullptr, object};
  }

  // Errors to report now: the batch's files, and derived errors that are new elsewhere.
  std::set<std::string> batch;
  for (const FileRead& read : files) batch.insert(read.path);
  for (const std::string& path : batch) {
    auto file = files_.find(path);
    if (file != files_.end() && !file->second.skipped.empty()) update.skipped[path] = file->second.skipped;
  }
  std::set<std::string> before;
  for (const auto& [path, list] : derived_errors_) {
    for (const ConfigError& e : list) before.insert(e.ToString());
  }
  derived_errors_ = std::move(derived);
  for (const std::string& path : batch) {
    for (ConfigError& e : ErrorsOf(path)) update.errors.push_back(std::move(e));
  }
  for (const auto& [path, list] : derived_errors_) {
    if (batch.contains(path)) continue;
    for (const ConfigError& e : list) {
      if (!before.contains(e.ToString())) update.errors.push_back(e);
    }
  }
  // Replaced even when no content changed: an object's serving definition may have moved to
  // another file (its first owner removed), and the status must say where it comes from.
  objects_ = std::make_shared<const ObjectMap>(std::move(candidate));
  Analyze(*objects_, update.warnings);
  return update;
}

void ConfigStore::Analyze(const ObjectMap& served, std::vector<ConfigError>& fresh) {
  if (!options_.analyze) return;
  std::set<std::string> before;
  for (const auto& [path, list] : warnings_) {
    for (const ConfigError& w : list) before.insert(w.ToString());
  }
  warnings_.clear();
  warning_counts_.clear();
  size_t kept = 0;
  for (const ConfigWarning& w : options_.analyze(served)) {
    warning_counts_[w.code]++;
    if (kept == options_.max_warnings) continue;
    kept++;
    auto object = served.find(w.key);
    ConfigError e{object != served.end() ? object->second->position.file : "", 0,
                  StrCat(w.key.kind, " ", w.key.namespace_name, "/", w.key.name), w.field,
                  StrCat(w.message, " [", w.code, "]")};
    if (object != served.end()) e.line = object->second->position.line;
    if (!before.contains(e.ToString())) fresh.push_back(e);
    warnings_[e.file].push_back(std::move(e));
  }
}

std::map<std::string, size_t> ConfigStore::WarningCounts() const {
  MutexLock lock(&mu_);
  return warning_counts_;
}

ConfigStore::Update ConfigStore::ApplyFile(const std::string& path, const std::optional<std::string>& content) {
  return ApplyFiles({content.has_value() ? FileRead::Present(path, *content) : FileRead::Removed(path)});
}

std::shared_ptr<const ObjectMap> ConfigStore::Snapshot() const {
  MutexLock lock(&mu_);
  return objects_;
}

std::vector<std::string> ConfigStore::Paths() const {
  MutexLock lock(&mu_);
  std::set<std::string> paths;
  for (const auto& [path, file] : files_) paths.insert(path);
  for (const auto& [path, list] : derived_errors_) paths.insert(path);
  return {paths.begin(), paths.end()};
}

std::vector<ConfigStore::FileStatus> ConfigStore::Status() const {
  MutexLock lock(&mu_);
  std::map<std::string, FileStatus> by_path;
  for (const auto& [path, file] : files_) by_path[path].path = path;
  for (const auto& [path, list] : derived_errors_) by_path[path].path = path;
  for (const auto& [path, list] : warnings_) by_path[path].path = path;
  for (const auto& [key, object] : *objects_) {
    FileStatus& status = by_path[object->position.file];
    status.path = object->position.file;
    status.accepted.push_back(key);
  }
  std::vector<FileStatus> out;
  for (auto& [path, status] : by_path) {
    status.errors = ErrorsOf(path);
    if (auto file = files_.find(path); file != files_.end()) status.skipped = file->second.skipped;
    if (auto w = warnings_.find(path); w != warnings_.end()) status.warnings = w->second;
    out.push_back(std::move(status));
  }
  return out;
}

size_t ConfigStore::skipped_count() const {
  MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [path, file] : files_) n += file.skipped.size();
  return n;
}

size_t ConfigStore::error_count() const {
  MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [path, file] : files_) n += file.errors.size();
  for (const auto& [path, list] : derived_errors_) n += list.size();
  return n;
}

}  // namespace cxds
