// Fuzz target: the YAML/JSON config loader (ParseConfigFile), one file per input.
//
// Invariants (docs/fuzzing.md):
//  - nothing escapes: no exception, and the loader's last-resort catch of std::exception
//    ("cannot read the file: ...") is never reached (it exists for parser bugs);
//  - every error names the file and a line inside it (0 = the whole file), and prints as one
//    bounded line (errors are logged by `cxds serve` and printed by `cxds validate`);
//  - errors and outcome agree: an error means a failed document or a refused file, and a
//    failed or refused document means an error;
//  - every accepted document is identified (valid name and namespace) and positioned in the
//    file;
//  - parsing is deterministic (same errors, same content hashes);
//  - tight limits either refuse the file whole or change nothing.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "config/yaml_loader.h"
#include "fuzz_common.h"

namespace cxds::fuzz {
namespace {

constexpr char kPath[] = "fuzz/config.yaml";

ParsedFile ParseOrDie(std::string_view content, const ParseLimits& limits) {
  try {
    return ParseConfigFile(kPath, content, limits);
  } catch (const std::exception& e) {
    Fail(__FILE__, __LINE__, "ParseConfigFile threw", e.what());
  } catch (...) {
    Fail(__FILE__, __LINE__, "ParseConfigFile threw", "a non-standard exception");
  }
}

bool IsDnsLabel(const std::string& s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

// Everything an outside observer can see of a result, for comparisons.
std::string Describe(const ParsedFile& parsed) {
  std::string out;
  for (const ConfigDocument& doc : parsed.documents) {
    out += KindOf(doc.object) + " " + MetaOf(doc.object).namespace_name + "/" + MetaOf(doc.object).name + " @" +
           std::to_string(doc.position.line) + " " + doc.content_hash + "\n";
  }
  for (const ConfigError& error : parsed.errors) out += "E " + error.ToString() + "\n";
  for (const FailedDocument& failed : parsed.failed) {
    out += "F " + failed.kind + " " + failed.namespace_name + "/" + failed.name + "\n";
  }
  out += parsed.unidentified_failure ? "unidentified\n" : "";
  return out;
}

void CheckResult(std::string_view content, const ParsedFile& parsed) {
  int lines = 1;
  for (char c : content) lines += c == '\n';

  for (const ConfigError& error : parsed.errors) {
    const std::string text = error.ToString();
    FUZZ_CHECK(error.message.find("cannot read the file: ") != 0,
               "the loader's last-resort exception handler was reached: " + text);
    FUZZ_CHECK(error.file == kPath, "an error names another file: " + text);
    FUZZ_CHECK(error.line >= 0 && error.line <= lines, "an error's line is outside the file: " + text);
    FUZZ_CHECK(text.find('\n') == std::string::npos && text.find('\r') == std::string::npos,
               "an error is not one line: " + text.substr(0, 512));
    FUZZ_CHECK(text.size() <= 4096, "an error has " + std::to_string(text.size()) + " bytes");
  }
  const bool failed = !parsed.failed.empty() || parsed.unidentified_failure;
  FUZZ_CHECK(parsed.errors.empty() != failed,
             "errors and failures disagree: " + std::to_string(parsed.errors.size()) + " errors, " +
                 std::to_string(parsed.failed.size()) +
                 " failed, unidentified=" + std::to_string(parsed.unidentified_failure));

  for (const ConfigDocument& doc : parsed.documents) {
    const ObjectMeta& meta = MetaOf(doc.object);
    FUZZ_CHECK(!meta.name.empty() && meta.name.size() <= 253, "an accepted document has no usable name");
    FUZZ_CHECK(IsDnsLabel(meta.namespace_name),
               "an accepted document's namespace is not a DNS label: " + meta.namespace_name.substr(0, 100));
    FUZZ_CHECK(doc.position.file == kPath, "a document is positioned in another file");
    FUZZ_CHECK(doc.position.line >= 1 && doc.position.line <= lines,
               "a document's line is outside the file: " + std::to_string(doc.position.line));
    FUZZ_CHECK(!doc.content_hash.empty(), "an accepted document has no content hash");
  }
}

}  // namespace
}  // namespace cxds::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cxds::fuzz::InstallCheckingLog(spdlog::level::info);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxds;        // NOLINT
  using namespace cxds::fuzz;  // NOLINT
  const std::string_view content(reinterpret_cast<const char*>(data), size);

  const ParsedFile parsed = ParseOrDie(content, ParseLimits{});
  CheckResult(content, parsed);
  const std::string described = Describe(parsed);
  FUZZ_CHECK(Describe(ParseOrDie(content, ParseLimits{})) == described, "parsing the same text twice differs");

  // Limits small enough for fuzzer-sized inputs to meet them.
  const ParseLimits tight{.max_file_bytes = 2048, .max_nodes = 300, .max_expanded_nodes = 400, .max_depth = 12};
  const ParsedFile bounded = ParseOrDie(content, tight);
  CheckResult(content, bounded);
  const bool refused =
      bounded.documents.empty() && bounded.failed.empty() && bounded.unidentified_failure && bounded.errors.size() == 1;
  FUZZ_CHECK(refused || Describe(bounded) == described, "tight limits changed the result without refusing the file:\n" +
                                                            Describe(bounded) + "-- vs --\n" + described);
  return 0;
}
