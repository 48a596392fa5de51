// Subcommands of the cxds binary.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/heap_release.h"
#include "config/source_url.h"
#include "config/yaml_loader.h"
#include "controller/mesh_controller.h"
#include "server/tls_credentials.h"
#include "server/xds_server.h"

namespace cxds {

struct DemoOptions {
  std::string xds_address = "127.0.0.1:18000";
  std::string node_id = "teaching-envoy";
  uint32_t inventory_port = 18080;
  int push_throttle = 0;                            // 0: min(15 + 5 * cores, 100)
  int push_workers = 2;                             // dispatcher threads
  absl::Duration send_timeout = absl::Seconds(20);  // a stalled response write ends its stream
  XdsSecurityOptions security;                      // no files: plaintext
  // SnapshotCache::Options::keep_unchanged_types: a published version moves only the types that
  // changed (`port N` moves EDS alone). Off by default, as in the walkthrough, where every
  // type takes every version (so the RDS NACK of version 3 names version 2 as accepted).
  bool keep_unchanged_types = false;
};

// The teaching control plane (README.md, "The teaching control plane"): serves version 1,
// then reads `port N`, `invalid`, `status`, `pushes` (one JSON summary line per recent change,
// then `END pushes`) and `quit` from `in`, writing results to `out`. Returns the exit code.
int RunDemo(const DemoOptions& options, std::istream& in, std::ostream& out);

// Every default is in the options structs of the library (MeshController, DirectorySource,
// XdsServer); the flags show them.
struct ServeOptions {
  // --config-source, --config-dir, --etcd-*, --config-settle; directory.limits.max_file_bytes
  // is the controller's max_config_file_bytes.
  ConfigSourceSettings source;
  std::string xds_address = "127.0.0.1:15010";
  std::string admin_address = "127.0.0.1:15014";
  MeshController::Options controller;
  XdsServer::Options server;
  XdsSecurityOptions security;      // no files: plaintext (logged at start)
  std::string admin_token_file;     // bearer token for the admin pages (needed off loopback)
  HeapReleaseOptions heap_release;  // interval 0: never trim
};

// The daemon: serves the mesh config under `config_dir` until SIGINT/SIGTERM.
int RunServe(const ServeOptions& options);

// Checks every config file under `dir` offline: errors (file:line: object: field: message) go
// to `err`, a summary to `out`. Returns 0 if all is valid, 1 if not, 2 if `dir` is unusable.
// `domain_suffix` resolves short hosts for the cross-object rules, `root_namespace` is Istio's
// meshConfig.rootNamespace and `cluster_id` istiod's CLUSTER_ID, as for `serve`.
int RunValidate(const std::string& dir, const std::string& domain_suffix, const std::string& root_namespace,
                const std::string& cluster_id, std::ostream& out, std::ostream& err);

// Where `cxds apply/delete/get` find the config in etcd.
struct StoreOptions {
  std::string etcd_address = "127.0.0.1:2379";
  EtcdTlsFiles tls;
  std::string prefix = "/cxds";
  std::string domain_suffix = "cluster.local";
  std::string root_namespace = kRootNamespace;
  size_t max_config_file_bytes = ParseLimits{}.max_file_bytes;
};

// Validates every document under `paths` as `validate` does and writes those that differ from
// etcd's in one transaction, or nothing if any is invalid. Exit 0 ok, 1 invalid, 2 bad
// arguments, 3 etcd failed (nothing written).
int RunApply(const StoreOptions& options, const std::vector<std::string>& paths, bool dry_run, std::ostream& out,
             std::ostream& err);
int RunDelete(const StoreOptions& options, const std::string& kind, const std::string& namespaced_name,
              std::ostream& out, std::ostream& err);
struct ProxyStatusOptions {
  std::vector<std::string> admins = {"127.0.0.1:15014"};  // one admin address per replica
  std::string proxy;                                      // only this node id
  std::string output = "table";                           // table or json
  std::string colour = "auto";                            // auto (a terminal), always, never
  std::string token_file;                                 // bearer token for the admin pages
};
// `cxds proxy-status`: exit 0, 1 if PROXY is not connected, 2 bad arguments, 3 a replica
// could not be read (the others are still shown).
int RunProxyStatus(const ProxyStatusOptions& options, std::ostream& out, std::ostream& err);

struct ProxyConfigOptions {
  std::string kind = "all";  // clusters, listeners, routes, endpoints or all
  std::string proxy;
  std::string admin = "127.0.0.1:15014";
  std::string output = "short";  // short (tables), json (the admin page) or yaml
  std::string token_file;
};
// `cxds proxy-config`: exit 0, 1 if the proxy is not connected, 2 bad arguments, 3 the admin
// could not be read.
int RunProxyConfig(const ProxyConfigOptions& options, std::ostream& out, std::ostream& err);

// Lists what etcd holds under the prefix (of `kind`, if not empty); `values`: the documents too.
int RunGet(const StoreOptions& options, const std::string& kind, bool values, std::ostream& out, std::ostream& err);

}  // namespace cxds
