#include "config/config_dir.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/strings.h"
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

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat("cannot open ", path, ": ", std::strerror(errno)));
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace cxds
