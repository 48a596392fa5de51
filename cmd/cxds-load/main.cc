// cxds-load: simulates N proxies over real gRPC against an xDS server (loopback only), makes
// changes through a driver and measures how long each takes to reach every proxy. Every run
// is bounded by its stream count and --duration and stops by itself. See docs/load.md.
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "child_process.h"
#include "common/logging.h"
#include "common/strings.h"
#include "driver.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "fmt/format.h"
#include "google/protobuf/struct.pb.h"
#include "grpcpp/grpcpp.h"
#include "load_options.h"
#include "protocol/descriptors.h"
#include "proxy_stream.h"
#include "report.h"
#include "run_support.h"
#include "soak.h"

namespace cxds::load {

// Sockets: one per channel here (two for a while when a server restart makes every channel
// reconnect), and one per stream in a server started as our child, which inherits the limit.
// Raise the soft limit as far as the hard one allows, and the hard one too where permitted
// (root), since a failed socket() shows up as a confusing error far from here.
void RaiseFileLimit(int needed) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_max < static_cast<rlim_t>(needed)) {
    rlimit raised = limit;
    raised.rlim_max = raised.rlim_cur = static_cast<rlim_t>(needed);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) getrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  if (static_cast<rlim_t>(needed) > limit.rlim_cur) {
    Log().warn("LIMIT open files {} < about {} needed; raise the hard limit (ulimit -Hn)", limit.rlim_cur, needed);
  }
}

void PinTo(int cpu) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(cpu, &cpus);
  if (sched_setaffinity(0, sizeof(cpus), &cpus) != 0) Log().warn("PIN cpu={} failed", cpu);
}

