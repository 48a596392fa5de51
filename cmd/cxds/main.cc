// cxds: an xDS control plane. Subcommands:
//   demo      the teaching control plane (see README.md), driven from standard input.
//   serve     watches a mesh config directory and serves it as xDS (the daemon).
//   validate  checks a mesh config directory offline.
#include <iostream>
#include <map>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "yaml-cpp/yaml.h"
#include "common/logging.h"
#include "cxds/commands.h"

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"cxds: an xDS control plane"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

  cxds::DemoOptions demo;
  CLI::App* demo_cmd = app.add_subcommand(
      "demo", "Teaching control plane: commands `port N`, `invalid`, `status`, `pushes`, `quit` on standard input");
  demo_cmd->add_option("--xds-address", demo.xds_address, "address of the xDS gRPC server")->capture_default_str();
  demo_cmd->add_option("--node-id", demo.node_id, "node id the configuration is published for")
      ->capture_default_str();
  demo_cmd->add_option("--inventory-port", demo.inventory_port, "port of the inventory endpoint (version 1)")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  demo_cmd->add_option("--push-throttle", demo.push_throttle,
                       "proxies pushed at once (0: 15 + 5 per core, at most 100)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  demo_cmd->add_option("--push-workers", demo.push_workers,
                       "threads that start pushes (0: the publishing thread and write completions start them)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  std::string demo_send_timeout = "20s";
  demo_cmd->add_option("--send-timeout", demo_send_timeout,
                       "a stream whose response write takes longer is closed (DEADLINE_EXCEEDED); 0s: never")
      ->capture_default_str();

  cxds::ServeOptions serve;
  std::string debounce_after = "100ms", debounce_max = "10s", config_settle = "100ms", send_timeout = "20s",
              settings_file;
  CLI::App* serve_cmd = app.add_subcommand("serve", "Serve a watched mesh config directory as xDS");
  std::map<std::string, CLI::Option*> serve_flags;
  serve_flags["config-dir"] = serve_cmd->add_option("--config-dir", serve.config_dir, "mesh config directory")
                                  ->capture_default_str();
  serve_flags["xds-address"] =
      serve_cmd->add_option("--xds-address", serve.xds_address, "xDS gRPC address")->capture_default_str();
  serve_flags["admin-address"] =
      serve_cmd->add_option("--admin-address", serve.admin_address, "admin HTTP address")->capture_default_str();
  serve_flags["debounce-after"] =
      serve_cmd->add_option("--debounce-after", debounce_after, "quiet period before a push")->capture_default_str();
  serve_flags["debounce-max"] =
      serve_cmd->add_option("--debounce-max", debounce_max, "longest a batch may grow")->capture_default_str();
  serve_flags["eds-debounce"] = serve_cmd->add_option("--eds-debounce", serve.eds_debounce,
                                                      "debounce endpoint-only changes too")
                                    ->capture_default_str();
  serve_flags["push-throttle"] = serve_cmd->add_option("--push-throttle", serve.push_throttle,
                                                       "proxies pushed at once (0: 15 + 5 per core, at most 100)")
                                     ->capture_default_str();
  serve_flags["max-new-streams-per-second"] =
      serve_cmd->add_option("--max-new-streams-per-second", serve.max_new_streams_per_second,
                            "admission rate of new streams (0: no limit)")
          ->capture_default_str();
  serve_flags["domain-suffix"] =
      serve_cmd->add_option("--domain-suffix", serve.domain_suffix, "Kubernetes service domain suffix")
          ->capture_default_str();
  serve_flags["max-config-file-bytes"] =
      serve_cmd->add_option("--max-config-file-bytes", serve.max_config_file_bytes,
                            "larger config files are refused whole (their last good objects keep serving)")
          ->check(CLI::Range(size_t{1024}, size_t{64} << 20))
          ->capture_default_str();
  serve_flags["config-settle"] =
      serve_cmd->add_option("--config-settle", config_settle,
                            "quiet period after a change in the config directory before it is read")
          ->capture_default_str();
  serve_flags["send-timeout"] =
      serve_cmd->add_option("--send-timeout", send_timeout,
                            "a stream whose response write takes longer is closed (DEADLINE_EXCEEDED); 0s: never")
          ->capture_default_str();
  serve_cmd->add_option("--config", settings_file, "YAML file with the same settings (flags win)");

  std::string validate_dir;
  CLI::App* validate_cmd = app.add_subcommand("validate", "Check a mesh config directory; non-zero exit on errors");
  validate_cmd->add_option("dir", validate_dir, "config directory")->required();
  std::string validate_suffix = "cluster.local";
  validate_cmd->add_option("--domain-suffix", validate_suffix, "Kubernetes service domain suffix")
      ->capture_default_str();

  CLI11_PARSE(app, argc, argv);
  // Debian's abseil runs absl::Mutex deadlock detection by default; gRPC's locks pay for it on
  // every acquisition (about 11% of the server's CPU under 5,000 streams, docs/load.md).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  cxds::Log().set_level(spdlog::level::from_str(log_level));
  if (demo_cmd->parsed()) {
    if (!absl::ParseDuration(demo_send_timeout, &demo.send_timeout) || demo.send_timeout < absl::ZeroDuration()) {
      std::cerr << "--send-timeout takes a duration such as 20s\n";
      return 2;
    }
    return cxds::RunDemo(demo, std::cin, std::cout);
  }
  if (serve_cmd->parsed()) {
    if (!settings_file.empty()) {
      // Settings from the file apply where no flag was given.
      try {
        const YAML::Node settings = YAML::LoadFile(settings_file);
        for (const auto& entry : settings) {
          const std::string key = entry.first.Scalar();
          auto flag = serve_flags.find(key);
          if (flag == serve_flags.end()) {
            std::cerr << settings_file << ":" << entry.first.Mark().line + 1 << ": unknown setting \"" << key
                      << "\"\n";
            return 2;
          }
          if (flag->second->count() == 0) {
            flag->second->add_result(entry.second.Scalar());
            flag->second->run_callback();  // stores the value, with the flag's own checks
          }
        }
      } catch (const YAML::Exception& e) {
        std::cerr << settings_file << ":" << e.mark.line + 1 << ": " << e.msg << "\n";
        return 2;
      } catch (const CLI::ParseError& e) {
        return app.exit(e);
      }
    }
    if (!absl::ParseDuration(debounce_after, &serve.debounce_after) ||
        !absl::ParseDuration(debounce_max, &serve.debounce_max) ||
        !absl::ParseDuration(config_settle, &serve.config_settle) || serve.config_settle < absl::ZeroDuration()) {
      std::cerr << "--debounce-after, --debounce-max and --config-settle take durations such as 100ms or 10s\n";
      return 2;
    }
    if (!absl::ParseDuration(send_timeout, &serve.send_timeout) || serve.send_timeout < absl::ZeroDuration()) {
      std::cerr << "--send-timeout takes a duration such as 20s\n";
      return 2;
    }
    return cxds::RunServe(serve);
  }
  if (validate_cmd->parsed()) {
    return cxds::RunValidate(validate_dir, validate_suffix, std::cout, std::cerr);
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
