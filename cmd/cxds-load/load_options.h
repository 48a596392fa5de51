// Options of cxds-load, shared by its parts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace cxds::load {

enum class Protocol { kSotw, kDelta };
// How a simulated proxy names itself and what it subscribes to (see ProxyModel).
enum class NodeStyle { kEnvoy, kGrpc };
// kXds: follow references and ACK like a proxy. kRaw: count receipts only (cxds-fanout).
enum class Expect { kXds, kRaw };
// Who makes the changes whose convergence is measured (see ChangeDriver).
enum class Drive { kNone, kTeaching, kFanout, kFiles, kEtcd };

struct LoadOptions {
  std::string xds_address = "127.0.0.1:18000";
  int streams = 10;
  int connections = 0;  // 0: one channel per stream
  Protocol protocol = Protocol::kSotw;
  NodeStyle node_style = NodeStyle::kEnvoy;
  std::vector<std::string> listeners = {"quote"};  // gRPC style: LDS names
  // Every stream uses this node id when set (cxds demo serves a single node id).
  std::string node_id;
  Expect expect = Expect::kXds;
  bool raw_ack = false;  // raw mode: ACK each receipt (StreamConfig::raw_ack)
  Drive drive = Drive::kNone;
  std::string teaching_binary;
  std::string fanout_binary;
  int message_bytes = 1200;                       // cxds-fanout's push message size
  std::string cxds_binary;                        // --drive files: the cxds binary to run `serve` with
  std::string config_dir;                         // --drive files: the directory cxds serve watches
  std::string admin_address = "127.0.0.1:15014";  // --drive files: cxds serve's admin HTTP
  // --drive etcd: the etcd (gRPC address) the drive writes its documents to, under this prefix,
  // and how many `cxds serve --config-source etcd://...` replicas it starts. Replica i serves
  // xDS on the port of xds_address + i and its admin on the port of admin_address + i.
  std::string etcd_address;
  std::string etcd_prefix = "/cxds-load";
  int replicas = 1;
  // --drive etcd, Delta, replicas >= 2: after the changes, SIGKILL replica 0 and move its
  // proxies to the survivors (with the resource versions they hold); count what they are sent.
  bool failover = false;
  // --drive files: after the changes, restart the server and let every stream reconnect
  // (Delta: with the resource versions it holds), then count what the new server sends.
  bool restart = false;
  // --restart and --failover: count what arrives for this long after all reconnected.
  absl::Duration restart_settle = absl::Seconds(3);
  uint32_t inventory_port = 18080;       // cxds demo's version-1 endpoint port
  std::string server_log = "/dev/null";  // stderr of a server the tool starts
  std::string server_log_level = "warn";
  // Extra arguments for the cxds subcommand a drive starts (e.g. `--push-throttle 1000`).
  std::vector<std::string> server_args;
  // TLS to the xDS server (all PEM files): trust `tls_ca`; present `tls_cert`/`tls_key` if
  // given (mTLS). Empty `tls_ca`: plaintext.
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  int server_pid = 0;   // an external server whose RSS and CPU to read; 0: none
  int server_cpu = -1;  // pin a server the tool starts to this core; -1: no pinning
  int client_cpu = -1;  // pin this process to this core; -1: no pinning
  int changes = 0;
  absl::Duration change_interval = absl::Seconds(1);  // at least this long between changes
  absl::Duration change_timeout = absl::Seconds(30);  // give up on one change after this
  absl::Duration duration = absl::Seconds(60);        // hard cap on the whole run
  // Keep the streams open this long after the changes (e.g. for pushes an external
  // cxds-fanout makes with --push-after), within --duration.
  absl::Duration hold = absl::ZeroDuration();
  double connect_rate = 0;  // new streams per second; 0: all at once
  std::string json_path;
  bool progress = true;
  // Read the server's RSS once every N-th change converged (0: never).
  int rss_every_changes = 0;

  // Soak (--soak D > 0, --drive files; see soak.h): for D, a change every --change-interval
  // and random disconnects and reconnects, then checks that nothing was lost or starved.
  absl::Duration soak = absl::ZeroDuration();
  double churn = 0;                                   // disconnects per stream per second
  absl::Duration reconnect_delay = absl::Seconds(1);  // a disconnected stream returns within this
  bool mixed_protocols = false;                       // each (re)connection picks SotW or Delta
  uint64_t seed = 1;                                  // of every random choice of the soak
  absl::Duration rss_interval = absl::Seconds(5);     // server RSS sampling
  std::string rss_csv;                                // the samples, as CSV
  absl::Duration starve_after = absl::Seconds(10);    // longest wait for a newer change
  absl::Duration warmup = absl::InfiniteDuration();   // default: a fifth of --soak
  double rss_growth_limit = 0.10;                     // RSS at the end over RSS after warm-up; < 0: not checked
};

// The service `--drive files` adds to the config directory (`--drive etcd`: to etcd) and
// changes; gRPC-style streams subscribe to its listener.
inline constexpr char kFilesTargetHost[] = "load-target.load.local";
inline constexpr uint32_t kFilesTargetPort = 8080;
inline constexpr char kFilesTargetListener[] = "load-target.load.local:8080";

// The endpoint port that identifies change k (k >= 1) of the teaching and files drives.
inline uint32_t ChangePort(int k) { return 20000 + static_cast<uint32_t>(k); }

}  // namespace cxds::load
