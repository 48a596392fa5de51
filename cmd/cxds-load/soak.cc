#include "soak.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "child_process.h"
#include "common/logging.h"
#include "common/strings.h"
#include "driver.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "fmt/format.h"
#include "httplib.h"
#include "proxy_stream.h"
#include "run_support.h"
#include "soak_check.h"

namespace cxds::load {

namespace {
using envoy::service::discovery::v3::AggregatedDiscoveryService;

constexpr absl::Duration kTick = absl::Milliseconds(20);
constexpr int64_t kChurnTickNs = 100'000'000;  // churn decisions every 100 ms
constexpr int64_t kReapEveryNs = 250'000'000;
// A stream gRPC has finished with is destroyed this long after it was seen finished.
constexpr int64_t kDestroyAfterNs = 1'000'000'000;
constexpr absl::Duration kStopGrace = absl::Seconds(10);
// Change k is endpoint port 20000+k, so at most this many changes fit below port 65536.
constexpr int kMaxChanges = 45'000;

double Seconds(int64_t nanos) { return static_cast<double>(nanos) / 1e9; }

std::optional<double> LoadAverage() {
  std::ifstream file("/proc/loadavg");
  double one_minute = 0;
  if (file >> one_minute) return one_minute;
  return std::nullopt;
}

std::string JsonNumberOrNull(const std::optional<double>& value) {
  return value.has_value() ? fmt::format("{:.4f}", *value) : "null";
}
std::string JsonIntOrNull(const std::optional<int64_t>& value) {
  return value.has_value() ? std::to_string(*value) : "null";
}
std::string JsonInts(const std::vector<int>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

// Occurrences of `needle` in `text`.
int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) count++;
  return count;
}

class SoakRun {
 public:
  explicit SoakRun(const LoadOptions& options) : options_(options), rng_(options.seed), stats_(0) {}

  int Run() {
    if (options_.drive != Drive::kFiles) {
      std::cerr << "cxds-load: --soak needs --drive files" << std::endl;
      return 2;
    }
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = ChannelCredentials(options_);
    if (!credentials.ok()) {
      std::cerr << "cxds-load: " << credentials.status().message() << std::endl;
      return 2;
    }
    credentials_ = *std::move(credentials);
    if (options_.change_interval < absl::Milliseconds(10)) {
      std::cerr << "cxds-load: --soak needs --change-interval of at least 10ms" << std::endl;
      return 2;
    }
    const std::vector<std::string> admin = absl::StrSplit(options_.admin_address, ':');
    if (admin.size() != 2 || !absl::SimpleAtoi(admin[1], &admin_port_)) {
      std::cerr << "cxds-load: bad --admin-address " << options_.admin_address << std::endl;
      return 2;
    }
    admin_host_ = admin[0];
    const int streams = options_.streams;
    channels_ = options_.connections > 0 ? std::min(options_.connections, streams) : streams;
    RaiseFileLimit(2 * std::max(channels_, streams) + 256);
    warmup_ = options_.warmup == absl::InfiniteDuration() ? options_.soak / 5 : options_.warmup;
    max_changes_ = static_cast<int>(std::min<int64_t>(
        kMaxChanges, absl::ToInt64Nanoseconds(options_.soak) / absl::ToInt64Nanoseconds(options_.change_interval) + 2));
    for (int k = 1; k <= max_changes_; ++k) markers_.by_endpoint_port[ChangePort(k)] = k;

    absl::StatusOr<std::unique_ptr<ChangeDriver>> driver = MakeDriver(options_);
    if (!driver.ok()) {
      std::cerr << "cxds-load: " << driver.status().message() << std::endl;
      return 2;
    }
    driver_ = *std::move(driver);
    if (absl::Status status = driver_->Start(); !status.ok()) {
      std::cerr << "cxds-load: " << status.message() << std::endl;
      driver_->Stop();
      return 2;
    }
    if (options_.client_cpu >= 0) PinTo(options_.client_cpu);
    server_pid_ = driver_->server_pid();
    if (!options_.rss_csv.empty()) {
      csv_.open(options_.rss_csv, std::ios::trunc);
      csv_ << "elapsed_s,rss_kb,server_cpu_s,changes,open_streams,reconnects\n";
      if (!csv_) {
        std::cerr << "cxds-load: cannot write " << options_.rss_csv << std::endl;
        driver_->Stop();
        return 2;
      }
    }
    loadavg_start_ = LoadAverage();
    start_ns_ = NowNanos();
    Soak();
    Finish();
    const bool all_done = StopStreams();
    driver_->Stop();
    const bool ok = Report();
    if (!all_done) {
      // gRPC still owns some streams: destroying them would be unsafe, so leave at once.
      std::cerr << "cxds-load: streams did not finish within " << absl::FormatDuration(kStopGrace) << std::endl;
      std::_Exit(ok ? 0 : 1);
    }
    return ok ? 0 : 1;
  }

