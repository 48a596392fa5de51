// `cxds apply`, `cxds delete`, `cxds get`: the mesh config held in etcd, one document per key
// (PREFIX/KIND/NAMESPACE/NAME), as `cxds serve --config-source etcd://...` reads it.
#include <sys/stat.h>
#include <filesystem>
#include <map>
#include <ostream>

#include "common/files.h"
#include "common/strings.h"
#include "config/config_dir.h"
#include "config/etcd_client.h"
#include "cxds/commands.h"
#include "model/mesh_model.h"

namespace cxds {
namespace {

// Every config file named by `paths` (files, or directories read as `cxds validate` does).
absl::StatusOr<std::vector<FileRead>> ReadInputs(const std::vector<std::string>& paths, size_t max_file_bytes,
                                                 std::ostream& err) {
  std::vector<FileRead> files;
  for (const std::string& path : paths) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return absl::NotFoundError(StrCat(path, ": no such file or directory"));
    if (S_ISDIR(st.st_mode)) {
      ConfigDirReader reader(path, ConfigDirLimits{.max_file_bytes = max_file_bytes});
      absl::StatusOr<ConfigDirReader::Result> read = reader.Next();
      if (!read.ok()) return read.status();
      for (const std::string& note : read->notes) err << "note: " << note << "\n";
      for (FileRead& change : read->changes) files.push_back(std::move(change));
      continue;
    }
    absl::StatusOr<std::string> content = ReadSmallFile(path, max_file_bytes, "config file");
    if (!content.ok()) {
      files.push_back(FileRead::Unreadable(path, std::string(content.status().message())));
    } else {
      files.push_back(FileRead::Present(path, *std::move(content)));
    }
  }
  return files;
}

// Prints the error and returns `exit_code`.
int Fail(const absl::Status& status, int exit_code, std::ostream& err) {
  err << "error: " << status.message() << "\n";
  return exit_code;
}

absl::StatusOr<std::unique_ptr<EtcdClient>> MakeClient(const StoreOptions& options) {
  absl::StatusOr<std::optional<EtcdTls>> tls = ReadEtcdTls(options.tls.ca, options.tls.cert, options.tls.key);
  if (!tls.ok()) return tls.status();
  return std::make_unique<EtcdClient>(options.etcd_address, EtcdClient::Options{.tls = *std::move(tls)});
}

}  // namespace

int RunApply(const StoreOptions& options, const std::vector<std::string>& paths, bool dry_run, std::ostream& out,
             std::ostream& err) {
  absl::StatusOr<std::string> prefix = NormalizeEtcdPrefix(options.prefix);
  if (!prefix.ok()) return Fail(prefix.status(), 2, err);
  const ParseLimits limits{.max_file_bytes = options.max_config_file_bytes};
  absl::StatusOr<std::vector<FileRead>> files = ReadInputs(paths, limits.max_file_bytes, err);
  if (!files.ok()) return Fail(files.status(), 2, err);
  // The same validation as `cxds validate`: each document, duplicates, cross-object rules.
  ConfigStore store(ConfigStore::Options{
      .limits = limits, .check_references = MeshReferenceCheck(options.domain_suffix, options.root_namespace)});
  store.ApplyFiles(*files);
  size_t errors = 0;
  for (const ConfigStore::FileStatus& status : store.Status()) {
    for (const ConfigError& e : status.errors) {
      err << e.ToString() << "\n";
      errors++;
    }
  }
  if (errors > 0) {
    err << errors << " errors: nothing written to etcd\n";
    return 1;
  }
  std::map<std::string, std::string> documents;  // etcd key -> canonical YAML
  for (const FileRead& file : *files) {
    if (file.state != FileRead::State::kPresent) continue;
    for (ConfigDocument& doc : ParseConfigFile(file.path, file.content, limits).documents) {
      documents[EtcdKeyFor(*prefix, KeyOf(doc.object))] = std::move(doc.canonical);
    }
  }
  absl::StatusOr<std::unique_ptr<EtcdClient>> made = MakeClient(options);
  if (!made.ok()) return Fail(made.status(), 2, err);
  EtcdClient& client = **made;
  absl::StatusOr<EtcdRangeResult> current = client.RangePrefix(*prefix);
  if (!current.ok()) return Fail(current.status(), 3, err);
  std::map<std::string, std::string> stored;
  for (EtcdKeyValue& kv : current->kvs) stored[kv.key] = std::move(kv.value);
  std::vector<EtcdWrite> writes;
  for (auto& [key, text] : documents) {
    auto it = stored.find(key);
    if (it != stored.end() && it->second == text) continue;  // unchanged: no revision, no push
    out << (it == stored.end() ? "create " : "update ") << key << "\n";
    writes.push_back({key, std::move(text)});
  }
  const size_t unchanged = documents.size() - writes.size();
  if (dry_run) {
    out << "dry run: " << writes.size() << " of " << documents.size() << " documents would be written (" << unchanged
        << " unchanged); nothing written\n";
    return 0;
  }
  if (writes.empty()) {
    out << "nothing to write: all " << documents.size() << " documents are unchanged (revision " << current->revision
        << ")\n";
    return 0;
  }
  absl::StatusOr<int64_t> revision = client.Commit(writes);
  if (!revision.ok()) {
    err << "error: " << revision.status().message() << "\nnothing written to etcd\n";
    return 3;
  }
  out << "applied " << writes.size() << " documents in one transaction at revision " << *revision << " (" << unchanged
      << " unchanged)\n";
  return 0;
}

