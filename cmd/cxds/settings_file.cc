#include "cxds/settings_file.h"

#include <set>
#include <vector>

#include "yaml-cpp/yaml.h"

namespace cxds {

std::string ApplySettingsFile(const std::string& path, const std::map<std::string, CLI::Option*>& flags) {
  const auto at = [&](const YAML::Node& node, const std::string& problem) {
    return path + ":" + std::to_string(node.Mark().line + 1) + ": " + problem;
  };
  YAML::Node settings;
  try {
    settings = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg;
  }
  if (!settings.IsMap() && !settings.IsNull()) return at(settings, "must be a map of setting: value");
  std::set<std::string> seen;
  for (const auto& entry : settings) {
    if (!entry.first.IsScalar()) return at(entry.first, "a setting's name must be a plain string");
    const std::string key = entry.first.Scalar();
    auto flag = flags.find(key);
    if (flag == flags.end()) return at(entry.first, "unknown setting \"" + key + "\"");
    // yaml-cpp keeps both of a repeated key: the second would be dropped without a word.
    if (!seen.insert(key).second) return at(entry.first, "setting \"" + key + "\" is given twice");
    CLI::Option* option = flag->second;
    const bool repeatable = option->get_items_expected_max() > 1;
    std::vector<std::string> values;
    if (entry.second.IsSequence() && repeatable) {
      for (const YAML::Node& item : entry.second) {
        if (!item.IsScalar()) return at(item, key + ": each value must be a plain string");
        values.push_back(item.Scalar());
      }
    } else if (entry.second.IsScalar()) {
      values.push_back(entry.second.Scalar());
    } else {
      return at(entry.first, key + (repeatable ? ": must be a value or a list of values"
                                               : ": must be one value (not a list, a map or nothing)"));
    }
    if (option->count() > 0 || values.empty()) continue;  // the command line wins; [] gives none
    try {
      for (const std::string& value : values) option->add_result(value);
      option->run_callback();  // stores the values, with the flag's own checks
    } catch (const CLI::Error& e) {
      return at(entry.second, key + ": " + e.what());
    }
  }
  return "";
}

}  // namespace cxds