 private:
  struct Proxy {
    std::unique_ptr<ProxyStream> stream;  // null while disconnected
    int64_t reconnect_at_ns = 0;
  };
  struct Retired {
    int index = 0;
    std::unique_ptr<ProxyStream> stream;
    int64_t finished_seen_ns = 0;  // 0: not yet finished
  };

  int64_t Elapsed() const { return NowNanos() - start_ns_; }
  double Uniform() { return std::uniform_real_distribution<double>(0, 1)(rng_); }

  void Connect(int i) {
    const Protocol protocol =
        options_.mixed_protocols ? (Uniform() < 0.5 ? Protocol::kSotw : Protocol::kDelta) : options_.protocol;
    (protocol == Protocol::kSotw ? sotw_connections_ : delta_connections_)++;
    StreamConfig config{.index = i,
                        .protocol = protocol,
                        .style = options_.node_style,
                        .expect = Expect::kXds,
                        .node = MakeNode(options_, "", i),
                        .listeners = options_.listeners,
                        .changes = 0,  // changes are followed by latest_change, not one stamp each
                        .markers = &markers_,
                        .stats = &stats_};
    proxies_[i].stream = MakeProxyStream(std::move(config));
    proxies_[i].stream->Start(stubs_[i % channels_].get());
  }

  void Soak() {
    const int streams = options_.streams;
    proxies_.resize(streams);
    const int64_t soak_end = start_ns_ + absl::ToInt64Nanoseconds(options_.soak);
    const int64_t interval = absl::ToInt64Nanoseconds(options_.change_interval);
    int64_t next_change = start_ns_;
    int64_t next_churn = start_ns_ + kChurnTickNs;
    int64_t next_reap = start_ns_;
    int64_t next_sample = start_ns_;
    int64_t next_progress = start_ns_ + 5'000'000'000;
    int connected = 0;
    for (int64_t now = NowNanos(); now < soak_end; now = NowNanos()) {
      // Connect at --connect-rate (all at once by default), the changes already flowing.
      while (connected < streams &&
             (options_.connect_rate <= 0 || connected < 1 + Seconds(now - start_ns_) * options_.connect_rate)) {
        if (connected < channels_) {
          stubs_.push_back(
              AggregatedDiscoveryService::NewStub(MakeChannel(options_.xds_address, connected, credentials_)));
        }
        Connect(connected++);
      }
      if (now >= next_change && last_change_ < max_changes_) {
        MakeChange();
        next_change += interval;
        if (next_change < now) {
          late_changes_++;  // this loop fell behind: keep the interval from now on
          next_change = now + interval;
        }
      }
      if (now >= next_churn) {
        Churn(now, connected);
        next_churn += kChurnTickNs;
      }
      for (int i = 0; i < connected; ++i) {
        Proxy& proxy = proxies_[i];
        if (proxy.stream == nullptr && now >= proxy.reconnect_at_ns) {
          Connect(i);
          reconnects_++;
        }
      }
      if (now >= next_reap) {
        Reap(now, connected);
        next_reap += kReapEveryNs;
      }
      if (now >= next_sample) {
        Sample();
        next_sample += absl::ToInt64Nanoseconds(options_.rss_interval);
      }
      if (options_.progress && now >= next_progress) {
        next_progress += 5'000'000'000;
        std::cerr << fmt::format(
            "[{:7.1f}s] soak changes={} open={} reconnects={} unexpected_ends={} nacks={} "
            "errors={} rss={} KiB\n",
            Seconds(now - start_ns_), last_change_, OpenStreams(), reconnects_, stats_.failed.load(), Nacks(),
            stats_.errors.load(), samples_.empty() ? 0 : samples_.back().rss_kb);
      }
      absl::SleepFor(kTick);
    }
  }

