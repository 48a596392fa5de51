// Fuzz target: the validator of `cxds validate` and `cxds serve` (ConfigStore with the mesh's
// cross-object rules, MeshReferenceCheck) and the mesh model built from what it accepts.
//
// One input is up to three config files, separated by a line "#FILE" (a YAML comment, so the
// seeds stay valid YAML): a.yaml, b/c.yaml, z.yaml.
//
// Invariants (docs/fuzzing.md):
//  - nothing throws;
//  - what is served never breaks a cross-object rule (the reference check finds nothing in it);
//  - every served object is a valid document of one of the files, with that document's
//    content hash and position;
//  - applying the same files again changes nothing (an unchanged save is no change);
//  - without cross-object rules, the served state depends only on the files: all at once, one
//    by one in path order, and one by one in reverse order give the same objects from the same
//    positions (duplicates resolve by path order whatever order events arrive in);
//  - errors name one of the files; error_count() is the number of errors Status() lists;
//  - removing every file leaves nothing served and no errors;
//  - the mesh model (MeshContext, MeshModel::OnUpdate) accepts whatever the store accepted.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/config_store.h"
#include "fuzz_common.h"
#include "model/mesh_model.h"

namespace cxds::fuzz {
namespace {

const std::vector<std::string> kPaths = {"a.yaml", "b/c.yaml", "z.yaml"};
constexpr char kSuffix[] = "cluster.local";

std::vector<FileRead> SplitFiles(std::string_view input) {
  std::vector<FileRead> files;
  constexpr std::string_view kSeparator = "\n#FILE\n";
  while (files.size() + 1 < kPaths.size()) {
    const size_t at = input.find(kSeparator);
    if (at == std::string_view::npos) break;
    files.push_back(FileRead::Present(kPaths[files.size()], std::string(input.substr(0, at))));
    input.remove_prefix(at + kSeparator.size());
  }
  files.push_back(FileRead::Present(kPaths[files.size()], std::string(input)));
  return files;
}

// key -> "content_hash file:line": what an observer can tell of the served state.
std::map<ConfigKey, std::string> Served(const ObjectMap& objects) {
  std::map<ConfigKey, std::string> out;
  for (const auto& [key, stored] : objects) {
    out[key] = stored->content_hash + " " + stored->position.file + ":" + std::to_string(stored->position.line);
  }
  return out;
}

std::string Show(const std::map<ConfigKey, std::string>& served) {
  std::string out;
  for (const auto& [key, where] : served) out += key.ToString() + " " + where + "\n";
  return out;
}

ConfigStore::Update ApplyOrDie(ConfigStore& store, const std::vector<FileRead>& files) {
  try {
    return store.ApplyFiles(files);
  } catch (const std::exception& e) {
    Fail(__FILE__, __LINE__, "ConfigStore::ApplyFiles threw", e.what());
  } catch (...) {
    Fail(__FILE__, __LINE__, "ConfigStore::ApplyFiles threw", "a non-standard exception");
  }
}

void CheckErrors(const ConfigStore& store) {
  size_t listed = 0;
  for (const ConfigStore::FileStatus& status : store.Status()) {
    for (const ConfigError& error : status.errors) {
      listed++;
      FUZZ_CHECK(std::find(kPaths.begin(), kPaths.end(), error.file) != kPaths.end(),
                 "an error names no file of the batch: " + error.ToString());
    }
  }
  FUZZ_CHECK(listed == store.error_count(),
             "error_count() is " + std::to_string(store.error_count()) + ", Status() lists " + std::to_string(listed));
}

// Every served object is a valid document of a file, as parsed on its own.
void CheckServedComesFromFiles(const ObjectMap& served, const std::vector<FileRead>& files) {
  std::map<std::pair<std::string, int>, std::pair<ConfigKey, std::string>> documents;  // (file, line) -> key, hash
  for (const FileRead& file : files) {
    for (const ConfigDocument& doc : ParseConfigFile(file.path, file.content).documents) {
      documents[{file.path, doc.position.line}] = {KeyOf(doc.object), doc.content_hash};
    }
  }
  for (const auto& [key, stored] : served) {
    auto doc = documents.find({stored->position.file, stored->position.line});
    FUZZ_CHECK(doc != documents.end(), "served " + key.ToString() + " is no valid document of its file");
    FUZZ_CHECK(doc->second.first == key && doc->second.second == stored->content_hash,
               "served " + key.ToString() + " differs from the document at its position");
    FUZZ_CHECK(KeyOf(stored->object) == key, "served object's key differs from its content: " + key.ToString());
  }
}

void CheckModel(const std::shared_ptr<const ObjectMap>& objects, ConfigStore& store,
                const ConfigStore::Update& update) {
  MeshContext context("v1", 1, absl::UnixEpoch(), objects, kSuffix);
  for (const auto& [host, service] : context.services()) {
    FUZZ_CHECK(context.FindService(host) == &service, "a service is not found by its own host: " + host);
    // Hosts become cluster names (outbound|PORT|SUBSET|HOST) and gRPC targets: DNS names.
    FUZZ_CHECK(host.size() <= 253, "a service host has " + std::to_string(host.size()) + " characters");
    size_t start = 0;
    for (;;) {
      const size_t dot = std::min(host.find('.', start), host.size());
      const bool wildcard = start == 0 && host.substr(0, dot) == "*";
      FUZZ_CHECK(wildcard || (dot > start && dot - start <= 63), "a service host has a bad DNS label: " + host);
      for (size_t i = start; i < dot && !wildcard; ++i) {
        const char c = host[i];
        FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-',
                   "a service host has '" + std::string(1, c) + "': " + host);
      }
      if (dot == host.size()) break;
      start = dot + 1;
    }
    context.VirtualServicesFor(host);
    context.DestinationRuleFor(host, "default");
  }
  MeshModel model(store, kSuffix);
  model.OnUpdate(update);
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
  // A bound on the work per input; the loader's own size limits are fuzzed by yaml_loader_fuzzer.
  if (size > 64 * 1024) return 0;
  const std::vector<FileRead> files = SplitFiles(std::string_view(reinterpret_cast<const char*>(data), size));
  const ReferenceCheck check = MeshReferenceCheck(kSuffix);