envoy::config::core::v3::Node MakeNode(const LoadOptions& options, const std::string& shared_id, int index) {
  envoy::config::core::v3::Node node;
  const std::string name = StrCat("load-", index);
  if (options.node_style == NodeStyle::kEnvoy) {
    node.set_id(StrCat("sidecar~127.0.0.1~", name, ".default~default.svc.cluster.local"));
    node.set_cluster(StrCat(name, ".default"));
    node.set_user_agent_name("envoy");
    node.add_client_features("envoy.lb.does_not_support_overprovisioning");
  } else {
    node.set_id(name);
    node.set_user_agent_name("gRPC C++");
    node.add_client_features("envoy.lb.does_not_support_overprovisioning");
    node.add_client_features("xds.config.resource-in-sotw");
    // As Istio's gRPC bootstrap says it: cxds serve builds gRPC's API listeners for such a
    // node only (cxds demo does not look).
    (*node.mutable_metadata()->mutable_fields())["GENERATOR"].set_string_value("grpc");
  }
  if (!shared_id.empty()) {
    // The control plane serves one node id; the stream's own name stays in the metadata.
    node.set_id(shared_id);
  }
  (*node.mutable_metadata()->mutable_fields())["LOAD_STREAM"].set_string_value(name);
  return node;
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, int index,
                                           const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  // Distinct arguments and a private subchannel pool: each channel gets its own connection,
  // as separate proxies would.
  args.SetInt("grpc.channel_id", index);
  args.SetInt("grpc.use_local_subchannel_pool", 1);
  args.SetMaxReceiveMessageSize(-1);
  // An IP literal needs no resolver: "ipv4:" skips the DNS resolver's work per channel.
  const std::string target = address.rfind("127.0.0.1:", 0) == 0 ? StrCat("ipv4:", address) : address;
  return grpc::CreateCustomChannel(target, credentials != nullptr ? credentials : grpc::InsecureChannelCredentials(),
                                   args);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(const LoadOptions& options) {
  if (options.tls_ca.empty()) return std::shared_ptr<grpc::ChannelCredentials>();
  const auto read = [](const std::string& path, std::string& out) {
    if (path.empty()) return true;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    out = bytes.str();
    return in.good() || in.eof() ? !out.empty() : false;
  };
  grpc::SslCredentialsOptions ssl;
  for (const auto& [path, out] :
       {std::pair{options.tls_ca, &ssl.pem_root_certs}, std::pair{options.tls_cert, &ssl.pem_cert_chain},
        std::pair{options.tls_key, &ssl.pem_private_key}}) {
    if (!read(path, *out)) return absl::NotFoundError(StrCat(path, ": cannot read"));
  }
  return grpc::SslCredentials(ssl);
}

namespace {
using envoy::service::discovery::v3::AggregatedDiscoveryService;

constexpr absl::Duration kPoll = absl::Milliseconds(20);
constexpr absl::Duration kStopGrace = absl::Seconds(10);

double Ms(int64_t nanos) { return static_cast<double>(nanos) / 1e6; }

std::optional<double> LoadAverage() {
  std::ifstream file("/proc/loadavg");
  double one_minute = 0;
  if (file >> one_minute) return one_minute;
  return std::nullopt;
}

// An integer field of a flat JSON object such as `"proxies_written":20`, if present.
std::optional<int64_t> JsonIntField(const std::string& object, absl::string_view key) {
  const std::string needle = StrCat("\"", key, "\":");
  const size_t at = object.find(needle);
  if (at == std::string::npos) return std::nullopt;
  size_t end = at + needle.size();
  while (end < object.size() && (std::isdigit(static_cast<unsigned char>(object[end])) || object[end] == '-')) ++end;
  int64_t value = 0;
  if (!absl::SimpleAtoi(object.substr(at + needle.size(), end - at - needle.size()), &value)) return std::nullopt;
  return value;
}

// What a set of streams received, over every type.
struct Received {
  uint64_t responses = 0;
  uint64_t resources = 0;
  uint64_t bytes = 0;
  uint64_t resource_bytes = 0;
};
Received TotalReceived(const RunStats& stats) {
  Received total;
  for (const TypeCounters& counters : stats.types) {
    total.responses += counters.responses;
    total.resources += counters.resources;
    total.bytes += counters.bytes;
    total.resource_bytes += counters.resource_bytes;
  }
  total.responses += stats.other.responses;
  return total;
}

// What reconnected streams received (a restart's or a failover's report), from their stats.
template <typename Report>
void TakeReceived(const RunStats& stats, Report& report) {
  const Received received = TotalReceived(stats);
  report.responses = received.responses;
  report.resources = received.resources;
  report.bytes = received.bytes;
  report.resource_bytes = received.resource_bytes;
  report.failed = stats.failed;
  report.errors = stats.errors;
}

// True when every change summary accounts for all its proxies: written to, and ACKed or NACKed.
// Summaries without these fields (the raw baseline's) are settled as they are.
bool ServerReportsSettled(const std::vector<std::string>& reports) {
  for (const std::string& report : reports) {
    const std::optional<int64_t> proxies = JsonIntField(report, "proxies");
    const std::optional<int64_t> written = JsonIntField(report, "proxies_written");
    const std::optional<int64_t> acked = JsonIntField(report, "proxies_acked");
    const std::optional<int64_t> nacked = JsonIntField(report, "proxies_nacked");
    if (!proxies || !written || !acked || !nacked) continue;
    if (*written < *proxies || *acked + *nacked < *proxies) return false;
  }
  return true;
}

class LoadRun {
 public:
  explicit LoadRun(const LoadOptions& options)
      : options_(options),
        stats_(options.changes),
        mark_ns_(options.changes + 1, 0),
        mark_unix_ms_(options.changes + 1, 0) {}

  int Run() {
    run_start_ns_ = NowNanos();
    run_start_unix_ms_ = absl::ToUnixMillis(absl::Now());
    loadavg_start_ = LoadAverage();
    deadline_ns_ = run_start_ns_ + absl::ToInt64Nanoseconds(options_.duration);
    const int channels = options_.connections > 0 ? std::min(options_.connections, options_.streams) : options_.streams;
    RaiseFileLimit(2 * std::max(channels, options_.streams) + 256);

    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = ChannelCredentials(options_);
    if (!credentials.ok()) {
      std::cerr << "cxds-load: " << credentials.status().message() << std::endl;
      return 2;
    }
    credentials_ = *std::move(credentials);
    absl::StatusOr<std::unique_ptr<ChangeDriver>> driver = MakeDriver(options_);
    if (!driver.ok()) {
      std::cerr << "cxds-load: " << driver.status().message() << std::endl;
      return 2;
    }
    driver_ = *std::move(driver);
    if (options_.changes > 0 && options_.drive == Drive::kNone) {
      std::cerr << "cxds-load: --changes needs a --drive that makes changes (teaching, fanout, files or etcd)"
                << std::endl;
      return 2;
    }
    if (absl::Status status = driver_->Start(); !status.ok()) {
      std::cerr << "cxds-load: " << status.message() << std::endl;
      driver_->Stop();
      return 2;
    }
    if (options_.client_cpu >= 0) PinTo(options_.client_cpu);
    for (int k = 1; k <= options_.changes; ++k) driver_->AddMarker(k, &markers_);
    addresses_ = driver_->StreamAddresses();
    if (addresses_.empty()) addresses_ = {options_.xds_address};
    server_.pid = driver_->server_pid();
    server_.replica_pids = driver_->server_pids();
    ReadServer(&server_.rss_kb_before, &server_.cpu_s_before);

    StartStreams(channels);
    WaitConnected();
    ReadServer(&server_.rss_kb_connected, &server_.cpu_s_connected);
    ReadReplicas(&server_.replica_rss_kb_connected);
    const std::optional<uint64_t> serializations_before = driver_->ServerSerializations();
    stats_.record_versions = true;
    MakeChanges();
    Hold();
    stats_.record_versions = false;
    // Only Delta streams note resource versions (SotW responses carry one version per type).
    if (const std::optional<uint64_t> after = driver_->ServerSerializations();
        options_.protocol == Protocol::kDelta && after.has_value() && serializations_before.has_value()) {
      MutexLock lock(&stats_.versions_mu);
      serializations_ = SerializationReport{*after - *serializations_before, stats_.versions_seen.size()};
    }
    ReadServer(&server_.rss_kb_end, &server_.cpu_s_end);
    ReadReplicas(&server_.replica_rss_kb_end);
    // The server's own account of each change (send times), where it gives one.
    if (changes_made_ > 0) server_reports_ = SettledServerReports();
    replica_sources_ = driver_->ReplicaSources();
    if (options_.restart) RestartAndReconnect(channels);
    if (options_.failover && PastDeadline()) {
      problems_.push_back("failover: --duration ended the run before it");
    } else if (options_.failover) {
      FailOver(channels);
    }
    const bool all_done = StopStreams();
    driver_->Stop();

    RunReport report = BuildReport(channels);
    std::cout << RenderTable(report) << std::flush;
    if (!options_.json_path.empty()) {
      std::ofstream json(options_.json_path);
      json << RenderJson(report);
      if (!json) std::cerr << "cxds-load: cannot write " << options_.json_path << std::endl;
    }
    const int code = report.ok ? 0 : 1;
    if (!all_done) {
      // gRPC still owns some streams: destroying them would be unsafe, so leave at once.
      std::cerr << "cxds-load: streams did not finish within " << absl::FormatDuration(kStopGrace) << std::endl;
      std::_Exit(code);
    }
    return code;
  }

 private:
  bool PastDeadline() const { return NowNanos() >= deadline_ns_; }

  void ReadServer(std::optional<int64_t>* rss, std::optional<double>* cpu) const {
    if (server_.pid <= 0) return;
    *rss = ReadRssKb(server_.pid);
    *cpu = ReadCpuSeconds(server_.pid);
  }

  // The RSS of every server process (replica), in replica order.
  void ReadReplicas(std::vector<std::optional<int64_t>>* rss) const {
    rss->clear();
    for (int pid : server_.replica_pids) rss->push_back(pid > 0 ? ReadRssKb(pid) : std::nullopt);
  }

  void MaybeProgress(const std::string& phase) {
    if (!options_.progress) return;
    const int64_t now = NowNanos();
    if (now - last_progress_ns_ < 1'000'000'000) return;
    if (last_progress_ns_ == 0) {
      last_progress_ns_ = now;  // the first line after one second: short runs stay quiet
      return;
    }
    last_progress_ns_ = now;
    uint64_t responses = stats_.other.responses;
    for (const TypeCounters& counters : stats_.types) responses += counters.responses;
    std::cerr << fmt::format("[{:7.1f}s] {:<12} started={} responded={} complete={} failed={} responses={} errors={}",
                             Ms(now - run_start_ns_) / 1000, phase, stats_.started.load(), stats_.responded.load(),
                             stats_.complete.load(), stats_.failed.load(), responses, stats_.errors.load());
    if (changes_made_ > 0) {
      std::cerr << fmt::format(" change={}/{} converged={}", changes_made_, options_.changes,
                               stats_.converged[changes_made_].load());
    }
    std::cerr << std::endl;
  }

  StreamConfig StreamConfigFor(int i, RunStats* stats) const {
    const std::string shared_id = driver_->SharedNodeId().empty() ? options_.node_id : driver_->SharedNodeId();
    return StreamConfig{.index = i,
                        .protocol = options_.protocol,
                        .style = options_.node_style,
                        .expect = options_.expect,
                        .raw_ack = options_.raw_ack,
                        .node = MakeNode(options_, shared_id, i),
                        .listeners = options_.listeners,
                        .changes = options_.changes,
                        .markers = &markers_,
                        .stats = stats};
  }

  // Restarts the server with every stream connected and lets each proxy reconnect as itself
  // (Delta: with the versions it holds); counts what the new server sends in the next
  // --restart-settle after the server reports them all connected again.
  void RestartAndReconnect(int channels) {
    ReconnectReport& report = reconnect_.emplace();
    report.streams = static_cast<int>(streams_.size());
    report.settle_ms = absl::ToDoubleMilliseconds(options_.restart_settle);
    for (auto& stream : streams_) stream->ExpectEnd();
    const int64_t restart_start = NowNanos();
    if (absl::Status status = driver_->Restart(); !status.ok()) {
      problems_.push_back(StrCat("restart: ", status.message()));
      return;
    }
    report.restart_ms = Ms(NowNanos() - restart_start);
    const int64_t give_up = std::min(deadline_ns_, NowNanos() + absl::ToInt64Nanoseconds(absl::Seconds(60)));
    while (stats_.done < report.streams && NowNanos() < give_up) {
      MaybeProgress("restarting");
      absl::SleepFor(kPoll);
    }
    if (stats_.done < report.streams) {
      problems_.push_back(StrCat("restart: ", report.streams - stats_.done, " old streams did not end"));
      return;
    }
    reconnect_stats_ = std::make_unique<RunStats>(options_.changes);
    const int64_t reconnect_start = NowNanos();
    for (int i = 0; i < report.streams; ++i) {
      std::unique_ptr<ProxyStream> next = streams_[i]->Resume(StreamConfigFor(i, reconnect_stats_.get()));
      if (next == nullptr) {
        problems_.push_back("--restart needs --protocol delta (a SotW proxy has no resource versions to offer)");
        return;
      }
      resumed_.push_back(std::move(next));
      resumed_.back()->Start(stubs_[i % channels].get());
    }
    while (NowNanos() < give_up) {
      std::optional<int> connected = driver_->ServerStreams();
      report.reconnected = connected;
      if (connected.has_value() && *connected >= report.streams) {
        report.reconnect_ms = Ms(NowNanos() - reconnect_start);
        break;
      }
      MaybeProgress("reconnecting");
      absl::SleepFor(absl::Milliseconds(100));
    }
    if (!report.reconnect_ms.has_value()) {
      problems_.push_back(StrCat("restart: the server saw ", report.reconnected.value_or(0), " of ", report.streams,
                                 " streams reconnect"));
    }
    const int64_t settle_until = std::min(deadline_ns_, NowNanos() + absl::ToInt64Nanoseconds(options_.restart_settle));
    while (NowNanos() < settle_until) absl::SleepFor(kPoll);
    TakeReceived(*reconnect_stats_, report);
    if (report.failed > 0) problems_.push_back(StrCat("restart: ", report.failed, " reconnected streams failed"));
  }

  // --failover: SIGKILLs replica 0 with every stream connected (a crash: no goodbye) and moves
  // its proxies to the survivors, round robin, each reconnecting as itself with the versions it
  // holds (Delta). A survivor serves the same config (same content versions), so it owes them
  // nothing: no response is due, and re-attachment shows only on the survivors, which count a
  // stream once they know its node (its first request, with the subscriptions after it). Then
  // counts what the moved streams are sent in the next --restart-settle.
  void FailOver(int channels) {
    const int replicas = static_cast<int>(addresses_.size());
    const int started = static_cast<int>(streams_.size());
    FailoverReport& report = failover_.emplace();
    report.replica = 0;
    report.survivors = replicas - 1;
    report.settle_ms = absl::ToDoubleMilliseconds(options_.restart_settle);
    // Stream j is on replica j % replicas (StartStreams). What each survivor will count: its
    // own streams still open, and those moved to it.
    std::vector<int> moved;
    std::vector<int> own(replicas, 0);
    for (int j = 0; j < started; ++j) {
      if (j % replicas == 0) {
        moved.push_back(j);
      } else if (!streams_[j]->Result().finished) {
        own[j % replicas]++;
      }
    }
    report.streams = static_cast<int>(moved.size());
    if (moved.empty()) return;
    // Each channel of the killed replica (c = j % channels, c % replicas == 0) is replaced by
    // a new one, c / replicas, to the survivors in turn, and its streams move with it: with one
    // channel per stream, the moved streams go round robin. The channels exist before the
    // kill, so the measurement is not of making channels.
    const auto new_channel = [&](int j) { return (j % channels) / replicas; };
    const auto survivor_of = [&](int g) { return 1 + g % (replicas - 1); };
    int moved_channels = 0;
    for (int j : moved) moved_channels = std::max(moved_channels, new_channel(j) + 1);
    for (int g = 0; g < moved_channels; ++g) {
      failover_stubs_.push_back(AggregatedDiscoveryService::NewStub(
          MakeChannel(addresses_[survivor_of(g)], options_.streams + g, credentials_)));
    }
    std::vector<int> expected = own;
    for (int j : moved) expected[survivor_of(new_channel(j))]++;

    for (int j : moved) streams_[j]->ExpectEnd();
    const uint64_t others_before = TotalReceived(stats_).responses;
    const int64_t kill_ns = NowNanos();
    if (absl::Status status = driver_->KillReplica(0); !status.ok()) {
      problems_.push_back(StrCat("failover: ", status.message()));
      return;
    }
    // Every call of the dead replica ends (its connections are reset); only then may a stream
    // be resumed, since Resume copies state gRPC no longer touches.
    const int64_t give_up = std::min(deadline_ns_, NowNanos() + absl::ToInt64Nanoseconds(absl::Seconds(60)));
    std::vector<int> pending = moved;
    while (NowNanos() < give_up) {
      std::erase_if(pending, [this](int j) { return streams_[j]->Result().finished; });
      if (pending.empty()) break;
      MaybeProgress("detaching");
      absl::SleepFor(kPoll);
    }
    if (!pending.empty()) {
      problems_.push_back(StrCat("failover: ", pending.size(), " streams of replica 0 did not end"));
      return;
    }
    report.detach_ms = Ms(NowNanos() - kill_ns);

    reconnect_stats_ = std::make_unique<RunStats>(options_.changes);
    for (int j : moved) {
      std::unique_ptr<ProxyStream> next = streams_[j]->Resume(StreamConfigFor(j, reconnect_stats_.get()));
      if (next == nullptr) {
        problems_.push_back("--failover needs --protocol delta (a SotW proxy has no resource versions to offer)");
        return;
      }
      resumed_.push_back(std::move(next));
      resumed_.back()->Start(failover_stubs_[new_channel(j)].get());
    }
    // Polled: the survivors' count is on their /metrics, and nothing tells us sooner.
    while (NowNanos() < give_up) {
      bool all = true;
      int counted = 0;
      for (int s = 1; s < replicas; ++s) {
        const std::optional<int> streams = driver_->ReplicaStreams(s);
        if (!streams.has_value() || *streams < expected[s]) all = false;
        if (streams.has_value()) counted += std::max(0, *streams - own[s]);
      }
      report.reattached = std::min(counted, report.streams);
      if (all) {
        report.reattach_ms = Ms(NowNanos() - kill_ns);
        break;
      }
      MaybeProgress("reattaching");
      absl::SleepFor(kPoll);
    }
    if (!report.reattach_ms.has_value()) {
      problems_.push_back(StrCat("failover: the survivors counted ", report.reattached.value_or(0), " of ",
                                 report.streams, " moved streams"));
    }
    const int64_t settle_until = std::min(deadline_ns_, NowNanos() + absl::ToInt64Nanoseconds(options_.restart_settle));
    while (NowNanos() < settle_until) {
      MaybeProgress("settling");
      absl::SleepFor(kPoll);
    }
    TakeReceived(*reconnect_stats_, report);
    report.other_responses = TotalReceived(stats_).responses - others_before;
    if (report.failed > 0) problems_.push_back(StrCat("failover: ", report.failed, " moved streams failed"));
  }

  void StartStreams(int channels) {
    const int64_t start = NowNanos();
    for (int i = 0; i < options_.streams && !PastDeadline(); ++i) {
      if (options_.connect_rate > 0) {
        const int64_t due = start + static_cast<int64_t>(1e9 * i / options_.connect_rate);
        while (NowNanos() < due && !PastDeadline()) {
          MaybeProgress("connecting");
          absl::SleepFor(std::min(kPoll, absl::Nanoseconds(due - NowNanos())));
        }
      }
      // Channel c goes to replica c % R, and stream i uses channel i % C; with one channel per
      // stream, or C a multiple of R (main checks), stream i is on replica i % R.
      if (i < channels) {
        stubs_.push_back(AggregatedDiscoveryService::NewStub(
            MakeChannel(addresses_[static_cast<size_t>(i) % addresses_.size()], i, credentials_)));
      }
      streams_.push_back(MakeProxyStream(StreamConfigFor(i, &stats_)));
      streams_.back()->Start(stubs_[i % channels].get());
      if (i % 256 == 0) MaybeProgress("connecting");
    }
  }

  void WaitConnected() {
    const int started = static_cast<int>(streams_.size());
    while (stats_.complete + stats_.failed < started && !PastDeadline()) {
      MaybeProgress("connecting");
      absl::SleepFor(kPoll);
    }
  }

  void MakeChanges() {
    int64_t last_change_ns = 0;
    const int started = static_cast<int>(streams_.size());
    for (int k = 1; k <= options_.changes; ++k) {
      const int64_t due = last_change_ns + absl::ToInt64Nanoseconds(options_.change_interval);
      while (NowNanos() < due && !PastDeadline()) absl::SleepFor(kPoll);
      if (PastDeadline()) {
        problems_.push_back(StrCat("--duration ended the run before change ", k));
        return;
      }
      // The wall clock too: the servers' own reports of the change are on it.
      mark_unix_ms_[k] = absl::ToDoubleMilliseconds(absl::Now() - absl::UnixEpoch());
      mark_ns_[k] = NowNanos();
      if (absl::Status status = driver_->MakeChange(k); !status.ok()) {
        problems_.push_back(StrCat("change ", k, ": ", status.message()));
        mark_ns_[k] = 0;
        return;
      }
      changes_made_ = k;
      last_change_ns = mark_ns_[k];
      const int64_t give_up = std::min(deadline_ns_, mark_ns_[k] + absl::ToInt64Nanoseconds(options_.change_timeout));
      while (stats_.converged[k] + stats_.failed < started && NowNanos() < give_up) {
        MaybeProgress("converging");
        absl::SleepFor(kPoll);
      }
      if (options_.rss_every_changes > 0 && k % options_.rss_every_changes == 0 && server_.pid > 0) {
        if (std::optional<int64_t> rss = ReadRssKb(server_.pid)) server_.rss_kb_by_change.emplace_back(k, *rss);
      }
    }
  }

  // The server records a write's completion and the proxy's ACK a little after the proxy has
  // them, so the summaries are asked for again until they account for every proxy (bounded).
  std::vector<std::string> SettledServerReports() {
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    std::vector<std::string> reports;
    for (int attempt = 1;; ++attempt) {
      reports = driver_->ServerReports(changes_made_, std::max(deadline - absl::Now(), absl::Milliseconds(200)));
      if (ServerReportsSettled(reports)) break;
      if (absl::Now() >= deadline) {
        Log().warn("SERVER change summaries still incomplete after {} requests", attempt);
        break;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
    return reports;
  }

  void Hold() {
    const int64_t until = std::min(deadline_ns_, NowNanos() + absl::ToInt64Nanoseconds(options_.hold));
    while (NowNanos() < until) {
      MaybeProgress("holding");
      absl::SleepFor(kPoll);
    }
  }

  // Ends every stream and waits (bounded) until gRPC is done with all of them.
  bool StopStreams() {
    for (auto& stream : streams_) stream->Stop();
    for (auto& stream : resumed_) stream->Stop();
    const auto all_done = [this] {
      return stats_.done == static_cast<int>(streams_.size()) &&
             (reconnect_stats_ == nullptr || reconnect_stats_->done == static_cast<int>(resumed_.size()));
    };
    const int64_t give_up = NowNanos() + absl::ToInt64Nanoseconds(kStopGrace);
    while (!all_done() && NowNanos() < give_up) absl::SleepFor(kPoll);
    return all_done();
  }

  RunReport BuildReport(int channels) {
    RunReport r;
    r.xds_address = options_.xds_address;
    r.protocol = options_.protocol == Protocol::kSotw ? "sotw" : "delta";
    r.node_style = options_.node_style == NodeStyle::kEnvoy ? "envoy" : "grpc";
    r.expect = options_.expect == Expect::kXds ? "xds" : "raw";
    r.drive = driver_->name();
    r.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    r.loadavg_start = loadavg_start_;
    r.loadavg_end = LoadAverage();
    r.streams = options_.streams;
    r.connections = channels;
    r.started = static_cast<int>(streams_.size());
    r.changes_requested = options_.changes;

    std::vector<StreamResult> results;
    results.reserve(streams_.size());
    for (const auto& stream : streams_) results.push_back(stream->Result());
    std::vector<double> first_config;
    int64_t first_start = 0;
    int64_t last_complete = 0;
    int64_t last_receipt = 0;
    for (const StreamResult& result : results) {
      if (result.first_response_ns != 0) r.responded++;
      last_receipt = std::max(last_receipt, result.last_receipt_ns);
      if (result.failed) r.failed++;
      if (first_start == 0 || result.start_ns < first_start) first_start = result.start_ns;
      if (result.complete_ns != 0) {
        r.complete++;
        first_config.push_back(Ms(result.complete_ns - result.start_ns));
        last_complete = std::max(last_complete, result.complete_ns);
      }
      if (!result.error.empty() && r.first_errors.size() < 5) {
        r.first_errors.push_back(StrCat("stream ", &result - results.data(), ": ", result.error));
      }
    }
    r.first_config_ms = Summarize(std::move(first_config));
    if (last_receipt != 0) {
      r.last_receipt_ms = Ms(last_receipt - run_start_ns_);
      r.last_receipt_unix_ms = run_start_unix_ms_ + (last_receipt - run_start_ns_) / 1'000'000;
    }
    if (r.complete == options_.streams && r.complete > 0) r.connect_all_ms = Ms(last_complete - first_start);

    // --drive etcd: each replica's account of each change, against its commit stamp.
    std::vector<std::vector<ReplicaPush>> replica_pushes;
    if (options_.drive == Drive::kEtcd) {
      replica_pushes = MatchReplicaPushes(
          server_reports_, std::vector<double>(mark_unix_ms_.begin() + 1, mark_unix_ms_.begin() + 1 + changes_made_),
          static_cast<int>(addresses_.size()));
    }
    for (int k = 1; k <= changes_made_; ++k) {
      ChangeReport change;
      change.change = k;
      change.marker =
          options_.drive == Drive::kFanout ? StrCat("version push-", k) : StrCat("endpoint port ", ChangePort(k));
      change.made_at_ms = Ms(mark_ns_[k] - run_start_ns_);
      change.made_at_unix_ms = mark_unix_ms_[k];
      std::vector<double> latencies;
      for (const StreamResult& result : results) {
        if (result.change_ns[k] != 0) latencies.push_back(Ms(result.change_ns[k] - mark_ns_[k]));
      }
      change.converged = static_cast<int>(latencies.size());
      change.latency_ms = Summarize(std::move(latencies));
      if (!replica_pushes.empty()) change.replicas = replica_pushes[k - 1];
      r.changes.push_back(std::move(change));
    }

    for (XdsType type : kAllTypes) {
      const TypeCounters& c = stats_.types[type];
      r.types.push_back({std::string(ShortNameOf(type)), c.responses, c.bytes, c.resources, c.acks, c.nacks});
      r.nacks += c.nacks;
    }
    const TypeCounters& other = stats_.other;
    r.types.push_back({"other", other.responses, other.bytes, other.resources, other.acks, other.nacks});
    r.errors = stats_.errors;

    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    r.client_cpu_user_s = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6;
    r.client_cpu_system_s = usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
    r.client_max_rss_kb = usage.ru_maxrss;
    r.server = server_;
    r.server_reports = server_reports_;
    r.reconnect = reconnect_;
    r.failover = failover_;
    r.serializations = serializations_;
    r.replica_addresses = addresses_;
    r.replica_sources = replica_sources_;
    r.wall_s = Ms(NowNanos() - run_start_ns_) / 1000;

    r.problems = problems_;
    if (r.started < options_.streams) r.problems.push_back(StrCat("only ", r.started, " streams started"));
    if (r.complete < options_.streams) {
      r.problems.push_back(StrCat(options_.streams - r.complete, " streams never had a complete configuration"));
    }
    if (r.failed > 0) r.problems.push_back(StrCat(r.failed, " streams failed"));
    if (changes_made_ < options_.changes) {
      r.problems.push_back(StrCat("only ", changes_made_, " of ", options_.changes, " changes were made"));
    }
    for (const ChangeReport& change : r.changes) {
      if (change.converged < options_.streams) {
        r.problems.push_back(
            StrCat("change ", change.change, " reached ", change.converged, " of ", options_.streams, " streams"));
      }
    }
    if (r.nacks > 0) r.problems.push_back(StrCat(r.nacks, " NACKs"));
    if (r.errors > 0) r.problems.push_back(StrCat(r.errors, " errors"));
    r.ok = r.problems.empty();
    return r;
  }

  const LoadOptions& options_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;  // null: plaintext
  std::unique_ptr<ChangeDriver> driver_;
  ChangeMarkers markers_;
  RunStats stats_;
  std::vector<std::unique_ptr<AggregatedDiscoveryService::Stub>> stubs_;
  std::vector<std::unique_ptr<ProxyStream>> streams_;
  // --restart: the same proxies after the server restarted, counted apart.
  std::unique_ptr<RunStats> reconnect_stats_;
  std::vector<std::unique_ptr<ProxyStream>> resumed_;
  std::optional<ReconnectReport> reconnect_;
  // --failover: the channels of the moved streams, and what happened.
  std::vector<std::unique_ptr<AggregatedDiscoveryService::Stub>> failover_stubs_;
  std::optional<FailoverReport> failover_;
  std::optional<SerializationReport> serializations_;
  // The xDS addresses the streams are spread over (the driver's replicas, or --xds-address).
  std::vector<std::string> addresses_;
  std::vector<std::string> replica_sources_;
  std::vector<int64_t> mark_ns_;      // [k]: when change k was made
  std::vector<double> mark_unix_ms_;  // [k]: the same on the wall clock
  int changes_made_ = 0;
  int64_t run_start_ns_ = 0;
  int64_t run_start_unix_ms_ = 0;
  int64_t deadline_ns_ = 0;
  int64_t last_progress_ns_ = 0;
  std::optional<double> loadavg_start_;
  ServerUsage server_;
  std::vector<std::string> server_reports_;
  std::vector<std::string> problems_;
};

// "60", "60s", "500ms", "2m": a number without a unit is seconds.
absl::Duration ParseSeconds(const std::string& text) {
  double seconds = 0;
  if (absl::SimpleAtod(text, &seconds)) return absl::Seconds(seconds);
  absl::Duration duration;
  if (absl::ParseDuration(text, &duration)) return duration;
  throw CLI::ValidationError(StrCat("\"", text, "\" is not a duration (e.g. 60, 60s, 500ms)"));
}

}  // namespace
}  // namespace cxds::load

int main(int argc, char** argv) {
  using namespace cxds::load;
  // Before any client or server thread reads a descriptor (protocol/descriptors.h).
  if (absl::Status preload = cxds::PreloadXdsDescriptors(); !preload.ok()) {
    std::cerr << preload << "\n";
    return 70;  // EX_SOFTWARE
  }
  CLI::App app{"cxds-load: simulate N xDS proxies over gRPC (loopback) and measure convergence"};
  LoadOptions options;
  std::string protocol = "sotw";
  std::string style = "envoy";
  std::string expect = "xds";
  std::string drive = "none";
  std::string duration = "60s";
  std::string change_interval = "1s";
  std::string change_timeout = "30s";
  std::string hold = "0s";
  std::string log_level = "warn";
  std::vector<std::string> listeners;
  bool quiet = false;

  app.add_option("--xds-address", options.xds_address, "xDS server (loopback)")->capture_default_str();
  app.add_option("--streams", options.streams, "simulated proxies, one ADS stream each")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--connections", options.connections, "channels the streams are spread over (0: one per stream)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--protocol", protocol, "sotw, delta, or (--soak) mixed: each connection picks one at random")
      ->check(CLI::IsMember({"sotw", "delta", "mixed"}))
      ->capture_default_str();
  app.add_option("--node-style", style, "envoy (CDS+LDS wildcard) or grpc (LDS by name, follow references)")
      ->check(CLI::IsMember({"envoy", "grpc"}))
      ->capture_default_str();
  app.add_option("--listener", listeners, "gRPC style: listener name to subscribe (repeatable; default quote)");
  app.add_option("--node-id", options.node_id, "node id every stream uses (default: one per stream)");
  app.add_option("--expect", expect, "xds (follow references, ACK) or raw (count receipts: cxds-fanout)")
      ->check(CLI::IsMember({"xds", "raw"}))
      ->capture_default_str();
  app.add_flag("--raw-ack", options.raw_ack,
               "raw: answer every receipt with an ACK-shaped request, which cxds-fanout reads (the baseline then "
               "reads one request per push per stream, as an xDS server does)");
  app.add_option("--drive", drive,
                 "none, teaching (cxds demo), fanout (cxds-fanout), files (cxds serve), etcd (cxds serve replicas)")
      ->check(CLI::IsMember({"none", "teaching", "fanout", "files", "etcd"}))
      ->capture_default_str();
  app.add_option("--teaching-binary", options.teaching_binary, "the cxds binary, for --drive teaching");
  app.add_option("--fanout-binary", options.fanout_binary, "the cxds-fanout binary, for --drive fanout");
  app.add_option("--config-dir", options.config_dir, "cxds serve config directory, for --drive files");
  app.add_option("--cxds-binary", options.cxds_binary, "the cxds binary, for --drive files (and teaching)");
  app.add_option("--admin-address", options.admin_address,
                 "cxds serve's admin address, for --drive files (etcd: of replica 0; replica i: port + i)")
      ->capture_default_str();
  app.add_option("--etcd", options.etcd_address, "etcd's gRPC address HOST:PORT, for --drive etcd (not started by it)");
  app.add_option("--etcd-prefix", options.etcd_prefix, "key prefix the documents go under, for --drive etcd")
      ->capture_default_str();
  app.add_option("--replicas", options.replicas,
                 "--drive etcd: cxds serve replicas; replica i on the ports of --xds-address and --admin-address + i")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_flag("--failover", options.failover,
               "--drive etcd, delta, --replicas >= 2: after the changes SIGKILL replica 0, move its proxies to the "
               "others and count what they are sent");
  app.add_flag("--restart", options.restart,
               "--drive files, delta: after the changes restart cxds and count what it sends the reconnecting proxies");
  std::string restart_settle = "3s";
  app.add_option("--restart-settle", restart_settle,
                 "with --restart or --failover: how long to count after all reconnected")
      ->capture_default_str();
  app.add_option("--message-bytes", options.message_bytes, "cxds-fanout push size, for --drive fanout")
      ->check(CLI::Range(64, 4 << 20))
      ->capture_default_str();
  app.add_option("--inventory-port", options.inventory_port, "cxds demo's first endpoint port")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  app.add_option("--server-log", options.server_log, "standard error of a server cxds-load starts")
      ->capture_default_str();
  app.add_option("--server-log-level", options.server_log_level, "log level of a cxds demo cxds-load starts")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.add_option("--server-arg", options.server_args,
                 "an extra argument for the `cxds demo` or `cxds serve` a drive starts (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--tls-ca", options.tls_ca, "CA (PEM) the xDS server's certificate must chain to: TLS");
  app.add_option("--tls-cert", options.tls_cert, "client certificate (PEM) to present: mTLS");
  app.add_option("--tls-key", options.tls_key, "its private key (PEM)");
  app.add_option("--server-pid", options.server_pid, "an external server's pid, to report its RSS and CPU");
  app.add_option("--server-cpu", options.server_cpu, "pin a server cxds-load starts to this core");
  app.add_option("--client-cpu", options.client_cpu, "pin cxds-load to this core");
  app.add_option("--changes", options.changes, "changes to make and measure")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  app.add_option("--change-interval", change_interval, "at least this long between changes")->capture_default_str();
  app.add_option("--change-timeout", change_timeout, "stop waiting for one change after this")->capture_default_str();
  app.add_option("--duration", duration, "hard cap on the whole run")->capture_default_str();
  app.add_option("--hold", hold, "keep the streams open this long after the changes (within --duration)")
      ->capture_default_str();
  app.add_option("--connect-rate", options.connect_rate, "new streams per second (0: all at once)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--json", options.json_path, "write the report as JSON to this file");
  app.add_flag("--quiet", quiet, "no progress lines");
  app.add_option("--rss-every-changes", options.rss_every_changes,
                 "read the server's RSS once every N-th change converged (report: rss_kb_by_change)")
      ->check(CLI::NonNegativeNumber);
  std::string soak = "0s", reconnect_delay = "1s", rss_interval = "5s", starve_after = "10s", warmup;
  app.add_option("--soak", soak, "soak for this long (--drive files; see soak.h and docs/load.md)");
  app.add_option("--churn", options.churn, "--soak: disconnects per stream per second (each reconnects)")
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--reconnect-delay", reconnect_delay, "--soak: a disconnected proxy returns within this")
      ->capture_default_str();
  app.add_option("--seed", options.seed, "--soak: seed of every random choice")->capture_default_str();
  app.add_option("--rss-interval", rss_interval, "--soak: server RSS sampling interval")->capture_default_str();
  app.add_option("--rss-csv", options.rss_csv, "--soak: write the RSS samples to this CSV file");
  app.add_option("--starve-after", starve_after, "--soak: a stream waiting longer for a newer change is starved")
      ->capture_default_str();
  app.add_option("--warmup", warmup, "--soak: RSS is judged from this point (default: a fifth of --soak)");
  app.add_option("--rss-growth-limit", options.rss_growth_limit,
                 "--soak: largest RSS growth after warm-up, as a fraction (negative: report only)")
      ->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
    options.duration = ParseSeconds(duration);
    options.change_interval = ParseSeconds(change_interval);
    options.change_timeout = ParseSeconds(change_timeout);
    options.hold = ParseSeconds(hold);
    options.restart_settle = ParseSeconds(restart_settle);
    options.soak = ParseSeconds(soak);
    options.reconnect_delay = ParseSeconds(reconnect_delay);
    options.rss_interval = ParseSeconds(rss_interval);
    options.starve_after = ParseSeconds(starve_after);
    if (!warmup.empty()) options.warmup = ParseSeconds(warmup);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  options.protocol = protocol == "delta" ? Protocol::kDelta : Protocol::kSotw;
  options.mixed_protocols = protocol == "mixed";
  if (options.mixed_protocols && options.soak <= absl::ZeroDuration()) {
    std::cerr << "cxds-load: --protocol mixed needs --soak" << std::endl;
    return 2;
  }
  if (options.soak > absl::ZeroDuration() && options.rss_interval < absl::Milliseconds(100)) {
    std::cerr << "cxds-load: --rss-interval must be at least 100ms" << std::endl;
    return 2;
  }
  options.node_style = style == "grpc" ? NodeStyle::kGrpc : NodeStyle::kEnvoy;
  options.expect = expect == "raw" ? Expect::kRaw : Expect::kXds;
  options.drive = drive == "teaching" ? Drive::kTeaching
                  : drive == "fanout" ? Drive::kFanout
                  : drive == "files"  ? Drive::kFiles
                  : drive == "etcd"   ? Drive::kEtcd
                                      : Drive::kNone;
  if (options.drive == Drive::kFanout) options.expect = Expect::kRaw;  // the baseline has no xDS
  if (options.raw_ack && options.expect != Expect::kRaw) {
    std::cerr << "cxds-load: --raw-ack is for raw mode (--expect raw or --drive fanout); xDS streams ACK anyway"
              << std::endl;
    return 2;
  }
  if (!listeners.empty()) {
    options.listeners = listeners;
  } else if (options.drive == Drive::kFiles || options.drive == Drive::kEtcd) {
    options.listeners = {kFilesTargetListener};  // the service the drive changes
  }
  if (options.teaching_binary.empty()) options.teaching_binary = options.cxds_binary;
  if (options.restart && (options.drive != Drive::kFiles || options.protocol != Protocol::kDelta)) {
    std::cerr << "cxds-load: --restart needs --drive files and --protocol delta" << std::endl;
    return 2;
  }
  if (options.replicas > 1 && options.drive != Drive::kEtcd) {
    std::cerr << "cxds-load: --replicas needs --drive etcd" << std::endl;
    return 2;
  }
  if (options.failover &&
      (options.drive != Drive::kEtcd || options.replicas < 2 || options.protocol != Protocol::kDelta)) {
    std::cerr << "cxds-load: --failover needs --drive etcd, --replicas 2 or more and --protocol delta" << std::endl;
    return 2;
  }
  // A channel goes to one replica, so the streams sharing it must belong to the same one.
  if (options.replicas > 1 && options.connections > 0 && options.connections < options.streams &&
      options.connections % options.replicas != 0) {
    std::cerr << "cxds-load: --connections must be a multiple of --replicas" << std::endl;
    return 2;
  }
  options.progress = !quiet;
  if (options.xds_address.rfind("127.0.0.1:", 0) != 0 && options.xds_address.rfind("localhost:", 0) != 0 &&
      options.xds_address.rfind("[::1]:", 0) != 0) {
    std::cerr << "cxds-load: --xds-address must be a loopback address (127.0.0.1:PORT)" << std::endl;
    return 2;
  }
  cxds::Log().set_level(spdlog::level::from_str(log_level));
  // Debian's abseil keeps absl::Mutex deadlock detection on: every gRPC mutex acquisition
  // updates a global lock graph, which took about an eighth of the CPU of a 3,000-stream run
  // (perf). Deadlock detection is a debugging aid, so the load tools turn it off.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  signal(SIGPIPE, SIG_IGN);  // a server that exits early must not kill the report
  if (options.soak > absl::ZeroDuration()) return RunSoak(options);
  return LoadRun(options).Run();
}
