#include "common/files.h"

#include <fstream>

#include "common/strings.h"

namespace cxds {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat(path, ": cannot read the ", what));
  // One byte more than allowed tells a file at the limit from a larger one.
  std::string contents(max_bytes + 1, '\0');
  in.read(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (in.bad()) return absl::DataLossError(StrCat(path, ": reading the ", what, " failed"));
  contents.resize(static_cast<size_t>(in.gcount()));
  if (contents.size() > max_bytes) {
    return absl::InvalidArgumentError(StrCat(path, ": the ", what, " is over ", max_bytes, " bytes"));
  }
  return contents;
}

}  // namespace cxds
