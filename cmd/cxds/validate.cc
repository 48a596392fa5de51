#include <ostream>

#include "config/config_dir.h"
#include "cxds/commands.h"
#include "model/mesh_analysis.h"
#include "model/mesh_model.h"

namespace cxds {

int RunValidate(const std::string& dir, const std::string& domain_suffix, const std::string& root_namespace,
                const std::string& cluster_id, std::ostream& out, std::ostream& err) {
  return ValidateDirectory(dir, out, err,
                           ConfigStore::Options{.check_references = MeshReferenceCheck(domain_suffix, root_namespace),
                                                .analyze = MeshAnalyzer(domain_suffix, root_namespace, cluster_id)});
}

}  // namespace cxds
