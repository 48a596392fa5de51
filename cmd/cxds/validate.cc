#include <ostream>

#include "config/config_dir.h"
#include "config/config_store.h"
#include "cxds/commands.h"

namespace cxds {

int RunValidate(const std::string& dir, std::ostream& out, std::ostream& err) {
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

}  // namespace cxds
