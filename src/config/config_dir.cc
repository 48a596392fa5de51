#include "config/config_dir.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/strings.h"
#include "config/config_store.h"
#include "config/yaml_loader.h"

namespace cxds {

absl::StatusOr<std::vector<std::string>> ListConfigFiles(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(StrCat("config directory ", dir, " does not exist or is not a directory"));
  }
  std::vector<std::string> files;
  for (auto it = std::filesystem::recursive_directory_iterator(
           dir, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && !name.empty() && name[0] == '.') {
      it.disable_recursion_pending();  // .git and the like
      continue;
    }
    if (it->is_regular_file() && IsConfigFileName(it->path().string())) files.push_back(it->path().string());
  }
  if (ec) return absl::UnavailableError(StrCat("reading ", dir, ": ", ec.message()));
  std::sort(files.begin(), files.end());
  return files;
}

int ValidateDirectory(const std::string& dir, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::vector<std::string>> files = ListConfigFiles(dir);
  if (!files.ok()) {
    err << "error: " << files.status().message() << "\n";
    return 2;
  }
  ConfigStore store;
  size_t errors = 0;
  for (const std::string& path : *files) {
    absl::StatusOr<std::string> content = ReadWholeFile(path);
    if (!content.ok()) {
      err << path << ": " << content.status().message() << "\n";
      errors++;
      continue;
    }
    for (const ConfigError& e : store.ApplyFile(path, *content).errors) {
      err << e.ToString() << "\n";
      errors++;
    }
  }
  out << files->size() << " files, " << store.Snapshot()->size() << " objects accepted, " << errors << " errors\n";
  return errors == 0 ? 0 : 1;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat("cannot open ", path, ": ", std::strerror(errno)));
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace cxds