  void MakeChange() {
    const int k = last_change_ + 1;
    if (absl::Status status = driver_->MakeChange(k); !status.ok()) {
      problems_.push_back(StrCat("change ", k, ": ", status.message()));
      return;
    }
    last_change_ = k;
  }

  // Each open stream ends with probability churn x tick; its proxy comes back after a random
  // delay.
  void Churn(int64_t now, int connected) {
    const double p = options_.churn * Seconds(kChurnTickNs);
    if (p <= 0) return;
    for (int i = 0; i < connected; ++i) {
      Proxy& proxy = proxies_[i];
      if (proxy.stream == nullptr || Uniform() >= p) continue;
      proxy.stream->Stop();
      retired_.push_back(Retired{i, std::move(proxy.stream), 0});
      proxy.reconnect_at_ns =
          now + static_cast<int64_t>(Uniform() * absl::ToInt64Nanoseconds(options_.reconnect_delay));
      disconnects_++;
    }
  }

  void Record(int index, const StreamResult& result, bool connected_at_end) {
    outcomes_.push_back(SoakStreamOutcome{index, connected_at_end, result.latest_change, result.max_update_gap_ns});
    if (!result.error.empty() && first_errors_.size() < 5) {
      first_errors_.push_back(StrCat("proxy ", index, ": ", result.error));
    }
  }

  // Destroys retired streams gRPC is done with; a stream that ended without being asked to
  // (counted as failed by the stream) is retired too and its proxy reconnects.
  void Reap(int64_t now, int connected) {
    for (auto it = retired_.begin(); it != retired_.end();) {
      if (it->finished_seen_ns == 0) {
        const StreamResult result = it->stream->Result();
        if (result.finished) {
          it->finished_seen_ns = now;
          Record(it->index, result, false);
        }
        ++it;
      } else if (now - it->finished_seen_ns >= kDestroyAfterNs) {
        it = retired_.erase(it);
      } else {
        ++it;
      }
    }
    for (int i = 0; i < connected; ++i) {
      Proxy& proxy = proxies_[i];
      if (proxy.stream == nullptr || !proxy.stream->Result().finished) continue;
      retired_.push_back(Retired{i, std::move(proxy.stream), 0});
      proxy.reconnect_at_ns =
          now + static_cast<int64_t>(Uniform() * absl::ToInt64Nanoseconds(options_.reconnect_delay));
    }
  }

  int OpenStreams() const {
    int open = 0;
    for (const Proxy& proxy : proxies_) open += proxy.stream != nullptr ? 1 : 0;
    return open;
  }

  uint64_t Nacks() const {
    uint64_t nacks = stats_.other.nacks;
    for (const TypeCounters& counters : stats_.types) nacks += counters.nacks;
    return nacks;
  }

  void Sample() {
    if (server_pid_ <= 0) return;
    const std::optional<int64_t> rss = ReadRssKb(server_pid_);
    if (!rss.has_value()) return;
    const std::optional<double> cpu = ReadCpuSeconds(server_pid_);
    const double elapsed = Seconds(Elapsed());
    samples_.push_back(RssSample{elapsed, *rss});
    if (csv_.is_open()) {
      csv_ << fmt::format("{:.1f},{},{},{},{},{}\n", elapsed, *rss, cpu.has_value() ? fmt::format("{:.2f}", *cpu) : "",
                          last_change_, OpenStreams(), reconnects_)
           << std::flush;
    }
  }

  std::optional<std::string> AdminGet(const std::string& path) {
    httplib::Client client(admin_host_, admin_port_);
    client.set_read_timeout(30, 0);
    httplib::Result result = client.Get(path);
    if (!result || result->status != 200) {
      problems_.push_back(StrCat("admin GET ", path, " failed: ",
                                 result ? StrCat("status ", result->status) : httplib::to_string(result.error())));
      return std::nullopt;
    }
    return result->body;
  }

