#include "config/config_store.h"

#include "common/strings.h"

namespace cxds {

ConfigKey KeyOf(const MeshObject& object) {
  const ObjectMeta& meta = MetaOf(object);
  return ConfigKey{KindOf(object), meta.namespace_name, meta.name};
}

ConfigStore::Update ConfigStore::ApplyFile(const std::string& path, const std::optional<std::string>& content) {
  ParsedFile parsed;
  if (content.has_value()) parsed = ParseConfigFile(path, *content);
  Update update;
  MutexLock lock(&mu_);
  auto objects = std::make_shared<ObjectMap>(*objects_);
  FileState& file = files_[path];
  std::set<ConfigKey> keep;  // defined by this file now, or kept because their new version failed
  for (const FailedDocument& failed : parsed.failed) keep.insert({failed.kind, failed.namespace_name, failed.name});
  if (parsed.unidentified_failure) keep.insert(file.keys.begin(), file.keys.end());

  std::vector<ConfigError> errors = parsed.errors;
  std::set<ConfigKey> defined;
  for (ConfigDocument& doc : parsed.documents) {
    const ConfigKey key = KeyOf(doc.object);
    auto owner = owner_.find(key);
    if ((owner != owner_.end() && owner->second != path) || defined.contains(key)) {
      errors.push_back(ConfigError{path, doc.position.line, StrCat(key.kind, " ", key.namespace_name, "/", key.name),
                                   "",
                                   StrCat("is already defined in ",
                                          owner != owner_.end() && owner->second != path ? owner->second : path,
                                          "; this definition is ignored")});
      continue;
    }
    defined.insert(key);
    auto existing = objects->find(key);
    if (existing != objects->end() && existing->second->content_hash == doc.content_hash) continue;  // unchanged
    auto stored = std::make_shared<const StoredObject>(
        StoredObject{std::move(doc.object), std::move(doc.position), std::move(doc.content_hash)});
    update.changed[key] = {existing != objects->end() ? existing->second : nullptr, stored};
    (*objects)[key] = stored;
    owner_[key] = path;
  }
  for (const ConfigKey& key : file.keys) {
    if (defined.contains(key) || keep.contains(key)) continue;
    auto existing = objects->find(key);
    if (existing != objects->end()) {
      update.changed[key] = {existing->second, nullptr};
      objects->erase(existing);
    }
    owner_.erase(key);
  }
  std::set<ConfigKey> now = defined;
  for (const ConfigKey& key : file.keys) {
    if (keep.contains(key) && objects->contains(key)) now.insert(key);
  }
  file.keys = std::move(now);
  file.errors = errors;
  update.errors = std::move(errors);
  if (!content.has_value() && file.keys.empty()) files_.erase(path);
  objects_ = std::move(objects);
  return update;
}

std::shared_ptr<const ObjectMap> ConfigStore::Snapshot() const {
  MutexLock lock(&mu_);
  return objects_;
}

std::vector<ConfigStore::FileStatus> ConfigStore::Status() const {
  MutexLock lock(&mu_);
  std::vector<FileStatus> out;
  for (const auto& [path, file] : files_) {
    out.push_back(FileStatus{path, {file.keys.begin(), file.keys.end()}, file.errors});
  }
  return out;
}

size_t ConfigStore::error_count() const {
  MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [path, file] : files_) n += file.errors.size();
  return n;
}

}  // namespace cxds
