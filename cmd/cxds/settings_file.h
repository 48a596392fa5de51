// `cxds serve --config FILE`: the same settings as the flags, in a YAML map. Kept apart from
// main.cc so that its rules are tested without starting a server.
#pragma once

#include <map>
#include <string>

#include "CLI/CLI.hpp"

namespace cxds {

// Applies settings file `path` to `flags` (the subcommand's options by name): each key names a
// flag, each value is a string, or for a repeatable flag a list of strings (an empty list: none
// given). A flag given on the command line wins. Each value goes through the flag's own checks.
// Returns "" or the first problem as "PATH:LINE: what" (unknown or repeated keys, values of the
// wrong shape, values the flag refuses); nothing is applied after it.
std::string ApplySettingsFile(const std::string& path, const std::map<std::string, CLI::Option*>& flags);

}  // namespace cxds