  // The changes stop; every proxy reconnects; the run waits until every stream holds the last
  // change (bounded), then looks at the server's view.
  void Finish() {
    soak_end_ns_ = NowNanos();
    for (int i = 0; i < static_cast<int>(proxies_.size()); ++i) {
      if (proxies_[i].stream == nullptr) {
        Connect(i);
        reconnects_++;
      }
    }
    const int64_t give_up = NowNanos() + absl::ToInt64Nanoseconds(options_.change_timeout);
    for (;;) {
      int behind = 0;
      for (const Proxy& proxy : proxies_) {
        const StreamResult result = proxy.stream->Result();
        if (!result.finished && result.latest_change != last_change_) behind++;
      }
      if (behind == 0 || NowNanos() >= give_up) break;
      absl::SleepFor(absl::Milliseconds(100));
    }
    quiescence_ms_ = Seconds(NowNanos() - soak_end_ns_) * 1000;
    // What the server publishes: its view of proxy 0 holds the last change's port.
    const std::string node = MakeNode(options_, "", 0).id();
    if (std::optional<std::string> dump =
            AdminGet("/debug/config_dump?proxy=" + httplib::detail::encode_query_param(node))) {
      server_has_last_ = dump->find(StrCat("\"portValue\":", ChangePort(last_change_))) != std::string::npos;
    }
    // The server's account of the streams: one per open stream, none of their types behind.
    server_streams_ = driver_->ServerStreams();
    if (std::optional<std::string> syncz = AdminGet("/debug/syncz")) {
      server_stale_types_ = Count(*syncz, "\"status\":\"STALE\"") + Count(*syncz, "\"status\":\"NACKED\"");
    }
    Sample();
    for (int i = 0; i < static_cast<int>(proxies_.size()); ++i) {
      const StreamResult result = proxies_[i].stream->Result();
      Record(i, result, !result.finished);
    }
  }

  // Ends every stream and waits (bounded) until gRPC is done with all of them.
  bool StopStreams() {
    for (Proxy& proxy : proxies_) proxy.stream->Stop();
    for (Retired& retired : retired_) retired.stream->Stop();
    const int64_t give_up = NowNanos() + absl::ToInt64Nanoseconds(kStopGrace);
    for (;;) {
      bool done = true;
      for (const Proxy& proxy : proxies_) done = done && proxy.stream->Result().finished;
      for (const Retired& retired : retired_) done = done && retired.stream->Result().finished;
      if (done) {
        for (Retired& retired : retired_) {
          if (retired.finished_seen_ns == 0) Record(retired.index, retired.stream->Result(), false);
        }
        return true;
      }
      if (NowNanos() >= give_up) return false;
      absl::SleepFor(absl::Milliseconds(50));
    }
  }