int RunDelete(const StoreOptions& options, const std::string& kind, const std::string& namespaced_name,
              std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::string> prefix = NormalizeEtcdPrefix(options.prefix);
  const size_t slash = namespaced_name.find('/');
  if (!prefix.ok() || slash == std::string::npos) {
    err << "error: " << (prefix.ok() ? "name the object as NAMESPACE/NAME" : prefix.status().message()) << "\n";
    return 2;
  }
  const std::string key =
      EtcdKeyFor(*prefix, ConfigKey{kind, namespaced_name.substr(0, slash), namespaced_name.substr(slash + 1)});
  if (!ConfigKeyFromEtcdKey(*prefix, key).ok()) {
    err << "error: \"" << kind << " " << namespaced_name << "\" is not KIND NAMESPACE/NAME\n";
    return 2;
  }
  absl::StatusOr<std::unique_ptr<EtcdClient>> made = MakeClient(options);
  if (!made.ok()) return Fail(made.status(), 2, err);
  EtcdClient& client = **made;
  absl::StatusOr<EtcdRangeResult> current = client.RangePrefix(*prefix);
  if (!current.ok()) return Fail(current.status(), 3, err);
  bool found = false;
  for (const EtcdKeyValue& kv : current->kvs) found = found || kv.key == key;
  if (!found) {
    err << "error: " << key << " is not in etcd\n";
    return 1;
  }
  absl::StatusOr<int64_t> revision = client.Commit({{key, std::nullopt}});
  if (!revision.ok()) return Fail(revision.status(), 3, err);
  out << "deleted " << key << " at revision " << *revision << "\n";
  return 0;
}

int RunGet(const StoreOptions& options, const std::string& kind, bool values, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::string> prefix = NormalizeEtcdPrefix(options.prefix);
  if (!prefix.ok()) return Fail(prefix.status(), 2, err);
  absl::StatusOr<std::unique_ptr<EtcdClient>> made = MakeClient(options);
  if (!made.ok()) return Fail(made.status(), 2, err);
  EtcdClient& client = **made;
  absl::StatusOr<EtcdRangeResult> current = client.RangePrefix(*prefix);
  if (!current.ok()) return Fail(current.status(), 3, err);
  size_t shown = 0;
  for (const EtcdKeyValue& kv : current->kvs) {
    absl::StatusOr<ConfigKey> key = ConfigKeyFromEtcdKey(*prefix, kv.key);
    if (!kind.empty() && (!key.ok() || key->kind != kind)) continue;
    shown++;
    if (values) {
      out << "# " << kv.key << " (mod_revision " << kv.mod_revision << ")\n---\n" << kv.value << "\n";
    } else if (key.ok()) {
      out << key->kind << " " << key->namespace_name << "/" << key->name << " mod_revision=" << kv.mod_revision << "\n";
    } else {
      out << "? " << kv.key << " (not PREFIX/KIND/NAMESPACE/NAME) mod_revision=" << kv.mod_revision << "\n";
    }
  }
  out << shown << " objects at revision " << current->revision << "\n";
  return 0;
}

}  // namespace cxds
