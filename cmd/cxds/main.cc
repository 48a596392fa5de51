// cxds: an xDS control plane. Subcommands:
//   demo      the teaching control plane (seed 003), driven from standard input.
//   validate  checks a mesh config directory offline.
#include <iostream>

#include "CLI/CLI.hpp"
#include "common/logging.h"
#include "cxds/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"cxds: an xDS control plane"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

  cxds::DemoOptions demo;
  CLI::App* demo_cmd = app.add_subcommand(
      "demo", "Teaching control plane: commands `port N`, `invalid`, `status`, `quit` on standard input");
  demo_cmd->add_option("--xds-address", demo.xds_address, "address of the xDS gRPC server")->capture_default_str();
  demo_cmd->add_option("--node-id", demo.node_id, "node id the configuration is published for")
      ->capture_default_str();
  demo_cmd->add_option("--inventory-port", demo.inventory_port, "port of the inventory endpoint (version 1)")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();

  std::string validate_dir;
  CLI::App* validate_cmd = app.add_subcommand("validate", "Check a mesh config directory; non-zero exit on errors");
  validate_cmd->add_option("dir", validate_dir, "config directory")->required();

  CLI11_PARSE(app, argc, argv);
  cxds::Log().set_level(spdlog::level::from_str(log_level));
  if (demo_cmd->parsed()) {
    return cxds::RunDemo(demo, std::cin, std::cout);
  }
  if (validate_cmd->parsed()) {
    return cxds::RunValidate(validate_dir, std::cout, std::cerr);
  }
  return 2;
}