  bool Report() {
    const SoakVerdict streams = JudgeStreams(outcomes_, last_change_, absl::ToInt64Nanoseconds(options_.starve_after));
    const RssVerdict rss = JudgeRss(samples_, absl::ToDoubleSeconds(warmup_), options_.rss_growth_limit);
    std::vector<std::string> problems = problems_;
    if (last_change_ == 0) problems.push_back("no change was made");
    if (!server_has_last_) problems.push_back(StrCat("the server's view does not hold the last change ", last_change_));
    if (streams.lost_updates > 0) {
      problems.push_back(StrCat(streams.lost_updates, " open streams without the last change (lost updates)"));
    }
    if (streams.starved > 0) {
      problems.push_back(StrCat(streams.starved, " streams waited more than ",
                                absl::FormatDuration(options_.starve_after), " for a newer change (starved)"));
    }
    if (streams.connected != options_.streams) {
      problems.push_back(StrCat(streams.connected, " of ", options_.streams, " streams open at the end"));
    }
    if (!server_streams_.has_value() || *server_streams_ != streams.connected) {
      problems.push_back(
          StrCat("the server counts ", server_streams_.value_or(-1), " streams, ", streams.connected, " are open"));
    }
    if (!server_stale_types_.has_value() || *server_stale_types_ > 0) {
      problems.push_back(StrCat(server_stale_types_.value_or(-1), " stream types STALE or NACKED on the server"));
    }
    if (stats_.failed > 0) problems.push_back(StrCat(stats_.failed.load(), " streams ended without being asked"));
    if (Nacks() > 0) problems.push_back(StrCat(Nacks(), " NACKs"));
    if (!rss.ok) {
      problems.push_back(StrCat("RSS: ", rss.why, " (", fmt::format("{:.1f}%", 100 * rss.growth.value_or(0)), " > ",
                                fmt::format("{:.1f}%", 100 * options_.rss_growth_limit), ")"));
    }
    const bool ok = problems.empty();

    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const double soak_s = Seconds(soak_end_ns_ - start_ns_);
    std::cout << fmt::format(
        "cxds-load soak: {:.0f}s, {} streams ({}), churn {}/stream/s, seed {}, a change every {}\n"
        "  changes={} (late={}) disconnects={} reconnects={} connections sotw={} delta={}\n"
        "  quiescence={:.0f}ms open_at_end={} lost_updates={} starved={} (bound {}) max_update_gap={:.0f}ms\n"
        "  server: holds last change={} streams={} stale_or_nacked_types={}\n"
        "  unexpected_ends={} nacks={} errors={}\n"
        "  server rss: start={} KiB after_warmup({:.0f}s)={} KiB end={} KiB max_after_warmup={} KiB growth={}\n"
        "  client cpu user={:.1f}s system={:.1f}s max_rss={} KiB; loadavg {} -> {}\n",
        soak_s, options_.streams,
        options_.mixed_protocols ? "mixed" : (options_.protocol == Protocol::kSotw ? "sotw" : "delta"), options_.churn,
        options_.seed, absl::FormatDuration(options_.change_interval), last_change_, late_changes_, disconnects_,
        reconnects_, sotw_connections_, delta_connections_, quiescence_ms_, streams.connected, streams.lost_updates,
        streams.starved, absl::FormatDuration(options_.starve_after), Seconds(streams.max_gap_ns) * 1000,
        server_has_last_, server_streams_.value_or(-1), server_stale_types_.value_or(-1), stats_.failed.load(), Nacks(),
        stats_.errors.load(), rss.start_kb.value_or(0), absl::ToDoubleSeconds(warmup_), rss.warm_kb.value_or(0),
        rss.end_kb.value_or(0), rss.max_kb.value_or(0),
        rss.growth.has_value() ? fmt::format("{:+.1f}%", 100 * *rss.growth) : "-",
        usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6, usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6,
        usage.ru_maxrss, JsonNumberOrNull(loadavg_start_), JsonNumberOrNull(LoadAverage()));
    for (const std::string& error : first_errors_) std::cout << "    error: " << error << "\n";
    std::cout << (ok ? "RESULT ok\n" : "RESULT FAILED\n");
    for (const std::string& problem : problems) std::cout << "  problem: " << problem << "\n";
    std::cout << std::flush;

    if (!options_.json_path.empty()) {
      std::string samples;
      for (const RssSample& sample : samples_) {
        samples += fmt::format("{}[{:.1f}, {}]", samples.empty() ? "" : ", ", sample.elapsed_s, sample.rss_kb);
      }
      std::string problem_list;
      for (const std::string& problem : problems)
        problem_list += (problem_list.empty() ? "" : ", ") + JsonQuote(problem);
      std::ofstream json(options_.json_path, std::ios::trunc);
      json << fmt::format(
          "{{\n  \"soak_s\": {:.1f},\n  \"streams\": {},\n  \"protocols\": \"{}\",\n  \"node_style\": \"{}\",\n"
          "  \"churn_per_stream_s\": {},\n  \"seed\": {},\n  \"change_interval_ms\": {},\n  \"changes\": {},\n"
          "  \"late_changes\": {},\n  \"disconnects\": {},\n  \"reconnects\": {},\n  \"sotw_connections\": {},\n"
          "  \"delta_connections\": {},\n  \"quiescence_ms\": {:.0f},\n  \"open_at_end\": {},\n  \"lost_updates\": "
          "{},\n"
          "  \"lost_examples\": {},\n  \"starved_streams\": {},\n  \"starved_examples\": {},\n  \"starve_after_ms\": "
          "{},\n"
          "  \"max_update_gap_ms\": {:.1f},\n  \"server_holds_last_change\": {},\n  \"server_streams\": {},\n"
          "  \"server_stale_or_nacked_types\": {},\n  \"unexpected_ends\": {},\n  \"nacks\": {},\n  \"errors\": {},\n"
          "  \"warmup_s\": {:.1f},\n  \"rss\": {{\"start_kb\": {}, \"after_warmup_kb\": {}, \"end_kb\": {}, "
          "\"max_after_warmup_kb\": {}, \"growth\": {}, \"limit\": {}}},\n  \"rss_samples\": [{}],\n"
          "  \"client\": {{\"cpu_s\": {:.1f}, \"max_rss_kb\": {}}},\n  \"loadavg_start\": {},\n  \"loadavg_end\": {},\n"
          "  \"ok\": {},\n  \"problems\": [{}]\n}}\n",
          soak_s, options_.streams,
          options_.mixed_protocols ? "mixed" : (options_.protocol == Protocol::kSotw ? "sotw" : "delta"),
          options_.node_style == NodeStyle::kEnvoy ? "envoy" : "grpc", options_.churn, options_.seed,
          absl::ToInt64Milliseconds(options_.change_interval), last_change_, late_changes_, disconnects_, reconnects_,
          sotw_connections_, delta_connections_, quiescence_ms_, streams.connected, streams.lost_updates,
          JsonInts(streams.lost_examples), streams.starved, JsonInts(streams.starved_examples),
          absl::ToInt64Milliseconds(options_.starve_after), Seconds(streams.max_gap_ns) * 1000, server_has_last_,
          server_streams_.value_or(-1), server_stale_types_.value_or(-1), stats_.failed.load(), Nacks(),
          stats_.errors.load(), absl::ToDoubleSeconds(warmup_), JsonIntOrNull(rss.start_kb), JsonIntOrNull(rss.warm_kb),
          JsonIntOrNull(rss.end_kb), JsonIntOrNull(rss.max_kb), JsonNumberOrNull(rss.growth), options_.rss_growth_limit,
          samples,
          usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6,
          usage.ru_maxrss, JsonNumberOrNull(loadavg_start_), JsonNumberOrNull(LoadAverage()), ok, problem_list);
      if (!json) std::cerr << "cxds-load: cannot write " << options_.json_path << std::endl;
    }
    return ok;
  }