  // With the mesh's cross-object rules, as `cxds validate` and `cxds serve` run.
  ConfigStore store(ConfigStore::Options{.check_references = check});
  const ConfigStore::Update update = ApplyOrDie(store, files);
  const std::shared_ptr<const ObjectMap> served = store.Snapshot();
  CheckErrors(store);
  CheckServedComesFromFiles(*served, files);
  const std::vector<ReferenceError> broken = check(*served, *served);
  FUZZ_CHECK(broken.empty(), "the served state breaks a cross-object rule: " +
                                 (broken.empty() ? "" : broken[0].key.ToString() + " " + broken[0].message));
  FUZZ_CHECK(update.changed.size() == served->size(), "a first batch must report every served object as added");
  CheckModel(served, store, update);
  Count(served->empty() ? "inputs_serving_nothing" : "inputs_serving_objects");
  if (!store.Status().empty() && store.error_count() > 0) Count("inputs_with_errors");

  const ConfigStore::Update again = ApplyOrDie(store, files);
  FUZZ_CHECK(again.empty(),
             "applying the same files again changed " + std::to_string(again.changed.size()) + " objects");
  FUZZ_CHECK(Served(*store.Snapshot()) == Served(*served), "applying the same files again changed the served state");

  // Without cross-object rules the served state is a function of the files alone.
  ConfigStore batch;
  ApplyOrDie(batch, files);
  const auto expected = Served(*batch.Snapshot());
  CheckErrors(batch);
  CheckServedComesFromFiles(*batch.Snapshot(), files);
  ConfigStore forward;
  for (const FileRead& file : files) ApplyOrDie(forward, {file});
  FUZZ_CHECK(Served(*forward.Snapshot()) == expected, "one file at a time in path order differs from the batch:\n" +
                                                          Show(Served(*forward.Snapshot())) + "-- batch --\n" +
                                                          Show(expected));
  ConfigStore backward;
  for (auto file = files.rbegin(); file != files.rend(); ++file) ApplyOrDie(backward, {*file});
  FUZZ_CHECK(Served(*backward.Snapshot()) == expected, "one file at a time in reverse order differs from the batch:\n" +
                                                           Show(Served(*backward.Snapshot())) + "-- batch --\n" +
                                                           Show(expected));

  // Removing everything leaves nothing.
  std::vector<FileRead> removals;
  for (const FileRead& file : files) removals.push_back(FileRead::Removed(file.path));
  const ConfigStore::Update removed = ApplyOrDie(store, removals);
  FUZZ_CHECK(store.Snapshot()->empty(), "objects are served after every file was removed");
  FUZZ_CHECK(store.error_count() == 0, "errors remain after every file was removed");
  FUZZ_CHECK(removed.changed.size() == served->size(), "removing every file must report every object as removed");
  return 0;
}
