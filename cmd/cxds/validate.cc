#include <ostream>

#include "config/config_dir.h"
#include "cxds/commands.h"

namespace cxds {

int RunValidate(const std::string& dir, std::ostream& out, std::ostream& err) {
  return ValidateDirectory(dir, out, err);
}

}  // namespace cxds