  const LoadOptions& options_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;  // null: plaintext
  std::mt19937_64 rng_;                                    // every random choice of the soak
  RunStats stats_;
  ChangeMarkers markers_;
  std::unique_ptr<ChangeDriver> driver_;
  std::string admin_host_;
  int admin_port_ = 0;
  int channels_ = 0;
  int max_changes_ = 0;
  absl::Duration warmup_;
  int server_pid_ = 0;
  std::ofstream csv_;
  std::vector<std::unique_ptr<AggregatedDiscoveryService::Stub>> stubs_;
  std::vector<Proxy> proxies_;
  std::vector<Retired> retired_;
  std::vector<SoakStreamOutcome> outcomes_;
  std::vector<RssSample> samples_;
  std::vector<std::string> problems_;
  std::vector<std::string> first_errors_;
  int64_t start_ns_ = 0;
  int64_t soak_end_ns_ = 0;
  int last_change_ = 0;
  int late_changes_ = 0;
  int disconnects_ = 0;
  int reconnects_ = 0;
  int sotw_connections_ = 0;
  int delta_connections_ = 0;
  double quiescence_ms_ = 0;
  bool server_has_last_ = false;
  std::optional<int> server_streams_;
  std::optional<int> server_stale_types_;
  std::optional<double> loadavg_start_;
};

}  // namespace

int RunSoak(const LoadOptions& options) { return SoakRun(options).Run(); }

}  // namespace cxds::load
