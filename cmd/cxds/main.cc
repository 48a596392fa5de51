// cxds: an xDS control plane. Subcommands:
//   demo      the teaching control plane (see README.md), driven from standard input.
//   serve     watches a mesh config directory and serves it as xDS (the daemon).
//   validate  checks a mesh config directory offline.
//   apply, delete, get   the mesh config held in etcd (for `serve --config-source etcd://`).
//   proxy-status  what each proxy has accepted, from the replicas' admin pages.
//   proxy-config  what cxds last sent one proxy, from its replica's admin page.
#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "cxds/commands.h"
#include "cxds/settings_file.h"
#include "protocol/descriptors.h"

namespace {

// A duration flag ("100ms", "20s"; not negative) whose default is `value`'s own.
CLI::Option* AddDurationOption(CLI::App& app, const std::string& name, absl::Duration& value, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [&value, name](const std::string& text) {
            absl::Duration parsed;
            if (!absl::ParseDuration(text, &parsed) || parsed < absl::ZeroDuration()) {
              throw CLI::ValidationError(name, "takes a duration such as 100ms or 20s, not \"" + text + "\"");
            }
            value = parsed;
          },
          help)
      ->default_str(absl::FormatDuration(value));
}

// A Kubernetes namespace name (a DNS-1123 label): 1 to 63 of a-z, 0-9 and '-', not starting or
// ending with '-'.
const CLI::Validator kNamespaceName(
    [](const std::string& s) -> std::string {
      const bool ok = !s.empty() && s.size() <= 63 && s.front() != '-' && s.back() != '-' &&
                      std::all_of(s.begin(), s.end(),
                                  [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
      return ok ? "" : "must be a namespace name (1 to 63 of a-z, 0-9 and '-'), not \"" + s.substr(0, 80) + "\"";
    },
    "NAMESPACE");

// "namespace/serviceaccount": a namespace name and a service account name (a DNS-1123
// subdomain), as a SPIFFE identity names them.
const CLI::Validator kServiceAccount(
    [](const std::string& s) -> std::string {
      const size_t slash = s.find('/');
      const std::string ns = slash == std::string::npos ? "" : s.substr(0, slash);
      const std::string account = slash == std::string::npos ? "" : s.substr(slash + 1);
      const bool ok =
          !ns.empty() && ns.size() <= 63 && ns.front() != '-' && ns.back() != '-' &&
          std::all_of(ns.begin(), ns.end(),
                      [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }) &&
          !account.empty() && account.size() <= 253 && account.front() != '-' && account.front() != '.' &&
          account.back() != '-' && account.back() != '.' && std::all_of(account.begin(), account.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
          });
      return ok ? "" : "must be NAMESPACE/SERVICE_ACCOUNT, not \"" + s.substr(0, 80) + "\"";
    },
    "NAMESPACE/SERVICE_ACCOUNT");

int Main(int argc, char** argv) {
  // Built on this thread before config loading, watchers and gRPC start threads of their own.
  if (absl::Status preload = cxds::PreloadXdsDescriptors(); !preload.ok()) {
    std::cerr << "cxds: " << preload << "\n";
    return 70;  // EX_SOFTWARE
  }
  CLI::App app{"cxds: an xDS control plane"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

  cxds::DemoOptions demo;
  CLI::App* demo_cmd = app.add_subcommand(
      "demo", "Teaching control plane: commands `port N`, `invalid`, `status`, `pushes`, `quit` on standard input");
  demo_cmd->add_option("--xds-address", demo.xds_address, "address of the xDS gRPC server")->capture_default_str();
  demo_cmd->add_option("--node-id", demo.node_id, "node id the configuration is published for")->capture_default_str();
  demo_cmd->add_option("--inventory-port", demo.inventory_port, "port of the inventory endpoint (version 1)")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  demo_cmd
      ->add_option("--push-throttle", demo.push_throttle, "proxies pushed at once (0: 15 + 5 per core, at most 100)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  demo_cmd
      ->add_option("--push-workers", demo.push_workers,
                   "threads that start pushes (0: the publishing thread and write completions start them)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  demo_cmd->add_option("--tls-cert", demo.security.files.cert_file, "xDS TLS certificate chain (PEM)");
  demo_cmd->add_option("--tls-key", demo.security.files.key_file, "its private key (PEM)");
  demo_cmd->add_option("--client-ca", demo.security.files.client_ca_file, "CA for client certificates (mTLS)");
  demo_cmd->add_option("--trust-domain", demo.security.trust_domain, "SPIFFE trust domain of clients")
      ->capture_default_str();
  demo_cmd->add_flag("--keep-unchanged-types", demo.keep_unchanged_types,
                     "a new version moves only the types that changed (port N: EDS alone), so SotW clients are "
                     "not resent the others");
  AddDurationOption(*demo_cmd, "--send-timeout", demo.send_timeout,
                    "a stream whose response write takes longer is closed (DEADLINE_EXCEEDED); 0s: never");

  cxds::ServeOptions serve;
  std::string settings_file;
  CLI::App* serve_cmd = app.add_subcommand("serve", "Serve a watched mesh config directory as xDS");
  std::map<std::string, CLI::Option*> serve_flags;
  const auto flag = [&](const std::string& name, auto& value, const std::string& help) {
    return serve_flags[name] = serve_cmd->add_option("--" + name, value, help)->capture_default_str();
  };
  const auto duration_flag = [&](const std::string& name, absl::Duration& value, const std::string& help) {
    return serve_flags[name] = AddDurationOption(*serve_cmd, "--" + name, value, help);
  };
  flag("config-dir", serve.source.config_dir, "mesh config directory");
  flag("config-source", serve.source.url,
       "dir://PATH or etcd://HOST:PORT/PREFIX (one document per key PREFIX/KIND/NAMESPACE/NAME); "
       "empty: dir://<config-dir>");
  flag("etcd-ca", serve.source.etcd_tls.ca, "etcd:// over TLS: the CA of etcd's certificate (PEM)");
  flag("etcd-cert", serve.source.etcd_tls.cert, "client certificate for etcd's --client-cert-auth (PEM)");
  flag("etcd-key", serve.source.etcd_tls.key, "its private key (PEM)");
  flag("xds-address", serve.xds_address, "xDS gRPC address");
  flag("admin-address", serve.admin_address, "admin HTTP address");
  duration_flag("debounce-after", serve.controller.debounce.debounce_after, "quiet period before a push");
  duration_flag("debounce-max", serve.controller.debounce.debounce_max, "longest a batch may grow");
  duration_flag("dns-refresh", serve.controller.dns_refresh,
                "resolve DNS ServiceEntries' names for proxyless gRPC nodes this often (0s: never, gRPC nodes get "
                "those clusters empty)");
  duration_flag("heap-release-interval", serve.heap_release.interval,
                "this often, if over 64 MiB of freed heap is kept, give it back to the system (0s: never)");
  flag("eds-debounce", serve.controller.debounce.eds_debounce, "debounce endpoint-only changes too");
  flag("push-throttle", serve.server.push_throttle, "proxies pushed at once (0: 15 + 5 per core, at most 100)")
      ->check(CLI::NonNegativeNumber);
  flag("push-workers", serve.server.push_workers,
       "threads that start pushes (0: the changing thread and write completions start them)")
      ->check(CLI::Range(0, 64));
  flag("max-new-streams-per-second", serve.server.max_new_streams_per_second,
       "admission rate of new streams (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  flag("domain-suffix", serve.controller.domain_suffix, "Kubernetes service domain suffix");
  flag("root-namespace", serve.controller.root_namespace,
       "Istio's meshConfig.rootNamespace: its DestinationRules and selector-less Sidecar are every namespace's "
       "defaults")
      ->check(kNamespaceName);
  flag("cluster-id", serve.controller.cluster_id,
       "istiod's CLUSTER_ID: the cluster of the config's workloads, their label topology.istio.io/cluster");
  flag("listener-address", serve.controller.translation.listener_address,
       "address Envoy sidecars' outbound listeners bind (listener names ADDRESS_PORT)");
  flag("gateway-address", serve.controller.translation.gateway_address,
       "address gateway proxies' listeners bind (0.0.0.0 for a gateway taking traffic from outside)");
  flag("secret-reader", serve.controller.translation.secret_readers,
       "NAMESPACE/SERVICE_ACCOUNT whose gateway proxies, proven by their client certificate (mTLS), are sent the "
       "Secrets their terminating (HTTPS, TLS) servers name (repeatable; none: no Secret is sent)")
      ->check(kServiceAccount);
  flag("max-config-file-bytes", serve.controller.max_config_file_bytes,
       "larger config files are refused whole (their last good objects keep serving)")
      ->check(CLI::Range(size_t{1024}, size_t{64} << 20));
  duration_flag("config-settle", serve.source.directory.settle,
                "quiet period after a change in the config directory before it is read");
  duration_flag("config-rename-settle", serve.source.directory.rename_settle,
                "the shorter quiet period after a file replaced whole (a temporary file renamed into place), for a "
                "tool's next rename (a shorter --config-settle takes its place; 0s: read after each rename, so several "
                "files replaced back to back are several reads)");
  duration_flag("send-timeout", serve.server.send_timeout,
                "a stream whose response write takes longer is closed (DEADLINE_EXCEEDED); 0s: never");
  flag("tls-cert", serve.security.files.cert_file, "xDS TLS certificate chain (PEM); none: plaintext");
  flag("tls-key", serve.security.files.key_file, "its private key (PEM)");
  flag("client-ca", serve.security.files.client_ca_file,
       "CA bundle (PEM) that client certificates must chain to: mTLS with SPIFFE identities");
  flag("trust-domain", serve.security.trust_domain, "SPIFFE trust domain client certificates must be in");
  duration_flag("tls-refresh", serve.security.files.refresh_interval,
                "how often the TLS files are re-read (rotation; at least 1s)");
  flag("admin-token-file", serve.admin_token_file,
       "file holding a bearer token the admin pages require (needed for a non-loopback --admin-address)");
  serve_cmd->add_option("--config", settings_file, "YAML file with the same settings (flags win)");

  std::string validate_dir;
  CLI::App* validate_cmd = app.add_subcommand("validate", "Check a mesh config directory; non-zero exit on errors");
  validate_cmd->add_option("dir", validate_dir, "config directory")->required();
  std::string validate_suffix = "cluster.local";
  validate_cmd->add_option("--domain-suffix", validate_suffix, "Kubernetes service domain suffix")
      ->capture_default_str();
  std::string validate_root = cxds::kRootNamespace;
  validate_cmd->add_option("--root-namespace", validate_root, "Istio's meshConfig.rootNamespace")
      ->capture_default_str()
      ->check(kNamespaceName);
  std::string validate_cluster = cxds::kDefaultClusterId;
  validate_cmd->add_option("--cluster-id", validate_cluster, "istiod's CLUSTER_ID, as for serve")
      ->capture_default_str();

  cxds::StoreOptions store;
  const auto store_flags = [&store](CLI::App* cmd) {
    cmd->add_option("--etcd", store.etcd_address, "etcd gRPC address")->capture_default_str();
    cmd->add_option("--etcd-ca", store.tls.ca, "CA of etcd's certificate (PEM): TLS to etcd");
    cmd->add_option("--etcd-cert", store.tls.cert, "client certificate for etcd (PEM)");
    cmd->add_option("--etcd-key", store.tls.key, "its private key (PEM)");
    cmd->add_option("--prefix", store.prefix, "key prefix of the mesh config")->capture_default_str();
  };
  std::vector<std::string> apply_paths;
  bool apply_dry_run = false;
  CLI::App* apply_cmd = app.add_subcommand(
      "apply", "Validate config files and write them to etcd in one transaction (nothing if any is invalid)");
  apply_cmd->add_option("-f,--filename", apply_paths, "config files or directories")->required();
  apply_cmd->add_flag("--dry-run", apply_dry_run, "validate and show what would change; write nothing");
  apply_cmd->add_option("--domain-suffix", store.domain_suffix, "Kubernetes service domain suffix")
      ->capture_default_str();
  apply_cmd->add_option("--root-namespace", store.root_namespace, "Istio's meshConfig.rootNamespace")
      ->capture_default_str()
      ->check(kNamespaceName);
  store_flags(apply_cmd);
  std::string delete_kind;
  std::string delete_name;
  CLI::App* delete_cmd = app.add_subcommand("delete", "Delete one object from etcd");
  delete_cmd->add_option("kind", delete_kind, "e.g. ServiceEntry")->required();
  delete_cmd->add_option("name", delete_name, "NAMESPACE/NAME")->required();
  store_flags(delete_cmd);
  std::string get_kind;
  bool get_values = false;
  CLI::App* get_cmd = app.add_subcommand("get", "List the objects etcd holds under the prefix");
  get_cmd->add_option("kind", get_kind, "only this kind");
  get_cmd->add_flag("--values", get_values, "print the documents too");
  store_flags(get_cmd);

  cxds::ProxyStatusOptions proxy_status;
  CLI::App* proxy_status_cmd = app.add_subcommand(
      "proxy-status", "Each proxy's CDS/LDS/EDS/RDS: SYNCED, NOT SENT, STALE or NACK, from the replicas' admin");
  proxy_status_cmd->add_option("proxy", proxy_status.proxy,
                               "only this node id, with what it was sent against what it would be sent now");
  // One address per --admin (repeat it per replica), so that a PROXY after it stays positional.
  proxy_status_cmd->add_option("--admin", proxy_status.admins, "admin address of a replica (repeat per replica)")
      ->allow_extra_args(false)
      ->capture_default_str();
  proxy_status_cmd->add_option("-o,--output", proxy_status.output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  proxy_status_cmd->add_option("--colour", proxy_status.colour, "auto (only on a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  proxy_status_cmd->add_option("--admin-token-file", proxy_status.token_file, "bearer token for the admin pages");

  cxds::ProxyConfigOptions proxy_config;
  CLI::App* proxy_config_cmd =
      app.add_subcommand("proxy-config", "What cxds last sent a proxy (from the ledger): short tables, json or yaml");
  proxy_config_cmd->add_option("kind", proxy_config.kind, "clusters, listeners, routes, endpoints or all")
      ->check(CLI::IsMember({"clusters", "listeners", "routes", "endpoints", "all"}))
      ->required();
  proxy_config_cmd->add_option("proxy", proxy_config.proxy, "node id")->required();
  proxy_config_cmd->add_option("--admin", proxy_config.admin, "admin address of the replica it is connected to")
      ->capture_default_str();
  proxy_config_cmd->add_option("-o,--output", proxy_config.output, "short, json or yaml")
      ->check(CLI::IsMember({"short", "json", "yaml"}))
      ->capture_default_str();
  proxy_config_cmd->add_option("--admin-token-file", proxy_config.token_file, "bearer token for the admin pages");

  CLI11_PARSE(app, argc, argv);
  // Debian's abseil runs absl::Mutex deadlock detection by default; gRPC's locks pay for it on
  // every acquisition (about 11% of the server's CPU under 5,000 streams, docs/load.md).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  cxds::Log().set_level(spdlog::level::from_str(log_level));
  if (demo_cmd->parsed()) {
    return cxds::RunDemo(demo, std::cin, std::cout);
  }
  if (serve_cmd->parsed()) {
    if (!settings_file.empty()) {
      // Settings from the file apply where no flag was given.
      if (const std::string problem = cxds::ApplySettingsFile(settings_file, serve_flags); !problem.empty()) {
        std::cerr << problem << "\n";
        return 2;
      }
    }
    // A directory written continuously is still read at least this often.
    serve.source.directory.max_settle = std::max(absl::Seconds(1), serve.source.directory.settle * 10);
    serve.source.directory.limits.max_file_bytes = serve.controller.max_config_file_bytes;
    return cxds::RunServe(serve);
  }
  if (proxy_config_cmd->parsed()) return cxds::RunProxyConfig(proxy_config, std::cout, std::cerr);
  if (proxy_status_cmd->parsed()) return cxds::RunProxyStatus(proxy_status, std::cout, std::cerr);
  if (apply_cmd->parsed()) return cxds::RunApply(store, apply_paths, apply_dry_run, std::cout, std::cerr);
  if (delete_cmd->parsed()) return cxds::RunDelete(store, delete_kind, delete_name, std::cout, std::cerr);
  if (get_cmd->parsed()) return cxds::RunGet(store, get_kind, get_values, std::cout, std::cerr);
  if (validate_cmd->parsed()) {
    return cxds::RunValidate(validate_dir, validate_suffix, validate_root, validate_cluster, std::cout, std::cerr);
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Library code returns absl::Status and never throws on purpose; this is the last guard, so
  // that a bug ends with the reason and a non-zero exit instead of std::terminate.
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "cxds: unexpected error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "cxds: unexpected error\n";
  }
  return 70;  // EX_SOFTWARE
}
